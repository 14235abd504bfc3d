/* Assertions for the C test programs: print what failed to stderr and exit 1. */
#ifndef CHECK_H
#define CHECK_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pmc.h>

#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		int _e = errno;						\
		fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__,	\
		    __LINE__, #cond);					\
		fprintf(stderr, __VA_ARGS__);				\
		fprintf(stderr, " [errno %d (%s); pmc_last_error: %s]\n",\
		    _e, strerror(_e), pmc_last_error());		\
		exit(1);						\
	}								\
} while (0)

/* `call` must return 0. */
#define OK(call) CHECK((call) == 0, "%s", "expected success")

/* `call` must return -1 with errno `e`. */
#define FAILS_WITH(call, e) do {					\
	errno = 0;							\
	int _r = (call);						\
	int _e = errno;							\
	if (_r != -1 || _e != (e)) {					\
		fprintf(stderr, "%s:%d: %s returned %d with errno %d "	\
		    "(%s); expected -1 with errno %d (%s) [pmc_last_error:"\
		    " %s]\n", __FILE__, __LINE__, #call, _r, _e,	\
		    strerror(_e), (e), strerror(e), pmc_last_error());	\
		exit(1);						\
	}								\
} while (0)

/*
 * Burns `ms` milliseconds of this thread's CPU time (not wall time: the
 * test machine may be shared, and counters of CPU time see only the time
 * the thread really ran).
 */
#include <time.h>
static inline unsigned long
spin_ms(long ms)
{
	struct timespec a, b;
	volatile unsigned long x = 0;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	do {
		for (int i = 0; i < 10000; i++)
			x += (unsigned long)i * 7;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	} while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
	return x;
}

#endif
