//! The feature sections of a perf.data (`HEADER_*` bits of the header; in
//! pipe mode HEADER_FEATURE and HEADER_BUILD_ID records): build ids, the
//! machine, the command line, the events' names.

use crate::record::misc;

/// `HEADER_BUILD_ID`
pub(super) const BUILD_ID: u64 = 2;
const HOSTNAME: u64 = 3;
const OSRELEASE: u64 = 4;
const VERSION: u64 = 5;
const ARCH: u64 = 6;
const NRCPUS: u64 = 7;
const CPUDESC: u64 = 8;
const CPUID: u64 = 9;
const CMDLINE: u64 = 11;
/// `HEADER_EVENT_DESC`
pub(super) const EVENT_DESC: u64 = 12;
const CLOCKID: u64 = 23;
/// `HEADER_COMPRESSED`
pub(super) const COMPRESSED: u64 = 27;
const CLOCK_DATA: u64 = 29;

/// The longest string read from a feature; longer ones are cut.
const MAX_STRING: usize = 64 << 10;
/// The most strings of a list (`HEADER_CMDLINE`) read.
const MAX_STRINGS: usize = 4096;

/// An object's build id, as perf stored it for the objects its samples hit.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BuildId {
    /// The process it was mapped in (-1 for the kernel and its modules).
    pub pid: i32,
    /// Whether it is the kernel or a kernel module.
    pub kernel: bool,
    /// The id (20 bytes for a SHA-1 id, fewer for others).
    pub id: Vec<u8>,
    /// The object's path (`[kernel.kallsyms]` for the kernel).
    pub path: String,
}

/// What a perf.data says besides its records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Features {
    /// `HEADER_BUILD_ID`: the sampled objects' build ids.
    pub build_ids: Vec<BuildId>,
    /// `HEADER_HOSTNAME`
    pub hostname: Option<String>,
    /// `HEADER_OSRELEASE`: the kernel release (`uname -r`).
    pub os_release: Option<String>,
    /// `HEADER_VERSION`: perf's version.
    pub perf_version: Option<String>,
    /// `HEADER_ARCH`: `uname -m`, e.g. `x86_64`, `aarch64`.
    pub arch: Option<String>,
    /// `HEADER_NRCPUS`: CPUs available.
    pub nr_cpus_available: Option<u32>,
    /// `HEADER_NRCPUS`: CPUs online.
    pub nr_cpus_online: Option<u32>,
    /// `HEADER_CPUDESC`: the CPU's model name.
    pub cpu_desc: Option<String>,
    /// `HEADER_CPUID`: e.g. `GenuineIntel,6,85,7`, or MIDR on arm64.
    pub cpuid: Option<String>,
    /// `HEADER_CMDLINE`: perf's command line.
    pub cmdline: Vec<String>,
    /// `HEADER_CLOCKID`: the resolution of the clock of `perf record -k`,
    /// in nanoseconds.
    pub clockid_res_ns: Option<u64>,
    /// `HEADER_CLOCK_DATA`: the clock the times are of (`perf record -k`).
    pub clockid: Option<u32>,
    /// Features that could not be read, and why.
    pub skipped: Vec<String>,
}

/// A bounds-checked reader over one feature section.
struct Bytes<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Bytes<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|e| *e <= self.b.len())?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Some(s)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_ne_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_ne_bytes(self.take(8)?.try_into().ok()?))
    }
    /// `struct perf_header_string`: a length (padding included), then the
    /// bytes up to a NUL.
    fn string(&mut self) -> Option<String> {
        let len = self.u32()? as usize;
        let bytes = self.take(len)?;
        Some(c_string(bytes))
    }
}

/// The text before the first NUL, at most [`MAX_STRING`] bytes of it.
pub(super) fn c_string(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end.min(MAX_STRING)]).into_owned()
}

/// One event of `HEADER_EVENT_DESC`: its name and ids.
pub(super) struct NamedEvent {
    pub(super) name: String,
    pub(super) ids: Vec<u64>,
}

impl Features {
    /// Reads feature `bit` from its section's bytes; what cannot be read is
    /// noted in `skipped`. `HEADER_EVENT_DESC`'s names are returned.
    pub(super) fn read(&mut self, bit: u64, bytes: &[u8]) -> Vec<NamedEvent> {
        let mut b = Bytes { b: bytes, pos: 0 };
        let ok = match bit {
            BUILD_ID => {
                self.read_build_ids(bytes);
                Some(())
            }
            HOSTNAME => b.string().map(|s| self.hostname = Some(s)),
            OSRELEASE => b.string().map(|s| self.os_release = Some(s)),
            VERSION => b.string().map(|s| self.perf_version = Some(s)),
            ARCH => b.string().map(|s| self.arch = Some(s)),
            CPUDESC => b.string().map(|s| self.cpu_desc = Some(s)),
            CPUID => b.string().map(|s| self.cpuid = Some(s)),
            NRCPUS => (|| {
                self.nr_cpus_available = Some(b.u32()?);
                self.nr_cpus_online = Some(b.u32()?);
                Some(())
            })(),
            CMDLINE => (|| {
                let n = b.u32()? as usize;
                self.cmdline.clear();
                for _ in 0..n.min(MAX_STRINGS) {
                    self.cmdline.push(b.string()?);
                }
                Some(())
            })(),
            CLOCKID => b.u64().map(|v| self.clockid_res_ns = Some(v)),
            CLOCK_DATA => (|| {
                let _version = b.u32()?;
                self.clockid = Some(b.u32()?);
                Some(())
            })(),
            EVENT_DESC => return self.read_event_desc(&mut b),
            _ => Some(()),
        };
        if ok.is_none() {
            self.skipped
                .push(format!("feature {bit}: shorter than its contents"));
        }
        Vec::new()
    }

    /// `HEADER_EVENT_DESC`: a count and attribute size, then per event its
    /// attribute, its id count, its name and its ids.
    fn read_event_desc(&mut self, b: &mut Bytes<'_>) -> Vec<NamedEvent> {
        let mut out = Vec::new();
        let read = (|| {
            let nr = b.u32()? as usize;
            let attr_size = b.u32()? as usize;
            for _ in 0..nr.min(super::MAX_ATTRS) {
                b.take(attr_size)?;
                let nr_ids = b.u32()? as usize;
                let name = b.string()?;
                let ids = b.take(nr_ids.checked_mul(8)?)?;
                out.push(NamedEvent {
                    name,
                    ids: ids
                        .chunks_exact(8)
                        .map(|c| {
                            u64::from_ne_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])
                        })
                        .collect(),
                });
            }
            Some(())
        })();
        if read.is_none() {
            self.skipped.push(format!(
                "feature {EVENT_DESC} (event names): shorter than its contents"
            ));
        }
        out
    }

    /// `HEADER_BUILD_ID`: build id records back to back.
    fn read_build_ids(&mut self, bytes: &[u8]) {
        let mut pos = 0;
        while pos + 8 <= bytes.len() {
            let size = usize::from(u16::from_ne_bytes([bytes[pos + 6], bytes[pos + 7]]));
            if size < 8 || pos + size > bytes.len() {
                self.skipped.push(format!(
                    "feature {BUILD_ID} (build ids): a record of {size} bytes at {pos} of {}",
                    bytes.len()
                ));
                return;
            }
            if let Some(id) = build_id_record(&bytes[pos..pos + size]) {
                self.build_ids.push(id);
            }
            pos += size;
        }
    }
}

/// One `struct perf_record_header_build_id`: header, pid, 24 bytes of id
/// (20 and, with `PERF_RECORD_MISC_BUILD_ID_SIZE`, its size in the 21st),
/// the path.
pub(super) fn build_id_record(record: &[u8]) -> Option<BuildId> {
    const MISC_BUILD_ID_SIZE: u16 = 1 << 15;
    let misc_bits = u16::from_ne_bytes([*record.get(4)?, *record.get(5)?]);
    let pid = i32::from_ne_bytes(record.get(8..12)?.try_into().ok()?);
    let id = record.get(12..36)?;
    let len = if misc_bits & MISC_BUILD_ID_SIZE != 0 {
        usize::from(id[20]).min(20)
    } else {
        20
    };
    let mode = misc_bits & misc::CPUMODE_MASK;
    Some(BuildId {
        pid,
        kernel: mode == misc::KERNEL || mode == misc::GUEST_KERNEL,
        id: id[..len].to_vec(),
        path: c_string(&record[36..]),
    })
}
