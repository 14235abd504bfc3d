/*
 * The errno of every failure, as FreeBSD's libpmc sets it. Expected values
 * come from pmc_allocate(3), pmc_attach(3), pmc_read(3), pmc_start(3),
 * pmc_configure_logfile(3) and sys/dev/hwpmc/hwpmc_mod.c (the PMC_OP_*
 * cases of pmc_syscall_handler, pmc_find_pmc, pmc_start); where FreeBSD
 * would dereference a bad pointer, the kernel's copyin/copyout answer,
 * EFAULT, is used.
 */
#include <fcntl.h>
#include <limits.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

#define NO_SUCH_ID	0x7ffffff0u

int
main(void)
{
	pmc_id_t id, ts, sc;
	pmc_value_t v;
	uint32_t u;

	OK(pmc_init());

	/* Bad pointers: EFAULT, never a crash. */
	FAILS_WITH(pmc_allocate(NULL, PMC_MODE_TC, 0, PMC_CPU_ANY, &id, 0), EFAULT);
	FAILS_WITH(pmc_allocate("task-clock", PMC_MODE_TC, 0, PMC_CPU_ANY, NULL, 0), EFAULT);
	FAILS_WITH(pmc_cpuinfo(NULL), EFAULT);
	FAILS_WITH(pmc_pmcinfo(0, NULL), EFAULT);
	FAILS_WITH(pmc_get_driver_stats(NULL), EFAULT);
	FAILS_WITH(pmc_event_names_of_class(PMC_CLASS_SOFT, NULL, NULL), EFAULT);

	/* pmc_allocate(3) EINVAL: an unknown event, bad mode, cpu, flags. */
	FAILS_WITH(pmc_allocate("no-such-event", PMC_MODE_TC, 0, PMC_CPU_ANY, &id, 0), EINVAL);
	
	FAILS_WITH(pmc_allocate("task-clock", (enum pmc_mode)7, 0, PMC_CPU_ANY, &id, 0), EINVAL);
	FAILS_WITH(pmc_allocate("task-clock", PMC_MODE_TC, 0, 0, &id, 0), EINVAL);
	FAILS_WITH(pmc_allocate("cpu-clock", PMC_MODE_SC, 0, PMC_CPU_ANY, &id, 0), EINVAL);
	FAILS_WITH(pmc_allocate("task-clock", PMC_MODE_TC, 0, -5, &id, 0), EINVAL);
	FAILS_WITH(pmc_allocate("task-clock", PMC_MODE_TC, 0x1000, PMC_CPU_ANY, &id, 0), EINVAL);
	/* hwpmc_mod.c PMC_OP_PMCALLOCATE: a CPU beyond pmc_cpu_max() is EINVAL. */
	FAILS_WITH(pmc_allocate("cpu-clock", PMC_MODE_SC, 0, 4096, &id, 0), EINVAL);
	/* ... and what it accepts: PMC_F_EV_PMU, CALLCHAIN on a counting mode. */
	OK(pmc_allocate("task-clock", PMC_MODE_TC, PMC_F_EV_PMU, PMC_CPU_ANY, &id, 0));
	OK(pmc_release(id));
	OK(pmc_allocate("task-clock", PMC_MODE_TC, PMC_F_CALLCHAIN, PMC_CPU_ANY, &id, 0));
	OK(pmc_release(id));
	OK(pmc_allocate("task-clock", PMC_MODE_TC, 0, PMC_CPU_ANY, &id, 0));

	/* pmc_find_pmc(): an id this process does not own is EINVAL. */
	FAILS_WITH(pmc_start(NO_SUCH_ID), EINVAL);
	FAILS_WITH(pmc_stop(NO_SUCH_ID), EINVAL);
	FAILS_WITH(pmc_read(NO_SUCH_ID, &v), EINVAL);
	FAILS_WITH(pmc_write(NO_SUCH_ID, 1), EINVAL);
	FAILS_WITH(pmc_rw(NO_SUCH_ID, 1, &v), EINVAL);
	FAILS_WITH(pmc_set(NO_SUCH_ID, 1), EINVAL);
	FAILS_WITH(pmc_attach(NO_SUCH_ID, 0), EINVAL);
	FAILS_WITH(pmc_detach(NO_SUCH_ID, 0), EINVAL);
	FAILS_WITH(pmc_capabilities(NO_SUCH_ID, &u), EINVAL);
	FAILS_WITH(pmc_width(NO_SUCH_ID, &u), EINVAL);
	FAILS_WITH(pmc_get_msr(NO_SUCH_ID, &u), EINVAL);
	FAILS_WITH(pmc_release(NO_SUCH_ID), EINVAL);
	FAILS_WITH(pmc_read(id, NULL), EFAULT);
	FAILS_WITH(pmc_capabilities(id, NULL), EFAULT);

	/* PMCATTACH: pid < 0 EINVAL, missing process ESRCH, twice EEXIST. */
	FAILS_WITH(pmc_attach(id, -5), EINVAL);
	FAILS_WITH(pmc_attach(id, 0x3ffffff0), ESRCH);
	OK(pmc_attach(id, 0));
	FAILS_WITH(pmc_attach(id, getpid()), EEXIST);

	/* Running: attach is EBUSY, a new value is EBUSY (PMCRW NEWVALUE). */
	OK(pmc_start(id));
	OK(pmc_start(id));	/* starting a running PMC is fine */
	FAILS_WITH(pmc_attach(id, getppid()), EBUSY);
	FAILS_WITH(pmc_write(id, 1), EBUSY);
	FAILS_WITH(pmc_rw(id, 1, &v), EBUSY);
	OK(pmc_read(id, &v));
	OK(pmc_stop(id));
	OK(pmc_stop(id));	/* and stopping a stopped one */

	/* A released id is gone. */
	OK(pmc_release(id));
	FAILS_WITH(pmc_read(id, &v), EINVAL);
	FAILS_WITH(pmc_start(id), EINVAL);
	FAILS_WITH(pmc_release(id), EINVAL);

	/* pmc_start: a PMC that logs (PMC_F_NEEDS_LOGFILE) needs a log: EDOOFUS. */
	OK(pmc_allocate("task-clock", PMC_MODE_TC, PMC_F_LOG_PROCEXIT, PMC_CPU_ANY, &ts, 0));
	FAILS_WITH(pmc_start(ts), EDOOFUS);
	OK(pmc_release(ts));

	/* System modes attach nothing (PMCATTACH: EINVAL). */
	if (pmc_allocate("cpu-clock", PMC_MODE_SC, 0, 0, &sc, 0) == 0) {
		FAILS_WITH(pmc_attach(sc, 0), EINVAL);
		OK(pmc_release(sc));
	}

	/* CPU queries. */
	CHECK(pmc_ncpu() >= 1, "ncpu %d", pmc_ncpu());
	FAILS_WITH(pmc_npmc(-1), EINVAL);
	FAILS_WITH(pmc_npmc(pmc_ncpu() + 1000), EINVAL);
	struct pmc_pmcinfo *pi;
	FAILS_WITH(pmc_pmcinfo(-1, &pi), EINVAL);
	FAILS_WITH(pmc_enable(-1, 0), EINVAL);
	FAILS_WITH(pmc_disable(0, -1), EINVAL);

	/* Names: a value outside the enum is NULL with EINVAL. */
	errno = 0;
	CHECK(pmc_name_of_mode((enum pmc_mode)9) == NULL && errno == EINVAL, "%s", "mode 9");
	errno = 0;
	CHECK(pmc_name_of_capability(PMC_CAP_USER | PMC_CAP_READ) == NULL &&
	    errno == EINVAL, "%s", "two capability bits");
	errno = 0;
	CHECK(pmc_name_of_class((enum pmc_class)0x55) == NULL && errno == EINVAL, "%s", "class");
	errno = 0;
	CHECK(pmc_name_of_state(PMC_STATE_MAX) == NULL && errno == EINVAL, "%s", "state");
	errno = 0;
	CHECK(pmc_name_of_cputype((enum pmc_cputype)0x7) == NULL && errno == EINVAL, "%s", "cpu");
	errno = 0;
	CHECK(pmc_name_of_disposition((enum pmc_disp)9) == NULL && errno == EINVAL, "%s", "disp");
	errno = 0;
	/* libpmc.c pmc_name_of_disposition: PMC_DISP_LAST is PMC_DISP_THREAD. */
	CHECK(pmc_name_of_disposition(PMC_DISP_UNKNOWN) == NULL && errno == EINVAL, "%s",
	    "PMC_DISP_UNKNOWN");
	CHECK(strcmp(pmc_name_of_mode(PMC_MODE_TS), "TS") == 0, "%s", "TS");
	CHECK(strcmp(pmc_name_of_capability(PMC_CAP_INTERRUPT), "INTERRUPT") == 0, "%s", "cap");
	CHECK(strcmp(pmc_name_of_class(PMC_CLASS_SOFT), "SOFT") == 0, "%s", "SOFT");
	CHECK(strcmp(pmc_name_of_state(PMC_STATE_RUNNING), "RUNNING") == 0, "%s", "RUNNING");
	CHECK(strcmp(pmc_name_of_disposition(PMC_DISP_THREAD), "THREAD") == 0, "%s", "THREAD");
	CHECK(strcmp(pmc_name_of_cputype(PMC_CPU_GENERIC), "GENERIC") == 0, "%s", "GENERIC");

	/* hwpmc_mod.c FLUSHLOG/CLOSELOG/WRITELOG, CONFIGURELOG(-1) without a log: EINVAL. */
	FAILS_WITH(pmc_writelog(1), EINVAL);
	FAILS_WITH(pmc_flush_logfile(), EINVAL);
	FAILS_WITH(pmc_close_logfile(), EINVAL);
	FAILS_WITH(pmc_configure_logfile(-1), EINVAL);
	/* CONFIGURELOG tests pm_logfd >= 0: every negative fd is -1's case. */
	FAILS_WITH(pmc_configure_logfile(-2), EINVAL);
	FAILS_WITH(pmc_configure_logfile(INT_MIN), EINVAL);
	/* CLOSELOG: an owner of PMCs has an owner descriptor, and
	 * hwpmc_logging.c pmclog_close returns 0 with no log configured. */
	OK(pmc_allocate("task-clock", PMC_MODE_TC, 0, PMC_CPU_ANY, &id, 0));
	OK(pmc_close_logfile());
	OK(pmc_release(id));
	FAILS_WITH(pmc_close_logfile(), EINVAL);	/* no PMCs: no owner */
	/* hwpmc_logging.c pmclog_configure_log: a log already configured: EBUSY. */
	int null = open("/dev/null", O_WRONLY);
	OK(pmc_configure_logfile(null));
	FAILS_WITH(pmc_configure_logfile(null), EBUSY);
	OK(pmc_close_logfile());
	close(null);

	/* pmc_configure_logfile: hwpmc's CONFIGURELOG fget_write() -> EBADF. */
	FAILS_WITH(pmc_configure_logfile(1000), EBADF);
	int ro = open("/dev/null", O_RDONLY);
	FAILS_WITH(pmc_configure_logfile(ro), EBADF);
	close(ro);
	int dir = open("/", O_RDONLY | O_DIRECTORY);
	FAILS_WITH(pmc_configure_logfile(dir), EBADF);
	close(dir);
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
	OK(pmc_configure_logfile(sv[0]));	/* sockets are accepted */
	OK(pmc_close_logfile());
	/* -1 deconfigures: afterwards there is no log to write to. */
	OK(pmc_configure_logfile(sv[0]));
	OK(pmc_configure_logfile(-1));
	FAILS_WITH(pmc_writelog(1), EINVAL);	/* no log any more */
	OK(pmc_configure_logfile(sv[0]));
	OK(pmc_configure_logfile(-7));	/* any negative fd deconfigures */
	FAILS_WITH(pmc_writelog(1), EINVAL);
	close(sv[0]);
	close(sv[1]);

	/* A write error (ENOSPC on /dev/full) reaches pmc_flush_logfile. */
	int full = open("/dev/full", O_WRONLY);
	CHECK(full >= 0, "open /dev/full");
	OK(pmc_configure_logfile(full));
	close(full);	/* the library keeps its own reference */
	OK(pmc_writelog(1));
	FAILS_WITH(pmc_flush_logfile(), ENOSPC);
	pmc_close_logfile();

	printf("all errno rules hold\n");
	return 0;
}
