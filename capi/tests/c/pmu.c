/*
 * The pmu-events calls as pmcstat.c and pmccontrol.c make them
 * (pmc_pmu_enabled, pmc_pmu_print_counters(NULL), _desc, _desc_long,
 * _full, pmc_pmu_sample_rate_get, pmc_pmu_pmcallocate, the index
 * look-ups). Prints "enabled N", then what each print function prints
 * between marker lines, so the test compares them with the event list.
 */
#include "check.h"

/* Still exported, no longer declared by the 0x0A tree's lib/libpmc/pmc.h. */
int	pmc_pmu_stat_mode(const char ***_counters);

int
main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : NULL;

	OK(pmc_init());
	printf("enabled %d\n", pmc_pmu_enabled());
	printf("--- counters\n");
	pmc_pmu_print_counters(NULL);
	printf("--- desc\n");
	if (name != NULL) {
		pmc_pmu_print_counter_desc(name);
		pmc_pmu_print_counter_desc_long(name);
	}
	printf("--- full\n");
	if (name != NULL)
		pmc_pmu_print_counter_full(name);
	printf("--- end\n");

	/* libpmcstat.h DEFAULT_SAMPLE_COUNT for an event with no period. */
	CHECK(pmc_pmu_sample_rate_get("no.such.event") == 65536, "%ju",
	    (uintmax_t)pmc_pmu_sample_rate_get("no.such.event"));
	CHECK(pmc_pmu_idx_get_by_event(NULL, "no.such.event") == -1, "%s", "idx");

	struct pmc_op_pmcallocate pa;
	memset(&pa, 0, sizeof(pa));
	int r = pmc_pmu_pmcallocate("no.such.event", &pa);
	CHECK(r == ENOENT, "pmc_pmu_pmcallocate of an unknown event: %d", r);

	const char **cntrs = NULL;
	r = pmc_pmu_stat_mode(&cntrs);
	if (pmc_pmu_enabled())
		CHECK(r == 0 && cntrs != NULL && strcmp(cntrs[1], "inst_retired.any") == 0,
		    "stat mode %d", r);
	else
		CHECK(r == EOPNOTSUPP, "stat mode without a table: %d", r);

	if (name != NULL) {
		int idx = pmc_pmu_idx_get_by_event(NULL, name);
		CHECK(idx >= 0, "%s has no index", name);
		const char *back = pmc_pmu_event_get_by_idx(NULL, idx);
		CHECK(back != NULL && strcasecmp(back, name) == 0, "%d -> %s", idx,
		    back ? back : "NULL");
		memset(&pa, 0, sizeof(pa));
		OK(pmc_pmu_pmcallocate(name, &pa));
		CHECK(pa.pm_ev == (enum pmc_event)idx, "pm_ev %d, idx %d", pa.pm_ev, idx);
		CHECK((pa.pm_caps & (PMC_CAP_READ | PMC_CAP_WRITE)) ==
		    (PMC_CAP_READ | PMC_CAP_WRITE), "caps %#x", pa.pm_caps);
		printf("idx %d rate %ju\n", idx, (uintmax_t)pmc_pmu_sample_rate_get(name));
	}
	return 0;
}
