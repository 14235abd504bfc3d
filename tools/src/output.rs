//! Count output: pmcstat's table, and JSON / CSV as extensions.

use std::fmt::Write as _;

use serde::Serialize;

/// How counts are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// pmcstat's table: a `#` header of `p/SPEC`/`s/SPEC` columns, then one
    /// line of values per interval.
    Table,
    /// One JSON object per interval, one per line.
    Json,
    /// A CSV header, then one row per counter per interval.
    Csv,
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

/// Writes rows in one format; the header goes out once.
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
            Format::Table => {
                let widths: Vec<usize> = samples.iter().map(|s| s.label.len().max(12)).collect();
                if !self.header_done {
                    out.push('#');
                    for (s, w) in samples.iter().zip(&widths) {
                        let _ = write!(out, " {:>w$}", s.label, w = w);
                    }
                    out.push('\n');
                }
                out.push(' ');
                for (s, w) in samples.iter().zip(&widths) {
                    let _ = write!(out, " {:>w$}", s.value, w = w);
                }
                let scaled: Vec<String> = samples
                    .iter()
                    .filter(|s| s.running_percent < 100.0)
                    .map(|s| format!("{} ran {:.1}%", s.label, s.running_percent))
                    .collect();
                if !scaled.is_empty() {
                    let _ = write!(out, "  # scaled: {}", scaled.join(", "));
                }
                out.push('\n');
            }
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
    fn table_has_a_header_once_and_notes_scaling() {
        let mut p = Printer::new(Format::Table);
        let a = p.interval(1.0, &[sample("p/instructions,usr", 42, 100.0)]);
        assert_eq!(a, "# p/instructions,usr\n                  42\n");
        let b = p.interval(2.0, &[sample("p/instructions,usr", 7, 50.0)]);
        assert_eq!(
            b,
            "                   7  # scaled: p/instructions,usr ran 50.0%\n"
        );
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
