/*
 * Sampling into a log configured on a file descriptor, read back with
 * pmclog_read(3): the records a FreeBSD profiler sees (INITIALIZE first,
 * CALLCHAIN samples of our PMC, our USERDATA, CLOSELOG as EOF), with
 * pl_offset/pl_count/pl_len as lib/libpmc/pmclog.c sets them. Then the
 * same over a pipe, whose reader is another pmclog parser.
 * argv[1]: a path for the log file.
 */
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <pmclog.h>

#include "check.h"

int
main(int argc, char **argv)
{
	pmc_id_t id;
	struct pmclog_ev ev;

	CHECK(argc == 2, "usage: %s LOGFILE", argv[0]);
	OK(pmc_init());
	int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0, "open %s", argv[1]);
	OK(pmc_configure_logfile(fd));
	close(fd);	/* the library keeps its own reference */

	/* cpu-clock counts nanoseconds: a sample every 200 us. */
	OK(pmc_allocate("cpu-clock", PMC_MODE_TS, PMC_F_CALLCHAIN, PMC_CPU_ANY, &id, 200000));
	OK(pmc_start(id));
	spin_ms(200);
	OK(pmc_stop(id));
	OK(pmc_writelog(0xC0FFEE));
	OK(pmc_close_logfile());
	OK(pmc_release(id));

	int in = open(argv[1], O_RDONLY);
	CHECK(in >= 0, "open %s for reading", argv[1]);
	void *log = pmclog_open(in);
	CHECK(log != NULL, "%s", "pmclog_open");
	close(in);	/* the parser reads its own duplicate */

	size_t n = 0, samples = 0, userdata = 0;
	off_t prev = 0;
	while (pmclog_read(log, &ev) == 0) {
		n++;
		CHECK(ev.pl_state == PMCLOG_OK, "state %d", ev.pl_state);
		CHECK(ev.pl_count == n, "pl_count %zu for record %zu", ev.pl_count, n);
		CHECK(ev.pl_len >= 16 && ev.pl_len % 4 == 0, "pl_len %d", ev.pl_len);
		CHECK(ev.pl_offset == prev + ev.pl_len, "pl_offset %lld after %lld + %d",
		    (long long)ev.pl_offset, (long long)prev, ev.pl_len);
		prev = ev.pl_offset;
		if (n == 1)
			CHECK(ev.pl_type == PMCLOG_TYPE_INITIALIZE, "first record type %d",
			    ev.pl_type);
		switch (ev.pl_type) {
		case PMCLOG_TYPE_INITIALIZE:
			CHECK(n == 1, "INITIALIZE as record %zu", n);
			break;
		case PMCLOG_TYPE_CALLCHAIN:
			CHECK(ev.pl_u.pl_cc.pl_pmcid == id, "sample of pmc %#x, not %#x",
			    ev.pl_u.pl_cc.pl_pmcid, id);
			CHECK(ev.pl_u.pl_cc.pl_pid == (uint32_t)getpid(), "sample of pid %u",
			    ev.pl_u.pl_cc.pl_pid);
			CHECK(ev.pl_u.pl_cc.pl_npc >= 1 &&
			    ev.pl_u.pl_cc.pl_npc <= PMC_CALLCHAIN_DEPTH_MAX,
			    "npc %u", ev.pl_u.pl_cc.pl_npc);
			CHECK(ev.pl_u.pl_cc.pl_pc[0] != 0, "%s", "a zero pc");
			CHECK(PMC_CALLCHAIN_CPUFLAGS_TO_CPU(ev.pl_u.pl_cc.pl_cpuflags) <
			    (uint32_t)pmc_ncpu(), "cpu in cpuflags %#x",
			    ev.pl_u.pl_cc.pl_cpuflags);
			samples++;
			break;
		case PMCLOG_TYPE_USERDATA:
			CHECK(ev.pl_u.pl_u.pl_userdata == 0xC0FFEE, "userdata %#x",
			    ev.pl_u.pl_u.pl_userdata);
			userdata++;
			break;
		default:
			break;
		}
	}
	CHECK(ev.pl_state == PMCLOG_EOF, "the log ended with state %d", ev.pl_state);
	CHECK(samples >= 50, "%zu samples in 200 ms at 200 us", samples);
	CHECK(userdata == 1, "%zu USERDATA records", userdata);
	/* EOF stays EOF. */
	CHECK(pmclog_read(log, &ev) == -1 && ev.pl_state == PMCLOG_EOF, "state %d",
	    ev.pl_state);
	pmclog_close(log);

	/* A pipe: configure on the write end, parse from the read end. */
	int p[2];
	CHECK(pipe(p) == 0, "pipe");
	signal(SIGPIPE, SIG_IGN);
	OK(pmc_configure_logfile(p[1]));
	close(p[1]);
	OK(pmc_writelog(1));
	OK(pmc_writelog(2));
	OK(pmc_close_logfile());	/* drops the library's write end too */
	log = pmclog_open(p[0]);
	CHECK(log != NULL, "%s", "pmclog_open on a pipe");
	close(p[0]);
	uint32_t seen = 0;
	while (pmclog_read(log, &ev) == 0)
		if (ev.pl_type == PMCLOG_TYPE_USERDATA)
			seen = seen * 10 + ev.pl_u.pl_u.pl_userdata;
	CHECK(ev.pl_state == PMCLOG_EOF, "pipe log ended with state %d", ev.pl_state);
	CHECK(seen == 12, "USERDATA over the pipe: %u", seen);
	pmclog_close(log);

	printf("%zu records, %zu samples\n", n, samples);
	return 0;
}
