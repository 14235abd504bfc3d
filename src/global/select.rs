//! Which backend [`crate::Pmc::allocate`] and the machine queries use, and
//! why: chosen once per process, by the first of
//!
//! 1. [`select`], called before anything needed a backend;
//! 2. the `PMC_BACKEND` environment variable (`linux`, `portable`; empty
//!    or `auto` for the automatic choice), read once;
//! 3. the automatic choice: on Linux, perf_event unless a trial
//!    `perf_event_open` of the software `task-clock` on the calling thread
//!    shows that it cannot be used at all (ENOSYS: no perf_event or a
//!    seccomp filter; EACCES/EPERM: perf_event_paranoid 3 or a seccomp/LSM
//!    refusal), in which case the portable backend; elsewhere the portable
//!    backend.
//!
//! [`active`] tells which one runs and why.

use std::fmt;
use std::sync::{Arc, OnceLock};

use crate::backend::kind::{self, BackendKind, InvalidSelection, compiled, compiled_backends};
use crate::backend::{Backend, BackendImpl};
use crate::{Error, Result};

/// Which backend runs, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackendChoice {
    /// Its [`name`](crate::backend::Backend::name).
    pub name: &'static str,
    /// Why it was chosen (`PMC_BACKEND=portable`, `perf_event_paranoid is
    /// 3: …`, …).
    pub reason: String,
    /// Every backend this build can select ([`compiled_backends`]).
    pub compiled: Vec<&'static str>,
}

impl fmt::Display for BackendChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}); compiled in: {}",
            self.name,
            self.reason,
            self.compiled.join(", ")
        )
    }
}

/// Chooses the backend of this process (`PMC_BACKEND`'s API twin). Call it
/// before anything needed a backend (the first allocate, `cpuinfo`, …):
/// afterwards choosing another one is [`Error::Busy`] (EBUSY), since PMCs
/// may already count on the first; choosing the one in use succeeds. A
/// backend this build lacks is [`Error::NotSupported`].
pub fn select(kind: BackendKind) -> Result<()> {
    SELECTOR.select(kind)
}

/// The backend in use and why (chooses it if nothing did yet).
pub fn active() -> BackendChoice {
    SELECTOR.get().choice.clone()
}

/// The backend of this process (chosen once; see the module doc).
pub(crate) fn default_backend() -> Arc<dyn BackendImpl> {
    SELECTOR.get().backend.clone()
}

static SELECTOR: Selector = Selector::new(automatic);

/// A backend with the reason it was chosen.
#[derive(Debug)]
struct Chosen {
    backend: Arc<dyn BackendImpl>,
    choice: BackendChoice,
}

impl Chosen {
    fn new(backend: Arc<dyn BackendImpl>, reason: String) -> Chosen {
        let name = backend.name();
        Chosen {
            backend,
            choice: BackendChoice {
                name,
                reason,
                compiled: compiled_backends(),
            },
        }
    }
}

/// The once-per-process choice (a value, so tests exercise it without
/// touching the process's own).
struct Selector {
    chosen: OnceLock<Chosen>,
    automatic: fn() -> Chosen,
}

impl Selector {
    const fn new(automatic: fn() -> Chosen) -> Selector {
        Selector {
            chosen: OnceLock::new(),
            automatic,
        }
    }

    fn get(&self) -> &Chosen {
        self.chosen.get_or_init(self.automatic)
    }

    fn select(&self, kind: BackendKind) -> Result<()> {
        compiled(kind)?;
        let mut fresh = false;
        let chosen = self.chosen.get_or_init(|| {
            fresh = true;
            build(kind, format!("pmc::global::select({kind:?})"))
        });
        if fresh || chosen.choice.name == kind.name() {
            return Ok(());
        }
        Err(Error::Busy {
            op: "select backend".into(),
            why: format!(
                "the {} backend is already in use ({}): select must come before the first \
                 allocate or machine query; or set PMC_BACKEND={} in the environment",
                chosen.choice.name,
                chosen.choice.reason,
                kind.name()
            ),
            source: None,
        })
    }
}

/// A backend of this build, with the reason it was chosen.
fn build(kind: BackendKind, reason: String) -> Chosen {
    Chosen::new(kind::build(kind, reason.clone()), reason)
}

cfg_if::cfg_if! {
    if #[cfg(all(any(target_os = "linux", target_os = "android"), not(pmc_force_portable)))] {
        /// Linux: perf_event unless it cannot be used at all.
        fn automatic_native() -> Chosen {
            let trial = crate::backend::linux::trial::perf_event_trial();
            let (kind, reason) = decide_linux(trial, crate::backend::linux::trial::paranoid());
            build(kind, reason)
        }
    } else if #[cfg(target_os = "freebsd")] {
        /// FreeBSD: hwpmc(4), or the portable backend without its module.
        fn automatic_native() -> Chosen {
            let hwpmc = crate::backend::freebsd::open_default();
            // `open_default` names a backend that could not open hwpmc
            // differently ("freebsd-hwpmc (unavailable)").
            if hwpmc.name() == BackendKind::FreeBsd.name() {
                Chosen::new(hwpmc, "hwpmc(4) is loaded".into())
            } else {
                build(
                    BackendKind::Portable,
                    "hwpmc(4) could not be opened (not loaded? kldload hwpmc)".into(),
                )
            }
        }
    } else {
        /// No native counter interface here: the portable backend.
        fn automatic_native() -> Chosen {
            build(
                BackendKind::Portable,
                format!("no native backend for {}", std::env::consts::OS),
            )
        }
    }
}

/// `PMC_BACKEND` if set, else the platform's automatic choice.
fn automatic() -> Chosen {
    match std::env::var_os("PMC_BACKEND") {
        None => automatic_native(),
        Some(value) => from_env(&value.to_string_lossy()).unwrap_or_else(automatic_native),
    }
}

/// What a `PMC_BACKEND` value chooses; `None` for the automatic choice.
fn from_env(value: &str) -> Option<Chosen> {
    let trimmed = value.trim();
    if trimmed.is_empty() || trimmed.eq_ignore_ascii_case("auto") {
        return None;
    }
    Some(match BackendKind::from_name(trimmed) {
        Some(kind) if kind.is_compiled() => build(kind, format!("PMC_BACKEND={trimmed}")),
        _ => invalid(format!(
            "PMC_BACKEND={value:?} names no backend of this build ({}, or auto); unset it or \
             set it to one of them",
            compiled_backends().join(", ")
        )),
    })
}

/// The automatic choice on Linux from the trial open of the software
/// `task-clock` (`Err(errno)` when refused) and
/// `kernel.perf_event_paranoid` (`None`: absent). Only a refusal of
/// perf_event itself falls back to the portable backend; any other
/// failure (EMFILE, …) is the linux backend's to report at allocate.
// Table-tested on every platform; called only where the linux backend is.
#[cfg_attr(
    not(all(
        any(target_os = "linux", target_os = "android"),
        not(pmc_force_portable)
    )),
    allow(dead_code)
)]
pub(crate) fn decide_linux(trial: Result<(), i32>, paranoid: Option<i32>) -> (BackendKind, String) {
    let name = crate::error::errno_name;
    match trial {
        Ok(()) => (
            BackendKind::Linux,
            "perf_event_open works: the trial open of task-clock on this thread succeeded".into(),
        ),
        Err(libc::ENOSYS) => (
            BackendKind::Portable,
            "perf_event_open is unavailable (ENOSYS): the kernel lacks perf_event or a \
             seccomp filter blocks the call"
                .into(),
        ),
        Err(e @ (libc::EACCES | libc::EPERM)) => (
            BackendKind::Portable,
            match paranoid {
                Some(p) if p >= 3 => format!(
                    "perf_event_paranoid is {p}: the kernel refuses perf_event_open to \
                     unprivileged callers ({}); lower it to 2 or grant CAP_PERFMON for the \
                     linux backend",
                    name(e)
                ),
                Some(p) => format!(
                    "perf_event_open was refused ({}) although perf_event_paranoid is {p}: a \
                     seccomp filter or security module forbids it (containers often do)",
                    name(e)
                ),
                None => format!(
                    "perf_event_open was refused ({}) and the kernel has no \
                     perf_event_paranoid sysctl",
                    name(e)
                ),
            },
        ),
        Err(e) => (
            BackendKind::Linux,
            format!(
                "perf_event_open is allowed: the trial open failed with {} (errno {e}), not a \
                 refusal of perf_event, which allocate reports",
                name(e)
            ),
        ),
    }
}

/// A `PMC_BACKEND` value that chooses nothing: every call says so.
fn invalid(why: String) -> Chosen {
    Chosen::new(
        Arc::new(InvalidSelection { why: why.clone() }),
        format!("invalid: {why}"),
    )
}

impl Backend {
    /// The backend this process uses (chosen once: [`select`], else
    /// `PMC_BACKEND`, else the automatic choice; see [`active`]): the one
    /// [`Owner::global`](crate::Owner::global) counts on.
    pub fn selected() -> Backend {
        Backend::from_dyn(default_backend())
    }
}

#[cfg(test)]
mod tests;
