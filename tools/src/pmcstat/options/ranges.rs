//! The range of every number pmcstat takes, checked as the argument is
//! parsed (clap value parsers, so a bad number is EX_USAGE with the range
//! before anything is opened): pmcstat.c's `strtod`/`strtol` checks, with
//! the upper bounds it leaves to C's undefined conversions made explicit.

/// The most seconds `-l` and `-w` take: u32::MAX, 136 years. Far past any
/// run, and far below where `Duration::from_secs_f64` (2^64 s) or
/// `Instant + Duration` (2^63 s of CLOCK_MONOTONIC) would overflow.
pub(crate) const MAX_SECONDS: f64 = u32::MAX as f64;

/// The shortest `-w`: one millisecond, the unit of pmcstat.c's timer
/// (`EVFILT_TIMER` of `pa_interval * 1000` ms); a shorter interval would
/// print on every pass of the wait loop.
pub(crate) const MIN_INTERVAL_SECONDS: f64 = 0.001;

/// The largest CPU number `-c` takes. No Linux kernel has more than 8192
/// CPUs (NR_CPUS); a number past the machine's CPUs but under this is the
/// allocation's error, which names the machine's range.
pub(crate) const MAX_CPU_NUMBER: u32 = 65535;

/// How many CPUs one `-c` list may name, repeats counted: far above any
/// real list, and a bound on what the list costs to expand (a list of
/// `0-65535` ranges repeated to the argument's length would otherwise
/// expand to gigabytes).
const MAX_CPUS_NAMED: u64 = 1 << 20;

/// The largest process or thread id (`pid_t`).
pub(crate) const MAX_TID: i64 = i32::MAX as i64;

/// `-l SECS`: pmcstat.c's `strtod` and "Illegal duration time value" for
/// <= 0, bounded above by [`MAX_SECONDS`].
pub(crate) fn duration_seconds(text: &str) -> Result<f64, String> {
    seconds(text, "(0", |s| s > 0.0)
}

/// `-w SECS`: pmcstat.c's "Illegal wait interval value" for <= 0, here
/// from [`MIN_INTERVAL_SECONDS`] to [`MAX_SECONDS`].
pub(crate) fn interval_seconds(text: &str) -> Result<f64, String> {
    seconds(text, "[0.001", |s| s >= MIN_INTERVAL_SECONDS)
}

fn seconds(text: &str, low: &str, above_low: impl Fn(f64) -> bool) -> Result<f64, String> {
    let range = format!("give seconds in {low}, {}]", MAX_SECONDS);
    let secs: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("not a number of seconds: {range}, e.g. 5 or 0.5"))?;
    // NaN fails both comparisons; infinities fail the upper one.
    if above_low(secs) && secs <= MAX_SECONDS {
        Ok(secs)
    } else {
        Err(format!("out of range: {range}"))
    }
}

/// `-n COUNT`: pmcstat.c refuses a count <= 0 ("Illegal count value",
/// EX_USAGE); the largest is perf_event's (and strtol's) 2^63 - 1.
pub(crate) fn reload_count(text: &str) -> Result<u64, String> {
    let range = format!("give a count from 1 to {}", pmc::MAX_RELOAD_COUNT);
    let Ok(count) = text.parse::<u64>() else {
        let why = if text.trim_start().starts_with('-') || text.parse::<u128>().is_ok() {
            "out of range"
        } else {
            "not a reload count"
        };
        return Err(format!(
            "{why}: {range} (the events between samples, e.g. 65536)"
        ));
    };
    if count == 0 {
        return Err(format!(
            "the reload count must be at least 1 (hwpmc raises counts under {} to {}): {range}",
            pmc::MIN_RELOAD_COUNT,
            pmc::MIN_RELOAD_COUNT
        ));
    }
    if count > pmc::MAX_RELOAD_COUNT {
        return Err(format!("the reload count is too large: {range}"));
    }
    Ok(count)
}

/// `-t PID|REGEX`: the empty pattern matches every process's name, which
/// nobody means: refused.
pub(crate) fn target(text: &str) -> Result<String, String> {
    if text.is_empty() {
        return Err(
            "an empty pattern matches every process: give a process id or a regular expression over process names"
                .into(),
        );
    }
    Ok(text.to_string())
}

/// `-c LIST` before it is expanded: every CPU number at most
/// [`MAX_CPU_NUMBER`], and at most [`MAX_CPUS_NAMED`] CPUs named in all.
/// The syntax is the kernel list parser's (`crate::parse_cpus`), which
/// runs after this.
pub(crate) fn check_cpu_list(list: &str) -> Result<(), String> {
    let range = format!("give CPU numbers from 0 to {MAX_CPU_NUMBER}, e.g. `0-3,6` or `*`");
    let mut named: u64 = 0;
    for part in list.split(',') {
        let mut bounds = part.split('-').map(str::trim).map(|n| {
            if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
                return Ok(None);
            }
            // Digits only: too long for u64 is out of range too.
            match n.parse::<u64>() {
                Ok(cpu) if cpu <= u64::from(MAX_CPU_NUMBER) => Ok(Some(cpu)),
                _ => Err(format!("-c {list}: CPU {n} is out of range: {range}")),
            }
        });
        let first = bounds.next().transpose()?.flatten();
        let last = bounds.next().transpose()?.flatten();
        // A third bound or a non-number is the list parser's error.
        named += match (first, last) {
            (Some(a), Some(b)) if b >= a => b - a + 1,
            _ => 1,
        };
        if named > MAX_CPUS_NAMED {
            return Err(format!(
                "-c {list}: names more than {MAX_CPUS_NAMED} CPUs, repeats counted: give each CPU once"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_positive_finite_and_at_most_u32_max() {
        assert_eq!(duration_seconds("5"), Ok(5.0));
        assert_eq!(duration_seconds("1e-9"), Ok(1e-9));
        assert_eq!(duration_seconds("4294967295"), Ok(MAX_SECONDS));
        assert_eq!(interval_seconds("0.001"), Ok(0.001));
        for bad in [
            "0",
            "-0",
            "-1",
            "4294967296",
            "1e19",
            "99999999999999999999",
            "inf",
            "-inf",
            "NaN",
            "1e308",
        ] {
            let e = duration_seconds(bad).expect_err(bad);
            assert!(
                e.contains("out of range: give seconds in (0, 4294967295]"),
                "{e}"
            );
        }
        let e = interval_seconds("0.0009").unwrap_err();
        assert!(e.contains("[0.001, 4294967295]"), "{e}");
        for bad in ["", "5s", "0x10", "1,5", "five"] {
            let e = duration_seconds(bad).expect_err(bad);
            assert!(e.starts_with("not a number of seconds"), "{bad}: {e}");
        }
    }

    #[test]
    fn reload_counts_name_their_range() {
        assert_eq!(reload_count("1"), Ok(1));
        assert_eq!(
            reload_count("9223372036854775807"),
            Ok(pmc::MAX_RELOAD_COUNT)
        );
        for bad in [
            "0",
            "-5",
            "9223372036854775808",
            "99999999999999999999999999",
            "1e6",
            "",
        ] {
            let e = reload_count(bad).expect_err(bad);
            assert!(e.contains("from 1 to 9223372036854775807"), "{bad}: {e}");
        }
    }

    #[test]
    fn cpu_numbers_are_bounded_before_the_list_is_expanded() {
        for good in [
            "0", "0-3,6", "65535", "0-65535", "x", "3-1", "1-2-3", " 1 , 2",
        ] {
            // Syntax errors are left to the list parser.
            assert_eq!(check_cpu_list(good), Ok(()), "{good}");
        }
        for bad in [
            "65536",
            "0-4294967295",
            "99999999999999999999999",
            "1,2-70000",
        ] {
            let e = check_cpu_list(bad).expect_err(bad);
            assert!(e.contains("from 0 to 65535"), "{bad}: {e}");
        }
        let many = vec!["0-65535"; 17].join(",");
        assert!(
            check_cpu_list(&many)
                .unwrap_err()
                .contains("give each CPU once")
        );
    }

    #[test]
    fn the_empty_target_is_refused() {
        assert!(target("").unwrap_err().contains("every process"));
        assert_eq!(target(" "), Ok(" ".into()));
    }
}
