//! "What works here": for each event class × mode, really open one event
//! the way `Pmc` would and report success or why not.
//!
//! The events are prepared and opened by the backend in use, through the
//! same `BackendImpl`/`PreparedEvent`/`Counters` calls `Pmc` makes (a process
//! target on the caller for TC/TS, CPU 0 for SC/SS), so the table shows
//! what `pmc` itself can do here. It is a report, not a test gate: the
//! gate ([`super::Environment`]) looks at the machine independently. A
//! sampling cell maps its rings as a sampling PMC does, for the moment it
//! is enabled: the few samples it may take are tagged with PMC id 0, which
//! no PMC has, and reach a log only if the process configured one.

use serde::{Deserialize, Serialize};

use crate::backend::{BackendImpl, EventRequest};
use crate::error::errno_name;
use crate::global::default_backend;
use crate::{Errno, Error, Flags, Mode, Result};

/// The outcome of trying one class in one mode.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    /// The event opened, enabled and read.
    Works,
    /// Only user-mode counting is allowed (`,usr`): the paranoid level
    /// forbids kernel counting to this caller.
    UserOnly,
    /// The combination does not apply (e.g. callchains in a counting mode).
    NotApplicable,
    /// It failed.
    Fails {
        /// The errno name (`ENOENT`, `EACCES`, …) or `unsupported`.
        kind: String,
        /// The full error, with its hint.
        detail: String,
    },
}

/// One class tried in the four modes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassRow {
    /// The class (`hardware`, `software`, `callchain`, …).
    pub class: String,
    /// The specifier tried.
    pub spec: String,
    /// Outcomes in the order SC, SS, TC, TS.
    pub outcomes: Vec<(Mode, Outcome)>,
}

/// The modes in table order.
pub const MODES: [Mode; 4] = [Mode::SC, Mode::SS, Mode::TC, Mode::TS];

/// A variable whose address the breakpoint row watches.
static WATCHED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The sample period of the sampling modes' rows.
const PERIOD: u64 = 100_000;

/// The rows: class, specifier, and whether the class is a sampling feature
/// (callchains), which applies only in the sampling modes.
fn classes() -> Vec<(&'static str, String, Flags)> {
    let watched = &WATCHED as *const _ as usize;
    vec![
        ("hardware", "instructions".into(), Flags::empty()),
        ("software", "cpu-clock".into(), Flags::empty()),
        ("cache", "L1-dcache-load-misses".into(), Flags::empty()),
        // Spelt as the resolver describes a raw event (`r{config:x}`), so
        // the row and its notes name it alike.
        ("raw", "rc0".into(), Flags::empty()),
        (
            "tracepoint",
            "syscalls:sys_enter_getpid".into(),
            Flags::empty(),
        ),
        (
            "breakpoint",
            format!("mem:{watched:#x}/8:w"),
            Flags::empty(),
        ),
        (
            "uprobe",
            format!("uprobe:{}:getpid", libc_path()),
            Flags::empty(),
        ),
        ("kprobe", "kprobe:do_sys_openat2".into(), Flags::empty()),
        ("sampling", "cycles".into(), Flags::empty()),
        ("callchain", "cpu-clock".into(), Flags::CALLCHAIN),
    ]
}

/// The C library this process maps, for the uprobe row.
fn libc_path() -> String {
    cfg_if::cfg_if! {
        if #[cfg(all(any(target_os = "linux", target_os = "android"), not(pmc_force_portable)))] {
            pmc_linux::dynamic_probe::mapped_library("/libc.so").map_or_else(
                || "/lib/x86_64-linux-gnu/libc.so.6".into(),
                |p| p.display().to_string(),
            )
        } else {
            // uprobe paths must be absolute; no platform here has the PMU.
            "/usr/lib/libc.so".into()
        }
    }
}

/// The errno name of a failure: the operating system's when it gave one
/// (`EACCES`), else libpmc's (`ENXIO`, `EINVAL`), `unsupported` for
/// EOPNOTSUPP.
fn kind(e: &Error) -> String {
    match e.os_errno().unwrap_or_else(|| e.errno().raw()) {
        libc::EOPNOTSUPP => "unsupported".into(),
        n => errno_name(n).into(),
    }
}

fn fails(e: &Error) -> Outcome {
    Outcome::Fails {
        kind: kind(e),
        detail: e.to_string(),
    }
}

fn try_one(backend: &dyn BackendImpl, spec: &str, mode: Mode, flags: Flags) -> Outcome {
    match attempt(backend, spec, mode, flags) {
        Err(e) if refused_for_privilege(&e) && !spec.contains(",usr") => {
            match attempt(backend, &format!("{spec},usr"), mode, flags) {
                Ok(Outcome::Works) => Outcome::UserOnly,
                // Still refused for privilege: the first error says it.
                Err(again) if refused_for_privilege(&again) => fails(&e),
                // Otherwise the user-mode attempt names what else is
                // missing (no PMU, no tracefs, …).
                other => other.unwrap_or_else(|e| fails(&e)),
            }
        }
        other => other.unwrap_or_else(|e| fails(&e)),
    }
}

/// Whether the OS refused for lack of privilege (EACCES or EPERM), which
/// user-mode counting (`,usr`) may not need.
fn refused_for_privilege(e: &Error) -> bool {
    let errno = e.os_errno().map_or(e.errno(), Errno::from_raw);
    errno == Errno::ACCESS || errno == Errno::PERM
}

fn attempt(backend: &dyn BackendImpl, spec: &str, mode: Mode, flags: Flags) -> Result<Outcome> {
    if flags.contains(Flags::CALLCHAIN) && !mode.is_sampling() {
        return Ok(Outcome::NotApplicable);
    }
    open_enable_read(backend, spec, mode, flags).map(|()| Outcome::Works)
}

/// Prepares `spec` for `mode`, opens it on the caller (TC/TS) or CPU 0
/// (SC/SS), and enables, disables and (when counting) reads it.
fn open_enable_read(
    backend: &dyn BackendImpl,
    spec: &str,
    mode: Mode,
    flags: Flags,
) -> Result<(), Error> {
    let parsed = crate::spec::parse(spec).map_err(|source| Error::InvalidSpec {
        spec: spec.to_string(),
        source,
    })?;
    let prepared = backend.prepare(&EventRequest {
        spec: &parsed,
        mode,
        flags,
        sample_period: PERIOD,
        pmcid: 0,
        buffer_pages: None,
        user_stack: None,
    })?;
    let mut counters = if mode.is_system() {
        prepared.open_cpu(0)?
    } else {
        prepared.open_process(backend.caller_pid(), false)?
    };
    counters.enable()?;
    // Give the event something to see: a write to the watched variable,
    // and a getpid (libc function and system call).
    WATCHED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    std::hint::black_box(std::process::id());
    counters.disable()?;
    if !mode.is_sampling() {
        counters.read()?;
    }
    Ok(())
}

/// Every class in every mode, with the backend in use.
pub(super) fn what_works() -> Vec<ClassRow> {
    what_works_on(&*default_backend())
}

/// Every class in every mode, on `backend`.
fn what_works_on(backend: &dyn BackendImpl) -> Vec<ClassRow> {
    classes()
        .into_iter()
        .map(|(class, spec, flags)| ClassRow {
            class: class.into(),
            outcomes: MODES
                .iter()
                .map(|m| (*m, try_one(backend, &spec, *m, flags)))
                .collect(),
            spec,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::sim::SimBackend;
    use crate::backend::unsupported::UnsupportedBackend;

    #[test]
    fn the_raw_row_is_spelt_as_its_notes_spell_it() {
        // The notes quote the resolver's description, `r{config:x}`; the
        // row said `r00c0` and its note `rc0`.
        let (_, spec, _) = classes()
            .into_iter()
            .find(|(class, _, _)| *class == "raw")
            .expect("a raw row");
        let parsed = crate::spec::parse(&spec).expect("the raw row parses");
        let crate::spec::EventName::Raw(config) = parsed.event else {
            panic!("{spec} is not a raw event");
        };
        assert_eq!(spec, format!("r{config:x}"));
    }

    fn row<'a>(rows: &'a [ClassRow], class: &str) -> Vec<&'a Outcome> {
        rows.iter()
            .find(|r| r.class == class)
            .unwrap_or_else(|| panic!("no {class} row"))
            .outcomes
            .iter()
            .map(|(_, o)| o)
            .collect()
    }

    /// The simulator counts generic software, hardware and cache events in
    /// every mode and supports no other class (EOPNOTSUPP): the table says
    /// exactly that,
    /// with callchains not applicable to the counting modes (SC, TC).
    #[test]
    fn the_table_reports_what_the_backend_opens() {
        let sim = SimBackend::new(2);
        let rows = what_works_on(&*sim);
        assert_eq!(rows.len(), classes().len());
        for class in ["software", "hardware", "cache", "sampling"] {
            assert!(
                row(&rows, class).iter().all(|o| **o == Outcome::Works),
                "{class}: {:?}",
                row(&rows, class)
            );
        }
        assert_eq!(
            row(&rows, "callchain"),
            [
                &Outcome::NotApplicable,
                &Outcome::Works,
                &Outcome::NotApplicable,
                &Outcome::Works
            ]
        );
        for class in ["raw", "tracepoint", "breakpoint", "uprobe", "kprobe"] {
            for o in row(&rows, class) {
                assert!(
                    matches!(o, Outcome::Fails { kind, .. } if kind == "unsupported"),
                    "{class}: {o:?}"
                );
            }
        }
    }

    /// The simulator, refusing (EACCES) every event that counts the
    /// kernel: a caller at paranoid 2.
    #[derive(Debug)]
    struct UserOnlySim(std::sync::Arc<SimBackend>);

    impl BackendImpl for UserOnlySim {
        fn name(&self) -> &'static str {
            "user-only sim"
        }
        fn prepare(
            &self,
            request: &EventRequest<'_>,
        ) -> crate::Result<std::sync::Arc<dyn crate::backend::PreparedEvent>> {
            match request.spec.qualifiers.privilege {
                Some(p) if !p.kernel && !p.hypervisor => self.0.prepare(request),
                _ => Err(Error::PermissionDenied {
                    op: format!("open {}", request.spec.text).into(),
                    source: std::io::Error::from_raw_os_error(libc::EACCES),
                    hint: None,
                    reason: None,
                }),
            }
        }
        fn caller_pid(&self) -> u32 {
            self.0.caller_pid()
        }
        fn process_exists(&self, pid: u32) -> bool {
            self.0.process_exists(pid)
        }
        fn online_cpus(&self) -> Vec<u32> {
            self.0.online_cpus()
        }
        fn monotonic_ns(&self) -> u64 {
            self.0.monotonic_ns()
        }

        fn cpuinfo(&self) -> crate::Result<crate::CpuInfo> {
            self.0.cpuinfo()
        }
        fn event_names(&self, class: &crate::Class) -> crate::Result<Vec<String>> {
            self.0.event_names(class)
        }
    }

    /// A refusal for privilege is retried user-only ("usr only" when that
    /// works; refused again, the first error stands). Other refusals are
    /// reported as they are.
    #[test]
    fn privilege_refusals_are_retried_user_only() {
        let user_only = UserOnlySim(SimBackend::new(1));
        let rows = what_works_on(&user_only);
        assert!(
            row(&rows, "software")
                .iter()
                .all(|o| **o == Outcome::UserOnly),
            "{:?}",
            row(&rows, "software")
        );
        // User-only does not help a class the machine lacks: that is said.
        for o in row(&rows, "kprobe") {
            assert!(
                matches!(o, Outcome::Fails { kind, .. } if kind == "unsupported"),
                "{o:?}"
            );
        }
        let sim = SimBackend::new(1);
        sim.refuse_opens(Some(libc::EACCES));
        for o in row(&what_works_on(&*sim), "software") {
            assert!(
                matches!(o, Outcome::Fails { kind, detail } if kind == "EACCES" && detail.contains("refused")),
                "{o:?}"
            );
        }
        sim.refuse_opens(Some(libc::EMFILE));
        for o in row(&what_works_on(&*sim), "software") {
            assert!(
                matches!(o, Outcome::Fails { kind, .. } if kind == "EMFILE"),
                "{o:?}"
            );
        }
    }

    /// Without a backend every cell says so (ENXIO), and the rows are
    /// still listed.
    #[test]
    fn no_backend_fails_every_cell_with_enxio() {
        let rows = what_works_on(&UnsupportedBackend);
        for r in &rows {
            for (m, o) in &r.outcomes {
                if r.class == "callchain" && !m.is_sampling() {
                    assert_eq!(*o, Outcome::NotApplicable);
                } else {
                    assert!(
                        matches!(o, Outcome::Fails { kind, .. } if kind == "ENXIO"),
                        "{} {m}: {o:?}",
                        r.class
                    );
                }
            }
        }
    }
}
