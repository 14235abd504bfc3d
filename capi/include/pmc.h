/*
 * pmc.h -- FreeBSD's libpmc interface (pmc(3)) for Linux, implemented by
 * libpmc from the `pmc` Rust workspace over perf_event.
 *
 * Names, values and layouts follow FreeBSD's headers of the tree whose
 * PMC_VERSION is 0x0A000000 (FreeBSD 14 and later), so that programs
 * written for FreeBSD's libpmc compile unchanged:
 *   - sys/sys/pmc.h      (PMC_* constants, enum pmc_mode/class/cputype/
 *                         state/disp/caps, struct pmc_classinfo, pmc_info)
 *   - lib/libpmc/pmc.h   (struct pmc_driverstats, pmc_cpuinfo, pmc_pmcinfo,
 *                         the prototypes, pmc_allocate's 6th `count` argument)
 * This file restates those facts; it is not a copy of FreeBSD's text.
 * What differs on Linux is listed in docs/c-api.md, "What differs from FreeBSD".
 */
#ifndef _PMC_H_
#define _PMC_H_

#include <errno.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* sys/sys/pmc.h: sizes. */
#define PMC_MODULE_NAME		"hwpmc"
#define PMC_NAME_MAX		64	/* struct pmc_info pm_name */
#define PMC_CLASS_MAX		8	/* struct pmc_cpuinfo pm_classes[] */
#define PMC_CPUID_LEN		64

/*
 * sys/sys/pmc.h: the API version [MMmmpppp] of FreeBSD 14 and 15,
 * 0x0A000000, which the log writer puts in INITIALIZE.  The log reader
 * also takes FreeBSD 12-13's logs (0x09030000, another PROCEXEC layout:
 * PMCLOG_PROCEXEC_ENTRYADDR in <pmclog.h>).
 */
#define PMC_VERSION_MAJOR	0x0A
#define PMC_VERSION_MINOR	0x00
#define PMC_VERSION_PATCH	0x0000
#define PMC_VERSION		(PMC_VERSION_MAJOR << 24 |		\
	PMC_VERSION_MINOR << 16 | PMC_VERSION_PATCH)

/*
 * sys/sys/pmc.h __PMC_CPUS(): __PMC_CPU(symbol, value, description), the
 * kinds of CPUs, sparse values. The 0x0A000000 tree dropped AMD_K7 (0x00)
 * and the Pentium, MIPS and Octeon entries; the last three Intel entries
 * (0xA0-0xA2) are those FreeBSD added later under the same PMC_VERSION.
 */
#define	__PMC_CPUS()	\
	__PMC_CPU(AMD_K8, 0x01, "AMD K8")	\
	__PMC_CPU(INTEL_CORE, 0x87, "Intel Core Solo/Duo")	\
	__PMC_CPU(INTEL_CORE2, 0x88, "Intel Core2")	\
	__PMC_CPU(INTEL_CORE2EXTREME, 0x89, "Intel Core2 Extreme")	\
	__PMC_CPU(INTEL_ATOM, 0x8A, "Intel Atom")	\
	__PMC_CPU(INTEL_COREI7, 0x8B, "Intel Core i7")	\
	__PMC_CPU(INTEL_WESTMERE, 0x8C, "Intel Westmere")	\
	__PMC_CPU(INTEL_SANDYBRIDGE, 0x8D, "Intel Sandy Bridge")	\
	__PMC_CPU(INTEL_IVYBRIDGE, 0x8E, "Intel Ivy Bridge")	\
	__PMC_CPU(INTEL_SANDYBRIDGE_XEON, 0x8F, "Intel Sandy Bridge Xeon")	\
	__PMC_CPU(INTEL_IVYBRIDGE_XEON, 0x90, "Intel Ivy Bridge Xeon")	\
	__PMC_CPU(INTEL_HASWELL, 0x91, "Intel Haswell")	\
	__PMC_CPU(INTEL_ATOM_SILVERMONT, 0x92, "Intel Atom Silvermont")	\
	__PMC_CPU(INTEL_NEHALEM_EX, 0x93, "Intel Nehalem Xeon 7500")	\
	__PMC_CPU(INTEL_WESTMERE_EX, 0x94, "Intel Westmere Xeon E7")	\
	__PMC_CPU(INTEL_HASWELL_XEON, 0x95, "Intel Haswell Xeon E5 v3")	\
	__PMC_CPU(INTEL_BROADWELL, 0x96, "Intel Broadwell")	\
	__PMC_CPU(INTEL_BROADWELL_XEON, 0x97, "Intel Broadwell Xeon")	\
	__PMC_CPU(INTEL_SKYLAKE, 0x98, "Intel Skylake")	\
	__PMC_CPU(INTEL_SKYLAKE_XEON, 0x99, "Intel Skylake Xeon")	\
	__PMC_CPU(INTEL_ATOM_GOLDMONT, 0x9A, "Intel Atom Goldmont")	\
	__PMC_CPU(INTEL_ICELAKE, 0x9B, "Intel Icelake")	\
	__PMC_CPU(INTEL_ICELAKE_XEON, 0x9C, "Intel Icelake Xeon")	\
	__PMC_CPU(INTEL_ALDERLAKE, 0x9D, "Intel Alderlake")	\
	__PMC_CPU(INTEL_ATOM_GOLDMONT_P, 0x9E, "Intel Atom Goldmont Plus")	\
	__PMC_CPU(INTEL_ATOM_TREMONT, 0x9F, "Intel Atom Tremont")	\
	__PMC_CPU(INTEL_EMERALD_RAPIDS, 0xA0, "Intel Emerald Rapids")	\
	__PMC_CPU(INTEL_ALDERLAKEN, 0xA1, "Intel AlderlakeN")	\
	__PMC_CPU(INTEL_GRANITE_RAPIDS, 0xA2, "Intel Granite Rapids")	\
	__PMC_CPU(INTEL_XSCALE, 0x100, "Intel XScale")	\
	__PMC_CPU(PPC_7450, 0x300, "PowerPC MPC7450")	\
	__PMC_CPU(PPC_E500, 0x340, "PowerPC e500 Core")	\
	__PMC_CPU(PPC_970, 0x380, "IBM PowerPC 970")	\
	__PMC_CPU(PPC_POWER8, 0x390, "IBM POWER8")	\
	__PMC_CPU(GENERIC, 0x400, "Generic")	\
	__PMC_CPU(ARMV7_CORTEX_A5, 0x500, "ARMv7 Cortex A5")	\
	__PMC_CPU(ARMV7_CORTEX_A7, 0x501, "ARMv7 Cortex A7")	\
	__PMC_CPU(ARMV7_CORTEX_A8, 0x502, "ARMv7 Cortex A8")	\
	__PMC_CPU(ARMV7_CORTEX_A9, 0x503, "ARMv7 Cortex A9")	\
	__PMC_CPU(ARMV7_CORTEX_A15, 0x504, "ARMv7 Cortex A15")	\
	__PMC_CPU(ARMV7_CORTEX_A17, 0x505, "ARMv7 Cortex A17")	\
	__PMC_CPU(ARMV8_CORTEX_A53, 0x600, "ARMv8 Cortex A53")	\
	__PMC_CPU(ARMV8_CORTEX_A57, 0x601, "ARMv8 Cortex A57")	\
	__PMC_CPU(ARMV8_CORTEX_A76, 0x602, "ARMv8 Cortex A76")

enum pmc_cputype {
#undef	__PMC_CPU
#define	__PMC_CPU(S, V, D)	PMC_CPU_##S = V,
	__PMC_CPUS()
};

#define	PMC_CPU_FIRST	PMC_CPU_AMD_K8
#define	PMC_CPU_LAST	PMC_CPU_ARMV8_CORTEX_A76

/*
 * sys/sys/pmc.h __PMC_CLASSES(): __PMC_CLASS(symbol, value, description).
 * K7 (0x01) is gone; IBS (0x03) is FreeBSD's later addition.
 */
#define	__PMC_CLASSES()	\
	__PMC_CLASS(TSC, 0x00, "CPU Timestamp counter")	\
	__PMC_CLASS(K8, 0x02, "AMD K8 performance counters")	\
	__PMC_CLASS(IBS, 0x03, "AMD IBS performance counters")	\
	__PMC_CLASS(IAF, 0x06, "Intel Core2/Atom, fixed function")	\
	__PMC_CLASS(IAP, 0x07, "Intel Core...Atom, programmable")	\
	__PMC_CLASS(UCF, 0x08, "Intel Uncore fixed function")	\
	__PMC_CLASS(UCP, 0x09, "Intel Uncore programmable")	\
	__PMC_CLASS(XSCALE, 0x0A, "Intel XScale counters")	\
	__PMC_CLASS(PPC7450, 0x0D, "Motorola MPC7450 class")	\
	__PMC_CLASS(PPC970, 0x0E, "IBM PowerPC 970 class")	\
	__PMC_CLASS(SOFT, 0x0F, "Software events")	\
	__PMC_CLASS(ARMV7, 0x10, "ARMv7")	\
	__PMC_CLASS(ARMV8, 0x11, "ARMv8")	\
	__PMC_CLASS(E500, 0x13, "Freescale e500 class")	\
	__PMC_CLASS(POWER8, 0x15, "IBM POWER8 class")	\
	__PMC_CLASS(DMC620_PMU_CD2, 0x16, "ARM DMC620 Memory Controller PMU CLKDIV2")	\
	__PMC_CLASS(DMC620_PMU_C, 0x17, "ARM DMC620 Memory Controller PMU CLK")	\
	__PMC_CLASS(CMN600_PMU, 0x18, "Arm CoreLink CMN600 Coherent Mesh Network PMU")

enum pmc_class {
#undef	__PMC_CLASS
#define	__PMC_CLASS(S, V, D)	PMC_CLASS_##S = V,
	__PMC_CLASSES()
};

#define	PMC_CLASS_FIRST	PMC_CLASS_TSC
#define	PMC_CLASS_LAST	PMC_CLASS_CMN600_PMU

/* sys/sys/pmc.h __PMC_STATES(): hardware, then software states. */
#define	__PMC_HWSTATES()	\
	__PMC_STATE(DISABLED)	\
	__PMC_STATE(FREE)

#define	__PMC_SWSTATES()	\
	__PMC_STATE(ALLOCATED)	\
	__PMC_STATE(STOPPED)	\
	__PMC_STATE(RUNNING)	\
	__PMC_STATE(DELETED)

#define	__PMC_STATES()		\
	__PMC_HWSTATES()	\
	__PMC_SWSTATES()

enum pmc_state {
#undef	__PMC_STATE
#define	__PMC_STATE(S)	PMC_STATE_##S,
	__PMC_STATES()
	__PMC_STATE(MAX)
};

#define	PMC_STATE_FIRST	PMC_STATE_DISABLED
#define	PMC_STATE_LAST	PMC_STATE_DELETED

/*
 * sys/sys/pmc.h __PMC_MODES(): system-wide sampling (SS) and counting
 * (SC), process ("thread virtual") sampling (TS) and counting (TC).
 */
#define	__PMC_MODES()		\
	__PMC_MODE(SS, 0)	\
	__PMC_MODE(SC, 1)	\
	__PMC_MODE(TS, 2)	\
	__PMC_MODE(TC, 3)

enum pmc_mode {
#undef	__PMC_MODE
#define	__PMC_MODE(M, N)	PMC_MODE_##M = N,
	__PMC_MODES()
};

#define PMC_MODE_FIRST	PMC_MODE_SS
#define PMC_MODE_LAST	PMC_MODE_TC

#define PMC_IS_COUNTING_MODE(mode)				\
	((mode) == PMC_MODE_SC || (mode) == PMC_MODE_TC)
#define PMC_IS_SYSTEM_MODE(mode)				\
	((mode) == PMC_MODE_SS || (mode) == PMC_MODE_SC)
#define PMC_IS_SAMPLING_MODE(mode)				\
	((mode) == PMC_MODE_SS || (mode) == PMC_MODE_TS)
#define PMC_IS_VIRTUAL_MODE(mode)				\
	((mode) == PMC_MODE_TS || (mode) == PMC_MODE_TC)

/*
 * sys/sys/pmc.h __PMC_DISPOSITIONS(N) (called with no argument): the
 * disposition of a row; UNKNOWN is a sentinel after PMC_DISP_LAST.
 */
#define	__PMC_DISPOSITIONS(N)		\
	__PMC_DISP(STANDALONE)		\
	__PMC_DISP(FREE)		\
	__PMC_DISP(THREAD)		\
	__PMC_DISP(UNKNOWN)

enum pmc_disp {
#undef	__PMC_DISP
#define	__PMC_DISP(D)	PMC_DISP_##D,
	__PMC_DISPOSITIONS()
};

#define PMC_DISP_FIRST	PMC_DISP_STANDALONE
#define PMC_DISP_LAST	PMC_DISP_THREAD

/* sys/sys/pmc.h __PMC_CAPS(): __PMC_CAP(name, bit, description). */
#define	__PMC_CAPS()	\
	__PMC_CAP(INTERRUPT, 0, "generate interrupts")	\
	__PMC_CAP(USER, 1, "count user-mode events")	\
	__PMC_CAP(SYSTEM, 2, "count system-mode events")	\
	__PMC_CAP(EDGE, 3, "do edge detection of events")	\
	__PMC_CAP(THRESHOLD, 4, "ignore events below a threshold")	\
	__PMC_CAP(READ, 5, "read PMC counter")	\
	__PMC_CAP(WRITE, 6, "reprogram PMC counter")	\
	__PMC_CAP(INVERT, 7, "invert comparison sense")	\
	__PMC_CAP(QUALIFIER, 8, "further qualify monitored events")	\
	__PMC_CAP(PRECISE, 9, "perform precise sampling")	\
	__PMC_CAP(TAGGING, 10, "tag upstream events")	\
	__PMC_CAP(CASCADE, 11, "cascade counters")	\
	__PMC_CAP(SYSWIDE, 12, "system wide counter")	\
	__PMC_CAP(DOMWIDE, 13, "NUMA domain wide counter")

enum pmc_caps {
#undef	__PMC_CAP
#define	__PMC_CAP(NAME, VALUE, DESCR)	PMC_CAP_##NAME = (1 << VALUE),
	__PMC_CAPS()
};

#define PMC_CAP_FIRST	PMC_CAP_INTERRUPT
#define PMC_CAP_LAST	PMC_CAP_DOMWIDE

/*
 * sys/sys/pmc.h: enum pmc_event from dev/hwpmc/pmc_events.h's
 * __PMC_EVENTS() (generated: pmc_events.h). pmc_name_of_event() gives
 * each event's name in its class (the symbol after PMC_EV_<class>_).
 */
#include "pmc_events.h"

enum pmc_event {
#undef	__PMC_EV
#undef	__PMC_EV_BLOCK
#define	__PMC_EV_BLOCK(C, V)	PMC_EV_##C##__BLOCK_START = (V) - 1,
#define	__PMC_EV(C, N)		PMC_EV_##C##_##N,
	__PMC_EVENTS()
};

/* sys/sys/pmc.h __PMC_OPS(): the hwpmc system call's operations. */
#define	__PMC_OPS()	\
	__PMC_OP(CONFIGURELOG, "Set log file")	\
	__PMC_OP(FLUSHLOG, "Flush log file")	\
	__PMC_OP(GETCPUINFO, "Get system CPU information")	\
	__PMC_OP(GETDRIVERSTATS, "Get driver statistics")	\
	__PMC_OP(GETMODULEVERSION, "Get module version")	\
	__PMC_OP(GETPMCINFO, "Get per-cpu PMC information")	\
	__PMC_OP(PMCADMIN, "Set PMC state")	\
	__PMC_OP(PMCALLOCATE, "Allocate and configure a PMC")	\
	__PMC_OP(PMCATTACH, "Attach a PMC to a process")	\
	__PMC_OP(PMCDETACH, "Detach a PMC from a process")	\
	__PMC_OP(PMCGETMSR, "Get a PMC's hardware address")	\
	__PMC_OP(PMCRELEASE, "Release a PMC")	\
	__PMC_OP(PMCRW, "Read/Set a PMC")	\
	__PMC_OP(PMCSETCOUNT, "Set initial count/sampling rate")	\
	__PMC_OP(PMCSTART, "Start a PMC")	\
	__PMC_OP(PMCSTOP, "Stop a PMC")	\
	__PMC_OP(WRITELOG, "Write a cookie to the log file")	\
	__PMC_OP(CLOSELOG, "Close log file")	\
	__PMC_OP(GETDYNEVENTINFO, "Get dynamic events list")

enum pmc_ops {
#undef	__PMC_OP
#define	__PMC_OP(N, D)	PMC_OP_##N,
	__PMC_OPS()
};

/* sys/sys/pmc.h: flags of pmc_allocate(3) and internal ones. */
#define PMC_F_UNUSED1		0x00000001
#define PMC_F_DESCENDANTS	0x00000002 /* track descendants */
#define PMC_F_LOG_PROCCSW	0x00000004 /* log context switches */
#define PMC_F_LOG_PROCEXIT	0x00000008 /* log process exits */
#define PMC_F_NEWVALUE		0x00000010 /* PMCRW: write */
#define PMC_F_OLDVALUE		0x00000020 /* PMCRW: read */
#define PMC_F_CALLCHAIN		0x00000080 /* capture callchains */
#define PMC_F_USERCALLCHAIN	0x00000100 /* user-space callchains */
#define PMC_F_EV_PMU		0x00000200 /* event given by a PMU name */
#define PMC_F_ATTACHED_TO_OWNER	0x00010000 /* internal */
#define PMC_F_NEEDS_LOGFILE	0x00020000 /* internal */
#define PMC_F_ATTACH_DONE	0x00040000 /* internal */

#define PMC_CALLCHAIN_DEPTH_MAX	512
#define PMC_CC_F_USERSPACE	0x01

typedef uint32_t	pmc_id_t;
typedef uint64_t	pmc_value_t;

#define PMC_ID_INVALID		(~ (pmc_id_t) 0)

/*
 * sys/sys/pmc.h: the fields of a pmc_id_t, CPU (12 bits) | mode (4) |
 * class (8) | row index (8). pmc_allocate() here builds its ids from these
 * fields: the PMC's CPU (0xFFF for a process PMC, PMC_CPU_ANY cut to 12
 * bits), its mode, its class (as pmc_pmcinfo() reports it) and a row
 * index unique among this process's live PMCs of that CPU, mode and class.
 */
#define PMC_ID_TO_ROWINDEX(ID)	((ID) & 0xFF)
#define PMC_ID_TO_CLASS(ID)	(((ID) & 0xFF00) >> 8)
#define PMC_ID_TO_MODE(ID)	(((ID) & 0xF0000) >> 16)
#define PMC_ID_TO_CPU(ID)	(((ID) & 0xFFF00000) >> 20)
#define PMC_ID_MAKE_ID(CPU,MODE,CLASS,ROWINDEX)			\
	((((CPU) & 0xFFF) << 20) | (((MODE) & 0xF) << 16) |	\
	(((CLASS) & 0xFF) << 8) | ((ROWINDEX) & 0xFF))

#define PMC_CPU_ANY		~0

/*
 * libpmc sets EDOOFUS when a PMC needs a log file and none is configured;
 * Linux has no EDOOFUS, so it is EBADFD here (the `pmc` crate's choice).
 */
#ifndef EDOOFUS
#define EDOOFUS			EBADFD
#endif

/* sys/sys/pmc.h: one row of pmc_pmcinfo(). */
struct pmc_info {
	char		pm_name[PMC_NAME_MAX];	/* event specifier */
	enum pmc_class	pm_class;
	int		pm_enabled;
	enum pmc_disp	pm_rowdisp;	/* THREAD (process) or STANDALONE */
	pid_t		pm_ownerpid;
	enum pmc_mode	pm_mode;
	enum pmc_event	pm_event;
	uint32_t	pm_flags;
	pmc_value_t	pm_reloadcount;
};

/* sys/sys/pmc.h: one class of pmc_cpuinfo(). */
struct pmc_classinfo {
	enum pmc_class	pm_class;
	uint32_t	pm_caps;	/* PMC_CAP_* */
	uint32_t	pm_width;	/* bits */
	uint32_t	pm_num;		/* PMCs of the class per CPU */
};

/*
 * The machine-dependent part of PMCALLOCATE (amd64 machine/pmc_mdep.h,
 * dev/hwpmc/hwpmc_amd.h, hwpmc_core.h, hwpmc_uncore.h), filled by
 * pmc_pmu_pmcallocate(); arm64's below. Other architectures keep the
 * union's size only.
 */
#if defined(__x86_64__) || defined(__i386__)
enum sub_class {
	PMC_AMD_SUB_CLASS_CORE,
	PMC_AMD_SUB_CLASS_L3_CACHE,
	PMC_AMD_SUB_CLASS_DATA_FABRIC
};

struct pmc_md_amd_op_pmcallocate {
	uint64_t	pm_amd_config;
	uint32_t	pm_amd_sub_class;
};

struct pmc_md_iap_op_pmcallocate {
	uint32_t	pm_iap_config;
	uint64_t	pm_iap_rsp;
};

struct pmc_md_ucf_op_pmcallocate {
	uint16_t	pm_ucf_flags;
};

struct pmc_md_ucp_op_pmcallocate {
	uint32_t	pm_ucp_config;
};

union pmc_md_op_pmcallocate {
	struct pmc_md_amd_op_pmcallocate	pm_amd;
	struct pmc_md_iap_op_pmcallocate	pm_iap;
	struct pmc_md_ucf_op_pmcallocate	pm_ucf;
	struct pmc_md_ucp_op_pmcallocate	pm_ucp;
	uint64_t				__pad[4];
};
#elif defined(__aarch64__)
/*
 * arm64 machine/pmc_mdep.h, dev/hwpmc/hwpmc_cmn600.h, hwpmc_dmc620.h:
 * the core PMU's event in pm_md_config, the CMN-600 and DMC-620 PMUs'
 * own arguments.
 */
struct pmc_md_cmn600_pmu_op_pmcallocate {
	uint64_t	pma_cmn600_nodeid;
	uint64_t	pma_cmn600_occupancy;
	uint32_t	pma_cmn600_config;
};

struct pmc_md_dmc620_pmu_op_pmcallocate {
	uint64_t	pm_dmc620_match;
	uint64_t	pm_dmc620_mask;
	uint32_t	pm_dmc620_config;
};

union pmc_md_op_pmcallocate {
	struct {
		uint32_t	pm_md_config;
	};
	struct pmc_md_cmn600_pmu_op_pmcallocate	pm_cmn600;
	struct pmc_md_dmc620_pmu_op_pmcallocate	pm_dmc620;
	uint64_t				__pad[4];
};
#else
union pmc_md_op_pmcallocate {
	uint64_t	__pad[4];
};
#endif

/* sys/sys/pmc.h: the arguments of each PMC_OP_*. */
struct pmc_op_pmcallocate {
	uint32_t	pm_caps;	/* PMC_CAP_* */
	uint32_t	pm_cpu;		/* a CPU or PMC_CPU_ANY */
	enum pmc_class	pm_class;
	enum pmc_event	pm_ev;
	uint32_t	pm_flags;	/* PMC_F_* */
	enum pmc_mode	pm_mode;
	pmc_id_t	pm_pmcid;	/* out */
	pmc_value_t	pm_count;	/* initial or reload count */
	union pmc_md_op_pmcallocate pm_md;
};

struct pmc_op_pmcadmin {
	int		pm_cpu;
	uint32_t	pm_flags;
	int		pm_pmc;
	enum pmc_state	pm_state;
};

struct pmc_op_pmcattach {
	pmc_id_t	pm_pmc;
	pid_t		pm_pid;
};

struct pmc_op_pmcsetcount {
	pmc_value_t	pm_count;
	pmc_id_t	pm_pmcid;
};

struct pmc_op_pmcrw {
	uint32_t	pm_flags;	/* PMC_F_OLDVALUE, PMC_F_NEWVALUE */
	pmc_id_t	pm_pmcid;
	pmc_value_t	pm_value;
};

struct pmc_op_getpmcinfo {
	int32_t		pm_cpu;
	struct pmc_info	pm_pmcs[];
};

struct pmc_op_getcpuinfo {
	enum pmc_cputype pm_cputype;
	uint32_t	pm_ncpu;
	uint32_t	pm_npmc;
	uint32_t	pm_nclass;
	struct pmc_classinfo pm_classes[PMC_CLASS_MAX];
};

struct pmc_op_configurelog {
	int		pm_flags;
	int		pm_logfd;	/* or -1 */
};

struct pmc_op_getdriverstats {
	unsigned int	pm_intr_ignored;
	unsigned int	pm_intr_processed;
	unsigned int	pm_intr_bufferfull;
	unsigned int	pm_syscalls;
	unsigned int	pm_syscall_errors;
	unsigned int	pm_buffer_requests;
	unsigned int	pm_buffer_requests_failed;
	unsigned int	pm_log_sweeps;
};

struct pmc_op_simple {
	pmc_id_t	pm_pmcid;
};

struct pmc_op_writelog {
	uint32_t	pm_userdata;
};

struct pmc_op_getmsr {
	uint32_t	pm_msr;
	pmc_id_t	pm_pmcid;
};

struct pmc_dyn_event_descr {
	char		pm_ev_name[PMC_NAME_MAX];
	enum pmc_event	pm_ev_code;
};

struct pmc_op_getdyneventinfo {
	enum pmc_class	pm_class;
	unsigned int	pm_nevent;
	struct pmc_dyn_event_descr pm_events[PMC_EV_DYN_COUNT];
};

/* lib/libpmc/pmc.h */
struct pmc_driverstats {
	unsigned int	pm_intr_ignored;
	unsigned int	pm_intr_processed;
	unsigned int	pm_intr_bufferfull;
	unsigned int	pm_syscalls;
	unsigned int	pm_syscall_errors;
	unsigned int	pm_buffer_requests;
	unsigned int	pm_buffer_requests_failed;
	unsigned int	pm_log_sweeps;
};

/* lib/libpmc/pmc.h */
struct pmc_cpuinfo {
	enum pmc_cputype pm_cputype;
	uint32_t	pm_ncpu;
	uint32_t	pm_npmc;
	uint32_t	pm_nclass;
	struct pmc_classinfo pm_classes[PMC_CLASS_MAX];
};

/* lib/libpmc/pmc.h; pmc_pmcinfo() mallocs it, the caller frees it. */
struct pmc_pmcinfo {
	int32_t		pm_cpu;
	struct pmc_info	pm_pmcs[];
};

/* lib/libpmc/pmc.h: the prototypes (FreeBSD 12+ pmc_allocate). */
int	pmc_allocate(const char *_ctrspec, enum pmc_mode _mode, uint32_t _flags,
    int _cpu, pmc_id_t *_pmcid, uint64_t _count);
int	pmc_attach(pmc_id_t _pmcid, pid_t _pid);
int	pmc_capabilities(pmc_id_t _pmc, uint32_t *_caps);
int	pmc_configure_logfile(int _fd);
int	pmc_flush_logfile(void);
int	pmc_close_logfile(void);
int	pmc_detach(pmc_id_t _pmcid, pid_t _pid);
int	pmc_disable(int _cpu, int _pmc);
int	pmc_enable(int _cpu, int _pmc);
int	pmc_get_driver_stats(struct pmc_driverstats *_gms);
int	pmc_get_msr(pmc_id_t _pmc, uint32_t *_msr);
int	pmc_init(void);
int	pmc_read(pmc_id_t _pmc, pmc_value_t *_value);
int	pmc_release(pmc_id_t _pmc);
int	pmc_rw(pmc_id_t _pmc, pmc_value_t _newvalue, pmc_value_t *_oldvalue);
int	pmc_set(pmc_id_t _pmc, pmc_value_t _value);
int	pmc_start(pmc_id_t _pmc);
int	pmc_stop(pmc_id_t _pmc);
int	pmc_width(pmc_id_t _pmc, uint32_t *_width);
int	pmc_write(pmc_id_t _pmc, pmc_value_t _value);
int	pmc_writelog(uint32_t _udata);

int	pmc_ncpu(void);
int	pmc_npmc(int _cpu);
int	pmc_cpuinfo(const struct pmc_cpuinfo **_cpu_info);
int	pmc_pmcinfo(int _cpu, struct pmc_pmcinfo **_pmc_info);

const char	*pmc_name_of_capability(enum pmc_caps _c);
const char	*pmc_name_of_class(enum pmc_class _pc);
const char	*pmc_name_of_cputype(enum pmc_cputype _cp);
const char	*pmc_name_of_disposition(enum pmc_disp _pd);
const char	*pmc_name_of_event(enum pmc_event _pe);
const char	*pmc_name_of_mode(enum pmc_mode _pm);
const char	*pmc_name_of_state(enum pmc_state _ps);

int	pmc_event_names_of_class(enum pmc_class _cl, const char ***_eventnames,
    int *_nevents);

/*
 * lib/libpmc/pmc.h: the pmu-events functions (libpmc_pmu_util.c), over
 * the names pmcstat takes for this machine's core PMU: its sysfs events
 * and the CPU's pmu-events table. The print functions write to stdout in
 * libpmc's formats. A cpuid argument is NULL (this machine) or a
 * "vendor-family-model[-stepping]" string as kern.hwpmc.cpuid gives it.
 */
int	pmc_pmu_enabled(void);
void	pmc_pmu_print_counters(const char *_event_name);
void	pmc_pmu_print_counter_desc(const char *_event_name);
void	pmc_pmu_print_counter_desc_long(const char *_event_name);
void	pmc_pmu_print_counter_full(const char *_event_name);
uint64_t pmc_pmu_sample_rate_get(const char *_event_name);
int	pmc_pmu_pmcallocate(const char *_event_name,
    struct pmc_op_pmcallocate *_pm);
const char *pmc_pmu_event_get_by_idx(const char *_cpuid, int _idx);
int	pmc_pmu_idx_get_by_event(const char *_cpuid, const char *_event);
/*
 * pmc_pmu_stat_mode(const char ***) is no longer declared in the 0x0A tree's
 * lib/libpmc/pmc.h; the library keeps the symbol for programs built
 * before (declare it yourself to call it).
 */

/*
 * Extension (perf's `--call-graph dwarf`): sampling PMCs allocated from
 * now on copy the user registers and _bytes of user stack with each
 * sample (a multiple of 8 up to 65528; perf's default is 8192; 0 turns it
 * off), and the log writer unwinds them with the objects' CFI into each
 * sample's CALLCHAIN record, so programs built without frame pointers get
 * whole stacks. 0 or -1 with errno EINVAL for a bad size; allocating on a
 * backend that cannot copy stacks fails with EOPNOTSUPP.
 */
int	pmc_set_user_stack(uint32_t _bytes);

/*
 * Linux extension: the full message of the calling thread's last failure
 * (what failed, the errno, what to do), or "" if none. Valid until the
 * thread's next libpmc call. A panic inside the library (a bug) is stopped
 * at the call: the function returns its error value (-1 or NULL; 0 from
 * pmc_pmu_enabled, the default 65536 from pmc_pmu_sample_rate_get, EDOOFUS
 * from the pmc_pmu_* functions that return an errno value) with errno
 * EDOOFUS (EBADFD on Linux), and this message names the call and the panic.
 */
const char	*pmc_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* _PMC_H_ */
