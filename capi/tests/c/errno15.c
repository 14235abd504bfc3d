/*
 * The errno rules of issue 15 that the `pmc` crate implements on another
 * branch; the C shim passes them through unchanged. Run by c_programs.rs
 * only with PMC_CAPI_PENDING_ISSUE15=1 until that branch is merged.
 * Each check runs on its own (argv[1] names it) so the report says which
 * rules hold.
 */
#include <fcntl.h>
#include <unistd.h>

#include "check.h"

int
main(int argc, char **argv)
{
	pmc_id_t id;
	const char *rule = argc > 1 ? argv[1] : "";

	OK(pmc_init());
	if (strcmp(rule, "unknown_event_einval") == 0) {
		/* pmc_allocate(3): an unrecognised event is EINVAL. */
		FAILS_WITH(pmc_allocate("no-such-event", PMC_MODE_TC, 0, PMC_CPU_ANY,
		    &id, 0), EINVAL);
	} else if (strcmp(rule, "log_ops_without_log_einval") == 0) {
		/* hwpmc_mod.c FLUSHLOG/CLOSELOG/WRITELOG without a log: EINVAL. */
		FAILS_WITH(pmc_writelog(1), EINVAL);
		FAILS_WITH(pmc_flush_logfile(), EINVAL);
		FAILS_WITH(pmc_close_logfile(), EINVAL);
		FAILS_WITH(pmc_configure_logfile(-1), EINVAL);
	} else if (strcmp(rule, "second_configure_ebusy") == 0) {
		/* hwpmc_logging.c pmclog_configure_log: a log already set: EBUSY. */
		int fd = open("/dev/null", O_WRONLY);
		OK(pmc_configure_logfile(fd));
		FAILS_WITH(pmc_configure_logfile(fd), EBUSY);
		OK(pmc_close_logfile());
	} else if (strcmp(rule, "ev_pmu_flag_accepted") == 0) {
		/* sys/sys/pmc.h PMC_F_EV_PMU is a valid pmc_allocate flag. */
		OK(pmc_allocate("task-clock", PMC_MODE_TC, PMC_F_EV_PMU, PMC_CPU_ANY, &id, 0));
		OK(pmc_release(id));
	} else if (strcmp(rule, "callchain_on_counting_accepted") == 0) {
		/* hwpmc accepts CALLCHAIN on counting modes. */
		OK(pmc_allocate("task-clock", PMC_MODE_TC, PMC_F_CALLCHAIN, PMC_CPU_ANY, &id, 0));
		OK(pmc_release(id));
	} else if (strcmp(rule, "cpu_beyond_possible_einval") == 0) {
		/* hwpmc_mod.c PMCALLOCATE: cpu >= pmc_cpu_max() is EINVAL. */
		FAILS_WITH(pmc_allocate("cpu-clock", PMC_MODE_SC, 0, 4096, &id, 0), EINVAL);
	} else {
		fprintf(stderr, "unknown rule %s\n", rule);
		return 2;
	}
	return 0;
}
