use std::io::Write as _;

use object::{Object as _, ObjectSection as _, ReadRef as _};

use super::*;

fn refusal(path: &Path) -> String {
    match ObjectFile::open(path) {
        Ok(_) => panic!("{} was opened", path.display()),
        Err(e) => {
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
            e.to_string()
        }
    }
}

#[test]
fn a_relative_path_is_not_opened() {
    let why = refusal(Path::new("Cargo.toml"));
    assert!(why.contains("not an absolute path"), "{why}");
}

#[test]
fn devices_and_fifos_are_refused_without_blocking() {
    let why = refusal(Path::new("/dev/zero"));
    assert!(why.contains("character device"), "{why}");
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let why = refusal(&fifo);
    assert!(why.contains("FIFO"), "{why}");
    let why = refusal(dir.path());
    assert!(why.contains("directory"), "{why}");
}

/// A 2 GiB sparse file that starts as this test's own ELF image: parsing
/// it and walking its sections and symbols reads a few pages, not 2 GiB.
#[test]
fn a_sparse_object_is_read_only_where_parsed() {
    let own = std::fs::read(std::env::current_exe().unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sparse");
    let mut f = File::create(&path).unwrap();
    f.write_all(&own[..4096]).unwrap();
    f.set_len(2 << 30).unwrap();
    drop(f);
    let file = ObjectFile::open(&path).unwrap();
    assert_eq!(file.len(), 2 << 30);
    if let Ok(elf) = object::File::parse(&file) {
        for s in elf.sections() {
            let _ = s.name();
        }
        let _ = elf.symbols().count();
    }
    assert!(
        file.cached_bytes() < 4 << 20,
        "{} bytes read",
        file.cached_bytes()
    );
    assert!(file.read_range((2 << 30) - 8, 16).is_none());
    assert_eq!(file.read_range((2 << 30) - 8, 8), Some(vec![0; 8]));
}

#[test]
fn strings_are_read_within_and_across_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("strings");
    let mut bytes = vec![b'x'; STRING_BLOCK as usize - 4];
    bytes.extend_from_slice(b"across\0inside\0");
    bytes.extend_from_slice(b"unended");
    std::fs::write(&path, &bytes).unwrap();
    let file = ObjectFile::open(&path).unwrap();
    let len = file.len();
    let at = STRING_BLOCK - 4;
    assert_eq!((&file).read_bytes_at_until(at..len, 0), Ok(&b"across"[..]));
    assert_eq!(
        (&file).read_bytes_at_until(at + 7..len, 0),
        Ok(&b"inside"[..])
    );
    assert_eq!((&file).read_bytes_at_until(at + 2..at + 4, 0), Err(()));
    assert_eq!((&file).read_bytes_at_until(at + 14..len, 0), Err(()));
    assert_eq!((&file).read_bytes_at_until(0..len + 1, 0), Err(()));
    assert_eq!((&file).read_bytes_at(len - 1, 2), Err(()));
}
