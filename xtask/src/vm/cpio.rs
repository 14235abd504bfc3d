//! The initramfs as a `newc` cpio archive (the format the kernel unpacks;
//! `Documentation/driver-api/early-userspace/buffer-format.rst`), written
//! from a directory tree without the cpio program.

use std::io::{BufWriter, Write};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Writes every entry under `root` (names relative to it) to `archive`,
/// uncompressed: the guest unpacks it faster than it inflates gzip under
/// emulation.
pub fn write_tree(root: &Path, archive: &Path) -> std::io::Result<()> {
    let mut out = BufWriter::new(std::fs::File::create(archive)?);
    let mut ino = 1u32;
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&dir)?.collect::<Result<_, _>>()?;
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let path = entry.path();
            let meta = std::fs::symlink_metadata(&path)?;
            let name = path.strip_prefix(root).map_err(std::io::Error::other)?;
            let data = if meta.file_type().is_symlink() {
                std::fs::read_link(&path)?
                    .into_os_string()
                    .into_encoded_bytes()
            } else if meta.is_file() {
                std::fs::read(&path)?
            } else {
                Vec::new()
            };
            entry_header(
                &mut out,
                ino,
                meta.mode(),
                meta.mtime(),
                &name.to_string_lossy(),
                &data,
            )?;
            ino += 1;
            if meta.is_dir() {
                pending.push(path);
            }
        }
    }
    entry_header(&mut out, 0, 0, 0, "TRAILER!!!", &[])?;
    out.flush()
}

/// One `070701` header, the name and the data, each padded to 4 bytes.
fn entry_header(
    out: &mut impl Write,
    ino: u32,
    mode: u32,
    mtime: i64,
    name: &str,
    data: &[u8],
) -> std::io::Result<()> {
    let name_size = name.len() + 1;
    let fields = [
        ino,
        mode,
        0, // uid: root
        0, // gid
        1, // nlink
        u32::try_from(mtime.max(0)).unwrap_or(u32::MAX),
        u32::try_from(data.len()).map_err(std::io::Error::other)?,
        0,
        0,
        0,
        0,
        u32::try_from(name_size).map_err(std::io::Error::other)?,
        0, // check
    ];
    let mut header = String::from("070701");
    for f in fields {
        header.push_str(&format!("{f:08X}"));
    }
    out.write_all(header.as_bytes())?;
    out.write_all(name.as_bytes())?;
    out.write_all(&[0])?;
    out.write_all(&[0; 3][..pad(110 + name_size)])?;
    out.write_all(data)?;
    out.write_all(&[0; 3][..pad(data.len())])
}

fn pad(n: usize) -> usize {
    (4 - n % 4) % 4
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_archive_lists_its_entries_as_cpio_reads_them() {
        let dir = std::env::temp_dir().join(format!("xtask-cpio-{}", std::process::id()));
        let root = dir.join("root");
        std::fs::create_dir_all(root.join("bin")).unwrap();
        std::fs::write(root.join("bin/hello"), b"hello\n").unwrap();
        std::os::unix::fs::symlink("hello", root.join("bin/sh")).unwrap();
        let archive = dir.join("a.cpio");
        write_tree(&root, &archive).unwrap();
        let bytes = std::fs::read(&archive).unwrap();
        assert_eq!(bytes.len() % 4, 0);
        assert!(bytes.starts_with(b"070701"));
        // cpio(1), where installed, is the outside reader.
        if let Ok(out) = std::process::Command::new("cpio")
            .args(["-t", "--quiet"])
            .stdin(std::fs::File::open(&archive).unwrap())
            .output()
        {
            let listed = String::from_utf8_lossy(&out.stdout);
            assert_eq!(
                listed.lines().collect::<Vec<_>>(),
                ["bin", "bin/hello", "bin/sh"]
            );
        }
        let text = String::from_utf8_lossy(&bytes);
        assert!(text.contains("bin/hello\0"), "{text:?}");
        assert!(text.ends_with("TRAILER!!!\0\0\0\0"), "{text:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
