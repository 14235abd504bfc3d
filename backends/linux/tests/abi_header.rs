//! Constants of the record decoder checked against the kernel's own
//! header, `/usr/include/linux/perf_event.h` (linux-libc-dev): the
//! callchain context markers of `enum perf_callchain_context`.

use pmc_linux::record::context;

/// `NAME = (__u64)-N,` in the header, as the u64 it denotes.
fn header_u64(header: &str, name: &str) -> u64 {
    let line = header
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("{name} is not in linux/perf_event.h"));
    let value = line
        .split('=')
        .nth(1)
        .and_then(|v| v.trim().trim_end_matches(',').strip_prefix("(__u64)-"))
        .unwrap_or_else(|| panic!("cannot read {line:?}"));
    0u64.wrapping_sub(value.trim().parse::<u64>().expect("a number"))
}

#[test]
fn callchain_context_markers_match_linux_perf_event_h() {
    let header = std::fs::read_to_string("/usr/include/linux/perf_event.h").expect(
        "/usr/include/linux/perf_event.h (apt-get install linux-libc-dev) is the oracle here",
    );
    for (name, ours) in [
        ("PERF_CONTEXT_HV", context::HV),
        ("PERF_CONTEXT_KERNEL", context::KERNEL),
        ("PERF_CONTEXT_USER", context::USER),
        ("PERF_CONTEXT_GUEST", context::GUEST),
        ("PERF_CONTEXT_GUEST_KERNEL", context::GUEST_KERNEL),
        ("PERF_CONTEXT_GUEST_USER", context::GUEST_USER),
        ("PERF_CONTEXT_MAX", context::MAX),
    ] {
        assert_eq!(ours, header_u64(&header, name), "{name}");
    }
}
