//! Event classes beyond the generic ones: breakpoints (and, as they are
//! wired, tracepoints and probes), counted exactly.

use std::sync::atomic::{AtomicU64, Ordering};

use pmc::probe::Requirement as R;
use pmc::{Cpu, Flags, Mode, Pmc};

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, test};

pub fn tests() -> Vec<LiveTest> {
    vec![
        test(
            "events::write_breakpoint_counts_exactly_the_writes",
            vec![R::Pmu("breakpoint".into()), R::Paranoid(2)],
            write_breakpoint_counts_exactly_the_writes,
        ),
        test(
            "events::execute_breakpoint_counts_exactly_the_calls",
            vec![R::Pmu("breakpoint".into()), R::Paranoid(2)],
            execute_breakpoint_counts_exactly_the_calls,
        ),
        test(
            "events::bad_breakpoints_are_refused_with_the_reason",
            vec![],
            bad_breakpoints_are_refused_with_the_reason,
        ),
    ]
}

static WATCHED: AtomicU64 = AtomicU64::new(0);

fn count_with(spec: &str, work: impl FnOnce()) -> Result<u64, libtest_mimic::Failed> {
    let mut pmc = Pmc::allocate(spec, Mode::TC, Flags::empty(), Cpu::Any).ctx(spec)?;
    pmc.start().ctx("start")?;
    work();
    pmc.stop().ctx("stop")?;
    pmc.read().ctx("read")
}

fn write_breakpoint_counts_exactly_the_writes() -> TestResult {
    let addr = &WATCHED as *const AtomicU64 as usize;
    let spec = format!("mem:{addr:#x}/8:w,usr");
    for writes in [0u64, 1, 5, 100] {
        let n = count_with(&spec, || {
            for i in 0..writes {
                WATCHED.store(i, Ordering::SeqCst);
                // Reads do not trigger a write breakpoint.
                std::hint::black_box(WATCHED.load(Ordering::SeqCst));
            }
        })?;
        ensure!(n == writes, "{writes} writes counted as {n}");
    }
    Ok(())
}

#[inline(never)]
fn breakpoint_target(x: u64) -> u64 {
    std::hint::black_box(x.wrapping_mul(3))
}

fn execute_breakpoint_counts_exactly_the_calls() -> TestResult {
    let f: fn(u64) -> u64 = breakpoint_target;
    let spec = format!("mem:{:#x}:x,usr", f as usize);
    for calls in [0u64, 1, 7, 100] {
        let n = count_with(&spec, || {
            let f = std::hint::black_box(f);
            for i in 0..calls {
                std::hint::black_box(f(i));
            }
        })?;
        ensure!(n == calls, "{calls} calls counted as {n}");
    }
    Ok(())
}

fn bad_breakpoints_are_refused_with_the_reason() -> TestResult {
    for (spec, needle) in [
        ("mem:0x1000/3:w", "1, 2, 4 or 8"),
        ("mem:0x1004/8:w", "not aligned"),
        ("mem:0x1000/4:x", "execute"),
        ("mem:0x1000:rx", "access must be one of"),
    ] {
        let e = Pmc::allocate(spec, Mode::TC, Flags::empty(), Cpu::Any)
            .err()
            .ok_or_else(|| format!("{spec} was accepted"))?;
        ensure!(
            e.errno() == libc::EINVAL,
            "{spec}: {e} (errno {})",
            e.errno()
        );
        ensure!(e.to_string().contains(needle), "{spec}: {e}");
    }
    Ok(())
}
