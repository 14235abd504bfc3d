//! Dynamic probes: uprobes and kprobes through their PMUs (`/sys/bus/event_source/devices/
//! {uprobe,kprobe}`): `config1` points at the binary's path or the kernel
//! function's name, `config2` is the offset, and the retprobe bit comes
//! from the PMU's `format/retprobe`.
//!
//! The path/name pointer must stay valid during `perf_event_open`, so a
//! probe is a [`Probe`] (attr plus owned string) opened with
//! [`Probe::open`] rather than a plain `Attr`.

use std::ffi::CString;
use std::path::Path;

use object::{Object, ObjectSegment, ObjectSymbol};

use crate::attr::{Attr, EventConfig};
use crate::error::{Error, Result};
use crate::event::{Event, OpenFlags, Target};
use crate::pmu::{Pmu, Term, TermValue};

/// Which kind of probe: the binding's internal tag (which PMU, whether a
/// return probe). The public name of the concept is `pmc::spec::ProbeKind`;
/// callers here say `ret: bool`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ProbeKind {
    /// A user-space function entry (or any instruction) of a binary.
    Uprobe,
    /// A user-space function return.
    Uretprobe,
    /// A kernel function entry.
    Kprobe,
    /// A kernel function return.
    Kretprobe,
}

impl ProbeKind {
    fn pmu(self) -> &'static str {
        match self {
            ProbeKind::Uprobe | ProbeKind::Uretprobe => "uprobe",
            ProbeKind::Kprobe | ProbeKind::Kretprobe => "kprobe",
        }
    }

    fn is_return(self) -> bool {
        matches!(self, ProbeKind::Uretprobe | ProbeKind::Kretprobe)
    }
}

/// A probe ready to open: the attr and the string its `config1` points to.
#[derive(Clone, Debug)]
pub struct Probe {
    attr: Attr,
    target: Option<CString>,
}

impl Probe {
    /// A uprobe (or uretprobe) on `path` at file offset `offset`, using the
    /// `uprobe` PMU under `pmu_root`.
    pub fn uprobe(pmu_root: &Path, path: &Path, offset: u64, ret: bool) -> Result<Probe> {
        let kind = if ret {
            ProbeKind::Uretprobe
        } else {
            ProbeKind::Uprobe
        };
        let target = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| Error::invalid(format!("{}", path.display()), "contains a NUL byte"))?;
        Probe::build(pmu_root, kind, Some(target), offset)
    }

    /// A kprobe (or kretprobe) on kernel function `function` + `offset`.
    pub fn kprobe(pmu_root: &Path, function: &str, offset: u64, ret: bool) -> Result<Probe> {
        let kind = if ret {
            ProbeKind::Kretprobe
        } else {
            ProbeKind::Kprobe
        };
        let target =
            CString::new(function).map_err(|_| Error::invalid(function, "contains a NUL byte"))?;
        Probe::build(pmu_root, kind, Some(target), offset)
    }

    /// A kprobe (or kretprobe) at kernel address `addr`.
    pub fn kprobe_at(pmu_root: &Path, addr: u64, ret: bool) -> Result<Probe> {
        let kind = if ret {
            ProbeKind::Kretprobe
        } else {
            ProbeKind::Kprobe
        };
        Probe::build(pmu_root, kind, None, addr)
    }

    fn build(
        pmu_root: &Path,
        kind: ProbeKind,
        target: Option<CString>,
        offset: u64,
    ) -> Result<Probe> {
        let pmu = Pmu::find(pmu_root, kind.pmu()).map_err(|_| Error::Unsupported {
            what: format!("{kind:?}"),
            why: format!(
                "this kernel has no `{}` PMU in {} (CONFIG_{}_EVENTS off?); \
                 perf_event cannot create the probe",
                kind.pmu(),
                pmu_root.display(),
                kind.pmu().to_ascii_uppercase()
            ),
        })?;
        let config = if kind.is_return() {
            if pmu.format("retprobe").is_none() {
                return Err(Error::Unsupported {
                    what: format!("{kind:?}"),
                    why: format!("the {} PMU has no `retprobe` format field", pmu.name),
                });
            }
            pmu.encode(&[Term::new("retprobe", TermValue::Flag)])?
                .config[0]
        } else {
            0
        };
        let attr = Attr::new(EventConfig::Dynamic {
            pmu_type: pmu.type_id,
            config,
            config1: 0,
            config2: offset,
            config3: 0,
        });
        Ok(Probe { attr, target })
    }

    /// The attr (with `config1` still 0; it is filled in at open).
    pub fn attr(&self) -> &Attr {
        &self.attr
    }

    /// Replaces the attr's non-event settings (privilege, read format,
    /// sampling…): `f` gets the attr and returns the new one; the event
    /// fields are kept.
    pub fn configure(mut self, f: impl FnOnce(Attr) -> Attr) -> Probe {
        let (t, c, c2) = (
            self.attr.type_id(),
            self.attr.get_config(),
            self.attr.get_config2(),
        );
        self.attr = f(self.attr).event(EventConfig::Dynamic {
            pmu_type: t,
            config: c,
            config1: 0,
            config2: c2,
            config3: 0,
        });
        self
    }

    /// The path or function name (none for a kprobe at an address).
    pub fn target(&self) -> Option<&CString> {
        self.target.as_ref()
    }

    /// Opens the probe.
    pub fn open(&self, target: Target, group: Option<&Event>, flags: OpenFlags) -> Result<Event> {
        match &self.target {
            Some(s) => Event::open_with_string(&self.attr, s, target, group, flags),
            None => Event::open(&self.attr, target, group, flags),
        }
    }
}

/// The file offset of `symbol` in the ELF binary at `path` (what a uprobe
/// needs): the symbol's address translated through the loadable segment
/// that contains it. Looks in `.symtab`, then `.dynsym`.
pub fn symbol_file_offset(path: &Path, symbol: &str) -> Result<u64> {
    let data = std::fs::read(path).map_err(|e| Error::file(path.display(), &e))?;
    let file = object::File::parse(&*data).map_err(|e| Error::File {
        path: path.display().to_string(),
        why: format!("not an ELF object this crate can read: {e}"),
        errno: None,
        hint: None,
    })?;
    let found = file
        .symbols()
        .chain(file.dynamic_symbols())
        .find(|s| s.name() == Ok(symbol) && s.address() != 0);
    let Some(sym) = found else {
        let names: Vec<String> = file
            .symbols()
            .chain(file.dynamic_symbols())
            .filter(|s| s.is_definition())
            .filter_map(|s| s.name().ok().map(str::to_string))
            .collect();
        let near = pmc_suggest::closest(symbol, names.iter().map(String::as_str), 5);
        return Err(Error::File {
            path: path.display().to_string(),
            why: format!(
                "no symbol `{symbol}`{}",
                if near.is_empty() {
                    " (stripped binary?)".to_string()
                } else {
                    format!(" (closest: {})", near.join(", "))
                }
            ),
            errno: Some(libc::ENOENT),
            hint: None,
        });
    };
    let addr = sym.address();
    for seg in file.segments() {
        let (start, size) = (seg.address(), seg.size());
        if addr >= start && addr < start + size {
            let (file_off, _) = seg.file_range();
            return Ok(addr - start + file_off);
        }
    }
    Err(Error::File {
        path: path.display().to_string(),
        why: format!("symbol `{symbol}` at {addr:#x} is in no loadable segment"),
        errno: None,
        hint: None,
    })
}

/// The path of a library this process has mapped whose file name contains
/// `fragment` (e.g. `"/libc.so"`), from `/proc/self/maps`: where to put a
/// uprobe on a shared library function.
pub fn mapped_library(fragment: &str) -> Option<std::path::PathBuf> {
    std::fs::read_to_string("/proc/self/maps")
        .ok()?
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| p.contains(fragment))
        .map(std::path::PathBuf::from)
}
