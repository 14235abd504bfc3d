/*
 * FreeBSD's event numbers and the calls FreeBSD programs make with them:
 * PMC_EV_* values as sys/sys/pmc.h computes them from the blocks of
 * dev/hwpmc/pmc_events.h __PMC_EVENTS() (TSC 0x1000, K7 0x2000, K8 0x2080,
 * IAF 0x10000, ARMV8 0x14100), pmc_name_of_event (a name of ours or NULL
 * with EINVAL), the PMC_ID_* macros of sys/sys/pmc.h and enum pmc_ops.
 */
#include <sys/pmc.h>

#include "check.h"

int
main(void)
{
	OK(pmc_init());

	CHECK(PMC_EV_TSC_TSC == 0x1000, "%#x", PMC_EV_TSC_TSC);
	CHECK(PMC_EV_K7_DC_ACCESSES == 0x2000, "%#x", PMC_EV_K7_DC_ACCESSES);
	CHECK(PMC_EV_K7_HARDWARE_INTERRUPTS == 0x2000 + 22, "%#x",
	    PMC_EV_K7_HARDWARE_INTERRUPTS);
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

	/* pmc_name_of_event: our name for the same event, as pmccontrol -l. */
	const char *n = pmc_name_of_event(PMC_EV_K8_FR_RETIRED_X86_INSTRUCTIONS);
	CHECK(n != NULL && strcmp(n, "instructions") == 0, "K8 instructions: %s",
	    n ? n : "NULL");
	n = pmc_name_of_event(PMC_EV_IAF_CPU_CLK_UNHALTED_CORE);
	CHECK(n != NULL && strcmp(n, "cycles") == 0, "IAF cycles: %s", n ? n : "NULL");
	n = pmc_name_of_event(PMC_EV_TSC_TSC);
	CHECK(n != NULL && strcmp(n, "tsc") == 0, "TSC: %s", n ? n : "NULL");
	errno = 0;
	CHECK(pmc_name_of_event(PMC_EV_K7_DC_ACCESSES) == NULL && errno == EINVAL,
	    "%s", "K7_DC_ACCESSES has no equivalent here");
	errno = 0;
	CHECK(pmc_name_of_event((enum pmc_event)0) == NULL && errno == EINVAL,
	    "%s", "0 is no event");

	/* sys/sys/pmc.h: 12-bit CPU, 8-bit mode, 4-bit class, 8-bit row. */
	pmc_id_t id = PMC_ID_MAKE_ID(3, PMC_MODE_TC, PMC_CLASS_SOFT, 7);
	CHECK(id == ((3u << 20) | (3u << 12) | (0xFu << 8) | 7u), "id %#x", id);
	CHECK(PMC_ID_TO_CPU(id) == 3 && PMC_ID_TO_MODE(id) == PMC_MODE_TC &&
	    PMC_ID_TO_CLASS(id) == PMC_CLASS_SOFT && PMC_ID_TO_ROWINDEX(id) == 7,
	    "fields of %#x", id);
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
