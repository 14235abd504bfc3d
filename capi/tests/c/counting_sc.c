/* Counting in SC mode: a system-wide software counter on CPU 0. */
#include <time.h>
#include <unistd.h>

#include "check.h"

static unsigned long long
now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return ((unsigned long long)t.tv_sec * 1000000000ULL + t.tv_nsec);
}

int
main(void)
{
	pmc_id_t id;
	pmc_value_t v;
	unsigned long long t0, wall;

	OK(pmc_init());
	OK(pmc_allocate("cpu-clock", PMC_MODE_SC, 0, 0, &id, 0));
	t0 = now_ns();
	OK(pmc_start(id));
	usleep(50000);
	OK(pmc_stop(id));
	wall = now_ns() - t0;
	OK(pmc_read(id, &v));
	/*
	 * cpu-clock on a CPU counts wall time whether it is busy or idle:
	 * at least the 50 ms slept (less 3% for where the clocks are read),
	 * at most the time from before the start to after the stop (plus 1%).
	 */
	CHECK(v >= 48500000 && v <= wall + wall / 100,
	    "cpu-clock on cpu 0 counted %llu ns over a 50 ms sleep (%llu ns wall)",
	    (unsigned long long)v, wall);
	/* A system PMC attaches to no process (pmc_attach(3): EINVAL). */
	FAILS_WITH(pmc_attach(id, 0), EINVAL);
	OK(pmc_release(id));
	printf("cpu 0, 50 ms: %llu ns of %llu ns wall\n", (unsigned long long)v, wall);
	return 0;
}
