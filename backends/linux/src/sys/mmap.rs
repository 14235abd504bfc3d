//! Shared memory with the kernel: the perf mmap region (metadata page plus
//! the optional ring buffer) and the `rdpmc` instruction.
//!
//! The kernel writes this memory concurrently, so every access goes through
//! a volatile or atomic load/store on a raw pointer: no Rust reference to the
//! shared bytes is ever created, except [`Mmap::copy_out`] which copies bytes
//! the kernel has published and will not touch until the tail moves.

use std::os::fd::{AsRawFd, BorrowedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

/// A `mmap(2)` of a perf event fd, unmapped on drop.
#[derive(Debug)]
pub(crate) struct Mmap {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain shared memory; all access goes through
// volatile/atomic operations, so sharing the handle across threads is no
// more dangerous than sharing a raw pointer to it. Concurrent consumers are
// prevented by `&mut self` on the ring-buffer API above this layer.
unsafe impl Send for Mmap {}
// SAFETY: see `Send`; reads are volatile/atomic loads.
unsafe impl Sync for Mmap {}

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
        let prot = if writable {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_READ
        };
        let flags = libc::MAP_SHARED | if populate { libc::MAP_POPULATE } else { 0 };
        // SAFETY: we ask the kernel for a fresh mapping at an address of its
        // choosing; no existing memory is affected.
        let ptr = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, flags, fd.as_raw_fd(), 0) };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO));
        }
        let ptr = NonNull::new(ptr.cast::<u8>()).ok_or(libc::EIO)?;
        Ok(Mmap { ptr, len })
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    fn at<T>(&self, offset: usize) -> *mut T {
        assert!(
            offset + core::mem::size_of::<T>() <= self.len
                && offset.is_multiple_of(core::mem::align_of::<T>()),
            "mmap access out of bounds or misaligned"
        );
        // SAFETY: the offset is within the mapping (checked above).
        unsafe { self.ptr.as_ptr().add(offset).cast::<T>() }
    }

    /// Volatile load of a `u32` (metadata page fields).
    pub(crate) fn load_u32(&self, offset: usize) -> u32 {
        let p = self.at::<u32>(offset);
        // SAFETY: `p` is in bounds and aligned (checked by `at`); the memory
        // stays mapped for `&self`'s lifetime.
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
        // SAFETY: `p` is in bounds and 8-aligned; `AtomicU64` has the same
        // layout as u64, and the kernel only accesses it atomically too.
        unsafe { AtomicU64::from_ptr(p) }.load(Ordering::Acquire)
    }

    /// Release store of a `u64` (`data_tail`: tells the kernel the bytes
    /// before it may be overwritten, after we finished reading them).
    pub(crate) fn store_u64_release(&self, offset: usize, value: u64) {
        let p = self.at::<u64>(offset);
        // SAFETY: as in `load_u64_acquire`; the mapping is writable whenever
        // a ring buffer is consumed (checked by the ring-buffer layer).
        unsafe { AtomicU64::from_ptr(p) }.store(value, Ordering::Release)
    }

    /// Copies `dst.len()` bytes starting at `offset` out of the mapping.
    /// The caller only asks for bytes between `data_tail` and `data_head`,
    /// which the kernel does not write until the tail advances.
    pub(crate) fn copy_out(&self, offset: usize, dst: &mut [u8]) {
        assert!(
            offset
                .checked_add(dst.len())
                .is_some_and(|end| end <= self.len),
            "mmap copy out of bounds"
        );
        // SAFETY: the source range is inside the mapping (checked above) and
        // cannot overlap `dst`, which is ordinary Rust memory.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.ptr.as_ptr().add(offset),
                dst.as_mut_ptr(),
                dst.len(),
            );
        }
    }

    /// A view of `len` bytes at `offset` of the ring buffer, for zero-copy
    /// record decoding. Only valid for bytes the kernel published (between
    /// `data_tail` and `data_head`): the kernel does not write them until the
    /// tail advances, which requires `&mut` on the ring-buffer owner, so the
    /// borrow of `self` cannot outlive their stability.
    pub(crate) fn published(&self, offset: usize, len: usize) -> &[u8] {
        assert!(
            offset.checked_add(len).is_some_and(|end| end <= self.len),
            "mmap view out of bounds"
        );
        // SAFETY: in bounds (checked above); the bytes are not written by the
        // kernel while this borrow lives (see the doc comment), and u8 has no
        // invalid bit patterns.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(offset), len) }
    }

    /// A compiler barrier (the seqlock protocol of the metadata page).
    pub(crate) fn barrier() {
        std::sync::atomic::compiler_fence(Ordering::SeqCst);
    }
}

impl Drop for Mmap {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` describe a mapping created by `Mmap::new` that
        // nothing references any more (we own it and are being dropped).
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// Reads hardware counter `index - 1` with `rdpmc` (x86 only; the kernel
/// publishes `index` 1-based in the metadata page, 0 meaning "not available").
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn rdpmc(counter: u32) -> u64 {
    let lo: u32;
    let hi: u32;
    // SAFETY: the caller only issues rdpmc for a counter the kernel
    // advertised in the metadata page with `cap_user_rdpmc` set, so CR4.PCE
    // is enabled for this task and the instruction cannot fault; it has no
    // memory effects.
    unsafe {
        core::arch::asm!("rdpmc", in("ecx") counter, out("eax") lo, out("edx") hi,
            options(nostack, nomem, preserves_flags));
    }
    (u64::from(hi) << 32) | u64::from(lo)
}

/// Reads the time-stamp counter (the clock behind the metadata page's
/// `time_*` conversion).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn rdtsc() -> u64 {
    // SAFETY: RDTSC is part of the x86_64 baseline and only reads the
    // time-stamp counter; it has no memory effects.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// No time-stamp counter to read here: 0 (the page never sets
/// `cap_user_rdpmc` on these targets, so the value is never used).
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(crate) fn rdtsc() -> u64 {
    0
}
