/*
 * Run under valgrind --error-exitcode=1 --track-origins=yes (issue 32
 * item 14):
 * - pl_u.pl_a.pl_evname of a PMCALLOCATE stays readable after the next
 *   PMCALLOCATE is read and after pmclog_close: lib/libpmc/pmclog.c points
 *   it at pmc_name_of_event's static table, never at parser memory;
 * - every byte of the structs the library fills for the caller is
 *   initialised, padding included (struct pmclog_ev from pmclog_read, the
 *   rows of pmc_pmcinfo): write(2) hands valgrind each byte to check.
 */
#include <fcntl.h>
#include <unistd.h>

#include <pmclog.h>

#include "check.h"

static int devnull = -1;

/* Makes memcheck look at every byte of [p, p + n). */
static void
use_bytes(const void *p, size_t n)
{
	CHECK(write(devnull, p, n) == (ssize_t)n, "write %zu bytes", n);
}

static size_t
put_header(unsigned char *at, unsigned type, unsigned len)
{
	uint32_t h = PMCLOG_HEADER_MAGIC << 24 | type << 16 | len;
	memset(at, 0, len);
	memcpy(at, &h, sizeof(h));
	return len;
}

static size_t
put_allocate(unsigned char *at, uint32_t pmcid, uint32_t event)
{
	struct pmclog_pmcallocate a;
	size_t n = put_header(at, PMCLOG_TYPE_PMCALLOCATE, sizeof(a));
	memcpy(&a, at, sizeof(a));
	a.pl_pmcid = pmcid;
	a.pl_event = event;
	a.pl_rate = 1000;
	memcpy(at, &a, sizeof(a));
	return n;
}

int
main(void)
{
	static unsigned char buf[4096];
	struct pmclog_ev ev;
	size_t len = 0;

	devnull = open("/dev/null", O_WRONLY);
	CHECK(devnull >= 0, "%s", "open /dev/null");
	OK(pmc_init());

	/* INITIALIZE, then two PMCALLOCATEs: a number with no name here and
	 * one that has one, then one more unnamed. */
	struct pmclog_initialize init;
	len += put_header(buf + len, PMCLOG_TYPE_INITIALIZE, sizeof(init));
	memcpy(&init, buf, sizeof(init));
	init.pl_version = 0x0A000000;
	init.pl_tsc_freq = 1000000000;
	memcpy(buf, &init, sizeof(init));
	len += put_allocate(buf + len, 0x11, 0x7ffff001);
	len += put_allocate(buf + len, 0x12, PMC_EV_K8_FR_RETIRED_X86_INSTRUCTIONS);
	len += put_allocate(buf + len, 0x13, 0x7ffff002);

	void *log = pmclog_open(PMCLOG_FD_NONE);
	CHECK(log != NULL, "%s", "pmclog_open(-1)");
	OK(pmclog_feed(log, (char *)buf, (int)len));
	const char *names[3];
	int n = 0;
	while (pmclog_read(log, &ev) == 0) {
		use_bytes(&ev, sizeof(ev));
		if (ev.pl_type == PMCLOG_TYPE_PMCALLOCATE) {
			CHECK(n < 3, "%s", "more PMCALLOCATEs than fed");
			names[n++] = ev.pl_u.pl_a.pl_evname;
		}
	}
	use_bytes(&ev, sizeof(ev));
	CHECK(ev.pl_state == PMCLOG_REQUIRE_DATA, "state %d", ev.pl_state);
	CHECK(n == 3, "%d PMCALLOCATEs", n);
	/* The first name after the later records were read. */
	CHECK(strcmp(names[0], "event-0x7ffff001") == 0, "first name %s", names[0]);
	/* libpmc.c's static name of the event (its __PMC_EV(C, N) is #N). */
	CHECK(strcmp(names[1], "FR_RETIRED_X86_INSTRUCTIONS") == 0, "second name %s", names[1]);
	CHECK(names[1] == pmc_name_of_event(PMC_EV_K8_FR_RETIRED_X86_INSTRUCTIONS),
	    "second name %s is not pmc_name_of_event's string", names[1]);
	pmclog_close(log);
	/* And every one after the parser is gone. */
	CHECK(strcmp(names[0], "event-0x7ffff001") == 0, "first name %s", names[0]);
	CHECK(strcmp(names[2], "event-0x7ffff002") == 0, "third name %s", names[2]);

	/* pmc_pmcinfo's rows, padding included. */
	struct pmc_pmcinfo *pi;
	OK(pmc_pmcinfo(0, &pi));
	int rows = pmc_npmc(0);
	CHECK(rows >= 0, "pmc_npmc %d", rows);
	use_bytes(pi, sizeof(*pi) + (size_t)(rows > 0 ? rows : 1) * sizeof(pi->pm_pmcs[0]));
	free(pi);

	struct pmc_driverstats st;
	OK(pmc_get_driver_stats(&st));
	use_bytes(&st, sizeof(st));
	const struct pmc_cpuinfo *ci;
	OK(pmc_cpuinfo(&ci));
	use_bytes(ci, sizeof(*ci));
	/* pmc_pmu_pmcallocate fills the caller's zeroed struct: no byte of
	 * its union may become uninitialised. */
	if (pmc_pmu_enabled()) {
		const char *name = pmc_pmu_event_get_by_idx(NULL, 0);
		struct pmc_op_pmcallocate pm;
		memset(&pm, 0, sizeof(pm));
		if (name != NULL && pmc_pmu_pmcallocate(name, &pm) == 0)
			use_bytes(&pm, sizeof(pm));
	}
	puts("names outlive their records; every byte handed out is set");
	return 0;
}
