//! The unwinder on arbitrary input: registers, an object's bytes (its
//! CFI, section headers and program headers as the input makes them) and
//! a stack copy. The first 32 bytes are pc, sp, fp and lr; the next two
//! the object's length; then the object, then the stack. Nothing may
//! panic, loop or read outside the copy: the chain ends, at most
//! `MAX_FRAMES` long, starting with the pc.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use pmc_unwind::{MAX_FRAMES, Mapping, Regs, Unwinder};

/// Where the object is mapped: the pcs worth trying lie around it.
const START: u64 = 0x40_0000;

fuzz_target!(|data: &[u8]| {
    // libfuzzer-sys's panic hook aborts at once, even inside the
    // unwinder's own catch_unwind (gimli's known overflow on corrupt CFI,
    // which ends a chain); with this hook such a caught panic is
    // tolerated (and not printed, gimli's being known), and any other
    // still reaches libfuzzer-sys's catch_unwind, which aborts: a crash.
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !info.location().is_some_and(|l| l.file().contains("/gimli-")) {
                default(info);
            }
        }));
    });
    let Some((head, rest)) = data.split_first_chunk::<34>() else {
        return;
    };
    let word = |i: usize| u64::from_ne_bytes(head[i..i + 8].try_into().unwrap_or([0; 8]));
    let object_len = usize::from(u16::from_ne_bytes([head[32], head[33]])).min(rest.len());
    let (object, stack) = rest.split_at(object_len);
    // The pc near the mapping half of the time, so the CFI is consulted.
    let pc = if word(0) & 1 == 0 {
        START + (word(0) >> 1) % 0x1_0000
    } else {
        word(0)
    };
    let regs = Regs {
        pc,
        sp: word(8),
        fp: word(16),
        lr: word(24),
    };
    let mut unwinder = Unwinder::new();
    let mapping = Mapping {
        start: START,
        len: 0x1_0000,
        pgoff: 0,
        path: "/fuzz/object".into(),
    };
    unwinder.add_mapping_with_object(1, &mapping, Arc::from(object));
    let chain = unwinder.unwind(1, &regs, stack);
    assert!(chain.len() <= MAX_FRAMES, "{} frames", chain.len());
    assert!(chain.first().is_none_or(|&first| first == pc), "{chain:x?}");
});
