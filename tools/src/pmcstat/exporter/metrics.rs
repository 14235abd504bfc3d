//! What `/metrics` says: the counting PMCs read at the scrape, encoded by
//! the Prometheus project's `prometheus-client` in the OpenMetrics text
//! format.
//!
//! Families (each series labelled by [`SeriesLabels`]):
//! - `pmc_events_total`: the count, scaled as `read()` scales it;
//! - `pmc_enabled_seconds_total`, `pmc_running_seconds_total`: the time
//!   the PMC was enabled and on the hardware (running < enabled: it was
//!   multiplexed, and the count is extrapolated);
//! - `pmc_up`: 1 when the PMC read, 0 when it did not (no count then);
//! - `pmc_lost_samples_total` (no labels): samples the log lost.

use std::sync::{Arc, Mutex};

use pmc::Reading;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeCounterValue, EncodeLabel, EncodeLabelSet, EncodeMetric,
    LabelSetEncoder,
};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::{Registry, Unit};

use crate::pmcstat::counting::{self, Pmcs};

/// The labels of one series. Labels without a value are left out (a
/// system PMC has no pid, a process PMC no cpu). `cgroup` is the slot
/// `--cgroup` fills.
#[derive(Clone, Debug, Default, PartialEq)]
pub(in crate::pmcstat) struct SeriesLabels {
    /// The specifier as given (`instructions,usr`).
    pub(in crate::pmcstat) event: String,
    /// hwpmc's mode: `SC` (system counting, `-s`) or `TC` (process, `-p`).
    pub(in crate::pmcstat) mode: &'static str,
    pub(in crate::pmcstat) cpu: Option<u32>,
    /// The target's process id; the ids, comma-separated, where one PMC
    /// counts several processes of `-t` (their sum).
    pub(in crate::pmcstat) pid: Option<String>,
    /// The target's name (the command's, or `comm` of the processes of -t).
    pub(in crate::pmcstat) command: Option<String>,
    pub(in crate::pmcstat) cgroup: Option<String>,
}

impl EncodeLabelSet for SeriesLabels {
    fn encode(&self, encoder: &mut LabelSetEncoder<'_>) -> Result<(), std::fmt::Error> {
        ("event", self.event.as_str()).encode(encoder.encode_label())?;
        ("mode", self.mode).encode(encoder.encode_label())?;
        let cpu = self.cpu.map(|c| c.to_string());
        let optional = [
            ("cpu", cpu.as_deref()),
            ("pid", self.pid.as_deref()),
            ("command", self.command.as_deref()),
            ("cgroup", self.cgroup.as_deref()),
        ];
        for (key, value) in optional {
            if let Some(value) = value {
                (key, value).encode(encoder.encode_label())?;
            }
        }
        Ok(())
    }
}

/// One counting specifier as the exporter reads it: its labels less the
/// CPU, and its PMCs, shared with the main thread.
pub(in crate::pmcstat) struct Source {
    pub(in crate::pmcstat) labels: SeriesLabels,
    pub(in crate::pmcstat) pmcs: Arc<Mutex<Pmcs>>,
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Source")
            .field("labels", &self.labels)
            .finish_non_exhaustive()
    }
}

/// Everything one scrape read: each series with its reading (`None`: the
/// read failed, e.g. a PMC enabled but never scheduled), and the log's
/// lost samples.
#[derive(Debug, Default)]
pub(in crate::pmcstat) struct Observed {
    pub(in crate::pmcstat) series: Vec<(SeriesLabels, Option<Reading>)>,
    pub(in crate::pmcstat) lost_samples: u64,
}

impl Observed {
    /// Reads every PMC of `sources`, one specifier's lock at a time, held
    /// only for its reads (the -w lines wait for no more than that).
    fn read(sources: &[Source]) -> Observed {
        let mut series = Vec::new();
        for source in sources {
            match &mut *counting::lock(&source.pmcs) {
                Pmcs::Process(p) => series.push((source.labels.clone(), p.read_detailed().ok())),
                Pmcs::System(per_cpu) => {
                    for (cpu, p) in per_cpu.pmcs() {
                        let labels = SeriesLabels {
                            cpu: Some(cpu),
                            ..source.labels.clone()
                        };
                        series.push((labels, p.read_detailed().ok()));
                    }
                }
            }
        }
        Observed {
            series,
            lost_samples: pmc::global::log::stats().1,
        }
    }

    fn encode_families(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let counted = || {
            self.series
                .iter()
                .filter_map(|(l, r)| Some((l, r.as_ref()?)))
        };
        let seconds = |ns: u64| ns as f64 / 1e9;

        counter_family(
            &mut encoder,
            "pmc_events",
            "Events counted by the PMC, scaled to the enabled time as read() scales them",
            None,
            counted().map(|(labels, r)| (labels, r.value)),
        )?;
        counter_family(
            &mut encoder,
            "pmc_enabled",
            "Time the PMC was enabled",
            Some(&Unit::Seconds),
            counted().map(|(labels, r)| (labels, seconds(r.time_enabled))),
        )?;
        counter_family(
            &mut encoder,
            "pmc_running",
            "Time the PMC was on the hardware (less than enabled: multiplexed, the count extrapolated)",
            Some(&Unit::Seconds),
            counted().map(|(labels, r)| (labels, seconds(r.time_running))),
        )?;
        let mut family = encoder.encode_descriptor(
            "pmc_up",
            "1 when the PMC was read at this scrape, 0 when it could not be (never scheduled, or gone)",
            None,
            prometheus_client::metrics::MetricType::Gauge,
        )?;
        for (labels, reading) in &self.series {
            ConstGauge::new(i64::from(reading.is_some())).encode(family.encode_family(labels)?)?;
        }
        let family = encoder.encode_descriptor(
            "pmc_lost_samples",
            "Samples the log lost (ring overflows), 0 without sampling PMCs",
            None,
            prometheus_client::metrics::MetricType::Counter,
        )?;
        ConstCounter::new(self.lost_samples).encode(family)
    }
}

/// A counter family: one series per (labels, value).
fn counter_family<'a, N: EncodeCounterValue>(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    series: impl Iterator<Item = (&'a SeriesLabels, N)>,
) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(
        name,
        help,
        unit,
        prometheus_client::metrics::MetricType::Counter,
    )?;
    for (labels, value) in series {
        ConstCounter::new(value).encode(family.encode_family(labels)?)?;
    }
    Ok(())
}

impl Collector for Observed {
    fn encode(&self, encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        self.encode_families(encoder)
    }
}

/// The live collector: reads the PMCs at each scrape.
#[derive(Debug)]
struct Live(Vec<Source>);

impl Collector for Live {
    fn encode(&self, encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        Observed::read(&self.0).encode_families(encoder)
    }
}

/// The registry a scrape encodes: the PMCs of `sources`, read then.
pub(in crate::pmcstat) fn registry(sources: Vec<Source>) -> Registry {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Live(sources)));
    registry
}

/// The two text formats a scrape can ask for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(in crate::pmcstat) enum Format {
    /// OpenMetrics 1.0 (what Prometheus asks for first), ending `# EOF`.
    OpenMetrics,
    /// Prometheus's own text format 0.0.4, for clients that do not ask
    /// for OpenMetrics (curl, `promtool check metrics`).
    PrometheusText,
}

impl Format {
    pub(in crate::pmcstat) fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::PrometheusText => prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
        }
    }
}

/// One scrape's body in `format`.
pub(in crate::pmcstat) fn scrape(
    registry: &Registry,
    format: Format,
) -> Result<String, std::fmt::Error> {
    let mut body = String::new();
    match format {
        Format::OpenMetrics => prometheus_client::encoding::text::encode(&mut body, registry)?,
        Format::PrometheusText => {
            prometheus_client::encoding::prometheus_text::encode(&mut body, registry)?
        }
    }
    Ok(body)
}

#[cfg(test)]
mod tests;
