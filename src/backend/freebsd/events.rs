//! A parsed [`EventSpec`] → the specifier string libpmc's `pmc_allocate`
//! resolves (pmc-freebsd's `EventResolver`, lib/libpmc/libpmc.c).
//!
//! libpmc resolves strings, so most specifiers pass through as written:
//! class-prefixed names (`SOFT-PAGE_FAULT.ALL`, `k8-dc-access,usr`),
//! pmu-events names (`inst_retired.any`) and generic names with their
//! FreeBSD qualifiers (`instructions,usr`, which libpmc's pmu-events
//! aliases map). What our parser names in perf's words is translated where
//! hwpmc has the same event (`page-faults` → `SOFT-PAGE_FAULT.ALL`, `tsc`
//! → `TSC-cycles`); Linux-only forms are refused with the reason.

use crate::spec::{EventName, EventSpec, SoftwareEvent, TermValue};
use crate::{Error, Result};

/// The libpmc specifier for `spec`.
pub fn libpmc_spec(spec: &EventSpec) -> Result<String> {
    // libpmc.c tsc_event_table: the TSC class's one event is "cycles"; our
    // parser reads `tsc` and `TSC-TSC` as the msr PMU's tsc counter.
    if let EventName::Pmu { pmu, terms } = &spec.event
        && pmu == "msr"
        && terms.len() == 1
        && terms[0].name == "tsc"
        && terms[0].value == TermValue::Flag
    {
        return Ok("TSC-cycles".into());
    }
    if spec.class_prefix.is_some() {
        return Ok(spec.text.clone());
    }
    let linux_only = |what: &str| Error::NotSupported {
        what: format!("{what} {:?}", spec.text),
        why: "hwpmc has no such events (they are Linux perf_event's); list hwpmc's with \
              pmccontrol -L"
            .into(),
        source: None,
    };
    match &spec.event {
        // sys/kern/subr_trap.c / vm_fault.c: the page_fault soft events.
        EventName::Software(SoftwareEvent::PageFaults) => Ok(format!(
            "SOFT-PAGE_FAULT.ALL{}",
            qualifiers(&spec.text).unwrap_or_default()
        )),
        EventName::Software(other) => Err(Error::NotSupported {
            what: format!("software event {other}"),
            why: "hwpmc's SOFT class counts page faults (SOFT-PAGE_FAULT.*), clock ticks \
                  (SOFT-CLOCK.*), interrupts and lock failures, not this; list them with \
                  pmccontrol -L"
                .into(),
            source: None,
        }),
        EventName::Hardware(_) | EventName::Cache(_) | EventName::Named(_) => Ok(spec.text.clone()),
        EventName::Raw(_) => Err(linux_only("raw perf encoding")),
        EventName::Pmu { .. } => Err(linux_only("sysfs PMU event")),
        EventName::Tracepoint { .. } => Err(linux_only("tracepoint")),
        EventName::Breakpoint { .. } => Err(linux_only("breakpoint")),
        EventName::Probe(_) => Err(linux_only("probe")),
    }
}

/// The FreeBSD qualifiers of a specifier (`,usr,os`), if any.
fn qualifiers(text: &str) -> Option<String> {
    text.find(',').map(|i| text[i..].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapped(text: &str) -> Result<String> {
        libpmc_spec(&crate::spec::parse(text).expect("parses"))
    }

    #[test]
    fn libpmc_syntax_passes_through_and_perf_names_translate() {
        // lib/libpmc/libpmc.c: class prefixes `SOFT-`, `K8-`, `TSC-`
        // select a class table; the soft events are the kernel's names.
        assert_eq!(
            mapped("SOFT-PAGE_FAULT.ALL").unwrap(),
            "SOFT-PAGE_FAULT.ALL"
        );
        assert_eq!(mapped("k8-dc-access,usr").unwrap(), "k8-dc-access,usr");
        assert_eq!(mapped("inst_retired.any").unwrap(), "inst_retired.any");
        assert_eq!(mapped("instructions,usr").unwrap(), "instructions,usr");
        assert_eq!(mapped("page-faults").unwrap(), "SOFT-PAGE_FAULT.ALL");
        // libpmc's qualifiers follow the translated name.
        assert_eq!(
            mapped("page-faults,usr").unwrap(),
            "SOFT-PAGE_FAULT.ALL,usr"
        );
        assert_eq!(mapped("tsc").unwrap(), "TSC-cycles");
        assert_eq!(mapped("TSC-TSC").unwrap(), "TSC-cycles");
    }

    #[test]
    fn linux_only_forms_are_eopnotsupp_with_the_reason() {
        for text in [
            "task-clock",
            "context-switches",
            "syscalls:sys_enter_write",
            "r1c0",
            "cpu/event=0xc0/",
            "mem:0x1000",
        ] {
            let e = mapped(text).unwrap_err();
            assert_eq!(e.errno(), libc::EOPNOTSUPP, "{text}: {e}");
            assert!(e.to_string().contains("pmccontrol -L"), "{text}: {e}");
        }
    }
}
