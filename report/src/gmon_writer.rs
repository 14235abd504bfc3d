//! gprof's `gmon.out`, one per sampled object and event, as pmcstat `-g`
//! names them: `<dir>/<event>/<sample name>` (pmcpl_gprof.c
//! `pmcstat_gmon_create_name`, `"%s/%s/%s"`), the sample name being the
//! object's basename + `.gmon`, or, when another object already took that
//! name, basename + `~NNN.gmon` with NNN from 001 (pmcpl_gprof.c
//! `pmcpl_gmon_initimage`, `"%.*s~%3.3d.gmon"`). Names are given in the
//! order objects first appear in the samples (FreeBSD's: the order images
//! appear in the log, sampled or not). `/` and blanks in an event name
//! become `_` (Linux event names such as `cpu/event=0x3c/` hold slashes;
//! FreeBSD's hold none).
//!
//! The file format is binutils' gmon.out, not FreeBSD's `<sys/gmon.h>`
//! one, because the gprof Linux has is binutils'.
//! The layout is binutils' (`gprof/gmon_out.h`): a `gmon_hdr` (cookie
//! "gmon", version 1, 12 spare bytes) and one `GMON_TAG_TIME_HIST` record
//! (tag byte 0, `low_pc` and `high_pc` as pointers, `hist_size` and
//! `prof_rate` as 32-bit ints, a 15-byte dimension name and its
//! abbreviation) followed by `hist_size` 16-bit bins, all in the target's
//! byte order. Bins count the samples whose pc falls in them, saturating at
//! 0xffff as libpmcstat's gmon plugin does (`hc[bucket] < 0xFFFFU`).

use std::collections::BTreeMap;

use crate::Profile;

/// Bytes of text per histogram bin.
const BIN_BYTES: u64 = 4;
/// binutils `GMON_TAG_TIME_HIST`.
const GMON_TAG_TIME_HIST: u8 = 0;
/// binutils `GMON_VERSION`.
const GMON_VERSION: u32 = 1;

/// One gmon.out file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GmonFile {
    /// Path relative to the output directory: `<event>/<object>.gmon`.
    pub relative_path: std::path::PathBuf,
    /// The object the histogram is for.
    pub object: String,
    /// Samples counted in it.
    pub samples: u64,
    /// File contents.
    pub bytes: Vec<u8>,
}

/// The gmon.out files of a profile: per event, per object with samples.
pub fn gmon(profile: &Profile) -> Vec<GmonFile> {
    // (event, object) → (text range, object address → count).
    type Hist = ((u64, u64), BTreeMap<u64, u64>);
    let mut per: BTreeMap<(usize, &str), Hist> = BTreeMap::new();
    for s in &profile.samples {
        let Some(&leaf) = profile.stack(s).first() else {
            continue;
        };
        let r = &profile.locations[leaf as usize].resolved;
        let (Some(m), Some(addr)) = (&r.mapping, r.object_address) else {
            continue;
        };
        let Some(range) = m.text_range else {
            continue;
        };
        let h = per
            .entry((s.event, m.path.as_str()))
            .or_insert_with(|| (range, BTreeMap::new()));
        *h.1.entry(addr).or_default() += s.count;
    }
    let names = sample_names(profile);
    let mut out = Vec::new();
    for ((event, object), ((lo, hi), pcs)) in per {
        let low = lo & !(BIN_BYTES - 1);
        let bins = (hi.saturating_sub(low)).div_ceil(BIN_BYTES).max(1);
        let high = low + bins * BIN_BYTES;
        let mut hist = vec![0u16; bins as usize];
        let mut samples = 0;
        for (addr, n) in pcs {
            if addr < low || addr >= high {
                continue;
            }
            let b = &mut hist[((addr - low) / BIN_BYTES) as usize];
            *b = u16::try_from(u64::from(*b) + n).unwrap_or(u16::MAX);
            samples += n;
        }
        let mut bytes = Vec::with_capacity(20 + 1 + 8 * 2 + 8 + 16 + hist.len() * 2);
        bytes.extend_from_slice(b"gmon");
        bytes.extend_from_slice(&GMON_VERSION.to_ne_bytes());
        bytes.extend_from_slice(&[0; 12]);
        bytes.push(GMON_TAG_TIME_HIST);
        bytes.extend_from_slice(&(low as usize).to_ne_bytes());
        bytes.extend_from_slice(&(high as usize).to_ne_bytes());
        bytes.extend_from_slice(&(bins as u32).to_ne_bytes());
        // One sample counts as one unit of "samples".
        bytes.extend_from_slice(&1u32.to_ne_bytes());
        let mut dimen = [0u8; 15];
        dimen[..7].copy_from_slice(b"samples");
        bytes.extend_from_slice(&dimen);
        bytes.push(b's');
        for b in hist {
            bytes.extend_from_slice(&b.to_ne_bytes());
        }
        let event_dir = profile.events[event]
            .name
            .replace(|c: char| c == '/' || c.is_whitespace(), "_");
        let name = names.get(object).cloned().unwrap_or_default();
        out.push(GmonFile {
            relative_path: std::path::Path::new(&event_dir).join(name),
            object: object.to_string(),
            samples,
            bytes,
        });
    }
    out
}

/// Each sampled object's gmon file name, unique across objects:
/// `basename.gmon`, else `basename~001.gmon`, `~002`, … in the order the
/// objects first appear in the samples (pmcpl_gprof.c
/// `pmcpl_gmon_initimage`).
fn sample_names(profile: &Profile) -> std::collections::HashMap<&str, String> {
    let mut names = std::collections::HashMap::new();
    let mut taken = std::collections::HashSet::new();
    for s in &profile.samples {
        let Some(&leaf) = profile.stack(s).first() else {
            continue;
        };
        let Some(m) = &profile.locations[leaf as usize].resolved.mapping else {
            continue;
        };
        let object = m.path.as_str();
        if names.contains_key(object) {
            continue;
        }
        let base = object.rsplit('/').next().unwrap_or(object);
        let mut name = format!("{base}.gmon");
        let mut n = 0;
        while taken.contains(&name) {
            n += 1;
            name = format!("{base}~{n:03}.gmon");
        }
        taken.insert(name.clone());
        names.insert(object, name);
    }
    names
}
