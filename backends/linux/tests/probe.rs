//! Probe encodings on a fixture sysfs tree (live uprobe/kprobe counting is
//! in `live.rs`).

use std::path::Path;

use pmc_linux::dynamic_probe::Probe;

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
