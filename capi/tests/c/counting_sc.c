/* Counting in SC mode: a system-wide software counter on CPU 0. */
#include <unistd.h>

#include "check.h"

int
main(void)
{
	pmc_id_t id;
	pmc_value_t v;

	OK(pmc_init());
	OK(pmc_allocate("cpu-clock", PMC_MODE_SC, 0, 0, &id, 0));
	OK(pmc_start(id));
	usleep(50000);
	OK(pmc_stop(id));
	OK(pmc_read(id, &v));
	/* cpu-clock on a CPU counts wall time whether it is busy or idle. */
	CHECK(v >= 30000000, "cpu-clock on cpu 0 counted %llu ns in 50 ms",
	    (unsigned long long)v);
	/* A system PMC attaches to no process (pmc_attach(3): EINVAL). */
	FAILS_WITH(pmc_attach(id, 0), EINVAL);
	OK(pmc_release(id));
	printf("cpu 0, 50 ms: %llu ns\n", (unsigned long long)v);
	return 0;
}
