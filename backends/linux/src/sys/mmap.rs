//! Shared memory with the kernel: the perf mmap region (metadata page plus
//! the optional ring buffer) and the `rdpmc`/`rdtsc` instructions.
//!
//! The kernel writes this memory concurrently, and any other mapping of
//! the same event (a second `RingBuffer`, a forked child) may move
//! `data_tail` and let the kernel rewrite bytes at any moment. So no Rust
//! reference to the shared bytes is ever created: every access is a
//! volatile or atomic load/store through a raw pointer, and record bytes
//! leave the mapping only by [`Mmap::copy_out`] into memory Rust owns.
//! What those copies contain is then untrusted input for the parser, never
//! a memory-safety question.

use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

use memmap2::{MmapOptions, MmapRaw};

/// A shared `mmap(2)` of a perf event fd, unmapped on drop (memmap2 owns
/// the mapping; this type only ever reads it through raw pointers).
#[derive(Debug)]
pub(crate) struct Mmap {
    map: MmapRaw,
    writable: bool,
}

impl Mmap {
    /// Maps `len` bytes of `fd` (the metadata page plus `len - page` bytes of
    /// ring buffer, or just the page). `writable` is needed to consume a ring
    /// buffer (the reader writes `data_tail`); `populate` pre-faults it.
    pub(crate) fn new(
        fd: BorrowedFd<'_>,
        len: usize,
        writable: bool,
        populate: bool,
    ) -> Result<Mmap, i32> {
        let mut options = MmapOptions::new();
        options.len(len);
        if populate {
            options.populate();
        }
        let map = if writable {
            options.map_raw(&fd)
        } else {
            options.map_raw_read_only(&fd)
        }
        .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
        Ok(Mmap { map, writable })
    }

    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// The address of a `T` at `offset`, checked in bounds and aligned.
    fn at<T>(&self, offset: usize) -> *mut T {
        assert!(
            offset
                .checked_add(core::mem::size_of::<T>())
                .is_some_and(|end| end <= self.len())
                && offset.is_multiple_of(core::mem::align_of::<T>()),
            "mmap access out of bounds or misaligned"
        );
        self.map.as_mut_ptr().wrapping_add(offset).cast::<T>()
    }

    /// Volatile load of a `u32` (metadata page fields).
    pub(crate) fn load_u32(&self, offset: usize) -> u32 {
        let p = self.at::<u32>(offset);
        // SAFETY: `p` is in bounds and aligned (checked by `at`) and stays
        // mapped while `&self` lives; a volatile load of a plain integer
        // reads whatever the kernel last wrote, any bit pattern is valid.
        unsafe { p.read_volatile() }
    }

    /// Volatile load of a `u16`.
    pub(crate) fn load_u16(&self, offset: usize) -> u16 {
        let p = self.at::<u16>(offset);
        // SAFETY: as in `load_u32`.
        unsafe { p.read_volatile() }
    }

    /// Volatile load of a `u64`.
    pub(crate) fn load_u64(&self, offset: usize) -> u64 {
        let p = self.at::<u64>(offset);
        // SAFETY: as in `load_u32`.
        unsafe { p.read_volatile() }
    }

    /// Acquire load of a `u64` (`data_head`: pairs with the kernel's
    /// release of the record bytes before it).
    pub(crate) fn load_u64_acquire(&self, offset: usize) -> u64 {
        let p = self.at::<u64>(offset);
        // SAFETY: `p` is in bounds and 8-aligned (checked by `at`) and
        // stays mapped while `&self` lives; `AtomicU64` has the layout of
        // u64, and this memory is only ever accessed atomically or volatilely
        // from Rust (the module's rule), so no non-atomic access can race.
        unsafe { AtomicU64::from_ptr(p) }.load(Ordering::Acquire)
    }

    /// Release store of a `u64` (`data_tail`: tells the kernel the bytes
    /// before it may be overwritten, after we finished reading them).
    pub(crate) fn store_u64_release(&self, offset: usize, value: u64) {
        assert!(self.writable, "store into a read-only perf mapping");
        let p = self.at::<u64>(offset);
        // SAFETY: as in `load_u64_acquire`, and the mapping is writable
        // (asserted above).
        unsafe { AtomicU64::from_ptr(p) }.store(value, Ordering::Release)
    }

    /// Copies `dst.len()` bytes starting at `offset` out of the mapping.
    ///
    /// The copy is made of relaxed atomic loads (8 bytes at a time when
    /// `offset` and the length allow, as every perf record does), so it is
    /// well defined even if another reader of the same buffer let the
    /// kernel rewrite these bytes meanwhile: `dst` then holds a torn record,
    /// which the parser rejects or decodes as data, never unsoundness.
    pub(crate) fn copy_out(&self, offset: usize, dst: &mut [u8]) {
        assert!(
            offset
                .checked_add(dst.len())
                .is_some_and(|end| end <= self.len()),
            "mmap copy out of bounds"
        );
        let base = self.map.as_mut_ptr().wrapping_add(offset);
        if offset.is_multiple_of(8) && dst.len().is_multiple_of(8) {
            for (i, out) in dst.chunks_exact_mut(8).enumerate() {
                let p = base.wrapping_add(i * 8).cast::<u64>();
                // SAFETY: `p` is inside the mapping (range checked above),
                // 8-aligned (the mapping is page-aligned and `offset` a
                // multiple of 8), mapped while `&self` lives, and accessed
                // atomically (see `load_u64_acquire`).
                let word = unsafe { AtomicU64::from_ptr(p) }.load(Ordering::Relaxed);
                out.copy_from_slice(&word.to_ne_bytes());
            }
        } else {
            for (i, out) in dst.iter_mut().enumerate() {
                // SAFETY: as above for one byte (alignment 1).
                *out = unsafe { AtomicU8::from_ptr(base.wrapping_add(i)) }.load(Ordering::Relaxed);
            }
        }
    }
}

cfg_if::cfg_if! {
    if #[cfg(target_arch = "x86_64")] {
        /// Reads hardware counter `counter` with `rdpmc` (the kernel
        /// publishes `index` 1-based in the metadata page, 0 meaning "not
        /// available"; the counter is `index - 1`).
        #[inline(always)]
        pub(crate) fn rdpmc(counter: u32) -> u64 {
            let lo: u32;
            let hi: u32;
            // SAFETY: rdpmc touches no memory (`nomem`), no stack and no
            // flags. Its only failure is a #GP (CR4.PCE clear for this task,
            // or no such counter), which the kernel turns into SIGSEGV: the
            // process dies, nothing is corrupted. Callers issue it only for
            // an index the kernel published with `cap_user_rdpmc`, where it
            // does not fault.
            unsafe {
                core::arch::asm!("rdpmc", in("ecx") counter, out("eax") lo, out("edx") hi,
                    options(nostack, nomem, preserves_flags));
            }
            (u64::from(hi) << 32) | u64::from(lo)
        }

        /// Reads the time-stamp counter (the clock behind the metadata
        /// page's `time_*` conversion).
        #[inline(always)]
        pub(crate) fn rdtsc() -> u64 {
            // SAFETY: RDTSC is part of the x86_64 baseline and only reads
            // the time-stamp counter; it has no memory effects.
            unsafe { core::arch::x86_64::_rdtsc() }
        }
    } else {
        /// No time-stamp counter to read here: 0 (the page never sets
        /// `cap_user_rdpmc` on these targets, so the value is never used).
        #[inline(always)]
        pub(crate) fn rdtsc() -> u64 {
            0
        }
    }
}
