//! `cargo xtask gen-pmc-events <freebsd source tree>`: libpmc's
//! `capi/include/pmc_events.h`, generated from FreeBSD's
//! `sys/dev/hwpmc/pmc_events.h` (the tree whose `PMC_VERSION` is
//! 0x0A000000).
//!
//! FreeBSD's `sys/sys/pmc.h` builds `enum pmc_event` by expanding
//! `__PMC_EVENTS()`: each `__PMC_EV_BLOCK(C, V)` sets the next value to V
//! (through `PMC_EV_C__BLOCK_START = V - 1`), each `__PMC_EV(C, N)` of the
//! class macro that follows takes the next value. This generator does the
//! same arithmetic to check the list (no two events share a value), then
//! writes the class macros and `__PMC_EVENTS()` in FreeBSD's form (names
//! and block values only, not FreeBSD's text), so that programs that
//! expand them (pmcstat, pmccontrol) compile; `capi/include/pmc.h` defines
//! the enum through them. The library reads the same header
//! (`include_str!`) for `pmc_name_of_event`, so there is one table.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `cargo xtask gen-pmc-events`.
#[derive(clap::Args)]
pub struct GenArgs {
    /// A FreeBSD source tree (its sys/dev/hwpmc/pmc_events.h is read), or
    /// that header itself.
    source: PathBuf,
}

const HEADER_OUT: &str = "capi/include/pmc_events.h";

pub fn run(args: &GenArgs) -> ExitCode {
    let path = if args.source.is_dir() {
        args.source.join("sys/dev/hwpmc/pmc_events.h")
    } else {
        args.source.clone()
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!(
                "xtask gen-pmc-events: cannot read {}: {e}; give a FreeBSD source tree or its \
                 sys/dev/hwpmc/pmc_events.h",
                path.display()
            );
            return ExitCode::FAILURE;
        }
    };
    let events = match enumerate(&text) {
        Ok(ev) => ev,
        Err(e) => {
            eprintln!("xtask gen-pmc-events: {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    if let Err(e) = std::fs::write(root.join(HEADER_OUT), c_header(&events, &ranges(&text))) {
        eprintln!("xtask gen-pmc-events: writing {HEADER_OUT}: {e}");
        return ExitCode::FAILURE;
    }
    println!(
        "xtask gen-pmc-events: {} events from {} into {HEADER_OUT}",
        events.len(),
        path.display()
    );
    ExitCode::SUCCESS
}

/// One enumerator: class, symbolic name, value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub class: String,
    pub name: String,
    pub value: u32,
}

/// The macro bodies of `text`: `#define NAME() body` joined over its
/// continuation lines, comments removed.
fn macros(text: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let text = strip_comments(text);
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        let Some(rest) = t.strip_prefix('#') else {
            continue;
        };
        let Some(rest) = rest.trim_start().strip_prefix("define") else {
            continue;
        };
        let rest = rest.trim_start();
        let Some(paren) = rest.find("()") else {
            continue;
        };
        let name = rest[..paren].trim().to_string();
        if name.contains(char::is_whitespace) {
            continue;
        }
        let mut body = String::new();
        let mut cur = rest[paren + 2..].to_string();
        loop {
            let continued = cur.trim_end().ends_with('\\');
            body.push_str(cur.trim_end().trim_end_matches('\\'));
            body.push(' ');
            if !continued {
                break;
            }
            match lines.next() {
                Some(l) => cur = l.to_string(),
                None => break,
            }
        }
        out.insert(name, body);
    }
    out
}

fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        match rest[start + 2..].find("*/") {
            Some(end) => {
                // Keep line structure so continuation lines still join.
                let comment = &rest[start..start + 2 + end + 2];
                out.extend(comment.chars().filter(|&c| c == '\n'));
                rest = &rest[start + 2 + end + 2..];
            }
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// The calls in a macro body: `NAME(args)`, in order.
fn calls(body: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(open) = rest.find('(') {
        let name = rest[..open]
            .rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .next()
            .unwrap_or("")
            .to_string();
        let Some(close) = rest[open..].find(')') else {
            break;
        };
        let args = rest[open + 1..open + close]
            .split(',')
            .map(|a| a.trim().to_string())
            .filter(|a| !a.is_empty())
            .collect();
        if !name.is_empty() {
            out.push((name, args));
        }
        rest = &rest[open + close + 1..];
    }
    out
}

fn parse_number(s: &str) -> Option<u32> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

/// The `#define PMC_EV_*_FIRST`/`_LAST` and `PMC_EVENT_FIRST`/`_LAST`
/// lines of the source: (name, enumerator it names).
pub fn ranges(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    // A define continued over lines (`#define PMC_EV_CMN600_PMU_LAST \`
    // and its target on the next line) is one logical line.
    let joined = strip_comments(text).replace("\\\n", " ");
    for line in joined.lines() {
        let mut words = line.trim_start().trim_start_matches('#').split_whitespace();
        if words.next() != Some("define") {
            continue;
        }
        let (Some(name), Some(target), None) = (words.next(), words.next(), words.next()) else {
            continue;
        };
        let is_range = name.ends_with("_FIRST") || name.ends_with("_LAST");
        if is_range && name.starts_with("PMC_EV") && target.starts_with("PMC_EV_") {
            out.push((name.to_string(), target.to_string()));
        }
    }
    out
}

/// `enum pmc_event` as FreeBSD's `sys/sys/pmc.h` computes it from
/// `__PMC_EVENTS()`.
pub fn enumerate(text: &str) -> Result<Vec<Event>, String> {
    let defs = macros(text);
    let top = defs
        .get("__PMC_EVENTS")
        .ok_or("no __PMC_EVENTS() macro: is this sys/dev/hwpmc/pmc_events.h?")?;
    let mut events = Vec::new();
    let mut next: Option<u32> = None;
    let mut seen = HashMap::new();
    expand(top, &defs, &mut next, &mut events, &mut seen, 0)?;
    Ok(events)
}

fn expand(
    body: &str,
    defs: &HashMap<String, String>,
    next: &mut Option<u32>,
    events: &mut Vec<Event>,
    seen: &mut HashMap<u32, String>,
    depth: usize,
) -> Result<(), String> {
    if depth > 8 {
        return Err("macros nest more than 8 deep".into());
    }
    for (name, args) in calls(body) {
        match name.as_str() {
            "__PMC_EV_BLOCK" => {
                let [_, v] = args.as_slice() else {
                    return Err(format!("__PMC_EV_BLOCK{args:?} does not have 2 arguments"));
                };
                *next = Some(parse_number(v).ok_or(format!("block value {v} is not a number"))?);
            }
            "__PMC_EV" => {
                let [class, ev] = args.as_slice() else {
                    return Err(format!("__PMC_EV{args:?} does not have 2 arguments"));
                };
                let value = next.ok_or(format!("{class}_{ev} comes before any block"))?;
                let full = format!("PMC_EV_{class}_{ev}");
                if let Some(prev) = seen.insert(value, full.clone()) {
                    return Err(format!("{full} and {prev} both get {value:#x}"));
                }
                events.push(Event {
                    class: class.clone(),
                    name: ev.clone(),
                    value,
                });
                *next = Some(value + 1);
            }
            other => {
                let inner = defs.get(other).ok_or(format!(
                    "__PMC_EVENTS() uses {other}(), which is not defined"
                ))?;
                expand(inner, defs, next, events, seen, depth + 1)?;
            }
        }
    }
    Ok(())
}

const NOTE: &str = "Generated by `cargo xtask gen-pmc-events` from FreeBSD's\n\
 sys/dev/hwpmc/pmc_events.h (the tree whose PMC_VERSION is 0x0A000000):\n\
 each class's __PMC_EV() list and __PMC_EVENTS() with the block values;\n\
 pmc.h builds enum pmc_event from them as sys/sys/pmc.h does. Do not edit.";

fn c_header(events: &[Event], ranges: &[(String, String)]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "/*\n * pmc_events.h -- {}\n */",
        NOTE.replace('\n', "\n * ")
    );
    s.push_str("#ifndef _PMC_EVENTS_H_\n#define _PMC_EVENTS_H_\n\n");
    s.push_str("/* sys/dev/hwpmc/pmc_events.h: software events are numbered at run time. */\n");
    s.push_str("#define\tPMC_EV_DYN_COUNT\t0x1000\n");
    s.push_str("#define\tPMC_EV_SOFT_FIRST\t0x20000\n");
    s.push_str("#define\tPMC_EV_SOFT_LAST\t(PMC_EV_SOFT_FIRST + PMC_EV_DYN_COUNT - 1)\n\n");
    // One class macro per run of a class's events, and __PMC_EVENTS()
    // placing each run at its block's value, as FreeBSD writes them; the
    // enum is built from __PMC_EVENTS() in pmc.h, as sys/sys/pmc.h does.
    let mut runs: Vec<(String, u32, Vec<&Event>)> = Vec::new();
    for e in events {
        match runs.last_mut() {
            Some((class, _, evs)) if *class == e.class => evs.push(e),
            _ => runs.push((e.class.clone(), e.value, vec![e])),
        }
    }
    let mut calls = Vec::new();
    for (i, (class, start, evs)) in runs.iter().enumerate() {
        let macro_name = if runs[..i].iter().any(|(c, _, _)| c == class) {
            format!("__PMC_EV_{class}_{i}")
        } else {
            format!("__PMC_EV_{class}")
        };
        let last = start + evs.len() as u32 - 1;
        let _ = writeln!(s, "/* PMC_EV_{class}_*: {start:#x} to {last:#x} */");
        let _ = writeln!(s, "#define\t{macro_name}()\t\\");
        for (j, e) in evs.iter().enumerate() {
            let more = if j + 1 < evs.len() { "\t\\" } else { "" };
            let _ = writeln!(s, "\t__PMC_EV({}, {}){more}", e.class, e.name);
        }
        s.push('\n');
        calls.push(format!("\t__PMC_EV_BLOCK({class}, {start:#07x})"));
        calls.push(format!("\t{macro_name}()"));
    }
    s.push_str("/* sys/dev/hwpmc/pmc_events.h: every event, each block at its value. */\n");
    s.push_str("#define\t__PMC_EVENTS()\t\\\n");
    s.push_str(&calls.join("\t\\\n"));
    s.push_str("\n\n");
    // The FIRST/LAST macros the source defines, where their enumerator
    // exists (some name events pmc_events.h no longer lists).
    for (name, target) in ranges {
        if target == "PMC_EV_SOFT_LAST"
            || events
                .iter()
                .any(|e| format!("PMC_EV_{}_{}", e.class, e.name) == *target)
        {
            let _ = writeln!(s, "#define\t{name}\t{target}");
        }
    }
    s.push_str("\n#endif /* _PMC_EVENTS_H_ */\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    // A made-up header in pmc_events.h's form: blocks out of numeric
    // order, a class macro spread over continuation lines with comments,
    // and a nested macro.
    const SAMPLE: &str = "\
/* head */
#define\t__PMC_EV_A()\t\\
__PMC_EV(A, ONE)\t/* first */\t\\
__PMC_EV(A, TWO)
#define __PMC_EV_B() \\
\t__PMC_EV(B, X)
#define __PMC_EV_BB() __PMC_EV_B()
#define\t__PMC_EVENTS()\t\\
\t__PMC_EV_BLOCK(A,\t0x2000)\t\\
\t__PMC_EV_A()\t\\
\t__PMC_EV_BLOCK(B, 0x1000) \\
\t__PMC_EV_BB()
";

    #[test]
    fn values_follow_the_blocks() {
        let ev = enumerate(SAMPLE).unwrap();
        let got: Vec<(String, u32)> = ev
            .iter()
            .map(|e| (format!("{}_{}", e.class, e.name), e.value))
            .collect();
        assert_eq!(
            got,
            [
                ("A_ONE".to_string(), 0x2000),
                ("A_TWO".to_string(), 0x2001),
                ("B_X".to_string(), 0x1000)
            ]
        );
    }

    #[test]
    fn the_header_lists_each_class_in_its_block() {
        let text = format!(
            "{SAMPLE}#define PMC_EV_A_FIRST PMC_EV_A_ONE\n#define\tPMC_EV_A_LAST\tPMC_EV_A_ONE\n\
             #define PMC_EV_Z_FIRST PMC_EV_Z_GONE\n#define\tPMC_EV_B_LAST\t\\\n\t\tPMC_EV_B_X\n"
        );
        let h = c_header(&enumerate(&text).unwrap(), &ranges(&text));
        assert!(
            h.contains("#define\t__PMC_EV_A()\t\\\n\t__PMC_EV(A, ONE)\t\\\n\t__PMC_EV(A, TWO)\n"),
            "{h}"
        );
        assert!(h.contains("\t__PMC_EV_BLOCK(A, 0x02000)\t\\\n\t__PMC_EV_A()\t\\\n\t__PMC_EV_BLOCK(B, 0x01000)\t\\\n\t__PMC_EV_B()\n"), "{h}");
        // The source's LAST is copied, not recomputed; a range naming an
        // enumerator that does not exist is dropped.
        assert!(h.contains("#define\tPMC_EV_A_LAST\tPMC_EV_A_ONE\n"));
        assert!(!h.contains("PMC_EV_Z_FIRST"));
        // A range defined over two lines (FreeBSD's PMC_EV_CMN600_PMU_LAST).
        assert!(h.contains("#define\tPMC_EV_B_LAST\tPMC_EV_B_X\n"), "{h}");
    }

    #[test]
    fn an_undefined_class_macro_or_a_clash_is_an_error() {
        let missing = "#define __PMC_EVENTS() __PMC_EV_BLOCK(A, 1) __PMC_EV_Q()\n";
        assert!(enumerate(missing).unwrap_err().contains("__PMC_EV_Q"));
        let clash = "#define __PMC_EV_A() __PMC_EV(A, X) __PMC_EV(A, Y)\n\
                     #define __PMC_EVENTS() __PMC_EV_BLOCK(A, 1) __PMC_EV_A() \
                     __PMC_EV_BLOCK(B, 2) __PMC_EV_A()\n";
        assert!(enumerate(clash).unwrap_err().contains("both get"));
    }
}
