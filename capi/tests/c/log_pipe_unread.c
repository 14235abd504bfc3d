/*
 * Issue 32 item 13: a system sampling log on a pipe whose reader reads
 * 400 records and then stops reading (keeping the pipe open). hwpmc never
 * makes PMCSTOP, PMCRELEASE or CLOSELOG wait for a log's reader: records
 * that find no free log buffer are dropped and counted
 * (pm_buffer_requests_failed). Here pmc_stop, pmc_release and
 * pmc_close_logfile must return within a 30 s watchdog, and the drops
 * must show in pmc_get_driver_stats(3). The environment sets the log
 * buffers small (PMC_NBUFFERS_PCPU, PMC_LOGBUFFERSIZE), so the queue
 * fills at once at any sampling rate.
 */
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <pmclog.h>

#include "check.h"

static const char *volatile phase = "start";

static void
watchdog(int sig)
{
	(void)sig;
	const char *p = phase;
	/* Async-signal-safe: write(2) and _exit(2) only. */
	(void)!write(2, "watchdog: ", 10);
	(void)!write(2, p, strlen(p));
	(void)!write(2, " did not return within 30 s\n", 28);
	_exit(3);
}

static double
now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

int
main(void)
{
	struct pmclog_ev ev;
	struct pmc_driverstats st;
	int p[2];

	signal(SIGPIPE, SIG_IGN);
	signal(SIGALRM, watchdog);
	OK(pmc_init());
	int ncpu = pmc_ncpu();
	CHECK(ncpu > 0 && ncpu <= 4096, "pmc_ncpu %d", ncpu);
	CHECK(pipe(p) == 0, "%s", "pipe");
	OK(pmc_configure_logfile(p[1]));
	close(p[1]);

	pmc_id_t *ids = calloc((size_t)ncpu, sizeof(*ids));
	CHECK(ids != NULL, "%s", "calloc");
	/* cpu-clock counts nanoseconds: a sample every 50 us on each CPU. */
	for (int cpu = 0; cpu < ncpu; cpu++)
		OK(pmc_allocate("cpu-clock", PMC_MODE_SS, PMC_F_CALLCHAIN, cpu,
		    &ids[cpu], 50000));
	for (int cpu = 0; cpu < ncpu; cpu++)
		OK(pmc_start(ids[cpu]));

	void *log = pmclog_open(p[0]);
	CHECK(log != NULL, "%s", "pmclog_open on the pipe");
	int n = 0;
	alarm(30);
	phase = "reading the first 400 records";
	while (n < 400 && pmclog_read(log, &ev) == 0)
		n++;
	CHECK(n == 400, "read %d records, then state %d", n, ev.pl_state);

	/*
	 * Stop reading. Let the samples fill the pipe and the log's buffers
	 * (up to 5 s; they drop within milliseconds where drops are counted).
	 */
	alarm(0);
	double until = now_s() + 5;
	do {
		usleep(20000);
		OK(pmc_get_driver_stats(&st));
	} while (st.pm_buffer_requests_failed == 0 && now_s() < until);

	alarm(30);
	phase = "pmc_stop";
	for (int cpu = 0; cpu < ncpu; cpu++)
		OK(pmc_stop(ids[cpu]));
	phase = "pmc_release";
	for (int cpu = 0; cpu < ncpu; cpu++)
		OK(pmc_release(ids[cpu]));
	phase = "pmc_close_logfile";
	OK(pmc_close_logfile());
	alarm(0);

	OK(pmc_get_driver_stats(&st));
	CHECK(st.pm_buffer_requests_failed > 0,
	    "no dropped record counted (pm_buffer_requests %u)", st.pm_buffer_requests);

	/*
	 * The library let go of the pipe: a reader that comes back reads
	 * what the pipe holds and then the end of the stream, instead of
	 * waiting forever for a writer that is gone.
	 */
	alarm(30);
	phase = "reading the rest of the pipe after pmc_close_logfile";
	int rest = 0;
	while (pmclog_read(log, &ev) == 0)
		rest++;
	alarm(0);
	CHECK(ev.pl_state == PMCLOG_EOF || ev.pl_state == PMCLOG_ERROR,
	    "the stream ended in state %d", ev.pl_state);
	printf("%d records read, %d more after the close; %u of %u log records "
	    "dropped\n", n, rest, st.pm_buffer_requests_failed, st.pm_buffer_requests);
	pmclog_close(log);
	close(p[0]);
	free(ids);
	return 0;
}
