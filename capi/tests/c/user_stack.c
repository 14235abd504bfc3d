/*
 * pmc_set_user_stack (the `--call-graph dwarf` extension): samples of
 * functions built without frame pointers, three calls deep, come back from
 * pmclog_read(3) as CALLCHAIN records holding their callers, which the
 * kernel's frame-pointer chains cannot give. Bad sizes are EINVAL.
 * argv[1]: a path for the log file.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <pmclog.h>

#include "check.h"

#define NOFP __attribute__((noinline, optimize("omit-frame-pointer")))

NOFP static long level3(long ms) { return spin_ms(ms) + 1; }
NOFP static long level2(long ms) { return level3(ms) * 3 + 1; }
NOFP static long level1(long ms) { return level2(ms) * 5 + 1; }

/* Whether a return address lies in a function starting at f (these are a
 * few dozen bytes long). */
static int
returns_into(uint64_t pc, long (*f)(long))
{
	uint64_t start = (uint64_t)(uintptr_t)f;
	return pc > start && pc < start + 256;
}

int
main(int argc, char **argv)
{
	pmc_id_t id;
	struct pmclog_ev ev;

	CHECK(argc == 2, "usage: %s LOGFILE", argv[0]);
	OK(pmc_init());
	FAILS_WITH(pmc_set_user_stack(7), EINVAL);
	FAILS_WITH(pmc_set_user_stack(65536), EINVAL);
	OK(pmc_set_user_stack(8192));
	int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0, "open %s", argv[1]);
	OK(pmc_configure_logfile(fd));
	close(fd);
	/* A user-mode sample every 500 us of CPU. */
	OK(pmc_allocate("cpu-clock,usr", PMC_MODE_TS, PMC_F_CALLCHAIN, PMC_CPU_ANY, &id, 500000));
	OK(pmc_start(id));
	long r = level1(300);
	OK(pmc_stop(id));
	OK(pmc_close_logfile());
	OK(pmc_release(id));
	OK(pmc_set_user_stack(0));

	int in = open(argv[1], O_RDONLY);
	CHECK(in >= 0, "open %s for reading", argv[1]);
	void *log = pmclog_open(in);
	CHECK(log != NULL, "%s", "pmclog_open");
	close(in);
	size_t samples = 0, whole = 0;
	while (pmclog_read(log, &ev) == 0) {
		/* The library's own threads are sampled too. */
		if (ev.pl_type != PMCLOG_TYPE_CALLCHAIN ||
		    ev.pl_u.pl_cc.pl_tid != (uint32_t)syscall(SYS_gettid))
			continue;
		samples++;
		int in1 = 0, in2 = 0, in3 = 0;
		for (uint32_t i = 1; i < ev.pl_u.pl_cc.pl_npc; i++) {
			uint64_t pc = ev.pl_u.pl_cc.pl_pc[i];
			in1 |= returns_into(pc, level1);
			in2 |= returns_into(pc, level2);
			in3 |= returns_into(pc, level3);
		}
		whole += in1 && in2 && in3;
	}
	CHECK(ev.pl_state == PMCLOG_EOF, "the log ended with state %d", ev.pl_state);
	CHECK(samples >= 100, "%zu samples of the main thread in 300 ms at 500 us", samples);
	/* Samples in spin_ms's clock_gettime (the vDSO, no file to read CFI
	 * from) may end early: most samples are in the loop. */
	CHECK(whole * 10 >= samples * 8, "%zu of %zu samples hold level1, level2 and level3",
	    whole, samples);
	pmclog_close(log);
	printf("%zu samples, %zu with the whole stack (%ld)\n", samples, whole, r);
	return 0;
}
