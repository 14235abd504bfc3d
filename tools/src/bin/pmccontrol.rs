//! `pmccontrol`: list event classes and events, show who uses the PMU, and
//! print statistics, with FreeBSD pmccontrol(8)'s options. What has no
//! Linux equivalent says so.

use std::process::ExitCode;

use clap::Parser;
use pmc_tools::{fail, usage};

const TOOL: &str = "pmccontrol";

/// Inspect performance counters (FreeBSD pmccontrol semantics on Linux perf_event).
#[derive(Parser, Debug)]
#[command(name = "pmccontrol", version)]
struct Args {
    /// List the event classes of this machine and the events of each.
    #[arg(short = 'L')]
    list_events: bool,
    /// Show the PMCs in use: on Linux, the processes holding perf_event
    /// descriptors (their settings are not visible from outside).
    #[arg(short = 'l')]
    list_state: bool,
    /// Print statistics: the perf_event limits and settings Linux exposes.
    #[arg(short = 's')]
    stats: bool,
    /// Restrict -e/-d to a CPU (a number or `*`).
    #[arg(short = 'c', value_name = "CPU")]
    cpu: Option<String>,
    /// Enable a PMC row for allocation (`*` for all): no Linux equivalent.
    #[arg(short = 'e', value_name = "PMC")]
    enable: Option<String>,
    /// Disable a PMC row for allocation (`*` for all): no Linux equivalent.
    #[arg(short = 'd', value_name = "PMC")]
    disable: Option<String>,
    /// Machine-readable JSON output for -L, -l and -s.
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.enable.is_some() || args.disable.is_some() {
        eprintln!(
            "{TOOL}: -e/-d: Linux has no per-counter switch for the allocator; perf_event \
             schedules counters itself. The nearest controls are the sysctl \
             kernel.perf_event_paranoid (who may count) and kernel.nmi_watchdog=0 (frees the \
             counter the watchdog holds)."
        );
        return ExitCode::FAILURE;
    }
    if args.cpu.is_some() {
        return usage(TOOL, "-c only qualifies -e/-d");
    }
    if !(args.list_events || args.list_state || args.stats) {
        return usage(TOOL, "nothing to do: give -L, -l or -s (see --help)");
    }
    if args.list_events
        && let Err(code) = list_events(args.json)
    {
        return code;
    }
    if args.list_state {
        list_state(args.json);
    }
    if args.stats {
        stats(args.json);
    }
    ExitCode::SUCCESS
}

fn list_events(json: bool) -> Result<(), ExitCode> {
    let info = pmc::cpuinfo().map_err(|e| fail(TOOL, &e))?;
    // A class whose events cannot be listed (tracefs not mounted, …) says
    // why instead of hiding the others.
    let classes: Vec<_> = info
        .classes
        .iter()
        .map(|c| {
            let names = pmc::event_names_of_class(&c.class).map_err(|e| e.to_string());
            (c.clone(), names)
        })
        .collect();
    if json {
        let v: Vec<_> = classes
            .iter()
            .map(|(c, names)| {
                serde_json::json!({
                    "class": c.class.to_string(),
                    "width": c.width,
                    "num": c.num,
                    "caps": format!("{:?}", c.caps),
                    "events": names.as_ref().ok(),
                    "unavailable": names.as_ref().err(),
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::json!({ "cputype": info.cputype, "classes": v })
        );
        return Ok(());
    }
    println!(
        "# cpu: {} ({} CPUs, {} hardware PMCs each)",
        info.cputype, info.ncpu, info.npmc
    );
    for (c, names) in &classes {
        println!("{}", c.class.name().to_ascii_uppercase());
        match names {
            Ok(names) => {
                for n in names {
                    println!("\t{n}");
                }
            }
            Err(why) => println!("\t# cannot list: {why}"),
        }
    }
    Ok(())
}

fn list_state(json: bool) {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let users = pmc_linux::system::perf_users();
        if json {
            println!("{}", serde_json::json!({ "perf_users": users }));
            return;
        }
        println!(
            "# processes holding perf_event descriptors (settings are private to each process)"
        );
        println!("{:>8}  {:>7}  command", "pid", "events");
        for u in &users {
            println!("{:>8}  {:>7}  {}", u.pid, u.events, u.command);
        }
        if users.is_empty() {
            println!("# none visible to this user");
        }
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        let _ = json;
        eprintln!("{TOOL}: -l is not available on this platform");
    }
}

fn stats(json: bool) {
    let report = pmc::probe::Report::detect();
    let rows: Vec<(&str, String)> = vec![
        (
            "perf_event_paranoid",
            opt(report.environment.paranoid.map(|v| v.to_string())),
        ),
        (
            "perf_event_max_sample_rate",
            opt(report.max_sample_rate.map(|v| v.to_string())),
        ),
        (
            "perf_event_mlock_kb",
            opt(report.mlock_kb.map(|v| v.to_string())),
        ),
        (
            "perf_event_max_stack",
            opt(report.max_stack.map(|v| v.to_string())),
        ),
        (
            "nmi_watchdog",
            opt(report.nmi_watchdog.map(|v| v.to_string())),
        ),
        (
            "interrupts processed / stalled, buffer requests, log sweeps",
            "no Linux equivalent: perf_event keeps no driver-wide counters; lost samples \
             are reported per ring buffer"
                .into(),
        ),
    ];
    if json {
        let map: serde_json::Map<String, serde_json::Value> = rows
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone().into()))
            .collect();
        println!("{}", serde_json::Value::Object(map));
        return;
    }
    for (k, v) in rows {
        println!("{k:<30} {v}");
    }
}

fn opt(v: Option<String>) -> String {
    v.unwrap_or_else(|| "-".into())
}
