/*
 * Our headers' values against FreeBSD's, transcribed below from the tree
 * whose PMC_VERSION is 0x0A000000 (sys/sys/pmc.h PMC_VERSION_MAJOR 0x0A,
 * _MINOR 0x00, _PATCH 0x0000). Each FBSD_* value names the file and the
 * macro it comes from; the program checks ours against it, then expands
 * the X-macro lists as pmcstat and pmccontrol do and checks each entry's
 * name with pmc_name_of_*.
 */
#include <sys/pmc.h>
#include <dev/hwpmc/pmc_events.h>

#include "check.h"

/* sys/sys/pmc.h: PMC_VERSION. */
#define FBSD_PMC_VERSION	0x0A000000

/* sys/sys/pmc.h: PMC_ID_TO_CLASS, _MODE, _CPU, _ROWINDEX, PMC_ID_MAKE_ID. */
#define FBSD_ID_TO_ROWINDEX(ID)	((ID) & 0xFF)
#define FBSD_ID_TO_CLASS(ID)	(((ID) & 0xFF00) >> 8)
#define FBSD_ID_TO_MODE(ID)	(((ID) & 0xF0000) >> 16)
#define FBSD_ID_TO_CPU(ID)	(((ID) & 0xFFF00000) >> 20)
#define FBSD_ID_MAKE_ID(CPU, MODE, CLASS, ROWINDEX)			\
	((((CPU) & 0xFFF) << 20) | (((MODE) & 0xF) << 16) |		\
	(((CLASS) & 0xFF) << 8) | ((ROWINDEX) & 0xFF))

struct value {
	const char	*name;
	long		ours;
	long		theirs;
};

#define V(ours, theirs)	{ #ours, (long)(ours), (long)(theirs) }

/*
 * sys/sys/pmc.h __PMC_CPUS(): __PMC_CPU(S, V, D) -> PMC_CPU_S = V;
 * PMC_CPU_FIRST PMC_CPU_AMD_K8, PMC_CPU_LAST PMC_CPU_ARMV8_CORTEX_A76.
 * INTEL_EMERALD_RAPIDS, _ALDERLAKEN and _GRANITE_RAPIDS: the same file of
 * FreeBSD's later tree, whose PMC_VERSION is still 0x0A000000.
 */
static const struct value cpus[] = {
	V(PMC_CPU_AMD_K8, 0x01), V(PMC_CPU_INTEL_CORE, 0x87),
	V(PMC_CPU_INTEL_CORE2, 0x88), V(PMC_CPU_INTEL_CORE2EXTREME, 0x89),
	V(PMC_CPU_INTEL_ATOM, 0x8A), V(PMC_CPU_INTEL_COREI7, 0x8B),
	V(PMC_CPU_INTEL_WESTMERE, 0x8C), V(PMC_CPU_INTEL_SANDYBRIDGE, 0x8D),
	V(PMC_CPU_INTEL_IVYBRIDGE, 0x8E),
	V(PMC_CPU_INTEL_SANDYBRIDGE_XEON, 0x8F),
	V(PMC_CPU_INTEL_IVYBRIDGE_XEON, 0x90), V(PMC_CPU_INTEL_HASWELL, 0x91),
	V(PMC_CPU_INTEL_ATOM_SILVERMONT, 0x92),
	V(PMC_CPU_INTEL_NEHALEM_EX, 0x93), V(PMC_CPU_INTEL_WESTMERE_EX, 0x94),
	V(PMC_CPU_INTEL_HASWELL_XEON, 0x95), V(PMC_CPU_INTEL_BROADWELL, 0x96),
	V(PMC_CPU_INTEL_BROADWELL_XEON, 0x97), V(PMC_CPU_INTEL_SKYLAKE, 0x98),
	V(PMC_CPU_INTEL_SKYLAKE_XEON, 0x99),
	V(PMC_CPU_INTEL_ATOM_GOLDMONT, 0x9A), V(PMC_CPU_INTEL_ICELAKE, 0x9B),
	V(PMC_CPU_INTEL_ICELAKE_XEON, 0x9C), V(PMC_CPU_INTEL_ALDERLAKE, 0x9D),
	V(PMC_CPU_INTEL_ATOM_GOLDMONT_P, 0x9E),
	V(PMC_CPU_INTEL_ATOM_TREMONT, 0x9F),
	V(PMC_CPU_INTEL_EMERALD_RAPIDS, 0xA0), V(PMC_CPU_INTEL_ALDERLAKEN, 0xA1),
	V(PMC_CPU_INTEL_GRANITE_RAPIDS, 0xA2), V(PMC_CPU_INTEL_XSCALE, 0x100),
	V(PMC_CPU_PPC_7450, 0x300), V(PMC_CPU_PPC_E500, 0x340),
	V(PMC_CPU_PPC_970, 0x380), V(PMC_CPU_PPC_POWER8, 0x390),
	V(PMC_CPU_GENERIC, 0x400), V(PMC_CPU_ARMV7_CORTEX_A5, 0x500),
	V(PMC_CPU_ARMV7_CORTEX_A7, 0x501), V(PMC_CPU_ARMV7_CORTEX_A8, 0x502),
	V(PMC_CPU_ARMV7_CORTEX_A9, 0x503), V(PMC_CPU_ARMV7_CORTEX_A15, 0x504),
	V(PMC_CPU_ARMV7_CORTEX_A17, 0x505), V(PMC_CPU_ARMV8_CORTEX_A53, 0x600),
	V(PMC_CPU_ARMV8_CORTEX_A57, 0x601), V(PMC_CPU_ARMV8_CORTEX_A76, 0x602),
	V(PMC_CPU_FIRST, 0x01), V(PMC_CPU_LAST, 0x602),
};

/*
 * sys/sys/pmc.h __PMC_CLASSES(): __PMC_CLASS(S, V, D) -> PMC_CLASS_S = V;
 * PMC_CLASS_FIRST PMC_CLASS_TSC, PMC_CLASS_LAST PMC_CLASS_CMN600_PMU.
 * IBS: FreeBSD's later 0x0A000000 tree.
 */
static const struct value classes[] = {
	V(PMC_CLASS_TSC, 0x00), V(PMC_CLASS_K8, 0x02), V(PMC_CLASS_IBS, 0x03),
	V(PMC_CLASS_IAF, 0x06), V(PMC_CLASS_IAP, 0x07), V(PMC_CLASS_UCF, 0x08),
	V(PMC_CLASS_UCP, 0x09), V(PMC_CLASS_XSCALE, 0x0A),
	V(PMC_CLASS_PPC7450, 0x0D), V(PMC_CLASS_PPC970, 0x0E),
	V(PMC_CLASS_SOFT, 0x0F), V(PMC_CLASS_ARMV7, 0x10),
	V(PMC_CLASS_ARMV8, 0x11), V(PMC_CLASS_E500, 0x13),
	V(PMC_CLASS_POWER8, 0x15), V(PMC_CLASS_DMC620_PMU_CD2, 0x16),
	V(PMC_CLASS_DMC620_PMU_C, 0x17), V(PMC_CLASS_CMN600_PMU, 0x18),
	V(PMC_CLASS_FIRST, 0x00), V(PMC_CLASS_LAST, 0x18),
};

/*
 * sys/sys/pmc.h __PMC_CAPS() (PMC_CAP_N = 1 << V), __PMC_MODES(),
 * __PMC_STATES() (+ MAX), __PMC_DISPOSITIONS(), __PMC_OPS() and their
 * FIRST/LAST macros; PMC_CAP_LAST PMC_CAP_DOMWIDE.
 */
static const struct value others[] = {
	V(PMC_CAP_INTERRUPT, 1 << 0), V(PMC_CAP_CASCADE, 1 << 11),
	V(PMC_CAP_SYSWIDE, 1 << 12), V(PMC_CAP_DOMWIDE, 1 << 13),
	V(PMC_CAP_LAST, 1 << 13),
	V(PMC_MODE_SS, 0), V(PMC_MODE_SC, 1), V(PMC_MODE_TS, 2),
	V(PMC_MODE_TC, 3),
	V(PMC_STATE_DISABLED, 0), V(PMC_STATE_DELETED, 5), V(PMC_STATE_MAX, 6),
	V(PMC_DISP_STANDALONE, 0), V(PMC_DISP_THREAD, 2),
	V(PMC_DISP_UNKNOWN, 3), V(PMC_DISP_LAST, 2),
	V(PMC_OP_CONFIGURELOG, 0), V(PMC_OP_PMCALLOCATE, 7),
	V(PMC_OP_WRITELOG, 16), V(PMC_OP_CLOSELOG, 17),
	V(PMC_OP_GETDYNEVENTINFO, 18),
	V(PMC_VERSION, FBSD_PMC_VERSION),
};

/*
 * sys/dev/hwpmc/pmc_events.h: the first and last event of each block of
 * __PMC_EVENTS() (__PMC_EV_BLOCK(C, V) then the class's __PMC_EV lines),
 * with PMC_EV_<C>_FIRST/_LAST; K7, MIPS24K, OCTEON, MIPS74K, BERI, UCP
 * and POWER8 are no longer in the list.
 */
static const struct value events[] = {
	V(PMC_EV_TSC_TSC, 0x1000), V(PMC_EV_TSC_LAST, 0x1000),
	V(PMC_EV_K8_FP_DISPATCHED_FPU_OPS, 0x2080),
	V(PMC_EV_K8_NB_HT_BUS2_BANDWIDTH, 0x2080 + 79),
	V(PMC_EV_K8_FIRST, 0x2080), V(PMC_EV_K8_LAST, 0x2080 + 79),
	V(PMC_EV_IAF_INSTR_RETIRED_ANY, 0x10000),
	V(PMC_EV_IAF_CPU_CLK_UNHALTED_REF, 0x10002),
	V(PMC_EV_PPC7450_CYCLE, 0x13000),
	V(PMC_EV_PPC7450_PREFETCH_ENGINE_FULL, 0x13000 + 219),
	V(PMC_EV_PPC970_INSTR_COMPLETED, 0x13100),
	V(PMC_EV_PPC970_ADDER, 0x13100 + 49),
	V(PMC_EV_E500_CYCLES, 0x13300),
	V(PMC_EV_E500_STWCX_FAILURES, 0x13300 + 156),
	V(PMC_EV_ARMV7_EVENT_00H, 0x14000), V(PMC_EV_ARMV7_EVENT_FFH, 0x140FF),
	V(PMC_EV_ARMV8_EVENT_00H, 0x14100), V(PMC_EV_ARMV8_EVENT_3FFH, 0x144FF),
	V(PMC_EV_ARMV8_LAST, 0x144FF),
	V(PMC_EV_DMC620_PMU_CD2_clkdiv2_cycle_count, 0x14500),
	V(PMC_EV_DMC620_PMU_CD2_clkdiv2_ranks_in_sref, 0x14519),
	V(PMC_EV_DMC620_PMU_C_clk_cycle_count, 0x14520),
	V(PMC_EV_DMC620_PMU_C_clk_upload_stall, 0x14522),
	V(PMC_EV_CMN600_PMU_dn_rxreq_dvmop, 0x14600),
	V(PMC_EV_CMN600_PMU_cxla_avg_latency_form_tx_tlp, 0x14600 + 176),
	V(PMC_EV_CMN600_PMU_LAST, 0x14600 + 176),
	V(PMC_EV_CMN600_PMU__BLOCK_START, 0x14600 - 1),
	V(PMC_EV_DYN_COUNT, 0x1000), V(PMC_EV_SOFT_FIRST, 0x20000),
	V(PMC_EVENT_LAST, 0x20FFF),
};

static int
check_values(const char *what, const struct value *v, size_t n)
{
	int bad = 0;

	for (size_t i = 0; i < n; i++)
		if (v[i].ours != v[i].theirs) {
			fprintf(stderr, "%s: %s is %#lx, FreeBSD's %#lx\n", what,
			    v[i].name, v[i].ours, v[i].theirs);
			bad++;
		}
	return bad;
}

#define NELEM(a)	(sizeof(a) / sizeof((a)[0]))

int
main(void)
{
	int bad = 0;

	bad += check_values("cputype", cpus, NELEM(cpus));
	bad += check_values("class", classes, NELEM(classes));
	bad += check_values("enum", others, NELEM(others));
	bad += check_values("event", events, NELEM(events));
	CHECK(bad == 0, "%d values differ from FreeBSD's", bad);

	/* The PMC_ID_* macros are FreeBSD's, field for field. */
	unsigned cpu_v[] = { 0, 1, 0x7FF, 0xFFF }, row_v[] = { 0, 1, 0xFF };
	for (size_t c = 0; c < NELEM(cpu_v); c++)
		for (unsigned m = PMC_MODE_FIRST; m <= PMC_MODE_LAST; m++)
			for (size_t k = 0; k < NELEM(classes); k++)
				for (size_t r = 0; r < NELEM(row_v); r++) {
					unsigned cl = (unsigned)classes[k].theirs;
					pmc_id_t id = PMC_ID_MAKE_ID(cpu_v[c], m, cl, row_v[r]);
					CHECK(id == FBSD_ID_MAKE_ID(cpu_v[c], m, cl, row_v[r]) &&
					    PMC_ID_TO_CPU(id) == cpu_v[c] &&
					    PMC_ID_TO_MODE(id) == m &&
					    PMC_ID_TO_CLASS(id) == cl &&
					    PMC_ID_TO_ROWINDEX(id) == row_v[r],
					    "id %#x", id);
				}

	/* The lists expand as pmccontrol and libpmc.c expand them. */
	int n = 0;
#undef __PMC_CPU
#define __PMC_CPU(S, V, D)	\
	CHECK(pmc_name_of_cputype(PMC_CPU_##S) != NULL &&		\
	    strcmp(pmc_name_of_cputype(PMC_CPU_##S), #S) == 0 &&	\
	    (V) == PMC_CPU_##S && strlen(D) > 0, "cputype %s", #S);	\
	n++;
	__PMC_CPUS()
	CHECK(n == 44, "%d CPUs in __PMC_CPUS()", n);
	n = 0;
#undef __PMC_CLASS
#define __PMC_CLASS(S, V, D)	\
	CHECK(pmc_name_of_class(PMC_CLASS_##S) != NULL &&		\
	    strcmp(pmc_name_of_class(PMC_CLASS_##S), #S) == 0 &&	\
	    (V) == PMC_CLASS_##S && strlen(D) > 0, "class %s", #S);	\
	n++;
	__PMC_CLASSES()
	CHECK(n == 18, "%d classes in __PMC_CLASSES()", n);
	n = 0;
#undef __PMC_CAP
#define __PMC_CAP(N, V, D)	\
	CHECK(strcmp(pmc_name_of_capability(PMC_CAP_##N), #N) == 0 &&	\
	    (1 << (V)) == PMC_CAP_##N && strlen(D) > 0, "cap %s", #N);	\
	n++;
	__PMC_CAPS()
	CHECK(n == 14, "%d capabilities in __PMC_CAPS()", n);
#undef __PMC_MODE
#define __PMC_MODE(M, N)	\
	CHECK(strcmp(pmc_name_of_mode((enum pmc_mode)(N)), #M) == 0, "mode %s", #M);
	__PMC_MODES()
	n = 0;
#undef __PMC_STATE
#define __PMC_STATE(S)	\
	CHECK(strcmp(pmc_name_of_state(PMC_STATE_##S), #S) == 0, "state %s", #S); \
	n++;
	__PMC_STATES()
	CHECK(n == 6, "%d states in __PMC_STATES()", n);
	n = 0;
#undef __PMC_DISP
#define __PMC_DISP(D)	n += PMC_DISP_##D == n;
	__PMC_DISPOSITIONS()
	CHECK(n == 4, "%d dispositions in order", n);
	n = 0;
#undef __PMC_OP
#define __PMC_OP(N, D)	n += PMC_OP_##N == n && strlen(D) > 0;
	__PMC_OPS()
	CHECK(n == 19, "%d operations in order", n);

	/* Every event of __PMC_EVENTS() has its #N as its name. */
	n = 0;
#undef __PMC_EV_BLOCK
#undef __PMC_EV
#define __PMC_EV_BLOCK(C, V)	\
	CHECK(PMC_EV_##C##__BLOCK_START == (V) - 1, "block %s", #C);
#define __PMC_EV(C, N)	\
	CHECK(pmc_name_of_event(PMC_EV_##C##_##N) != NULL &&		\
	    strcmp(pmc_name_of_event(PMC_EV_##C##_##N), #N) == 0,	\
	    "name of PMC_EV_%s_%s", #C, #N);				\
	n++;
	__PMC_EVENTS()
	CHECK(n == 1997, "%d events in __PMC_EVENTS()", n);

	/* K7 is gone: libpmc.c's lookups fail with EINVAL. */
	errno = 0;
	CHECK(pmc_name_of_class((enum pmc_class)1) == NULL && errno == EINVAL,
	    "%s", "class 1 (K7)");
	errno = 0;
	CHECK(pmc_name_of_cputype((enum pmc_cputype)0) == NULL && errno == EINVAL,
	    "%s", "cputype 0 (AMD_K7)");

	printf("freebsd values ok\n");
	return 0;
}
