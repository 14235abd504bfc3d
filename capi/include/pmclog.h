/*
 * pmclog.h -- FreeBSD's pmclog(3) log parser for Linux, implemented by
 * libpmc from the `pmc` Rust workspace.
 *
 * Names, values and layouts follow FreeBSD's headers of the tree whose
 * PMC_VERSION is 0x0A000000 (FreeBSD 14 and later):
 *   - sys/sys/pmclog.h   (enum pmclog_type, the records, union
 *                          pmclog_entry, the CALLCHAIN cpuflags macros)
 *   - lib/libpmc/pmclog.h (enum pmclog_state, struct pmclog_ev and every
 *                          struct pmclog_ev_*, enum pmclog_parser_state,
 *                          struct pmclog_parse_state, the four functions)
 * and the behaviour of lib/libpmc/pmclog.c (pl_offset is the stream offset
 * after the record, pl_count counts records from 1, CLOSELOG reads as
 * PMCLOG_EOF, pl_ts.tv_sec carries the record's raw timestamp).
 */
#ifndef _PMCLOG_H_
#define _PMCLOG_H_

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "pmc.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef MAXCOMLEN
#define MAXCOMLEN	19	/* FreeBSD sys/param.h */
#endif

typedef uint64_t	uintfptr_t;	/* FreeBSD amd64 machine/profile.h */

/*
 * FreeBSD's PATH_MAX (sys/syslimits.h), which sizes the path arrays below;
 * Linux's PATH_MAX is 4096, so the arrays use FreeBSD's value to keep
 * FreeBSD's layout.
 */
#define __PMCLOG_PATH_MAX	1024

/* sys/sys/pmclog.h */
enum pmclog_type {
	PMCLOG_TYPE_CLOSELOG = 1,
	PMCLOG_TYPE_DROPNOTIFY = 2,
	PMCLOG_TYPE_INITIALIZE = 3,
	PMCLOG_TYPE_PMCALLOCATE = 5,
	PMCLOG_TYPE_PMCATTACH = 6,
	PMCLOG_TYPE_PMCDETACH = 7,
	PMCLOG_TYPE_PROCCSW = 8,
	PMCLOG_TYPE_PROCEXEC = 9,
	PMCLOG_TYPE_PROCEXIT = 10,
	PMCLOG_TYPE_PROCFORK = 11,
	PMCLOG_TYPE_SYSEXIT = 12,
	PMCLOG_TYPE_USERDATA = 13,
	PMCLOG_TYPE_MAP_IN = 14,
	PMCLOG_TYPE_MAP_OUT = 15,
	PMCLOG_TYPE_CALLCHAIN = 16,
	PMCLOG_TYPE_PMCALLOCATEDYN = 17,
	PMCLOG_TYPE_THR_CREATE = 18,
	PMCLOG_TYPE_THR_EXIT = 19,
	PMCLOG_TYPE_PROC_CREATE = 20
};

/* sys/sys/pmclog.h: CALLCHAIN pl_cpuflags = CPU << 16 | flags. */
#define PMC_CALLCHAIN_CPUFLAGS_TO_CPU(CF)	(((CF) >> 16) & 0xFFFF)
#define PMC_CALLCHAIN_CPUFLAGS_TO_USERMODE(CF)	((CF) & PMC_CC_F_USERSPACE)
#define PMC_CALLCHAIN_TO_CPUFLAGS(CPU,FLAGS)	\
	(((CPU) << 16) | ((FLAGS) & 0xFFFF))

/*
 * sys/sys/pmclog.h: the records as hwpmc writes them (and as pl_data
 * points at them): a 16-byte header, then each record's fields, packed.
 * The header word is MAGIC << 24 | TYPE << 16 | LENGTH (bytes).
 */
#define PMCLOG_HEADER_MAGIC		0xEEU
#define PMCLOG_HEADER_TO_LENGTH(H)	((H) & 0x0000FFFF)
#define PMCLOG_HEADER_TO_TYPE(H)	(((H) & 0x00FF0000) >> 16)
#define PMCLOG_HEADER_TO_MAGIC(H)	(((H) & 0xFF000000) >> 24)
#define PMCLOG_HEADER_CHECK_MAGIC(H)	\
	(PMCLOG_HEADER_TO_MAGIC(H) == PMCLOG_HEADER_MAGIC)

#define PMCLOG_ENTRY_HEADER		\
	uint32_t	pl_header;	\
	uint32_t	pl_spare;	\
	uint64_t	pl_tsc;

struct pmclog_header {
	PMCLOG_ENTRY_HEADER
};

struct pmclog_callchain {
	PMCLOG_ENTRY_HEADER
	uint32_t	pl_pid;
	uint32_t	pl_tid;
	uint32_t	pl_pmcid;
	uint32_t	pl_cpuflags;
	uintptr_t	pl_pc[PMC_CALLCHAIN_DEPTH_MAX];
} __attribute__((__packed__));

struct pmclog_closelog {
	PMCLOG_ENTRY_HEADER
};

struct pmclog_dropnotify {
	PMCLOG_ENTRY_HEADER
};

struct pmclog_initialize {
	PMCLOG_ENTRY_HEADER
	uint32_t	pl_version;	/* PMC_VERSION of the writer */
	uint32_t	pl_cpu;		/* enum pmc_cputype */
	uint64_t	pl_tsc_freq;
	struct timespec	pl_ts;
	char		pl_cpuid[PMC_CPUID_LEN];
} __attribute__((__packed__));

struct pmclog_map_in {
	PMCLOG_ENTRY_HEADER
	uint32_t	pl_pid;
	uint32_t	pl_pad;
	uintfptr_t	pl_start;
	char		pl_pathname[__PMCLOG_PATH_MAX];
} __attribute__((__packed__));

struct pmclog_map_out {
	PMCLOG_ENTRY_HEADER
	uint32_t	pl_pid;
	uint32_t	pl_pad;
	uintfptr_t	pl_start;
	uintfptr_t	pl_end;
} __attribute__((__packed__));

struct pmclog_pmcallocate {
	PMCLOG_ENTRY_HEADER
	uint32_t	pl_pmcid;
	uint32_t	pl_event;
	uint32_t	pl_flags;
	uint32_t	pl_pad;
	uint64_t	pl_rate;
} __attribute__((__packed__));

struct pmclog_pmcattach {
	PMCLOG_ENTRY_HEADER
	uint32_t	pl_pmcid;
	uint32_t	pl_pid;
	char		pl_pathname[__PMCLOG_PATH_MAX];
} __attribute__((__packed__));

struct pmclog_pmcdetach {
	PMCLOG_ENTRY_HEADER
	uint32_t	pl_pmcid;
	uint32_t	pl_pid;
} __attribute__((__packed__));

struct pmclog_proccsw {
	PMCLOG_ENTRY_HEADER
	uint64_t	pl_value;
	uint32_t	pl_pmcid;
	uint32_t	pl_pid;
	uint32_t	pl_tid;
	uint32_t	pl_pad;
} __attribute__((__packed__));

struct pmclog_proccreate {
	PMCLOG_ENTRY_HEADER
	uint32_t	pl_pid;
	uint32_t	pl_flags;
	char		pl_pcomm[MAXCOMLEN+1];
} __attribute__((__packed__));

/*
 * FreeBSD 14 and 15 (PMC_VERSION 0x0A000000): pl_base is the run-time
 * linker's load address (AT_BASE), pl_dyn a PIE's load base.  FreeBSD
 * 12-13 (0x09030000) had one address, pl_start, and the path 8 bytes
 * earlier: a program written for them defines PMCLOG_PROCEXEC_ENTRYADDR
 * (as for pmclog_ev_procexec below) and gets that layout, the one the
 * records of a 12-13 log have.
 */
struct pmclog_procexec {
	PMCLOG_ENTRY_HEADER
	uint32_t	pl_pid;
	uint32_t	pl_pmcid;
#ifdef PMCLOG_PROCEXEC_ENTRYADDR
	uintfptr_t	pl_start;
#else
	uintptr_t	pl_base;
	uintptr_t	pl_dyn;
#endif
	char		pl_pathname[__PMCLOG_PATH_MAX];
} __attribute__((__packed__));

struct pmclog_procexit {
	PMCLOG_ENTRY_HEADER
	uint32_t	pl_pmcid;
	uint32_t	pl_pid;
	uint64_t	pl_value;
} __attribute__((__packed__));

struct pmclog_procfork {
	PMCLOG_ENTRY_HEADER
	uint32_t	pl_oldpid;
	uint32_t	pl_newpid;
} __attribute__((__packed__));

struct pmclog_sysexit {
	PMCLOG_ENTRY_HEADER
	uint32_t	pl_pid;
	uint32_t	pl_pad;
} __attribute__((__packed__));

struct pmclog_threadcreate {
	PMCLOG_ENTRY_HEADER
	uint32_t	pl_tid;
	uint32_t	pl_pid;
	uint32_t	pl_flags;
	uint32_t	pl_pad;
	char		pl_tdname[MAXCOMLEN+1];
} __attribute__((__packed__));

struct pmclog_threadexit {
	PMCLOG_ENTRY_HEADER
	uint32_t	pl_tid;
	uint32_t	pl_pad;
} __attribute__((__packed__));

struct pmclog_userdata {
	PMCLOG_ENTRY_HEADER
	uint32_t	pl_userdata;
	uint32_t	pl_pad;
} __attribute__((__packed__));

struct pmclog_pmcallocatedyn {
	PMCLOG_ENTRY_HEADER
	uint32_t	pl_pmcid;
	uint32_t	pl_event;
	uint32_t	pl_flags;
	uint32_t	pl_pad;
	char		pl_evname[PMC_NAME_MAX];
} __attribute__((__packed__));

/* sys/sys/pmclog.h: a union of the records, to size scratch areas. */
union pmclog_entry {
	struct pmclog_callchain		pl_cc;
	struct pmclog_closelog		pl_cl;
	struct pmclog_dropnotify	pl_dn;
	struct pmclog_initialize	pl_i;
	struct pmclog_map_in		pl_mi;
	struct pmclog_map_out		pl_mo;
	struct pmclog_pmcallocate	pl_a;
	struct pmclog_pmcallocatedyn	pl_ad;
	struct pmclog_pmcattach		pl_t;
	struct pmclog_pmcdetach		pl_d;
	struct pmclog_proccsw		pl_c;
	struct pmclog_procexec		pl_x;
	struct pmclog_procexit		pl_e;
	struct pmclog_procfork		pl_f;
	struct pmclog_sysexit		pl_se;
	struct pmclog_userdata		pl_u;
};

/* lib/libpmc/pmclog.h */
enum pmclog_state {
	PMCLOG_OK,
	PMCLOG_EOF,
	PMCLOG_REQUIRE_DATA,
	PMCLOG_ERROR
};

struct pmclog_ev_callchain {
	uint32_t	pl_pid;
	uint32_t	pl_tid;
	uint32_t	pl_pmcid;
	uint32_t	pl_cpuflags;
	uint32_t	pl_cpuflags2;
	uint32_t	pl_npc;
	uintfptr_t	pl_pc[PMC_CALLCHAIN_DEPTH_MAX];
};

struct pmclog_ev_dropnotify {
	char		__pl_empty[0];	/* FreeBSD: an empty struct (GNU C) */
};

struct pmclog_ev_closelog {
	char		__pl_empty[0];
};

struct pmclog_ev_initialize {
	uint32_t	pl_version;
	uint32_t	pl_arch;
	uint64_t	pl_tsc_freq;
	struct timespec	pl_ts;
	char		pl_cpuid[__PMCLOG_PATH_MAX];
};

struct pmclog_ev_map_in {
	pid_t		pl_pid;
	uintfptr_t	pl_start;
	char		pl_pathname[__PMCLOG_PATH_MAX];
};

struct pmclog_ev_map_out {
	pid_t		pl_pid;
	uintfptr_t	pl_start;
	uintfptr_t	pl_end;
};

struct pmclog_ev_pcsample {
	uintfptr_t	pl_pc;
	pid_t		pl_pid;
	pid_t		pl_tid;
	pmc_id_t	pl_pmcid;
	uint32_t	pl_flags;
	uint32_t	pl_usermode;
};

struct pmclog_ev_pmcallocate {
	const char	*pl_evname;
	uint64_t	pl_rate;
	uint32_t	pl_event;
	uint32_t	pl_flags;
	pmc_id_t	pl_pmcid;
};

struct pmclog_ev_pmcallocatedyn {
	char		pl_evname[PMC_NAME_MAX];
	uint32_t	pl_event;
	uint32_t	pl_flags;
	pmc_id_t	pl_pmcid;
};

struct pmclog_ev_pmcattach {
	pmc_id_t	pl_pmcid;
	pid_t		pl_pid;
	char		pl_pathname[__PMCLOG_PATH_MAX];
};

struct pmclog_ev_pmcdetach {
	pmc_id_t	pl_pmcid;
	pid_t		pl_pid;
};

struct pmclog_ev_proccsw {
	pid_t		pl_pid;
	pid_t		pl_tid;
	pmc_id_t	pl_pmcid;
	pmc_value_t	pl_value;
};

struct pmclog_ev_proccreate {
	pid_t		pl_pid;
	uint32_t	pl_flags;
	char		pl_pcomm[MAXCOMLEN+1];
};

/*
 * FreeBSD 14 and 15 (PMC_VERSION 0x0A000000): the run-time linker's base
 * (AT_BASE) and the PIE load base.  FreeBSD 12-13 (0x09030000) had one
 * address, pl_entryaddr: a program written for them defines
 * PMCLOG_PROCEXEC_ENTRYADDR before including this header and reads it
 * there (the same bytes as pl_baseaddr; pl_dynaddr is 0 in a 12-13 log).
 * The struct's layout is the same either way.
 */
struct pmclog_ev_procexec {
	pid_t		pl_pid;
	pmc_id_t	pl_pmcid;
#ifdef PMCLOG_PROCEXEC_ENTRYADDR
	union {
		uintptr_t	pl_baseaddr;
		uintfptr_t	pl_entryaddr;
	};
#else
	uintptr_t	pl_baseaddr;
#endif
	uintptr_t	pl_dynaddr;
	char		pl_pathname[__PMCLOG_PATH_MAX];
};

struct pmclog_ev_procexit {
	uint32_t	pl_pid;
	pmc_id_t	pl_pmcid;
	pmc_value_t	pl_value;
};

struct pmclog_ev_procfork {
	pid_t		pl_oldpid;
	pid_t		pl_newpid;
};

struct pmclog_ev_sysexit {
	pid_t		pl_pid;
};

struct pmclog_ev_threadcreate {
	pid_t		pl_tid;
	pid_t		pl_pid;
	uint32_t	pl_flags;
	char		pl_tdname[MAXCOMLEN+1];
};

struct pmclog_ev_threadexit {
	pid_t		pl_tid;
};

struct pmclog_ev_userdata {
	uint32_t	pl_userdata;
};

struct pmclog_ev {
	enum pmclog_state pl_state;	/* state after pmclog_read() */
	off_t		  pl_offset;	/* stream offset after the record */
	size_t		  pl_count;	/* records read so far */
	struct timespec   pl_ts;	/* tv_sec: the record's timestamp */
	enum pmclog_type  pl_type;
	void		 *pl_data;	/* the raw record, until the next read */
	int		  pl_len;	/* record length in bytes */
	union {
		struct pmclog_ev_callchain	pl_cc;
		struct pmclog_ev_closelog	pl_cl;
		struct pmclog_ev_dropnotify	pl_dn;
		struct pmclog_ev_initialize	pl_i;
		struct pmclog_ev_map_in		pl_mi;
		struct pmclog_ev_map_out	pl_mo;
		struct pmclog_ev_pmcallocate	pl_a;
		struct pmclog_ev_pmcallocatedyn	pl_ad;
		struct pmclog_ev_pmcattach	pl_t;
		struct pmclog_ev_pmcdetach	pl_d;
		struct pmclog_ev_proccsw	pl_c;
		struct pmclog_ev_proccreate	pl_pc;
		struct pmclog_ev_procexec	pl_x;
		struct pmclog_ev_procexit	pl_e;
		struct pmclog_ev_procfork	pl_f;
		struct pmclog_ev_sysexit	pl_se;
		struct pmclog_ev_threadcreate	pl_tc;
		struct pmclog_ev_threadexit	pl_te;
		struct pmclog_ev_userdata	pl_u;
	} pl_u;
};

/*
 * lib/libpmc/pmclog.h: the state of FreeBSD's parser. Declared for
 * programs that name them; this library's parser keeps its own state
 * behind pmclog_open()'s cookie and does not fill these.
 */
enum pmclog_parser_state {
	PL_STATE_NEW_RECORD,		/* between records */
	PL_STATE_EXPECTING_HEADER,	/* reading a header */
	PL_STATE_PARTIAL_RECORD,	/* header read, record not yet */
	PL_STATE_ERROR			/* the log could not be parsed */
};

struct pmclog_parse_state {
	enum pmclog_parser_state ps_state;
	enum pmc_cputype	ps_arch;	/* the log's architecture */
	uint32_t		ps_version;	/* its hwpmc version */
	int			ps_initialized;
	int			ps_count;	/* records so far */
	off_t			ps_offset;	/* stream offset */
	union pmclog_entry	ps_saved;	/* a partial record */
	int			ps_svcount;	/* bytes of it saved */
	int			ps_fd;		/* the fd, or -1 */
	char			*ps_buffer;	/* read buffer with an fd */
	char			*ps_data;	/* where parsing is */
	char			*ps_cpuid;	/* the log's cpuid */
	size_t			ps_len;		/* bytes buffered */
};

#define PMCLOG_FD_NONE		(-1)

/*
 * pmclog_open(fd) reads from fd (a file, pipe or socket; the caller keeps
 * ownership of fd), pmclog_open(PMCLOG_FD_NONE) makes a parser fed with
 * pmclog_feed(). NULL on failure with errno set.
 */
void	*pmclog_open(int _fd);
int	pmclog_feed(void *_cookie, char *_data, int _len);
int	pmclog_read(void *_cookie, struct pmclog_ev *_ev);
void	pmclog_close(void *_cookie);

#ifdef __cplusplus
}
#endif

#endif /* _PMCLOG_H_ */
