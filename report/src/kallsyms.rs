//! Kernel pcs to names, from the running kernel's `/proc/kallsyms`.
//!
//! Kernel frames are named from the kernel that runs the report, as perf
//! does without a `vmlinux`: pmcstat's `-r ROOT` does not apply (it moves
//! executables, not the kernel). A log whose kernel mapping
//! (`[kernel.kallsyms]`, logged at `_stext`) says another kernel or boot
//! wrote it keeps its kernel frames unnamed: names from another layout
//! would be wrong.
//!
//! Where no name can be had (`kernel.kptr_restrict` shows the reader every
//! address as 0, the file cannot be read, the log is from another boot),
//! the kernel part of a stack is one frame, [`KERNEL_FRAME`], and
//! [`KernelNamesMissing`] says why, for the tools to print once.

use std::fmt;
use std::sync::{Arc, OnceLock};

use pmc::sample::is_kernel_address;

/// The one frame a stack's unnamed kernel pcs become, perf's name for the
/// kernel image (and the path of the kernel's MAP_IN in pmc's logs).
pub const KERNEL_FRAME: &str = "[kernel.kallsyms]";

/// Where the running kernel's symbols are read from.
const KALLSYMS: &str = "/proc/kallsyms";

/// A kernel text symbol: `[start, end)`, its name and its module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelSymbol {
    /// Its address.
    pub start: u64,
    /// Where the next symbol of its object starts; for an object's last
    /// symbol, 4 KiB past its start rounded up to a page (perf's
    /// `symbols__fixup_end`), never past the next object's first.
    pub end: u64,
    /// Its name.
    pub name: String,
    /// The module it belongs to (`[name]` in kallsyms), `None` for the
    /// kernel image.
    pub module: Option<Arc<str>>,
}

impl KernelSymbol {
    /// The object it belongs to as perf names it: `[kernel.kallsyms]` or
    /// `[module]`.
    pub fn object(&self) -> String {
        match &self.module {
            Some(m) => format!("[{m}]"),
            None => KERNEL_FRAME.to_string(),
        }
    }
}

/// The text symbols of a kallsyms listing, sorted, one per address.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelSymbols {
    symbols: Vec<KernelSymbol>,
    /// `_stext`'s address (what pmc logs as the kernel's MAP_IN start).
    text_start: Option<u64>,
}

/// Why kernel frames are unnamed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelNamesMissing {
    /// What went wrong and what to do about it.
    pub reason: String,
}

impl fmt::Display for KernelNamesMissing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "kernel frames are shown as {KERNEL_FRAME}: {}",
            self.reason
        )
    }
}

impl std::error::Error for KernelNamesMissing {}

/// (weak, local, leading underscores, longer name first): lower is better.
type AliasRank = (bool, bool, usize, std::cmp::Reverse<usize>);

/// How many pcs of a logged callchain are kernel frames: none for a user
/// mode sample (`PMC_CC_F_USERSPACE`); for a kernel mode sample, the
/// leading kernel addresses (hwpmc's `pmc_capture_user_callchain` appends
/// the user stack after them).
pub fn kernel_frames(userspace: bool, pcs: &[u64]) -> usize {
    if userspace {
        return 0;
    }
    pcs.iter().take_while(|pc| is_kernel_address(**pc)).count()
}

impl KernelSymbols {
    /// Parses a kallsyms text (`address type name [module]` per line):
    /// the text symbols (`t`, `T`, `w`, `W`) at non-zero addresses
    /// (`kptr_restrict` shows hidden ones as 0). Lines that do not parse
    /// are skipped.
    pub fn parse(text: &str) -> KernelSymbols {
        // (start, preference among aliases, symbol)
        let mut raw: Vec<(u64, AliasRank, KernelSymbol)> = Vec::new();
        let mut modules: Vec<Arc<str>> = Vec::new();
        let mut text_start = None;
        for line in text.lines() {
            let mut fields = line.split_whitespace();
            let (Some(address), Some(kind), Some(name)) =
                (fields.next(), fields.next(), fields.next())
            else {
                continue;
            };
            let Ok(start) = u64::from_str_radix(address, 16) else {
                continue;
            };
            if start == 0 {
                continue;
            }
            if name == "_stext" {
                text_start = Some(start);
            }
            let kind = kind.chars().next().unwrap_or(' ');
            if !matches!(kind, 't' | 'T' | 'w' | 'W') {
                continue;
            }
            let module = fields
                .next()
                .and_then(|m| m.strip_prefix('[')?.strip_suffix(']'))
                .map(|m| match modules.iter().find(|k| &***k == m) {
                    Some(k) => k.clone(),
                    None => {
                        let k: Arc<str> = Arc::from(m);
                        modules.push(k.clone());
                        k
                    }
                });
            // perf's choose_best_symbol among aliases: non-weak, then
            // global, then fewer leading underscores, then the longer name
            // (then the first listed: the sort is stable).
            let rank = (
                kind == 'W',
                !kind.is_ascii_uppercase(),
                name.bytes().take_while(|b| *b == b'_').count(),
                std::cmp::Reverse(name.len()),
            );
            raw.push((
                start,
                rank,
                KernelSymbol {
                    start,
                    end: start,
                    name: name.to_string(),
                    module,
                },
            ));
        }
        // Stable: equal ranks keep the listing's order.
        raw.sort_by_key(|r| (r.0, r.1));
        raw.dedup_by_key(|r| r.0);
        let mut symbols: Vec<KernelSymbol> = raw.into_iter().map(|r| r.2).collect();
        // The collect reuses the larger (rank, symbol) buffer: hold only the
        // symbols for as long as the report runs.
        symbols.shrink_to_fit();
        // A symbol ends where the next one of its object starts; the last
        // of an object (the image, a module) ends a page on, so it does
        // not swallow the gap before the next object.
        for i in 0..symbols.len() {
            let page_after = start_of_page_after(symbols[i].start);
            symbols[i].end = match symbols.get(i + 1) {
                Some(next) if next.module == symbols[i].module => next.start,
                Some(next) => page_after.min(next.start),
                None => page_after,
            };
        }
        KernelSymbols {
            symbols,
            text_start,
        }
    }

    /// The running kernel's symbols, read from `/proc/kallsyms` once per
    /// process (the first call), or why there are none.
    pub fn running_kernel() -> Result<Arc<KernelSymbols>, KernelNamesMissing> {
        static RUNNING: OnceLock<Result<Arc<KernelSymbols>, KernelNamesMissing>> = OnceLock::new();
        RUNNING.get_or_init(read_running_kernel).clone()
    }

    /// No symbol (the listing was empty or every address hidden).
    pub fn is_empty(&self) -> bool {
        self.symbols.is_empty()
    }

    /// The symbols, sorted by start.
    pub fn symbols(&self) -> &[KernelSymbol] {
        &self.symbols
    }

    /// `_stext`'s address, when listed.
    pub fn text_start(&self) -> Option<u64> {
        self.text_start
    }

    /// The symbol covering `pc`.
    pub fn symbol_at(&self, pc: u64) -> Option<&KernelSymbol> {
        let i = self.symbols.partition_point(|s| s.start <= pc);
        let s = self.symbols.get(i.checked_sub(1)?)?;
        (pc < s.end).then_some(s)
    }
}

fn start_of_page_after(address: u64) -> u64 {
    address.saturating_add(4096).next_multiple_of(4096)
}

fn read_running_kernel() -> Result<Arc<KernelSymbols>, KernelNamesMissing> {
    let text = std::fs::read_to_string(KALLSYMS).map_err(|e| KernelNamesMissing {
        reason: format!(
            "reading {KALLSYMS} failed: {e} (errno {}); kernel names need a readable {KALLSYMS}",
            e.raw_os_error().unwrap_or(0)
        ),
    })?;
    let symbols = KernelSymbols::parse(&text);
    if symbols.is_empty() {
        return Err(KernelNamesMissing {
            reason: hidden_addresses_reason(
                std::fs::read_to_string("/proc/sys/kernel/kptr_restrict")
                    .ok()
                    .and_then(|s| s.trim().parse().ok()),
                effective_uid(),
            ),
        });
    }
    Ok(Arc::new(symbols))
}

/// The effective uid, from `/proc/self/status` (`Uid: real effective …`).
fn effective_uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Why `/proc/kallsyms` shows every address as 0, and the sysctl or user
/// that shows them (kernel/kallsyms.c `kallsyms_show_value`: at
/// `kptr_restrict` 0 anyone may see them where `perf_event_paranoid` <= 1,
/// else CAP_SYSLOG is needed; at 2 nobody sees them).
pub(crate) fn hidden_addresses_reason(kptr_restrict: Option<u32>, euid: Option<u32>) -> String {
    let root = euid == Some(0);
    let head = format!("{KALLSYMS} shows every address as 0 to this user");
    match (kptr_restrict, root) {
        (Some(n @ 2..), _) => format!(
            "{head} (kernel.kptr_restrict = {n} hides them from everyone); \
             as root, `sysctl kernel.kptr_restrict=1` shows them to root"
        ),
        (Some(n), false) => format!(
            "{head} (kernel.kptr_restrict = {n}, not root); run the report as root{}",
            if n == 0 {
                ", or lower kernel.perf_event_paranoid to 1 (`sysctl kernel.perf_event_paranoid=1`)"
            } else {
                " (CAP_SYSLOG)"
            }
        ),
        (Some(n), true) => format!(
            "{head} (kernel.kptr_restrict = {n}, yet root: CAP_SYSLOG is missing from this process)"
        ),
        (None, _) => format!("{head}; as root, `sysctl kernel.kptr_restrict=1` shows them to root"),
    }
}

/// Kernel names for one log: the running kernel's symbols (or given ones),
/// loaded the first time a kernel pc needs a name, and checked against the
/// log's kernel mapping.
#[derive(Debug, Default)]
pub struct KernelNames {
    /// Symbols given instead of the running kernel's.
    given: Option<Arc<KernelSymbols>>,
    /// The log's `[kernel.kallsyms]` MAP_IN start (`_stext` of the kernel
    /// that wrote it; 0 when its writer could not read kallsyms).
    logged_text_start: Option<u64>,
    /// `None` until a kernel pc needed a name.
    loaded: Option<Result<Arc<KernelSymbols>, KernelNamesMissing>>,
}

impl KernelNames {
    /// Names from the running kernel.
    pub fn running() -> KernelNames {
        KernelNames::default()
    }

    /// Names from `symbols` (a kallsyms of the machine that wrote the log).
    pub fn from_symbols(symbols: Arc<KernelSymbols>) -> KernelNames {
        KernelNames {
            given: Some(symbols),
            ..KernelNames::default()
        }
    }

    /// Takes names from `symbols` instead of the running kernel's.
    pub fn use_symbols(&mut self, symbols: Arc<KernelSymbols>) {
        self.given = Some(symbols);
        self.loaded = None;
    }

    /// Notes the log's kernel mapping, `[kernel.kallsyms]` at `start`.
    pub fn learn_kernel_mapping(&mut self, start: u64) {
        if start != 0 {
            self.logged_text_start = Some(start);
            // A mapping seen after loading is checked again.
            self.loaded = None;
        }
    }

    /// The symbols, loaded on the first call.
    pub fn symbols(&mut self) -> Result<&KernelSymbols, &KernelNamesMissing> {
        let loaded = self.loaded.get_or_insert_with(|| {
            let symbols = match &self.given {
                Some(s) if s.is_empty() => Err(KernelNamesMissing {
                    reason: "the kernel symbol listing has no text symbol at a non-zero address"
                        .into(),
                }),
                Some(s) => Ok(s.clone()),
                None => KernelSymbols::running_kernel(),
            }?;
            match (self.logged_text_start, symbols.text_start) {
                (Some(logged), Some(here)) if logged != here => Err(KernelNamesMissing {
                    reason: format!(
                        "the log was written under another kernel or boot (its kernel text at \
                         {logged:#x}, this kernel's at {here:#x}); report it on the machine and \
                         boot that recorded it"
                    ),
                }),
                _ => Ok(symbols),
            }
        });
        loaded.as_ref().map(|s| &**s)
    }

    /// The symbol at a kernel pc (`None` when unnamed).
    pub fn symbol_at(&mut self, pc: u64) -> Option<&KernelSymbol> {
        self.symbols().ok()?.symbol_at(pc)
    }

    /// Why kernel pcs went unnamed, once one needed a name.
    pub fn missing(&self) -> Option<&KernelNamesMissing> {
        self.loaded.as_ref()?.as_ref().err()
    }
}

#[cfg(test)]
mod tests;
