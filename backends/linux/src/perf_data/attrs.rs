//! The events of a perf.data: each `perf_event_attr` as the file stores it
//! (as long as the writer's kernel headers made it: fields past its size
//! read as 0), and the name perf gives it.

use crate::attr::{BranchSampleType, ReadFormat, SampleType};
use crate::record::RecordParser;

use super::PerfDataError;

/// `PERF_ATTR_SIZE_VER0`: the smallest `perf_event_attr`.
pub(super) const ATTR_SIZE_VER0: usize = 64;
/// The largest `perf_event_attr` read (the kernel's is 136 bytes today).
pub(super) const ATTR_SIZE_MAX: usize = 4096;

/// How an event samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sampling {
    /// Every N events (`sample_period`); 0 for a counting event.
    Period(u64),
    /// N samples a second (`freq` with `sample_freq`).
    Frequency(u64),
}

/// One event of a perf.data, from its attribute and the features.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventDesc {
    /// perf's name of it: HEADER_EVENT_DESC's (pipe mode: EVENT_UPDATE's),
    /// else one made of its type and config (`cpu-clock`, `cycles`,
    /// `TYPE:0xCONFIG`).
    pub name: String,
    /// `type` (`PERF_TYPE_*` or a dynamic PMU's number).
    pub event_type: u32,
    /// `config`.
    pub config: u64,
    /// Its period or frequency.
    pub sampling: Sampling,
    /// `exclude_user`.
    pub exclude_user: bool,
    /// `exclude_kernel`.
    pub exclude_kernel: bool,
    /// `sample_type`.
    pub sample_type: SampleType,
    /// `sample_regs_user`: the mask of user registers in samples, by perf
    /// register number (`arch/*/include/uapi/asm/perf_regs.h`).
    pub regs_user: u64,
    /// `sample_stack_user`: bytes of user stack copied per sample.
    pub stack_user: u32,
    /// `use_clockid`'s `clockid`.
    pub clockid: Option<i32>,
    /// The sample ids of its instances (per CPU or thread).
    pub ids: Vec<u64>,
    /// The layout of its records.
    pub parser: RecordParser,
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_ne_bytes)
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u32::from_ne_bytes)
}

/// The size a `perf_event_attr` says it has (`size`, 0 meaning
/// `PERF_ATTR_SIZE_VER0`), checked against the bounds.
pub(super) fn attr_size(bytes: &[u8], offset: u64) -> Result<usize, PerfDataError> {
    let size = match u32_at(bytes, 4) as usize {
        0 => ATTR_SIZE_VER0,
        n => n,
    };
    if !(ATTR_SIZE_VER0..=ATTR_SIZE_MAX).contains(&size) {
        return Err(PerfDataError::corrupt(
            offset,
            format!(
                "an event attribute of {size} bytes (perf's are {ATTR_SIZE_VER0} to a few hundred)"
            ),
        ));
    }
    Ok(size)
}

/// Decodes an attribute (`bytes` holds the attribute only, as many bytes
/// as the file gives it) with its ids.
pub(super) fn parse(bytes: &[u8], ids: Vec<u64>) -> EventDesc {
    let event_type = u32_at(bytes, 0);
    let config = u64_at(bytes, 8);
    let period = u64_at(bytes, 16);
    let sample_type = SampleType::from_bits_retain(u64_at(bytes, 24));
    let read_format = ReadFormat::from_bits_retain(u64_at(bytes, 32));
    let flags = u64_at(bytes, 40);
    let bit = |n: u32| flags >> n & 1 == 1;
    let branch_sample_type = BranchSampleType::from_bits_retain(u64_at(bytes, 72));
    let regs_user = u64_at(bytes, 80);
    let stack_user = u32_at(bytes, 88);
    let clockid = u32_at(bytes, 92) as i32;
    let regs_intr = u64_at(bytes, 96);
    // perf_event_attr's bit fields: exclude_user 4, exclude_kernel 5,
    // freq 10, sample_id_all 18, use_clockid 25.
    EventDesc {
        name: default_name(event_type, config),
        event_type,
        config,
        sampling: if bit(10) {
            Sampling::Frequency(period)
        } else {
            Sampling::Period(period)
        },
        exclude_user: bit(4),
        exclude_kernel: bit(5),
        sample_type,
        regs_user,
        stack_user,
        clockid: bit(25).then_some(clockid),
        ids,
        parser: RecordParser {
            sample_type,
            read_format,
            sample_id_all: bit(18),
            regs_user: regs_user.count_ones(),
            regs_intr: regs_intr.count_ones(),
            branch_hw_index: branch_sample_type.contains(BranchSampleType::HW_INDEX),
        },
    }
}

/// perf's name of a generic event, else `TYPE:0xCONFIG`: for hardware,
/// the name `perf report` gives an event without one recorded (perf's
/// `evsel__hw_names`: `cycles`, `branches`, where `perf list` says
/// `cpu-cycles`, `branch-instructions`); for software, `perf list`'s.
fn default_name(event_type: u32, config: u64) -> String {
    const HARDWARE: [&str; 10] = [
        "cycles",
        "instructions",
        "cache-references",
        "cache-misses",
        "branches",
        "branch-misses",
        "bus-cycles",
        "stalled-cycles-frontend",
        "stalled-cycles-backend",
        "ref-cycles",
    ];
    let name = match event_type {
        // PERF_TYPE_HARDWARE's config may carry a PMU type in its upper half.
        0 => usize::try_from(config & 0xffff_ffff)
            .ok()
            .and_then(|i| HARDWARE.get(i).copied()),
        1 => usize::try_from(config)
            .ok()
            .and_then(|i| crate::attr::Software::ALL.get(i))
            .map(|s| s.name()),
        _ => None,
    };
    name.map_or_else(|| format!("{event_type}:{config:#x}"), str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generic_events_have_perfs_names() {
        assert_eq!(default_name(1, 0), "cpu-clock");
        assert_eq!(default_name(1, 1), "task-clock");
        assert_eq!(default_name(0, 1), "instructions");
        assert_eq!(default_name(0, 0x8_0000_0000), "cycles");
        assert_eq!(default_name(4, 0x3c), "4:0x3c");
        assert_eq!(default_name(1, 99), "1:0x63");
    }

    #[test]
    fn an_attribute_decodes_its_fields() {
        let mut a = vec![0u8; 136];
        a[0..4].copy_from_slice(&1u32.to_ne_bytes());
        a[4..8].copy_from_slice(&136u32.to_ne_bytes());
        a[16..24].copy_from_slice(&4000u64.to_ne_bytes());
        // IP | TID | TIME | CALLCHAIN | CPU | PERIOD
        a[24..32].copy_from_slice(&0x1a7u64.to_ne_bytes());
        let flags: u64 = 1 << 10 | 1 << 18 | 1 << 5;
        a[40..48].copy_from_slice(&flags.to_ne_bytes());
        a[80..88].copy_from_slice(&0x1c0u64.to_ne_bytes());
        a[88..92].copy_from_slice(&8192u32.to_ne_bytes());
        let d = parse(&a, vec![7, 8]);
        assert_eq!(d.name, "cpu-clock");
        assert_eq!(d.sampling, Sampling::Frequency(4000));
        assert!(d.exclude_kernel && !d.exclude_user);
        assert!(d.parser.sample_id_all);
        assert_eq!(d.parser.regs_user, 3);
        assert_eq!(d.stack_user, 8192);
        assert_eq!(d.ids, vec![7, 8]);
        // A short (VER0) attribute reads its missing fields as 0.
        let d = parse(&a[..64], Vec::new());
        assert_eq!(d.regs_user, 0);
        assert_eq!(attr_size(&a, 0).ok(), Some(136));
        a[4..8].copy_from_slice(&10u32.to_ne_bytes());
        assert!(attr_size(&a, 0).is_err());
    }
}
