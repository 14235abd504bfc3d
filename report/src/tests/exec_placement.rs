//! PROCEXEC places the program and its run-time linker, as
//! libpmcstat_process.c `pmcstat_process_elf_exec` does: hwpmc logs no
//! MAP_IN for what exec maps.

use object::{Object, ObjectSegment};
use pmc::log::{LogEvent, LogRecord};

use crate::Symbolizer;

#[inline(never)]
fn exec_placement_target() -> u64 {
    std::hint::black_box(13)
}

/// `(start, path)` of the first mapping of file offset 0 whose path
/// `select` accepts, from `/proc/self/maps`.
fn mapped_at_offset_zero(select: impl Fn(&str) -> bool) -> (u64, String) {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    maps.lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let path = *f.get(5)?;
            if f.get(2) != Some(&"00000000") || !select(path) {
                return None;
            }
            let lo = u64::from_str_radix(f[0].split('-').next()?, 16).ok()?;
            Some((lo, path.to_string()))
        })
        .unwrap()
}

/// AT_BASE of this process, from `/proc/self/auxv`.
fn at_base() -> u64 {
    let auxv = std::fs::read("/proc/self/auxv").unwrap();
    auxv.chunks_exact(16)
        .find_map(|p| {
            let key = u64::from_ne_bytes(p[..8].try_into().unwrap());
            (key == 7).then(|| u64::from_ne_bytes(p[8..].try_into().unwrap()))
        })
        .unwrap_or(0)
}

fn log(version: u32, base: u64, dynaddr: u64, pcs: Vec<u64>) -> Vec<LogEvent> {
    let exe = std::env::current_exe().unwrap().display().to_string();
    [
        LogRecord::Initialize {
            version,
            arch: 0,
            tsc_freq: 0,
            time_sec: 0,
            time_nsec: 0,
            cpuid: String::new(),
            marked: false,
        },
        LogRecord::ProcExec {
            pid: 7,
            pmcid: 3,
            entry: base,
            dynaddr,
            path: exe,
        },
        LogRecord::Callchain {
            pid: 7,
            tid: 8,
            pmcid: 3,
            cpu: 0,
            userspace: true,
            pcs,
        },
    ]
    .into_iter()
    .map(LogEvent::from)
    .collect()
}

#[test]
fn procexec_places_the_program_and_its_run_time_linker() {
    let exe = std::env::current_exe().unwrap().display().to_string();
    let data = std::fs::read(&exe).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let lowest_vaddr = file.segments().map(|s| s.address()).min().unwrap();
    // The load bias: where file offset 0 is, less its link address.
    let (exe_start, _) = mapped_at_offset_zero(|p| p == exe);
    let bias = exe_start - (lowest_vaddr & !0xfff);
    let (rtld_start, rtld) = mapped_at_offset_zero(|p| p.contains("/ld-"));
    let rtld_data = std::fs::read(&rtld).unwrap();
    let rtld_entry = object::File::parse(&*rtld_data).unwrap().entry();
    let base = at_base();
    assert_eq!(base, rtld_start, "AT_BASE is where ld.so's offset 0 is");
    let program_pc = exec_placement_target as *const () as usize as u64;
    let rtld_pc = base + rtld_entry;
    // (log, the PROCEXEC addresses, whether the program is placed right):
    // FreeBSD 14's pl_base and pl_dyn; 12-13's one pl_start (the run-time
    // linker's entry point), with the program at its link address.
    let cases = [
        ("FreeBSD 14", pmc::log::PMC_VERSION, base, bias, true),
        (
            "FreeBSD 12-13",
            pmc::log::PMC_VERSION_9,
            rtld_pc,
            0,
            bias == 0,
        ),
    ];
    for (what, version, address, dynaddr, program_placed) in cases {
        let events = log(version, address, dynaddr, vec![program_pc, rtld_pc]);
        let mut s = Symbolizer::new(&events);
        let program = s.resolve(7, program_pc);
        if program_placed {
            assert!(
                program
                    .frames
                    .iter()
                    .any(|f| f.function.ends_with("exec_placement_target")),
                "{what}: {program:?}"
            );
        }
        let linker = s.resolve(7, rtld_pc);
        let mapping = linker.mapping.as_ref().expect(what);
        assert_eq!(mapping.path, rtld, "{what}");
        assert_eq!(linker.object_address, Some(rtld_entry), "{what}");
    }
}
