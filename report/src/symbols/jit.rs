//! JIT code: functions a runtime wrote to `/tmp/perf-PID.map`, in the
//! format perf documents (tools/perf/Documentation/jit-interface.txt):
//! one `START SIZE symbolname` per line, START and SIZE in hex.

use std::path::Path;
use std::sync::Arc;

use super::{FunctionSymbol, Mapping, Resolved, function_at};
use crate::Frame;

/// Where a process's JIT names are.
pub(crate) fn perf_map_path(pid: u32) -> String {
    format!("/tmp/perf-{pid}.map")
}

/// The functions of a perf map file, sorted; `None` when there is none,
/// or when it was last written before the log started (`log_started`,
/// seconds since the epoch): then it is an earlier process's of the same
/// pid. Lines that do not parse are skipped (a runtime may be writing it).
pub(crate) fn read_perf_map(path: &Path, log_started: Option<u64>) -> Option<Vec<FunctionSymbol>> {
    use std::io::{BufRead as _, Read as _};
    // Any user may make /tmp/perf-PID.map: a FIFO or a device there must
    // neither block nor flood the report (the object opener's rules).
    let (file, metadata) = pmc_unwind::open_untrusted_object(path).ok()?;
    let written = metadata.modified().ok()?;
    let written = written
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_secs();
    if log_started.is_some_and(|started| written < started) {
        return None;
    }
    // Line by line, each at most MAX_LINE (a file of one endless line is
    // not one endless string).
    let mut reader = std::io::BufReader::new(file);
    let mut text = String::new();
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = (&mut reader)
            .take(MAX_LINE)
            .read_until(b'\n', &mut line)
            .ok()?;
        if n == 0 {
            break;
        }
        if line.last() == Some(&b'\n') {
            text.push_str(&String::from_utf8_lossy(&line));
        } else if n as u64 == MAX_LINE {
            // Too long: skip the rest of the line.
            let mut skipped = Vec::new();
            while (&mut reader)
                .take(MAX_LINE)
                .read_until(b'\n', &mut skipped)
                .ok()?
                == MAX_LINE as usize
                && skipped.last() != Some(&b'\n')
            {
                skipped.clear();
            }
        } else {
            text.push_str(&String::from_utf8_lossy(&line));
        }
    }
    Some(parse_perf_map(&text))
}

/// The longest perf map line read (a C++ name of a few kilobytes fits).
const MAX_LINE: u64 = 64 << 10;

fn hex(word: &str) -> Option<u64> {
    let digits = word.strip_prefix("0x").unwrap_or(word);
    u64::from_str_radix(digits, 16).ok()
}

pub(crate) fn parse_perf_map(text: &str) -> Vec<FunctionSymbol> {
    let mut functions: Vec<FunctionSymbol> = text
        .lines()
        .filter_map(|l| {
            let mut f = l.trim().splitn(3, ' ');
            let start = hex(f.next()?)?;
            let size = hex(f.next()?)?;
            let name = f.next()?.trim();
            (!name.is_empty() && size > 0).then(|| FunctionSymbol {
                start,
                end: start.saturating_add(size),
                name: name.to_string(),
            })
        })
        .collect();
    // A runtime that reuses memory writes the newer name later: keep it.
    functions.reverse();
    functions.sort_by_key(|f| f.start);
    functions.dedup_by_key(|f| f.start);
    functions
}

/// A pc named by a perf map, its "image" the map file as perf shows it.
pub(crate) fn resolve(map: Option<&[FunctionSymbol]>, file: &Path, pc: u64) -> Option<Resolved> {
    let f = function_at(map?, pc)?;
    Some(Resolved {
        frames: vec![Frame {
            function: f.name.clone(),
            file: None,
            line: None,
        }],
        mapping: Some(Arc::new(Mapping {
            memory_start: f.start,
            memory_limit: f.end,
            file_offset: 0,
            path: file.display().to_string(),
            build_id: None,
            text_range: None,
        })),
        object_address: Some(pc),
        symbol_start: Some(f.start),
        symbol_end: Some(f.end),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_map_lines_are_start_size_name_in_hex() {
        let map = parse_perf_map(
            "7f00001000 40 LazyCompile:*fib /app.js:1\n\
             not a line\n\
             0x7f00002000 0x10 stub with spaces\n\
             7f00003000 0 empty\n",
        );
        let names: Vec<(u64, u64, &str)> = map
            .iter()
            .map(|f| (f.start, f.end, f.name.as_str()))
            .collect();
        assert_eq!(
            names,
            vec![
                (0x7f_0000_1000, 0x7f_0000_1040, "LazyCompile:*fib /app.js:1"),
                (0x7f_0000_2000, 0x7f_0000_2010, "stub with spaces"),
            ]
        );
        let file = Path::new("/tmp/perf-1.map");
        let r = resolve(Some(&map), file, 0x7f_0000_103f).unwrap();
        assert_eq!(r.frames[0].function, "LazyCompile:*fib /app.js:1");
        assert_eq!(r.mapping.as_ref().unwrap().path, "/tmp/perf-1.map");
        assert!(resolve(Some(&map), file, 0x7f_0000_1040).is_none());
        assert!(resolve(None, file, 0x7f_0000_1000).is_none());
    }

    #[test]
    fn a_reused_address_takes_the_later_name() {
        let map = parse_perf_map("1000 10 old\n1000 20 new\n");
        assert_eq!(map.len(), 1);
        assert_eq!((map[0].name.as_str(), map[0].end), ("new", 0x1020));
    }
}
