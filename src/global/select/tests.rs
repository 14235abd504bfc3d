//! The choice of backend, on private [`Selector`]s (the process's own is
//! left alone: other tests allocate through it) and the pure automatic
//! decision. The process-wide paths (`PMC_BACKEND`, `select` before the
//! first allocate) run in child processes in the live suite
//! (`tests/live/portable.rs`).

use super::*;
use crate::{Cpu, Flags, Mode};

fn portable_by_default() -> Chosen {
    build(BackendKind::Portable, "automatic (test)".into())
}

/// What `decide_linux` concludes, as (backend name, reason).
fn decide(trial: Result<(), i32>, paranoid: Option<i32>) -> (&'static str, String) {
    let (kind, reason) = decide_linux(trial, paranoid);
    (kind.name(), reason)
}

/// (trial open result, perf_event_paranoid, backend, words the reason has).
type Row = (Result<(), i32>, Option<i32>, &'static str, &'static str);

#[test]
fn the_automatic_choice_on_linux_falls_back_only_when_perf_event_is_refused() {
    let table: &[Row] = &[
        (Ok(()), Some(2), "linux-perf_event", "succeeded"),
        // A capability holder at paranoid 3 still opens: perf_event.
        (Ok(()), Some(3), "linux-perf_event", "succeeded"),
        // Debian/Android's paranoid 3 refuses unprivileged callers.
        (
            Err(libc::EACCES),
            Some(3),
            "portable",
            "perf_event_paranoid is 3",
        ),
        (
            Err(libc::EPERM),
            Some(4),
            "portable",
            "perf_event_paranoid is 4",
        ),
        // Refused below 3: seccomp (Docker's default profile: EPERM) or an LSM.
        (Err(libc::EPERM), Some(2), "portable", "seccomp"),
        (Err(libc::EACCES), Some(-1), "portable", "seccomp"),
        // No perf_event in the kernel, or seccomp's ENOSYS.
        (Err(libc::ENOSYS), None, "portable", "ENOSYS"),
        (Err(libc::ENOSYS), Some(2), "portable", "ENOSYS"),
        (
            Err(libc::EACCES),
            None,
            "portable",
            "no perf_event_paranoid",
        ),
        // Not a refusal of perf_event: the linux backend reports it.
        (
            Err(libc::EMFILE),
            Some(2),
            "linux-perf_event",
            "not a refusal",
        ),
        (
            Err(libc::ENOENT),
            Some(2),
            "linux-perf_event",
            "not a refusal",
        ),
    ];
    for (trial, paranoid, want, words) in table {
        let (got, reason) = decide(*trial, *paranoid);
        assert_eq!(got, *want, "{trial:?} at paranoid {paranoid:?}: {reason}");
        assert!(
            reason.contains(words),
            "{trial:?} at {paranoid:?}: {reason:?} lacks {words:?}"
        );
    }
}

#[test]
fn select_before_any_use_chooses_and_a_later_different_choice_is_ebusy() {
    let selector = Selector::new(portable_by_default);
    selector.select(BackendKind::Portable).unwrap();
    let chosen = selector.get();
    assert_eq!(chosen.choice.name, "portable");
    assert!(
        chosen.choice.reason.contains("select(Portable)"),
        "{:?}",
        chosen.choice
    );
    // Choosing the one in use again is fine.
    selector.select(BackendKind::Portable).unwrap();
    if BackendKind::Linux.is_compiled() {
        let e = selector.select(BackendKind::Linux).unwrap_err();
        assert_eq!(e.errno(), libc::EBUSY, "{e}");
        assert!(e.to_string().contains("before the first allocate"), "{e}");
    }
}

#[test]
fn select_after_the_automatic_choice_is_ebusy_unless_it_is_the_same() {
    let selector = Selector::new(portable_by_default);
    // A machine query (or allocate) made the automatic choice.
    assert_eq!(selector.get().choice.reason, "automatic (test)");
    selector.select(BackendKind::Portable).unwrap();
    if BackendKind::Linux.is_compiled() {
        assert_eq!(
            selector.select(BackendKind::Linux).unwrap_err().errno(),
            libc::EBUSY
        );
    } else {
        let e = selector.select(BackendKind::Linux).unwrap_err();
        assert!(matches!(e, Error::NotSupported { .. }), "{e}");
    }
    assert_eq!(selector.get().choice.name, "portable");
}

#[test]
fn pmc_backend_values() {
    assert!(from_env("").is_none());
    assert!(from_env(" auto ").is_none());
    let portable = from_env("portable").unwrap();
    assert_eq!(portable.choice.name, "portable");
    assert_eq!(portable.choice.reason, "PMC_BACKEND=portable");
    assert_eq!(
        from_env("Linux").unwrap().choice.name,
        if BackendKind::Linux.is_compiled() {
            "linux-perf_event"
        } else {
            "none"
        }
    );
    // A typo is an error at every call, never a silent other backend.
    let bogus = from_env("protable").unwrap();
    assert_eq!(bogus.choice.name, "none");
    let e = crate::Owner::new(bogus.backend.clone())
        .allocate_with_count("task-clock", Mode::TC, Flags::empty(), Cpu::Any, 0)
        .unwrap_err();
    assert_eq!(e.errno(), libc::EINVAL, "{e}");
    let text = e.to_string();
    assert!(
        text.contains("PMC_BACKEND=\"protable\"") && text.contains("portable"),
        "{text}"
    );
    assert_eq!(bogus.backend.cpuinfo().unwrap_err().errno(), libc::EINVAL);
}

#[test]
fn the_choice_names_itself_and_what_is_compiled_in() {
    let chosen = portable_by_default();
    let text = chosen.choice.to_string();
    assert!(
        text.starts_with("portable (automatic (test)); compiled in: "),
        "{text}"
    );
    assert!(text.contains("portable"), "{text}");
    assert_eq!(
        compiled_backends().contains(&"linux-perf_event"),
        cfg!(all(
            any(target_os = "linux", target_os = "android"),
            not(pmc_force_portable)
        ))
    );
    for name in ["linux", "perf_event", "LINUX-PERF_EVENT"] {
        assert_eq!(BackendKind::from_name(name), Some(BackendKind::Linux));
    }
    assert_eq!(
        BackendKind::from_name("portable"),
        Some(BackendKind::Portable)
    );
    assert_eq!(BackendKind::from_name("sim"), None);
}
