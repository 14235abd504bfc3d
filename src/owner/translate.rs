//! hwpmc's logging rules, once for every backend: neutral
//! [`BackendEvent`]s in, pmclog records out.
//!
//! - a sample becomes one CALLCHAIN: the user chain for a user-mode
//!   sample, the kernel chain for a kernel-mode one, and with
//!   `USERCALLCHAIN` the kernel frames followed by the user stack the
//!   kernel was entered from (`pmc_capture_user_callchain`);
//! - a (thread, CPU) slice's value is the difference of consecutive totals,
//!   logged as PROCCSW under `LOG_PROCCSW` and summed per process
//!   (`pmc_process_csw_out`);
//! - a process exit logs PROCEXIT under `LOG_PROCEXIT` with the process's
//!   value for counting PMCs (`pmc_process_exit`), SYSEXIT for sampling
//!   PMCs; a thread
//!   exit logs THR_EXIT (`pmc_process_thread_delete`);
//! - before a sampling PMC's first records in a log come the mappings that
//!   already exist: the attached processes' (`pmc_log_process_mappings`),
//!   every process's once per log for a system PMC
//!   (`pmc_log_all_process_mappings`), and the kernel's once per log when
//!   samples may come from the kernel (`pmc_log_kernel_mappings`).

use std::collections::{BTreeMap, HashMap};

use crate::Flags;
use crate::backend::event::{BackendEvent, Callchain};
pub use crate::backend::source::MappingSource;
use crate::log::LogRecord;

/// What the rules depend on for one PMC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rules {
    /// The PMC's id (`pl_pmcid`).
    pub pmcid: u32,
    /// Its flags (`LOG_PROCCSW`, `LOG_PROCEXIT`, `USERCALLCHAIN`).
    pub flags: Flags,
    /// Whether it samples (CALLCHAIN, SYSEXIT and THR_EXIT are logged for
    /// sampling PMCs only).
    pub sampling: bool,
    /// Whether samples may come from the kernel (its mapping is logged).
    pub kernel_samples: bool,
    /// Whether the PMC is system-wide (every process's mappings are
    /// logged).
    pub system: bool,
    /// Whether the backend reports each thread's last slice as it exits,
    /// so that a process's slices add up to its whole value (else its
    /// value comes from [`BackendEvent::ExitValue`] or the exit itself).
    pub exit_slices: bool,
}

/// The per-PMC state the rules keep between batches.
#[derive(Debug)]
pub struct Translator {
    rules: Rules,
    /// The counter's total at the last slice of each (tid, cpu).
    last_slice: HashMap<(u32, u32), u64>,
    /// The sum of each live process's slices.
    process_value: HashMap<u32, u64>,
    /// Values reported apart from exits, by process.
    exit_values: HashMap<u32, u64>,
    /// Attached processes whose existing mappings are still to be logged.
    pending_mappings: Vec<u32>,
    /// The log was closed while the PMC ran: hwpmc stops the PMCs that
    /// write into a log as it is deconfigured, so what this one still
    /// produces is dropped until its owner stops it.
    log_closed: bool,
    /// Records dropped that way.
    discarded: u64,
    /// The mappings hwpmc logged itself ([`BackendEvent::Logged`] MAP_INs,
    /// less its MAP_OUTs and the exited processes'), by (pid, start): hwpmc
    /// writes a process's MAP_INs once, at attach (and the kernel's at the
    /// first start per hwpmc log), so a log that missed them gets them
    /// from here.
    logged_mappings: BTreeMap<(u32, u64), LogRecord>,
    /// Some of `logged_mappings` never reached the log now configured (they
    /// came with no log, or the log they went into was closed): they are
    /// logged again before the PMC's next records.
    replay_logged_mappings: bool,
}

impl Translator {
    /// A translator for one PMC.
    pub fn new(rules: Rules) -> Translator {
        Translator {
            rules,
            last_slice: HashMap::new(),
            process_value: HashMap::new(),
            exit_values: HashMap::new(),
            pending_mappings: Vec::new(),
            log_closed: false,
            discarded: 0,
            logged_mappings: BTreeMap::new(),
            replay_logged_mappings: false,
        }
    }

    /// The log this PMC writes into was closed while it ran: its records
    /// are dropped from now until [`Translator::stopped`].
    pub fn log_closed(&mut self) {
        self.log_closed = true;
        self.replay_logged_mappings = !self.logged_mappings.is_empty();
    }

    /// The owner had no log for the batch just translated (its records
    /// were dropped): the next log needs the mappings hwpmc logged.
    pub fn log_absent(&mut self) {
        self.replay_logged_mappings = !self.logged_mappings.is_empty();
    }

    /// The PMC was stopped: a later start writes into the log configured
    /// then.
    pub fn stopped(&mut self) {
        self.log_closed = false;
    }

    /// Records dropped because the log was closed under the running PMC.
    #[cfg(test)]
    pub fn discarded(&self) -> u64 {
        self.discarded
    }

    /// The PMC was attached to these processes: a sampling PMC logs their
    /// existing mappings before its first records.
    pub fn attached(&mut self, pids: impl IntoIterator<Item = u32>) {
        if self.rules.sampling {
            self.pending_mappings.extend(pids);
        }
    }

    /// The mappings to log, stamped `at`, before the PMC's records go into
    /// the configured log (call only with a log configured): the attached
    /// processes' the first time, and the kernel's and every process's
    /// when this PMC is the first of the log to need them — the log's
    /// once-per-log claims are given (each asked only by a PMC that needs
    /// it, since asking takes it).
    pub fn initial_mappings_claiming(
        &mut self,
        at: u64,
        source: &dyn MappingSource,
        claim_kernel: impl FnOnce() -> bool,
        claim_all_processes: impl FnOnce() -> bool,
    ) -> Vec<(u64, BackendEvent)> {
        let Rules {
            sampling,
            kernel_samples,
            system,
            ..
        } = self.rules;
        let mut out = Vec::new();
        if self.log_closed {
            return out;
        }
        if sampling && kernel_samples && claim_kernel() {
            out.extend(source.kernel_mapping().map(|m| (at, m)));
        }
        if sampling && system && claim_all_processes() {
            for pid in source.all_processes() {
                out.extend(source.process_mappings(pid).into_iter().map(|m| (at, m)));
            }
        }
        for pid in std::mem::take(&mut self.pending_mappings) {
            out.extend(source.process_mappings(pid).into_iter().map(|m| (at, m)));
        }
        if std::mem::take(&mut self.replay_logged_mappings) {
            out.extend(
                self.logged_mappings
                    .values()
                    .map(|r| (at, BackendEvent::Logged(r.clone()))),
            );
        }
        out
    }

    /// Appends the pmclog records of a batch of `(time, event)`s to `out`,
    /// in time order (events of one time keep their order: a backend may
    /// merge several per-CPU streams).
    pub fn translate(
        &mut self,
        mut events: Vec<(u64, BackendEvent)>,
        out: &mut Vec<(u64, LogRecord)>,
    ) {
        events.sort_by_key(|(t, _)| *t);
        let before = out.len();
        // The rules still see every event (slice totals, exit values), so
        // the state is right when the PMC logs again.
        for (t, event) in events {
            self.one(t, event, out);
        }
        if self.log_closed {
            self.discarded += (out.len() - before) as u64;
            out.truncate(before);
        }
    }

    fn one(&mut self, t: u64, event: BackendEvent, out: &mut Vec<(u64, LogRecord)>) {
        let Rules {
            pmcid,
            flags,
            sampling,
            ..
        } = self.rules;
        match event {
            BackendEvent::Sample {
                pid,
                tid,
                cpu,
                user,
                pc,
                callchain,
                ..
            } => {
                if !sampling {
                    return;
                }
                let (userspace, pcs) = match callchain {
                    None => (user, vec![pc]),
                    Some(Callchain { user: u, .. }) if user => (true, u),
                    Some(Callchain {
                        mut kernel,
                        user: u,
                    }) => {
                        if flags.contains(Flags::USERCALLCHAIN) {
                            kernel.extend(u);
                        }
                        (false, kernel)
                    }
                };
                out.push((
                    t,
                    LogRecord::Callchain {
                        pid,
                        tid,
                        pmcid,
                        cpu: u16::try_from(cpu).unwrap_or(u16::MAX),
                        userspace,
                        pcs,
                    },
                ));
            }
            BackendEvent::Mapping {
                pid, start, path, ..
            } => {
                out.push((t, LogRecord::MapIn { pid, start, path }));
            }
            BackendEvent::Exec {
                pid,
                path,
                base,
                dynaddr,
            } => out.push((
                t,
                LogRecord::ProcExec {
                    pid,
                    pmcid,
                    entry: base,
                    dynaddr,
                    path,
                },
            )),
            BackendEvent::Fork { parent, child } => out.push((
                t,
                LogRecord::ProcFork {
                    oldpid: parent,
                    newpid: child,
                },
            )),
            BackendEvent::ThreadCreate { pid, tid } => out.push((
                t,
                LogRecord::ThrCreate {
                    tid,
                    pid,
                    flags: 0,
                    name: String::new(),
                },
            )),
            BackendEvent::ExitValue { pid, value } => {
                let v = self.exit_values.entry(pid).or_default();
                *v = v.wrapping_add(value);
            }
            BackendEvent::Slice {
                pid,
                tid,
                cpu,
                total,
            } => {
                let last = self.last_slice.entry((tid, cpu)).or_insert(0);
                let delta = total.wrapping_sub(*last);
                *last = total;
                let sum = self.process_value.entry(pid).or_default();
                *sum = sum.wrapping_add(delta);
                if flags.contains(Flags::LOG_PROCCSW) {
                    out.push((
                        t,
                        LogRecord::ProcCsw {
                            pmcid,
                            value: delta,
                            pid,
                            tid,
                        },
                    ));
                }
            }
            BackendEvent::ThreadExit { tid, .. } => {
                self.last_slice.retain(|(t, _), _| *t != tid);
                if sampling {
                    out.push((t, LogRecord::ThrExit { tid }));
                }
            }
            BackendEvent::ProcessExit { pid, value } => {
                // The process's main thread ends with it.
                self.last_slice.retain(|(t, _), _| *t != pid);
                let slices = self.process_value.remove(&pid);
                let reported = self.exit_values.remove(&pid);
                // pmc_process_exit logs PROCEXIT for counting PMCs only.
                if flags.contains(Flags::LOG_PROCEXIT) && !sampling {
                    let value = if self.rules.exit_slices {
                        slices.unwrap_or(0)
                    } else {
                        reported.or(value).unwrap_or(0)
                    };
                    out.push((t, LogRecord::ProcExit { pmcid, pid, value }));
                }
                if sampling {
                    out.push((t, LogRecord::SysExit { pid }));
                }
            }
            // hwpmc applied the rules already (see BackendEvent::Logged).
            BackendEvent::Logged(record) => {
                self.follow_logged_mappings(&record);
                out.push((t, record));
            }
            BackendEvent::Lost { count } => out.push((
                t,
                LogRecord::Dropnotify {
                    lost: Some(u32::try_from(count).unwrap_or(u32::MAX)),
                },
            )),
        }
    }
}

impl Translator {
    /// Keeps `logged_mappings` as hwpmc's records change them.
    fn follow_logged_mappings(&mut self, record: &LogRecord) {
        match *record {
            LogRecord::MapIn { pid, start, .. } => {
                self.logged_mappings.insert((pid, start), record.clone());
            }
            LogRecord::MapOut { pid, start, end } => self
                .logged_mappings
                .retain(|&(p, s), _| p != pid || !(start..end).contains(&s)),
            // An exec replaces the image (hwpmc logs the new one's); an
            // exit ends them all.
            LogRecord::ProcExec { pid, .. }
            | LogRecord::ProcExit { pid, .. }
            | LogRecord::SysExit { pid } => self.logged_mappings.retain(|&(p, _), _| p != pid),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests;
