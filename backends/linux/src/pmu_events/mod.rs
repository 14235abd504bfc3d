//! Native (pmu-events) event names of x86 core PMUs: `inst_retired.any`,
//! `cpu_clk_unhalted.thread`, `ls_not_halted_cyc`, … as perf and libpmc's
//! pmu-events tables know them, for kernels that publish no sysfs alias
//! for them.
//!
//! The data is a table generated from the kernel's
//! `tools/perf/pmu-events/arch/x86` JSON by `cargo xtask gen-pmu-events`
//! (`intel.txt`, BSD-3-Clause, see `LICENSE-INTEL-PERFMON`). Each event is
//! kept as the sysfs format-field terms of the core PMU (`event=0xc4,
//! umask=0x1,cmask=0x1`), so its config bits come from the PMU's own
//! `format/` directory ([`Pmu::encode`]), where FreeBSD's libpmc
//! (`lib/libpmc/libpmc_pmu_util.c`, `pmc_pmu_intel_pmcallocate` and
//! `pmc_pmu_amd_pmcallocate`) puts the parsed event's event, umask, cmask,
//! edge, inv and any into the event select and offcore_rsp into `pm_iap_rsp`.
//!
//! The table of a CPU is chosen by its CPUID string in perf's form
//! (`GenuineIntel-6-55-4`: vendor, decimal family, hex model, hex stepping)
//! against `mapfile.csv`'s patterns, the first match winning. AMD's JSON
//! files carry no licence that lets them ship here; a table generated
//! locally (`cargo xtask gen-pmu-events --vendor amd SRC --out FILE`) is
//! read from the file named by `PMC_PMU_EVENTS`, which is consulted before
//! the built-in table. Tables are parsed once per CPUID, on first use.

use std::sync::{Arc, Mutex, OnceLock};

use crate::error::{Error, Result};
use crate::pmu::{Pmu, Term, parse_terms};

/// The built-in table: Intel core-PMU events of every model in the kernel's
/// `mapfile.csv`.
pub const INTEL_TABLE: &str = include_str!("intel.txt");

/// The environment variable naming an extra table file (same format,
/// consulted first).
pub const TABLE_ENV: &str = "PMC_PMU_EVENTS";

/// One native event of a model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NativeEvent {
    /// Its name, lower case (`inst_retired.any`).
    pub name: String,
    /// The core PMU's format-field terms it stands for.
    pub terms: Vec<Term>,
    /// The hybrid core PMU it belongs to (`cpu_core`, `cpu_atom`), if the
    /// table says.
    pub pmu: Option<String>,
}

/// The native events of one CPU model, sorted by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventTable {
    model: String,
    events: Vec<NativeEvent>,
}

impl EventTable {
    /// The section of `text` (the table format of `intel.txt`) whose
    /// pattern matches `cpuid`, the first one in file order; `None` when no
    /// section matches. A line that does not parse is an error naming it.
    pub fn parse(text: &str, cpuid: &str) -> Result<Option<EventTable>> {
        let mut lines = table_lines(text);
        let model = lines.by_ref().find_map(|(_, line)| {
            let (dir, pattern) = header(line)?;
            cpuid_matches(pattern, cpuid).then(|| dir.to_string())
        });
        let Some(model) = model else {
            return Ok(None);
        };
        let events = section_events(lines.take_while(|(_, l)| header(l).is_none()))?;
        Ok(Some(EventTable { model, events }))
    }

    /// Every section of `text` with its CPUID pattern, in file order (for
    /// checks over a whole table).
    pub fn parse_all(text: &str) -> Result<Vec<(String, EventTable)>> {
        let mut out = Vec::new();
        let mut lines = table_lines(text).peekable();
        while let Some((_, line)) = lines.next() {
            let Some((dir, pattern)) = header(line) else {
                continue;
            };
            let mut body = Vec::new();
            while let Some(next) = lines.next_if(|(_, l)| header(l).is_none()) {
                body.push(next);
            }
            out.push((
                pattern.to_string(),
                EventTable {
                    model: dir.to_string(),
                    events: section_events(body.into_iter())?,
                },
            ));
        }
        Ok(out)
    }

    /// The table for `cpuid`: from the file named by `PMC_PMU_EVENTS` if
    /// it has the model, else the built-in one; `None` when neither does.
    /// Parsed once per CPUID and shared.
    pub fn for_cpuid(cpuid: &str) -> Option<Arc<EventTable>> {
        static CACHE: Mutex<Vec<(String, Option<Arc<EventTable>>)>> = Mutex::new(Vec::new());
        let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, table)) = cache.iter().find(|(c, _)| c == cpuid) {
            return table.clone();
        }
        let external =
            std::env::var_os(TABLE_ENV).and_then(|path| std::fs::read_to_string(path).ok());
        let table = EventTable::load(cpuid, external.as_deref()).map(Arc::new);
        cache.push((cpuid.to_string(), table.clone()));
        table
    }

    /// The table for `cpuid` from `external` (the text of an extra table)
    /// if it has the model, else from the built-in table (not cached; an
    /// external table that does not parse is passed over).
    pub fn load(cpuid: &str, external: Option<&str>) -> Option<EventTable> {
        external
            .and_then(|text| EventTable::parse(text, cpuid).ok().flatten())
            .or_else(|| EventTable::parse(INTEL_TABLE, cpuid).ok().flatten())
    }

    /// The table of this machine's CPU, if there is one.
    pub fn host() -> Option<Arc<EventTable>> {
        EventTable::for_cpuid(host_cpuid()?)
    }

    /// The model directory the table came from (`skylakex`, `amdzen2`).
    pub fn model(&self) -> &str {
        &self.model
    }

    /// Every event, sorted by name (a name may appear once per hybrid
    /// core PMU).
    pub fn events(&self) -> &[NativeEvent] {
        &self.events
    }

    /// The entries called `name` (case-insensitive): one, or one per
    /// hybrid core PMU; empty when the model has no such event.
    pub fn lookup(&self, name: &str) -> &[NativeEvent] {
        let name = name.to_ascii_lowercase();
        let start = self.events.partition_point(|e| e.name < name);
        let end = start + self.events[start..].partition_point(|e| e.name == name);
        &self.events[start..end]
    }

    /// The distinct event names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        let mut last: Option<&str> = None;
        self.events.iter().filter_map(move |e| {
            let name = e.name.as_str();
            (last.replace(name) != Some(name)).then_some(name)
        })
    }

    /// The core PMU each entry of `name` goes to, out of `core_pmus` (the
    /// [`crate::pmu::core_pmus`] of the machine): the hybrid PMU an entry
    /// names where it exists, else the machine's single core PMU. `None`
    /// when the model has no such event; an error when there is no core PMU
    /// to count it on.
    pub fn placements<'p>(
        &self,
        name: &str,
        core_pmus: &'p [Pmu],
    ) -> Option<Result<Vec<(&'p Pmu, &NativeEvent)>>> {
        let entries = self.lookup(name);
        let first = entries.first()?;
        let named: Vec<(&Pmu, &NativeEvent)> = entries
            .iter()
            .filter_map(|e| {
                Some((
                    core_pmus.iter().find(|p| Some(&p.name) == e.pmu.as_ref())?,
                    e,
                ))
            })
            .collect();
        if !named.is_empty() {
            return Some(Ok(named));
        }
        Some(match core_pmus {
            [] => Err(Error::Unsupported {
                what: format!("native event `{}`", first.name),
                why: format!(
                    "it is an event of the {} core PMU, but this machine has no core PMU \
                     (no `cpu` in /sys/bus/event_source/devices: a virtual machine without \
                     PMU passthrough?)",
                    self.model
                ),
            }),
            // Hybrid parts with only one kind of core enabled register a
            // plain `cpu`: prefer the big core's encoding.
            [one] => {
                let entry = entries
                    .iter()
                    .find(|e| e.pmu.is_none() || e.pmu.as_deref() == Some("cpu_core"))
                    .unwrap_or(first);
                Ok(vec![(one, entry)])
            }
            many => Ok(many.iter().map(|p| (p, first)).collect()),
        })
    }
}

/// The numbered lines of a table that are not blank or comments.
fn table_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
}

/// `(dir, pattern)` of a section header line (`>dir<TAB>pattern<TAB>…`).
fn header(line: &str) -> Option<(&str, &str)> {
    let mut cols = line.strip_prefix('>')?.split('\t');
    Some((cols.next().unwrap_or(""), cols.next().unwrap_or("")))
}

/// The events of one section's lines, sorted by name (stable: the
/// entries of one name keep their order).
fn section_events<'a>(lines: impl Iterator<Item = (usize, &'a str)>) -> Result<Vec<NativeEvent>> {
    let mut events = Vec::new();
    for (number, line) in lines {
        let mut cols = line.split('\t');
        let (Some(name), Some(terms)) = (cols.next(), cols.next()) else {
            return Err(Error::invalid(
                format!("native event table line {}", number + 1),
                "expected `name<TAB>terms[<TAB>pmu]`",
            ));
        };
        events.push(NativeEvent {
            name: name.to_ascii_lowercase(),
            terms: parse_terms(terms)?,
            pmu: cols.next().filter(|p| !p.is_empty()).map(str::to_string),
        });
    }
    events.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(events)
}

/// Whether a `mapfile.csv` pattern matches `cpuid` as perf matches it
/// (`strcmp_cpuid_str`, tools/perf/arch/x86/util/header.c): a pattern or
/// cpuid with exactly three `-` is "full" (has a stepping); a full pattern
/// never matches a cpuid without a stepping, a pattern without one is
/// matched against the cpuid less its stepping, and the match must cover
/// the whole string.
pub fn cpuid_matches(pattern: &str, cpuid: &str) -> bool {
    let full = |s: &str| s.matches('-').count() == 3;
    let subject = match (full(pattern), full(cpuid)) {
        (true, false) => return false,
        (false, true) => cpuid.rsplit_once('-').map_or(cpuid, |(head, _)| head),
        _ => cpuid,
    };
    regex_lite::Regex::new(&format!("^(?:{pattern})$")).is_ok_and(|re| re.is_match(subject))
}

/// The CPUID string of an x86 CPU in perf's (and `kern.hwpmc.cpuid`'s)
/// form from its vendor and CPUID leaf 1 EAX: the family adds the extended
/// family when it is 0xf, the model the extended model for families 6
/// and ≥ 0xf.
pub fn cpuid_string(vendor: &str, leaf1_eax: u32) -> String {
    let stepping = leaf1_eax & 0xf;
    let mut model = (leaf1_eax >> 4) & 0xf;
    let mut family = (leaf1_eax >> 8) & 0xf;
    if family == 0xf {
        family += (leaf1_eax >> 20) & 0xff;
    }
    if family == 6 || family >= 0xf {
        model += ((leaf1_eax >> 16) & 0xf) << 4;
    }
    format!("{vendor}-{family}-{model:X}-{stepping:X}")
}

/// This machine's CPU identification as perf writes it: the CPUID string
/// on x86, MIDR_EL1 as `0x%016x` on arm64 (perf's arm64 `get_cpuid_str`
/// reads the same sysfs file); `None` elsewhere or when unreadable.
pub fn host_cpuid() -> Option<&'static str> {
    static HOST: OnceLock<Option<String>> = OnceLock::new();
    HOST.get_or_init(|| {
        if cfg!(target_arch = "aarch64") {
            let text = std::fs::read_to_string(
                "/sys/devices/system/cpu/cpu0/regs/identification/midr_el1",
            )
            .ok()?;
            let midr = u64::from_str_radix(text.trim().trim_start_matches("0x"), 16).ok()?;
            return Some(format!("0x{midr:016x}"));
        }
        let [_, ebx, ecx, edx] = crate::system::cpuid(0, 0)?;
        let vendor: Vec<u8> = [ebx, edx, ecx]
            .iter()
            .flat_map(|r| r.to_le_bytes())
            .collect();
        let eax = crate::system::cpuid(1, 0)?[0];
        Some(cpuid_string(&String::from_utf8_lossy(&vendor), eax))
    })
    .as_deref()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuid_strings_follow_perf() {
        // Skylake-SP stepping 4: family 6, model 0x55 (ext model 5).
        assert_eq!(
            cpuid_string("GenuineIntel", 0x0005_0654),
            "GenuineIntel-6-55-4"
        );
        // Zen 2 (Rome): family 0xf + ext 8 = 23, model 0x31, stepping 0.
        assert_eq!(
            cpuid_string("AuthenticAMD", 0x0083_0f10),
            "AuthenticAMD-23-31-0"
        );
        // Family 5 takes no extended model.
        assert_eq!(
            cpuid_string("GenuineIntel", 0x0001_0543),
            "GenuineIntel-5-4-3"
        );
    }

    #[test]
    fn mapfile_patterns_match_as_perf_does() {
        // tools/perf/pmu-events/arch/x86/mapfile.csv (linux 6.12).
        assert!(cpuid_matches(
            "GenuineIntel-6-55-[01234]",
            "GenuineIntel-6-55-4"
        ));
        assert!(!cpuid_matches(
            "GenuineIntel-6-55-[01234]",
            "GenuineIntel-6-55-7"
        ));
        assert!(cpuid_matches(
            "GenuineIntel-6-55-[56789ABCDEF]",
            "GenuineIntel-6-55-7"
        ));
        // No stepping in the pattern: the cpuid's is ignored.
        assert!(cpuid_matches(
            "GenuineIntel-6-(3C|45|46)",
            "GenuineIntel-6-45-1"
        ));
        assert!(!cpuid_matches(
            "GenuineIntel-6-(3C|45|46)",
            "GenuineIntel-6-455-1"
        ));
        assert!(cpuid_matches(
            "AuthenticAMD-23-[[:xdigit:]]+",
            "AuthenticAMD-23-31-0"
        ));
        assert!(cpuid_matches(
            "AuthenticAMD-23-([12][0-9A-F]|[0-9A-F])",
            "AuthenticAMD-23-1-2"
        ));
        assert!(!cpuid_matches(
            "AuthenticAMD-23-([12][0-9A-F]|[0-9A-F])",
            "AuthenticAMD-23-31-0"
        ));
        assert!(!cpuid_matches("GenuineIntel-6-(", "GenuineIntel-6-55-4"));
        // A full pattern needs a full cpuid.
        assert!(!cpuid_matches(
            "GenuineIntel-6-55-[01234]",
            "GenuineIntel-6-55"
        ));
    }

    #[test]
    fn the_built_in_table_picks_models_by_cpuid() {
        let skx = EventTable::parse(INTEL_TABLE, "GenuineIntel-6-55-4")
            .unwrap()
            .unwrap();
        assert_eq!(skx.model(), "skylakex");
        let clx = EventTable::parse(INTEL_TABLE, "GenuineIntel-6-55-7")
            .unwrap()
            .unwrap();
        assert_eq!(clx.model(), "cascadelakex");
        assert_eq!(
            EventTable::parse(INTEL_TABLE, "GenuineIntel-6-45-1")
                .unwrap()
                .unwrap()
                .model(),
            "haswell"
        );
        // No AMD data ships.
        assert_eq!(
            EventTable::parse(INTEL_TABLE, "AuthenticAMD-23-31-0").unwrap(),
            None
        );
        assert_eq!(skx.lookup("INST_RETIRED.ANY").len(), 1);
        assert!(skx.lookup("inst_retired.nonesuch").is_empty());
        let names: Vec<&str> = skx.names().collect();
        assert!(names.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(names.len(), skx.events().len());
    }

    #[test]
    fn hybrid_entries_go_to_their_pmus() {
        let adl = EventTable::parse(INTEL_TABLE, "GenuineIntel-6-97-2")
            .unwrap()
            .unwrap();
        assert_eq!(adl.model(), "alderlake");
        let pmus: Vec<Option<&str>> = adl
            .lookup("inst_retired.any")
            .iter()
            .map(|e| e.pmu.as_deref())
            .collect();
        assert_eq!(pmus, [Some("cpu_atom"), Some("cpu_core")]);
        // One name each, though two entries.
        assert_eq!(adl.names().filter(|n| *n == "inst_retired.any").count(), 1);
        assert!(matches!(
            adl.placements("inst_retired.any", &[]),
            Some(Err(Error::Unsupported { .. }))
        ));
        assert!(adl.placements("no.such", &[]).is_none());
    }

    #[test]
    fn malformed_tables_are_errors_not_panics() {
        let text = ">m\tGenuineIntel-6-55\tv1\nonly_a_name\n";
        assert!(EventTable::parse(text, "GenuineIntel-6-55-4").is_err());
        // Lines of other models are not read.
        assert_eq!(
            EventTable::parse(text, "GenuineIntel-6-56-4").unwrap(),
            None
        );
    }
}
