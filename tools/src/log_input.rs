//! What `pmcstat -R` reads: the one place that opens its input (a file, or
//! standard input for `-`) and yields pmclog records from either format —
//! a pmclog, or (on Linux) a perf.data of `perf record`, file or pipe mode,
//! converted record by record (`crate::perf_data`). Streamed: nothing is
//! held beyond what perf's time order needs.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use pmc::log::{LogEvent, LogReader, ReadError};

use crate::profile_args::{log_open_failed, log_parse_failed};

/// "PERFILE2", perf.data's magic, and its other-endian and first-format
/// forms.
const PERF_MAGICS: [&[u8; 8]; 3] = [b"PERFILE2", b"2ELIFREP", b"PERFFILE"];

/// Why reading stopped.
#[derive(Debug)]
pub enum InputError {
    /// The pmclog reader's error.
    Log(ReadError),
    /// The first record of a file that is neither format.
    Neither(ReadError),
    /// The perf.data reader's error.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    Perf(pmc_linux::perf_data::PerfDataError),
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InputError::Log(e) => e.fmt(f),
            InputError::Neither(e) => write!(
                f,
                "not a pmclog ({e}) nor a perf.data (it does not start with perf's magic \"PERFILE2\")"
            ),
            #[cfg(any(target_os = "linux", target_os = "android"))]
            InputError::Perf(e) => write!(f, "perf.data: {e}"),
        }
    }
}

enum Inner {
    Log(LogReader),
    #[cfg(any(target_os = "linux", target_os = "android"))]
    Perf(Box<crate::perf_data::Converter>),
}

/// `-R`'s input: pmclog records, read or converted.
pub struct LogInput {
    inner: Inner,
    records: u64,
}

impl std::fmt::Debug for LogInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogInput")
            .field("perf_data", &self.is_perf_data())
            .field("records", &self.records)
            .finish()
    }
}

/// Reads up to 8 bytes (fewer only at the end of the input).
fn prefix(r: &mut dyn Read) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; 8];
    let mut n = 0;
    while n < 8 {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(n);
    Ok(buf)
}

impl LogInput {
    /// Opens `path` (`-`: standard input) and tells its format by its first
    /// bytes. A failure is pmcstat's exit status and message: EX_OSERR for
    /// a file that cannot be opened, EX_DATAERR for a perf.data that
    /// cannot be read.
    pub fn open(path: &Path) -> Result<LogInput, (u8, String)> {
        let stdin = path.as_os_str() == "-";
        let mut file = if stdin {
            None
        } else {
            Some(std::fs::File::open(path).map_err(|e| log_open_failed(path, &e))?)
        };
        let head = match &mut file {
            Some(f) => prefix(f),
            None => prefix(&mut std::io::stdin().lock()),
        }
        .map_err(|e| log_open_failed(path, &e))?;
        if PERF_MAGICS.iter().any(|m| head[..] == m[..]) {
            return Self::open_perf_data(path, file, head);
        }
        let rest: Box<dyn Read + Send> = match file {
            Some(f) => Box::new(f),
            None => Box::new(std::io::stdin()),
        };
        let reader =
            std::io::BufReader::with_capacity(1 << 16, std::io::Cursor::new(head).chain(rest));
        Ok(LogInput {
            inner: Inner::Log(LogReader::from_reader(reader)),
            records: 0,
        })
    }

    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn open_perf_data(
        path: &Path,
        file: Option<std::fs::File>,
        head: Vec<u8>,
    ) -> Result<LogInput, (u8, String)> {
        use pmc_linux::perf_data::PerfData;
        let written = file
            .as_ref()
            .and_then(|f| f.metadata().ok()?.modified().ok())
            .unwrap_or_else(std::time::SystemTime::now);
        let data = match file {
            Some(f) => PerfData::open(f),
            None => PerfData::from_stream(std::io::Cursor::new(head).chain(std::io::stdin())),
        }
        .map_err(|e| {
            log_parse_failed(
                path,
                &format!(
                    "not a pmclog (it starts with perf's magic), nor a readable perf.data: {e}"
                ),
            )
        })?;
        let skipped = data.features().skipped.clone();
        for note in skipped {
            eprintln!("pmcstat: warning: {}: perf.data {note}", path.display());
        }
        Ok(LogInput {
            inner: Inner::Perf(Box::new(crate::perf_data::Converter::new(data, written))),
            records: 0,
        })
    }

    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    fn open_perf_data(
        path: &Path,
        _file: Option<std::fs::File>,
        _head: Vec<u8>,
    ) -> Result<LogInput, (u8, String)> {
        Err(log_parse_failed(
            path,
            &"a perf.data (perf record's format), not a pmclog: pmcstat reads perf.data on Linux only",
        ))
    }

    /// Whether the input is a perf.data.
    pub fn is_perf_data(&self) -> bool {
        !matches!(self.inner, Inner::Log(_))
    }

    /// The input's offset just past the last record read.
    pub fn offset(&self) -> u64 {
        match &self.inner {
            Inner::Log(r) => r.offset(),
            #[cfg(any(target_os = "linux", target_os = "android"))]
            Inner::Perf(c) => c.offset(),
        }
    }

    /// The build ids a perf.data names, by object path (none for a pmclog).
    pub fn build_ids(&self) -> HashMap<String, Vec<u8>> {
        match &self.inner {
            Inner::Log(_) => HashMap::new(),
            #[cfg(any(target_os = "linux", target_os = "android"))]
            Inner::Perf(c) => c.build_ids(),
        }
    }

    /// The CPU a converted log's INITIALIZE names (`-O`); `None` for a
    /// pmclog, whose own INITIALIZE is copied.
    pub fn cpu(&self) -> Option<pmc::log::cpu::CpuIdentity> {
        match &self.inner {
            Inner::Log(_) => None,
            #[cfg(any(target_os = "linux", target_os = "android"))]
            Inner::Perf(c) => Some(c.cpu()),
        }
    }
}

impl Iterator for LogInput {
    type Item = Result<LogEvent, InputError>;

    fn next(&mut self) -> Option<Self::Item> {
        let first = self.records == 0;
        let item = match &mut self.inner {
            Inner::Log(r) => r.next().map(|r| {
                r.map_err(|e| match e {
                    ReadError::BadMagic { offset: 0, .. } if first => InputError::Neither(e),
                    e => InputError::Log(e),
                })
            }),
            #[cfg(any(target_os = "linux", target_os = "android"))]
            Inner::Perf(c) => c.next().map(|r| r.map_err(InputError::Perf)),
        };
        if matches!(item, Some(Ok(_))) {
            self.records += 1;
        }
        item
    }
}

/// The build ids of a perf.data for the report, which identifies objects
/// by content where it knows their ids.
pub fn add_build_ids(options: &mut pmc_report::ProfileOptions, input: &LogInput) {
    options.build_ids.extend(input.build_ids());
}
