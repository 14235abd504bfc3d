//! Shared parts of `pmcstat` and `pmccontrol`: starting a command held
//! before `exec` so PMCs can attach to it first, exit codes, and the
//! count table in text, JSON and CSV.

#![warn(missing_docs)]

pub mod annotate;
pub mod events;
pub mod gate;
pub mod output;
pub mod pmcstat;
pub mod profile_args;
pub mod report;
pub mod top;

use std::process::ExitCode;

/// Exit status for bad options or event specifiers (as pmcstat(8)).
pub const EXIT_USAGE: u8 = 2;

/// Prints `tool: error` on one line and picks the exit status: 2 for a bad
/// specifier or argument, 1 for anything else (whose message carries the
/// remedy, e.g. the paranoid sysctl).
pub fn fail(tool: &str, e: &pmc::Error) -> ExitCode {
    let one_line = e.to_string().replace('\n', " ");
    eprintln!("{tool}: {one_line}");
    match e {
        pmc::Error::InvalidSpec { .. } | pmc::Error::InvalidArgument { .. } => {
            ExitCode::from(EXIT_USAGE)
        }
        _ => ExitCode::FAILURE,
    }
}

/// Prints a usage error and returns status 2.
pub fn usage(tool: &str, message: &str) -> ExitCode {
    eprintln!("{tool}: {message}");
    ExitCode::from(EXIT_USAGE)
}

/// Parses a CPU list (`0-3,6`) or `*` (every online CPU).
pub fn parse_cpus(list: &str) -> Result<Vec<u32>, String> {
    if list.trim() == "*" {
        return Ok(pmc::machine::online_cpus());
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
