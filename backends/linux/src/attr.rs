//! A safe builder over every field of `struct perf_event_attr`.
//!
//! The raw structure never leaves this crate: [`Attr`] owns it and exposes a
//! typed setter and getter for each field, the event selection as
//! [`EventConfig`], and the bitfield through [`AttrBit`].
//!
//! Files: `events` (the event enums and [`EventConfig`]), `bit_sets` (the
//! bitflag fields), `debug` (the `Debug` dump); the builder itself is here.

use crate::sys::abi::{self, RawAttr};

pub use crate::sys::abi::AttrBit;
pub use bit_sets::{AuxAction, BranchSampleType, ReadFormat, SampleType};
pub use events::{
    BreakpointAccess, CacheEvent, CacheId, CacheOp, CacheResult, EventConfig, Hardware, Software,
};

mod bit_sets;
mod debug;
mod events;

/// A complete `perf_event_attr`, built safely.
///
/// Every field of the current uapi has a setter; the bitfield is reached with
/// [`Attr::set`]/[`Attr::get`] and [`AttrBit`], with named shortcuts for the
/// common bits. The structure starts zeroed except for `size`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Attr {
    pub(crate) raw: RawAttr,
}

impl Default for Attr {
    fn default() -> Self {
        Attr {
            raw: RawAttr {
                size: abi::ATTR_SIZE_CURRENT,
                ..RawAttr::default()
            },
        }
    }
}

macro_rules! bit_shortcuts {
    ($($(#[$doc:meta])* $name:ident => $bit:ident;)*) => {
        $(
            $(#[$doc])*
            pub fn $name(mut self, on: bool) -> Self {
                self.raw.flags = AttrBit::$bit.set(self.raw.flags, u64::from(on));
                self
            }
        )*
    };
}

impl Attr {
    /// An attr for `event`, everything else zero (enabled, counting user,
    /// kernel and hypervisor, no sampling).
    pub fn new(event: EventConfig) -> Attr {
        Attr::default().event(event)
    }

    /// Selects what to count (sets `type`, `config`, `config1..3`, `bp_*`).
    pub fn event(mut self, event: EventConfig) -> Self {
        let r = &mut self.raw;
        r.bp_type = abi::HW_BREAKPOINT_EMPTY;
        r.config1 = 0;
        r.config2 = 0;
        r.config3 = 0;
        let ext = |pmu: Option<u32>| pmu.map_or(0, |t| u64::from(t) << abi::PERF_PMU_TYPE_SHIFT);
        match event {
            EventConfig::Hardware { event, pmu } => {
                r.type_ = abi::PERF_TYPE_HARDWARE;
                r.config = event as u64 | ext(pmu);
            }
            EventConfig::Software(s) => {
                r.type_ = abi::PERF_TYPE_SOFTWARE;
                r.config = s as u64;
            }
            EventConfig::Cache { event, pmu } => {
                r.type_ = abi::PERF_TYPE_HW_CACHE;
                r.config = event.config() | ext(pmu);
            }
            EventConfig::Raw(c) => {
                r.type_ = abi::PERF_TYPE_RAW;
                r.config = c;
            }
            EventConfig::Tracepoint(id) => {
                r.type_ = abi::PERF_TYPE_TRACEPOINT;
                r.config = id;
            }
            EventConfig::Breakpoint { access, addr, len } => {
                r.type_ = abi::PERF_TYPE_BREAKPOINT;
                r.config = 0;
                r.bp_type = access.bp_type();
                r.config1 = addr;
                r.config2 = len;
            }
            EventConfig::Dynamic {
                pmu_type,
                config,
                config1,
                config2,
                config3,
            } => {
                r.type_ = pmu_type;
                r.config = config;
                r.config1 = config1;
                r.config2 = config2;
                r.config3 = config3;
            }
        }
        self
    }

    /// Sets one bitfield member (values wider than the field are truncated).
    pub fn set(mut self, bit: AttrBit, value: u64) -> Self {
        self.raw.flags = bit.set(self.raw.flags, value);
        self
    }

    /// Reads one bitfield member.
    pub fn get(&self, bit: AttrBit) -> u64 {
        bit.get(self.raw.flags)
    }

    /// Whether a one-bit member is set.
    pub fn is_set(&self, bit: AttrBit) -> bool {
        self.get(bit) != 0
    }

    bit_shortcuts! {
        /// Start disabled; enable with an ioctl, `enable_on_exec` or prctl.
        disabled => DISABLED;
        /// Count (or sample) threads and children created after opening.
        inherit => INHERIT;
        /// Keep the event on the PMU always; if it cannot be, it goes into
        /// error state (reads return EOF) instead of being multiplexed.
        pinned => PINNED;
        /// The group must be alone on the PMU when scheduled.
        exclusive => EXCLUSIVE;
        /// Do not count user space.
        exclude_user => EXCLUDE_USER;
        /// Do not count the kernel.
        exclude_kernel => EXCLUDE_KERNEL;
        /// Do not count the hypervisor.
        exclude_hv => EXCLUDE_HV;
        /// Do not count while idle.
        exclude_idle => EXCLUDE_IDLE;
        /// Emit MMAP records for executable mappings.
        mmap => MMAP;
        /// Emit COMM records.
        comm => COMM;
        /// Count per-task values of inherited children (`PERF_RECORD_READ` at exit).
        inherit_stat => INHERIT_STAT;
        /// Enable automatically at the next `exec`.
        enable_on_exec => ENABLE_ON_EXEC;
        /// Emit FORK/EXIT records.
        task => TASK;
        /// Emit MMAP records for data mappings too.
        mmap_data => MMAP_DATA;
        /// Put the sample id fields on every record type.
        sample_id_all => SAMPLE_ID_ALL;
        /// Do not count in the host (KVM).
        exclude_host => EXCLUDE_HOST;
        /// Do not count in guests (KVM).
        exclude_guest => EXCLUDE_GUEST;
        /// No kernel frames in callchains.
        exclude_callchain_kernel => EXCLUDE_CALLCHAIN_KERNEL;
        /// No user frames in callchains.
        exclude_callchain_user => EXCLUDE_CALLCHAIN_USER;
        /// Emit MMAP2 records instead of MMAP.
        mmap2 => MMAP2;
        /// Flag COMM records caused by exec.
        comm_exec => COMM_EXEC;
        /// Use `clockid` for sample timestamps.
        use_clockid => USE_CLOCKID;
        /// Emit SWITCH records.
        context_switch => CONTEXT_SWITCH;
        /// Write the ring buffer backwards (overwrite mode).
        write_backward => WRITE_BACKWARD;
        /// Emit NAMESPACES records.
        namespaces => NAMESPACES;
        /// Emit KSYMBOL records.
        ksymbol => KSYMBOL;
        /// Emit BPF_EVENT records.
        bpf_event => BPF_EVENT;
        /// Generate AUX records instead of events.
        aux_output => AUX_OUTPUT;
        /// Emit CGROUP records.
        cgroup => CGROUP;
        /// Emit TEXT_POKE records.
        text_poke => TEXT_POKE;
        /// Use the build-id form of MMAP2 records.
        build_id => BUILD_ID;
        /// Inherit only to threads (requires `inherit`).
        inherit_thread => INHERIT_THREAD;
        /// Remove the event on exec.
        remove_on_exec => REMOVE_ON_EXEC;
        /// Send SIGTRAP on overflow.
        sigtrap => SIGTRAP;
    }

    /// Skid constraint: 0 arbitrary … 3 zero skid.
    pub fn precise_ip(self, level: u8) -> Self {
        self.set(AttrBit::PRECISE_IP, u64::from(level.min(3)))
    }

    /// Sample every `period` events (clears `freq`).
    pub fn sample_period(mut self, period: u64) -> Self {
        self.raw.sample_period_or_freq = period;
        self.set(AttrBit::FREQ, 0)
    }

    /// Sample `hz` times per second, letting the kernel adjust the period.
    pub fn sample_freq(mut self, hz: u64) -> Self {
        self.raw.sample_period_or_freq = hz;
        self.set(AttrBit::FREQ, 1)
    }

    /// The fields of each sample.
    pub fn sample_type(mut self, t: SampleType) -> Self {
        self.raw.sample_type = t.bits();
        self
    }

    /// The layout of `read(2)`.
    pub fn read_format(mut self, f: ReadFormat) -> Self {
        self.raw.read_format = f.bits();
        self
    }

    /// Wake a poller every `n` samples (clears `watermark`).
    pub fn wakeup_events(mut self, n: u32) -> Self {
        self.raw.wakeup = n;
        self.set(AttrBit::WATERMARK, 0)
    }

    /// Wake a poller every `bytes` of ring buffer (sets `watermark`).
    pub fn wakeup_watermark(mut self, bytes: u32) -> Self {
        self.raw.wakeup = bytes;
        self.set(AttrBit::WATERMARK, 1)
    }

    /// Which branches to record with `SampleType::BRANCH_STACK`.
    pub fn branch_sample_type(mut self, t: BranchSampleType) -> Self {
        self.raw.branch_sample_type = t.bits();
        self
    }

    /// The user registers to sample (`PERF_SAMPLE_REGS_USER`), arch mask.
    pub fn sample_regs_user(mut self, mask: u64) -> Self {
        self.raw.sample_regs_user = mask;
        self
    }

    /// Bytes of user stack to dump (`PERF_SAMPLE_STACK_USER`).
    pub fn sample_stack_user(mut self, bytes: u32) -> Self {
        self.raw.sample_stack_user = bytes;
        self
    }

    /// The clock of sample timestamps (`use_clockid` is set too).
    pub fn clockid(mut self, clock: i32) -> Self {
        self.raw.clockid = clock;
        self.set(AttrBit::USE_CLOCKID, 1)
    }

    /// The registers to sample at interrupt (`PERF_SAMPLE_REGS_INTR`).
    pub fn sample_regs_intr(mut self, mask: u64) -> Self {
        self.raw.sample_regs_intr = mask;
        self
    }

    /// Wakeup watermark of the AUX area.
    pub fn aux_watermark(mut self, bytes: u32) -> Self {
        self.raw.aux_watermark = bytes;
        self
    }

    /// Maximum callchain depth (≤ `perf_event_max_stack`).
    pub fn sample_max_stack(mut self, frames: u16) -> Self {
        self.raw.sample_max_stack = frames;
        self
    }

    /// Bytes of AUX data to put in samples (`PERF_SAMPLE_AUX`).
    pub fn aux_sample_size(mut self, bytes: u32) -> Self {
        self.raw.aux_sample_size = bytes;
        self
    }

    /// AUX pause/resume actions (Linux 6.13+).
    pub fn aux_action(mut self, a: AuxAction) -> Self {
        self.raw.aux_action = a.bits();
        self
    }

    /// User data delivered with SIGTRAP (`si_perf_data`).
    pub fn sig_data(mut self, data: u64) -> Self {
        self.raw.sig_data = data;
        self
    }

    /// Overrides `config` (keeps `type`).
    pub fn config(mut self, config: u64) -> Self {
        self.raw.config = config;
        self
    }

    /// Overrides `config1` (also `bp_addr`, `kprobe_func`, `uprobe_path`).
    pub fn config1(mut self, v: u64) -> Self {
        self.raw.config1 = v;
        self
    }

    /// Overrides `config2` (also `bp_len`, `kprobe_addr`, `probe_offset`).
    pub fn config2(mut self, v: u64) -> Self {
        self.raw.config2 = v;
        self
    }

    /// Overrides `config3` (Linux 6.3+).
    pub fn config3(mut self, v: u64) -> Self {
        self.raw.config3 = v;
        self
    }

    /// Declares an older ABI size (`PERF_ATTR_SIZE_VER0` = 64 …
    /// `PERF_ATTR_SIZE_VER8` = 136). Fields beyond it are not sent.
    pub fn size(mut self, size: u32) -> Self {
        self.raw.size = size.clamp(abi::ATTR_SIZE_VER0, abi::ATTR_SIZE_CURRENT);
        self
    }

    // --- getters ---------------------------------------------------------

    /// `type`.
    pub fn type_id(&self) -> u32 {
        self.raw.type_
    }
    /// `size`.
    pub fn size_bytes(&self) -> u32 {
        self.raw.size
    }
    /// `config`.
    pub fn get_config(&self) -> u64 {
        self.raw.config
    }
    /// `config1`.
    pub fn get_config1(&self) -> u64 {
        self.raw.config1
    }
    /// `config2`.
    pub fn get_config2(&self) -> u64 {
        self.raw.config2
    }
    /// `config3`.
    pub fn get_config3(&self) -> u64 {
        self.raw.config3
    }
    /// `bp_type`.
    pub fn get_bp_type(&self) -> u32 {
        self.raw.bp_type
    }
    /// `sample_period` (or `sample_freq` when `freq` is set).
    pub fn get_sample_period_or_freq(&self) -> u64 {
        self.raw.sample_period_or_freq
    }
    /// `sample_type`.
    pub fn get_sample_type(&self) -> SampleType {
        SampleType::from_bits_retain(self.raw.sample_type)
    }
    /// `read_format`.
    pub fn get_read_format(&self) -> ReadFormat {
        ReadFormat::from_bits_retain(self.raw.read_format)
    }
    /// `branch_sample_type`.
    pub fn get_branch_sample_type(&self) -> BranchSampleType {
        BranchSampleType::from_bits_retain(self.raw.branch_sample_type)
    }
    /// `wakeup_events` / `wakeup_watermark`.
    pub fn get_wakeup(&self) -> u32 {
        self.raw.wakeup
    }
    /// `sample_max_stack`.
    pub fn get_sample_max_stack(&self) -> u16 {
        self.raw.sample_max_stack
    }
    /// `sample_regs_user`.
    pub fn get_sample_regs_user(&self) -> u64 {
        self.raw.sample_regs_user
    }
    /// `sample_stack_user`.
    pub fn get_sample_stack_user(&self) -> u32 {
        self.raw.sample_stack_user
    }
    /// `clockid`.
    pub fn get_clockid(&self) -> i32 {
        self.raw.clockid
    }
    /// `sample_regs_intr`.
    pub fn get_sample_regs_intr(&self) -> u64 {
        self.raw.sample_regs_intr
    }
    /// `aux_watermark`.
    pub fn get_aux_watermark(&self) -> u32 {
        self.raw.aux_watermark
    }
    /// `aux_sample_size`.
    pub fn get_aux_sample_size(&self) -> u32 {
        self.raw.aux_sample_size
    }
    /// `aux_action`.
    pub fn get_aux_action(&self) -> AuxAction {
        AuxAction::from_bits_retain(self.raw.aux_action)
    }
    /// `sig_data`.
    pub fn get_sig_data(&self) -> u64 {
        self.raw.sig_data
    }

    /// Whether this event is sampling (a non-zero period or frequency).
    pub fn is_sampling(&self) -> bool {
        self.raw.sample_period_or_freq != 0
    }

    /// The structure as the kernel sees it (`size` bytes), for golden tests
    /// and for comparing with `perf -vv` dumps.
    pub fn to_bytes(&self) -> Vec<u8> {
        let r = &self.raw;
        let mut out = Vec::with_capacity(abi::ATTR_SIZE_CURRENT as usize);
        out.extend_from_slice(&r.type_.to_ne_bytes());
        out.extend_from_slice(&r.size.to_ne_bytes());
        for v in [
            r.config,
            r.sample_period_or_freq,
            r.sample_type,
            r.read_format,
            r.flags,
        ] {
            out.extend_from_slice(&v.to_ne_bytes());
        }
        out.extend_from_slice(&r.wakeup.to_ne_bytes());
        out.extend_from_slice(&r.bp_type.to_ne_bytes());
        for v in [
            r.config1,
            r.config2,
            r.branch_sample_type,
            r.sample_regs_user,
        ] {
            out.extend_from_slice(&v.to_ne_bytes());
        }
        out.extend_from_slice(&r.sample_stack_user.to_ne_bytes());
        out.extend_from_slice(&r.clockid.to_ne_bytes());
        out.extend_from_slice(&r.sample_regs_intr.to_ne_bytes());
        out.extend_from_slice(&r.aux_watermark.to_ne_bytes());
        out.extend_from_slice(&r.sample_max_stack.to_ne_bytes());
        out.extend_from_slice(&r.reserved_2.to_ne_bytes());
        out.extend_from_slice(&r.aux_sample_size.to_ne_bytes());
        out.extend_from_slice(&r.aux_action.to_ne_bytes());
        out.extend_from_slice(&r.sig_data.to_ne_bytes());
        out.extend_from_slice(&r.config3.to_ne_bytes());
        out.truncate(r.size as usize);
        out
    }

    /// A short description of the event for error messages, e.g.
    /// `type 1 config 0x1`.
    pub fn describe_event(&self) -> String {
        let r = &self.raw;
        match r.type_ {
            abi::PERF_TYPE_HARDWARE => Hardware::ALL
                .iter()
                .find(|h| **h as u64 == r.config & 0xffff_ffff)
                .map_or_else(
                    || format!("hardware 0x{:x}", r.config),
                    |h| h.name().to_string(),
                ),
            abi::PERF_TYPE_SOFTWARE => Software::ALL
                .iter()
                .find(|s| **s as u64 == r.config)
                .map_or_else(
                    || format!("software 0x{:x}", r.config),
                    |s| s.name().to_string(),
                ),
            abi::PERF_TYPE_HW_CACHE => CacheEvent::all()
                .find(|c| c.config() == r.config & 0xffff_ffff)
                .map_or_else(|| format!("cache 0x{:x}", r.config), |c| c.name()),
            abi::PERF_TYPE_RAW => format!("r{:x}", r.config),
            abi::PERF_TYPE_TRACEPOINT => format!("tracepoint id {}", r.config),
            abi::PERF_TYPE_BREAKPOINT => {
                format!(
                    "breakpoint 0x{:x}/{} type {}",
                    r.config1, r.config2, r.bp_type
                )
            }
            t => format!("pmu type {t} config 0x{:x}", r.config),
        }
    }

    /// Whether counting this event includes kernel mode.
    pub(crate) fn counts_kernel(&self) -> bool {
        !self.is_set(AttrBit::EXCLUDE_KERNEL)
    }
}

#[cfg(test)]
mod tests;
