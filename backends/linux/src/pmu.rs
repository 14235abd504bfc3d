//! Dynamic PMUs from sysfs (`/sys/bus/event_source/devices/*`): their
//! `type`, format fields, event aliases, CPUs and capabilities, and the
//! encoding of `pmu/term=value,…/` terms into `config`..`config3`.
//!
//! The sysfs root is a parameter everywhere so that fixture trees can stand
//! in for PMUs a machine does not have.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Where the kernel lists PMUs.
pub const SYSFS_ROOT: &str = "/sys/bus/event_source/devices";

/// The value of a PMU term.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum TermValue {
    /// A bare term: 1 for a format field, or the name of an event alias.
    Flag,
    /// A number.
    Number(u64),
    /// A string (e.g. an alias parameter left as `?`).
    Str(String),
}

/// One `name[=value]` term.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Term {
    /// The term name.
    pub name: String,
    /// Its value.
    pub value: TermValue,
}

impl Term {
    /// A term from its parts.
    pub fn new(name: impl Into<String>, value: TermValue) -> Term {
        Term {
            name: name.into(),
            value,
        }
    }
}

/// A format field: which bits of which config word a term sets, e.g.
/// `config:0-7,32-35` (AMD's split event select).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct FormatField {
    /// The field name (`event`, `umask`, `cmask`, …).
    pub name: String,
    /// The config word: 0 = `config`, 1 = `config1`, 2 = `config2`, 3 = `config3`.
    pub word: usize,
    /// Bit ranges (inclusive), low bits of the value first.
    pub ranges: Vec<(u8, u8)>,
}

impl FormatField {
    /// Parses the contents of a `format/NAME` file.
    pub fn parse(name: &str, text: &str) -> Result<FormatField> {
        let bad = |why: &str| Error::invalid(format!("format field {name} ({})", text.trim()), why);
        let (word, bits) = text.trim().split_once(':').ok_or_else(|| bad("no `:`"))?;
        let word = match word {
            "config" => 0,
            "config1" => 1,
            "config2" => 2,
            "config3" => 3,
            _ => return Err(bad("unknown config word")),
        };
        let mut ranges = Vec::new();
        for part in bits.split(',') {
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (a.trim(), b.trim()),
                None => (part.trim(), part.trim()),
            };
            let lo: u8 = lo.parse().map_err(|_| bad("bad bit number"))?;
            let hi: u8 = hi.parse().map_err(|_| bad("bad bit number"))?;
            if lo > hi || hi > 63 {
                return Err(bad("bit range out of order or beyond 63"));
            }
            ranges.push((lo, hi));
        }
        Ok(FormatField {
            name: name.to_string(),
            word,
            ranges,
        })
    }

    /// The number of value bits the field holds.
    pub fn width(&self) -> u32 {
        self.ranges
            .iter()
            .map(|(lo, hi)| u32::from(hi - lo) + 1)
            .sum()
    }

    /// The largest value that fits.
    pub fn max(&self) -> u64 {
        match self.width() {
            64.. => u64::MAX,
            w => (1u64 << w) - 1,
        }
    }

    /// Spreads `value`'s low bits over the ranges, in order.
    pub fn encode(&self, value: u64) -> Result<u64> {
        if value > self.max() {
            return Err(Error::invalid(
                format!("{}={value:#x}", self.name),
                format!(
                    "the field is {} bits wide (max {:#x})",
                    self.width(),
                    self.max()
                ),
            ));
        }
        let mut out = 0u64;
        let mut v = value;
        for (lo, hi) in &self.ranges {
            let w = u32::from(hi - lo) + 1;
            let mask = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
            out |= (v & mask) << lo;
            v = v.checked_shr(w).unwrap_or(0);
        }
        Ok(out)
    }
}

/// A named event of a PMU (`events/NAME`) with its metadata files.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct EventAlias {
    /// The alias name.
    pub name: String,
    /// The terms it stands for.
    pub terms: Vec<Term>,
    /// `NAME.scale`: multiply counts by this to get `unit`.
    pub scale: Option<f64>,
    /// `NAME.unit` (e.g. `Joules`, `MiB`).
    pub unit: Option<String>,
    /// `NAME.per-pkg`: count once per package.
    pub per_pkg: bool,
    /// `NAME.snapshot`: the value is a snapshot, not a running count.
    pub snapshot: bool,
}

/// The four config words an event encodes into.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Encoded {
    /// `config`, `config1`, `config2`, `config3`.
    pub config: [u64; 4],
}

/// One PMU registered with the kernel.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Pmu {
    /// Its name (`cpu`, `msr`, `cpu_core`, `amd_df`, …).
    pub name: String,
    /// `perf_event_attr.type` for it.
    pub type_id: u32,
    /// Its format fields.
    pub formats: Vec<FormatField>,
    /// Its event aliases.
    pub events: Vec<EventAlias>,
    /// The CPUs it counts on (`cpus` for core PMUs of hybrid machines,
    /// `cpumask` for uncore PMUs), if it says.
    pub cpus: Option<Vec<u32>>,
    /// `caps/*` (`max_precise`, `branches`, `pmu_name`, …).
    pub caps: BTreeMap<String, String>,
    /// `nr_addr_filters`, if present.
    pub nr_addr_filters: Option<u32>,
    /// `perf_event_mux_interval_ms`, if present.
    pub mux_interval_ms: Option<u32>,
    /// Its sysfs directory.
    pub dir: PathBuf,
}

fn read_trim(path: &Path) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The names of the PMUs under `root`, sorted (no files read).
pub fn pmu_names(root: &Path) -> Vec<String> {
    names_in(root)
}

/// Parses `a=b,c,d=0x1` (event alias contents and PMU term lists).
pub fn parse_terms(text: &str) -> Result<Vec<Term>> {
    text.trim()
        .split(',')
        .filter(|t| !t.trim().is_empty())
        .map(|t| {
            let t = t.trim();
            Ok(match t.split_once('=') {
                None => Term::new(t, TermValue::Flag),
                Some((n, v)) => Term::new(n.trim(), parse_value(v.trim())),
            })
        })
        .collect()
}

fn parse_value(v: &str) -> TermValue {
    let n = if let Some(h) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else {
        v.parse().ok()
    };
    n.map_or_else(|| TermValue::Str(v.to_string()), TermValue::Number)
}

impl Pmu {
    /// Reads the PMU in `dir`.
    pub fn read(dir: &Path) -> Result<Pmu> {
        let name = dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        let type_path = dir.join("type");
        let type_id = read_trim(&type_path)
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| Error::File {
                path: type_path.display().to_string(),
                why: "missing or not a number".into(),
                errno: None,
                hint: None,
            })?;
        let formats = names_in(&dir.join("format"))
            .into_iter()
            .filter_map(|f| {
                let text = read_trim(&dir.join("format").join(&f))?;
                FormatField::parse(&f, &text).ok()
            })
            .collect();
        let event_files = names_in(&dir.join("events"));
        let events = event_files
            .iter()
            .filter(|f| !f.contains('.'))
            .filter_map(|e| {
                let base = dir.join("events");
                let text = read_trim(&base.join(e))?;
                let meta = |suffix: &str| read_trim(&base.join(format!("{e}.{suffix}")));
                Some(EventAlias {
                    name: e.clone(),
                    terms: parse_terms(&text).ok()?,
                    scale: meta("scale").and_then(|s| s.parse().ok()),
                    unit: meta("unit"),
                    per_pkg: meta("per-pkg").is_some_and(|v| v == "1"),
                    snapshot: meta("snapshot").is_some_and(|v| v == "1"),
                })
            })
            .collect();
        let cpus = read_trim(&dir.join("cpus"))
            .or_else(|| read_trim(&dir.join("cpumask")))
            .filter(|s| !s.is_empty())
            .and_then(|s| crate::system::parse_cpu_list(&s));
        let caps = names_in(&dir.join("caps"))
            .into_iter()
            .filter_map(|c| Some((c.clone(), read_trim(&dir.join("caps").join(&c))?)))
            .collect();
        Ok(Pmu {
            name,
            type_id,
            formats,
            events,
            cpus,
            caps,
            nr_addr_filters: read_trim(&dir.join("nr_addr_filters")).and_then(|v| v.parse().ok()),
            mux_interval_ms: read_trim(&dir.join("perf_event_mux_interval_ms"))
                .and_then(|v| v.parse().ok()),
            dir: dir.to_path_buf(),
        })
    }

    /// Every PMU under `root` (PMUs whose files cannot be read are skipped).
    pub fn all(root: &Path) -> Vec<Pmu> {
        names_in(root)
            .into_iter()
            .filter_map(|n| Pmu::read(&root.join(n)).ok())
            .collect()
    }

    /// Every PMU of this machine.
    pub fn all_system() -> Vec<Pmu> {
        Pmu::all(Path::new(SYSFS_ROOT))
    }

    /// The PMU called `name` under `root`; the error lists the PMUs there.
    pub fn find(root: &Path, name: &str) -> Result<Pmu> {
        let dir = root.join(name);
        if !name.contains('/') && dir.join("type").exists() {
            return Pmu::read(&dir);
        }
        let present = names_in(root);
        let closest = pmc_suggest::closest(name, present.iter().map(String::as_str), 5);
        Err(Error::NoSuchPmu {
            name: name.to_string(),
            root: root.display().to_string(),
            closest,
            present,
        })
    }

    /// The format field called `name`.
    pub fn format(&self, name: &str) -> Option<&FormatField> {
        self.formats.iter().find(|f| f.name == name)
    }

    /// The event alias called `name`.
    pub fn alias(&self, name: &str) -> Option<&EventAlias> {
        self.events.iter().find(|e| e.name == name)
    }

    /// Encodes terms into the config words: format fields set their bits,
    /// `config`..`config3` set whole words, a bare alias name expands to
    /// its terms (later terms override the alias's fields).
    pub fn encode(&self, terms: &[Term]) -> Result<Encoded> {
        let mut out = Encoded::default();
        self.encode_into(terms, &mut out, 0)?;
        Ok(out)
    }

    fn encode_into(&self, terms: &[Term], out: &mut Encoded, depth: u32) -> Result<()> {
        for t in terms {
            let word = match t.name.as_str() {
                "config" => Some(0),
                "config1" => Some(1),
                "config2" => Some(2),
                "config3" => Some(3),
                _ => None,
            };
            if let Some(w) = word {
                out.config[w] = self.number(t)?;
                continue;
            }
            if let Some(f) = self.format(&t.name) {
                let v = f.encode(self.number(t)?)?;
                let mask = f.encode(f.max())?;
                out.config[f.word] = (out.config[f.word] & !mask) | v;
                continue;
            }
            if let (Some(alias), TermValue::Flag, 0) = (self.alias(&t.name), &t.value, depth) {
                self.encode_into(&alias.terms.clone(), out, depth + 1)?;
                continue;
            }
            let mut valid: Vec<&str> = self.formats.iter().map(|f| f.name.as_str()).collect();
            valid.extend(self.events.iter().map(|e| e.name.as_str()));
            let near = pmc_suggest::closest(&t.name, valid.iter().copied(), 5);
            return Err(Error::invalid(
                format!("{}/{}/", self.name, t.name),
                format!(
                    "not a format field or event of PMU {} (valid: {})",
                    self.name,
                    if near.is_empty() {
                        valid.join(", ")
                    } else {
                        near.join(", ")
                    }
                ),
            ));
        }
        Ok(())
    }

    fn number(&self, t: &Term) -> Result<u64> {
        match &t.value {
            TermValue::Flag => Ok(1),
            TermValue::Number(n) => Ok(*n),
            TermValue::Str(s) if s == "?" => Err(Error::invalid(
                format!("{}/{}/", self.name, t.name),
                "this event takes a parameter: give it as `name=value`",
            )),
            TermValue::Str(s) => Err(Error::invalid(
                format!("{}/{}={s}/", self.name, t.name),
                "expected a number",
            )),
        }
    }

    /// Whether this is a core (CPU) PMU: `cpu`, or one with a `cpus` file,
    /// as perf tells them (`is_sysfs_pmu_core`): the hybrid `cpu_core` and
    /// `cpu_atom`, and Arm's (`armv8_pmuv3`, `armv8_cortex_a57`, …), which
    /// name the CPUs of their core type there. Uncore PMUs have a
    /// `cpumask` instead: the CPU each counter is opened on.
    pub fn is_core(&self) -> bool {
        self.name == "cpu" || self.dir.join("cpus").exists()
    }
}

/// The core PMU's `rdpmc` file under `root` (`cpu`, else the hybrid
/// `cpu_core`, `cpu_atom`): that PMU's name and the setting (0: user-space
/// `rdpmc` disabled, 1: allowed for processes with a perf mmap, 2: for
/// every process). `None` without a core PMU.
pub fn rdpmc_setting(root: &Path) -> Option<(String, String)> {
    ["cpu", "cpu_core", "cpu_atom"].iter().find_map(|p| {
        let v = fs::read_to_string(root.join(p).join("rdpmc")).ok()?;
        Some((p.to_string(), v.trim().to_string()))
    })
}

/// The core PMUs under `root`: several on hybrid machines, one (`cpu`)
/// elsewhere, none without a hardware PMU.
pub fn core_pmus(root: &Path) -> Vec<Pmu> {
    Pmu::all(root).into_iter().filter(Pmu::is_core).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_format_fields_spread_value_bits() {
        let f = FormatField::parse("event", "config:0-7,32-35").unwrap();
        assert_eq!(f.width(), 12);
        assert_eq!(f.encode(0x1c7).unwrap(), 0x1_0000_00c7);
        assert_eq!(f.encode(0xc0).unwrap(), 0xc0);
        assert!(f.encode(0x1000).is_err());
        let single = FormatField::parse("edge", "config:18").unwrap();
        assert_eq!(single.encode(1).unwrap(), 1 << 18);
        let whole = FormatField::parse("filter", "config1:0-63").unwrap();
        assert_eq!(whole.word, 1);
        assert_eq!(whole.encode(u64::MAX).unwrap(), u64::MAX);
        assert!(FormatField::parse("x", "config9:0").is_err());
        assert!(FormatField::parse("x", "config:7-3").is_err());
        assert!(FormatField::parse("x", "config:64").is_err());
    }

    #[test]
    fn rdpmc_setting_is_the_core_pmus_file() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        assert_eq!(
            rdpmc_setting(&fixtures.join("sysfs-intel-icx")),
            Some(("cpu".to_string(), "1".to_string()))
        );
        // No core PMU there (a tracefs tree): no setting.
        assert_eq!(rdpmc_setting(&fixtures.join("tracefs")), None);
    }

    #[test]
    fn terms_parse_numbers_and_flags() {
        assert_eq!(
            parse_terms("event=0xc0,umask=1,edge,name=x").unwrap(),
            vec![
                Term::new("event", TermValue::Number(0xc0)),
                Term::new("umask", TermValue::Number(1)),
                Term::new("edge", TermValue::Flag),
                Term::new("name", TermValue::Str("x".into())),
            ]
        );
    }
}
