//! `pmccontrol`: FreeBSD pmccontrol(8) on Linux perf_event.
//!
//! ```text
//! pmccontrol -L
//! pmccontrol -l
//! pmccontrol -s
//! pmccontrol [-e pmc | -d pmc | -c cpu] ...
//! pmccontrol --holders [--json]      (ours)
//! pmccontrol --limits [--json]       (ours)
//! pmccontrol -L --json               (ours)
//! ```
//!
//! Options are read as FreeBSD's `usr.sbin/pmccontrol/pmccontrol.c` reads
//! them (getopt `:c:d:e:lLs`, bundled flags, option arguments attached or
//! separate, parsing stopping at `--` or the first operand); output and
//! exit statuses (sysexits) are its own:
//!
//! - `-L` is pmccontrol.c's `pmcc_do_list_events`. On amd64 and i386 that
//!   is `pmc_pmu_print_counters(NULL)`: a tab and each pmu-events name,
//!   one per line — here the core PMU's sysfs events (`cpu/cycles/`) and
//!   the CPU model's table names, the list our libpmc's `pmc_pmu_*`
//!   functions use ([`pmc_tools::events::pmu_listing`]). Where there is no
//!   core PMU (`pmc_pmu_enabled()` false; FreeBSD's amd64 pmccontrol then
//!   prints nothing at all) and on other architectures, it is pmccontrol.c's
//!   other listing: each class of `pmc_cpuinfo` by libpmc's name
//!   (`pmc_name_of_class`: `SOFT`, `TSC`, `IAP`, `K8`, `ARMV8`, `UCP`),
//!   then a tab and each of its event names, one per line, SOFT first (its
//!   class index is 0 in hwpmc). Linux's classes are reported as the
//!   FreeBSD class libpmc gives them ([`pmc::Class::libpmc_class`]):
//!   software events, tracepoints and probes are SOFT (only the kernel's
//!   software events are listed: tracepoints and probes are named by the
//!   user), the `msr` PMU is TSC, the core PMU is IAP/K8 (its generic and
//!   cache events; `pmcstat -L` lists raw and native names) or, on arm64,
//!   ARMV8 with libpmc's own table for the CPU type (`cortex_a53_event_table`
//!   …: its aliases, then `EVENT_00H` … `EVENT_3FFH`, each of which
//!   `pmc_allocate` takes), other PMUs UCP (no names). A class whose names
//!   cannot be read ends the run with EX_OSERR, as FreeBSD's does.
//! - `-l` prints `N TYPE CPUs present, with M PMCs per CPU`, then for each
//!   online CPU (offline ones are skipped, as hwpmc's ENXIO) `#CPU c:`,
//!   the column header and one row per hardware PMC (on arm64 the PMU's
//!   event counters, PMCR_EL0.N, as hwpmc_arm64.c counts them). Linux shows no
//!   process another's counters and perf_event keeps no per-row
//!   allocation, so every row is the row of a free counter: no name,
//!   the core PMU's class, `ENABLED`, `FREE`. A machine without a hardware
//!   PMU (M = 0) has no rows.
//! - `-s` prints FreeBSD's eight driver statistics with FreeBSD's labels
//!   and format. Their values are what libpmc's `pmc_get_driver_stats`
//!   gives the calling process: "interrupts processed" and "sampling
//!   stalls due to space shortages" count the samples and losses of the
//!   caller's own log, which pmccontrol never has, and Linux keeps no
//!   kernel-wide count of PMC interrupts, pmc system calls, buffer
//!   requests or log sweeps. **Every value is therefore 0 here: a
//!   placeholder in FreeBSD's format, not a measurement.** `--limits`
//!   shows what Linux does expose.
//! - `-e pmc` / `-d pmc` (a row number or `*`), each for the CPU of the
//!   last `-c cpu` (a number or `*`, all CPUs by default): rows are
//!   checked as FreeBSD checks them (EX_CONFIG without hardware PMCs,
//!   EX_DATAERR for a CPU or row too large), then the first operation
//!   fails with EOPNOTSUPP and EX_OSERR: Linux has no administrative
//!   state per counter.
//!
//! Our extensions, long options only: `--holders` lists the processes
//! holding perf_event descriptors (what `-l` showed before it followed
//! FreeBSD), `--limits` the perf_event sysctls (what `-s` showed), and
//! `--json` gives `-L`, `--holders` and `--limits` as JSON.
//!
//! Errors are FreeBSD's lines on stderr (err(3)'s `pmccontrol: what:
//! strerror`), each followed by a line saying why here and what to do;
//! two commands, which FreeBSD refuses without a word, get a line too.
//!
//! Exit statuses (sysexits.h): 0; 64 EX_USAGE (no command, two commands,
//! an unknown option, a missing argument, `-c` without `-e`/`-d`); 65
//! EX_DATAERR (a CPU or PMC id that is not a number, or too large); 69
//! EX_UNAVAILABLE (the library cannot describe this machine); 71 EX_OSERR
//! (a listing or an enable/disable failed); 74 EX_IOERR (stdout cannot be
//! written); 78 EX_CONFIG (`-e`/`-d` without hardware PMCs). A closed
//! output pipe ends the run quietly with 0.

use std::io::{self, BufWriter, StdoutLock, Write};
use std::process::ExitCode;

// Beside the binary, not in src/bin/ (where every file is a binary).
#[path = "pmccontrol/parse.rs"]
mod parse;
use parse::parse;
#[cfg(test)]
use parse::{Parsed, c_id};

const TOOL: &str = "pmccontrol";

// sysexits.h, the statuses pmccontrol.c uses.
const EX_USAGE: u8 = 64;
const EX_DATAERR: u8 = 65;
const EX_UNAVAILABLE: u8 = 69;
const EX_OSERR: u8 = 71;
const EX_IOERR: u8 = 74;
const EX_CONFIG: u8 = 78;

/// pmccontrol.c's `usage_message`.
const USAGE: &str = "Usage:
       pmccontrol -L
       pmccontrol -l
       pmccontrol -s
       pmccontrol [-e pmc | -d pmc | -c cpu] ...";

const EXTENSIONS: &str = "Linux only (see pmccontrol(8)):
       pmccontrol --holders [--json]   processes holding perf_event descriptors
       pmccontrol --limits [--json]    the perf_event sysctls
       pmccontrol -L --json            -L as JSON";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Command {
    Usage,
    ListEvents,
    ListState,
    EnableDisable,
    Statistics,
    Holders,
    Limits,
}

/// One `-e`/`-d`: `None` is `*`.
struct Op {
    cpu: Option<i32>,
    pmc: Option<i32>,
    enable: bool,
}

/// How a run ends early: a status whose message is printed, or a failed
/// write to stdout.
enum Stop {
    Status(u8),
    Io(io::Error),
}

impl From<io::Error> for Stop {
    fn from(e: io::Error) -> Stop {
        Stop::Io(e)
    }
}

type Run = Result<(), Stop>;
type Out<'a> = BufWriter<StdoutLock<'a>>;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mut out = BufWriter::new(io::stdout().lock());
    let result = run(&args, &mut out).and_then(|()| out.flush().map_err(Stop::Io));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Stop::Status(code)) => ExitCode::from(code),
        // The reader has what it wanted (`pmccontrol -L | head -1`).
        Err(Stop::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(Stop::Io(e)) => {
            eprintln!("{TOOL}: cannot write to stdout: {e}");
            ExitCode::from(EX_IOERR)
        }
    }
}

/// errx(3): `pmccontrol: message`, then the status.
fn errx(code: u8, message: &str) -> Stop {
    eprintln!("{TOOL}: {message}");
    Stop::Status(code)
}

/// err(3): `pmccontrol: message: strerror(errno)`, then a line with the
/// library's own account of what failed and what to do.
fn err(code: u8, message: &str, e: &pmc::Error) -> Stop {
    eprintln!("{TOOL}: {message}: {}", strerror(e.errno().raw()));
    eprintln!("{TOOL}: {}", e.to_string().replace('\n', " "));
    Stop::Status(code)
}

fn strerror(errno: i32) -> &'static str {
    nix::errno::Errno::from_raw(errno).desc()
}

fn run(args: &[String], out: &mut Out<'_>) -> Run {
    let parsed = parse(args, out, &mut io::stderr())?;
    let Some(p) = parsed else {
        return Ok(());
    };
    if p.command == Command::Usage {
        return Err(errx(EX_USAGE, USAGE));
    }
    if p.conflict {
        // pmccontrol.c exits with EX_USAGE and says nothing; we say why.
        return Err(errx(
            EX_USAGE,
            "-L, -l, -s, -e/-d/-c, --holders and --limits are exclusive: give one of them",
        ));
    }
    if p.json
        && !matches!(
            p.command,
            Command::ListEvents | Command::Holders | Command::Limits
        )
    {
        return Err(errx(
            EX_USAGE,
            "--json applies to -L, --holders and --limits; -l, -s, -e, -d and -c print FreeBSD's text",
        ));
    }
    let info = pmc::cpuinfo().map_err(|e| {
        err(
            EX_UNAVAILABLE,
            "Initialization of the pmc(3) library failed",
            &e,
        )
    })?;
    match p.command {
        Command::ListEvents => list_events(&info, p.json, out),
        Command::ListState => list_state(&info, out),
        Command::Statistics => statistics(out),
        Command::EnableDisable => {
            if p.ops.is_empty() {
                return Err(errx(EX_USAGE, "No PMCs specified to enable or disable"));
            }
            enable_disable(&p.ops)
        }
        Command::Holders => holders(p.json, out),
        Command::Limits => limits(p.json, out),
        Command::Usage => unreachable!("handled above"),
    }
}

/// `-L`: pmccontrol.c `pmcc_do_list_events`.
fn list_events(info: &pmc::CpuInfo, json: bool, out: &mut Out<'_>) -> Run {
    let classes = pmc_tools::events::libpmc_classes(info);
    if json {
        let v: Vec<_> = classes
            .iter()
            .map(|(class, names)| {
                serde_json::json!({
                    "class": class.name(),
                    "events": names.as_ref().ok(),
                    "unavailable": names.as_ref().err().map(|e| e.to_string()),
                })
            })
            .collect();
        let doc = serde_json::json!({ "cputype": info.cputype, "classes": v });
        writeln!(out, "{doc}")?;
        return Ok(());
    }
    // amd64/i386: pmc_pmu_print_counters(NULL) where a core PMU gives
    // libpmc a pmu-events list.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if let Some(text) = pmc_tools::events::pmu_listing(
        std::path::Path::new(pmc_linux::pmu::SYSFS_ROOT),
        pmc_linux::pmu_events::EventTable::host().as_deref(),
    ) {
        out.write_all(text.as_bytes())?;
        return Ok(());
    }
    for (class, names) in &classes {
        // printf("%s\n", pmc_name_of_class(c))
        writeln!(out, "{}", class.name())?;
        match names {
            // printf("\t%s\n", eventnamelist[j])
            Ok(names) => {
                for n in names {
                    writeln!(out, "\t{n}")?;
                }
            }
            Err(e) => {
                out.flush()?;
                return Err(err(
                    EX_OSERR,
                    &format!(
                        "ERROR: Cannot find information for event class \"{}\"",
                        class.name()
                    ),
                    e,
                ));
            }
        }
    }
    Ok(())
}

/// `-l`: pmccontrol.c `pmcc_do_list_state`.
fn list_state(info: &pmc::CpuInfo, out: &mut Out<'_>) -> Run {
    let cputype = pmc::global::this_machine().cputype;
    // printf("%d %s CPUs present, with %d PMCs per CPU\n", …): printf
    // prints a NULL name as "(null)".
    writeln!(
        out,
        "{} {} CPUs present, with {} PMCs per CPU",
        info.ncpu,
        pmc::log::cpu::cputype_name(cputype).unwrap_or("(null)"),
        info.npmc
    )?;
    // A free row carries the class of the hardware it describes: the core PMU's.
    let core = pmc::Class::Hardware.libpmc_class(&info.cputype).name();
    let mut shown = 0;
    for cpu in 0..info.ncpu {
        if let Err(e) = pmc::pmcinfo(cpu) {
            if e.errno() == nix::errno::Errno::ENXIO as i32 {
                continue;
            }
            out.flush()?;
            return Err(err(
                EX_OSERR,
                &format!("Unable to get PMC status for CPU {cpu}"),
                &e,
            ));
        }
        writeln!(out, "#CPU {shown}:")?;
        shown += 1;
        writeln!(out, "#N  NAME             CLASS  STATE    ROW-DISP")?;
        // pmc_npmc() failing is -1: no rows.
        let npmc = pmc::npmc(cpu).unwrap_or(0);
        for n in 0..npmc {
            // printf(" %-2d %-16s %-6s %-8s %-10s", n, name, class,
            // "ENABLED", disposition), then "\n": pmccontrol owns no PMC.
            writeln!(
                out,
                " {n:<2} {:<16} {core:<6} {:<8} {:<10}",
                "", "ENABLED", "FREE"
            )?;
        }
    }
    Ok(())
}

/// `-s`: pmccontrol.c `pmcc_show_statistics`, over what libpmc's
/// `pmc_get_driver_stats` gives this process (see the top of this file:
/// every value is 0 here).
fn statistics(out: &mut Out<'_>) -> Run {
    let (samples, lost) = pmc::global::log::stats();
    // struct pmc_driverstats holds unsigned ints, printed with %d.
    let int = |v: u64| u32::try_from(v).unwrap_or(u32::MAX) as i32;
    let rows = [
        ("interrupts processed:", int(samples)),
        ("non-PMC interrupts:", 0),
        ("sampling stalls due to space shortages:", int(lost)),
        ("system calls:", 0),
        ("system calls with errors:", 0),
        ("buffer requests:", 0),
        ("buffer requests failed:", 0),
        ("sampling log sweeps:", 0),
    ];
    for (label, value) in rows {
        // printf("%-40s %d\n", N, V)
        writeln!(out, "{label:<40} {value}")?;
    }
    Ok(())
}

/// `-e`/`-d`/`-c`: pmccontrol.c `pmcc_do_enable_disable`.
fn enable_disable(ops: &[Op]) -> Run {
    let ncpu =
        pmc::ncpu().map_err(|e| err(EX_OSERR, "Unable to determine the number of cpus", &e))?;
    let mut npmc = 0;
    for c in 0..ncpu {
        let n = pmc::npmc(c).map_err(|e| {
            err(
                EX_OSERR,
                &format!("Unable to determine the number of PMCs in CPU {c}"),
                &e,
            )
        })?;
        npmc = npmc.max(n);
    }
    if npmc == 0 {
        return Err(errx(EX_CONFIG, "No PMCs found"));
    }
    // map[cpu][row]: the last operation asked of each row.
    let mut map = vec![vec![None::<bool>; npmc as usize]; ncpu as usize];
    for op in ops {
        if let Some(cpu) = op.cpu
            && cpu as u32 >= ncpu
        {
            return Err(errx(EX_DATAERR, &format!("CPU id too large: \"{cpu}\"")));
        }
        if let Some(pmc) = op.pmc
            && pmc as u32 >= npmc
        {
            return Err(errx(EX_DATAERR, &format!("PMC id too large: \"{pmc}\"")));
        }
        let cpus = op.cpu.map_or(0..ncpu, |c| c as u32..c as u32 + 1);
        let rows = op.pmc.map_or(0..npmc, |r| r as u32..r as u32 + 1);
        for c in cpus {
            for r in rows.clone() {
                map[c as usize][r as usize] = Some(op.enable);
            }
        }
    }
    for (cpu, rows) in map.iter().enumerate() {
        for (row, op) in rows.iter().enumerate() {
            let Some(enable) = *op else { continue };
            let e = pmc::Error::NotSupported {
                what: format!(
                    "{} of PMC {row} on CPU {cpu}",
                    if enable { "enabling" } else { "disabling" }
                ),
                why: "Linux has no administrative state per counter: perf_event lends counters to \
                      events as it schedules them; restrict who may count with the sysctl \
                      kernel.perf_event_paranoid, and free the counter the NMI watchdog holds \
                      with kernel.nmi_watchdog=0"
                    .into(),
                source: None,
            };
            let verb = if enable { "Enable" } else { "Disable" };
            return Err(err(
                EX_OSERR,
                &format!("{verb} of PMC {row} on CPU {cpu} failed"),
                &e,
            ));
        }
    }
    Ok(())
}

/// `--holders` (ours): the processes holding perf_event descriptors.
fn holders(json: bool, out: &mut Out<'_>) -> Run {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let users = pmc_linux::system::perf_users();
        if json {
            writeln!(out, "{}", serde_json::json!({ "perf_users": users }))?;
            return Ok(());
        }
        writeln!(
            out,
            "# processes holding perf_event descriptors (settings are private to each process)"
        )?;
        writeln!(out, "{:>8}  {:>7}  command", "pid", "events")?;
        for u in &users {
            writeln!(out, "{:>8}  {:>7}  {}", u.pid, u.events, u.command)?;
        }
        if users.is_empty() {
            writeln!(out, "# none visible to this user")?;
        }
        Ok(())
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        let _ = (json, out);
        Err(errx(
            EX_UNAVAILABLE,
            "--holders: only Linux shows which processes hold perf_event descriptors",
        ))
    }
}

/// `--limits` (ours): the perf_event limits and settings Linux exposes.
fn limits(json: bool, out: &mut Out<'_>) -> Run {
    let report = pmc::probe::Report::detect();
    let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    let rows: Vec<(&str, String)> = vec![
        (
            "perf_event_paranoid",
            opt(report.environment.paranoid.map(|v| v.to_string())),
        ),
        (
            "perf_event_max_sample_rate",
            opt(report.max_sample_rate.map(|v| v.to_string())),
        ),
        (
            "perf_event_mlock_kb",
            opt(report.mlock_kb.map(|v| v.to_string())),
        ),
        (
            "perf_event_max_stack",
            opt(report.max_stack.map(|v| v.to_string())),
        ),
        (
            "nmi_watchdog",
            opt(report.nmi_watchdog.map(|v| v.to_string())),
        ),
    ];
    if json {
        let map: serde_json::Map<String, serde_json::Value> = rows
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone().into()))
            .collect();
        writeln!(out, "{}", serde_json::Value::Object(map))?;
        return Ok(());
    }
    for (k, v) in rows {
        writeln!(out, "{k:<30} {v}")?;
    }
    Ok(())
}

// Beside the binary, not in src/bin/ (where every file is a binary).
#[cfg(test)]
#[path = "pmccontrol/argv_properties.rs"]
mod argv_properties;

#[cfg(test)]
mod tests {
    use super::{Stop, c_id, parse};

    /// Whether the getopt-style parser accepts `args` (it may print
    /// `--help`'s usage or the version, as the real run does).
    fn accepts(args: &[&str]) -> bool {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let stdout = std::io::stdout();
        let mut out = std::io::BufWriter::new(stdout.lock());
        match parse(&args, &mut out, &mut std::io::sink()) {
            Ok(_) => true,
            Err(Stop::Status(_)) => false,
            Err(Stop::Io(e)) => panic!("stdout: {e}"),
        }
    }

    /// The man page and completions come from `pmc_tools::cli::pmccontrol`:
    /// the parser accepts exactly the options it defines.
    #[test]
    fn the_parser_accepts_exactly_the_defined_options() {
        let definition = pmc_tools::cli::pmccontrol();
        let mut shorts = Vec::new();
        for arg in definition.get_arguments() {
            let value = arg.get_value_names().is_some();
            if let Some(c) = arg.get_short() {
                shorts.push(c);
                let flag = format!("-{c}");
                let args: &[&str] = if value { &[&flag, "0"] } else { &[&flag] };
                assert!(accepts(args), "the parser refuses {args:?}");
            }
            if let Some(long) = arg.get_long() {
                assert!(
                    !value,
                    "--{long}: the parser takes no long option with a value"
                );
                assert!(
                    accepts(&[&format!("--{long}")]),
                    "the parser refuses --{long}"
                );
            }
        }
        for c in ('a'..='z').chain('A'..='Z').filter(|c| !shorts.contains(c)) {
            assert!(
                !accepts(&[&format!("-{c}")]),
                "-{c} is accepted but not defined"
            );
        }
        for long in ["list", "cpu", "enable", "verbose", "holder"] {
            let defined = definition
                .get_arguments()
                .any(|a| a.get_long() == Some(long));
            assert_eq!(accepts(&[&format!("--{long}")]), defined, "--{long}");
        }
    }

    #[test]
    fn ids_are_read_as_strtoul_reads_them() {
        // strtoul(3) with base 0: decimal, 0x hex, leading-0 octal, a sign,
        // leading space; the whole text must be consumed.
        assert_eq!(c_id("3"), Some(3));
        assert_eq!(c_id("0x1f"), Some(31));
        assert_eq!(c_id("010"), Some(8));
        assert_eq!(c_id(" +2"), Some(2));
        assert_eq!(c_id("-0"), Some(0));
        assert_eq!(c_id(""), Some(0));
        assert_eq!(c_id("0x"), None);
        assert_eq!(c_id("08"), None);
        assert_eq!(c_id("1a"), None);
        assert_eq!(c_id(" "), None);
        // Negative once stored in an int.
        assert_eq!(c_id("-1"), None);
        assert_eq!(c_id("2147483648"), None);
        assert_eq!(c_id("99999999999999999999999"), None);
        assert_eq!(c_id("4294967296"), Some(0));
    }
}
