//! The symbolizer's reading of a log's mappings, on objects that need no
//! ELF file of their own: forks, the vDSO, relative paths, the kernel's
//! mappings against a process's, and what a resolved pc says of itself.

use std::sync::Arc;

use pmc::log::LogRecord;

use super::ev;
use crate::*;

fn map_in(pid: u32, start: u64, path: &str) -> pmc::log::LogEvent {
    ev(LogRecord::MapIn {
        pid,
        start,
        path: path.into(),
    })
}

fn initialize(time_sec: u64) -> pmc::log::LogEvent {
    ev(LogRecord::Initialize {
        version: 0x0903_0000,
        arch: 0,
        tsc_freq: 0,
        time_sec,
        time_nsec: 0,
        cpuid: String::new(),
        marked: false,
    })
}

fn resolved(frames: Vec<Frame>, mapping: bool, symbol_start: Option<u64>) -> Resolved {
    Resolved {
        frames,
        mapping: mapping.then(|| {
            Arc::new(Mapping {
                memory_start: 0,
                memory_limit: 1,
                file_offset: 0,
                path: "/x".into(),
                build_id: None,
                text_range: None,
            })
        }),
        object_address: None,
        symbol_start,
        symbol_end: symbol_start.map(|s| s + 1),
    }
}

fn frame(function: &str, file: Option<&str>, line: Option<u32>) -> Frame {
    Frame {
        function: function.into(),
        file: file.map(str::to_string),
        line,
    }
}

#[test]
fn a_pc_is_named_by_a_symbol_or_by_dwarf_and_an_unnamed_kernel_pc_is_one_frame() {
    let kernel = || frame(KERNEL_FRAME, None, None);
    assert!(resolved(vec![kernel()], false, None).is_unnamed_kernel());
    // Each condition alone fails it.
    assert!(!resolved(vec![kernel()], true, None).is_unnamed_kernel());
    assert!(!resolved(vec![kernel()], false, Some(1)).is_unnamed_kernel());
    assert!(!resolved(vec![kernel(), kernel()], false, None).is_unnamed_kernel());
    assert!(!resolved(vec![frame("f", None, None)], false, None).is_unnamed_kernel());

    assert!(!resolved(vec![frame("prog+0x10", None, None)], true, None).is_named());
    assert!(!resolved(vec![kernel()], false, None).is_named());
    assert!(resolved(vec![frame("f", None, None)], true, Some(0x10)).is_named());
    assert!(resolved(vec![frame("f", Some("f.c"), None)], true, None).is_named());
    assert!(resolved(vec![frame("f", None, Some(3))], true, None).is_named());
    // Any frame's file:line will do, not only the first's.
    assert!(
        resolved(
            vec![frame("g", None, None), frame("f", Some("f.c"), Some(3))],
            true,
            None
        )
        .is_named()
    );
}

#[test]
fn a_forked_child_has_its_parents_mappings() {
    let events = vec![
        map_in(1001, 0x40_0000, "/nonexistent/libgone.so"),
        ev(LogRecord::ProcFork {
            oldpid: 1001,
            newpid: 1002,
        }),
    ];
    let mut s = Symbolizer::new(&events);
    assert_eq!(s.name(1002, 0x40_1234), "libgone.so+0x1234");
    assert_eq!(s.name(1003, 0x40_1234), "0x401234");
    // A missing object is not a refusal: nothing said.
    assert_eq!(s.debug_notes(), &[] as &[String]);
}

#[test]
fn map_ins_of_relative_paths_are_nobodys() {
    let events = vec![map_in(1011, 0x40_0000, "nonexistent/libgone.so")];
    let mut s = Symbolizer::new(&events);
    assert_eq!(s.name(1011, 0x40_1234), "0x401234");
}

/// The vDSO of a log of another boot is another kernel's: `[vdso]+0xoff`;
/// of this boot, this process's own image names it.
#[test]
fn the_vdso_is_named_from_this_process_only_for_a_log_of_this_boot() {
    let Some(image) = pmc_unwind::own_vdso_image() else {
        println!("skipped: this process has no vDSO");
        return;
    };
    let file = object::File::parse(&*image).unwrap();
    let Some(f) = function_symbols(&file).into_iter().next() else {
        println!("skipped: this vDSO has no function symbols");
        return;
    };
    let start = 0x7fff_0000_0000;
    // The vDSO's one PT_LOAD is linked at 0.
    let pc = start + f.start;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let vdso = pmc_unwind::VDSO_PATH;
    let this_boot = vec![initialize(now), map_in(1021, start, vdso)];
    assert_eq!(Symbolizer::new(&this_boot).name(1021, pc), f.name);
    // Started at the boot's own second: this boot.
    let btime: u64 = std::fs::read_to_string("/proc/stat")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("btime "))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let at_boot = vec![initialize(btime), map_in(1021, start, vdso)];
    assert_eq!(Symbolizer::new(&at_boot).name(1021, pc), f.name);
    let another_boot = vec![initialize(btime - 1), map_in(1021, start, vdso)];
    assert_eq!(
        Symbolizer::new(&another_boot).name(1021, pc),
        format!("{vdso}+{:#x}", f.start)
    );
}

/// hwpmc logs the kernel's mappings with pid -1: a pc above every mapping
/// of the process is the kernel's when a kernel mapping starts above the
/// process's; at or below it the process's own mapping holds it.
#[test]
fn a_kernel_mapping_above_the_process_ones_takes_the_pcs_above_it() {
    let events = vec![
        map_in(1031, 0x40_0000, "/nonexistent/libuser.so"),
        map_in(u32::MAX, 0x1000, "/nonexistent/kbelow.ko"),
        map_in(u32::MAX, 0x80_0000, "/nonexistent/kabove.ko"),
        map_in(1032, 0x80_0000, "/nonexistent/libsame.so"),
    ];
    let mut s = Symbolizer::new(&events);
    assert_eq!(s.name(1031, 0x40_0010), "libuser.so+0x10");
    assert_eq!(s.name(1031, 0x80_0010), "kabove.ko+0x10");
    assert_eq!(s.name(1031, 0x2000), "kbelow.ko+0x1000");
    // Same start: the process's.
    assert_eq!(s.name(1032, 0x80_0010), "libsame.so+0x10");
    // The kernel's own pcs.
    assert_eq!(s.name(u32::MAX, 0x80_0010), "kabove.ko+0x10");
}

#[test]
fn refusals_noted_while_placing_execs_survive_a_debug_root() {
    let events = vec![ev(LogRecord::ProcExec {
        pid: 1041,
        pmcid: 1,
        entry: 0,
        dynaddr: 0,
        path: "/".into(),
    })];
    let s = Symbolizer::new(&events).with_debug_root(Some("/nonexistent".into()));
    assert!(
        s.debug_notes()
            .iter()
            .any(|n| n.starts_with("/: not opened")),
        "{:?}",
        s.debug_notes()
    );
}

#[test]
fn an_unreadable_object_has_no_text_range() {
    let mut s = Symbolizer::new(&[]);
    assert_eq!(s.text_range("/nonexistent/libgone.so"), None);
}

/// `/tmp/perf-PID.map` (under the root): used when last written in or
/// after the second the log started, else an earlier process's. A line
/// longer than the reader takes (64 KiB) is skipped to its end, and the
/// next one kept.
#[test]
fn a_perf_map_names_jit_code_when_written_since_the_log_started() {
    const MAX: usize = 64 << 10;
    let root = std::env::temp_dir().join(format!("pmc-report-jit-{}", std::process::id()));
    std::fs::create_dir_all(root.join("tmp")).unwrap();
    // Skipped in three reads, the third the start of a line of its own.
    let mut long = format!("5000 10 {}", "x".repeat(2 * MAX - 8));
    long.push_str("7000 10 pmc_tail_of_a_long_line\n");
    // Skipped in two reads of exactly 64 KiB, the second ending the line.
    let mut exact = format!("8000 10 {}", "y".repeat(2 * MAX - 9));
    exact.push('\n');
    assert_eq!(exact.len(), 2 * MAX);
    let map = root.join("tmp/perf-1401.map");
    std::fs::write(
        &map,
        format!(
            "4000 10 pmc_jitted\n{long}6000 10 pmc_after_a_long_line\n{exact}9000 10 pmc_last\n"
        ),
    )
    .unwrap();
    let written = 1_700_000_000;
    std::fs::File::options()
        .write(true)
        .open(&map)
        .unwrap()
        .set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(written))
        .unwrap();
    let name = |started: u64, pc: u64| {
        Symbolizer::new(&[initialize(started)])
            .with_debug_root(Some(root.clone()))
            .name(1401, pc)
    };
    assert_eq!(name(written, 0x4008), "pmc_jitted");
    assert_eq!(name(written, 0x6008), "pmc_after_a_long_line");
    assert_eq!(name(written, 0x9008), "pmc_last");
    for skipped in [0x5008, 0x7008, 0x8008] {
        assert_eq!(name(written, skipped), format!("{skipped:#x}"));
    }
    assert_eq!(name(written + 1, 0x4008), "0x4008");
    std::fs::remove_dir_all(&root).unwrap();
}
