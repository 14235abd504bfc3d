//! Count output: pmcstat's table as pmcstat.c prints it, and JSON / CSV as
//! extensions; writing it where a closed pipe ends the tool quietly.

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;

use serde::Serialize;

use crate::sysexits;

/// How counts are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// pmcstat's table ([`Table`]).
    Table,
    /// One JSON object per interval, one per line (ours).
    Json,
    /// A CSV header, then one row per counter per interval (ours).
    Csv,
}

/// pmcstat.h `PRINT_HEADER_PREFIX`.
const HEADER_PREFIX: &str = "# ";

/// pmcstat.h `DEFAULT_DISPLAY_HEIGHT`: lines between headers when the
/// output is not a terminal (on one, its height less one).
pub const DEFAULT_DISPLAY_HEIGHT: usize = 256;
/// pmcstat.h `DEFAULT_DISPLAY_WIDTH` ("file virtual width"): the width
/// pmcstat lays its top view out in when the output is not a terminal.
pub const DEFAULT_DISPLAY_WIDTH: usize = 1024;

/// pmcstat.c's event name of a specifier: the specifier up to its first
/// `,`, space or tab (`strcspn(optarg, ", \t")`).
pub fn event_name(spec: &str) -> &str {
    let end = spec.find([',', ' ', '\t']).unwrap_or(spec.len());
    &spec[..end]
}

/// One column of the count table: one per process counting PMC, one per
/// CPU of a system counting PMC (pmcstat.c clones `-s` per CPU), one per
/// cgroup of a system counting PMC restricted to cgroups (`--cgroup`,
/// the CPUs summed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// The event name ([`event_name`]).
    pub name: String,
    /// The CPU of a system-mode column; `None` for process mode.
    pub cpu: Option<u32>,
    /// The cgroup of a system-mode column that sums its CPUs in one
    /// cgroup (`s/CGROUP/NAME`); `None` otherwise.
    pub cgroup: Option<String>,
    /// The counter's width in bits (`pmc_width`).
    pub bits: u32,
}

impl Column {
    /// pmcstat.c main's "compute printout widths": (field width, leading
    /// spaces of the header).
    // pmcstat.c's literal 3.32193, not LOG2_10: the same floor at every width.
    #[allow(clippy::approx_constant)]
    fn layout(&self) -> (usize, usize) {
        // The prefix `p/` or `s/`, and for system mode 2 CPU digits and
        // `/` (or the cgroup and `/`).
        let qualifier = match (&self.cpu, &self.cgroup) {
            (Some(_), _) => 3,
            (None, Some(cgroup)) => cgroup.chars().count() + 1,
            (None, None) => 0,
        };
        let header = self.name.len() + 2 + qualifier;
        let display = (f64::from(self.bits) / 3.32193).floor() as usize + 1;
        if header > display {
            (header, 0)
        } else {
            (display, display - header)
        }
    }
}

/// pmcstat.c's count table: `pmcstat_print_pmcs` for each interval, the
/// final newline at the end.
#[derive(Debug)]
pub struct Table {
    columns: Vec<Column>,
    lines: usize,
}

impl Table {
    /// A table of `columns`, in the order of the specifiers.
    pub fn new(columns: Vec<Column>) -> Table {
        Table { columns, lines: 0 }
    }

    /// One interval (`pmcstat_print_pmcs`): the header before the first
    /// line and again after `height` lines, then a newline and the values
    /// (which the next newline ends). `values` are in column order.
    pub fn print(&mut self, values: &[u64], height: usize) -> String {
        let mut out = String::new();
        self.lines += 1;
        if self.lines > height {
            out.push('\n');
            self.lines = 1;
        }
        if self.lines == 1 {
            out.push_str(&self.header());
        }
        out.push('\n');
        out.push_str(&self.values(values));
        out
    }

    /// `pmcstat_print_headers`: `"# "`, then per column its leading spaces
    /// and `"p/%*s "` or `"s/%02d/%-*s "`.
    pub fn header(&self) -> String {
        let mut out = HEADER_PREFIX.to_string();
        for c in &self.columns {
            let (width, skip) = c.layout();
            out.push_str(&" ".repeat(skip));
            let w = width - skip - 2;
            match (c.cpu, &c.cgroup) {
                (Some(cpu), _) => {
                    let _ = write!(out, "s/{cpu:02}/{:<w$} ", c.name, w = w - 3);
                }
                (None, Some(cgroup)) => {
                    let w = w - cgroup.chars().count() - 1;
                    let _ = write!(out, "s/{cgroup}/{:<w$} ", c.name);
                }
                (None, None) => {
                    let _ = write!(out, "p/{:>w$} ", c.name);
                }
            }
        }
        out
    }

    /// `pmcstat_print_counters`: `"%*ju "` per column, the first one wider
    /// by the header prefix.
    pub fn values(&self, values: &[u64]) -> String {
        let mut out = String::new();
        let mut extra = HEADER_PREFIX.len();
        for (c, v) in self.columns.iter().zip(values) {
            let (width, _) = c.layout();
            let _ = write!(out, "{v:>w$} ", w = width + extra);
            extra = 0;
        }
        out
    }
}

/// Writes `text` to `sink` and flushes it. A closed pipe (EPIPE) ends the
/// tool quietly with [`sysexits::CLOSED_PIPE`]; any other error (`-o
/// /dev/full`: ENOSPC) says what failed and exits `EX_IOERR`.
pub fn write_out(
    tool: &str,
    sink: &mut dyn std::io::Write,
    text: &[u8],
    what: &str,
) -> Result<(), ExitCode> {
    sink.write_all(text)
        .and_then(|()| sink.flush())
        .map_err(|e| io_failure(tool, &e, what))
}

/// The exit status of a failed write of `what`, said on standard error
/// unless the reader went away.
pub fn io_failure(tool: &str, e: &std::io::Error, what: &str) -> ExitCode {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        return ExitCode::from(sysexits::CLOSED_PIPE);
    }
    // Standard error may be the closed pipe itself: no panic over a message.
    let _ = writeln!(std::io::stderr(), "{tool}: writing {what}: {e}");
    ExitCode::from(sysexits::EX_IOERR)
}

/// One counter's value in one interval.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Sample {
    /// `p/SPEC` (process) or `s/SPEC` (system).
    pub label: String,
    /// The (scaled) value: the delta of the interval, or the total with
    /// cumulative output.
    pub value: u64,
    /// The unscaled count behind it.
    pub raw: u64,
    /// Nanoseconds enabled.
    pub time_enabled: u64,
    /// Nanoseconds running on the PMU.
    pub time_running: u64,
    /// Running time over enabled time, in percent (100 unless multiplexed).
    pub running_percent: f64,
}

/// Writes the JSON or CSV rows; the header goes out once.
#[derive(Debug)]
pub struct Printer {
    format: Format,
    header_done: bool,
}

impl Printer {
    /// A printer for `format`.
    pub fn new(format: Format) -> Printer {
        Printer {
            format,
            header_done: false,
        }
    }

    /// Formats one interval's samples (`elapsed` seconds since the start).
    pub fn interval(&mut self, elapsed: f64, samples: &[Sample]) -> String {
        let mut out = String::new();
        match self.format {
            // The table is [`Table`]'s.
            Format::Table => {}
            Format::Json => {
                let line = serde_json::json!({ "elapsed_s": elapsed, "counters": samples });
                let _ = writeln!(out, "{line}");
            }
            Format::Csv => {
                if !self.header_done {
                    out.push_str(
                        "elapsed_s,counter,value,raw,time_enabled_ns,time_running_ns,running_percent\n",
                    );
                }
                for s in samples {
                    let _ = writeln!(
                        out,
                        "{elapsed:.3},{},{},{},{},{},{:.2}",
                        csv_field(&s.label),
                        s.value,
                        s.raw,
                        s.time_enabled,
                        s.time_running,
                        s.running_percent
                    );
                }
            }
        }
        self.header_done = true;
        out
    }
}

/// Quotes a CSV field when it holds a comma or quote (specs often do).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(label: &str, value: u64, pct: f64) -> Sample {
        Sample {
            label: label.into(),
            value,
            raw: value,
            time_enabled: 100,
            time_running: 100,
            running_percent: pct,
        }
    }

    #[test]
    fn event_names_are_cut_at_the_first_comma_space_or_tab() {
        // pmcstat.c: c = strcspn(optarg, ", \t").
        assert_eq!(event_name("task-clock,usr"), "task-clock");
        assert_eq!(event_name("instructions usr"), "instructions");
        assert_eq!(event_name("cycles\tos"), "cycles");
        assert_eq!(event_name("sched:sched_switch"), "sched:sched_switch");
        assert_eq!(event_name(",usr"), "");
        assert_eq!(event_name(""), "");
    }

    /// A cgroup's column (`--cgroup`) is `s/CGROUP/NAME`, laid out as a
    /// CPU's: as wide as its header when that is wider than the counter's
    /// digits, the values right-aligned under it.
    #[test]
    fn a_cgroup_column_is_labelled_with_its_cgroup() {
        let c = |cgroup: &str| Column {
            name: "cpu-clock".into(),
            cpu: None,
            cgroup: Some(cgroup.into()),
            bits: 64,
        };
        // 64 bits: 20 digits; "s/web/cpu-clock" is 15: 5 spaces before it.
        let mut t = Table::new(vec![c("web"), c("system.slice/long-name.service")]);
        let header = format!(
            "# {}s/web/cpu-clock s/system.slice/long-name.service/cpu-clock ",
            " ".repeat(5)
        );
        let line = format!("{:>22} {:>42} ", 7, 8);
        assert_eq!(t.print(&[7, 8], 256), format!("{header}\n{line}"));
    }

    #[test]
    fn the_table_is_pmcstat_c_s_print_formats() {
        let p = |name: &str, bits| Column {
            name: name.into(),
            cpu: None,
            cgroup: None,
            bits,
        };
        let s = |name: &str, cpu, bits| Column {
            name: name.into(),
            cpu: Some(cpu),
            cgroup: None,
            bits,
        };
        // 48 bits: display width floor(48 / 3.32193) + 1 = 15; "p/" + 6
        // letters = 8, so 7 spaces of ev_fieldskip, then "p/%*s ".
        let mut t = Table::new(vec![p("cycles", 48), s("instructions", 0, 48)]);
        let header = format!("# {}p/cycles s/00/instructions ", " ".repeat(7));
        // "%*ju " at 15 + 2, then at the header width 12 + 5.
        let line = format!("{:>17} {:>17} ", 5, 1234);
        assert_eq!(t.print(&[5, 1234], 256), format!("{header}\n{line}"));
        // The next line: only "\n" and the values.
        assert_eq!(t.print(&[6, 7], 256), format!("\n{:>17} {:>17} ", 6, 7));
        // After `height` lines the header comes again (pmcstat_print_pmcs:
        // `if (++linecount > pmcstat_displayheight)` prints "\n" and
        // restarts at 1, and line 1 has the header): lines 1, 3, 5 with
        // height 2, and no header on lines 2 and 4.
        let mut t = Table::new(vec![p("x", 64)]);
        let header = format!("# {}p/x ", " ".repeat(17));
        for (line, value) in (1..=5).zip([1u64, 2, 3, 4, 5]) {
            let expected = match line {
                1 => format!("{header}\n{value:>22} "),
                3 | 5 => format!("\n{header}\n{value:>22} "),
                _ => format!("\n{value:>22} "),
            };
            assert_eq!(t.print(&[value], 2), expected, "line {line}");
        }
        // A CPU of three digits widens its column, as "%02d" does.
        let t = Table::new(vec![s("ab", 123, 64)]);
        assert_eq!(t.header(), format!("# {}s/123/ab ", " ".repeat(13)));
    }

    #[test]
    fn csv_quotes_specs_with_commas() {
        let mut p = Printer::new(Format::Csv);
        let out = p.interval(0.5, &[sample("p/instructions,usr", 42, 100.0)]);
        assert_eq!(
            out,
            "elapsed_s,counter,value,raw,time_enabled_ns,time_running_ns,running_percent\n\
             0.500,\"p/instructions,usr\",42,42,100,100,100.00\n"
        );
    }

    #[test]
    fn json_is_one_object_per_line() {
        let mut p = Printer::new(Format::Json);
        let out = p.interval(1.0, &[sample("s/page-faults", 3, 100.0)]);
        let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(v["counters"][0]["label"], "s/page-faults");
        assert_eq!(v["counters"][0]["value"], 3);
    }
}
