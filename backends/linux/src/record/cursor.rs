//! A bounds-checked reader over one record's bytes: every read names what
//! it reads and the byte offset where the record ran out.

use super::views::U64s;
use crate::error::{Error, Result};

/// A bounds-checked reader over one record.
pub(super) struct Cursor<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) pos: usize,
    /// Stream offset of `bytes[0]`.
    pub(super) base: usize,
    /// Stream offset of the record.
    pub(super) record: usize,
}

impl<'a> Cursor<'a> {
    #[inline]
    pub(super) fn err(&self, what: &str) -> Error {
        Error::invalid(
            format!("record at byte {}", self.record),
            format!(
                "{what} at byte {} runs past the record end",
                self.base + self.pos
            ),
        )
    }

    #[inline]
    pub(super) fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|e| *e <= self.bytes.len());
        match end {
            Some(end) => {
                let s = &self.bytes[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => Err(self.err(what)),
        }
    }

    #[inline]
    pub(super) fn u64(&mut self, what: &str) -> Result<u64> {
        let b = self.take(8, what)?;
        Ok(u64::from_ne_bytes([
            b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
        ]))
    }

    #[inline]
    pub(super) fn u32(&mut self, what: &str) -> Result<u32> {
        let b = self.take(4, what)?;
        Ok(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
    }

    #[inline]
    pub(super) fn u16(&mut self, what: &str) -> Result<u16> {
        let b = self.take(2, what)?;
        Ok(u16::from_ne_bytes([b[0], b[1]]))
    }

    #[inline]
    pub(super) fn u64s(&mut self, n: u64, what: &str) -> Result<U64s<'a>> {
        let len = usize::try_from(n)
            .ok()
            .and_then(|n| n.checked_mul(8))
            .ok_or_else(|| self.err(what))?;
        Ok(U64s {
            bytes: self.take(len, what)?,
        })
    }

    pub(super) fn rest(&self) -> &'a [u8] {
        &self.bytes[self.pos..]
    }
}

/// The bytes up to the first NUL.
pub(super) fn c_str(b: &[u8]) -> &[u8] {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    &b[..end]
}
