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
    // Past the file's end, or reversed: refused, though "inside" ends
    // within the file.
    assert_eq!((&file).read_bytes_at_until(at + 7..len + 1, 0), Err(()));
    assert_eq!((&file).read_bytes_at_until(at + 7..5, 0), Err(()));
    // In the second block, as in the first: no delimiter before the
    // range's end, no string.
    assert_eq!((&file).read_bytes_at_until(at + 7..at + 9, 0), Err(()));
    assert_eq!(
        (&file).read_bytes_at_until(at + 7..at + 14, 0),
        Ok(&b"inside"[..])
    );
}

/// A string from the second block into the third, whole.
#[test]
fn a_string_across_a_later_block_boundary_is_read_whole() {
    let mut bytes = vec![b'x'; 2 * STRING_BLOCK as usize - 3];
    bytes.extend_from_slice(b"farther\0");
    bytes.extend_from_slice(&[b'y'; 100]);
    let (_dir, path) = temp_file(&bytes);
    let file = ObjectFile::open(&path).unwrap();
    let at = 2 * STRING_BLOCK - 3;
    assert_eq!(
        (&file).read_bytes_at_until(at..file.len(), 0),
        Ok(&b"farther"[..])
    );
    // Not past the range's end.
    assert_eq!((&file).read_bytes_at_until(at..at + 7, 0), Err(()));
}

/// A temp file holding `bytes`, and its directory.
fn temp_file(bytes: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("object");
    std::fs::write(&path, bytes).unwrap();
    (dir, path)
}

#[test]
fn a_file_of_the_limit_opens_and_one_byte_more_is_refused() {
    let (_dir, path) = temp_file(b"");
    let f = File::options().write(true).open(&path).unwrap();
    f.set_len(MAX_OBJECT_BYTES).unwrap();
    assert_eq!(ObjectFile::open(&path).unwrap().len(), MAX_OBJECT_BYTES);
    f.set_len(MAX_OBJECT_BYTES + 1).unwrap();
    assert_eq!(
        refusal(&path),
        "4294967297 bytes, above the 4294967296-byte limit of an object file"
    );
}

/// The descriptor is opened `O_NONBLOCK` (a FIFO put at the path between
/// the `stat` and the `open` does not block it), as `/proc/self/fdinfo`
/// shows (the kernel keeps no `O_NOCTTY` in the file's flags).
#[test]
fn objects_are_opened_without_blocking() {
    use std::os::fd::AsRawFd as _;
    let (_dir, path) = temp_file(b"\x7fELF");
    let (file, _) = open_untrusted_object(&path).unwrap();
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", file.as_raw_fd())).unwrap();
    let flags = info
        .lines()
        .find_map(|l| l.strip_prefix("flags:"))
        .map(|f| i32::from_str_radix(f.trim(), 8).unwrap())
        .expect("fdinfo has the flags");
    assert_eq!(flags & libc::O_NONBLOCK, libc::O_NONBLOCK, "{info}");
    assert_eq!(flags & libc::O_ACCMODE, libc::O_RDONLY, "{info}");
}

#[test]
fn the_length_is_the_one_fstat_gave_at_open() {
    let (_dir, path) = temp_file(b"");
    let empty = ObjectFile::open(&path).unwrap();
    assert!(empty.is_empty());
    assert_eq!((empty.len(), ReadRef::len(&empty)), (0, Ok(0)));
    std::fs::write(&path, b"12345").unwrap();
    let five = ObjectFile::open(&path).unwrap();
    // Grown since: still the five bytes it had when opened.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(b"6789")
        .unwrap();
    assert!(!five.is_empty());
    assert_eq!((five.len(), ReadRef::len(&five)), (5, Ok(5)));
    assert_eq!(five.read_range(0, 5), Some(b"12345".to_vec()));
    assert_eq!(five.read_range(0, 6), None);
    assert_eq!(
        format!("{five:?}"),
        format!("ObjectFile {{ path: {path:?}, len: 5, cached: 0 }}")
    );
}

#[test]
fn is_same_as_is_the_same_unchanged_file() {
    let (dir, path) = temp_file(b"object");
    let file = ObjectFile::open(&path).unwrap();
    assert!(file.is_same_as(&std::fs::metadata(&path).unwrap()));
    assert!(file.is_same_as(file.metadata()));
    // Another file of the same bytes.
    let other = dir.path().join("other");
    std::fs::write(&other, b"object").unwrap();
    assert!(!file.is_same_as(&std::fs::metadata(&other).unwrap()));
    // The path replaced by it (a rename over the object).
    std::fs::rename(&other, &path).unwrap();
    assert!(!file.is_same_as(&std::fs::metadata(&path).unwrap()));
    // The same file (inode) grown.
    let (_dir2, path2) = temp_file(b"object");
    let file2 = ObjectFile::open(&path2).unwrap();
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path2)
        .unwrap()
        .write_all(b"!")
        .unwrap();
    assert!(!file2.is_same_as(&std::fs::metadata(&path2).unwrap()));
}

/// Two files of one length made back to back usually share their change
/// time to the nanosecond (the kernel stamps new inodes with a coarse
/// clock): such a pair is still two files. Pairs are made until one
/// shares it (the first, here), each checked.
#[test]
fn two_files_with_one_length_and_change_time_are_not_the_same() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..1000 {
        let (a, b) = (
            dir.path().join(format!("a{i}")),
            dir.path().join(format!("b{i}")),
        );
        std::fs::write(&a, b"object").unwrap();
        std::fs::write(&b, b"object").unwrap();
        let (ma, mb) = (
            std::fs::metadata(&a).unwrap(),
            std::fs::metadata(&b).unwrap(),
        );
        let file = ObjectFile::open(&a).unwrap();
        assert!(file.is_same_as(&ma));
        assert!(!file.is_same_as(&mb));
        if (ma.ctime(), ma.ctime_nsec()) == (mb.ctime(), mb.ctime_nsec()) {
            return;
        }
    }
}

/// A pattern that differs at every offset a block boundary could fall on.
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

#[test]
fn every_block_is_fed_once_up_to_the_opened_length() {
    let bytes = pattern((1 << 20) + 12345);
    let (_dir, path) = temp_file(&bytes);
    let file = ObjectFile::open(&path).unwrap();
    // Grown by more than a block since: not fed.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(&pattern(2 << 20))
        .unwrap();
    let mut fed = Vec::new();
    file.for_each_block(|block| {
        fed.extend_from_slice(block);
        assert!(fed.len() <= bytes.len(), "fed {} bytes", fed.len());
    })
    .unwrap();
    assert!(fed == bytes, "{} bytes fed", fed.len());
    let (_dir, empty) = temp_file(b"");
    let mut calls = 0;
    ObjectFile::open(&empty)
        .unwrap()
        .for_each_block(|_| calls += 1)
        .unwrap();
    assert_eq!(calls, 0);
}

#[test]
fn a_file_cut_since_it_was_opened_is_an_error_not_a_short_read() {
    let (_dir, path) = temp_file(&pattern(100));
    let file = ObjectFile::open(&path).unwrap();
    File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(50)
        .unwrap();
    let mut fed = Vec::new();
    let e = file
        .for_each_block(|block| {
            fed.extend_from_slice(block);
            assert!(fed.len() <= 50, "fed {} bytes", fed.len());
        })
        .unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
    assert_eq!(fed, pattern(50));
}

#[test]
fn a_range_is_read_into_the_cache_once() {
    let (_dir, path) = temp_file(&pattern(100));
    let file = ObjectFile::open(&path).unwrap();
    assert_eq!(file.cached_bytes(), 0);
    assert_eq!((&file).read_bytes_at(10, 20), Ok(&pattern(30)[10..]));
    assert_eq!(file.cached_bytes(), 20);
    assert_eq!((&file).read_bytes_at(10, 20), Ok(&pattern(30)[10..]));
    assert_eq!(file.cached_bytes(), 20);
    assert_eq!((&file).read_bytes_at(0, 8), Ok(&pattern(8)[..]));
    assert_eq!(file.cached_bytes(), 28);
    // Copied out, not cached.
    assert_eq!(file.read_range(0, 100), Some(pattern(100)));
    assert_eq!(file.cached_bytes(), 28);
}

/// Strings in one block (a string table) cost one read of that block.
#[test]
fn the_strings_of_a_block_are_read_with_it() {
    let mut bytes = b"\0.text\0.data\0".to_vec();
    bytes.resize(1000, b'x');
    let (_dir, path) = temp_file(&bytes);
    let file = ObjectFile::open(&path).unwrap();
    let len = file.len();
    assert_eq!((&file).read_bytes_at_until(1..len, 0), Ok(&b".text"[..]));
    assert_eq!((&file).read_bytes_at_until(7..len, 0), Ok(&b".data"[..]));
    assert_eq!((&file).read_bytes_at_until(0..len, 0), Ok(&b""[..]));
    assert_eq!(file.cached_bytes(), 1000);
}
