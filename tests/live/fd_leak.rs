//! No fd leaks on a real partial failure: an attach that fails on the
//! third thread of a child (EMFILE under a lowered RLIMIT_NOFILE), and a
//! logging PMC whose context-switch sibling the kernel refuses (nobody at
//! perf_event_paranoid 2). The process's fd count is the same afterwards.

use nix::sys::resource::{Resource, getrlimit, setrlimit};
use pmc::global::log::{self, MemoryLog};
use pmc::probe::Requirement as R;
use pmc::{Cpu, Flags, Mode, Pmc};

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, Workload, open_fds, test};

pub fn tests() -> Vec<LiveTest> {
    vec![
        test(
            "fd_leak::attach_failing_on_the_third_thread_closes_the_first_two",
            vec![R::PerfEvent],
            attach_failing_on_the_third_thread_closes_the_first_two,
        ),
        test(
            "fd_leak::refused_log_proccsw_sibling_leaves_no_fd",
            vec![R::RestrictedTo(2)],
            refused_log_proccsw_sibling_leaves_no_fd,
        ),
    ]
}

/// The fd numbers this process has open now.
fn fd_numbers() -> Vec<u64> {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The RLIMIT_NOFILE soft limit under which exactly `free` more fds can be
/// opened (the kernel hands out the lowest free number below the limit).
fn limit_leaving(free: usize) -> u64 {
    let open = fd_numbers();
    let mut left = free;
    let mut n = 0u64;
    loop {
        if !open.contains(&n) {
            if left == 0 {
                return n;
            }
            left -= 1;
        }
        n += 1;
    }
}

/// Restores RLIMIT_NOFILE when dropped (also when the test fails).
struct NofileGuard(u64, u64);

impl Drop for NofileGuard {
    fn drop(&mut self) {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, self.0, self.1);
    }
}

fn attach_failing_on_the_third_thread_closes_the_first_two() -> TestResult {
    // Four threads: main + 3 spinners, all created before `ready`; one
    // counting fd per thread.
    let mut child = Workload::spawn("threads3", &["10"])?;
    let mut pmc =
        Pmc::allocate("page-faults,usr", Mode::TC, Flags::empty(), Cpu::Any).ctx("allocate")?;
    let before = open_fds();
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).ctx("getrlimit")?;
    let guard = NofileGuard(soft, hard);
    // Room for two fds: the third thread's open fails with EMFILE.
    setrlimit(Resource::RLIMIT_NOFILE, limit_leaving(2), hard).ctx("setrlimit")?;
    let attached = pmc.attach(child.pid());
    drop(guard);
    let after = open_fds();
    child.go()?;
    child.wait()?;
    // go() and wait() closed the child's pipes.
    let settled = open_fds();
    let e = match attached {
        Ok(()) => return Err("attach opened 4 fds under a limit that leaves room for 2".into()),
        Err(e) => e,
    };
    ensure!(
        e.os_errno() == Some(libc::EMFILE),
        "want EMFILE from the third open, got {e}"
    );
    ensure!(
        after == before,
        "{before} fds before the failed attach, {after} after"
    );
    // Nothing half-attached: the PMC has no handles and can attach again.
    ensure!(
        pmc.handles() == 0,
        "{} handles after a failed attach",
        pmc.handles()
    );
    drop(pmc);
    let released = open_fds();
    ensure!(
        released == settled,
        "{settled} fds before releasing the PMC, {released} after"
    );
    Ok(())
}

fn refused_log_proccsw_sibling_leaves_no_fd() -> TestResult {
    let log = MemoryLog::new();
    log::configure_logfile(log.clone()).ctx("configure_logfile")?;
    let before = open_fds();
    let outcome = (|| {
        // The counter itself is allowed (user-space, own process); its
        // context-switch sibling samples in the kernel, which paranoid 2
        // refuses: at allocate's trial open (as hwpmc refuses there) or at
        // start, whatever was opened before it must be closed again.
        let e = match Pmc::allocate("page-faults,usr", Mode::TC, Flags::LOG_PROCCSW, Cpu::Any) {
            Err(e) => e,
            Ok(mut pmc) => {
                let e = pmc
                    .start()
                    .err()
                    .ok_or("LOG_PROCCSW started: its kernel-side sibling was allowed (the perf_event_paranoid 2 restriction did not apply)")?;
                let during = open_fds();
                ensure!(
                    during == before,
                    "{before} fds before, {during} after the refused start (PMC still allocated)"
                );
                e
            }
        };
        ensure!(e.errno() == libc::EPERM, "{e}");
        let during = open_fds();
        ensure!(
            during == before,
            "{before} fds before, {during} after the refusal"
        );
        Ok::<(), libtest_mimic::Failed>(())
    })();
    log::close_logfile().ctx("close_logfile")?;
    outcome?;
    let after = open_fds();
    ensure!(
        after == before,
        "{before} fds before, {after} after release"
    );
    Ok(())
}
