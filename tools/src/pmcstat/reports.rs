//! What pmcstat writes from a log: `-R` (dump or reports), the reports of
//! a live sampling run (`-G`, `--folded`, `-m`, `-a`, `-F`, `-g`, `--pprof`,
//! `--flamegraph`, `-v`), and `-L`/`-u`.

use std::io::Write;
use std::process::ExitCode;

use crate::annotate;
use crate::profile_args::ProfileArgs;
use crate::report::warn_kernel_names_missing;
use crate::{fail, usage};

use super::TOOL;
use super::options::{Args, fs_root, streams_report, wants_report};

// The lost-samples warning of -R here and of a live run (mod.rs).
#[path = "lost.rs"]
mod lost;
pub(super) use lost::{Losses, warn_lost};

/// Every record of the log at `path`, for the reports that need them all
/// at once (`-m`, `-a`, `-v`, the filters, and a live run's reports). A log
/// without CLOSELOG, or cut inside a record, gives the records it holds with
/// the warning that it was cut short; a corrupt record after the first, the
/// records before it with a warning (as `-G`); a file whose first record is
/// bad is no pmclog (EX_DATAERR).
/// With them, the build ids the input recorded (a perf.data's), by path.
pub(super) fn read_events(
    path: &std::path::Path,
) -> Result<(Vec<pmc::log::LogEvent>, BuildIds), ExitCode> {
    let fail = |(status, message): (u8, String)| {
        eprintln!("{TOOL}: {message}");
        ExitCode::from(status)
    };
    let mut reader = crate::log_input::LogInput::open(path).map_err(fail)?;
    let mut end = crate::profile_args::LogEnd::default();
    let mut events = Vec::new();
    for event in &mut reader {
        match event {
            Ok(e) => {
                end.saw(&e.record);
                events.push(e);
            }
            Err(e) if end.records == 0 => {
                return Err(fail(crate::profile_args::log_parse_failed(path, &e)));
            }
            Err(e) => {
                if let Err(e) = end.ended_inside_a_record(e) {
                    eprintln!(
                        "{TOOL}: warning: {}: record {}: {e}; reporting the records before it",
                        path.display(),
                        end.records + 1
                    );
                    end.damaged = true;
                }
                break;
            }
        }
    }
    if events.is_empty() {
        eprintln!("{TOOL}: {}", crate::profile_args::empty_log(path));
        return Err(ExitCode::FAILURE);
    }
    end.warn_if_cut_short(path);
    Ok((events, reader.build_ids()))
}

/// Objects' build ids by the path the input names them with.
pub(super) type BuildIds = std::collections::HashMap<String, Vec<u8>>;

/// `-R FILE` without a report: pmcstat_print_log, each record printed as it
/// is read (memory independent of the log's length). A corrupt record ends
/// the dump after the records before it with pmcstat_print_log's
/// `errx(EX_DATAERR, "ERROR: event parsing failed (record %jd, offset
/// 0x%jx).")`; a log cut short is printed whole, with the warning. A file
/// whose first record is bad fails before the output is touched.
fn dump_log(args: &Args, path: &std::path::Path) -> Result<ExitCode, ExitCode> {
    use crate::profile_args::{LogEnd, empty_log, log_parse_failed_at};
    let fail = |(status, message): (u8, String)| {
        eprintln!("{TOOL}: {message}");
        ExitCode::from(status)
    };
    let mut reader = crate::log_input::LogInput::open(path).map_err(fail)?;
    let first = match reader.next() {
        None => {
            eprintln!("{TOOL}: {}", empty_log(path));
            return Err(ExitCode::FAILURE);
        }
        Some(Err(e)) => return Err(fail(log_parse_failed_at(path, 1, 0, &e))),
        Some(Ok(first)) => first,
    };
    let out_path = args.output.as_deref().unwrap_or(std::path::Path::new("-"));
    let mut out = DumpOutput::open(out_path)?;
    let mut losses = lost::Losses::default();
    let mut end = LogEnd::default();
    let mut corrupt = None;
    for event in std::iter::once(Ok(first)).chain(&mut reader) {
        match event {
            Ok(e) => {
                end.saw(&e.record);
                losses.add(&e.record);
                out.record(&e.record)?;
            }
            Err(e) => {
                corrupt = end.ended_inside_a_record(e).err();
                break;
            }
        }
    }
    out.finish()?;
    losses.warn(None);
    if let Some(e) = corrupt {
        return Err(fail(log_parse_failed_at(
            path,
            end.records + 1,
            reader.offset(),
            &e,
        )));
    }
    end.warn_if_cut_short(path);
    Ok(ExitCode::SUCCESS)
}

/// Where the dump goes: standard output or the `-o` file, buffered.
struct DumpOutput<'a> {
    path: &'a std::path::Path,
    out: std::io::BufWriter<Box<dyn Write + 'a>>,
}

impl<'a> DumpOutput<'a> {
    fn open(path: &'a std::path::Path) -> Result<DumpOutput<'a>, ExitCode> {
        let out: Box<dyn Write> = if path.as_os_str() == "-" {
            Box::new(std::io::stdout().lock())
        } else {
            Box::new(std::fs::File::create(path).map_err(|e| {
                eprintln!("{TOOL}: cannot write {}: {e}", path.display());
                ExitCode::FAILURE
            })?)
        };
        Ok(DumpOutput {
            path,
            out: std::io::BufWriter::with_capacity(1 << 16, out),
        })
    }

    fn record(&mut self, record: &pmc::log::LogRecord) -> Result<(), ExitCode> {
        let r = writeln!(self.out, "{record}");
        r.map_err(|e| self.failed(&e))
    }

    fn finish(&mut self) -> Result<(), ExitCode> {
        let r = self.out.flush();
        r.map_err(|e| self.failed(&e))
    }

    fn failed(&self, e: &std::io::Error) -> ExitCode {
        if self.path.as_os_str() == "-" && crate::profile_args::is_closed_pipe(e) {
            // The reader went away (`| head`): stop quietly, as FreeBSD's
            // pmcstat does when SIGPIPE ends it.
            return ExitCode::from(crate::profile_args::CLOSED_PIPE_STATUS);
        }
        eprintln!("{TOOL}: cannot write {}: {e}", self.path.display());
        ExitCode::FAILURE
    }
}

pub(super) fn write_to(path: &std::path::Path, text: &str) -> Result<(), ExitCode> {
    let r = if path.as_os_str() == "-" {
        let mut out = std::io::stdout().lock();
        let r = out.write_all(text.as_bytes()).and_then(|()| out.flush());
        if let Err(e) = &r
            && crate::profile_args::is_closed_pipe(e)
        {
            // The reader went away (`| head`): stop quietly, as FreeBSD's
            // pmcstat does when SIGPIPE ends it.
            return Err(ExitCode::from(crate::profile_args::CLOSED_PIPE_STATUS));
        }
        r
    } else {
        crate::destination::write_file(path, text.as_bytes())
    };
    r.map_err(|e| {
        eprintln!("{TOOL}: cannot write {}: {e}", path.display());
        ExitCode::FAILURE
    })
}

/// Where `-G -` writes: pmcstat.c's `pa_graphfile = pa_printfile` for a
/// graph file of `-`, and `pa_printfile` is the `-o` file, else standard
/// output after `-R` (its `case 'R'` swaps stderr for stdout) and standard
/// error otherwise (`args.pa_printfile = stderr` at start). `printfile` is
/// the live run's (its count sink); `None` after `-R`.
fn write_graph(
    args: &Args,
    path: &std::path::Path,
    printfile: Option<&mut dyn Write>,
    text: &str,
) -> Result<(), ExitCode> {
    if path.as_os_str() != "-" {
        return write_to(path, text);
    }
    match (printfile, &args.output) {
        (Some(sink), _) => crate::output::write_out(TOOL, sink, text.as_bytes(), "the call graph"),
        (None, Some(o)) => write_to(o, text),
        (None, None) => write_to(path, text),
    }
}

/// `-G -` after `-R`: the `-o` file when one is named (see [`write_graph`]).
fn graph_file(args: &Args) -> Option<&std::path::Path> {
    match (args.callgraph.as_deref(), args.output.as_deref()) {
        (Some(g), Some(o)) if g.as_os_str() == "-" => Some(o),
        (g, _) => g,
    }
}

/// Writes the reports asked for, after -r/-i/-z; with -v, the conversion
/// statistics (to -o, else standard output for -R and standard error live).
/// `printfile`: a live run's pmcstat.c `pa_printfile` (`-o` or standard
/// error), `None` when reading a log (`-R`). `build_ids`: what the input
/// recorded of its objects (a perf.data's build-id section), which
/// identifies them by content.
pub(super) fn write_reports(
    args: &Args,
    events: &[pmc::log::LogEvent],
    build_ids: BuildIds,
    printfile: Option<&mut dyn Write>,
    periods: std::collections::HashMap<u32, u64>,
) -> Result<(), ExitCode> {
    let from_log = printfile.is_none();
    let root = fs_root(args)?;
    if let Some(tid) = args.thread {
        check_thread_sampled(events, tid)?;
    }
    if from_log
        && let Some(log) = &args.read_log
        && !events
            .iter()
            .any(|e| matches!(e.record, pmc::log::LogRecord::Callchain { .. }))
    {
        eprintln!("{TOOL}: warning: {}", crate::profile_args::no_samples(log));
    }
    let events = annotate::prepare(
        events,
        root.as_deref(),
        args.thread,
        args.depth.map(|d| d as usize),
    );
    let events = &events[..];
    let mut options =
        ProfileArgs::options(periods, args.show_address, args.depth.map(|d| d as usize));
    options.debug_root.clone_from(&root);
    options.names_only = names_only(args);
    options.build_ids = build_ids;
    // Files under a -r root are copies made for the report, newer
    // than the log by nature: their times say nothing of the build.
    if from_log && root.is_none() {
        options.recorded_until = args.read_log.as_deref().and_then(log_written);
    }
    // One symbolizer names every report's frames: -G, --folded, -F, -g,
    // --pprof, --flamegraph (through one profile), -m and -a.
    let mut symbolizer = options.symbolizer(events);
    let profile = (args.callgraph.is_some() || args.folded.is_some() || args.profile.any())
        .then(|| pmc_report::Profile::from_events_using(events, &options, &mut symbolizer));
    if let (Some(path), Some(profile)) = (&args.callgraph, &profile) {
        write_graph(args, path, printfile, &pmc_report::callgraph(profile))?;
    }
    if let (Some(path), Some(profile)) = (&args.folded, &profile) {
        write_to(path, &pmc_report::folded(profile))?;
    }
    if let Some(path) = &args.sampled_pcs {
        write_to(path, &annotate::sampled_pcs(events, &mut symbolizer))?;
    }
    if let Some(path) = &args.annotated {
        let depth = args.depth.map(|d| d as usize);
        let text = annotate::annotated_callchains(events, &mut symbolizer, depth);
        write_to(path, &text)?;
    }
    warn_kernel_names_missing(TOOL, symbolizer.kernel_names_missing());
    let named = profile.is_some() || args.sampled_pcs.is_some() || args.annotated.is_some();
    if named && args.verbose > 0 {
        for note in symbolizer.debug_notes() {
            eprintln!("{TOOL}: symbols: {note}");
        }
        let n = symbolizer.debug_files_opened();
        let files = if n == 1 { "file" } else { "files" };
        eprintln!("{TOOL}: symbols: {n} debug {files} read");
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

/// `-i TID` keeps the samples of one thread: a thread with none in the log
/// is a wrong argument (exit 2), not an empty report. Names the threads
/// that have samples when they are few enough to read.
fn check_thread_sampled(events: &[pmc::log::LogEvent], tid: u32) -> Result<(), ExitCode> {
    let mut tids: Vec<u32> = events
        .iter()
        .filter_map(|e| match e.record {
            pmc::log::LogRecord::Callchain { tid, .. } => Some(tid),
            _ => None,
        })
        .collect();
    if tids.contains(&tid) {
        return Ok(());
    }
    tids.sort_unstable();
    tids.dedup();
    const LISTED: usize = 16;
    let present = match tids.len() {
        0 => "the log has no samples at all".to_string(),
        n if n <= LISTED => format!(
            "threads with samples: {}",
            tids.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        n => format!("{n} threads have samples (-R without -i lists them in callchain records)"),
    };
    Err(usage(
        TOOL,
        &format!("-i {tid}: no sample of thread {tid} in the log; {present}"),
    ))
}

/// What -E and -W print when there is no -O log to keep them: the counts
/// they log and nothing else (pmcstat(8): -E shows "counts at process
/// exit", -W "counts per context switch"). With -d the fork and exec
/// records come too: they tell which process of the tree each count is.
pub(super) fn print_logged_counts(
    args: &Args,
    events: &[pmc::log::LogEvent],
    sink: &mut dyn Write,
) -> Result<(), ExitCode> {
    use pmc::log::LogRecord as L;
    let mut text = String::new();
    for e in events {
        let wanted = match e.record {
            L::ProcExit { .. } => args.log_exit,
            L::ProcCsw { .. } => args.log_csw,
            L::ProcFork { .. } | L::ProcExec { .. } => args.descendants,
            _ => false,
        };
        if wanted {
            text.push_str(&e.record.to_string());
            text.push('\n');
        }
    }
    sink.write_all(text.as_bytes()).map_err(|e| {
        eprintln!("{TOOL}: writing the logged counts: {e}");
        ExitCode::FAILURE
    })
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

/// perf's rule for `perf report` (tools/perf/util/data.c: "File perf.data
/// not owned by current user or root (use -f to override)"): a log owned
/// by neither the caller nor root is read only with `--force`, so that a
/// local user cannot steer root's report at files of their choosing. The
/// refusal exits with `EX_NOPERM` (77; perf's -1 is no sysexit). A log
/// that cannot be `stat`ed is left to the open that follows, which says
/// why; standard input (`-`) is the caller's own.
fn check_log_owner(path: &std::path::Path, force: bool) -> Result<(), ExitCode> {
    use std::os::unix::fs::MetadataExt as _;
    if force || path.as_os_str() == "-" {
        return Ok(());
    }
    let Ok(metadata) = std::fs::metadata(path) else {
        return Ok(());
    };
    let (owner, me) = (metadata.uid(), nix::unistd::geteuid().as_raw());
    if owner == 0 || owner == me {
        return Ok(());
    }
    eprintln!(
        "{TOOL}: {}: owned by uid {owner}, not by you (uid {me}) or root: a log chooses the files \
         its report opens, so another user's log is not read (use --force to read it anyway)",
        path.display()
    );
    Err(ExitCode::from(crate::sysexits::EX_NOPERM))
}

/// `-R FILE`: dump the log's records, or write the reports asked for.
/// Whether `-G` (and `-m`) are the only reports asked for: they print
/// function names, so DWARF (inline frames, file:line) need not be read.
fn names_only(args: &Args) -> bool {
    args.folded.is_none() && !args.profile.any() && args.annotated.is_none()
}

/// When a log was last written: objects changed on disk after it are
/// another build than the one sampled (pmclog keeps no build ids).
fn log_written(path: &std::path::Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

pub(super) fn read_log(args: &Args, path: &std::path::Path) -> Result<ExitCode, ExitCode> {
    check_log_owner(path, args.force)?;
    if !(args.process.is_empty()
        && args.system.is_empty()
        && args.process_sampling.is_empty()
        && args.system_sampling.is_empty()
        && args.command.is_empty()
        && args.targets.is_empty())
    {
        return Err(usage(
            TOOL,
            "-R reads a log: it excludes event specs, -t and a command",
        ));
    }
    let others = wants_report(args) || args.verbose > 0;
    let wanted = others || args.pprof_every.is_some();
    // -O: the records written as a pmclog (a perf.data converted).
    let path = match &args.log_out {
        Some(out) => {
            super::convert::write_log(path, out)?;
            if !wanted {
                return Ok(ExitCode::SUCCESS);
            }
            // Standard input is gone: the reports read what was written.
            if path.as_os_str() == "-" {
                out.as_path()
            } else {
                path
            }
        }
        None => path,
    };
    if let Some(every) = super::rolling::Every::of(args)? {
        if others && path.as_os_str() == "-" {
            return Err(usage(
                TOOL,
                "-R - reads standard input once: --pprof-every cannot share it with other reports; write it to a file first (-O FILE)",
            ));
        }
        super::rolling::from_log(args, every, path)?;
        if !others {
            return Ok(ExitCode::SUCCESS);
        }
    }
    if streams_report(args) {
        // Streamed: -G, --folded and the profiles of a large log in little
        // memory; its losses are counted in the same pass (a pipe too).
        let mut losses = lost::Losses::default();
        let reported = args.profile.report_file(
            path,
            graph_file(args),
            args.folded.as_deref(),
            pmc_report::ProfileOptions {
                recorded_until: log_written(path),
                names_only: names_only(args),
                ..ProfileArgs::options(Default::default(), args.show_address, None)
            },
            |record| losses.add(record),
        );
        losses.warn(None);
        reported.map_err(|(status, e)| {
            eprintln!("{TOOL}: {e}");
            ExitCode::from(status)
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    if !(wants_report(args) || args.verbose > 0) {
        return dump_log(args, path);
    }
    let (events, build_ids) = read_events(path)?;
    warn_lost(&events);
    write_reports(args, &events, build_ids, None, Default::default())?;
    Ok(ExitCode::SUCCESS)
}
