//! A report holds what it must: each distinct stack once with its count,
//! however many samples a log has; and the streamed writers give the
//! text the whole-text ones give.

use super::*;

/// The `i`th of `k` synthetic chains, leaf first: a shared root caller,
/// one of 4 middle callers, a leaf of its own (unmapped pcs, unnamed).
fn chain(i: u64) -> Vec<u64> {
    vec![0x9000 + i, 0x8000 + i % 4, 0x7000]
}

fn callchain(tid: u32, pcs: Vec<u64>) -> LogEvent {
    ev(LogRecord::Callchain {
        pid: 7,
        tid,
        pmcid: 3,
        cpu: 0,
        userspace: true,
        pcs,
    })
}

#[test]
fn n_samples_over_k_stacks_hold_k_counts_and_the_k_chains_nodes() {
    const N: u64 = 20_000;
    const K: u64 = 50;
    let mut builder = ProfileBuilder::new(ProfileOptions::default());
    for i in 0..N {
        builder.push(&callchain(1, chain(i % K)));
    }
    assert_eq!(builder.distinct_stacks(), K as usize);
    // Nodes: the root caller, 4 middle callers under it, K leaves.
    assert_eq!(builder.chains.len(), 1 + 4 + K as usize);
    // Another thread's samples of the same chains: K more counts, no node.
    builder.push(&callchain(2, chain(0)));
    assert_eq!(builder.distinct_stacks(), K as usize + 1);
    assert_eq!(builder.chains.len(), 1 + 4 + K as usize);
    let profile = builder.finish();
    assert_eq!(profile.samples.len(), K as usize + 1);
    assert_eq!(profile.total(0), N + 1);
    // Sorted by thread, then chain leaf first: the order the samples had
    // when each chain was a Vec of its own.
    let keys: Vec<(u32, Vec<u64>)> = profile
        .samples
        .iter()
        .map(|s| {
            let pcs = profile
                .stack(s)
                .iter()
                .map(|&l| profile.locations[l as usize].address);
            (s.tid, pcs.collect())
        })
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    // The leaf is looked up at its pc, a caller one byte before it.
    assert_eq!(keys[0], (1, vec![0x9000, 0x7fff, 0x6fff]));
    for s in &profile.samples {
        let expected = if s.tid == 2 { 1 } else { N / K };
        assert_eq!(s.count, expected, "{s:?}");
    }
}

#[test]
fn folded_lines_sort_as_their_text_and_stream_as_the_text() {
    // "a-x" sorts before "a;…" as text ('-' < ';'), after "a" name by name.
    let locations = vec![
        cg_location(None, "a", None, 1),
        cg_location(None, "a-x", None, 2),
        cg_location(None, "b", None, 3),
        cg_location(None, "b c", None, 4),
    ];
    let profile = cg_profile(
        locations,
        &[
            (&[2, 0], 5),
            (&[1], 12),
            (&[2, 0], 7),
            (&[3, 0], 2),
            (&[0], 9),
            (&[2], 1),
        ],
    );
    let text = folded(&profile);
    assert_eq!(text, "a 9\na-x 12\na;b 12\na;b c 2\nb 1\n");
    let mut streamed = Vec::new();
    write_folded(&profile, &mut streamed).unwrap();
    assert_eq!(String::from_utf8(streamed).unwrap(), text);
    let mut graph = Vec::new();
    write_callgraph(&profile, &mut graph).unwrap();
    assert_eq!(String::from_utf8(graph).unwrap(), callgraph(&profile));
}
