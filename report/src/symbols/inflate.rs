//! Compressed sections of untrusted objects, inflated only within a cap.
//!
//! An `SHF_COMPRESSED` section's header (`Elf64_Chdr.ch_size`) or a
//! `.zdebug` section's says how large it inflates; `object` and
//! `addr2line` allocate that much up front and believe it. Here a claim
//! is refused, before anything is allocated, when it is more than
//! [`MAX_RATIO`] times the compressed bytes (elfutils' `__libelf_decompress`
//! refuses above zlib's 1032:1, the most deflate can reach; real debug
//! sections inflate 3–10×) unless it is small ([`ALWAYS_ALLOWED`]), or
//! more than [`MAX_INFLATED`] in any case; and inflating stops at the
//! claim, so data that inflates to more than it said costs no more.
//! MiniDebugInfo's xz (no claimed size) stops at the same cap.

use std::io::Read as _;

/// The most a section may inflate, relative to its compressed size.
pub(crate) const MAX_RATIO: u64 = 100;
/// A claim this small is allowed at any ratio (a tiny section compresses
/// badly, or very well: either is harmless).
pub(crate) const ALWAYS_ALLOWED: u64 = 1 << 20;
/// The most any one section inflates to.
pub(crate) const MAX_INFLATED: u64 = 1 << 30;

/// The size a section of `compressed` bytes may inflate to.
pub(crate) fn cap(compressed: u64) -> u64 {
    compressed
        .saturating_mul(MAX_RATIO)
        .clamp(ALWAYS_ALLOWED, MAX_INFLATED)
}

/// Why a section was not inflated: its claim against the cap, or data
/// that does not inflate to what it claims.
pub(crate) fn refusal(compressed: u64, claimed: u64) -> Option<String> {
    let cap = cap(compressed);
    (claimed > cap).then(|| {
        format!(
            "claims {claimed} bytes inflated from {compressed}, above the cap of {cap} \
             ({MAX_RATIO}:1 above {ALWAYS_ALLOWED} bytes, {MAX_INFLATED} at most); not inflated"
        )
    })
}

/// Inflates `data` (zlib or zstd, as `format` says) to exactly `claimed`
/// bytes; the caller checked `claimed` with [`refusal`].
pub(crate) fn inflate(
    format: object::CompressionFormat,
    data: &[u8],
    claimed: u64,
) -> Result<Vec<u8>, String> {
    let size = usize::try_from(claimed).map_err(|_| "too large for this machine".to_string())?;
    let mut out = Vec::new();
    out.try_reserve_exact(size)
        .map_err(|e| format!("{claimed} bytes: {e}"))?;
    match format {
        object::CompressionFormat::Zlib => {
            // `decompress_vec` writes into the capacity reserved: never past
            // the claim.
            let status = flate2::Decompress::new(true)
                .decompress_vec(data, &mut out, flate2::FlushDecompress::Finish)
                .map_err(|e| format!("zlib: {e}"))?;
            if status != flate2::Status::StreamEnd && out.len() == size {
                return Err(format!(
                    "inflates to more than the {claimed} bytes its header says"
                ));
            }
        }
        object::CompressionFormat::Zstandard => {
            let mut input = data;
            let decoder =
                ruzstd::StreamingDecoder::new(&mut input).map_err(|e| format!("zstd: {e}"))?;
            decoder
                .take(claimed.saturating_add(1))
                .read_to_end(&mut out)
                .map_err(|e| format!("zstd: {e}"))?;
        }
        other => return Err(format!("{other:?} compression is not supported")),
    }
    if out.len() != size {
        return Err(format!(
            "inflates to {}{} bytes, not the {claimed} its header says",
            out.len(),
            if out.len() > size { " or more" } else { "" },
        ));
    }
    Ok(out)
}

/// A writer that takes at most `limit` bytes: xz output beyond it fails.
pub(crate) struct Bounded {
    pub(crate) out: Vec<u8>,
    pub(crate) limit: usize,
}

impl std::io::Write for Bounded {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.out.len().saturating_add(buf.len()) > self.limit {
            return Err(std::io::Error::other(format!(
                "inflates to more than the cap of {} bytes",
                self.limit
            )));
        }
        self.out.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_are_capped_by_ratio_and_absolutely() {
        assert_eq!(refusal(10, ALWAYS_ALLOWED), None);
        assert_eq!(refusal(1 << 20, 100 << 20), None);
        assert!(refusal(1 << 20, (100 << 20) + 1).is_some());
        assert!(refusal(1024, 4 << 30).is_some());
        assert!(refusal(1 << 40, (1 << 30) + 1).is_some());
    }

    #[test]
    fn data_inflating_past_its_claim_is_refused_without_growing() {
        use std::io::Write as _;
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        z.write_all(&[0; 4096]).unwrap();
        let data = z.finish().unwrap();
        assert_eq!(
            inflate(object::CompressionFormat::Zlib, &data, 4096).unwrap(),
            vec![0; 4096]
        );
        let short = inflate(object::CompressionFormat::Zlib, &data, 100).unwrap_err();
        assert!(short.contains("more than the 100"), "{short}");
        let long = inflate(object::CompressionFormat::Zlib, &data, 8192).unwrap_err();
        assert!(long.contains("4096"), "{long}");
    }

    /// A zstd frame (RFC 8878) of one RLE block: 4096 zeros.
    const ZSTD_4096_ZEROS: [u8; 11] = [
        0x28, 0xb5, 0x2f, 0xfd, // magic
        0x60, // single segment, 2-byte content size
        0x00, 0x0f, // 4096 - 256
        0x03, 0x80, 0x00, // last block, RLE, 4096 bytes
        0x00, // of zero
    ];

    #[test]
    fn inflated_sizes_other_than_the_claim_are_refused_and_said() {
        use object::CompressionFormat::{Zlib, Zstandard};
        let zstd = &ZSTD_4096_ZEROS[..];
        assert_eq!(inflate(Zstandard, zstd, 4096).unwrap(), vec![0; 4096]);
        assert_eq!(
            inflate(Zstandard, zstd, 100).unwrap_err(),
            "inflates to 101 or more bytes, not the 100 its header says"
        );
        assert_eq!(
            inflate(Zstandard, zstd, 8192).unwrap_err(),
            "inflates to 4096 bytes, not the 8192 its header says"
        );
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        std::io::Write::write_all(&mut z, &[7; 300]).unwrap();
        let data = z.finish().unwrap();
        assert_eq!(
            inflate(Zlib, &data, 301).unwrap_err(),
            "inflates to 300 bytes, not the 301 its header says"
        );
        assert!(inflate(object::CompressionFormat::Unknown, &data, 300).is_err());
    }

    #[test]
    fn the_cap_is_a_hundred_times_the_compressed_bytes_within_its_bounds() {
        assert_eq!(cap(0), ALWAYS_ALLOWED);
        assert_eq!(
            cap(ALWAYS_ALLOWED / 100 + 1),
            (ALWAYS_ALLOWED / 100 + 1) * 100
        );
        assert_eq!(cap(MAX_INFLATED / 100 + 1), MAX_INFLATED);
        assert_eq!(cap(u64::MAX), MAX_INFLATED);
        assert_eq!(refusal(1, ALWAYS_ALLOWED), None);
        assert_eq!(
            refusal(1, ALWAYS_ALLOWED + 1).unwrap(),
            "claims 1048577 bytes inflated from 1, above the cap of 1048576 \
             (100:1 above 1048576 bytes, 1073741824 at most); not inflated"
        );
    }

    #[test]
    fn bounded_takes_up_to_its_limit_and_no_more() {
        use std::io::Write as _;
        let mut b = Bounded {
            out: Vec::new(),
            limit: 4,
        };
        assert_eq!(b.write(&[1, 2, 3]).unwrap(), 3);
        assert_eq!(b.write(&[4]).unwrap(), 1);
        let e = b.write(&[5]).unwrap_err();
        assert_eq!(e.to_string(), "inflates to more than the cap of 4 bytes");
        assert_eq!(b.out, [1, 2, 3, 4]);
    }
}
