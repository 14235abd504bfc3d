//! Object files named by untrusted input: a pmclog's MAP_IN and PROCEXEC
//! paths, a process's mappings, a debug link inside an ELF file.
//!
//! A profiler reading such a path as it is reads `/dev/zero` until memory
//! runs out, blocks forever on a FIFO, resolves a relative name against
//! its own current directory and reads a sparse file of any size whole.
//! [`ObjectFile::open`] is the one door: an absolute path, opened without
//! blocking, kept only when the opened descriptor (`fstat`, not the path:
//! no race with a rename) is a regular file no larger than
//! [`MAX_OBJECT_BYTES`]; and an ELF parser reads through it only the
//! ranges it asks for, each checked against the file's length, so an
//! object costs the memory of the headers, tables and sections used, not
//! of the file.

use std::fs::{File, Metadata};
use std::io;
use std::ops::Range;
use std::os::unix::fs::{FileExt as _, FileTypeExt as _, MetadataExt as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use object::ReadRef;
use object::read::{ReadCache, ReadCacheOps};

/// The largest object file read (`/proc/kcore` is a "regular file" of
/// 128 TiB): above it an object is skipped, with the reason.
pub const MAX_OBJECT_BYTES: u64 = 4 << 30;

/// Strings (symbol and section names) are read in blocks of this size, not
/// one read(2) each.
const STRING_BLOCK: u64 = 64 << 10;
/// The longest string looked for across a block boundary.
const MAX_STRING: u64 = 64 << 10;

/// Opens `path` for reading as an object named by untrusted input: only
/// an absolute path, only a regular file (checked on the opened
/// descriptor), at most [`MAX_OBJECT_BYTES`]. The error says why, for a
/// verbose report. `O_NONBLOCK` keeps a FIFO from blocking the open; the
/// path is `stat`ed first so that a device is refused without being
/// opened at all (opening some, a watchdog or a tape, acts).
pub fn open_untrusted_object(path: &Path) -> io::Result<(File, Metadata)> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let refused = |why: String| io::Error::new(io::ErrorKind::InvalidInput, why);
    if !path.is_absolute() {
        return Err(refused(
            "not an absolute path: not looked up in the current directory".into(),
        ));
    }
    let before = std::fs::metadata(path)?;
    if !before.file_type().is_file() {
        return Err(refused(format!("not a regular file ({})", kind(&before))));
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let metadata = file.metadata()?;
    if !metadata.file_type().is_file() {
        return Err(refused(format!(
            "not a regular file ({}; it changed while being opened)",
            kind(&metadata)
        )));
    }
    if metadata.len() > MAX_OBJECT_BYTES {
        return Err(refused(format!(
            "{} bytes, above the {MAX_OBJECT_BYTES}-byte limit of an object file",
            metadata.len()
        )));
    }
    Ok((file, metadata))
}

/// What a file that is not regular is, for the message.
fn kind(metadata: &Metadata) -> &'static str {
    let t = metadata.file_type();
    if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_dir() {
        "a directory"
    } else {
        "not a file"
    }
}

/// An object file opened by [`open_untrusted_object`], read in ranges:
/// `&ObjectFile` is an [`object::ReadRef`], so `object::File::parse(&f)`
/// reads the headers, tables and sections it is asked for and nothing
/// else, each range within the file's length (as `fstat` gave it).
pub struct ObjectFile {
    path: PathBuf,
    metadata: Metadata,
    len: u64,
    file: Arc<File>,
    cache: ReadCache<Reader>,
    /// Bytes read from the file into the cache so far (a range the cache
    /// holds already is not read again).
    cached: Arc<AtomicU64>,
}

impl std::fmt::Debug for ObjectFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectFile")
            .field("path", &self.path)
            .field("len", &self.len)
            .field("cached", &self.cached_bytes())
            .finish()
    }
}

/// The descriptor under the cache: positioned reads, and the length
/// `fstat` gave (a file grown since is not read past it).
struct Reader {
    file: Arc<File>,
    len: u64,
    at: u64,
    /// The bytes read so far ([`ObjectFile::cached_bytes`]).
    read: Arc<AtomicU64>,
}

impl ReadCacheOps for Reader {
    fn len(&mut self) -> Result<u64, ()> {
        Ok(self.len)
    }

    fn seek(&mut self, pos: u64) -> Result<u64, ()> {
        self.at = pos;
        Ok(pos)
    }

    fn read(&mut self, buf: &mut [u8]) -> Result<usize, ()> {
        let room = usize::try_from(self.len.saturating_sub(self.at)).unwrap_or(usize::MAX);
        let want = buf.len().min(room);
        let n = self
            .file
            .read_at(&mut buf[..want], self.at)
            .map_err(|_| ())?;
        self.at += n as u64;
        Ok(n)
    }

    fn read_exact(&mut self, buf: &mut [u8]) -> Result<(), ()> {
        let end = self.at.checked_add(buf.len() as u64).ok_or(())?;
        if end > self.len {
            return Err(());
        }
        self.file.read_exact_at(buf, self.at).map_err(|_| ())?;
        self.at = end;
        self.read.fetch_add(buf.len() as u64, Ordering::Relaxed);
        Ok(())
    }
}

impl ObjectFile {
    /// Opens the object at `path` ([`open_untrusted_object`]'s rules).
    pub fn open(path: &Path) -> io::Result<ObjectFile> {
        let (file, metadata) = open_untrusted_object(path)?;
        let len = metadata.len();
        let file = Arc::new(file);
        let cached = Arc::new(AtomicU64::new(0));
        Ok(ObjectFile {
            path: path.to_path_buf(),
            metadata,
            len,
            file: file.clone(),
            cache: ReadCache::new(Reader {
                file,
                len,
                at: 0,
                read: cached.clone(),
            }),
            cached,
        })
    }

    /// The path it was opened by.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its `fstat`.
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// Its length, as `fstat` gave it.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `other` is the same file (device and inode), unchanged
    /// (length and change time): a file reopened later is still the one
    /// read before.
    pub fn is_same_as(&self, other: &Metadata) -> bool {
        let m = &self.metadata;
        m.dev() == other.dev()
            && m.ino() == other.ino()
            && m.len() == other.len()
            && m.ctime() == other.ctime()
            && m.ctime_nsec() == other.ctime_nsec()
    }

    /// `size` bytes at `offset`, copied out (not kept in the parser's
    /// cache): for a section used whole once, such as DWARF. `None` past
    /// the end of the file.
    pub fn read_range(&self, offset: u64, size: u64) -> Option<Vec<u8>> {
        let end = offset.checked_add(size)?;
        if end > self.len {
            return None;
        }
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(usize::try_from(size).ok()?).ok()?;
        bytes.resize(size as usize, 0);
        self.file.read_exact_at(&mut bytes, offset).ok()?;
        Some(bytes)
    }

    /// Feeds the whole file to `each`, a block at a time (a checksum of a
    /// file of any size in little memory).
    pub fn for_each_block(&self, mut each: impl FnMut(&[u8])) -> io::Result<()> {
        let mut buf = vec![0; 1 << 20];
        let mut at = 0;
        while at < self.len {
            let want = usize::try_from((self.len - at).min(buf.len() as u64)).unwrap_or(0);
            let n = self.file.read_at(&mut buf[..want], at)?;
            if n == 0 {
                return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
            }
            each(&buf[..n]);
            at += n as u64;
        }
        Ok(())
    }

    /// Bytes read into the parser's cache so far (each range once, however
    /// often the parser asks for it).
    pub fn cached_bytes(&self) -> u64 {
        self.cached.load(Ordering::Relaxed)
    }
}

impl<'a> ReadRef<'a> for &'a ObjectFile {
    fn len(self) -> Result<u64, ()> {
        Ok(self.len)
    }

    fn read_bytes_at(self, offset: u64, size: u64) -> Result<&'a [u8], ()> {
        let end = offset.checked_add(size).ok_or(())?;
        if end > self.len {
            return Err(());
        }
        (&self.cache).read_bytes_at(offset, size)
    }

    fn read_bytes_at_until(self, range: Range<u64>, delimiter: u8) -> Result<&'a [u8], ()> {
        if range.start > range.end || range.end > self.len {
            return Err(());
        }
        // The aligned block holding the string's start, read once for
        // every string in it.
        let block_start = range.start - range.start % STRING_BLOCK;
        let block_len = STRING_BLOCK.min(self.len - block_start);
        let block = self.read_bytes_at(block_start, block_len)?;
        let from = usize::try_from(range.start - block_start).map_err(|_| ())?;
        let limit = usize::try_from((range.end - block_start).min(block_len)).map_err(|_| ())?;
        let within = block.get(from..limit).ok_or(())?;
        if let Some(n) = within.iter().position(|&b| b == delimiter) {
            return Ok(&within[..n]);
        }
        if block_start + block_len >= range.end {
            return Err(());
        }
        // Across the block's end: the string alone.
        let len = (range.end - range.start).min(MAX_STRING);
        let span = self.read_bytes_at(range.start, len)?;
        let n = span.iter().position(|&b| b == delimiter).ok_or(())?;
        Ok(&span[..n])
    }
}

#[cfg(test)]
mod tests;
