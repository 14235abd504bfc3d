/*
 * FreeBSD's event numbers and the calls FreeBSD programs make with them:
 * PMC_EV_* values as sys/sys/pmc.h computes them from the blocks of
 * dev/hwpmc/pmc_events.h __PMC_EVENTS() (TSC 0x1000, K8 0x2080, IAF
 * 0x10000, ARMV8 0x14100), pmc_name_of_event (the event's name in its
 * class, which pmc_allocate takes where one of ours counts it; NULL with
 * EINVAL for a number that is no event), the PMC_ID_* macros of
 * sys/sys/pmc.h and enum pmc_ops.
 */
#include <sys/pmc.h>

#include "check.h"

int
main(void)
{
	OK(pmc_init());

	CHECK(PMC_EV_TSC_TSC == 0x1000, "%#x", PMC_EV_TSC_TSC);
	CHECK(PMC_EV_K8_FP_DISPATCHED_FPU_OPS == 0x2080, "%#x",
	    PMC_EV_K8_FP_DISPATCHED_FPU_OPS);
	CHECK(PMC_EV_IAF_CPU_CLK_UNHALTED_REF == 0x10002, "%#x",
	    PMC_EV_IAF_CPU_CLK_UNHALTED_REF);
	CHECK(PMC_EV_ARMV8_EVENT_11H == 0x14111, "%#x", PMC_EV_ARMV8_EVENT_11H);
	CHECK(PMC_EV_ARMV8__BLOCK_START == 0x14100 - 1, "%#x",
	    PMC_EV_ARMV8__BLOCK_START);
	CHECK(PMC_EV_K8_FIRST == PMC_EV_K8_FP_DISPATCHED_FPU_OPS, "%s", "K8_FIRST");
	CHECK(PMC_EVENT_LAST == PMC_EV_SOFT_FIRST + PMC_EV_DYN_COUNT - 1, "%s",
	    "PMC_EVENT_LAST");

	/* pmc_name_of_event: #N of __PMC_EV(C, N), as libpmc.c's tables. */
	const char *n = pmc_name_of_event(PMC_EV_K8_FR_RETIRED_X86_INSTRUCTIONS);
	CHECK(n != NULL && strcmp(n, "FR_RETIRED_X86_INSTRUCTIONS") == 0,
	    "K8 instructions: %s", n ? n : "NULL");
	n = pmc_name_of_event(PMC_EV_IAF_CPU_CLK_UNHALTED_CORE);
	CHECK(n != NULL && strcmp(n, "CPU_CLK_UNHALTED_CORE") == 0, "IAF cycles: %s",
	    n ? n : "NULL");
	n = pmc_name_of_event(PMC_EV_TSC_TSC);
	CHECK(n != NULL && strcmp(n, "TSC") == 0, "TSC: %s", n ? n : "NULL");
	n = pmc_name_of_event(PMC_EV_CMN600_PMU_hnf_cache_miss);
	CHECK(n != NULL && strcmp(n, "hnf_cache_miss") == 0, "CMN600: %s",
	    n ? n : "NULL");
	errno = 0;
	CHECK(pmc_name_of_event((enum pmc_event)0x2000) == NULL && errno == EINVAL,
	    "%s", "0x2000 (K7's, gone) is no event");
	errno = 0;
	CHECK(pmc_name_of_event((enum pmc_event)0) == NULL && errno == EINVAL,
	    "%s", "0 is no event");

	/* sys/sys/pmc.h: 12-bit CPU, 4-bit mode, 8-bit class, 8-bit row. */
	pmc_id_t id = PMC_ID_MAKE_ID(3, PMC_MODE_TC, PMC_CLASS_CMN600_PMU, 7);
	CHECK(id == ((3u << 20) | (3u << 16) | (0x18u << 8) | 7u), "id %#x", id);
	CHECK(PMC_ID_TO_CPU(id) == 3 && PMC_ID_TO_MODE(id) == PMC_MODE_TC &&
	    PMC_ID_TO_CLASS(id) == PMC_CLASS_CMN600_PMU &&
	    PMC_ID_TO_ROWINDEX(id) == 7, "fields of %#x", id);
	CHECK(PMC_OP_CONFIGURELOG == 0 && PMC_OP_PMCALLOCATE == 7 &&
	    PMC_OP_GETDYNEVENTINFO == 18, "%s", "enum pmc_ops");

	struct pmc_op_pmcallocate pa;
	memset(&pa, 0, sizeof(pa));
	pa.pm_ev = PMC_EV_TSC_TSC;
	pa.pm_mode = PMC_MODE_TC;
	pa.pm_cpu = (uint32_t)PMC_CPU_ANY;
	printf("events ok\n");
	return 0;
}
