//! The counting PMCs (`-p`, `-s`) and their interval lines: pmcstat.c's
//! table (`pmcstat_print_pmcs`), or our JSON / CSV.

use std::io::Write;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use pmc::{PerCpu, Pmc, Reading};

use crate::output::{self, Column, Printer, Sample, Table};
use crate::sysexits::EX_OSERR;

use super::TOOL;

/// A counting PMC: one per `-p`, one `PerCpu` per `-s` (a column per CPU
/// in the table, as pmcstat.c's clones).
pub(super) struct Counter {
    /// `p/SPEC` or `s/SPEC`: the JSON / CSV label.
    label: String,
    /// The event name of the table's header.
    name: String,
    /// The specifier as given (or as counted, `,usr` added): the
    /// exporter's `event` label.
    spec: String,
    /// `-C` in effect for this specifier: totals instead of deltas.
    cumulative: bool,
    /// Shared with the exporter's thread (`--listen`), which reads them at
    /// each scrape; each holder locks only for its reads.
    pmcs: Arc<Mutex<Pmcs>>,
    /// The cgroup a system counter counts in (`--cgroup`, as given): one
    /// column summing its CPUs. The exporter's `cgroup` label.
    pub(super) cgroup: Option<String>,
    /// The values of the last table line, per column (`ev_saved`).
    saved: Vec<u64>,
    /// The last JSON / CSV reading.
    last: Option<Reading>,
}

pub(super) enum Pmcs {
    Process(Box<Pmc>),
    System(PerCpu),
}

/// A lock of the PMCs that outlives a panic of the other holder (the
/// PMCs themselves stay consistent: every call on them is whole).
pub(super) fn lock(pmcs: &Mutex<Pmcs>) -> MutexGuard<'_, Pmcs> {
    pmcs.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Counter {
    pub(super) fn process(spec: &str, cumulative: bool, pmc: Pmc) -> Counter {
        Counter::new(
            format!("p/{spec}"),
            spec,
            cumulative,
            Pmcs::Process(Box::new(pmc)),
        )
    }

    pub(super) fn system(spec: &str, cumulative: bool, pmcs: PerCpu) -> Counter {
        Counter::new(format!("s/{spec}"), spec, cumulative, Pmcs::System(pmcs))
    }

    /// A system counter restricted to `cgroup` (as given on the command
    /// line): one column, the sum of its CPUs, as `perf stat -a -G`.
    pub(super) fn system_in_cgroup(
        spec: &str,
        cgroup: &str,
        cumulative: bool,
        pmcs: PerCpu,
    ) -> Counter {
        Counter {
            cgroup: Some(cgroup.to_string()),
            ..Counter::new(
                format!("s/{spec}@{cgroup}"),
                spec,
                cumulative,
                Pmcs::System(pmcs),
            )
        }
    }

    fn new(label: String, spec: &str, cumulative: bool, pmcs: Pmcs) -> Counter {
        Counter {
            label,
            name: output::event_name(spec).to_string(),
            spec: spec.to_string(),
            cumulative,
            pmcs: Arc::new(Mutex::new(pmcs)),
            cgroup: None,
            saved: Vec::new(),
            last: None,
        }
    }

    /// Runs `f` on the process PMC, if this counter is one.
    pub(super) fn with_process_pmc<T>(&self, f: impl FnOnce(&mut Pmc) -> T) -> Option<T> {
        match &mut *lock(&self.pmcs) {
            Pmcs::Process(p) => Some(f(p)),
            Pmcs::System(_) => None,
        }
    }

    /// The specifier counted (the exporter's `event` label).
    pub(super) fn spec(&self) -> &str {
        &self.spec
    }

    /// The PMCs, shared (the exporter reads them at each scrape).
    pub(super) fn shared_pmcs(&self) -> Arc<Mutex<Pmcs>> {
        Arc::clone(&self.pmcs)
    }

    pub(super) fn start(&mut self) -> pmc::Result<()> {
        match &mut *lock(&self.pmcs) {
            Pmcs::Process(p) => p.start(),
            Pmcs::System(p) => p.start(),
        }
    }

    pub(super) fn stop(&mut self) -> pmc::Result<()> {
        match &mut *lock(&self.pmcs) {
            Pmcs::Process(p) => p.stop(),
            Pmcs::System(p) => p.stop(),
        }
    }

    /// The table's columns of this PMC.
    fn columns(&mut self) -> Vec<Column> {
        let name = self.name.clone();
        match (&mut *lock(&self.pmcs), &self.cgroup) {
            (Pmcs::Process(p), _) => vec![Column {
                name,
                cpu: None,
                cgroup: None,
                bits: p.width(),
            }],
            (Pmcs::System(per_cpu), Some(cgroup)) => vec![Column {
                name,
                cpu: None,
                cgroup: Some(cgroup.clone()),
                bits: per_cpu.pmcs().next().map_or(64, |(_, p)| p.width()),
            }],
            (Pmcs::System(per_cpu), None) => per_cpu
                .pmcs()
                .map(|(cpu, p)| Column {
                    name: name.clone(),
                    cpu: Some(cpu),
                    cgroup: None,
                    bits: p.width(),
                })
                .collect(),
        }
    }

    /// Each column's value now.
    fn read_columns(&mut self) -> pmc::Result<Vec<u64>> {
        match (&mut *lock(&self.pmcs), &self.cgroup) {
            (Pmcs::Process(p), _) => Ok(vec![p.read()?]),
            (Pmcs::System(per_cpu), Some(_)) => Ok(vec![per_cpu.read()?]),
            (Pmcs::System(per_cpu), None) => per_cpu.pmcs().map(|(_, p)| p.read()).collect(),
        }
    }
}

/// pmcstat.c's table of the counting PMCs.
pub(super) fn table(counters: &mut [Counter]) -> Table {
    Table::new(counters.iter_mut().flat_map(Counter::columns).collect())
}

/// One table line's values: each column's count since the last line, or
/// since the start where `-C` was in effect (pmcstat_print_counters:
/// `ev_cumulative ? value : value - ev_saved`).
pub(super) fn table_values(counters: &mut [Counter]) -> Result<Vec<u64>, ExitCode> {
    let mut out = Vec::new();
    for c in counters {
        // pmcstat.c: err(EX_OSERR, "ERROR: Cannot read pmc \"%s\"", …).
        let now = c
            .read_columns()
            .map_err(|e| crate::fail_as(TOOL, &e, EX_OSERR))?;
        c.saved.resize(now.len(), 0);
        for (value, saved) in now.into_iter().zip(c.saved.iter_mut()) {
            if c.cumulative {
                out.push(value);
            } else {
                out.push(value.wrapping_sub(*saved));
                *saved = value;
            }
        }
    }
    Ok(out)
}

/// One JSON / CSV interval: each counter's delta, or its total where `-C`
/// was in effect or `total` is asked for.
pub(super) fn sample(counters: &mut [Counter], total: bool) -> Result<Vec<Sample>, ExitCode> {
    let mut out = Vec::new();
    for c in counters.iter_mut() {
        let r = match &mut *lock(&c.pmcs) {
            Pmcs::Process(p) => p.read_detailed(),
            Pmcs::System(p) => p.read_detailed(),
        }
        .map_err(|e| crate::fail_as(TOOL, &e, EX_OSERR))?;
        let value = match (c.cumulative || total, c.last) {
            (false, Some(p)) => r.value.wrapping_sub(p.value),
            _ => r.value,
        };
        out.push(Sample {
            label: c.label.clone(),
            value,
            raw: r.raw,
            time_enabled: r.time_enabled,
            time_running: r.time_running,
            running_percent: r.running_fraction() * 100.0,
        });
        c.last = Some(r);
    }
    Ok(out)
}

/// Where the counts go and in which form.
pub(super) struct CountOutput {
    pub(super) sink: Box<dyn Write>,
    /// pmcstat.c's `isatty(fileno(args.pa_printfile))`: the header comes
    /// back every screenful.
    pub(super) terminal: bool,
    /// `-o` given (pmcstat.c's FLAG_DO_PRINT): no final newline.
    pub(super) to_file: bool,
    pub(super) form: Form,
}

pub(super) enum Form {
    Table(Table),
    Lines(Printer),
}

impl CountOutput {
    /// One interval's line (`pmcstat_print_pmcs` at a timer tick or the
    /// target's exit), or a JSON / CSV interval.
    pub(super) fn interval(
        &mut self,
        counters: &mut [Counter],
        start: Instant,
        total: bool,
    ) -> Result<(), ExitCode> {
        let text = match &mut self.form {
            Form::Table(table) => {
                let values = table_values(counters)?;
                table.print(&values, display_height(self.terminal))
            }
            Form::Lines(printer) => {
                let samples = sample(counters, total)?;
                printer.interval(start.elapsed().as_secs_f64(), &samples)
            }
        };
        output::write_out(TOOL, &mut self.sink, text.as_bytes(), "counts")
    }

    /// The end of the table: pmcstat.c's "final newline", printed when
    /// the run finishes unless `-o` named the file.
    pub(super) fn finish(&mut self) -> Result<(), ExitCode> {
        if matches!(self.form, Form::Table(_)) && !self.to_file {
            output::write_out(TOOL, &mut self.sink, b"\n", "counts")?;
        }
        Ok(())
    }
}

/// Lines between headers: the terminal's height less one (pmcstat.c reads
/// it at start and on SIGWINCH; read here at each line), or
/// `DEFAULT_DISPLAY_HEIGHT`.
fn display_height(terminal: bool) -> usize {
    if terminal && let Ok((_, rows)) = crossterm::terminal::size() {
        return usize::from(rows.max(2)) - 1;
    }
    output::DEFAULT_DISPLAY_HEIGHT
}
