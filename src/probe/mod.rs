//! "What can this machine count, and why not?"
//!
//! [`Environment::detect`] gathers the facts that decide what perf_event
//! allows (paranoid level, capabilities, PMUs, tracefs, whether hardware
//! counters really count); with the `test-doubles` feature, `Requirement`
//! checks a need against them with the kernel's rules; [`Report`] is the serialisable answer that
//! `cargo xtask probe` prints.

#[cfg(any(test, feature = "test-doubles"))]
mod requirements;
mod works;

use serde::{Deserialize, Serialize};

use crate::backend::Backend;

pub use crate::backend::facts::{Environment, PmuSummary, ReadPathReport, Tracefs, is_core_pmu};
/// The test gate: what a test needs of the machine, checked against an
/// [`Environment`] (the workspace's own tests; `test-doubles` feature).
#[cfg(any(test, feature = "test-doubles"))]
pub use requirements::{Requirement, Verdict};
pub use works::{ClassRow, MODES, Outcome};

/// The capability report of this machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The backend in use.
    pub backend: String,
    /// The kernel release.
    pub kernel: String,
    /// The facts requirements are checked against.
    pub environment: Environment,
    /// The PMUs.
    pub pmus: Vec<PmuSummary>,
    /// `kernel.perf_event_max_sample_rate`.
    pub max_sample_rate: Option<u64>,
    /// `kernel.perf_event_mlock_kb`.
    pub mlock_kb: Option<u64>,
    /// `kernel.perf_event_max_stack`.
    pub max_stack: Option<u32>,
    /// `kernel.nmi_watchdog`.
    pub nmi_watchdog: Option<i32>,
    /// `RLIMIT_NOFILE` (soft, hard).
    pub nofile: (u64, u64),
    /// The hypervisor, when running in a virtual machine.
    pub virtual_machine: Option<String>,
    /// rdpmc versus read(2), measured.
    pub read_path: ReadPathReport,
    /// Each event class tried in each mode.
    pub what_works: Vec<ClassRow>,
}

impl Report {
    /// Probes this machine: what `cargo xtask probe` prints. The kernel,
    /// PMUs, limits and read path are what the selected backend
    /// ([`crate::global::active`]) reports of its platform (nothing for
    /// the portable one); the environment is the machine's own facts
    /// ([`Environment::detect`]), whichever backend runs.
    ///
    /// ```
    /// let report = pmc::probe::Report::detect();
    /// // Each event class, tried in each mode, and what happened.
    /// for row in &report.what_works {
    ///     println!("{row:?}");
    /// }
    /// assert!(report.to_text().contains("perf_event_paranoid"));
    /// ```
    pub fn detect() -> Report {
        let environment = Environment::detect();
        let facts = Backend::selected().get().platform_facts();
        Report {
            backend: crate::global::active().to_string(),
            kernel: facts.kernel,
            environment,
            pmus: facts.pmus,
            max_sample_rate: facts.max_sample_rate,
            mlock_kb: facts.mlock_kb,
            max_stack: facts.max_stack,
            nmi_watchdog: facts.nmi_watchdog,
            nofile: facts.nofile,
            virtual_machine: facts.virtual_machine,
            read_path: facts.read_path,
            what_works: works::what_works(),
        }
    }

    /// A human-readable summary.
    pub fn to_text(&self) -> String {
        use std::fmt::Write as _;
        let e = &self.environment;
        let mut s = String::new();
        if !e.has_core_pmu() {
            let _ = writeln!(
                s,
                "NO HARDWARE PMU: hardware/cache/raw events cannot be counted here{}; \
                 software events, tracepoints and breakpoints still work.",
                self.virtual_machine
                    .as_ref()
                    .map(|v| format!(" (virtual machine: {v})"))
                    .unwrap_or_default()
            );
        }
        let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
        let _ = writeln!(s, "backend              {}", self.backend);
        let _ = writeln!(s, "kernel               {}", self.kernel);
        let _ = writeln!(
            s,
            "perf_event_paranoid  {}  (effective for this caller: {})",
            opt(e.paranoid.map(|p| p.to_string())),
            opt(e.effective_paranoid().map(|p| p.to_string()))
        );
        let _ = writeln!(
            s,
            "user                 {}  CAP_PERFMON={} CAP_SYS_ADMIN={} CAP_SYS_PTRACE={} CAP_IPC_LOCK={}",
            if e.root { "root" } else { "not root" },
            yes(e.cap_perfmon),
            yes(e.cap_sys_admin),
            yes(e.cap_sys_ptrace),
            yes(e.cap_ipc_lock)
        );
        let _ = writeln!(
            s,
            "max_sample_rate      {}",
            opt(self.max_sample_rate.map(|v| v.to_string()))
        );
        let _ = writeln!(
            s,
            "mlock_kb             {}",
            opt(self.mlock_kb.map(|v| v.to_string()))
        );
        let _ = writeln!(
            s,
            "max_stack            {}",
            opt(self.max_stack.map(|v| v.to_string()))
        );
        let _ = writeln!(
            s,
            "nmi_watchdog         {}",
            opt(self.nmi_watchdog.map(|v| v.to_string()))
        );
        let _ = writeln!(
            s,
            "RLIMIT_NOFILE        {} (hard {})",
            self.nofile.0, self.nofile.1
        );
        let _ = writeln!(
            s,
            "virtual machine      {}",
            opt(self.virtual_machine.clone())
        );
        let _ = writeln!(
            s,
            "tracefs              {}",
            match &e.tracefs {
                Tracefs::Readable(p) => format!("{p} (readable)"),
                Tracefs::Unreadable(p) => format!("{p} (NOT readable by this user)"),
                Tracefs::NotMounted => match &e.tracefs_mount_command {
                    Some(c) => format!("not mounted (as root: {c})"),
                    None => "not mounted".into(),
                },
                Tracefs::Broken(p) =>
                    format!("{p} is mounted but its events are unreadable (BROKEN)"),
            }
        );
        let _ = writeln!(s, "hardware counting    {}", yes(e.hardware_counting));
        let pmu_type = |name: &str| {
            self.pmus
                .iter()
                .find(|p| p.name == name)
                .map(|p| format!("yes (type {})", opt(p.type_id.map(|t| t.to_string()))))
                .unwrap_or_else(|| "no".into())
        };
        let _ = writeln!(
            s,
            "probes               uprobe PMU: {}; kprobe PMU: {}",
            pmu_type("uprobe"),
            pmu_type("kprobe")
        );
        let rp = &self.read_path;
        let _ = writeln!(
            s,
            "rdpmc                {}",
            rp.sysfs_setting
                .clone()
                .unwrap_or_else(|| "no core PMU (no rdpmc sysfs setting)".into())
        );
        let _ = writeln!(
            s,
            "read path            {} chosen; read(2) {} ns, rdpmc {} (on {}: cap_user_rdpmc={}, index={}){}",
            rp.chosen,
            opt(rp.syscall_ns.map(|v| format!("{v:.0}"))),
            opt(rp.rdpmc_ns.map(|v| format!("{v:.0} ns"))),
            if rp.event.is_empty() { "-" } else { &rp.event },
            opt(rp.cap_user_rdpmc.map(|b| yes(b).to_string())),
            opt(rp.index.map(|v| v.to_string())),
            rp.note
                .as_ref()
                .map(|n| format!("; {n}"))
                .unwrap_or_default()
        );
        let _ = writeln!(s, "\nPMUs:");
        let _ = writeln!(
            s,
            "  {:<14} {:>5} {:>7}  {:<10} {:<28} caps",
            "name", "type", "events", "cpus", "formats"
        );
        for p in &self.pmus {
            let _ = writeln!(
                s,
                "  {:<14} {:>5} {:>7}  {:<10} {:<28} {}",
                p.name,
                opt(p.type_id.map(|t| t.to_string())),
                p.events,
                opt(p.cpus.clone()),
                p.formats.join(","),
                p.caps
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        }
        if !self.what_works.is_empty() {
            s.push_str(&what_works_table(&self.what_works));
        }
        s
    }
}

/// The class × mode table, then each distinct failure once.
fn what_works_table(rows: &[ClassRow]) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let mut notes: Vec<String> = Vec::new();
    let _ = writeln!(s, "\nWhat works here (each cell really opened one event):");
    let _ = write!(s, "  {:<13}", "class");
    for m in MODES {
        let _ = write!(s, " {:<16}", m.to_string());
    }
    let _ = writeln!(s, " spec");
    for row in rows {
        let _ = write!(s, "  {:<13}", row.class);
        for (_, outcome) in &row.outcomes {
            let cell = match outcome {
                Outcome::Works => "ok".to_string(),
                Outcome::UserOnly => "usr only".to_string(),
                Outcome::NotApplicable => "-".to_string(),
                Outcome::Fails { kind, detail } => {
                    // The same failure in several modes differs only in
                    // the pid/cpu of the call: note the reason once.
                    let reason = without_target(detail);
                    let n = match notes.iter().position(|d| *d == reason) {
                        Some(i) => i + 1,
                        None => {
                            notes.push(reason);
                            notes.len()
                        }
                    };
                    format!("{kind} [{n}]")
                }
            };
            let _ = write!(s, " {cell:<16}");
        }
        let _ = writeln!(s, " {}", row.spec);
    }
    for (i, n) in notes.iter().enumerate() {
        let _ = writeln!(s, "  [{}] {n}", i + 1);
    }
    s
}

/// `detail` without the `, pid N, cpu N` of the call it names, so that
/// the same failure in several modes is noted once.
fn without_target(detail: &str) -> String {
    let mut out = String::with_capacity(detail.len());
    let mut rest = detail;
    while let Some(at) = rest.find(", pid ") {
        out.push_str(&rest[..at]);
        let after = &rest[at + ", pid ".len()..];
        let pid_len = after
            .find(|c: char| !(c.is_ascii_digit() || c == '-'))
            .unwrap_or(after.len());
        match after[pid_len..].strip_prefix(", cpu ") {
            Some(cpu) => {
                let cpu_len = cpu
                    .find(|c: char| !(c.is_ascii_digit() || c == '-'))
                    .unwrap_or(cpu.len());
                rest = &cpu[cpu_len..];
            }
            None => {
                out.push_str(", pid ");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_leave_out_the_target_of_the_call() {
        assert_eq!(
            without_target(
                "perf_event_open(instructions, pid 11705, cpu -1) is unavailable (ENXIO): no PMU"
            ),
            "perf_event_open(instructions) is unavailable (ENXIO): no PMU"
        );
        assert_eq!(
            without_target("perf_event_open(rc0, pid -1, cpu 0) failed: x, pid 3"),
            "perf_event_open(rc0) failed: x, pid 3"
        );
        assert_eq!(without_target("no target here"), "no target here");
    }
}
