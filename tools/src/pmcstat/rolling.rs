//! `--pprof-every SECS DIR`: a pprof profile per interval into DIR, from
//! `-R`'s log or live. Both feed the log's records to one
//! [`pmc_report::rolling::Slicer`]: live, a thread reads the log's bytes as
//! the owner writes them (a tee in front of the log's destination), so the
//! series is the one `-R` gives for the same log.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pmc::log::{LogReader, ReadState};
use pmc_report::rolling::{Slice, Slicer};

use crate::profile_args::ProfileArgs;
use crate::sysexits::{EX_CANTCREAT, EX_IOERR};
use crate::usage;

use super::TOOL;
use super::options::{Args, fs_root};
use super::reports::Losses;

/// The shortest and longest intervals: shorter profiles hold too few
/// samples to read, longer ones are no longer "rolling".
const MIN_SECS: f64 = 0.1;
const MAX_SECS: f64 = 86_400.0;

/// `--pprof-every SECS DIR`, checked.
#[derive(Clone, Debug)]
pub(super) struct Every {
    every_ns: u64,
    secs: String,
    dir: PathBuf,
}

impl Every {
    /// The option's values, `None` without it; DIR is made ready (see
    /// [`prepare_dir`]).
    pub(super) fn of(args: &Args) -> Result<Option<Every>, ExitCode> {
        let Some(values) = &args.pprof_every else {
            return Ok(None);
        };
        let [secs, dir]: &[OsString; 2] = values
            .as_slice()
            .try_into()
            .map_err(|_| usage(TOOL, "--pprof-every takes two values: SECS DIR"))?;
        let secs = secs.to_string_lossy().into_owned();
        let every = secs
            .parse::<f64>()
            .ok()
            .filter(|s| (MIN_SECS..=MAX_SECS).contains(s))
            .ok_or_else(|| {
                usage(
                    TOOL,
                    &format!(
                        "--pprof-every {secs}: give the interval in seconds, {MIN_SECS} to {MAX_SECS}"
                    ),
                )
            })?;
        let dir = PathBuf::from(dir);
        prepare_dir(&dir)?;
        Ok(Some(Every {
            every_ns: (every * 1e9).round() as u64,
            secs,
            dir,
        }))
    }
}

/// DIR must be a directory: one that does not exist is created with its
/// parents (as `mkdir -p`); a file, a FIFO or a symlink to one there is
/// refused, never replaced.
fn prepare_dir(dir: &Path) -> Result<(), ExitCode> {
    let failed = |what: &str, e: &std::io::Error| {
        eprintln!(
            "{TOOL}: --pprof-every: {what} {}: {e} ({}); give a directory you can write",
            dir.display(),
            errno_name(e)
        );
        ExitCode::from(EX_CANTCREAT)
    };
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => {
            eprintln!(
                "{TOOL}: --pprof-every: {} exists and is not a directory; give a directory (it is created when it does not exist)",
                dir.display()
            );
            Err(ExitCode::from(EX_CANTCREAT))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir).map_err(|e| failed("cannot create", &e))
        }
        Err(e) => Err(failed("cannot use", &e)),
    }
}

/// The profile options of both modes: what `-R` and a live run share, so
/// their series are the same (the reload count of a live run is not in
/// the log, so neither uses it).
fn profile_options(args: &Args) -> Result<pmc_report::ProfileOptions, ExitCode> {
    let mut options = ProfileArgs::options(
        Default::default(),
        args.show_address,
        args.depth.map(|d| d as usize),
    );
    options.debug_root = fs_root(args)?;
    Ok(options)
}

/// Writes each slice into DIR under a temporary name, then renames it.
struct Files {
    every: Every,
    written: u64,
    /// The first write error, said when it happened; later slices are
    /// not written.
    failed: bool,
}

impl Files {
    fn new(every: Every) -> Files {
        Files {
            every,
            written: 0,
            failed: false,
        }
    }

    /// Writes `slices`; the first failure is said (with `then`, what to
    /// do about the rest) and stops the writing.
    fn write(&mut self, slices: Vec<Slice>, then: &str) {
        for slice in slices {
            if self.failed {
                return;
            }
            let path = self.every.dir.join(slice.file_name());
            if let Err(e) = write_atomically(&path, &slice) {
                eprintln!(
                    "{TOOL}: --pprof-every: writing {} failed: {e} ({}); check the space and permissions of {}. {then}",
                    path.display(),
                    errno_name(&e),
                    self.every.dir.display(),
                );
                self.failed = true;
                return;
            }
            self.written += 1;
        }
    }
}

/// `.NAME.tmp` beside `path`, renamed to `path` once whole.
fn write_atomically(path: &Path, slice: &Slice) -> std::io::Result<()> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let temp = path.with_file_name(format!(".{name}.tmp"));
    let written = (|| {
        let mut out = std::io::BufWriter::new(std::fs::File::create(&temp)?);
        slice.pprof(&mut out).map_err(|e| match e {
            pmc_report::Error::Write { source, .. } => source,
            other => std::io::Error::other(other.to_string()),
        })?;
        out.flush()?;
        std::fs::rename(&temp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// Feeds the records of `reader` (fed bytes so far) to `slicer`, the
/// closed slices to `files`.
fn drain(
    reader: &mut LogReader,
    slicer: &mut Slicer,
    files: &mut Files,
    then: &str,
) -> Result<(), String> {
    loop {
        match reader.read() {
            ReadState::Ok(e) => {
                let closed = slicer.push(&e);
                files.write(closed, then);
            }
            ReadState::RequireData | ReadState::Eof => return Ok(()),
            ReadState::Error(e) => return Err(e.to_string()),
        }
    }
}

/// `-R LOG --pprof-every SECS DIR`: the series of the log, streamed.
pub(super) fn from_log(args: &Args, every: Every, log: &Path) -> Result<(), ExitCode> {
    let mut input = crate::log_input::LogInput::open(log).map_err(|(status, message)| {
        eprintln!("{TOOL}: {message}");
        ExitCode::from(status)
    })?;
    let mut options = profile_options(args)?;
    crate::log_input::add_build_ids(&mut options, &input);
    options.recorded_until = std::fs::metadata(log).and_then(|m| m.modified()).ok();
    let mut slicer = Slicer::new(every.every_ns, options);
    let mut files = Files::new(every);
    let mut losses = Losses::default();
    let then = "No more profiles are written.";
    let mut damaged = None;
    for event in &mut input {
        match event {
            Ok(e) => {
                losses.add(&e.record);
                let closed = slicer.push(&e);
                files.write(closed, then);
            }
            Err(e) => {
                damaged = Some(e.to_string());
                break;
            }
        }
        if files.failed {
            return Err(ExitCode::from(EX_IOERR));
        }
    }
    if let Some(e) = damaged {
        eprintln!(
            "{TOOL}: warning: {}: {e}; the profiles hold the records before it",
            log.display()
        );
    }
    files.write(slicer.finish(), then);
    losses.warn(None);
    report_late(&slicer);
    if files.failed {
        return Err(ExitCode::from(EX_IOERR));
    }
    if files.written == 0 {
        eprintln!(
            "{TOOL}: warning: {}: no samples, so no profiles were written",
            log.display()
        );
    }
    Ok(())
}

fn report_late(slicer: &Slicer) {
    let late = slicer.late_samples();
    if late > 0 {
        eprintln!(
            "{TOOL}: --pprof-every: {late} samples reached the log after their interval's profile was written; each is in the oldest interval still open"
        );
    }
}

/// The bytes the log's writer wrote since the last take.
#[derive(Clone, Default)]
pub(super) struct Tap(Arc<Mutex<Vec<u8>>>);

impl Tap {
    fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// A log destination that writes to `inner` and keeps a copy of what
    /// `inner` took for the slicer.
    pub(super) fn tee<W: Write + Send + 'static>(&self, inner: W) -> Tee<W> {
        Tee {
            inner,
            tap: self.clone(),
        }
    }
}

/// [`Tap::tee`]'s writer.
pub(super) struct Tee<W> {
    inner: W,
    tap: Tap,
}

impl<W: Write> Write for Tee<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.tap
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// A live run's series: a thread that slices the log as it is written.
pub(super) struct LiveSeries {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<bool>,
}

/// How often the thread flushes the log and reads what was written.
const POLL: Duration = Duration::from_millis(100);

impl LiveSeries {
    /// Starts slicing what `tap` receives. `log_out`: the -O log, which
    /// keeps every sample whatever happens to the profiles.
    pub(super) fn start(
        args: &Args,
        every: Every,
        tap: Tap,
        log_out: Option<&Path>,
    ) -> Result<LiveSeries, ExitCode> {
        let options = profile_options(args)?;
        let then = match log_out {
            Some(log) => format!(
                "The run goes on and {} keeps every sample: `pmcstat -R {} --pprof-every {} {}` writes the series again.",
                log.display(),
                log.display(),
                every.secs,
                every.dir.display()
            ),
            None => {
                "The run goes on without profiles; give -O FILE to keep the log as well.".into()
            }
        };
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::Builder::new()
            .name("pprof-every".into())
            .spawn(move || {
                let mut slicer = Slicer::new(every.every_ns, options);
                let mut files = Files::new(every);
                let mut reader = LogReader::from_memory();
                let mut broken = false;
                loop {
                    let last = stopped.load(Ordering::Acquire);
                    if !last {
                        // What the owner has drained reaches the tee.
                        let _ = pmc::global::log::flush_logfile();
                    }
                    reader.feed(&tap.take());
                    if !broken && let Err(e) = drain(&mut reader, &mut slicer, &mut files, &then) {
                        eprintln!("{TOOL}: --pprof-every: reading the log as it was written: {e}; no more profiles are written");
                        broken = true;
                    }
                    if last {
                        break;
                    }
                    std::thread::sleep(POLL);
                }
                files.write(slicer.finish(), &then);
                report_late(&slicer);
                files.failed || broken
            })
            .map_err(|e| {
                eprintln!("{TOOL}: --pprof-every: cannot start its thread: {e}");
                ExitCode::from(crate::sysexits::EX_OSERR)
            })?;
        Ok(LiveSeries { stop, thread })
    }

    /// Once the log is closed: slices the rest, writes the last profiles;
    /// returns whether a profile could not be written. (The run's losses
    /// are the log writer's counts, or the log's read back: not these.)
    pub(super) fn finish(self) -> bool {
        self.stop.store(true, Ordering::Release);
        self.thread.join().unwrap_or(true)
    }
}

/// The symbolic name of an I/O error's errno (`EISDIR`): its text already
/// carries the number.
fn errno_name(e: &std::io::Error) -> String {
    e.raw_os_error().map_or_else(
        || "no errno".into(),
        |n| format!("{:?}", nix::errno::Errno::from_raw(n)),
    )
}
