//! The user-space instructions `pmc` adds to a start/read/stop bracket,
//! counted (not timed): under valgrind's callgrind, which counts every
//! user-space instruction, the same 1000 brackets run through `Pmc` and
//! through raw ioctls/read(2) on an identical fd (enable, read, disable,
//! read: what start/read/stop does, stop saving the value); the difference per
//! bracket is what the library adds. (`instructions:u` would do the same
//! on a machine with a PMU; callgrind works everywhere.) Prints one JSON
//! line per method, `instructions:u` first (skipped with the reason where
//! there is no hardware PMU), then callgrind (skipped when valgrind is
//! missing). The raw side is `pmc-linux`'s `Event::*_errno` calls, which
//! inline to the bare syscall and an errno check: the floor any caller of
//! these syscalls pays.

use std::process::Command;

use pmc::{Cpu, Flags, Mode, Pmc};
use pmc_linux::event::{Event, OpenFlags, Target};

const BRACKETS: u64 = 1000;
const SPEC: &str = "context-switches,usr";

#[inline(never)]
fn pmc_brackets(p: &mut Pmc) -> u64 {
    let mut sum = 0u64;
    for _ in 0..BRACKETS {
        p.start().expect("start");
        sum = sum.wrapping_add(p.read().expect("read"));
        p.stop().expect("stop");
    }
    sum
}

#[inline(never)]
fn raw_brackets(e: &Event) -> u64 {
    let mut sum = 0u64;
    for _ in 0..BRACKETS {
        e.enable_errno().expect("enable");
        sum = sum.wrapping_add(e.read_timed_errno().expect("read").value);
        e.disable_errno().expect("disable");
        // pmc_stop saves the value: the same read here.
        sum = sum.wrapping_add(e.read_timed_errno().expect("read").value);
    }
    sum
}

/// The two sides, on identical attrs: a `Pmc` attached to this
/// (single-threaded) process and the binding's event for the same spec.
fn pair() -> Result<(Pmc, Event), String> {
    let mut p =
        Pmc::allocate(SPEC, Mode::TC, Flags::empty(), Cpu::Any).map_err(|e| e.to_string())?;
    p.attach(0).map_err(|e| e.to_string())?;
    let attr = pmc::__private_test_hooks::attrs_for(SPEC, Mode::TC, Flags::empty(), 0)
        .map_err(|e| e.to_string())?[0];
    let e =
        Event::open(&attr, Target::CALLER, None, OpenFlags::empty()).map_err(|e| e.to_string())?;
    Ok((p, e))
}

/// The same comparison with an `instructions:u` counter where the machine
/// has one (a hardware PMU): user-space instructions retired per bracket.
fn counted_with_instructions_u() -> Result<(f64, f64), String> {
    let (mut p, e) = pair()?;
    let mut insns = Pmc::allocate("instructions,usr", Mode::TC, Flags::empty(), Cpu::Any)
        .map_err(|e| e.to_string())?;
    let mut per_bracket = |f: &mut dyn FnMut()| -> Result<f64, String> {
        let before = insns.read().unwrap_or(0);
        insns.start().map_err(|e| e.to_string())?;
        f();
        insns.stop().map_err(|e| e.to_string())?;
        let after = insns.read().map_err(|e| e.to_string())?;
        Ok((after - before) as f64 / BRACKETS as f64)
    };
    let ours = per_bracket(&mut || {
        std::hint::black_box(pmc_brackets(&mut p));
    })?;
    let raw = per_bracket(&mut || {
        std::hint::black_box(raw_brackets(&e));
    })?;
    Ok((ours, raw))
}

/// Runs both sides under callgrind (see `instructions_in`).
fn child() {
    let (mut p, e) = pair().expect("open both sides");
    std::hint::black_box(pmc_brackets(&mut p));
    std::hint::black_box(raw_brackets(&e));
}

/// Total instructions callgrind collected inside `function`.
fn instructions_in(function: &str) -> Option<u64> {
    let out_file = format!("/tmp/pmc-bracket-{}-{function}.cg", std::process::id());
    let status = Command::new("valgrind")
        .args(["--tool=callgrind", "--collect-atstart=no"])
        .arg(format!("--toggle-collect=*{function}*"))
        .arg(format!("--callgrind-out-file={out_file}"))
        .arg(std::env::current_exe().ok()?)
        .env("PMC_BRACKET_CHILD", "1")
        .output()
        .ok()?;
    if !status.status.success() {
        eprintln!("{}", String::from_utf8_lossy(&status.stderr));
        return None;
    }
    let text = std::fs::read_to_string(&out_file).ok()?;
    let _ = std::fs::remove_file(&out_file);
    text.lines()
        .find_map(|l| {
            l.strip_prefix("summary:")
                .or_else(|| l.strip_prefix("totals:"))
        })
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

fn main() {
    if std::env::var_os("PMC_BRACKET_CHILD").is_some() {
        child();
        return;
    }
    match counted_with_instructions_u() {
        Ok((ours, raw)) => println!(
            "{{\"subject\":\"bracket_instructions_u\",\"pmc_per_bracket\":{ours:.1},\"raw_per_bracket\":{raw:.1},\"added\":{:.1}}}",
            ours - raw
        ),
        Err(why) => println!(
            "{{\"subject\":\"bracket_instructions_u\",\"skipped\":{:?}}}",
            format!("no instructions:u counter here ({why}); callgrind below counts instead")
        ),
    }
    if Command::new("valgrind").arg("--version").output().is_err() {
        println!("{{\"subject\":\"bracket\",\"skipped\":\"valgrind is not installed\"}}");
        return;
    }
    let (Some(ours), Some(raw)) = (
        instructions_in("pmc_brackets"),
        instructions_in("raw_brackets"),
    ) else {
        println!("{{\"subject\":\"bracket\",\"skipped\":\"callgrind produced no totals\"}}");
        return;
    };
    let per = |v: u64| v as f64 / BRACKETS as f64;
    println!(
        "{{\"subject\":\"bracket\",\"pmc_per_bracket\":{:.1},\"raw_per_bracket\":{:.1},\"added\":{:.1}}}",
        per(ours),
        per(raw),
        per(ours) - per(raw)
    );
}
