//! The kernel ABI of `include/uapi/linux/perf_event.h`, as plain data.
//!
//! Nothing here is `unsafe`; the raw structures are `pub(crate)` so that the
//! public API of this crate never exposes a raw `perf_event_attr`.

/// Sizes of `perf_event_attr` by ABI revision (`PERF_ATTR_SIZE_VER*`).
pub const ATTR_SIZE_VER0: u32 = 64;
pub const ATTR_SIZE_VER8: u32 = 136;
/// The size of the structure this crate writes (the current uapi, VER8 + aux_action).
pub const ATTR_SIZE_CURRENT: u32 = ATTR_SIZE_VER8;

/// `struct perf_event_attr` of the current uapi (136 bytes, `PERF_ATTR_SIZE_VER8`).
///
/// The C bitfield after `read_format` is kept as one `u64` (`flags`) and
/// accessed through [`AttrBit`] so that the bit order follows the target's
/// endianness the way the C compiler lays it out.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct RawAttr {
    pub type_: u32,
    pub size: u32,
    pub config: u64,
    /// `sample_period` or `sample_freq` (when the `freq` bit is set).
    pub sample_period_or_freq: u64,
    pub sample_type: u64,
    pub read_format: u64,
    pub flags: u64,
    /// `wakeup_events` or `wakeup_watermark` (when the `watermark` bit is set).
    pub wakeup: u32,
    pub bp_type: u32,
    /// `bp_addr`, `kprobe_func`, `uprobe_path` or `config1`.
    pub config1: u64,
    /// `bp_len`, `kprobe_addr`, `probe_offset` or `config2`.
    pub config2: u64,
    pub branch_sample_type: u64,
    pub sample_regs_user: u64,
    pub sample_stack_user: u32,
    pub clockid: i32,
    pub sample_regs_intr: u64,
    pub aux_watermark: u32,
    pub sample_max_stack: u16,
    pub reserved_2: u16,
    pub aux_sample_size: u32,
    /// `aux_action`: bit 0 `aux_start_paused`, bit 1 `aux_pause`, bit 2 `aux_resume`.
    pub aux_action: u32,
    pub sig_data: u64,
    pub config3: u64,
}

const _: () = assert!(core::mem::size_of::<RawAttr>() == ATTR_SIZE_CURRENT as usize);

/// One field of the `perf_event_attr` bitfield: (first bit, width), in
/// declaration order as in the uapi header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AttrBit {
    pub(crate) offset: u32,
    pub(crate) width: u32,
}

macro_rules! attr_bits {
    ($($(#[$doc:meta])* $name:ident = $off:literal $(: $w:literal)?;)*) => {
        #[allow(missing_docs)] // each constant is the uapi bitfield member of the same name
        impl AttrBit {
            $($(#[$doc])* pub const $name: AttrBit = AttrBit { offset: $off, width: attr_bits!(@w $($w)?) };)*
            /// Every field, with its uapi name, in declaration order.
            pub const ALL: &'static [(&'static str, AttrBit)] = &[$((stringify!($name), AttrBit::$name)),*];
        }
    };
    (@w) => { 1 };
    (@w $w:literal) => { $w };
}

attr_bits! {
    /// off by default
    DISABLED = 0;
    /// children inherit it
    INHERIT = 1;
    /// must always be on PMU
    PINNED = 2;
    /// only group on PMU
    EXCLUSIVE = 3;
    EXCLUDE_USER = 4;
    EXCLUDE_KERNEL = 5;
    EXCLUDE_HV = 6;
    EXCLUDE_IDLE = 7;
    MMAP = 8;
    COMM = 9;
    FREQ = 10;
    INHERIT_STAT = 11;
    ENABLE_ON_EXEC = 12;
    TASK = 13;
    WATERMARK = 14;
    PRECISE_IP = 15: 2;
    MMAP_DATA = 17;
    SAMPLE_ID_ALL = 18;
    EXCLUDE_HOST = 19;
    EXCLUDE_GUEST = 20;
    EXCLUDE_CALLCHAIN_KERNEL = 21;
    EXCLUDE_CALLCHAIN_USER = 22;
    MMAP2 = 23;
    COMM_EXEC = 24;
    USE_CLOCKID = 25;
    CONTEXT_SWITCH = 26;
    WRITE_BACKWARD = 27;
    NAMESPACES = 28;
    KSYMBOL = 29;
    BPF_EVENT = 30;
    AUX_OUTPUT = 31;
    CGROUP = 32;
    TEXT_POKE = 33;
    BUILD_ID = 34;
    INHERIT_THREAD = 35;
    REMOVE_ON_EXEC = 36;
    SIGTRAP = 37;
}

impl AttrBit {
    /// Mask and shift of this field inside the `u64`, following the C
    /// compiler's bitfield allocation for this target.
    pub(crate) const fn shift(self) -> u32 {
        if cfg!(target_endian = "big") {
            64 - self.offset - self.width
        } else {
            self.offset
        }
    }

    pub(crate) const fn mask(self) -> u64 {
        ((1u64 << self.width) - 1) << self.shift()
    }

    pub(crate) const fn get(self, flags: u64) -> u64 {
        (flags & self.mask()) >> self.shift()
    }

    pub(crate) const fn set(self, flags: u64, value: u64) -> u64 {
        (flags & !self.mask()) | ((value << self.shift()) & self.mask())
    }
}

// perf_type_id
pub const PERF_TYPE_HARDWARE: u32 = 0;
pub const PERF_TYPE_SOFTWARE: u32 = 1;
pub const PERF_TYPE_TRACEPOINT: u32 = 2;
pub const PERF_TYPE_HW_CACHE: u32 = 3;
pub const PERF_TYPE_RAW: u32 = 4;
pub const PERF_TYPE_BREAKPOINT: u32 = 5;

/// Extended type of generic hardware/cache events: PMU type in config bits 63:32.
pub const PERF_PMU_TYPE_SHIFT: u32 = 32;

// hw_breakpoint types
pub const HW_BREAKPOINT_EMPTY: u32 = 0;
pub const HW_BREAKPOINT_R: u32 = 1;
pub const HW_BREAKPOINT_W: u32 = 2;
pub const HW_BREAKPOINT_RW: u32 = 3;
pub const HW_BREAKPOINT_X: u32 = 4;

// perf_event_open flags
pub const PERF_FLAG_FD_NO_GROUP: u64 = 1 << 0;
pub const PERF_FLAG_FD_OUTPUT: u64 = 1 << 1;
pub const PERF_FLAG_PID_CGROUP: u64 = 1 << 2;
pub const PERF_FLAG_FD_CLOEXEC: u64 = 1 << 3;

pub const PERF_IOC_FLAG_GROUP: u64 = 1;

// ioctl request numbers, built like the kernel's _IO/_IOR/_IOW macros.
cfg_if::cfg_if! {
    if #[cfg(any(
        target_arch = "powerpc",
        target_arch = "powerpc64",
        target_arch = "mips",
        target_arch = "mips64",
        target_arch = "sparc64"
    ))] {
        mod ioc_dir {
            pub const NONE: u64 = 1;
            pub const READ: u64 = 2;
            pub const WRITE: u64 = 4;
            pub const SIZE_BITS: u64 = 13;
        }
    } else {
        mod ioc_dir {
            pub const NONE: u64 = 0;
            pub const READ: u64 = 2;
            pub const WRITE: u64 = 1;
            pub const SIZE_BITS: u64 = 14;
        }
    }
}

const fn ioc(dir: u64, nr: u64, size: u64) -> u64 {
    const TYPE: u64 = b'$' as u64;
    let size_shift = 16;
    let dir_shift = size_shift + ioc_dir::SIZE_BITS;
    (dir << dir_shift) | (size << size_shift) | (TYPE << 8) | nr
}

const PTR: u64 = core::mem::size_of::<usize>() as u64;

pub const PERF_EVENT_IOC_ENABLE: u64 = ioc(ioc_dir::NONE, 0, 0);
pub const PERF_EVENT_IOC_DISABLE: u64 = ioc(ioc_dir::NONE, 1, 0);
pub const PERF_EVENT_IOC_REFRESH: u64 = ioc(ioc_dir::NONE, 2, 0);
pub const PERF_EVENT_IOC_RESET: u64 = ioc(ioc_dir::NONE, 3, 0);
pub const PERF_EVENT_IOC_PERIOD: u64 = ioc(ioc_dir::WRITE, 4, 8);
pub const PERF_EVENT_IOC_SET_OUTPUT: u64 = ioc(ioc_dir::NONE, 5, 0);
pub const PERF_EVENT_IOC_SET_FILTER: u64 = ioc(ioc_dir::WRITE, 6, PTR);
pub const PERF_EVENT_IOC_ID: u64 = ioc(ioc_dir::READ, 7, PTR);
pub const PERF_EVENT_IOC_SET_BPF: u64 = ioc(ioc_dir::WRITE, 8, 4);
pub const PERF_EVENT_IOC_PAUSE_OUTPUT: u64 = ioc(ioc_dir::WRITE, 9, 4);
pub const PERF_EVENT_IOC_QUERY_BPF: u64 = ioc(ioc_dir::READ | ioc_dir::WRITE, 10, PTR);
pub const PERF_EVENT_IOC_MODIFY_ATTRIBUTES: u64 = ioc(ioc_dir::WRITE, 11, PTR);

/// Byte offsets of the fields of `struct perf_event_mmap_page` that this
/// crate reads. The page is shared with the kernel, so it is only ever
/// accessed through volatile/atomic loads at these offsets.
#[allow(dead_code)] // read by the ring-buffer and rdpmc layers
pub mod mmap_page {
    pub const VERSION: usize = 0;
    pub const COMPAT_VERSION: usize = 4;
    pub const LOCK: usize = 8;
    pub const INDEX: usize = 12;
    pub const OFFSET: usize = 16;
    pub const TIME_ENABLED: usize = 24;
    pub const TIME_RUNNING: usize = 32;
    pub const CAPABILITIES: usize = 40;
    pub const PMC_WIDTH: usize = 48;
    pub const TIME_SHIFT: usize = 50;
    pub const TIME_MULT: usize = 52;
    pub const TIME_OFFSET: usize = 56;
    pub const TIME_ZERO: usize = 64;
    pub const SIZE: usize = 72;
    pub const TIME_CYCLES: usize = 80;
    pub const TIME_MASK: usize = 88;
    pub const DATA_HEAD: usize = 1024;
    pub const DATA_TAIL: usize = 1032;
    pub const DATA_OFFSET: usize = 1040;
    pub const DATA_SIZE: usize = 1048;
    pub const AUX_HEAD: usize = 1056;
    pub const AUX_TAIL: usize = 1064;
    pub const AUX_OFFSET: usize = 1072;
    pub const AUX_SIZE: usize = 1080;

    // capability bits
    pub const CAP_BIT0: u64 = 1 << 0;
    pub const CAP_BIT0_IS_DEPRECATED: u64 = 1 << 1;
    pub const CAP_USER_RDPMC: u64 = 1 << 2;
    pub const CAP_USER_TIME: u64 = 1 << 3;
    pub const CAP_USER_TIME_ZERO: u64 = 1 << 4;
    pub const CAP_USER_TIME_SHORT: u64 = 1 << 5;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ioctl_numbers_match_the_x86_header_values() {
        if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
            assert_eq!(PERF_EVENT_IOC_ENABLE, 0x2400);
            assert_eq!(PERF_EVENT_IOC_DISABLE, 0x2401);
            assert_eq!(PERF_EVENT_IOC_REFRESH, 0x2402);
            assert_eq!(PERF_EVENT_IOC_RESET, 0x2403);
            assert_eq!(PERF_EVENT_IOC_PERIOD, 0x4008_2404);
            assert_eq!(PERF_EVENT_IOC_SET_OUTPUT, 0x2405);
            assert_eq!(PERF_EVENT_IOC_SET_FILTER, 0x4008_2406);
            assert_eq!(PERF_EVENT_IOC_ID, 0x8008_2407);
            assert_eq!(PERF_EVENT_IOC_SET_BPF, 0x4004_2408);
            assert_eq!(PERF_EVENT_IOC_PAUSE_OUTPUT, 0x4004_2409);
            assert_eq!(PERF_EVENT_IOC_QUERY_BPF, 0xc008_240a);
            assert_eq!(PERF_EVENT_IOC_MODIFY_ATTRIBUTES, 0x4008_240b);
        }
    }

    #[test]
    fn attr_field_offsets_match_the_uapi() {
        assert_eq!(core::mem::offset_of!(RawAttr, flags), 40);
        assert_eq!(core::mem::offset_of!(RawAttr, bp_type), 52);
        assert_eq!(core::mem::offset_of!(RawAttr, config1), 56);
        assert_eq!(core::mem::offset_of!(RawAttr, config2), 64);
        assert_eq!(core::mem::offset_of!(RawAttr, branch_sample_type), 72);
        assert_eq!(core::mem::offset_of!(RawAttr, sample_stack_user), 88);
        assert_eq!(core::mem::offset_of!(RawAttr, clockid), 92);
        assert_eq!(core::mem::offset_of!(RawAttr, aux_watermark), 104);
        assert_eq!(core::mem::offset_of!(RawAttr, sample_max_stack), 108);
        assert_eq!(core::mem::offset_of!(RawAttr, aux_sample_size), 112);
        assert_eq!(core::mem::offset_of!(RawAttr, aux_action), 116);
        assert_eq!(core::mem::offset_of!(RawAttr, sig_data), 120);
        assert_eq!(core::mem::offset_of!(RawAttr, config3), 128);
    }

    #[test]
    fn bitfield_accessors_round_trip_and_do_not_overlap() {
        let mut seen = 0u64;
        for (name, bit) in AttrBit::ALL {
            assert_eq!(seen & bit.mask(), 0, "{name} overlaps");
            seen |= bit.mask();
            let max = (1u64 << bit.width) - 1;
            let f = bit.set(0, max);
            assert_eq!(bit.get(f), max, "{name}");
            assert_eq!(bit.get(bit.set(u64::MAX, 0)), 0);
        }
        if cfg!(target_endian = "little") {
            assert_eq!(AttrBit::PRECISE_IP.set(0, 3), 0b11 << 15);
            assert_eq!(AttrBit::SIGTRAP.set(0, 1), 1 << 37);
        }
    }
}
