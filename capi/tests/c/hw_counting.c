/*
 * Hardware counting where a core PMU exists: instructions retired by a
 * loop of known length, in TC mode. Includes the headers as FreeBSD tools
 * do (<sys/types.h>, <sys/pmc.h>).
 *
 * The count of one loop depends on the compiler; its growth with the
 * loop's length does not: running (read, n iterations, read) for n = 0,
 * N and 2N, the 2N loop must retire twice the N loop's instructions
 * (within 1%, for the interrupts a loaded machine takes in user mode:
 * none, since `usr` excludes them, but the reads' own paths vary a
 * little), each iteration between 3 (load, add, store of the volatile)
 * and 12 instructions, and the empty bracket far fewer than the loop.
 */
#include <sys/types.h>
#include <sys/pmc.h>
#include <pmc.h>

#include "check.h"

#define N 10000000UL

static pmc_value_t
bracket(pmc_id_t id, unsigned long n)
{
	volatile unsigned long x = 0;
	pmc_value_t before, after;

	OK(pmc_read(id, &before));
	for (unsigned long i = 0; i < n; i++)
		x += i;
	OK(pmc_read(id, &after));
	CHECK(after >= before, "instructions went back: %llu then %llu",
	    (unsigned long long)before, (unsigned long long)after);
	return (after - before);
}

int
main(void)
{
	pmc_id_t id;
	pmc_value_t v, empty, one, two, loop;

	OK(pmc_init());
	OK(pmc_allocate("instructions,usr", PMC_MODE_TC, 0, PMC_CPU_ANY, &id, 0));
	OK(pmc_start(id));
	empty = bracket(id, 0);
	one = bracket(id, N);
	two = bracket(id, 2 * N);
	OK(pmc_stop(id));
	OK(pmc_read(id, &v));
	CHECK(v >= empty + one + two, "total %llu below its brackets' sum",
	    (unsigned long long)v);
	CHECK(one > empty && two > one, "brackets %llu, %llu, %llu",
	    (unsigned long long)empty, (unsigned long long)one,
	    (unsigned long long)two);
	loop = one - empty;
	CHECK(loop >= 3 * N && loop <= 12 * N,
	    "%llu instructions for %lu iterations: not 3..12 each",
	    (unsigned long long)loop, N);
	CHECK(empty < loop / 100, "an empty bracket took %llu instructions",
	    (unsigned long long)empty);
	/* two - empty = 2 * loop, within 1% of loop. */
	CHECK((two - empty) * 100 >= 199 * loop && (two - empty) * 100 <= 201 * loop,
	    "%lu iterations: %llu, twice as many: %llu (empty %llu)", N,
	    (unsigned long long)one, (unsigned long long)two,
	    (unsigned long long)empty);
	OK(pmc_release(id));
	printf("%lu iterations: %llu user instructions; %lu: %llu; empty: %llu\n",
	    N, (unsigned long long)one, 2 * N, (unsigned long long)two,
	    (unsigned long long)empty);
	return 0;
}
