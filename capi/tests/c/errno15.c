/*
 * The log-operation errno rules of issue 15 §2 that the `pmc` crate gains
 * on another branch; the C shim passes them through unchanged. Run by
 * c_programs.rs only with PMC_CAPI_PENDING_ISSUE15=1 until it is merged.
 * Each check runs on its own (argv[1] names it) so the report says which
 * rules hold.
 */
#include <fcntl.h>
#include <unistd.h>

#include "check.h"

int
main(int argc, char **argv)
{
	const char *rule = argc > 1 ? argv[1] : "";

	OK(pmc_init());
	if (strcmp(rule, "log_ops_without_log_einval") == 0) {
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
	} else {
		fprintf(stderr, "unknown rule %s\n", rule);
		return 2;
	}
	return 0;
}
