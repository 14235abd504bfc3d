/*
 * A memory parser (pmclog_open(-1)) fed with pmclog_feed(3) a few bytes at
 * a time: PMCLOG_REQUIRE_DATA whenever a record is incomplete, the same
 * records as a file parser gets, CLOSELOG as EOF; a corrupt stream is a
 * sticky PMCLOG_ERROR; misuse is -1, never a crash.
 * argv[1]: a path for the log file.
 */
#include <fcntl.h>
#include <unistd.h>

#include <pmclog.h>

#include "check.h"

static char buf[1 << 20];

int
main(int argc, char **argv)
{
	struct pmclog_ev ev;

	CHECK(argc == 2, "usage: %s LOGFILE", argv[0]);
	OK(pmc_init());
	int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0, "open %s", argv[1]);
	OK(pmc_configure_logfile(fd));
	for (uint32_t i = 1; i <= 100; i++)
		OK(pmc_writelog(i));
	OK(pmc_close_logfile());
	ssize_t len = pread(fd, buf, sizeof(buf), 0);
	CHECK(len > 0, "read back %zd bytes", len);
	close(fd);

	void *log = pmclog_open(PMCLOG_FD_NONE);
	CHECK(log != NULL, "%s", "pmclog_open(-1)");
	/* Nothing fed yet. */
	CHECK(pmclog_read(log, &ev) == -1 && ev.pl_state == PMCLOG_REQUIRE_DATA,
	    "state %d before feeding", ev.pl_state);
	size_t records = 0, require = 0;
	uint32_t next = 1;
	int eof = 0;
	for (ssize_t at = 0; at < len && !eof; at += 7) {
		int chunk = (int)(len - at < 7 ? len - at : 7);
		OK(pmclog_feed(log, buf + at, chunk));
		for (;;) {
			int r = pmclog_read(log, &ev);
			if (r == 0) {
				records++;
				CHECK(ev.pl_count == records, "pl_count %zu", ev.pl_count);
				if (ev.pl_type == PMCLOG_TYPE_USERDATA) {
					CHECK(ev.pl_u.pl_u.pl_userdata == next,
					    "userdata %u, expected %u",
					    ev.pl_u.pl_u.pl_userdata, next);
					next++;
				}
				continue;
			}
			CHECK(ev.pl_state != PMCLOG_ERROR, "error after %zu records",
			    records);
			if (ev.pl_state == PMCLOG_EOF)
				eof = 1;
			else
				require++;
			break;
		}
	}
	CHECK(eof, "%s", "no EOF (CLOSELOG) at the end of the stream");
	CHECK(next == 101, "read %u USERDATA records of 100", next - 1);
	CHECK(records == 101, "%zu records (INITIALIZE + 100 USERDATA)", records);
	pmclog_close(log);

	/* Garbage: an error, and it stays one. */
	log = pmclog_open(PMCLOG_FD_NONE);
	CHECK(log != NULL, "%s", "pmclog_open(-1)");
	memset(buf, 0x5a, 64);
	OK(pmclog_feed(log, buf, 64));
	CHECK(pmclog_read(log, &ev) == -1 && ev.pl_state == PMCLOG_ERROR, "state %d",
	    ev.pl_state);
	CHECK(strstr(pmc_last_error(), "magic") != NULL, "the error says %s",
	    pmc_last_error());
	OK(pmclog_feed(log, buf, 64));
	CHECK(pmclog_read(log, &ev) == -1 && ev.pl_state == PMCLOG_ERROR,
	    "state %d after more data", ev.pl_state);
	/* pmclog.c pmclog_feed(): a negative length is -1. */
	CHECK(pmclog_feed(log, buf, -1) == -1, "%s", "negative length accepted");
	CHECK(pmclog_feed(log, NULL, 10) == -1, "%s", "NULL data accepted");
	pmclog_close(log);

	/* A closed or made-up cookie: -1, never a crash. */
	CHECK(pmclog_read(log, &ev) == -1 && ev.pl_state == PMCLOG_ERROR,
	    "read after close: state %d", ev.pl_state);
	CHECK(pmclog_feed(log, buf, 1) == -1, "%s", "feed after close");
	pmclog_close(log);	/* twice: ignored */
	CHECK(pmclog_read(NULL, &ev) == -1, "%s", "NULL cookie");
	CHECK(pmclog_read((void *)0x1000, &ev) == -1, "%s", "made-up cookie");
	pmclog_close(NULL);

	/* A file parser cannot be fed (pmclog.c pmclog_feed). */
	log = pmclog_open(0);
	CHECK(log != NULL, "%s", "pmclog_open(0)");
	CHECK(pmclog_feed(log, buf, 4) == -1, "%s", "fed a file parser");
	pmclog_close(log);
	CHECK(pmclog_open(1000) == NULL && errno == EBADF, "%s", "pmclog_open(1000)");

	printf("%zu records in 7-byte feeds, %zu REQUIRE_DATA\n", records, require);
	return 0;
}
