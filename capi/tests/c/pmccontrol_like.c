/*
 * Our own program making pmccontrol.c's calls, printing with its formats
 * (usr.sbin/pmccontrol/pmccontrol.c):
 *   -L  pmcc_do_list_events: on amd64 and i386, pmc_pmu_print_counters(NULL);
 *       elsewhere "%s\n" per class of pmc_cpuinfo then "\t%s\n" per name of
 *       pmc_event_names_of_class, the array free()d. Like our pmccontrol,
 *       this program prints the class listing on amd64 too when
 *       pmc_pmu_enabled() is false (no core PMU), where FreeBSD's would
 *       print nothing.
 *   -l  pmcc_do_list_state: "%d %s CPUs present, with %d PMCs per CPU\n",
 *       then per CPU "#CPU %d:\n", "#N  NAME             CLASS  STATE    "
 *       "ROW-DISP\n" and pmc_npmc(cpu) rows " %-2d %-16s %-6s %-8s %-10s",
 *       with " (pid %d)", " %-32s" and " (reload count %jd)" for owned rows.
 *   -s  pmcc_show_statistics: "%-40s %d\n" per driver statistic.
 * Exit codes as pmccontrol.c's (sysexits.h).
 */
#include <err.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include <pmc.h>

static int
list_events(void)
{
	const struct pmc_cpuinfo *ci;
	const char **names;
	int n;

#if defined(__i386__) || defined(__amd64__) || defined(__x86_64__)
	if (pmc_pmu_enabled()) {
		pmc_pmu_print_counters(NULL);
		return 0;
	}
#endif
	if (pmc_cpuinfo(&ci) != 0)
		err(EX_OSERR, "Unable to determine CPU information");
	for (unsigned i = 0; i < ci->pm_nclass; i++) {
		enum pmc_class c = ci->pm_classes[i].pm_class;

		printf("%s\n", pmc_name_of_class(c));
		if (pmc_event_names_of_class(c, &names, &n) < 0)
			err(EX_OSERR, "ERROR: Cannot find information for event class \"%s\"",
			    pmc_name_of_class(c));
		for (int j = 0; j < n; j++)
			printf("\t%s\n", names[j]);
		free(names);
	}
	return 0;
}

static int
list_state(void)
{
	const struct pmc_cpuinfo *pc;
	struct pmc_pmcinfo *pi;

	if (pmc_cpuinfo(&pc) != 0)
		err(EX_OSERR, "Unable to determine CPU information");
	printf("%d %s CPUs present, with %d PMCs per CPU\n", pc->pm_ncpu,
	    pmc_name_of_cputype(pc->pm_cputype), pc->pm_npmc);
	int c = 0;
	for (int cpu = 0; cpu < (int)pc->pm_ncpu; cpu++) {
		if (pmc_pmcinfo(cpu, &pi) < 0) {
			if (errno == ENXIO)
				continue;
			err(EX_OSERR, "Unable to get PMC status for CPU %d", cpu);
		}
		printf("#CPU %d:\n", c++);
		int npmc = pmc_npmc(cpu);
		printf("#N  NAME             CLASS  STATE    ROW-DISP\n");
		for (int n = 0; n < npmc; n++) {
			struct pmc_info *pd = &pi->pm_pmcs[n];

			printf(" %-2d %-16s %-6s %-8s %-10s", n, pd->pm_name,
			    pmc_name_of_class(pd->pm_class),
			    pd->pm_enabled ? "ENABLED" : "DISABLED",
			    pmc_name_of_disposition(pd->pm_rowdisp));
			if (pd->pm_ownerpid != -1) {
				const char *ev = pmc_name_of_event(pd->pm_event);

				printf(" (pid %d)", pd->pm_ownerpid);
				/* glibc's and FreeBSD's printf both print NULL so. */
				printf(" %-32s", ev != NULL ? ev : "(null)");
				if (PMC_IS_SAMPLING_MODE(pd->pm_mode))
					printf(" (reload count %jd)",
					    (intmax_t)pd->pm_reloadcount);
			}
			printf("\n");
		}
		free(pi);
	}
	return 0;
}

static int
show_statistics(void)
{
	struct pmc_driverstats gms;

	if (pmc_get_driver_stats(&gms) < 0)
		err(EX_OSERR, "ERROR: cannot retrieve driver statistics");
#define PRINT(N, V)	(void) printf("%-40s %d\n", (N), (int)gms.pm_##V)
	PRINT("interrupts processed:", intr_processed);
	PRINT("non-PMC interrupts:", intr_ignored);
	PRINT("sampling stalls due to space shortages:", intr_bufferfull);
	PRINT("system calls:", syscalls);
	PRINT("system calls with errors:", syscall_errors);
	PRINT("buffer requests:", buffer_requests);
	PRINT("buffer requests failed:", buffer_requests_failed);
	PRINT("sampling log sweeps:", log_sweeps);
	return 0;
}

int
main(int argc, char **argv)
{
	int opt, command = 0;

	while ((opt = getopt(argc, argv, "lLs")) != -1) {
		if (command != 0)
			errx(EX_USAGE, "%s", "only one of -L, -l, -s");
		command = opt;
	}
	if (command == 0 || command == '?')
		errx(EX_USAGE, "%s", "usage: pmccontrol_like -L | -l | -s");
	if (pmc_init() < 0)
		err(EX_UNAVAILABLE, "Initialization of the pmc(3) library failed");
	switch (command) {
	case 'L':
		return list_events();
	case 'l':
		return list_state();
	default:
		return show_statistics();
	}
}
