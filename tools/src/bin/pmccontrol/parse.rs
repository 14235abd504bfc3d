//! pmccontrol's command line, read as pmccontrol.c's getopt loop reads it
//! (bundling, `-c` applying to the `-e`/`-d` after it, one command), with
//! our long options; `cli::pmccontrol` defines the same options for the
//! man page and completions.

use std::io::Write;

use super::{Command, EX_DATAERR, EX_USAGE, EXTENSIONS, Op, Stop, TOOL, USAGE};

/// What the command line asks for.
pub(crate) struct Parsed {
    pub(crate) command: Command,
    pub(crate) ops: Vec<Op>,
    pub(crate) json: bool,
    /// A second command was given: EX_USAGE once parsing ends, silently.
    pub(crate) conflict: bool,
}

/// pmccontrol.c's getopt loop over `:c:d:e:lLs`, plus our long options.
/// `Ok(None)`: `--help` or `--version` has been answered (on `out`). A
/// refusal is EX_USAGE, or pmccontrol.c's EX_DATAERR for an id that is not
/// a number or does not fit an int, its message written to `err` (errx's
/// `pmccontrol: message`); nothing else is touched, so the property test
/// (`pmccontrol/argv_properties.rs`) runs it on generated vectors.
pub(crate) fn parse(
    args: &[String],
    out: &mut impl Write,
    err: &mut impl Write,
) -> Result<Option<Parsed>, Stop> {
    // errx(3) onto `err`.
    let mut refuse = |code: u8, message: &str| -> Stop {
        match writeln!(err, "{TOOL}: {message}") {
            Ok(()) => Stop::Status(code),
            Err(e) => Stop::Io(e),
        }
    };
    let mut p = Parsed {
        command: Command::Usage,
        ops: Vec::new(),
        json: false,
        conflict: false,
    };
    let mut current_cpu: Option<i32> = None;
    // The only command a flag may set: any other one already set is a conflict.
    let set = |p: &mut Parsed, to: Command| {
        if p.command == Command::Usage || (to == Command::EnableDisable && p.command == to) {
            p.command = to;
            true
        } else {
            p.conflict = true;
            false
        }
    };
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if arg == "--" || !arg.starts_with('-') || arg == "-" {
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            match long {
                "holders" => {
                    set(&mut p, Command::Holders);
                }
                "limits" => {
                    set(&mut p, Command::Limits);
                }
                "json" => p.json = true,
                "help" => {
                    writeln!(out, "{USAGE}\n{EXTENSIONS}")?;
                    return Ok(None);
                }
                "version" => {
                    writeln!(out, "{TOOL} {}", env!("CARGO_PKG_VERSION"))?;
                    return Ok(None);
                }
                _ => {
                    return Err(refuse(
                        EX_USAGE,
                        &format!("Unrecognized option \"{arg}\"\n{TOOL}: {USAGE}"),
                    ));
                }
            }
            continue;
        }
        let flags: Vec<char> = arg[1..].chars().collect();
        let mut k = 0;
        while k < flags.len() {
            let c = flags[k];
            k += 1;
            match c {
                'L' => {
                    set(&mut p, Command::ListEvents);
                }
                'l' => {
                    set(&mut p, Command::ListState);
                }
                's' => {
                    set(&mut p, Command::Statistics);
                }
                'c' | 'd' | 'e' => {
                    // The option's argument: the rest of this word, or the next.
                    let optarg = if k < flags.len() {
                        flags[k..].iter().collect::<String>()
                    } else if i < args.len() {
                        i += 1;
                        args[i - 1].clone()
                    } else {
                        return Err(refuse(
                            EX_USAGE,
                            &format!("Missing argument to option '-{c}'"),
                        ));
                    };
                    k = flags.len();
                    if !set(&mut p, Command::EnableDisable) {
                        continue;
                    }
                    let what = if c == 'c' { "CPU" } else { "PMC" };
                    // Only the first character is compared with the wildcard.
                    let id = if optarg.starts_with('*') {
                        None
                    } else {
                        // pmccontrol.c's line, then the range (ours).
                        let Some(id) = c_id(&optarg) else {
                            return Err(refuse(
                                EX_DATAERR,
                                &format!(
                                    "\"{optarg}\" is not a valid {what} id\n{TOOL}: a {what} id is a number from 0 to {} (decimal, 0x hex or 0 octal), or * for every {what}",
                                    i32::MAX
                                ),
                            ));
                        };
                        Some(id)
                    };
                    if c == 'c' {
                        current_cpu = id;
                    } else {
                        p.ops.push(Op {
                            cpu: current_cpu,
                            pmc: id,
                            enable: c == 'e',
                        });
                    }
                }
                _ => {
                    return Err(refuse(
                        EX_USAGE,
                        &format!("Unrecognized option \"-{c}\"\n{TOOL}: {USAGE}"),
                    ));
                }
            }
        }
    }
    Ok(Some(p))
}

/// A CPU or PMC id as pmccontrol.c reads one: `strtoul(s, &end, 0)` must
/// consume the whole text (so the empty text is 0), and the value stored
/// in an `int` must not be negative (`-1`, an overflow).
pub(crate) fn c_id(s: &str) -> Option<i32> {
    let t = s.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    let (negative, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (radix, digits) = if (t.starts_with("0x") || t.starts_with("0X"))
        && t[2..].starts_with(|c: char| c.is_ascii_hexdigit())
    {
        (16, &t[2..])
    } else if t.starts_with('0') {
        (8, t)
    } else {
        (10, t)
    };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    if end == 0 {
        // No number: strtoul leaves `end` at the start of the text.
        return s.is_empty().then_some(0);
    }
    if end != digits.len() {
        return None;
    }
    let value = u64::from_str_radix(&digits[..end], radix).unwrap_or(u64::MAX);
    let value = if negative {
        value.wrapping_neg()
    } else {
        value
    };
    // unsigned long → int keeps the low 32 bits.
    let id = value as u32 as i32;
    (id >= 0).then_some(id)
}
