//! The spool's chunks: records read in order across the copies of a
//! ring, each copy dropped once read, a copy without a whole record
//! skipped.

use super::{Chunks, Spool, spool_limit};

/// A record of `size` bytes (header included) whose `type` field is `tag`.
fn record(tag: u32, size: u16) -> Vec<u8> {
    let mut r = vec![0u8; usize::from(size)];
    r[..4].copy_from_slice(&tag.to_ne_bytes());
    r[6..8].copy_from_slice(&size.to_ne_bytes());
    r
}

fn spool_of(chunks: Vec<Vec<u8>>) -> Spool {
    let mut list = Chunks::default();
    for c in chunks {
        list.bytes += c.len();
        list.list.push_back(c);
    }
    Spool {
        chunks: list,
        next: 0,
    }
}

/// What the drain's loop does: peek, step over, move to the next chunk
/// at a chunk's end.
fn read_all(spool: &mut Spool) -> Vec<u32> {
    let mut tags = Vec::new();
    loop {
        let Some(size) = spool.peek().map(<[u8]>::len) else {
            if spool.skip_corrupt() {
                continue;
            }
            break;
        };
        let front = spool.chunks.list.front().expect("a chunk");
        let bytes = &front[spool.next..spool.next + size];
        tags.push(u32::from_ne_bytes(bytes[..4].try_into().unwrap()));
        spool.next += size;
    }
    tags
}

#[test]
fn records_are_read_across_chunks_and_each_chunk_is_dropped_once_read() {
    let first = [record(1, 16), record(2, 24)].concat();
    let second = record(3, 8);
    // A header claiming more than the chunk holds: no whole record.
    let mut corrupt = record(9, 64);
    corrupt.truncate(40);
    let third = [record(4, 32), record(5, 8)].concat();
    let mut spool = spool_of(vec![first, second, corrupt, third]);
    assert_eq!(read_all(&mut spool), [1, 2, 3, 4, 5]);
    assert!(spool.chunks.list.is_empty());
    assert_eq!(spool.chunks.bytes, 0, "every chunk's bytes given back");
    assert!(
        spool.chunks.spare.is_some(),
        "the last buffer kept for reuse"
    );
}

#[test]
fn the_spool_limit_covers_two_rings_and_at_least_16_mib() {
    assert_eq!(spool_limit(512 << 10), 16 << 20);
    assert_eq!(spool_limit(16 << 20), 32 << 20);
}
