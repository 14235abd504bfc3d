//! "Did you mean": the known names closest to a misspelt one.
//!
//! One implementation for the whole project: the portable `pmc` crate
//! suggests event names and qualifiers on every platform, and the Linux
//! binding `pmc-linux` suggests PMUs, PMU terms, tracepoints and ELF
//! symbols. Neither can depend on the other for it (`pmc` depends on
//! `pmc-linux` only on Linux), so it lives here, below both.
//!
//! Names are compared ignoring ASCII case (`INST_RETIRED.ANY` is one edit
//! from `inst_retired.an`), and a candidate that contains the word, or is
//! contained in it, is always offered (`sched_switch` for `sched:sched_switch`),
//! after the ones within the edit limit.
//!
//! ```
//! let near = pmc_suggest::closest("instrutions", ["cycles", "instructions", "branches"], 3);
//! assert_eq!(near, ["instructions"]);
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

/// The Levenshtein distance of `a` and `b` in bytes, ignoring ASCII case.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b = b.as_bytes();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.bytes().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(!ca.eq_ignore_ascii_case(cb));
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// [`edit_distance`] of `a`, already in ASCII lower case, and `b` when it is
/// at most `limit`, else `None`, found without allocating and given up as
/// soon as every alignment is over the limit: an unknown name is compared
/// with every known one (thousands of tracepoints and PMU aliases), so this
/// is the cost of its error message. `FOLD`: `b` may hold upper case (the
/// comparison then lowers each of its bytes; most names need not).
fn bounded_distance<const FOLD: bool>(a: &[u8], b: &[u8], limit: usize) -> Option<usize> {
    const MAX: usize = 64;
    // The length difference bounds the distance from below, and so does
    // the bytes' difference as multisets (`byte_lower_bound`): most known
    // names fail one of them, for O(length) instead of a table.
    if a.len().abs_diff(b.len()) > limit || byte_lower_bound::<FOLD>(a, b) > limit {
        return None;
    }
    if b.len() > MAX {
        let d = edit_distance(&String::from_utf8_lossy(a), &String::from_utf8_lossy(b));
        return (d <= limit).then_some(d);
    }
    let mut prev = [0usize; MAX + 1];
    let mut cur = [0usize; MAX + 1];
    for (j, p) in prev.iter_mut().enumerate().take(b.len() + 1) {
        *p = j;
    }
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        let mut row_min = cur[0];
        for (j, cb) in b.iter().enumerate() {
            let cb = if FOLD { cb.to_ascii_lowercase() } else { *cb };
            let cost = usize::from(*ca != cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
            row_min = row_min.min(cur[j + 1]);
        }
        if row_min > limit {
            return None;
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    Some(prev[b.len()]).filter(|d| *d <= limit)
}

/// A lower bound of the edit distance of `a` (lower case) and `b`: an
/// edit changes at most one byte on each side, so the bytes of `a` that
/// `b` lacks (counted as multisets, in 64 buckets: merging bytes only
/// lowers the count) need at least that many edits, and so do `b`'s.
fn byte_lower_bound<const FOLD: bool>(a: &[u8], b: &[u8]) -> usize {
    let mut counts = [0i16; 64];
    for &c in a {
        counts[usize::from(c & 63)] += 1;
    }
    for &c in b {
        let c = if FOLD { c.to_ascii_lowercase() } else { c };
        counts[usize::from(c & 63)] -= 1;
    }
    let (mut only_a, mut only_b) = (0usize, 0usize);
    for n in counts {
        if n > 0 {
            only_a += n.unsigned_abs() as usize;
        } else {
            only_b += n.unsigned_abs() as usize;
        }
    }
    only_a.max(only_b)
}

/// Whether `needle` occurs in `haystack`, ignoring ASCII case.
fn contains_ignoring_case(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty()
        || haystack
            .windows(needle.len())
            .any(|w| w.eq_ignore_ascii_case(needle))
}

/// The edit limit for a word: a third of its length, at least 2.
pub fn edit_limit(word: &str) -> usize {
    (word.len() / 3).max(2)
}

/// Up to `n` of `candidates` closest to `word`, closest first (ties keep
/// the candidates' order, duplicates are offered once): those within
/// [`edit_limit`] edits, and those that contain `word` or are contained in
/// it, ignoring ASCII case. Empty when nothing is close.
pub fn closest<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    n: usize,
) -> Vec<String> {
    let w = word.as_bytes();
    let lower = word.to_ascii_lowercase();
    let limit = edit_limit(word);
    let mut scored: Vec<(usize, &str)> = candidates
        .into_iter()
        .filter_map(|c| {
            let cb = c.as_bytes();
            // Most names are lower case: std's substring search and the
            // distance without case folding then apply.
            let upper = cb.iter().any(u8::is_ascii_uppercase);
            let contains_word = if upper {
                contains_ignoring_case(cb, lower.as_bytes())
            } else {
                c.contains(&lower)
            };
            if !w.is_empty()
                && (contains_word || (cb.len() <= w.len() && contains_ignoring_case(w, cb)))
            {
                Some((edit_distance(word, c), c))
            } else if upper {
                Some((bounded_distance::<true>(lower.as_bytes(), cb, limit)?, c))
            } else {
                Some((bounded_distance::<false>(lower.as_bytes(), cb, limit)?, c))
            }
        })
        .collect();
    scored.sort_by_key(|(d, _)| *d);
    let mut out: Vec<String> = Vec::new();
    for (_, c) in scored {
        if out.len() == n {
            break;
        }
        if !out.iter().any(|o| o == c) {
            out.push(c.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The oracle: strsim's Levenshtein (in chars; the words here are
    /// ASCII) of the lower-cased words.
    fn oracle(a: &str, b: &str) -> usize {
        strsim::levenshtein(&a.to_ascii_lowercase(), &b.to_ascii_lowercase())
    }

    const WORDS: [&str; 9] = [
        "",
        "a",
        "cycles",
        "cpu-cycles",
        "instructions",
        "INST_RETIRED.ANY",
        "inst_retired.any",
        "no-such-evnt",
        "sched:sched_switch",
    ];

    #[test]
    fn edit_distance_is_levenshtein_ignoring_case() {
        for a in WORDS {
            for b in WORDS {
                assert_eq!(edit_distance(a, b), oracle(a, b), "{a:?} {b:?}");
            }
        }
        assert_eq!(edit_distance("INST_RETIRED.ANY", "inst_retired.any"), 0);
        assert_eq!(edit_distance("instrutions", "instructions"), 1);
    }

    #[test]
    fn bounded_distance_is_the_distance_within_the_limit() {
        let long = "x".repeat(70);
        let longer = format!("{long}yz");
        let words: Vec<&str> = WORDS.iter().copied().chain([&*long, &*longer]).collect();
        for a in &words {
            for b in &words {
                for limit in 0..6 {
                    let full = oracle(a, b);
                    assert_eq!(
                        bounded_distance::<true>(
                            a.to_ascii_lowercase().as_bytes(),
                            b.as_bytes(),
                            limit
                        ),
                        (full <= limit).then_some(full),
                        "{a:?} {b:?} within {limit}"
                    );
                }
            }
        }
    }

    proptest! {
        /// The byte bound never exceeds the distance (else a close name
        /// would be dropped).
        #[test]
        fn the_byte_bound_is_a_lower_bound(a in "[a-zA-Z_.:0-9@-]{0,16}", b in "[a-zA-Z_.:0-9@-]{0,16}") {
            let lower = a.to_ascii_lowercase();
            prop_assert!(byte_lower_bound::<true>(lower.as_bytes(), b.as_bytes()) <= oracle(&a, &b));
        }

        #[test]
        fn bounded_agrees_with_the_oracle(a in "[a-cA-C_.]{0,12}", b in "[a-cA-C_.]{0,12}", limit in 0usize..6) {
            let full = oracle(&a, &b);
            let a = a.to_ascii_lowercase();
            prop_assert_eq!(bounded_distance::<true>(a.as_bytes(), b.as_bytes(), limit), (full <= limit).then_some(full));
            // Without folding, on a lower-case `b`: the same distance.
            let b = b.to_ascii_lowercase();
            prop_assert_eq!(bounded_distance::<false>(a.as_bytes(), b.as_bytes(), limit), (full <= limit).then_some(full));
        }
    }

    #[test]
    fn closest_orders_by_distance_and_keeps_candidate_order_on_ties() {
        let near = closest(
            "cycels",
            [
                "instructions",
                "cycles",
                "cpu-cycles",
                "bus-cycles",
                "cycle",
            ],
            5,
        );
        // cycles: 2 (a transposition), cycle: 2; the others contain no
        // "cycels" and are over the limit (6 / 3 = 2).
        assert_eq!(near, ["cycles", "cycle"]);
        assert_eq!(closest("cycels", ["cycles", "cycle"], 1), ["cycles"]);
        assert!(closest("zzzzzzzz", ["cycles", "instructions"], 5).is_empty());
    }

    #[test]
    fn closest_ignores_case_and_returns_the_candidates_spelling() {
        assert_eq!(
            closest(
                "soft-page_fault.al",
                ["SOFT-PAGE_FAULT.ALL", "SOFT-CLOCK.HARD"],
                5
            ),
            ["SOFT-PAGE_FAULT.ALL"]
        );
        assert_eq!(closest("USS", ["usr", "os"], 3), ["usr", "os"]);
    }

    #[test]
    fn containing_candidates_are_offered_beyond_the_limit() {
        // `sched:sched_switch` is 6 edits from `sched_switch` (limit 4) but
        // contains it; `sched:sched_wakeup` neither is close nor contains it.
        let near = closest(
            "sched_switch",
            [
                "sched:sched_wakeup",
                "sched:sched_switch",
                "irq:softirq_entry",
            ],
            5,
        );
        assert_eq!(near, ["sched:sched_switch"]);
        // Closer candidates still come first.
        let near = closest("inst_retired", ["inst_retired.any", "inst_retires"], 5);
        assert_eq!(near, ["inst_retires", "inst_retired.any"]);
    }

    #[test]
    fn duplicates_are_offered_once_even_when_not_adjacent() {
        let near = closest("cycle", ["cycles", "cycl", "cycles", "cycle"], 5);
        assert_eq!(near, ["cycle", "cycles", "cycl"]);
    }
}
