/*
 * Before pmc_init(3), libpmc has no hwpmc system call number
 * (lib/libpmc/libpmc.c: pmc_syscall is -1 until pmc_init sets it):
 * pmc_cpuinfo, pmc_ncpu, pmc_npmc and pmc_pmcinfo test for that and fail
 * with ENXIO; the calls that go to hwpmc (PMC_CALL: pmc_allocate,
 * pmc_start, pmc_configure_logfile, pmc_get_driver_stats, …) issue
 * syscall(-1), which FreeBSD fails with ENOSYS. After pmc_init they work.
 */
#include <unistd.h>

#include "check.h"

int
main(void)
{
	pmc_id_t id = 0;
	const struct pmc_cpuinfo *ci;
	struct pmc_pmcinfo *pi;
	struct pmc_driverstats st;

	FAILS_WITH(pmc_allocate("cpu-clock", PMC_MODE_TC, 0, PMC_CPU_ANY, &id, 0), ENOSYS);
	CHECK(id == 0, "a failed pmc_allocate wrote id %#x", id);
	FAILS_WITH(pmc_cpuinfo(&ci), ENXIO);
	FAILS_WITH(pmc_ncpu(), ENXIO);
	FAILS_WITH(pmc_npmc(0), ENXIO);
	FAILS_WITH(pmc_pmcinfo(0, &pi), ENXIO);
	FAILS_WITH(pmc_start(1), ENOSYS);
	FAILS_WITH(pmc_configure_logfile(1), ENOSYS);
	FAILS_WITH(pmc_get_driver_stats(&st), ENOSYS);
	FAILS_WITH(pmc_writelog(1), ENOSYS);

	OK(pmc_init());
	OK(pmc_init());	/* again: nothing to do */
	OK(pmc_allocate("cpu-clock", PMC_MODE_TC, 0, PMC_CPU_ANY, &id, 0));
	OK(pmc_release(id));
	CHECK(pmc_ncpu() > 0, "%s", "pmc_ncpu after pmc_init");
	puts("calls before pmc_init fail as libpmc's do");
	return 0;
}
