/*
 * PMC_F_LOG_PROCEXIT on a child: the log read back with pmclog_read(3)
 * holds PMCALLOCATEDYN (pl_ad: our id, the event name), PMCATTACH (pl_t:
 * the child's pid) and PROCEXIT (pl_e: the child's pid, our id, the count
 * it accumulated), the record fields in struct pmclog_ev's union as
 * lib/libpmc/pmclog.h declares them.
 * argv[1]: a path for the log file.
 */
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <pmclog.h>

#include "check.h"

int
main(int argc, char **argv)
{
	pmc_id_t id;
	struct pmclog_ev ev;
	int go[2];

	CHECK(argc == 2, "usage: %s LOGFILE", argv[0]);
	OK(pmc_init());
	int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0, "open %s", argv[1]);
	OK(pmc_configure_logfile(fd));
	close(fd);

	CHECK(pipe(go) == 0, "pipe");
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		char c;
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		spin_ms(50);
		_exit(0);
	}
	close(go[0]);
	OK(pmc_allocate("task-clock", PMC_MODE_TC, PMC_F_LOG_PROCEXIT, PMC_CPU_ANY, &id, 0));
	OK(pmc_attach(id, pid));
	OK(pmc_start(id));
	CHECK(write(go[1], "g", 1) == 1, "write");
	int status;
	CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	OK(pmc_stop(id));
	OK(pmc_close_logfile());
	OK(pmc_release(id));

	int in = open(argv[1], O_RDONLY);
	CHECK(in >= 0, "open %s", argv[1]);
	void *log = pmclog_open(in);
	CHECK(log != NULL, "%s", "pmclog_open");
	int allocated = 0, attached = 0, exited = 0;
	while (pmclog_read(log, &ev) == 0) {
		switch (ev.pl_type) {
		case PMCLOG_TYPE_PMCALLOCATEDYN:
			if (ev.pl_u.pl_ad.pl_pmcid != id)
				break;
			CHECK(strcmp(ev.pl_u.pl_ad.pl_evname, "task-clock") == 0,
			    "pl_evname %.64s", ev.pl_u.pl_ad.pl_evname);
			CHECK(ev.pl_u.pl_ad.pl_flags & PMC_F_LOG_PROCEXIT, "pl_flags %#x",
			    ev.pl_u.pl_ad.pl_flags);
			allocated++;
			break;
		case PMCLOG_TYPE_PMCATTACH:
			if (ev.pl_u.pl_t.pl_pmcid != id)
				break;
			CHECK(ev.pl_u.pl_t.pl_pid == pid, "attach pid %d, child %d",
			    ev.pl_u.pl_t.pl_pid, pid);
			attached++;
			break;
		case PMCLOG_TYPE_PROCEXIT:
			if (ev.pl_u.pl_e.pl_pmcid != id)
				break;
			CHECK(ev.pl_u.pl_e.pl_pid == (uint32_t)pid, "exit pid %u, child %d",
			    ev.pl_u.pl_e.pl_pid, pid);
			CHECK(ev.pl_u.pl_e.pl_value >= 40000000,
			    "the child's 50 ms of CPU logged %llu ns",
			    (unsigned long long)ev.pl_u.pl_e.pl_value);
			exited++;
			break;
		default:
			break;
		}
	}
	CHECK(ev.pl_state == PMCLOG_EOF, "ended with state %d", ev.pl_state);
	CHECK(allocated == 1 && attached == 1 && exited == 1,
	    "PMCALLOCATEDYN %d, PMCATTACH %d, PROCEXIT %d", allocated, attached, exited);
	pmclog_close(log);
	printf("PMCALLOCATEDYN, PMCATTACH and PROCEXIT of child %d read back\n", pid);
	return 0;
}
