//! pmcstat's profile outputs in the formats other tools read: callgrind
//! (`-F`), gprof (`-g` into `-D`), pprof (`--pprof`) and a flame graph
//! (`--flamegraph`), from live sampling or from `-R`.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use pmc_report::{Profile, ProfileBuilder, ProfileOptions};

/// The profile output options (flattened into pmcstat's arguments).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ProfileArgs {
    /// Write the call tree in callgrind format to FILE (KCachegrind,
    /// callgrind_annotate).
    #[arg(short = 'F', value_name = "FILE")]
    pub callgrind: Option<PathBuf>,
    /// Write gprof gmon.out files, one per sampled object and event, under
    /// the -D directory, named as pmcstat names them (`DIR/EVENT/OBJECT.gmon`,
    /// `OBJECT~001.gmon` for a second object of the same basename). The
    /// files are GNU gmon.out (binutils' format, what Linux's gprof reads),
    /// not FreeBSD's <sys/gmon.h> layout.
    #[arg(short = 'g')]
    pub gprof: bool,
    /// Directory for -g output.
    #[arg(short = 'D', value_name = "DIR", default_value = ".")]
    pub directory: PathBuf,
    /// Write the executable → gmon file map of -g to FILE (`-` for standard
    /// error), as pmcstat's `MAP:` lines; refused without -g.
    #[arg(short = 'M', value_name = "FILE")]
    pub gmon_map: Option<PathBuf>,
    /// Write a gzipped pprof profile.proto to FILE (go tool pprof, Parca,
    /// Pyroscope, Grafana).
    #[arg(long, value_name = "FILE")]
    pub pprof: Option<PathBuf>,
    /// Write an interactive flame graph SVG to FILE.
    #[arg(long, value_name = "FILE")]
    pub flamegraph: Option<PathBuf>,
}

impl ProfileArgs {
    /// Whether any profile output is asked for.
    pub fn any(&self) -> bool {
        self.callgrind.is_some() || self.gprof || self.pprof.is_some() || self.flamegraph.is_some()
    }

    /// Profile options for a log: `periods` (each sampling PMC's reload
    /// count by pmcid, when known from live sampling) for pprof's event
    /// totals, and pmcstat -I's unresolved leaves.
    pub fn options(
        periods: std::collections::HashMap<u32, u64>,
        leaf_address: bool,
        max_depth: Option<usize>,
    ) -> ProfileOptions {
        ProfileOptions {
            leaf_address,
            max_depth,
            periods,
            ..ProfileOptions::default()
        }
    }

    /// `-R LOG` (a pmclog or a perf.data) with reports: streams the log into one profile (memory in
    /// proportion to its distinct stacks, not its size), then writes the
    /// `-G` call graph, the `--folded` stacks and these outputs from it;
    /// `each_record` sees every record as it streams by.
    /// A failure is its exit status and message: pmcstat.c's `EX_OSERR` for
    /// a log that cannot be opened, `EX_DATAERR` for one that is not a
    /// pmclog ([`log_open_failed`], [`log_parse_failed`]), 1 otherwise.
    pub fn report_file(
        &self,
        log: &Path,
        callgraph: Option<&Path>,
        folded: Option<&Path>,
        options: ProfileOptions,
        mut each_record: impl FnMut(&pmc::log::LogRecord),
    ) -> Result<(), (u8, String)> {
        let reader = crate::log_input::LogInput::open(log)?;
        let mut options = options;
        crate::log_input::add_build_ids(&mut options, &reader);
        let mut builder = ProfileBuilder::new(options);
        let mut end = LogEnd::default();
        for event in reader {
            match event {
                Ok(event) => {
                    end.saw(&event.record);
                    each_record(&event.record);
                    builder.push(&event);
                }
                // Damage at the first record: not a pmclog at all (a
                // perf.data, say), which fails before any output is made.
                Err(e) if end.records == 0 => return Err(log_parse_failed(log, &e)),
                // The writer stopped inside a record: said below.
                Err(e) => match end.ended_inside_a_record(e) {
                    Ok(()) => break,
                    // A corrupt record still leaves every record before
                    // it: report them.
                    Err(e) => {
                        eprintln!(
                            "pmcstat: warning: {}: record {}: {e}; reporting the records before it",
                            log.display(),
                            end.records + 1
                        );
                        end.damaged = true;
                        break;
                    }
                },
            }
        }
        if end.records == 0 {
            return Err((1, empty_log(log)));
        }
        end.warn_if_cut_short(log);
        let profile = builder.finish();
        if profile.samples.is_empty() {
            eprintln!("pmcstat: warning: {}", no_samples(log));
        }
        crate::report::warn_kernel_names_missing("pmcstat", profile.kernel_names_missing.as_ref());
        let failed = |e: String| (1, e);
        if let Some(path) = callgraph {
            write_stream(path, |w| pmc_report::write_callgraph(&profile, w)).map_err(failed)?;
        }
        if let Some(path) = folded {
            write_stream(path, |w| pmc_report::write_folded(&profile, w)).map_err(failed)?;
        }
        self.write_profile(&profile).map_err(failed)
    }

    /// Writes the outputs asked for from a built profile.
    pub fn write_profile(&self, profile: &Profile) -> Result<(), String> {
        if let Some(path) = &self.callgrind {
            write_bytes(path, pmc_report::callgrind(profile, "pmcstat").as_bytes())?;
        }
        if let Some(path) = &self.pprof {
            let mut buf = Vec::new();
            pmc_report::pprof(profile, &mut buf).map_err(|e| format!("{}: {e}", path.display()))?;
            write_bytes(path, &buf)?;
        }
        if let Some(path) = &self.flamegraph {
            let title = profile
                .events
                .iter()
                .map(|e| e.name.as_str())
                .collect::<Vec<_>>()
                .join(", ");
            let mut buf = Vec::new();
            pmc_report::flamegraph(profile, &format!("pmcstat: {title}"), &mut buf)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            write_bytes(path, &buf)?;
        }
        if self.gprof {
            // -D is made even when no sample resolves to an object: the
            // run asked for output there.
            std::fs::create_dir_all(&self.directory)
                .map_err(|e| format!("cannot create {}: {e}", self.directory.display()))?;
            let files = pmc_report::gmon(profile);
            for f in &files {
                let path = self.directory.join(&f.relative_path);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)
                        .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
                }
                write_bytes(&path, &f.bytes)?;
            }
            if let Some(path) = &self.gmon_map {
                let map = gmon_map(&files);
                if path.as_os_str() == "-" {
                    eprint!("{map}");
                } else {
                    write_bytes(path, map.as_bytes())?;
                }
            }
        }
        Ok(())
    }
}

/// pmcstat's `-M` map: `MAP:`, then one line per object,
/// ` "OBJECT" => "SAMPLE NAME" EVENT/SAMPLES…` (usr.sbin/pmcstat:
/// `pmcstat_shutdown_logging` writes `MAP:`, pmcpl_gprof.c
/// `pmcpl_gmon_shutdown` the lines). The sample name is the gmon file's
/// name, which is the same in every event's directory.
pub fn gmon_map(files: &[pmc_report::GmonFile]) -> String {
    use std::fmt::Write as _;
    let mut objects: Vec<&str> = files.iter().map(|f| f.object.as_str()).collect();
    objects.sort_unstable();
    objects.dedup();
    let mut out = String::from("MAP:\n");
    for object in objects {
        let of_object: Vec<_> = files.iter().filter(|f| f.object == object).collect();
        let name = of_object[0]
            .relative_path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let _ = write!(out, " \"{object}\" => \"{name}\"");
        for f in of_object {
            let event = f
                .relative_path
                .parent()
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            let _ = write!(out, " {event}/{}", f.samples);
        }
        out.push('\n');
    }
    out
}

/// Why a file of no bytes cannot be reported: every log hwpmc (or pmcstat
/// -O) writes starts with an initlog record.
pub(crate) fn empty_log(log: &Path) -> String {
    format!(
        "{}: the file is empty: not a pmclog (a log starts with an initlog record; was its recording cut short?)",
        log.display()
    )
}

/// The warning for a log that holds no samples: its reports are empty.
pub(crate) fn no_samples(log: &Path) -> String {
    format!(
        "{}: no samples in the log (no callchain records): the reports are empty",
        log.display()
    )
}

/// The warning for a log that ends without CLOSELOG (its recording was
/// killed, or its disk filled), said once by the dump and every report:
/// libpmc's `pmclog_read` ends such a stream at `PMCLOG_EOF` as if it were
/// whole, dropping an incomplete last record, and pmcstat.c says nothing;
/// its records are read, but the reader must know the log is partial.
/// `partial`: the incomplete record after the last whole one (its offset
/// and the bytes there are of it).
pub(crate) fn cut_short(log: &Path, records: u64, partial: Option<(u64, usize)>) -> String {
    let mut text = format!(
        "{} ends without CLOSELOG: the recording was cut short (killed or out of space); \
         reporting the {records} records it holds",
        log.display()
    );
    if let Some((offset, bytes)) = partial {
        text.push_str(&format!(
            " (the {bytes} bytes from offset {offset:#x} are an incomplete record, left out)"
        ));
    }
    text
}

/// How far a log was read: the records seen, whether CLOSELOG was among
/// them, an incomplete record at its end, a corrupt one.
#[derive(Clone, Debug, Default)]
pub(crate) struct LogEnd {
    pub(crate) records: u64,
    pub(crate) closed: bool,
    pub(crate) partial: Option<(u64, usize)>,
    /// A corrupt record ended the reading (said on its own: the missing
    /// CLOSELOG is no news then).
    pub(crate) damaged: bool,
    /// A perf.data cut short: where and inside what.
    pub(crate) cut: Option<String>,
}

impl LogEnd {
    /// Counts a record read.
    pub(crate) fn saw(&mut self, record: &pmc::log::LogRecord) {
        self.records += 1;
        self.closed |= matches!(record, pmc::log::LogRecord::Closelog);
    }

    /// Takes a read error that only says the stream ended inside a record
    /// (a log cut short); any other error is given back.
    pub(crate) fn ended_inside_a_record(
        &mut self,
        e: crate::log_input::InputError,
    ) -> Result<(), crate::log_input::InputError> {
        match e {
            crate::log_input::InputError::Log(pmc::log::ReadError::Truncated { offset, bytes }) => {
                self.partial = Some((offset, bytes));
                Ok(())
            }
            #[cfg(any(target_os = "linux", target_os = "android"))]
            crate::log_input::InputError::Perf(
                e @ pmc_linux::perf_data::PerfDataError::Truncated { .. },
            ) => {
                self.cut = Some(e.to_string());
                Ok(())
            }
            other => Err(other),
        }
    }

    /// Says on standard error, once, that the log `log` was cut short, if
    /// it was (no CLOSELOG).
    pub(crate) fn warn_if_cut_short(&self, log: &Path) {
        if let Some(cut) = &self.cut {
            let _ = writeln!(
                std::io::stderr(),
                "pmcstat: warning: {}: perf.data: {cut}; reporting the {} records read before it",
                log.display(),
                self.records
            );
            return;
        }
        if !self.closed && !self.damaged && self.records > 0 {
            let _ = writeln!(
                std::io::stderr(),
                "pmcstat: warning: {}",
                cut_short(log, self.records, self.partial)
            );
        }
    }
}

/// The status pmcstat ends with when the reader of its standard output
/// goes away (`pmcstat -R log | head -1`): FreeBSD's pmcstat is killed by
/// SIGPIPE there, which a shell reports as 128 + SIGPIPE (13). Rust
/// ignores SIGPIPE, so the write fails with EPIPE instead and pmcstat exits
/// with that status, saying nothing, as the signal would.
pub(crate) const CLOSED_PIPE_STATUS: u8 = 128 + 13;

/// Whether a failed write to standard output means its reader is gone.
pub(crate) fn is_closed_pipe(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::BrokenPipe
}

/// A log `-R` cannot open: pmcstat_open_log's `errx(EX_OSERR, "ERROR:
/// Cannot open \"%s\" for %s: %s.")`, with the errno.
pub fn log_open_failed(log: &Path, e: &std::io::Error) -> (u8, String) {
    (
        crate::sysexits::EX_OSERR,
        format!("ERROR: Cannot open \"{}\" for reading: {e}.", log.display()),
    )
}

/// A log whose first record is bad (not a pmclog at all): pmcstat_log.c
/// pmcstat_print_log's `errx(EX_DATAERR, "ERROR: event parsing failed
/// (record %jd, offset 0x%jx).")` at record 1, offset 0, then what the
/// reader found on a line of its own.
pub fn log_parse_failed(log: &Path, e: &dyn std::fmt::Display) -> (u8, String) {
    (
        crate::sysexits::EX_DATAERR,
        format!(
            "ERROR: event parsing failed (record 1, offset 0x0).\npmcstat: {}: {e}",
            log.display()
        ),
    )
}

/// [`log_parse_failed`] at a record: pmcstat_print_log's `"(record %jd,
/// offset 0x%jx)."`, the record counted from 1 (`pl_count + 1`) and the
/// offset where it starts (`pl_offset`, the end of the last good one); what
/// the reader found follows on a line of its own.
pub fn log_parse_failed_at(
    log: &Path,
    record: u64,
    offset: u64,
    e: &dyn std::fmt::Display,
) -> (u8, String) {
    (
        crate::sysexits::EX_DATAERR,
        format!(
            "ERROR: event parsing failed (record {record}, offset {offset:#x}).\npmcstat: {}: {e}",
            log.display()
        ),
    )
}

/// [`write_bytes`] for a report written as it is made (a large log's call
/// graph or folded stacks are never held whole as text).
fn write_stream(
    path: &Path,
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<(), String> {
    let r = if path.as_os_str() == "-" {
        let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
        let r = write(&mut out).and_then(|()| out.flush());
        if let Err(e) = &r
            && is_closed_pipe(e)
        {
            // As SIGPIPE would: the process ends here, quietly.
            std::process::exit(CLOSED_PIPE_STATUS.into());
        }
        r
    } else {
        crate::destination::create(path).and_then(|file| {
            let mut out = std::io::BufWriter::with_capacity(1 << 16, file);
            write(&mut out).and_then(|()| out.flush())
        })
    };
    r.map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn write_bytes(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let r = if path.as_os_str() == "-" {
        let mut out = std::io::stdout().lock();
        let r = out.write_all(bytes).and_then(|()| out.flush());
        if let Err(e) = &r
            && is_closed_pipe(e)
        {
            // As SIGPIPE would: the process ends here, quietly.
            std::process::exit(CLOSED_PIPE_STATUS.into());
        }
        r
    } else {
        crate::destination::write_file(path, bytes)
    };
    r.map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(event: &str, object: &str, samples: u64) -> pmc_report::GmonFile {
        let base = object.rsplit('/').next().unwrap_or(object);
        pmc_report::GmonFile {
            relative_path: Path::new(event).join(format!("{base}.gmon")),
            object: object.into(),
            samples,
            bytes: Vec::new(),
        }
    }

    /// usr.sbin/pmcstat: `MAP:` (pmcstat_shutdown_logging), then per image
    /// ` "EXECPATH" => "SAMPLENAME"` and ` PMCNAME/NSAMPLES` per gmon file,
    /// then a newline (pmcpl_gprof.c `pmcpl_gmon_shutdown`).
    #[test]
    fn the_gmon_map_has_pmcstats_lines() {
        let files = [
            file("cpu-clock", "/usr/bin/prog", 120),
            file("cpu-clock", "/lib/libc.so.6", 3),
            file("page-faults", "/usr/bin/prog", 7),
        ];
        assert_eq!(
            gmon_map(&files),
            "MAP:\n \"/lib/libc.so.6\" => \"libc.so.6.gmon\" cpu-clock/3\n \"/usr/bin/prog\" => \"prog.gmon\" cpu-clock/120 page-faults/7\n"
        );
        assert_eq!(gmon_map(&[]), "MAP:\n");
    }
}
