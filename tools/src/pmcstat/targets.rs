//! `-t`: the running processes a specifier names, by process id or by a
//! regular expression over their names, as pmcstat.c's
//! `pmcstat_find_targets` finds them.

use std::process::ExitCode;

use super::TOOL;

/// `-t SPEC` as pmcstat.c's `pmcstat_find_targets`: a number (`strtol`
/// base 0 took at least one digit and it is not negative) is a process id;
/// anything else is an extended regular expression searched for in the
/// name of each running process, every match a target. A pattern that
/// does not compile exits `EX_DATAERR`, as pmcstat.c's
/// `err(EX_DATAERR, "ERROR: Failed to compile regex …")`. A process id no
/// running process has is said and matches nothing, as pmcstat.c skips a
/// target whose attach fails with ESRCH (the caller refuses a run left
/// with no target at all).
pub(super) fn find_targets(spec: &str) -> Result<Vec<u32>, ExitCode> {
    if let Some(number) = leading_number(spec).filter(|&p| p >= 0) {
        // Past pid_t: no process has it (process_exists says so).
        let pid = u32::try_from(number).unwrap_or(u32::MAX);
        if !pmc::process_exists(pid) {
            eprintln!("{TOOL}: -t {spec}: process {number} does not exist");
            return Ok(Vec::new());
        }
        return Ok(vec![pid]);
    }
    let pattern = regex::Regex::new(spec).map_err(|e| {
        eprintln!(
            "{TOOL}: -t {spec}: not a process id, and not a regular expression over process names: {}",
            e.to_string().replace('\n', " ")
        );
        ExitCode::from(crate::sysexits::EX_DATAERR)
    })?;
    Ok(process_names()
        .into_iter()
        .filter(|(_, name)| pattern.is_match(name))
        .map(|(pid, _)| pid)
        .collect())
}

/// The number `strtol(s, &end, 0)` reads at the start of `s`, if it reads
/// a digit: leading white space, a sign, then `0x` hex, `0` octal or
/// decimal digits; what follows is ignored, as pmcstat.c ignores `end`.
fn leading_number(s: &str) -> Option<i64> {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (negative, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let hex = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X"));
    let (radix, digits) = match hex {
        Some(h) if h.starts_with(|c: char| c.is_ascii_hexdigit()) => (16, h),
        _ if t.starts_with('0') => (8, t),
        _ => (10, t),
    };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    if end == 0 {
        return None;
    }
    // strtol saturates; a pid that large matches no process anyway.
    let value = i64::from_str_radix(&digits[..end], radix).unwrap_or(i64::MAX);
    Some(if negative { -value } else { value })
}

/// A process's name (`/proc/PID/comm`), if it still runs.
pub(super) fn process_name(pid: u32) -> Option<String> {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    Some(comm.trim_end_matches('\n').to_string())
}

/// Each process's id and name (`/proc/PID/comm`, as FreeBSD's `ki_comm`).
fn process_names() -> Vec<(u32, String)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|entry| {
        let entry = entry.ok()?;
        let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
        let comm = std::fs::read_to_string(entry.path().join("comm")).ok()?;
        Some((pid, comm.trim_end_matches('\n').to_string()))
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::leading_number;

    #[test]
    fn t_numbers_are_read_as_strtol_base_0_reads_them() {
        assert_eq!(leading_number("1234"), Some(1234));
        assert_eq!(leading_number("  42"), Some(42));
        assert_eq!(leading_number("0x1f"), Some(31));
        assert_eq!(leading_number("010"), Some(8));
        assert_eq!(leading_number("0"), Some(0));
        // strtol stops at the first non-digit; pmcstat.c ignores the rest.
        assert_eq!(leading_number("12abc"), Some(12));
        assert_eq!(leading_number("-3"), Some(-3));
        assert_eq!(leading_number("sleep"), None);
        assert_eq!(leading_number("^sl.*"), None);
        assert_eq!(leading_number(""), None);
        assert_eq!(leading_number("0x"), Some(0));
    }
}
