//! What pmcstat(8) and pmccontrol(8) say besides their options — exit
//! statuses, examples, signals — and the texts made from a whole page:
//! the `--help` epilogue, the man page's extra sections (roff) and the
//! Markdown of `docs/`. The options come from `cli.rs`, the rest from
//! here, so `--help`, `man` and `docs/` cannot disagree:
//! `examples/generate` writes the man pages and the docs, and
//! `tests/manual.rs` fails when a committed doc differs from what it
//! writes.

use std::fmt::Write as _;

use clap::{Arg, Command};

/// One manual page: the command (its options) and the sections after them.
#[derive(Debug)]
pub struct Manual {
    /// The tool's clap definition (`cli.rs`): its synopsis and options.
    pub command: Command,
    /// What the page says after the options.
    pub page: &'static Page,
}

/// The sections of a page after its options.
#[derive(Debug)]
pub struct Page {
    /// (status, when it is returned), in numeric order.
    pub exit_status: &'static [(&'static str, &'static str)],
    /// The EXAMPLES, in order.
    pub examples: &'static [Example],
    /// Further sections after EXAMPLES: (title, paragraphs).
    pub sections: &'static [(&'static str, &'static [&'static str])],
}

/// One example: what it does, and the command line (run as written by
/// the suite: `tools/tests/cli/docs_examples.rs`).
#[derive(Debug)]
pub struct Example {
    /// What the line does (empty: it goes with the example before it).
    pub what: &'static str,
    /// The command line, as a shell runs it.
    pub line: &'static str,
}

/// pmcstat's page.
pub fn pmcstat() -> Manual {
    Manual {
        command: crate::cli::pmcstat(),
        page: &PMCSTAT,
    }
}

/// pmccontrol's page.
pub fn pmccontrol() -> Manual {
    Manual {
        command: crate::cli::pmccontrol(),
        page: &PMCCONTROL,
    }
}

pub(crate) const PMCSTAT: Page = Page {
    exit_status: PMCSTAT_EXIT_STATUS,
    examples: PMCSTAT_EXAMPLES,
    sections: PMCSTAT_SECTIONS,
};

pub(crate) const PMCCONTROL: Page = Page {
    exit_status: PMCCONTROL_EXIT_STATUS,
    examples: PMCCONTROL_EXAMPLES,
    sections: &[],
};

/// The statuses pmcstat exits with (`sysexits.rs`, pmcstat.c's sysexits).
const PMCSTAT_EXIT_STATUS: &[(&str, &str)] = &[
    (
        "0",
        "EX_OK: the run measured, or -R read its log, whatever the status of the command it ran; also --help and --version.",
    ),
    (
        "1",
        "A -R log that holds no record, or a report file of -R that cannot be written.",
    ),
    (
        "64",
        "EX_USAGE: an unknown option, a value out of range, or options that do not go together (said on standard error before anything runs).",
    ),
    (
        "65",
        "EX_DATAERR: -t matches no running process (or its regular expression does not compile, or every target exited before it was attached); a -R file that is neither a pmclog nor a readable perf.data, or a corrupt record in a -R dump.",
    ),
    (
        "69",
        "EX_UNAVAILABLE: no backend can count here, or -p/-P with the portable backend, which counts only pmcstat itself.",
    ),
    (
        "70",
        "EX_SOFTWARE: the recorded log cannot be read back for its reports.",
    ),
    (
        "71",
        "EX_OSERR: the system refuses a specifier or a PMC operation, the command cannot run, an output cannot be opened, the -R log cannot be opened, or --listen cannot bind its address (a port in use).",
    ),
    (
        "74",
        "EX_IOERR: writing the -O log or the -o output failed (a full disk, an I/O error); the run ends at once, see -O.",
    ),
    (
        "77",
        "EX_NOPERM: the -R log belongs to a user other than you and root (--force reads it).",
    ),
    (
        "130",
        "Interrupted (SIGINT) while waiting for the reader of an output FIFO.",
    ),
    (
        "141",
        "The reader of standard output went away (128 + SIGPIPE, as FreeBSD's pmcstat ends with SIGPIPE).",
    ),
];

/// pmcstat's examples: each runs on a Linux machine with
/// perf_event_paranoid <= 2 (`./a.out` is any program), except those with
/// `-s`/`-S`, which need <= 0 or CAP_PERFMON.
const PMCSTAT_EXAMPLES: &[Example] = &[
    Example {
        what: "Count the page faults and CPU time of a command in user mode, printed when it exits:",
        line: "pmcstat -p page-faults,usr -p task-clock,usr -- ./a.out",
    },
    Example {
        what: "The same, a line every second, as JSON lines:",
        line: "pmcstat --json -w 1 -p task-clock,usr -- ./a.out",
    },
    Example {
        what: "Sample a command's user-mode CPU time every millisecond into a pmclog:",
        line: "pmcstat -n 1000000 -P cpu-clock,usr -O prof.pmclog -- ./a.out",
    },
    Example {
        what: "Report from that log: pmcstat's call graph on standard output, then folded stacks for flamegraph.pl, inferno or speedscope:",
        line: "pmcstat -R prof.pmclog -G -",
    },
    Example {
        what: "",
        line: "pmcstat -R prof.pmclog --folded prof.folded",
    },
    Example {
        what: "Whole user stacks of a program built without frame pointers, unwound from stack copies (perf record's --call-graph dwarf), straight into a pprof profile (go tool pprof, Parca, Pyroscope):",
        line: "pmcstat --call-graph dwarf -P cpu-clock,usr --pprof prof.pb.gz -- ./a.out",
    },
    Example {
        what: "A pprof profile of every second of a command into prof/, each named by its interval's start in UTC, as continuous profilers ship them to Pyroscope, Parca or Cloud Profiler (-S instead of -P: the whole system); then the same series from its log:",
        line: "pmcstat -P cpu-clock,usr -O roll.pmclog --pprof-every 1 prof -- ./a.out",
    },
    Example {
        what: "",
        line: "pmcstat -R roll.pmclog --pprof-every 1 prof-again",
    },
    Example {
        what: "Dump a log's records as text:",
        line: "pmcstat -R prof.pmclog",
    },
    Example {
        what: "Count page faults on every CPU for one second (system-wide: perf_event_paranoid <= 0 or CAP_PERFMON):",
        line: "pmcstat -s page-faults -c '*' -l 1",
    },
];

const PMCSTAT_SECTIONS: &[(&str, &[&str])] = &[
    (
        "SAMPLING RATE",
        &[
            "A sampling PMC takes a sample every -n COUNT events. Without -n the count depends on what the event counts: an event that counts time in nanoseconds (cpu-clock, task-clock, SOFT-CLOCK.PROF, in any spelling: cpu-clock,usr, task-clock:u) samples every 250000 ns, 4000 samples a second of CPU time, perf record's default; any other event (instructions, page-faults, cache misses) every 65536 events, FreeBSD's default (pmcstat.h DEFAULT_SAMPLE_COUNT).",
            "FreeBSD's 65536 for a clock would be a 65.5 us period, 15.3 kHz, whose interrupts slow the command measured more than perf record's. -n gives any count to the specifiers after it, and period= or freq= in a specifier is that specifier's own; -v says each sampling specifier's period and where it came from.",
        ],
    ),
    (
        "SIGNALS",
        &[
            "SIGINT, SIGTERM, SIGHUP and SIGQUIT end the run: the command pmcstat started gets the same signal (a second one kills it), the counts are printed, an -O log is closed and pmcstat exits 0.",
            "A signal ignored at start stays ignored for the command, and SIGTERM, SIGHUP and SIGQUIT for pmcstat too (nohup).",
            "The -O log's first records are written at once: even after kill -9 the log's beginning reads.",
        ],
    ),
    (
        "FLEET",
        &[
            "pmcstat --listen 9100 -s instructions -s cycles serves those counts of every CPU to Prometheus at http://127.0.0.1:9100/metrics until it is stopped; scrape it with a job whose static_configs target is 127.0.0.1:9100 (give --listen 0.0.0.0:9100 to be scraped from another machine). Each scrape reads the PMCs then: the values are monotonic counters, scaled as the -w lines are.",
            "Series: pmc_events_total, pmc_enabled_seconds_total, pmc_running_seconds_total (less than enabled: the PMC was multiplexed and the count extrapolated), pmc_up, and pmc_lost_samples_total; labels event (the specifier as given), mode (SC or TC), cpu (-s), cgroup (-s with --cgroup), pid and command (-p, of the command or the processes of -t).",
            "Prometheus gets OpenMetrics, any other client Prometheus's text format (what promtool check metrics reads). What a scrape of 2 CPUs and 10 events costs, in latency and in pmcstat's CPU, is measured by cargo xtask bench --exporter-only (the recorded figures: docs/performance.md). Past one Prometheus, its remote_write sends the same series to Thanos, Cortex, Mimir or VictoriaMetrics, which keep them for the whole fleet.",
        ],
    ),
    (
        "COUNTING PER CGROUP",
        &[
            "--cgroup PATH counts each -s only in the tasks of a cgroup (a container, a systemd unit), on every CPU -c names (Linux's PERF_FLAG_PID_CGROUP, what perf stat -a -G counts). It is a Linux extension: FreeBSD's hwpmc and pmcstat have nothing like it, and pmcstat refuses it on the FreeBSD and portable backends (exit 71, EOPNOTSUPP).",
            "PATH is relative to the cgroup v2 mount (found in /proc/self/mountinfo, as perf finds it), or an absolute cgroup directory; an absolute PATH that is no cgroup directory is also tried under the mount, as perf reads -G (/ is the root cgroup). The hierarchy needs the perf_event controller, which cgroup v2 has unless a cgroup v1 hierarchy holds it. Counting a cgroup is system-wide monitoring: root, CAP_PERFMON or perf_event_paranoid <= 0.",
            "Given twice or more, each -s is counted once per cgroup, in the order given: the table has a column per cgroup, s/PATH/EVENT, the sum of the CPUs (as perf stat -G prints it); JSON and CSV label the counter s/SPEC@PATH. A cgroup with no task running counts 0.",
        ],
    ),
];

/// The statuses pmccontrol exits with (`src/bin/pmccontrol.rs`).
const PMCCONTROL_EXIT_STATUS: &[(&str, &str)] = &[
    (
        "0",
        "Success; also a listing whose reader went away (a closed output pipe).",
    ),
    (
        "64",
        "EX_USAGE: no command, two commands, an unknown option, a missing argument, or -c without -e/-d.",
    ),
    (
        "65",
        "EX_DATAERR: a CPU or PMC id that is not a number, or too large.",
    ),
    (
        "69",
        "EX_UNAVAILABLE: the library cannot describe this machine.",
    ),
    ("71", "EX_OSERR: a listing or an enable/disable failed."),
    ("74", "EX_IOERR: standard output cannot be written."),
    ("78", "EX_CONFIG: -e/-d on a machine without hardware PMCs."),
];

const PMCCONTROL_EXAMPLES: &[Example] = &[
    Example {
        what: "List the event names pmcstat takes:",
        line: "pmccontrol -L",
    },
    Example {
        what: "The perf_event limits of this machine (perf_event_paranoid and the rest), as JSON:",
        line: "pmccontrol --limits --json",
    },
];

impl Page {
    /// The epilogue of `-h`: the examples.
    pub fn after_help(&self) -> String {
        let mut out = String::from("Examples:\n");
        for example in self.examples {
            let _ = writeln!(out, "  {}", example.line);
        }
        out.push_str("\nSee --help for the exit statuses.");
        out
    }

    /// The epilogue of `--help`: the examples, the exit statuses and the
    /// further sections, as plain text.
    pub fn after_long_help(&self) -> String {
        let mut out = String::from("Examples:\n");
        for example in self.examples {
            let _ = writeln!(out, "  {}", example.line);
        }
        out.push_str("\nExit status:\n");
        for (status, when) in self.exit_status {
            let _ = writeln!(out, "  {status:>3}  {when}");
        }
        for (title, paragraphs) in self.sections {
            let _ = write!(out, "\n{}:\n", capitalized(title));
            for paragraph in *paragraphs {
                let _ = writeln!(out, "  {paragraph}");
            }
        }
        out.trim_end().to_string()
    }
}

impl Manual {
    /// The man page's sections after OPTIONS, in roff: EXIT STATUS,
    /// EXAMPLES and the further sections.
    pub fn roff_sections(&self) -> String {
        let mut out = String::from(".SH \"EXIT STATUS\"\n");
        for (status, when) in self.page.exit_status {
            let _ = write!(out, ".TP\n\\fB{status}\\fR\n{}\n", roff_text(when));
        }
        out.push_str(".SH EXAMPLES\n");
        for example in self.page.examples {
            if !example.what.is_empty() {
                let _ = writeln!(out, ".PP\n{}", roff_text(example.what));
            }
            let _ = write!(
                out,
                ".PP\n.RS 4\n.nf\n\\fB{}\\fR\n.fi\n.RE\n",
                roff_text(example.line)
            );
        }
        for (title, paragraphs) in self.page.sections {
            let _ = writeln!(out, ".SH {title}");
            for paragraph in *paragraphs {
                let _ = writeln!(out, ".PP\n{}", roff_text(paragraph));
            }
        }
        out
    }

    /// The whole page as Markdown (`docs/NAME.md`).
    pub fn markdown(&self) -> String {
        let mut command = self.command.clone();
        command.build();
        let name = command.get_name().to_string();
        let mut out = format!(
            "# {name}(8)\n\n<!-- Generated from tools/src/cli.rs and tools/src/manual.rs by \
             `cargo run -p hwpmc-tools --example generate -- --docs docs`: edit those, not \
             this file. -->\n\n"
        );
        let about = command
            .get_long_about()
            .or(command.get_about())
            .map(|s| s.to_string())
            .unwrap_or_default();
        for paragraph in about.split("\n\n") {
            let _ = write!(out, "{}\n\n", paragraph.replace('\n', " "));
        }
        let usage = command.get_overridden_usage().map(|s| s.to_string());
        let _ = write!(
            out,
            "## Synopsis\n\n```text\n{}\n```\n\n## Options\n\n| option | what it does |\n|---|---|\n",
            usage.unwrap_or_else(|| name.clone())
        );
        for arg in command.get_arguments().filter(|a| !a.is_hide_set()) {
            let _ = writeln!(
                out,
                "| `{}` | {} |",
                spelling(arg).replace('|', "\\|"),
                table_cell(&help_text(arg))
            );
        }
        out.push_str("\n## Exit status\n\n| status | when |\n|---|---|\n");
        for (status, when) in self.page.exit_status {
            let _ = writeln!(out, "| {status} | {} |", table_cell(when));
        }
        out.push_str("\n## Examples\n");
        for example in self.page.examples {
            if !example.what.is_empty() {
                let _ = write!(out, "\n{}\n\n", example.what);
            }
            let _ = write!(out, "```sh\n{}\n```\n", example.line);
        }
        for (title, paragraphs) in self.page.sections {
            let _ = write!(out, "\n## {}\n\n", capitalized(title));
            out.push_str(&paragraphs.join("\n\n"));
            out.push('\n');
        }
        out
    }
}

/// The synopsis of a getopt-style command: its flags bundled, then each
/// option with its value's name, the long options and the positional
/// arguments (`pmcstat [-CEIL…] [-D DIR] … [COMMAND ...]`). clap_mangen's
/// own synopsis leaves the value names out.
pub fn synopsis(command: &Command) -> String {
    // Built: the numbers of values are known only then.
    let mut command = command.clone();
    command.build();
    let shown = || {
        command
            .get_arguments()
            .filter(|a| !a.is_hide_set() && !is_help_or_version(a))
    };
    let mut flags: Vec<char> = shown()
        .filter(|a| !takes_value(a) && a.get_long().is_none())
        .filter_map(Arg::get_short)
        .collect();
    flags.sort_unstable();
    let mut valued: Vec<&Arg> = shown()
        .filter(|a| takes_value(a) && a.get_short().is_some())
        .collect();
    valued.sort_by_key(|a| a.get_short());
    let mut out = command.get_name().to_string();
    if !flags.is_empty() {
        let _ = write!(out, " [-{}]", flags.iter().collect::<String>());
    }
    for arg in valued
        .into_iter()
        .chain(shown().filter(|a| a.get_short().is_none() && !a.is_positional()))
    {
        let _ = write!(out, " [{}]", spelling(arg));
    }
    for arg in command.get_positionals().filter(|a| !a.is_hide_set()) {
        let _ = write!(out, " [{}]", spelling(arg));
    }
    out
}

fn is_help_or_version(arg: &Arg) -> bool {
    matches!(arg.get_id().as_str(), "help" | "version")
}

fn takes_value(arg: &Arg) -> bool {
    arg.get_num_args().is_some_and(|n| n.takes_values()) || arg.is_positional()
}

/// How an option is written: `-p SPEC`, `--call-graph MODE`, `-h, --help`,
/// `COMMAND ...`.
fn spelling(arg: &Arg) -> String {
    let value = arg
        .get_value_names()
        .map(|names| names.join(" "))
        .unwrap_or_else(|| arg.get_id().as_str().to_uppercase());
    if arg.is_positional() {
        return format!("{value} ...");
    }
    let mut names: Vec<String> = Vec::new();
    if let Some(short) = arg.get_short() {
        names.push(format!("-{short}"));
    }
    if let Some(long) = arg.get_long() {
        names.push(format!("--{long}"));
    }
    let names = names.join(", ");
    if takes_value(arg) {
        format!("{names} {value}")
    } else {
        names
    }
}

fn help_text(arg: &Arg) -> String {
    let mut text = arg
        .get_long_help()
        .or(arg.get_help())
        .map(|s| s.to_string())
        .unwrap_or_default();
    // A flag's "default" is clap's false: not worth a word.
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .filter(|_| takes_value(arg))
        .map(|v| v.to_string_lossy().into_owned())
        .collect();
    if !defaults.is_empty() {
        let _ = write!(text, " [default: {}]", defaults.join(", "));
    }
    text
}

/// A Markdown table cell: paragraphs on one line, `|` escaped.
fn table_cell(text: &str) -> String {
    text.trim()
        .split("\n\n")
        .map(|p| p.replace('\n', " "))
        .collect::<Vec<_>>()
        .join("<br><br>")
        .replace('|', "\\|")
}

/// One line of roff text: backslashes and hyphens escaped, a leading
/// control character made literal.
fn roff_text(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    if escaped.starts_with(['.', '\'']) {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}

/// `EXIT STATUS` → `Exit status`.
fn capitalized(title: &str) -> String {
    let lower = title.to_lowercase();
    let mut chars = lower.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_synopsis_names_every_value() {
        let synopsis = super::synopsis(&super::pmcstat().command);
        assert!(synopsis.starts_with("pmcstat [-"), "{synopsis}");
        for part in [
            "[-p SPEC]",
            "[-t PID|REGEX]",
            "[--call-graph MODE]",
            "[--json]",
            "[COMMAND ...]",
        ] {
            assert!(synopsis.contains(part), "{part} missing: {synopsis}");
        }
        assert!(!synopsis.contains(" ]"), "an empty value name: {synopsis}");
    }

    #[test]
    fn roff_text_escapes_hyphens_and_a_leading_dot() {
        assert_eq!(super::roff_text(".a -b \\c"), "\\&.a \\-b \\ec");
    }
}
