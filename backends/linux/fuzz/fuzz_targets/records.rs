//! Record decoding on arbitrary bytes: the first 16 bytes choose the
//! layout (sample type, read format, sample_id_all, register counts,
//! branch hw index), the rest is the stream. Nothing may panic, whatever
//! the accessors are asked.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pmc_linux::attr::{ReadFormat, SampleType};
use pmc_linux::record::{Record, RecordParser};

fuzz_target!(|data: &[u8]| {
    let Some((head, stream)) = data.split_first_chunk::<16>() else {
        return;
    };
    let word = |i: usize| u64::from_ne_bytes(head[i..i + 8].try_into().unwrap_or([0; 8]));
    let parser = RecordParser {
        sample_type: SampleType::from_bits_truncate(word(0)),
        read_format: ReadFormat::from_bits_truncate(word(8) & 0x1f),
        sample_id_all: head[13] & 1 == 1,
        regs_user: u32::from(head[14] % 64),
        regs_intr: u32::from(head[15] % 64),
        branch_hw_index: head[13] & 2 == 2,
    };
    for record in parser.records(stream) {
        let Ok((_, record)) = record else { break };
        if let Record::Sample(s) = &record {
            let _ = (s.ip(), s.pid(), s.tid(), s.time(), s.cpu(), s.period());
            let _ = (s.identifier(), s.addr(), s.id(), s.stream_id(), s.is_user());
            let _ = (s.callchain(), s.raw(), s.read().map(|r| r.values().count()));
            if let Ok(f) = s.fields() {
                let _ = f.branch_stack.map(|b| b.entries().count());
                let _ = f.callchain.map(|c| c.to_vec());
                let _ = f.stack_user.map(|u| u.valid_bytes().len());
                let _ = f.regs_user.map(|r| r.regs.to_vec());
            }
        }
        let _ = format!("{record:?}");
    }
});
