//! The command-line definitions of both tools as clap [`Command`]s: what
//! their `--help`, man pages, `docs/` pages and shell completions are
//! generated from (`cargo xtask install`, `manual.rs`), so those never
//! drift from what the tools accept.
//!
//! pmcstat parses with this very definition. pmccontrol keeps its
//! getopt-style parser (pmccontrol.c's bundling and stop rules); its tests
//! check that the parser accepts exactly the options defined here.

use clap::{Arg, ArgAction, Command, CommandFactory};

/// pmcstat's arguments, as it parses them, with its synopsis and the
/// epilogue of its help (examples, exit statuses, signals).
pub fn pmcstat() -> Command {
    let command = crate::pmcstat::Args::command();
    let synopsis = crate::manual::synopsis(&command);
    command
        .override_usage(synopsis)
        .after_help(crate::manual::PMCSTAT.after_help())
        .after_long_help(crate::manual::PMCSTAT.after_long_help())
}

/// pmccontrol's options, as its getopt-style parser accepts them: one of
/// `-L`, `-l`, `-s`, `-e`/`-d`/`-c`, `--holders` or `--limits`.
pub fn pmccontrol() -> Command {
    let flag = |id: &'static str, short: char, help: &'static str| {
        Arg::new(id)
            .short(short)
            .action(ArgAction::SetTrue)
            .help(help)
    };
    let long = |id: &'static str, help: &'static str| {
        Arg::new(id).long(id).action(ArgAction::SetTrue).help(help)
    };
    let valued = |id: &'static str, short: char, value: &'static str, help: &'static str| {
        Arg::new(id)
            .short(short)
            .value_name(value)
            .action(ArgAction::Append)
            .help(help)
    };
    Command::new("pmccontrol")
        .version(env!("CARGO_PKG_VERSION"))
        // pmccontrol.c's forms, one a line, then the Linux-only ones.
        .override_usage(
            "pmccontrol -L [--json]\n\
             pmccontrol -l\n\
             pmccontrol -s\n\
             pmccontrol [-e PMC | -d PMC | -c CPU] ...\n\
             pmccontrol --holders [--json]\n\
             pmccontrol --limits [--json]",
        )
        .after_long_help(crate::manual::PMCCONTROL.after_long_help())
        .about("List the machine's performance counters and events, with FreeBSD pmccontrol(8)'s options, on Linux perf_event")
        // The parser knows --help and --version only in their long forms.
        .disable_help_flag(true)
        .disable_version_flag(true)
        .arg(flag(
            "list-events",
            'L',
            "List the event names: the core PMU's events (cpu/NAME/ and the CPU model's table), or each class with its events where there is no core PMU",
        ))
        .arg(flag(
            "list-state",
            'l',
            "List the CPUs and each one's hardware counters (every one free: Linux keeps no per-counter allocation)",
        ))
        .arg(flag(
            "statistics",
            's',
            "Print FreeBSD's driver statistics in its format (every value 0 here: Linux keeps no such counts; see --limits)",
        ))
        .arg(valued(
            "enable",
            'e',
            "PMC",
            "Enable counter PMC (a row number or *) on the CPU of the last -c (refused: Linux has no administrative state per counter)",
        ))
        .arg(valued(
            "disable",
            'd',
            "PMC",
            "Disable counter PMC (a row number or *) on the CPU of the last -c (refused, as -e)",
        ))
        .arg(valued(
            "cpu",
            'c',
            "CPU",
            "The CPU (a number or *, all by default) of the -e and -d after it",
        ))
        .arg(long(
            "holders",
            "List the processes holding perf_event descriptors",
        ))
        .arg(long("limits", "Show the perf_event sysctls and limits"))
        .arg(long("json", "Print -L, --holders or --limits as JSON"))
        .arg(
            Arg::new("help")
                .long("help")
                .action(ArgAction::Help)
                .help("Print the usage"),
        )
        .arg(
            Arg::new("version")
                .long("version")
                .action(ArgAction::Version)
                .help("Print the version"),
        )
}

#[cfg(test)]
mod tests {
    #[test]
    fn both_definitions_are_consistent() {
        super::pmcstat().debug_assert();
        super::pmccontrol().debug_assert();
    }
}
