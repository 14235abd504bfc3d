/*
 * A program written for FreeBSD 12-13 (PMCLOG_PROCEXEC_ENTRYADDR) reads
 * PROCEXEC's one address as pl_entryaddr from a 12-13 log (PMC_VERSION
 * 0x09030000: pl_pid 16, pl_pmcid 20, pl_start 24, pl_pathname 32), and a
 * FreeBSD 14 log (0x0A000000: pl_base 24, pl_dyn 32, pl_pathname 40)
 * gives pl_baseaddr/pl_dynaddr — the same bytes as pl_entryaddr.
 * The records are built here byte by byte from sys/sys/pmclog.h's structs.
 */
#define PMCLOG_PROCEXEC_ENTRYADDR
#include <stddef.h>
#include <stdint.h>

#include <pmclog.h>

#include "check.h"

static size_t
put_header(unsigned char *p, unsigned type, unsigned len)
{
	uint32_t h = 0xEEu << 24 | type << 16 | len;
	memset(p, 0, len);
	memcpy(p, &h, 4);
	return (len);
}

static size_t
initialize(unsigned char *p, uint32_t version)
{
	size_t n = put_header(p, PMCLOG_TYPE_INITIALIZE, 112);
	memcpy(p + 16, &version, 4);
	return (n);
}

static size_t
procexec(unsigned char *p, int v14, uint64_t a, uint64_t dyn)
{
	const char path[] = "/bin/sh";
	size_t off = v14 ? 40 : 32;
	size_t n = put_header(p, PMCLOG_TYPE_PROCEXEC, off + sizeof(path));
	uint32_t pid = 42, pmcid = 0x100;
	memcpy(p + 16, &pid, 4);
	memcpy(p + 20, &pmcid, 4);
	memcpy(p + 24, &a, 8);
	if (v14)
		memcpy(p + 32, &dyn, 8);
	memcpy(p + off, path, sizeof(path));
	return (n);
}

int
main(void)
{
	static unsigned char buf[1024];
	struct pmclog_ev ev;
	size_t len = 0;

	CHECK(offsetof(struct pmclog_ev_procexec, pl_entryaddr) ==
	    offsetof(struct pmclog_ev_procexec, pl_baseaddr), "%s",
	    "one layout whatever the macro");
	/* The raw record is 12-13's under the macro (sys/sys/pmclog.h). */
	CHECK(offsetof(struct pmclog_procexec, pl_start) == 24 &&
	    offsetof(struct pmclog_procexec, pl_pathname) == 32 &&
	    sizeof(struct pmclog_procexec) == 32 + __PMCLOG_PATH_MAX,
	    "raw 12-13 PROCEXEC: pl_start %zu, pl_pathname %zu, size %zu",
	    offsetof(struct pmclog_procexec, pl_start),
	    offsetof(struct pmclog_procexec, pl_pathname),
	    sizeof(struct pmclog_procexec));
	len += initialize(buf + len, 0x09030000);
	len += procexec(buf + len, 0, 0x401000, 0);
	len += initialize(buf + len, PMC_VERSION);
	len += procexec(buf + len, 1, 0x80001000, 0x20000000);

	void *log = pmclog_open(PMCLOG_FD_NONE);
	CHECK(log != NULL, "%s", "pmclog_open(-1)");
	OK(pmclog_feed(log, (char *)buf, (int)len));
	OK(pmclog_read(log, &ev));
	CHECK(ev.pl_u.pl_i.pl_version == 0x09030000, "version %#x",
	    ev.pl_u.pl_i.pl_version);
	OK(pmclog_read(log, &ev));
	CHECK(ev.pl_type == PMCLOG_TYPE_PROCEXEC, "type %d", ev.pl_type);
	CHECK(ev.pl_u.pl_x.pl_entryaddr == 0x401000 &&
	    ev.pl_u.pl_x.pl_dynaddr == 0 &&
	    strcmp(ev.pl_u.pl_x.pl_pathname, "/bin/sh") == 0,
	    "12-13 exec %#jx %#jx \"%s\"", (uintmax_t)ev.pl_u.pl_x.pl_entryaddr,
	    (uintmax_t)ev.pl_u.pl_x.pl_dynaddr, ev.pl_u.pl_x.pl_pathname);
	OK(pmclog_read(log, &ev));
	CHECK(ev.pl_u.pl_i.pl_version == 0x0A000000, "version %#x",
	    ev.pl_u.pl_i.pl_version);
	OK(pmclog_read(log, &ev));
	CHECK(ev.pl_u.pl_x.pl_baseaddr == 0x80001000 &&
	    ev.pl_u.pl_x.pl_dynaddr == 0x20000000 &&
	    strcmp(ev.pl_u.pl_x.pl_pathname, "/bin/sh") == 0,
	    "14 exec %#jx %#jx \"%s\"", (uintmax_t)ev.pl_u.pl_x.pl_baseaddr,
	    (uintmax_t)ev.pl_u.pl_x.pl_dynaddr, ev.pl_u.pl_x.pl_pathname);
	pmclog_close(log);
	printf("PROCEXEC of 12-13 and 14 logs read\n");
	return (0);
}
