/*
 * Counting in TC mode with software events, as a FreeBSD program does it:
 * pmc_allocate, pmc_start (attaches the caller), pmc_stop, pmc_read, and
 * the value operations on a stopped PMC (pmc_write, pmc_rw, pmc_set), an
 * attach to a child process, pmc_pmcinfo, pmc_capabilities, pmc_width.
 */
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static unsigned long long
clock_ns(clockid_t clock)
{
	struct timespec t;

	clock_gettime(clock, &t);
	return ((unsigned long long)t.tv_sec * 1000000000ULL + t.tv_nsec);
}

int
main(void)
{
	pmc_id_t clk, faults, child_clk;
	pmc_value_t v, v2, old;
	uint32_t caps, width;
	unsigned long long wall, cpu;

	OK(pmc_init());

	/* task-clock: nanoseconds on CPU. */
	OK(pmc_allocate("task-clock", PMC_MODE_TC, 0, PMC_CPU_ANY, &clk, 0));
	CHECK(clk != PMC_ID_INVALID, "id %#x", clk);
	wall = clock_ns(CLOCK_MONOTONIC);
	cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	OK(pmc_start(clk));
	spin_ms(50);
	OK(pmc_stop(clk));
	cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu;
	wall = clock_ns(CLOCK_MONOTONIC) - wall;
	OK(pmc_read(clk, &v));
	/*
	 * At least the thread's CPU time between start and stop (less 3% for
	 * where each clock is read), at most the wall time around them: a
	 * one-thread process runs no longer than that (task-clock counts what
	 * a hypervisor steals, the thread's CPU clock does not).
	 */
	CHECK(v >= cpu - cpu * 3 / 100 && v <= wall + wall / 100,
	    "task-clock counted %llu ns for %llu ns of CPU in %llu ns",
	    (unsigned long long)v, cpu, wall);
	OK(pmc_read(clk, &v2));
	CHECK(v2 == v, "a stopped PMC changed: %llu then %llu",
	    (unsigned long long)v, (unsigned long long)v2);

	/* pmc_write/pmc_rw/pmc_set on a stopped counting PMC. */
	OK(pmc_write(clk, 1000));
	OK(pmc_read(clk, &v));
	CHECK(v == 1000, "read %llu after writing 1000", (unsigned long long)v);
	OK(pmc_rw(clk, 5, &old));
	CHECK(old == 1000, "pmc_rw returned old value %llu", (unsigned long long)old);
	OK(pmc_read(clk, &v));
	CHECK(v == 5, "read %llu after pmc_rw(5)", (unsigned long long)v);
	/* Without a place for the old value, the new one is still set. */
	OK(pmc_rw(clk, 6, NULL));
	OK(pmc_read(clk, &v));
	CHECK(v == 6, "read %llu after pmc_rw(6, NULL)", (unsigned long long)v);
	/*
	 * PMCSETCOUNT sets pm_sc.pm_initial, the reload count, which a
	 * process counting PMC does not use: its value stays (hwpmc_mod.c).
	 */
	OK(pmc_set(clk, 7));
	OK(pmc_read(clk, &v));
	CHECK(v == 6, "read %llu after pmc_set(7) on a TC PMC valued 6",
	    (unsigned long long)v);

	OK(pmc_capabilities(clk, &caps));
	CHECK(caps & PMC_CAP_READ, "caps %#x lack PMC_CAP_READ", caps);
	OK(pmc_width(clk, &width));
	CHECK(width == 64, "width %u", width);

	/* page-faults: touching 1000 fresh pages faults at least 1000 times. */
	OK(pmc_allocate("page-faults", PMC_MODE_TC, 0, PMC_CPU_ANY, &faults, 0));
	OK(pmc_start(faults));
	size_t len = 1000 * 4096;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(p != MAP_FAILED, "mmap");
	/* Small pages whatever the THP setting: one fault per page. */
	CHECK(madvise(p, len, MADV_NOHUGEPAGE) == 0, "madvise");
	for (size_t i = 0; i < len; i += 4096)
		p[i] = 1;
	OK(pmc_stop(faults));
	OK(pmc_read(faults, &v));
	/*
	 * One per page, and few others: the loop's code and stack are mapped
	 * already, the pmc_stop path faults little if at all.
	 */
	CHECK(v >= 1000 && v <= 1100, "page-faults counted %llu for 1000 pages",
	    (unsigned long long)v);
	munmap(p, len);

	/* pmc_pmcinfo lists both rows with FreeBSD's fields. */
	struct pmc_pmcinfo *info;
	OK(pmc_pmcinfo(0, &info));
	int found = 0;
	/* Own PMCs first, then FREE rows (at least one). */
	for (int i = 0; info->pm_pmcs[i].pm_rowdisp != PMC_DISP_FREE; i++) {
		struct pmc_info *r = &info->pm_pmcs[i];
		if (strcmp(r->pm_name, "task-clock") != 0)
			continue;
		CHECK(r->pm_mode == PMC_MODE_TC, "mode %d", r->pm_mode);
		CHECK(r->pm_rowdisp == PMC_DISP_THREAD, "disp %d", r->pm_rowdisp);
		CHECK(r->pm_ownerpid == getpid(), "owner %d", r->pm_ownerpid);
		CHECK(r->pm_class == PMC_CLASS_SOFT, "class %d", r->pm_class);
		found = 1;
		break;
	}
	CHECK(found, "%s", "task-clock is not in pmc_pmcinfo");
	CHECK(info->pm_cpu == 0, "pm_cpu %d", info->pm_cpu);
	free(info);

	/* A child process: attach, count its spinning, detach. */
	int go[2];
	CHECK(pipe(go) == 0, "pipe");
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		char c;
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		spin_ms(100);
		_exit(0);
	}
	close(go[0]);
	OK(pmc_allocate("task-clock", PMC_MODE_TC, 0, PMC_CPU_ANY, &child_clk, 0));
	OK(pmc_attach(child_clk, pid));
	wall = clock_ns(CLOCK_MONOTONIC);
	OK(pmc_start(child_clk));
	CHECK(write(go[1], "g", 1) == 1, "write");
	int status;
	struct rusage ru;
	CHECK(wait4(pid, &status, 0, &ru) == pid, "wait4");
	wall = clock_ns(CLOCK_MONOTONIC) - wall;
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
	OK(pmc_stop(child_clk));
	OK(pmc_read(child_clk, &v));
	cpu = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ULL +
	    (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ULL;
	/*
	 * The child's 100 ms spin (less 3%), and no more than the wall time
	 * from start to its reaping: it has one thread.
	 */
	CHECK(v >= 97000000 && v <= wall + wall / 100,
	    "the child's 100 ms of CPU counted %llu ns (its rusage %llu ns, %llu ns wall)",
	    (unsigned long long)v, cpu, wall);

	OK(pmc_release(child_clk));
	OK(pmc_release(faults));
	OK(pmc_release(clk));
	printf("task-clock of a 100 ms child spin: %llu ns\n", (unsigned long long)v);
	return 0;
}
