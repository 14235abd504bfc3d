/*
 * pl_data: each record as written, for the life of that record
 * (lib/libpmc/pmclog.c points pl_data at the record in its buffer), read
 * through sys/sys/pmclog.h's structs and PMCLOG_HEADER_* macros: the
 * header's magic, type and length agree with pl_type and pl_len, and
 * USERDATA's pl_userdata is the value pmclog_read decoded. Both a file
 * parser and a memory parser fed a few bytes at a time.
 * argv[1]: a path for the log file.
 */
#include <fcntl.h>
#include <unistd.h>

#include <sys/pmclog.h>

#include "check.h"

static char buf[1 << 16];

static size_t
check_records(void *log, const char *data, ssize_t len)
{
	struct pmclog_ev ev;
	size_t records = 0;
	uint32_t next = 1;
	ssize_t at = 0;

	for (;;) {
		if (pmclog_read(log, &ev) != 0) {
			if (ev.pl_state == PMCLOG_REQUIRE_DATA && data != NULL &&
			    at < len) {
				int chunk = (int)(len - at < 5 ? len - at : 5);
				OK(pmclog_feed(log, (char *)data + at, chunk));
				at += chunk;
				continue;
			}
			CHECK(ev.pl_state == PMCLOG_EOF, "state %d", ev.pl_state);
			return records;
		}
		records++;
		const struct pmclog_header *h = ev.pl_data;
		CHECK(h != NULL, "record %zu has no pl_data", records);
		CHECK(PMCLOG_HEADER_CHECK_MAGIC(h->pl_header), "magic %#x",
		    PMCLOG_HEADER_TO_MAGIC(h->pl_header));
		CHECK(PMCLOG_HEADER_TO_TYPE(h->pl_header) == ev.pl_type, "type %u, pl_type %u",
		    PMCLOG_HEADER_TO_TYPE(h->pl_header), ev.pl_type);
		CHECK((int)PMCLOG_HEADER_TO_LENGTH(h->pl_header) == ev.pl_len,
		    "length %u, pl_len %d", PMCLOG_HEADER_TO_LENGTH(h->pl_header),
		    ev.pl_len);
		if (ev.pl_type == PMCLOG_TYPE_USERDATA) {
			const struct pmclog_userdata *u = ev.pl_data;
			CHECK(u->pl_userdata == ev.pl_u.pl_u.pl_userdata &&
			    u->pl_userdata == next, "raw %u, decoded %u, expected %u",
			    u->pl_userdata, ev.pl_u.pl_u.pl_userdata, next);
			CHECK(ev.pl_len == (int)sizeof(struct pmclog_userdata), "len %d",
			    ev.pl_len);
			next++;
		}
		if (ev.pl_type == PMCLOG_TYPE_INITIALIZE) {
			const struct pmclog_initialize *i = ev.pl_data;
			CHECK(i->pl_version == ev.pl_u.pl_i.pl_version, "version %#x, %#x",
			    i->pl_version, ev.pl_u.pl_i.pl_version);
		}
	}
}

int
main(int argc, char **argv)
{
	CHECK(argc == 2, "usage: %s LOGFILE", argv[0]);
	OK(pmc_init());
	int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0, "open %s", argv[1]);
	OK(pmc_configure_logfile(fd));
	for (uint32_t i = 1; i <= 50; i++)
		OK(pmc_writelog(i));
	OK(pmc_close_logfile());
	ssize_t len = pread(fd, buf, sizeof(buf), 0);
	CHECK(len > 0, "read back %zd bytes", len);

	lseek(fd, 0, SEEK_SET);
	void *log = pmclog_open(fd);
	CHECK(log != NULL, "%s", "pmclog_open(fd)");
	size_t from_file = check_records(log, NULL, 0);
	pmclog_close(log);

	log = pmclog_open(PMCLOG_FD_NONE);
	CHECK(log != NULL, "%s", "pmclog_open(-1)");
	size_t fed = check_records(log, buf, len);
	pmclog_close(log);
	close(fd);

	/* INITIALIZE, 50 USERDATA (CLOSELOG reads as EOF). */
	CHECK(from_file == 51 && fed == 51, "%zu and %zu records", from_file, fed);
	printf("%zu records, each pl_data the record as written\n", fed);
	return 0;
}
