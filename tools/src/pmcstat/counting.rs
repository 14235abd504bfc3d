//! The counting PMCs (`-p`, `-s`) and their interval lines.

use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;

use pmc::{PerCpu, Pmc, Reading};

use crate::fail;
use crate::output::{Printer, Sample};

use super::TOOL;

/// A counter and its label.
pub(super) enum Counter {
    Process(String, Box<Pmc>),
    System(String, PerCpu),
}

impl Counter {
    pub(super) fn label(&self) -> &str {
        match self {
            Counter::Process(l, _) | Counter::System(l, _) => l,
        }
    }

    pub(super) fn start(&mut self) -> pmc::Result<()> {
        match self {
            Counter::Process(_, p) => p.start(),
            Counter::System(_, p) => p.start(),
        }
    }

    pub(super) fn stop(&mut self) -> pmc::Result<()> {
        match self {
            Counter::Process(_, p) => p.stop(),
            Counter::System(_, p) => p.stop(),
        }
    }

    pub(super) fn read(&mut self) -> pmc::Result<Reading> {
        match self {
            Counter::Process(_, p) => p.read_detailed(),
            Counter::System(_, p) => p.read_detailed(),
        }
    }
}

pub(super) fn sample(
    counters: &mut [Counter],
    last: &mut Vec<Reading>,
    cumulative: bool,
) -> Result<Vec<Sample>, ExitCode> {
    let mut out = Vec::new();
    for (i, c) in counters.iter_mut().enumerate() {
        let r = c.read().map_err(|e| fail(TOOL, &e))?;
        let prev = last.get(i).copied();
        let value = match (cumulative, prev) {
            (false, Some(p)) => r.value.wrapping_sub(p.value),
            _ => r.value,
        };
        out.push(Sample {
            label: c.label().to_string(),
            value,
            raw: r.raw,
            time_enabled: r.time_enabled,
            time_running: r.time_running,
            running_percent: r.running_fraction() * 100.0,
        });
        if last.len() > i {
            last[i] = r;
        } else {
            last.push(r);
        }
    }
    Ok(out)
}

pub(super) fn emit(
    sink: &mut Box<dyn Write>,
    printer: &mut Printer,
    start: Instant,
    samples: &[Sample],
) -> Result<(), ExitCode> {
    let text = printer.interval(start.elapsed().as_secs_f64(), samples);
    sink.write_all(text.as_bytes())
        .and_then(|()| sink.flush())
        .map_err(|e| {
            eprintln!("{TOOL}: writing counts: {e}");
            ExitCode::FAILURE
        })
}
