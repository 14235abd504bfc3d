//! An embedder's own unwinder: the registers and stack bytes of every
//! sample, through [`pmc::sample::StackUnwinder`].
//!
//! A sampling PMC asks for a user-stack copy (`user_stack`); its owner
//! hands each process's mappings and each sample's [`UserStack`] to the
//! unwinder installed with `Owner::set_stack_unwinder`, and logs the
//! frames it returns as the sample's CALLCHAIN. This one follows the
//! frame-pointer chain inside the copy, and counts what it saw.
//!
//! ```sh
//! cargo run --example user_stacks
//! ```

use std::sync::{Arc, Mutex};

use pmc::sample::{Mapping, StackSample, StackUnwinder, UserStack};
use pmc::{Flags, Owner};

/// What the unwinder saw, shared with `main`.
#[derive(Debug, Default)]
struct Seen {
    samples: usize,
    stack_bytes: usize,
    mappings: usize,
    first: Option<UserStack>,
}

#[derive(Debug)]
struct FramePointerWalk(Arc<Mutex<Seen>>);

impl StackUnwinder for FramePointerWalk {
    fn mapping(&mut self, _pid: u32, _mapping: &Mapping) {
        self.0.lock().unwrap().mappings += 1;
    }
    fn exec(&mut self, _pid: u32) {}
    fn fork(&mut self, _parent: u32, _child: u32) {}
    fn exit(&mut self, _pid: u32) {}

    fn unwind(&mut self, sample: &StackSample<'_>) -> Vec<u64> {
        let stack = sample.stack;
        let mut seen = self.0.lock().unwrap();
        seen.samples += 1;
        seen.stack_bytes += stack.bytes.len();
        seen.first.get_or_insert_with(|| stack.clone());
        // [fp] is the caller's fp, [fp + 8] the return address, while
        // both lie inside the copy and the chain moves up the stack.
        let word = |addr: u64| -> Option<u64> {
            let at = usize::try_from(addr.checked_sub(stack.regs.sp)?).ok()?;
            let bytes = stack.bytes.get(at..at.checked_add(8)?)?;
            Some(u64::from_le_bytes(bytes.try_into().ok()?))
        };
        let mut frames = vec![stack.regs.pc];
        let mut fp = stack.regs.fp;
        while let (Some(next), Some(ret)) = (word(fp), word(fp.wrapping_add(8))) {
            if ret == 0 || next <= fp || frames.len() >= 128 {
                break;
            }
            frames.push(ret);
            fp = next;
        }
        frames
    }
}

#[inline(never)]
fn work(n: u64) -> u64 {
    (0..n).fold(0u64, |a, i| a.wrapping_mul(31).wrapping_add(i ^ (a >> 7)))
}

fn main() -> pmc::Result<()> {
    let owner = Owner::new(pmc::backend::Backend::selected());
    let seen = Arc::new(Mutex::new(Seen::default()));
    owner.set_stack_unwinder(Some(Box::new(FramePointerWalk(seen.clone()))));
    let log = pmc::global::log::MemoryLog::new();
    owner.configure_logfile(log.clone())?;
    // A cpu-clock sample every 100 µs of this process, 8 KiB of stack each.
    let mut pmc = owner
        .pmc("cpu-clock,usr")
        .sampling(100_000)
        .flags(Flags::CALLCHAIN)
        .user_stack(pmc::sample::DEFAULT_USER_STACK_BYTES)
        .build()?;
    pmc.attach(0)?;
    pmc.start()?;
    let result = work(200_000_000);
    pmc.stop()?;
    owner.close_logfile()?;
    let seen = seen.lock().unwrap();
    println!(
        "work = {result}: {} samples with {} stack bytes in all, {} mappings told",
        seen.samples, seen.stack_bytes, seen.mappings
    );
    if let Some(first) = &seen.first {
        println!(
            "first sample: pc {:#x} sp {:#x} fp {:#x}, {} bytes of stack",
            first.regs.pc,
            first.regs.sp,
            first.regs.fp,
            first.bytes.len()
        );
    }
    Ok(())
}
