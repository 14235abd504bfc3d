//! Reports from a pmclog: the record dump (`pmcstat -R`), a call graph
//! with symbols (`-G`) and folded stacks for flamegraph tools (`--folded`).
//!
//! Symbols come from the ELF symbol tables of the mapped objects, read with
//! the `object` crate: a pc maps to its object through the process's
//! MAP_IN records (start = the object's file offset 0), to a file offset,
//! to a virtual address through the object's loadable segments, and to the
//! function containing it.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use object::{Object, ObjectSegment, ObjectSymbol};
use pmc::log::{LogEvent, LogRecord};

/// The functions of one object file.
#[derive(Debug, Default)]
struct ObjectSymbols {
    /// (file offset start, file offset end, vaddr start) of PT_LOADs.
    segments: Vec<(u64, u64, u64)>,
    /// (vaddr, size, name), sorted by address.
    functions: Vec<(u64, u64, String)>,
}

impl ObjectSymbols {
    fn load(path: &str) -> ObjectSymbols {
        let Ok(data) = std::fs::read(path) else {
            return ObjectSymbols::default();
        };
        let Ok(file) = object::File::parse(&*data) else {
            return ObjectSymbols::default();
        };
        let segments = file
            .segments()
            .map(|s| {
                let (off, size) = s.file_range();
                (off, off + size, s.address())
            })
            .collect();
        let mut functions: Vec<(u64, u64, String)> = file
            .symbols()
            .chain(file.dynamic_symbols())
            .filter(|s| s.kind() == object::SymbolKind::Text && s.address() != 0)
            .filter_map(|s| {
                let name = s.name().ok()?;
                Some((
                    s.address(),
                    s.size(),
                    format!("{:#}", rustc_demangle::demangle(name)),
                ))
            })
            .collect();
        functions.sort_by_key(|f| f.0);
        functions.dedup_by_key(|f| f.0);
        ObjectSymbols {
            segments,
            functions,
        }
    }

    fn function_at(&self, file_offset: u64) -> Option<&str> {
        let (off, _, vaddr) = self
            .segments
            .iter()
            .find(|(start, end, _)| file_offset >= *start && file_offset < *end)?;
        let addr = file_offset - off + vaddr;
        let i = self.functions.partition_point(|f| f.0 <= addr);
        let (start, size, name) = self.functions.get(i.checked_sub(1)?)?;
        // Unsized symbols (assembly) cover up to the next symbol.
        (*size == 0 || addr < start + size).then_some(name.as_str())
    }
}

/// Resolves pcs of logged processes to function names.
#[derive(Debug, Default)]
pub struct Symbolizer {
    /// Per pid: (start, path), sorted by start.
    maps: HashMap<u32, Vec<(u64, String)>>,
    objects: HashMap<String, ObjectSymbols>,
}

impl Symbolizer {
    /// Learns the mappings of a log.
    pub fn new(events: &[LogEvent]) -> Symbolizer {
        let mut maps: HashMap<u32, Vec<(u64, String)>> = HashMap::new();
        for e in events {
            match &e.record {
                LogRecord::MapIn { pid, start, path } if path.starts_with('/') => {
                    maps.entry(*pid).or_default().push((*start, path.clone()));
                }
                // A child inherits its parent's mappings until it execs.
                LogRecord::ProcFork { oldpid, newpid } => {
                    let parent = maps.get(oldpid).cloned().unwrap_or_default();
                    maps.entry(*newpid).or_default().extend(parent);
                }
                LogRecord::ProcExec { pid, .. } => {
                    maps.remove(pid);
                }
                _ => {}
            }
        }
        for m in maps.values_mut() {
            m.sort();
            m.dedup();
        }
        Symbolizer {
            maps,
            objects: HashMap::new(),
        }
    }

    /// `function` (or `object+0xoffset`, or `0xpc`) for a pc of `pid`.
    pub fn name(&mut self, pid: u32, pc: u64) -> String {
        let Some(maps) = self.maps.get(&pid) else {
            return format!("{pc:#x}");
        };
        let i = maps.partition_point(|(start, _)| *start <= pc);
        let Some((start, path)) = i.checked_sub(1).and_then(|i| maps.get(i)) else {
            return format!("{pc:#x}");
        };
        let offset = pc - start;
        let symbols = self
            .objects
            .entry(path.clone())
            .or_insert_with(|| ObjectSymbols::load(path));
        match symbols.function_at(offset) {
            Some(f) => f.to_string(),
            None => {
                let file = path.rsplit('/').next().unwrap_or(path);
                format!("{file}+{offset:#x}")
            }
        }
    }
}

/// The stacks of the log's callchains as function names, leaf first, with
/// their sample counts, per PMC.
pub fn stacks(events: &[LogEvent]) -> BTreeMap<u32, HashMap<Vec<String>, u64>> {
    let mut sym = Symbolizer::new(events);
    let mut out: BTreeMap<u32, HashMap<Vec<String>, u64>> = BTreeMap::new();
    for e in events {
        if let LogRecord::Callchain {
            pid, pmcid, pcs, ..
        } = &e.record
        {
            if pcs.is_empty() {
                continue;
            }
            // Return addresses point after the call: step back one byte so
            // they fall inside the calling function.
            let stack: Vec<String> = pcs
                .iter()
                .enumerate()
                .map(|(i, pc)| sym.name(*pid, if i == 0 { *pc } else { pc.saturating_sub(1) }))
                .collect();
            *out.entry(*pmcid).or_default().entry(stack).or_default() += 1;
        }
    }
    out
}

/// Folded stacks (`root;…;leaf count`), one line each, for flamegraph tools.
pub fn folded(events: &[LogEvent]) -> String {
    let mut lines: Vec<String> = Vec::new();
    for per_pmc in stacks(events).values() {
        for (stack, n) in per_pmc {
            let mut s: Vec<&str> = stack.iter().map(String::as_str).collect();
            s.reverse();
            lines.push(format!("{} {n}", s.join(";")));
        }
    }
    lines.sort();
    lines.join("\n") + if lines.is_empty() { "" } else { "\n" }
}

/// A call graph: per PMC, functions by the share of samples they were
/// running in (self), each with the callers that led to it.
pub fn callgraph(events: &[LogEvent]) -> String {
    let names: HashMap<u32, String> = events
        .iter()
        .filter_map(|e| match &e.record {
            LogRecord::PmcAllocateDyn { pmcid, name, .. } => Some((*pmcid, name.clone())),
            _ => None,
        })
        .collect();
    let mut out = String::new();
    for (pmcid, per) in stacks(events) {
        let total: u64 = per.values().sum();
        let _ = writeln!(
            out,
            "@ {} [{total} samples]",
            names
                .get(&pmcid)
                .cloned()
                .unwrap_or_else(|| format!("pmc {pmcid:#x}"))
        );
        // Leaf → (count, caller → count).
        let mut leaves: HashMap<&str, (u64, HashMap<&str, u64>)> = HashMap::new();
        for (stack, n) in &per {
            let entry = leaves.entry(stack[0].as_str()).or_default();
            entry.0 += n;
            if let Some(caller) = stack.get(1) {
                *entry.1.entry(caller.as_str()).or_default() += n;
            }
        }
        let mut sorted: Vec<_> = leaves.into_iter().collect();
        sorted.sort_by(|a, b| b.1.0.cmp(&a.1.0).then(a.0.cmp(b.0)));
        for (leaf, (n, callers)) in sorted {
            let pct = 100.0 * n as f64 / total as f64;
            if pct < 0.5 {
                continue;
            }
            let _ = writeln!(out, "{pct:6.2}%  {leaf}");
            let mut callers: Vec<_> = callers.into_iter().collect();
            callers.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
            for (caller, c) in callers.into_iter().take(5) {
                let _ = writeln!(
                    out,
                    "          {:6.2}%  <- {caller}",
                    100.0 * c as f64 / total as f64
                );
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(record: LogRecord) -> LogEvent {
        LogEvent {
            offset: 0,
            end_offset: 0,
            count: 0,
            timestamp: 0,
            record,
        }
    }

    #[inline(never)]
    fn report_test_target() -> u64 {
        std::hint::black_box(7)
    }

    #[test]
    fn pcs_resolve_to_this_binarys_functions() {
        let exe = std::env::current_exe().unwrap().display().to_string();
        // Our executable mapping from /proc/self/maps, as perf reports it
        // (MMAP2 of the r-x segment: address and file offset).
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let (start, pgoff) = maps
            .lines()
            .filter(|l| l.ends_with(&exe))
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let range = f.next()?;
                if !f.next()?.contains('x') {
                    return None;
                }
                let off = u64::from_str_radix(f.next()?, 16).ok()?;
                let lo = u64::from_str_radix(range.split('-').next()?, 16).ok()?;
                Some((lo, off))
            })
            .min()
            .unwrap();
        let pc = report_test_target as *const () as usize as u64;
        let events = vec![
            ev(LogRecord::MapIn {
                pid: 1,
                start: start - pgoff,
                path: exe.clone(),
            }),
            ev(LogRecord::PmcAllocateDyn {
                pmcid: 5,
                event: 0,
                flags: 0,
                name: "cpu-clock".into(),
            }),
            ev(LogRecord::Callchain {
                pid: 1,
                tid: 1,
                pmcid: 5,
                cpu: 0,
                userspace: true,
                pcs: vec![pc + 1, pc + 2],
            }),
        ];
        let mut s = Symbolizer::new(&events);
        assert!(
            s.name(1, pc + 1).contains("report_test_target"),
            "{}",
            s.name(1, pc + 1)
        );
        assert_eq!(
            s.name(2, 0x1234),
            "0x1234",
            "unknown processes give raw pcs"
        );
        let graph = callgraph(&events);
        assert!(graph.starts_with("@ cpu-clock [1 samples]\n"), "{graph}");
        assert!(
            graph.contains("100.00%") && graph.contains("report_test_target"),
            "{graph}"
        );
        let f = folded(&events);
        assert!(
            f.ends_with(" 1\n") && f.contains("report_test_target;"),
            "{f}"
        );
    }
}
