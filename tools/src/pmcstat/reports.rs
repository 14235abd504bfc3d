//! What pmcstat writes from a log: `-R` (dump or reports), the reports of
//! a live sampling run (`-G`, `--folded`, `-m`, `-a`, `-F`, `-g`, `--pprof`,
//! `--flamegraph`, `-v`), and `-L`/`-u`.

use std::io::Write;
use std::process::ExitCode;

use crate::annotate;
use crate::profile_args::ProfileArgs;
use crate::{fail, usage};

use super::TOOL;
use super::options::{Args, fs_root, streams_report, wants_report};

// The lost-samples warning of -R here and of a live run (mod.rs).
#[path = "lost.rs"]
mod lost;
pub(super) use lost::warn_lost;

pub(super) fn read_events(path: &std::path::Path) -> Result<Vec<pmc::log::LogEvent>, ExitCode> {
    let file = std::fs::File::open(path).map_err(|e| {
        eprintln!("{TOOL}: cannot open {}: {e}", path.display());
        ExitCode::FAILURE
    })?;
    pmc::log::LogReader::from_reader(file)
        .collect::<Result<Vec<_>, String>>()
        .map_err(|e| {
            eprintln!("{TOOL}: {}: {e}", path.display());
            ExitCode::FAILURE
        })
}

pub(super) fn write_to(path: &std::path::Path, text: &str) -> Result<(), ExitCode> {
    let r = if path.as_os_str() == "-" {
        std::io::stdout().write_all(text.as_bytes())
    } else {
        std::fs::write(path, text)
    };
    r.map_err(|e| {
        eprintln!("{TOOL}: cannot write {}: {e}", path.display());
        ExitCode::FAILURE
    })
}

/// Writes the reports asked for, after -r/-i/-z; with -v, the conversion
/// statistics (to -o, else standard output for -R and standard error live).
pub(super) fn write_reports(
    args: &Args,
    events: &[pmc::log::LogEvent],
    from_log: bool,
    period: Option<u64>,
) -> Result<(), ExitCode> {
    let root = fs_root(args)?;
    let events = annotate::prepare(
        events,
        root.as_deref(),
        args.thread,
        args.depth.map(|d| d as usize),
    );
    let events = &events[..];
    // One symbolised profile for -G, --folded, -F, -g, --pprof, --flamegraph.
    let profile =
        (args.callgraph.is_some() || args.folded.is_some() || args.profile.any()).then(|| {
            let options = ProfileArgs::options(
                events,
                period,
                args.show_address,
                args.depth.map(|d| d as usize),
            );
            pmc_report::Profile::from_events_with(events, &options)
        });
    if let (Some(path), Some(profile)) = (&args.callgraph, &profile) {
        write_to(path, &pmc_report::callgraph(profile))?;
    }
    if let (Some(path), Some(profile)) = (&args.folded, &profile) {
        write_to(path, &pmc_report::folded(profile))?;
    }
    if let Some(path) = &args.sampled_pcs {
        write_to(path, &annotate::sampled_pcs(events))?;
    }
    if let Some(path) = &args.annotated {
        write_to(path, &annotate::annotated_callchains(events))?;
    }
    // -F, -g, --pprof, --flamegraph (tools/src/profile_args.rs).
    if let Some(profile) = &profile {
        args.profile.write_profile(profile).map_err(|e| {
            eprintln!("{TOOL}: {e}");
            ExitCode::FAILURE
        })?;
    }
    if args.verbose > 0 {
        let stats = annotate::statistics(events);
        match &args.output {
            Some(p) if !from_log => write_to(p, &stats)?,
            _ if from_log => write_to(std::path::Path::new("-"), &stats)?,
            _ => eprint!("{stats}"),
        }
    }
    Ok(())
}

/// `-L` / `-u SPEC`: list or describe the machine's events.
pub(super) fn list_or_describe(args: &Args) -> Result<ExitCode, ExitCode> {
    let classes = crate::events::all().map_err(|e| fail(TOOL, &e))?;
    let text = match &args.describe {
        Some(spec) => crate::events::describe(&classes, spec),
        None => crate::events::list(&classes),
    };
    write_to(std::path::Path::new("-"), &text)?;
    if !args.quiet {
        for (class, names) in &classes {
            if let Err(why) = names {
                eprintln!("{TOOL}: {class} events not listed: {why}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `-R FILE`: dump the log's records, or write the reports asked for.
pub(super) fn read_log(args: &Args, path: &std::path::Path) -> Result<ExitCode, ExitCode> {
    if !(args.process.is_empty()
        && args.system.is_empty()
        && args.process_sampling.is_empty()
        && args.system_sampling.is_empty()
        && args.command.is_empty()
        && args.pid.is_none())
    {
        return Err(usage(
            TOOL,
            "-R reads a log: it excludes event specs, -t and a command",
        ));
    }
    if streams_report(args) {
        lost::warn_lost_in_file(path);
        // Streamed: -G, --folded and the profiles of a large log in little memory.
        args.profile
            .report_file(
                path,
                args.callgraph.as_deref(),
                args.folded.as_deref(),
                ProfileArgs::options(&[], None, args.show_address, None),
            )
            .map_err(|e| {
                eprintln!("{TOOL}: {e}");
                ExitCode::FAILURE
            })?;
        return Ok(ExitCode::SUCCESS);
    }
    let events = read_events(path)?;
    warn_lost(&events);
    if wants_report(args) || args.verbose > 0 {
        write_reports(args, &events, true, None)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut text = String::new();
    for e in &events {
        text.push_str(&e.record.to_string());
        text.push('\n');
    }
    match &args.output {
        Some(p) => write_to(p, &text)?,
        None => write_to(std::path::Path::new("-"), &text)?,
    }
    Ok(ExitCode::SUCCESS)
}
