//! uprobes counted exactly on this machine; kprobes skip where the kernel
//! has no kprobe PMU.

use std::path::{Path, PathBuf};

use object::{Object, ObjectSymbol};
use pmc_linux::attr::ReadFormat;
use pmc_linux::event::{OpenFlags, Target};
use pmc_linux::pmu::SYSFS_ROOT;
use pmc_linux::probe::{Probe, symbol_file_offset};

#[inline(never)]
fn uprobe_target_function(x: u64) -> u64 {
    std::hint::black_box(x.rotate_left(7))
}

/// This test binary's mangled name for `uprobe_target_function`.
fn own_symbol() -> Option<(PathBuf, String)> {
    let exe = std::env::current_exe().ok()?;
    let data = std::fs::read(&exe).ok()?;
    let file = object::File::parse(&*data).ok()?;
    let name = file
        .symbols()
        .filter_map(|s| s.name().ok().map(str::to_string))
        .find(|n| n.contains("uprobe_target_function"))?;
    Some((exe, name))
}

fn count_calls(probe: &Probe, calls: impl Fn(u64)) -> Vec<(u64, u64)> {
    let ev = probe
        .open(Target::CALLER, None, OpenFlags::empty())
        .expect("open uprobe");
    let mut out = Vec::new();
    for n in [0u64, 1, 7, 1000] {
        ev.reset().unwrap();
        ev.enable().unwrap();
        for i in 0..n {
            calls(i);
        }
        ev.disable().unwrap();
        out.push((n, ev.read().unwrap().value));
    }
    out
}

#[test]
fn uprobes_count_exactly_the_calls() {
    let root = Path::new(SYSFS_ROOT);
    if !root.join("uprobe").exists() {
        eprintln!("skipped: no uprobe PMU on this kernel");
        return;
    }
    let configure = |a: pmc_linux::attr::Attr| {
        a.disabled(true)
            .exclude_kernel(false)
            .read_format(ReadFormat::TOTAL_TIME_ENABLED | ReadFormat::TOTAL_TIME_RUNNING)
    };
    // A function of this binary, found by its (mangled) symbol.
    let (exe, sym) = own_symbol().expect("the test binary keeps its symbols");
    let off = symbol_file_offset(&exe, &sym).unwrap();
    let probe = match Probe::uprobe(root, &exe, off, false) {
        Ok(p) => p.configure(configure),
        Err(e) => panic!("{e}"),
    };
    if let Err(e) = probe.open(Target::CALLER, None, OpenFlags::empty()) {
        if matches!(e.errno(), libc::EACCES | libc::EPERM) {
            eprintln!("skipped: uprobes need CAP_PERFMON/CAP_SYS_ADMIN here: {e}");
            return;
        }
        panic!("{e}");
    }
    for (n, counted) in count_calls(&probe, |i| {
        std::hint::black_box(uprobe_target_function(i));
    }) {
        assert_eq!(counted, n, "{n} calls of {sym}");
    }
    // A libc function, and its return probe.
    let libc = pmc_linux::probe::mapped_library("/libc.so").expect("libc is mapped");
    let off = symbol_file_offset(&libc, "getpid").unwrap();
    for ret in [false, true] {
        let probe = Probe::uprobe(root, &libc, off, ret)
            .unwrap()
            .configure(configure);
        for (n, counted) in count_calls(&probe, |_| {
            std::hint::black_box(std::process::id());
        }) {
            assert_eq!(counted, n, "{n} getpid calls (ret={ret})");
        }
    }
}

#[test]
fn symbol_lookup_errors_name_the_closest_symbols() {
    let Some((exe, _)) = own_symbol() else {
        panic!("the test binary keeps its symbols");
    };
    let e = symbol_file_offset(&exe, "no_such_symbol_anywhere_xyz").unwrap_err();
    assert_eq!(e.errno(), libc::ENOENT, "{e}");
    let e = symbol_file_offset(Path::new("/nonexistent/bin"), "main").unwrap_err();
    assert!(e.to_string().contains("/nonexistent/bin"), "{e}");
}

#[test]
fn kprobes_need_a_kprobe_pmu() {
    let root = Path::new(SYSFS_ROOT);
    match Probe::kprobe(root, "do_sys_openat2", 0, false) {
        Err(e) if !root.join("kprobe").exists() => {
            assert!(e.to_string().contains("kprobe"), "{e}");
            eprintln!("skipped counting: no kprobe PMU on this kernel ({e})");
        }
        Err(e) => panic!("{e}"),
        Ok(p) => {
            let ev =
                p.configure(|a| a.disabled(true))
                    .open(Target::CALLER, None, OpenFlags::empty());
            match ev {
                Ok(ev) => {
                    ev.enable().unwrap();
                    let _ = std::fs::File::open("/proc/self/stat");
                    ev.disable().unwrap();
                    assert!(ev.read().unwrap().value >= 1);
                }
                Err(e) if matches!(e.errno(), libc::EACCES | libc::EPERM) => {
                    eprintln!("skipped: kprobes need privileges: {e}");
                }
                Err(e) => panic!("{e}"),
            }
        }
    }
}

#[test]
fn fixture_retprobe_bit_comes_from_the_format_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs-amd");
    let p = Probe::uprobe(&root, Path::new("/bin/true"), 0x40, true).unwrap();
    assert_eq!(p.attr().type_id(), 8);
    assert_eq!(p.attr().get_config(), 1);
    assert_eq!(p.attr().get_config2(), 0x40);
    let k = Probe::kprobe(&root, "vfs_read", 4, false).unwrap();
    assert_eq!((k.attr().type_id(), k.attr().get_config()), (7, 0));
    assert_eq!(k.target().unwrap().to_str().unwrap(), "vfs_read");
    let a = Probe::kprobe_at(&root, 0xffff_ffff_8100_0000, true).unwrap();
    assert_eq!(
        (a.attr().get_config(), a.attr().get_config2()),
        (1, 0xffff_ffff_8100_0000)
    );
    assert!(a.target().is_none());
}
