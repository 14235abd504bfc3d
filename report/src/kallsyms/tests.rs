//! kallsyms listings as the kernel prints them (`kernel/kallsyms.c`
//! `s_show`: `%px %c %s`, then `\t[%s]` for a module's symbol).

use super::*;

/// Out of order on purpose: the kernel lists modules after the image, but
/// nothing promises sorted addresses.
const LISTING: &str = "\
ffffffffc0001080 t ext4_read\t[ext4]
0000000000000000 A fixed_percpu_data
ffffffff81000000 T _text
ffffffff81000000 T startup_64
ffffffff81000400 T _stext
ffffffff81000400 T __pfx_entry
ffffffff81001000 W weak_read
ffffffff81001000 T strong_read
ffffffff81001100 t pv_native_safe_halt
ffffffff81001180 D jiffies_like_data
ffffffff81001200 T _etext
not a symbol line
ffffffffc0001000 t ext4_file_open\t[ext4]
ffffffffc0009000 t xfs_iget\t[xfs]
";

fn named(symbols: &KernelSymbols, pc: u64) -> Option<(&str, Option<&str>)> {
    symbols
        .symbol_at(pc)
        .map(|s| (s.name.as_str(), s.module.as_deref()))
}

#[test]
fn kernel_pcs_name_the_symbol_that_covers_them() {
    let k = KernelSymbols::parse(LISTING);
    assert_eq!(
        named(&k, 0xffffffff81001100),
        Some(("pv_native_safe_halt", None))
    );
    // Past the start, before the next symbol (a data symbol is not one).
    assert_eq!(
        named(&k, 0xffffffff810011ff),
        Some(("pv_native_safe_halt", None))
    );
    assert_eq!(k.text_start(), Some(0xffffffff81000400));
    assert!(k.symbols().windows(2).all(|w| w[0].start < w[1].start));
    assert!(!k.symbols().iter().any(|s| s.name == "jiffies_like_data"));
}

#[test]
fn aliases_at_one_address_keep_perfs_choice() {
    let k = KernelSymbols::parse(LISTING);
    // Fewer leading underscores (perf's choose_best_symbol).
    assert_eq!(named(&k, 0xffffffff81000000), Some(("startup_64", None)));
    assert_eq!(named(&k, 0xffffffff81000400), Some(("_stext", None)));
    // A global symbol over a weak one.
    assert_eq!(named(&k, 0xffffffff81001000), Some(("strong_read", None)));
}

#[test]
fn module_symbols_carry_their_module_and_stay_inside_it() {
    let k = KernelSymbols::parse(LISTING);
    assert_eq!(
        named(&k, 0xffffffffc0001000),
        Some(("ext4_file_open", Some("ext4")))
    );
    let read = k.symbol_at(0xffffffffc0001090).unwrap();
    assert_eq!(
        (read.name.as_str(), read.object()),
        ("ext4_read", "[ext4]".into())
    );
    // A module's last symbol ends 4 KiB on, rounded up to a page, not at
    // the next module: the gap between them is nobody's.
    assert_eq!(read.end, 0xffffffffc0003000);
    assert_eq!(
        named(&k, 0xffffffffc0002fff),
        Some(("ext4_read", Some("ext4")))
    );
    assert_eq!(named(&k, 0xffffffffc0003000), None);
    assert_eq!(
        named(&k, 0xffffffffc0009010),
        Some(("xfs_iget", Some("xfs")))
    );
    assert_eq!(k.symbol_at(0xffffffffc0009000).unwrap().object(), "[xfs]");
}

#[test]
fn symbols_end_where_the_next_starts_and_the_image_ends_a_page_on() {
    let k = KernelSymbols::parse(LISTING);
    let halt = k.symbol_at(0xffffffff81001100).unwrap();
    assert_eq!(
        (halt.start, halt.end),
        (0xffffffff81001100, 0xffffffff81001200)
    );
    assert_eq!(halt.object(), KERNEL_FRAME);
    // The image's last text symbol does not reach the modules.
    let last = k.symbol_at(0xffffffff81001200).unwrap();
    assert_eq!(
        (last.name.as_str(), last.end),
        ("_etext", 0xffffffff81003000)
    );
    assert_eq!(named(&k, 0xffffffff81003000), None);
    assert_eq!(named(&k, 0xffffffffa0000000), None);
    // The very last symbol is bounded the same way (an aligned start: its own page).
    assert_eq!(k.symbols().last().unwrap().end, 0xffffffffc000a000);
    assert_eq!(named(&k, u64::MAX), None);
}

#[test]
fn a_pc_below_the_first_symbol_is_unnamed() {
    let k = KernelSymbols::parse(LISTING);
    assert_eq!(named(&k, 0xffffffff80ffffff), None);
    assert_eq!(named(&k, 0x1000), None);
}

#[test]
fn zeroed_addresses_name_nothing() {
    // kptr_restrict shows every address as 0 to whoever may not see them.
    let hidden: String = LISTING
        .lines()
        .map(|l| format!("0000000000000000{}\n", &l[l.len().min(16)..]))
        .collect();
    let k = KernelSymbols::parse(&hidden);
    assert!(k.is_empty(), "{k:?}");
    assert_eq!(k.text_start(), None);
    assert_eq!(named(&k, 0xffffffff81001100), None);
    let mut names = KernelNames::from_symbols(Arc::new(k));
    assert!(names.symbol_at(0xffffffff81001100).is_none());
    let why = names.missing().expect("a reason").to_string();
    assert!(
        why.starts_with("kernel frames are shown as [kernel.kallsyms]: "),
        "{why}"
    );
    assert!(KernelSymbols::parse("").is_empty());
    assert!(KernelSymbols::parse("zz T x\nffff\n\n").is_empty());
}

#[test]
fn names_are_looked_up_only_when_asked_and_checked_against_the_log() {
    let k = Arc::new(KernelSymbols::parse(LISTING));
    let mut names = KernelNames::from_symbols(k.clone());
    assert!(names.missing().is_none(), "nothing asked yet");
    // The log's kernel mapping at this listing's _stext: same boot.
    names.learn_kernel_mapping(0xffffffff81000400);
    assert_eq!(
        names.symbol_at(0xffffffff81001100).map(|s| s.name.as_str()),
        Some("pv_native_safe_halt")
    );
    // Its writer could not read kallsyms (start 0): nothing to check.
    let mut names = KernelNames::from_symbols(k.clone());
    names.learn_kernel_mapping(0);
    assert!(names.symbol_at(0xffffffff81001100).is_some());
    // Another boot (KASLR) or kernel: its names would be wrong.
    let mut names = KernelNames::from_symbols(k);
    names.learn_kernel_mapping(0xffffffff9a000000);
    assert!(names.symbol_at(0xffffffff81001100).is_none());
    let why = names.missing().unwrap().to_string();
    assert!(
        why.contains("0xffffffff9a000000") && why.contains("0xffffffff81000400"),
        "{why}"
    );
}

#[test]
fn kernel_frames_are_the_leading_kernel_pcs_of_a_kernel_mode_sample() {
    let chain = [
        0xffffffff81001100,
        0xffffffff81000010,
        0x5555_0000_1000,
        0x7fff_0000,
    ];
    assert_eq!(kernel_frames(false, &chain), 2);
    assert_eq!(
        kernel_frames(true, &chain),
        0,
        "a user mode sample has none"
    );
    assert_eq!(kernel_frames(false, &[]), 0);
    assert_eq!(kernel_frames(false, &chain[2..]), 0);
}

#[test]
fn hidden_addresses_say_which_sysctl_or_user_shows_them() {
    let r = hidden_addresses_reason(Some(2), Some(0));
    assert!(
        r.contains("kernel.kptr_restrict = 2") && r.contains("sysctl kernel.kptr_restrict=1"),
        "{r}"
    );
    let r = hidden_addresses_reason(Some(1), Some(65534));
    assert!(r.contains("not root") && r.contains("as root"), "{r}");
    let r = hidden_addresses_reason(Some(0), Some(1000));
    assert!(r.contains("kernel.perf_event_paranoid"), "{r}");
    let r = hidden_addresses_reason(Some(1), Some(0));
    assert!(r.contains("CAP_SYSLOG"), "{r}");
    let r = hidden_addresses_reason(None, None);
    assert!(r.contains("sysctl kernel.kptr_restrict=1"), "{r}");
}
