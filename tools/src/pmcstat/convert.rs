//! `-R FILE -O LOG`: the records `-R` reads written as a pmclog — a
//! perf.data converted (`crate::perf_data`), a pmclog copied — which `-R
//! LOG` then reads back as it would have read FILE.

use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use pmc::log::cpu::CpuIdentity;
use pmc::log::{LogRecord, LogWriter};

use crate::log_input::LogInput;
use crate::profile_args::{LogEnd, empty_log, log_parse_failed};

use super::TOOL;
use super::reports::Losses;

/// Writes `input`'s records to `out`. The output is created only once the
/// input's first record is read (a file that is no log leaves `out`
/// alone). A log cut short is converted up to the cut, without CLOSELOG,
/// so that reading the result warns the same way.
pub(super) fn write_log(input: &Path, out: &Path) -> Result<(), ExitCode> {
    let fail = |(status, message): (u8, String)| {
        eprintln!("{TOOL}: {message}");
        ExitCode::from(status)
    };
    let mut reader = LogInput::open(input).map_err(fail)?;
    let first = match reader.next() {
        None => {
            eprintln!("{TOOL}: {}", empty_log(input));
            return Err(ExitCode::FAILURE);
        }
        Some(Err(e)) => return Err(fail(log_parse_failed(input, &e))),
        Some(Ok(first)) => first,
    };
    // The CPU INITIALIZE names: the input's own.
    let cpu = match &first.record {
        LogRecord::Initialize { arch, cpuid, .. } => CpuIdentity {
            cputype: *arch,
            cpuid: cpuid.clone(),
        },
        _ => reader.cpu().unwrap_or_else(CpuIdentity::unknown),
    };
    let write_failed = |e: &dyn std::fmt::Display| {
        eprintln!("{TOOL}: cannot write {}: {e}", out.display());
        ExitCode::from(crate::sysexits::EX_IOERR)
    };
    let file = crate::destination::create(out).map_err(|e| write_failed(&e))?;
    let mut writer = LogWriter::new(std::io::BufWriter::with_capacity(1 << 16, file), &cpu)
        .map_err(|e| write_failed(&e))?;
    let mut end = LogEnd::default();
    let mut losses = Losses::default();
    for event in std::iter::once(Ok(first)).chain(&mut reader) {
        match event {
            Ok(e) => {
                end.saw(&e.record);
                losses.add(&e.record);
                // The writer writes its own INITIALIZE, and CLOSELOG on close.
                if matches!(e.record, LogRecord::Initialize { .. } | LogRecord::Closelog) {
                    continue;
                }
                writer
                    .write(&e.record, e.timestamp)
                    .map_err(|e| write_failed(&e))?;
            }
            Err(e) => {
                if let Err(e) = end.ended_inside_a_record(e) {
                    eprintln!(
                        "{TOOL}: warning: {}: record {}: {e}; converting the records before it",
                        input.display(),
                        end.records + 1
                    );
                    end.damaged = true;
                }
                break;
            }
        }
    }
    if end.closed {
        writer.close().map_err(|e| write_failed(&e))?;
    } else {
        writer.flush().map_err(|e| write_failed(&e))?;
    }
    writer.into_inner().flush().map_err(|e| write_failed(&e))?;
    losses.warn(None);
    end.warn_if_cut_short(input);
    Ok(())
}
