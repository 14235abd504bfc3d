//! User stacks of samples, and unwinding them into the log's call chains.
//!
//! A sampling PMC allocated with a user-stack size
//! ([`PmcBuilder::user_stack`](crate::PmcBuilder::user_stack),
//! [`Owner::set_user_stack`](crate::Owner::set_user_stack); on Linux
//! perf's `PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER`) takes, with
//! each sample of user code, the thread's registers ([`UserRegs`]) and a
//! copy of the top of its stack ([`UserStack`]). Its owner unwinds them
//! *as the log is written*, with the [`StackUnwinder`] it was given, and
//! logs the unwound frames as the sample's user call chain: the log keeps
//! FreeBSD's CALLCHAIN records, so every pmclog reader sees whole stacks
//! even of programs built without frame pointers.
//!
//! With the `dwarf-unwind` feature (on in `pmcstat` and `libpmc`),
//! owners start with `DwarfUnwinder`: the objects' CFI through the
//! `hwpmc-unwind` crate. Without it, or after
//! [`Owner::set_stack_unwinder`](crate::Owner::set_stack_unwinder)`(None)`,
//! samples keep the kernel's frame-pointer chain. An embedder that wants
//! the raw registers and stack bytes installs its own [`StackUnwinder`]:
//! it is handed every process's mappings and every sample's stack, and
//! what it returns is logged (see `examples/user_stacks.rs`).

use std::fmt;

/// The default size of the stack copy: perf record's `--call-graph dwarf`
/// default.
pub const DEFAULT_USER_STACK_BYTES: u32 = 8192;

/// The largest stack copy the kernel takes (its sample size is a `u16`).
pub const MAX_USER_STACK_BYTES: u32 = 65528;

/// Whether a call-chain pc lies in the kernel's half of the address space
/// (at or above `1 << 63` on every 64-bit port of Linux and FreeBSD; no
/// user address reaches it), so no user frame can be there.
pub fn is_kernel_address(pc: u64) -> bool {
    pc >= 1 << 63
}

/// The user registers of a sample, as far as unwinding needs them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct UserRegs {
    /// The program counter.
    pub pc: u64,
    /// The stack pointer: the address of [`UserStack::bytes`]' first byte.
    pub sp: u64,
    /// The frame pointer (x86-64 `rbp`, AArch64 `x29`).
    pub fp: u64,
    /// The link register (AArch64 `x30`; 0 on x86-64).
    pub lr: u64,
}

/// The registers and stack copy of one sample.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct UserStack {
    /// The registers.
    pub regs: UserRegs,
    /// The stack from `regs.sp` up, as much as was copied (less than the
    /// size asked near the top of the stack).
    pub bytes: Vec<u8>,
}

impl fmt::Debug for UserStack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UserStack")
            .field("regs", &self.regs)
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

/// An executable file mapping of a process.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Mapping {
    /// Its start address.
    pub start: u64,
    /// Its length (0: unknown).
    pub len: u64,
    /// The file offset mapped at `start`.
    pub pgoff: u64,
    /// The file.
    pub path: String,
}

/// One sample's user stack, handed to a [`StackUnwinder`].
#[derive(Clone, Copy, Debug)]
pub struct StackSample<'a> {
    /// The sampled process.
    pub pid: u32,
    /// The sampled thread.
    pub tid: u32,
    /// The sample's time (the log's clock).
    pub time: u64,
    /// Its registers and stack.
    pub stack: &'a UserStack,
}

/// Turns samples' user stacks into call chains as the owner writes its
/// log. Called on the owner's unwinding thread, behind its drain (which
/// never waits for it but at stop, flush and close: samples that find its
/// queue full are logged as lost), in each process's time order: the
/// process events first tell it what each process has mapped. One that
/// panics is dropped and not called again: the samples go on into the log
/// with the chains the kernel made, none is lost.
pub trait StackUnwinder: Send + fmt::Debug {
    /// Process `pid` has `mapping` (at attach, for what exists then, and
    /// as it maps more).
    fn mapping(&mut self, pid: u32, mapping: &Mapping);
    /// Process `pid` replaced its image: its mappings are gone.
    fn exec(&mut self, pid: u32);
    /// Process `parent` forked `child`, which has its mappings.
    fn fork(&mut self, parent: u32, child: u32);
    /// Process `pid` ended.
    fn exit(&mut self, pid: u32);
    /// The sample's user call chain, innermost first (its pc first).
    /// An empty chain keeps the chain the kernel gave with the sample.
    fn unwind(&mut self, sample: &StackSample<'_>) -> Vec<u64>;
}

/// The objects' CFI (`.eh_frame`, `.eh_frame_hdr`, `.debug_frame`), and
/// frame pointers where an address has none: [`pmc_unwind`] over the
/// mappings the owner is told of.
#[cfg(feature = "dwarf-unwind")]
#[derive(Debug, Default)]
pub struct DwarfUnwinder {
    inner: pmc_unwind::Unwinder,
}

#[cfg(feature = "dwarf-unwind")]
impl DwarfUnwinder {
    /// A new unwinder knowing no process.
    pub fn new() -> DwarfUnwinder {
        DwarfUnwinder::default()
    }
}

#[cfg(feature = "dwarf-unwind")]
impl StackUnwinder for DwarfUnwinder {
    fn mapping(&mut self, pid: u32, m: &Mapping) {
        self.inner.add_mapping(
            pid,
            &pmc_unwind::Mapping {
                start: m.start,
                len: m.len,
                pgoff: m.pgoff,
                path: m.path.clone(),
            },
        );
    }
    fn exec(&mut self, pid: u32) {
        self.inner.exec(pid);
    }
    fn fork(&mut self, parent: u32, child: u32) {
        self.inner.fork(parent, child);
    }
    fn exit(&mut self, pid: u32) {
        self.inner.exit(pid);
    }
    fn unwind(&mut self, s: &StackSample<'_>) -> Vec<u64> {
        let r = s.stack.regs;
        self.inner.unwind(
            s.pid,
            &pmc_unwind::Regs {
                pc: r.pc,
                sp: r.sp,
                fp: r.fp,
                lr: r.lr,
            },
            &s.stack.bytes,
        )
    }
}

/// The unwinder an owner starts with: [`DwarfUnwinder`] with the
/// `dwarf-unwind` feature, else none.
pub(crate) fn default_unwinder() -> Option<Box<dyn StackUnwinder>> {
    #[cfg(feature = "dwarf-unwind")]
    {
        Some(Box::new(DwarfUnwinder::new()))
    }
    #[cfg(not(feature = "dwarf-unwind"))]
    {
        None
    }
}
