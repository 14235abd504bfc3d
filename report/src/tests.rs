//! Hardware-free checks of the symbolizer's MAP_IN reading and of the
//! writers' layouts against the formats' own definitions.

use pmc::log::{LogEvent, LogRecord};

use crate::*;

mod bounded;
mod build_ids;
mod debug_files;
mod elf_fixtures;
mod exec_placement;
mod symbolizer_logs;

fn ev(record: LogRecord) -> LogEvent {
    LogEvent::from(record)
}

#[inline(never)]
fn report_crate_test_target() -> u64 {
    std::hint::black_box(11)
}

/// This test binary's first executable mapping: (start, file offset).
fn own_text_mapping() -> (u64, u64) {
    let exe = std::env::current_exe().unwrap().display().to_string();
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    maps.lines()
        .filter(|l| l.ends_with(&exe))
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let range = f.next()?;
            if !f.next()?.contains('x') {
                return None;
            }
            let off = u64::from_str_radix(f.next()?, 16).ok()?;
            let lo = u64::from_str_radix(range.split('-').next()?, 16).ok()?;
            Some((lo, off))
        })
        .min()
        .unwrap()
}

fn log_with(start: u64, initialize_version: Option<u32>, pcs: Vec<u64>) -> Vec<LogEvent> {
    let exe = std::env::current_exe().unwrap().display().to_string();
    let mut events = Vec::new();
    if let Some(version) = initialize_version {
        events.push(ev(LogRecord::Initialize {
            version,
            arch: 0,
            tsc_freq: 0,
            time_sec: 0,
            time_nsec: 0,
            cpuid: String::new(),
            marked: false,
        }));
    }
    events.push(ev(LogRecord::MapIn {
        pid: 7,
        start,
        path: exe,
    }));
    events.push(ev(LogRecord::PmcAllocateDyn {
        pmcid: 3,
        event: 0,
        flags: 0,
        name: "cpu-clock".into(),
    }));
    for cpu in [0u16, 1] {
        events.push(ev(LogRecord::Callchain {
            pid: 7,
            tid: 8,
            pmcid: 3,
            cpu,
            userspace: true,
            pcs: pcs.clone(),
        }));
    }
    events
}

#[test]
fn hwpmc_map_in_start_is_the_first_executable_mappings_start() {
    // hwpmc_mod.c pmc_log_process_mappings: start_addr = entry->start of
    // the first VM_PROT_EXECUTE entry of the vnode.
    let (text_start, _) = own_text_mapping();
    let pc = report_crate_test_target as *const () as usize as u64;
    // Version 0x09xx…: not pmc's legacy writer, so hwpmc's convention.
    let events = log_with(text_start, Some(0x0903_0000), vec![pc + 1]);
    assert_eq!(MapStart::for_log(&events), MapStart::FirstExecutableMapping);
    let mut s = Symbolizer::new(&events);
    let r = s.resolve(7, pc + 1);
    assert!(
        r.frames
            .iter()
            .any(|f| f.function.ends_with("report_crate_test_target")),
        "{r:?}"
    );
    // Debug info gives the file and line of the function's body.
    let f = r.frames.last().unwrap();
    assert!(
        f.file.as_deref().is_some_and(|p| p.ends_with("tests.rs")) && f.line.is_some(),
        "{f:?}"
    );
    let m = r.mapping.as_ref().unwrap();
    assert_eq!(m.memory_start, text_start, "{m:?}");
    assert!(m.memory_limit > pc && m.memory_start <= pc, "{m:?}");
    assert_eq!(s.name(99, 0x1234), "0x1234", "unknown process: raw pc");
}

#[test]
fn legacy_pmc_logs_put_file_offset_zero_in_map_in_start() {
    let (text_start, text_offset) = own_text_mapping();
    let pc = report_crate_test_target as *const () as usize as u64;
    let events = log_with(
        text_start - text_offset,
        Some(symbols::LEGACY_PMC_LOG_VERSION),
        vec![pc],
    );
    assert_eq!(MapStart::for_log(&events), MapStart::FileOffsetZero);
    let mut s = Symbolizer::new(&events);
    assert!(s.name(7, pc).ends_with("report_crate_test_target"));
}

#[test]
fn samples_aggregate_per_cpu_with_the_events_name_and_period() {
    let (text_start, _) = own_text_mapping();
    let pc = report_crate_test_target as *const () as usize as u64;
    let events = log_with(text_start, None, vec![pc, pc + 1]);
    let mut options = ProfileOptions::default();
    options.periods.insert(3, 1000);
    let p = Profile::from_events_with(&events, &options);
    assert_eq!(
        p.events,
        vec![Event {
            pmcid: 3,
            name: "cpu-clock".into(),
            period: Some(1000)
        }]
    );
    assert_eq!(p.samples.len(), 2, "one per cpu");
    assert_eq!(p.total(0), 2);
    // The caller's pc is looked up one byte back, inside the call.
    assert_eq!(p.locations[p.stack(&p.samples[0])[1] as usize].address, pc);
    let folded = folded(&p);
    assert!(
        folded.ends_with(" 2\n") && folded.contains("report_crate_test_target;"),
        "{folded}"
    );
}

/// binutils gprof/gmon_out.h: `struct gmon_hdr { char cookie[4]; char
/// version[4]; char spare[3*4]; }`, then per record a tag byte;
/// `GMON_TAG_TIME_HIST` = 0 is followed by `struct gmon_hist_hdr { char
/// low_pc[sizeof(char*)]; char high_pc[sizeof(char*)]; char hist_size[4];
/// char prof_rate[4]; char dimen[15]; char dimen_abbrev; }` and hist_size
/// 16-bit bins.
#[test]
fn gmon_files_follow_binutils_gmon_out_h() {
    let (text_start, _) = own_text_mapping();
    let pc = report_crate_test_target as *const () as usize as u64;
    let p = Profile::from_events(&log_with(text_start, None, vec![pc]));
    let files = gmon(&p);
    assert_eq!(files.len(), 1);
    let f = &files[0];
    let exe = std::env::current_exe().unwrap();
    assert_eq!(
        f.relative_path,
        std::path::Path::new("cpu-clock").join(format!(
            "{}.gmon",
            exe.file_name().unwrap().to_string_lossy()
        ))
    );
    let b = &f.bytes;
    assert_eq!(&b[0..4], b"gmon");
    assert_eq!(u32::from_ne_bytes(b[4..8].try_into().unwrap()), 1);
    assert_eq!(&b[8..20], &[0; 12]);
    assert_eq!(b[20], 0, "GMON_TAG_TIME_HIST");
    let low = u64::from_ne_bytes(b[21..29].try_into().unwrap());
    let high = u64::from_ne_bytes(b[29..37].try_into().unwrap());
    let bins = u32::from_ne_bytes(b[37..41].try_into().unwrap()) as u64;
    assert_eq!(u32::from_ne_bytes(b[41..45].try_into().unwrap()), 1);
    assert_eq!(&b[45..52], b"samples");
    assert_eq!(b[60], b's');
    assert_eq!(b.len() as u64, 61 + 2 * bins);
    // The sample lands in the bin of the function's object address.
    let addr = p.locations[0].resolved.object_address.unwrap();
    assert!(low <= addr && addr < high);
    let bin = (addr - low) * bins / (high - low);
    let at = 61 + 2 * bin as usize;
    assert_eq!(u16::from_ne_bytes([b[at], b[at + 1]]), 2);
}

/// Top-level fields of the encoded Profile message, per
/// github.com/google/pprof proto/profile.proto: sample_type = 1, sample
/// = 2, mapping = 3, location = 4, function = 5, string_table = 6,
/// period_type = 11, period = 12, default_sample_type = 14; the string
/// table starts with "".
#[test]
fn pprof_messages_use_profile_proto_field_numbers() {
    let (text_start, _) = own_text_mapping();
    let pc = report_crate_test_target as *const () as usize as u64;
    let mut options = ProfileOptions::default();
    options.periods.insert(3, 1000);
    let p = Profile::from_events_with(&log_with(text_start, None, vec![pc, pc + 1]), &options);
    let bytes = pprof_uncompressed(&p);
    let mut i = 0;
    let varint = |i: &mut usize| {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let b = bytes[*i];
            *i += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return v;
            }
            shift += 7;
        }
    };
    let mut fields = std::collections::BTreeMap::<u64, usize>::new();
    let mut strings = Vec::new();
    let mut period = 0;
    while i < bytes.len() {
        let key = varint(&mut i);
        let (field, wire) = (key >> 3, key & 7);
        *fields.entry(field).or_default() += 1;
        match wire {
            0 => {
                let v = varint(&mut i);
                if field == 12 {
                    period = v;
                }
            }
            2 => {
                let n = varint(&mut i) as usize;
                if field == 6 {
                    strings.push(String::from_utf8(bytes[i..i + n].to_vec()).unwrap());
                }
                i += n;
            }
            w => panic!("unexpected wire type {w} for field {field}"),
        }
    }
    assert_eq!(fields[&1], 2, "samples and events types for one event");
    assert_eq!(fields[&2], 2, "one sample per cpu");
    assert_eq!(fields[&3], 1, "one mapping");
    assert_eq!(fields[&4], p.locations.len());
    assert!(fields[&5] >= 1);
    assert_eq!(strings[0], "");
    for s in [
        "cpu-clock",
        "samples",
        "cpu-clock_events",
        "pid",
        "tid",
        "cpu",
    ] {
        assert!(strings.iter().any(|x| x == s), "{s} missing: {strings:?}");
    }
    assert!(fields.contains_key(&11) && fields.contains_key(&14));
    assert_eq!(period, 1000);
}

#[test]
fn an_empty_log_gives_empty_but_valid_outputs() {
    let p = Profile::from_events(&[]);
    assert_eq!(folded(&p), "");
    assert!(callgraph(&p).is_empty());
    assert!(callgrind(&p, "test").starts_with("# callgrind format\nversion: 1\n"));
    assert!(gmon(&p).is_empty());
    let mut gz = Vec::new();
    pprof(&p, &mut gz).unwrap();
    assert_eq!(&gz[..2], &[0x1f, 0x8b], "gzip magic");
    let mut svg = Vec::new();
    flamegraph(&p, "empty", &mut svg).unwrap();
    assert!(String::from_utf8_lossy(&svg).contains("<svg"));
}

#[test]
fn unmapped_and_unreadable_objects_give_addresses_not_panics() {
    let (text_start, _) = own_text_mapping();
    let exe = std::env::current_exe().unwrap().display().to_string();
    let events = vec![
        ev(LogRecord::MapIn {
            pid: 1,
            start: 0x40_0000,
            path: "/nonexistent/libgone.so".into(),
        }),
        ev(LogRecord::MapIn {
            pid: 1,
            start: text_start,
            path: exe,
        }),
        ev(LogRecord::Callchain {
            pid: 1,
            tid: 1,
            pmcid: 1,
            cpu: 0,
            userspace: true,
            pcs: vec![0x40_1234, 0x10, u64::MAX],
        }),
    ];
    let p = Profile::from_events(&events);
    let names: Vec<&str> = p
        .stack(&p.samples[0])
        .iter()
        .map(|&l| p.locations[l as usize].function())
        .collect();
    // An unreadable object has no known extent: it keeps object+offset; a
    // pc past a readable object's text is nobody's.
    assert_eq!(
        names,
        vec!["libgone.so+0x1234", "0xf", &format!("{:#x}", u64::MAX - 1)]
    );
    assert!(p.events[0].name.starts_with("pmc 0x1"));
}

#[test]
fn pcs_outside_the_process_fall_back_to_the_kernels_map_ins() {
    // hwpmc_mod.c pmc_log_kernel_mappings logs the kernel and its modules
    // with pid -1; their pcs appear in every process's callchains.
    let (text_start, _) = own_text_mapping();
    let exe = std::env::current_exe().unwrap().display().to_string();
    let pc = report_crate_test_target as *const () as usize as u64;
    let events = vec![ev(LogRecord::MapIn {
        pid: u32::MAX,
        start: text_start,
        path: exe,
    })];
    let mut s = Symbolizer::new(&events);
    assert!(s.name(42, pc).ends_with("report_crate_test_target"));
}

/// pmcstat -z counts the names a reader sees: a pc whose inlined calls name
/// three functions takes three of the depth (FreeBSD's callchains name one
/// function per pc, so there the two counts agree).
#[test]
fn max_depth_limits_named_frames_inline_ones_included() {
    let frame = |f: &str| Frame {
        function: f.into(),
        file: None,
        line: None,
    };
    let location = |frames: Vec<Frame>| Location {
        pid: 1,
        address: 0,
        resolved: std::sync::Arc::new(Resolved {
            frames,
            mapping: None,
            object_address: None,
            symbol_start: None,
            symbol_end: None,
        }),
    };
    let profile = |max_frames| Profile {
        events: vec![Event {
            pmcid: 7,
            name: "cpu-clock".into(),
            period: None,
        }],
        // Leaf pc: `inner` inlined into `middle` inlined into `outer`.
        locations: vec![
            location(vec![frame("inner"), frame("middle"), frame("outer")]),
            location(vec![frame("main")]),
        ],
        samples: vec![Sample {
            event: 0,
            pid: 1,
            tid: 1,
            cpu: 0,
            stack: 0..2,
            count: 3,
        }],
        stack_locations: vec![0, 1],
        max_frames,
        ..Profile::default()
    };
    assert_eq!(folded(&profile(None)), "main;outer;middle;inner 3\n");
    assert_eq!(folded(&profile(Some(2))), "middle;inner 3\n");
}

/// This test binary's functions, from its own ELF file.
fn own_functions() -> (Vec<u8>, Vec<FunctionSymbol>) {
    let data = std::fs::read(std::env::current_exe().unwrap()).unwrap();
    let functions = function_symbols(&object::File::parse(&*data).unwrap());
    (data, functions)
}

/// crti's `_fini` has no size. lld places `.plt` right after `.fini`, and
/// a pc in a PLT stub (a sample at exit lands in `__cxa_finalize@plt`)
/// was once named `_fini`, with an end past the address space.
#[test]
fn an_unsized_symbol_ends_with_its_section() {
    use object::{Object as _, ObjectSection as _};
    let (data, functions) = own_functions();
    let file = object::File::parse(&*data).unwrap();
    for f in &functions {
        assert!(f.start < f.end, "{f:?}");
    }
    let fini = file.section_by_name(".fini").expect("no .fini section");
    let fini_end = fini.address() + fini.size();
    let sym = functions
        .iter()
        .find(|f| f.name == "_fini")
        .expect("no _fini symbol");
    assert!(
        sym.end <= fini_end,
        "{sym:?} ends past .fini ({fini_end:#x})"
    );
    assert!(
        function_at(&functions, fini_end).is_none_or(|f| f.name != "_fini"),
        "the byte after .fini is _fini's"
    );
}

/// Each `name@plt` is a stub that jumps through the GOT slot the dynamic
/// loader fills for `name`: the stub's `jmp *disp32(%rip)` (ff 25, after
/// an endbr64 or a bnd prefix where present) must reach the offset of
/// the JUMP_SLOT relocation naming it, as object's relocation reader
/// gives it (an independent parse of .rela.plt).
#[test]
#[cfg_attr(
    not(target_arch = "x86_64"),
    ignore = "PLT stubs are named on x86-64 only"
)]
fn plt_stubs_are_named_after_the_slot_they_jump_through() {
    use object::{Object as _, ObjectSection as _, ObjectSymbol as _, ObjectSymbolTable as _};
    let (data, functions) = own_functions();
    let file = object::File::parse(&*data).unwrap();
    assert_eq!(file.architecture(), object::Architecture::X86_64);
    let dynsym = file.dynamic_symbol_table().unwrap();
    let slots: std::collections::HashMap<String, u64> = file
        .dynamic_relocations()
        .into_iter()
        .flatten()
        .filter(|(_, r)| {
            r.flags()
                == object::RelocationFlags::Elf {
                    r_type: object::elf::R_X86_64_JUMP_SLOT,
                }
        })
        .filter_map(|(offset, r)| {
            let object::RelocationTarget::Symbol(i) = r.target() else {
                return None;
            };
            Some((
                dynsym.symbol_by_index(i).ok()?.name().ok()?.to_string(),
                offset,
            ))
        })
        .collect();
    // This test binary calls libc through the PLT (the workspace links
    // with the toolchain's defaults); none would leave nothing to check.
    assert!(
        !slots.is_empty(),
        "no JUMP_SLOT relocation in this test binary: linked without PLT slots (-Z plt=no?)"
    );
    let stubs: Vec<&FunctionSymbol> = functions
        .iter()
        .filter(|f| f.name.ends_with("@plt"))
        .collect();
    assert_eq!(stubs.len(), slots.len(), "{stubs:?} for {slots:?}");
    for stub in stubs {
        let section = file
            .sections()
            .find(|s| (s.address()..s.address() + s.size()).contains(&stub.start))
            .unwrap();
        let code = &section.data().unwrap()[(stub.start - section.address()) as usize..];
        let at = code
            .windows(2)
            .take(8)
            .position(|w| w == [0xff, 0x25])
            .unwrap_or_else(|| panic!("{stub:?}: no jmp *disp32(%rip) in {:x?}", &code[..16]));
        let disp = i32::from_le_bytes(code[at + 2..at + 6].try_into().unwrap());
        let target = (stub.start + at as u64 + 6).wrapping_add_signed(disp.into());
        let name = stub.name.strip_suffix("@plt").unwrap();
        assert_eq!(Some(&target), slots.get(name), "{stub:?}");
    }
}

const KALLSYMS: &str = "\
ffffffff81000400 T _stext
ffffffff81001000 T entry_SYSCALL_64
ffffffff81001100 t pv_native_safe_halt
ffffffff81001200 T do_syscall_64
ffffffffc0001000 t ext4_read\t[ext4]
";

/// A kernel mode sample of pid 9 through a syscall, with its user stack
/// appended (USERCALLCHAIN), and a user mode sample whose garbage frame
/// has a kernel address.
fn kernel_log() -> Vec<LogEvent> {
    let chain = |userspace, pcs: Vec<u64>| {
        ev(LogRecord::Callchain {
            pid: 9,
            tid: 9,
            pmcid: 1,
            cpu: 0,
            userspace,
            pcs,
        })
    };
    vec![
        ev(LogRecord::MapIn {
            pid: u32::MAX,
            start: 0xffffffff81000400,
            path: KERNEL_FRAME.into(),
        }),
        chain(
            false,
            vec![
                0xffffffff81001110,
                0xffffffffc0001011,
                0xffffffff81001201,
                0xffffffff81001001,
                0x40_1000,
            ],
        ),
        chain(true, vec![0x40_2000, 0xffffffff81001101]),
    ]
}

fn named_stacks(p: &Profile) -> Vec<Vec<&str>> {
    p.samples
        .iter()
        .map(|s| {
            p.stack(s)
                .iter()
                .map(|&l| p.locations[l as usize].function())
                .collect()
        })
        .collect()
}

#[test]
fn kernel_frames_are_named_from_kallsyms() {
    let options = ProfileOptions {
        kernel_symbols: Some(std::sync::Arc::new(KernelSymbols::parse(KALLSYMS))),
        ..ProfileOptions::default()
    };
    let p = Profile::from_events_with(&kernel_log(), &options);
    assert_eq!(
        named_stacks(&p),
        vec![
            vec![
                "pv_native_safe_halt",
                "ext4_read",
                "do_syscall_64",
                "entry_SYSCALL_64",
                "0x400fff"
            ],
            // The flag says user mode: its kernel-looking pc is not named.
            vec!["0x402000", "0xffffffff81001100"],
        ]
    );
    assert!(p.kernel_names_missing.is_none());
    let leaf = &p.locations[p.stack(&p.samples[0])[0] as usize];
    assert_eq!(leaf.pid, u32::MAX, "kernel locations are the kernel's");
    assert_eq!(leaf.resolved.symbol_start, Some(0xffffffff81001100));
    let module = &p.locations[p.stack(&p.samples[0])[1] as usize].resolved;
    assert_eq!(module.mapping.as_ref().unwrap().path, "[ext4]");
    let image = leaf.resolved.mapping.as_ref().unwrap();
    assert_eq!(image.path, KERNEL_FRAME);
    assert!((image.memory_start..image.memory_limit).contains(&0xffffffff81001110));
    // The writers carry the names.
    assert!(
        folded(&p).contains("entry_SYSCALL_64;do_syscall_64;ext4_read;pv_native_safe_halt 1\n")
    );
    assert!(callgraph(&p).contains("pv_native_safe_halt"));
    let cg = callgrind(&p, "t");
    assert!(
        cg.contains("ob=[kernel.kallsyms]\nfl=???\nfn=pv_native_safe_halt\n"),
        "{cg}"
    );
}

#[test]
fn without_kernel_names_the_kernel_part_is_one_frame_and_says_why() {
    let hidden = KALLSYMS
        .replace("ffffffff8100", "000000000000")
        .replace("ffffffffc000", "000000000000");
    let options = ProfileOptions {
        kernel_symbols: Some(std::sync::Arc::new(KernelSymbols::parse(&hidden))),
        ..ProfileOptions::default()
    };
    let p = Profile::from_events_with(&kernel_log(), &options);
    assert_eq!(
        named_stacks(&p),
        vec![
            vec![KERNEL_FRAME, "0x400fff"],
            vec!["0x402000", "0xffffffff81001100"],
        ]
    );
    let why = p
        .kernel_names_missing
        .as_ref()
        .expect("a reason")
        .to_string();
    assert!(
        why.starts_with("kernel frames are shown as [kernel.kallsyms]"),
        "{why}"
    );
    let f = folded(&p);
    assert!(f.contains("0x400fff;[kernel.kallsyms] 1\n"), "{f}");
    assert!(
        !f.contains("0xffffffff8100111"),
        "no bare kernel address: {f}"
    );
    // A log without kernel frames never asks.
    let user_only: Vec<LogEvent> = kernel_log().into_iter().skip(2).collect();
    assert!(
        Profile::from_events_with(&user_only, &options)
            .kernel_names_missing
            .is_none()
    );
}

#[test]
fn a_log_from_another_boot_keeps_its_kernel_frames_unnamed() {
    let mut log = kernel_log();
    log[0] = ev(LogRecord::MapIn {
        pid: u32::MAX,
        start: 0xffffffff9e000400,
        path: KERNEL_FRAME.into(),
    });
    let options = ProfileOptions {
        kernel_symbols: Some(std::sync::Arc::new(KernelSymbols::parse(KALLSYMS))),
        ..ProfileOptions::default()
    };
    let p = Profile::from_events_with(&log, &options);
    assert_eq!(named_stacks(&p)[0], vec![KERNEL_FRAME, "0x400fff"]);
    let why = p.kernel_names_missing.unwrap().to_string();
    assert!(why.contains("another kernel or boot"), "{why}");
}

/// A location in `image` (None: no mapping) of a function starting at
/// `start` (None: no symbol), for -G trees built without ELF files.
fn cg_location(image: Option<&str>, function: &str, start: Option<u64>, pc: u64) -> Location {
    let mapping = image.map(|path| {
        std::sync::Arc::new(Mapping {
            memory_start: 0,
            memory_limit: u64::MAX,
            file_offset: 0,
            path: path.into(),
            build_id: None,
            text_range: None,
        })
    });
    Location {
        pid: 1,
        address: pc,
        resolved: std::sync::Arc::new(Resolved {
            frames: vec![Frame {
                function: function.into(),
                file: None,
                line: None,
            }],
            object_address: mapping.as_ref().map(|_| pc),
            mapping,
            symbol_start: start,
            symbol_end: None,
        }),
    }
}

/// A profile of one event over `locations` with (stack, count) samples.
fn cg_profile(locations: Vec<Location>, stacks: &[(&[usize], u64)]) -> Profile {
    Profile {
        events: vec![Event {
            pmcid: 1,
            name: "cpu-clock".into(),
            period: None,
        }],
        kernel_names_missing: None,
        locations,
        samples: stacks
            .iter()
            .enumerate()
            .scan(0u32, |at, (tid, (stack, count))| {
                let first = *at;
                *at += stack.len() as u32;
                Some(Sample {
                    event: 0,
                    pid: 1,
                    tid: tid as u32,
                    cpu: 0,
                    stack: first..*at,
                    count: *count,
                })
            })
            .collect(),
        stack_locations: stacks
            .iter()
            .flat_map(|(stack, _)| stack.iter().map(|&l| l as u32))
            .collect(),
        max_frames: None,
        ..Profile::default()
    }
}

/// One `pmcstat_cgnode_print` line (pmcpl_callgraph.c): `depth` spaces,
/// `"100.0%% "` or `"%05.2f%% "`, `" [%u] "` padded with spaces to 12
/// characters, `depth` spaces again, the name, `" @ %s"` on an image change.
fn cg_line(depth: usize, percent: &str, count: u64, name: &str, image: Option<&str>) -> String {
    let count = format!(" [{count}] ");
    let pad = " ".repeat(12 - count.len());
    let at = image.map(|i| format!(" @ {i}")).unwrap_or_default();
    let indent = " ".repeat(depth);
    format!("{indent}{percent}% {count}{pad}{indent}{name}{at}\n")
}

/// pmcpl_callgraph.c: per PMC `"@ %s [%u samples]\n\n"`; each sampled
/// function, most samples first, as the recursive tree of its callers
/// (`pmcstat_cgnode_print`, children sorted by `pmcstat_cgnode_compare`),
/// each percentage of the parent's count, the image named when it changes
/// (`pmcstat_previous_filename_printed`, reset per tree), a blank line
/// after each tree.
#[test]
fn callgraph_is_pmcpl_callgraphs_tree() {
    let prog = Some("/bin/prog");
    let libc = Some("/lib/libc.so.7");
    let locations = vec![
        cg_location(prog, "leaf", Some(0x100), 0x104),     // 0
        cg_location(prog, "caller_g", Some(0x200), 0x210), // 1
        cg_location(prog, "main", Some(0x300), 0x320),     // 2
        cg_location(libc, "caller_h", Some(0x50), 0x58),   // 3
        cg_location(libc, "memcpy", Some(0x10), 0x18),     // 4
        cg_location(prog, "leaf", Some(0x100), 0x108),     // 5: same function, other pc
    ];
    let profile = cg_profile(
        locations,
        &[
            (&[0, 1, 2], 2),
            (&[5, 1, 2], 1),
            (&[0, 3, 2], 1),
            (&[4, 1], 1),
        ],
    );
    let expected = [
        "@ cpu-clock [5 samples]\n\n".to_string(),
        cg_line(0, "80.00", 4, "leaf", prog),
        cg_line(1, "75.00", 3, "caller_g", None),
        cg_line(2, "100.0", 3, "main", None),
        cg_line(1, "25.00", 1, "caller_h", libc),
        cg_line(2, "100.0", 1, "main", prog),
        "\n".into(),
        cg_line(0, "20.00", 1, "memcpy", libc),
        cg_line(1, "100.0", 1, "caller_g", prog),
        "\n".into(),
    ]
    .concat();
    assert_eq!(callgraph(&profile), expected);
}

/// pmcpl_callgraph.c `pmcpl_cg_process` follows a chain to
/// `args.pa_graphdepth` frames (pmcstat.h `DEFAULT_CALLGRAPH_DEPTH` 16,
/// `-z` otherwise), and `pmcstat_cgnode_print` prints every node, however
/// small (the 0.5 % `pmcstat_threshold` is `-T`'s only). A pc without a
/// symbol is its own node, printed `%p` of its image address.
#[test]
fn callgraph_follows_sixteen_frames_and_hides_nothing() {
    let prog = Some("/bin/prog");
    let mut locations: Vec<Location> = (0..20u64)
        .map(|i| {
            cg_location(
                prog,
                &format!("f{i}"),
                Some(0x1000 * (i + 1)),
                0x1000 * (i + 1),
            )
        })
        .collect();
    locations.push(cg_location(prog, "prog+0x9999", None, 0x9999)); // 20
    let deep: Vec<usize> = (0..20).collect();
    let profile = cg_profile(locations, &[(&deep, 999), (&[20], 1)]);
    let graph = callgraph(&profile);
    let mut expected = vec!["@ cpu-clock [1000 samples]\n\n".to_string()];
    expected.push(cg_line(0, "99.90", 999, "f0", prog));
    for depth in 1..16 {
        expected.push(cg_line(depth, "100.0", 999, &format!("f{depth}"), None));
    }
    expected.push("\n".into());
    expected.push(cg_line(0, "00.10", 1, "0x9999", prog));
    expected.push("\n".into());
    assert_eq!(graph, expected.concat());

    // -z 2: the leaf and one caller.
    let mut profile = profile;
    profile.max_frames = Some(2);
    let graph = callgraph(&profile);
    assert_eq!(
        graph,
        [
            "@ cpu-clock [1000 samples]\n\n".to_string(),
            cg_line(0, "99.90", 999, "f0", prog),
            cg_line(1, "100.0", 999, "f1", None),
            "\n".into(),
            cg_line(0, "00.10", 1, "0x9999", prog),
            "\n".into(),
        ]
        .concat()
    );
}
