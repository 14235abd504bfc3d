//! Shared parts of `pmcstat` and `pmccontrol`: starting a command held
//! before `exec` so PMCs can attach to it first, exit codes, and the
//! count table in text, JSON and CSV.

#![warn(missing_docs)]

pub mod annotate;
pub mod cli;
pub mod destination;
pub mod events;
pub mod gate;
pub mod log_input;
pub mod manual;
pub mod output;
#[cfg(any(target_os = "linux", target_os = "android"))]
pub mod perf_data;
pub mod pmcstat;
pub mod profile_args;
pub mod report;
pub mod sysexits;
pub mod top;

use std::process::ExitCode;

/// Exit status for bad options or event specifiers: sysexits' `EX_USAGE`,
/// as pmcstat.c's and pmccontrol.c's `errx(EX_USAGE, …)`.
pub const EXIT_USAGE: u8 = sysexits::EX_USAGE;

/// Prints `tool: error` on one line and picks the sysexits status by the
/// kind of error: `EX_USAGE` for a bad specifier or argument, or a name
/// nothing here has (an unknown event, PMU or tracepoint of a mounted
/// tracefs); `EX_UNAVAILABLE` where no backend runs here (pmcstat.c's
/// `pmc_init` failure); `EX_OSERR` for anything else, a call the system
/// refused (whose message carries the remedy, e.g. the paranoid sysctl, or
/// mounting tracefs).
pub fn fail(tool: &str, e: &pmc::Error) -> ExitCode {
    fail_as(tool, e, exit_status(e))
}

/// Prints `tool: error` on one line and returns `status`: for the paths
/// where FreeBSD's tool names the status itself (e.g. pmcstat.c's
/// `err(EX_OSERR, "ERROR: Cannot allocate …")` whatever the errno).
pub fn fail_as(tool: &str, e: &pmc::Error, status: u8) -> ExitCode {
    let one_line = e.to_string().replace('\n', " ");
    eprintln!("{tool}: {one_line}");
    ExitCode::from(status)
}

fn exit_status(e: &pmc::Error) -> u8 {
    match e {
        pmc::Error::InvalidSpec { .. }
        | pmc::Error::InvalidArgument { .. }
        | pmc::Error::UnknownEvent { .. } => sysexits::EX_USAGE,
        pmc::Error::NoBackend { .. } => sysexits::EX_UNAVAILABLE,
        _ => sysexits::EX_OSERR,
    }
}

/// Prints a usage error and returns `EX_USAGE` (64).
pub fn usage(tool: &str, message: &str) -> ExitCode {
    eprintln!("{tool}: {message}");
    ExitCode::from(EXIT_USAGE)
}

/// Parses a CPU list (`0-3,6`) or `*` (every online CPU).
pub fn parse_cpus(list: &str) -> Result<Vec<u32>, String> {
    if list.trim() == "*" {
        return Ok(pmc::global::online_cpus());
    }
    let bad = || format!("bad CPU list {list:?}: expected e.g. `0-3,6` or `*`");
    if list.trim().is_empty() {
        return Err(bad());
    }
    let mut cpus = cpu_list(list)?.ok_or_else(bad)?;
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// The kernel's CPU list syntax, parsed by the binding (one parser for
/// sysfs files and for `-c`).
#[cfg(any(target_os = "linux", target_os = "android"))]
fn cpu_list(list: &str) -> Result<Option<Vec<u32>>, String> {
    Ok(pmc_linux::system::parse_cpu_list(list))
}

/// No binding here parses CPU lists yet: only `*` works.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn cpu_list(list: &str) -> Result<Option<Vec<u32>>, String> {
    Err(format!(
        "CPU list {list:?}: this platform's backend takes only `*` (every online CPU)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_names_are_usage_errors_and_a_missing_tracefs_is_not() {
        // The library's errors for `-p sched:nosuch` with tracefs mounted,
        // for `-p nosuchevent`, and for any tracepoint without tracefs.
        let unknown_tracepoint = pmc::Error::UnknownEvent {
            what: "tracepoint sched:nosuch".into(),
            why: "no tracepoint sched:nosuch".into(),
            reason: None,
        };
        let unknown_event = pmc::Error::UnknownEvent {
            what: "event `nosuchevent`".into(),
            why: "not a generic name".into(),
            reason: None,
        };
        let no_tracefs = pmc::Error::Unavailable {
            what: "/sys/kernel/tracing".into(),
            why: "tracefs is not mounted".into(),
            reason: None,
            source: None,
        };
        assert!(!unknown_tracepoint.is_environmental() && no_tracefs.is_environmental());
        assert_eq!(exit_status(&unknown_tracepoint), sysexits::EX_USAGE);
        assert_eq!(exit_status(&unknown_event), sysexits::EX_USAGE);
        assert_eq!(exit_status(&no_tracefs), sysexits::EX_OSERR);
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpus("0-2,5,1").unwrap(), vec![0, 1, 2, 5]);
        assert!(parse_cpus("3-1").is_err());
        assert!(parse_cpus("x").is_err());
        assert!(!parse_cpus("*").unwrap().is_empty());
        assert_eq!(parse_cpus(" 2, 0-1 ,1").unwrap(), vec![0, 1, 2]);
        assert!(parse_cpus("").is_err());
        // FreeBSD pmcstat.c pmcstat_get_cpumask skips any run of ", \t"
        // between CPU numbers, so an empty part is not an error there either.
        assert_eq!(parse_cpus("0-1,,2").unwrap(), vec![0, 1, 2]);
    }
}
