//! "What works here": for each event class × mode, really open one event
//! the way `Pmc::allocate` would and report success or why not.

use serde::{Deserialize, Serialize};

use crate::Mode;

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

#[cfg(all(
    any(target_os = "linux", target_os = "android"),
    not(pmc_force_portable)
))]
pub(super) use imp::what_works;

#[cfg(not(all(
    any(target_os = "linux", target_os = "android"),
    not(pmc_force_portable)
)))]
pub(super) fn what_works() -> Vec<ClassRow> {
    Vec::new()
}

#[cfg(all(
    any(target_os = "linux", target_os = "android"),
    not(pmc_force_portable)
))]
mod imp {
    use pmc_linux::attr::{Attr, BranchSampleType, SampleType};
    use pmc_linux::error::errno_name;
    use pmc_linux::event::{Event, OpenFlags, Target};

    use super::{ClassRow, MODES, Outcome};
    use crate::backend::linux::plan_for;
    use crate::{Flags, Mode};

    /// A variable whose address the breakpoint row watches.
    static WATCHED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

    #[derive(Clone, Copy)]
    enum Extra {
        None,
        Callchain,
        BranchStack,
    }

    fn classes() -> Vec<(&'static str, String, Extra)> {
        let watched = &WATCHED as *const _ as usize;
        vec![
            ("hardware", "instructions".into(), Extra::None),
            ("software", "cpu-clock".into(), Extra::None),
            ("cache", "L1-dcache-load-misses".into(), Extra::None),
            ("raw", "r00c0".into(), Extra::None),
            (
                "tracepoint",
                "syscalls:sys_enter_getpid".into(),
                Extra::None,
            ),
            ("breakpoint", format!("mem:{watched:#x}/8:w"), Extra::None),
            (
                "uprobe",
                format!(
                    "uprobe:{}:getpid",
                    pmc_linux::probe::mapped_library("/libc.so").map_or_else(
                        || "/lib/x86_64-linux-gnu/libc.so.6".into(),
                        |p| p.display().to_string()
                    )
                ),
                Extra::None,
            ),
            ("kprobe", "kprobe:do_sys_openat2".into(), Extra::None),
            ("sampling", "cycles".into(), Extra::None),
            ("callchain", "cpu-clock".into(), Extra::Callchain),
            ("branch stack", "cycles".into(), Extra::BranchStack),
        ]
    }

    fn fails(kind: impl Into<String>, detail: impl ToString) -> Outcome {
        Outcome::Fails {
            kind: kind.into(),
            detail: detail.to_string(),
        }
    }

    fn try_one(spec: &str, mode: Mode, extra: Extra) -> Outcome {
        match try_spec(spec, mode, extra) {
            Outcome::Fails { kind, detail }
                if matches!(kind.as_str(), "EACCES" | "EPERM") && !spec.contains(",usr") =>
            {
                match try_spec(&format!("{spec},usr"), mode, extra) {
                    Outcome::Works => Outcome::UserOnly,
                    // Still refused for privilege: the first error says it.
                    Outcome::Fails { kind: k2, .. }
                        if matches!(k2.as_str(), "EACCES" | "EPERM") =>
                    {
                        Outcome::Fails { kind, detail }
                    }
                    // Otherwise the user-mode attempt names what else is
                    // missing (no PMU, no tracefs, …).
                    other => other,
                }
            }
            other => other,
        }
    }

    fn try_spec(spec: &str, mode: Mode, extra: Extra) -> Outcome {
        let sampling_only = !matches!(extra, Extra::None);
        if sampling_only && !mode.is_sampling() {
            return Outcome::NotApplicable;
        }
        let flags = match extra {
            Extra::Callchain => Flags::CALLCHAIN,
            _ => Flags::empty(),
        };
        let plan = match plan_for(spec, mode, flags, 100_000) {
            Ok(p) => p,
            Err(e) => {
                let kind = match e.errno() {
                    libc::EOPNOTSUPP => "unsupported".to_string(),
                    n => errno_name(n).to_string(),
                };
                return fails(kind, e);
            }
        };
        let target = if mode.is_system() {
            Target::cpu(0)
        } else {
            Target::CALLER
        };
        for (attr, _) in plan.attrs {
            let attr: Attr = match extra {
                Extra::None => attr,
                Extra::Callchain => {
                    let t = attr.get_sample_type();
                    attr.sample_type(t | SampleType::IP | SampleType::CALLCHAIN)
                }
                Extra::BranchStack => {
                    let t = attr.get_sample_type();
                    attr.sample_type(t | SampleType::IP | SampleType::BRANCH_STACK)
                        .branch_sample_type(BranchSampleType::ANY | BranchSampleType::USER)
                }
            };
            let opened = match &plan.config1_string {
                Some(s) => Event::open_with_string(&attr, s, target, None, OpenFlags::empty()),
                None => Event::open(&attr, target, None, OpenFlags::empty()),
            };
            let result = opened.and_then(|ev| {
                ev.enable()?;
                // Give the event something to see: a write to the watched
                // variable, and a getpid (libc function and system call).
                WATCHED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                std::hint::black_box(std::process::id());
                ev.disable()?;
                if !ev.is_sampling() {
                    ev.read()?;
                }
                Ok(())
            });
            if let Err(e) = result {
                return fails(errno_name(e.errno()), e);
            }
        }
        Outcome::Works
    }

    pub(in crate::probe) fn what_works() -> Vec<ClassRow> {
        classes()
            .into_iter()
            .map(|(class, spec, extra)| ClassRow {
                class: class.into(),
                outcomes: MODES
                    .iter()
                    .map(|m| (*m, try_one(&spec, *m, extra)))
                    .collect(),
                spec,
            })
            .collect()
    }
}
