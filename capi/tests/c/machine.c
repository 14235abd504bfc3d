/*
 * The machine queries: pmc_cpuinfo, pmc_ncpu, pmc_npmc,
 * pmc_event_names_of_class (a malloc'ed array the caller frees, as
 * pmccontrol -L does), pmc_get_driver_stats, and the SOFT class that
 * FreeBSD's soft events live in.
 */
#include <unistd.h>

#include "check.h"

int
main(void)
{
	const struct pmc_cpuinfo *ci;
	const char **names;
	int n;

	OK(pmc_init());
	OK(pmc_cpuinfo(&ci));
	CHECK((long)ci->pm_ncpu >= sysconf(_SC_NPROCESSORS_ONLN), "pm_ncpu %u", ci->pm_ncpu);
	CHECK(pmc_ncpu() == (int)ci->pm_ncpu, "pmc_ncpu %d", pmc_ncpu());
	CHECK(pmc_npmc(0) == (int)ci->pm_npmc, "pmc_npmc(0) %d", pmc_npmc(0));
	CHECK(ci->pm_nclass >= 1 && ci->pm_nclass <= PMC_CLASS_MAX, "nclass %u", ci->pm_nclass);
	CHECK(pmc_name_of_cputype(ci->pm_cputype) != NULL, "cputype %#x has no name",
	    ci->pm_cputype);
	int soft = 0;
	for (unsigned i = 0; i < ci->pm_nclass; i++) {
		const struct pmc_classinfo *c = &ci->pm_classes[i];
		CHECK(pmc_name_of_class(c->pm_class) != NULL, "class %#x", c->pm_class);
		for (unsigned j = 0; j < i; j++)
			CHECK(ci->pm_classes[j].pm_class != c->pm_class, "class %s twice",
			    pmc_name_of_class(c->pm_class));
		if (c->pm_class == PMC_CLASS_SOFT) {
			soft = 1;
			CHECK(c->pm_caps & PMC_CAP_READ, "SOFT caps %#x", c->pm_caps);
		}
	}
	CHECK(soft, "%s", "no SOFT class");

	OK(pmc_event_names_of_class(PMC_CLASS_SOFT, &names, &n));
	int task_clock = 0;
	for (int i = 0; i < n; i++)
		task_clock |= strcmp(names[i], "task-clock") == 0;
	CHECK(n > 3 && task_clock, "%d SOFT names, task-clock %s", n,
	    task_clock ? "present" : "missing");
	free(names);
	/* A class this machine lacks (pmc_event_names_of_class(3): EINVAL). */
	FAILS_WITH(pmc_event_names_of_class(PMC_CLASS_PPC970, &names, &n), EINVAL);

	struct pmc_driverstats ds;
	OK(pmc_get_driver_stats(&ds));
	printf("cputype %s, %u cpus, %u pmcs, %u classes, %d SOFT events\n",
	    pmc_name_of_cputype(ci->pm_cputype), ci->pm_ncpu, ci->pm_npmc,
	    ci->pm_nclass, n);
	return 0;
}
