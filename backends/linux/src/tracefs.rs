//! Tracepoints through tracefs: locating it, `subsystem:event` → id, the
//! list of tracepoints, and each event's `format` so raw sample data can be
//! decoded by field name.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Error, Hint, Result};

/// Where tracefs is looked for, in order.
pub const MOUNT_POINTS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// The command that mounts tracefs where it is looked for first (as root).
pub const MOUNT_COMMAND: &str = "mount -t tracefs nodev /sys/kernel/tracing";

/// Where tracefs stands on this machine: for [`Tracefs::locate`], reports
/// and test gates (a plain look at the mount points, no tracepoint read).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MountState {
    /// Its `events` directory is readable at this mount point.
    Readable(PathBuf),
    /// Mounted here, but the caller may not read its `events` directory.
    Unreadable(PathBuf),
    /// Not mounted at any of [`MOUNT_POINTS`].
    NotMounted,
    /// Listed as mounted here in `/proc/self/mounts`, yet its `events`
    /// directory cannot be read even without a permission problem: a mount
    /// that failed or went stale.
    Broken(PathBuf),
}

/// Where tracefs stands on this machine: the first of [`MOUNT_POINTS`]
/// whose `events` directory is readable, else the first the caller may not
/// read, else the first `/proc/self/mounts` lists as tracefs (broken), else
/// not mounted.
pub fn mount_state() -> MountState {
    mount_state_in(&MOUNT_POINTS.map(PathBuf::from), || {
        fs::read_to_string("/proc/self/mounts").unwrap_or_default()
    })
}

/// [`mount_state`] over other mount points and mount table (fixtures);
/// `mounts` is read only when no mount point is readable.
pub fn mount_state_in(points: &[PathBuf], mounts: impl FnOnce() -> String) -> MountState {
    let mut denied = None;
    let mut missing = Vec::new();
    for root in points {
        match fs::read_dir(root.join("events")) {
            Ok(_) => return MountState::Readable(root.clone()),
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                denied.get_or_insert_with(|| root.clone());
            }
            Err(_) => missing.push(root),
        }
    }
    if let Some(root) = denied {
        return MountState::Unreadable(root);
    }
    let mounts = mounts();
    missing
        .into_iter()
        .find(|root| mounted_as(&mounts, root, "tracefs"))
        .map_or(MountState::NotMounted, |root| {
            MountState::Broken(root.clone())
        })
}

/// Whether a mount table (`/proc/self/mounts`) lists a file system of
/// `fstype` at `path`.
fn mounted_as(mounts: &str, path: &Path, fstype: &str) -> bool {
    mounts.lines().any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.len() > 2 && Path::new(f[1]) == path && f[2] == fstype
    })
}

/// A tracefs mount.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tracefs {
    root: PathBuf,
}

impl Tracefs {
    /// Finds tracefs at `/sys/kernel/tracing`, else
    /// `/sys/kernel/debug/tracing` ([`mount_state`]). When neither is
    /// mounted the error says so with the mount command; when it is not
    /// readable, or its mount is broken, it says that.
    pub fn locate() -> Result<Tracefs> {
        Tracefs::from_state(mount_state())
    }

    /// [`Tracefs::locate`] over other mount points and mount table
    /// ([`mount_state_in`]).
    pub fn locate_in(points: &[PathBuf], mounts: impl FnOnce() -> String) -> Result<Tracefs> {
        Tracefs::from_state(mount_state_in(points, mounts))
    }

    fn from_state(state: MountState) -> Result<Tracefs> {
        match state {
            MountState::Readable(root) => Ok(Tracefs { root }),
            MountState::Unreadable(root) => Err(Error::File {
                path: root.join("events").display().to_string(),
                why: "tracefs is not readable: permission denied".into(),
                errno: Some(libc::EACCES),
                hint: Some(Hint::TracefsPermission),
            }),
            MountState::Broken(root) => Err(Error::File {
                path: root.join("events").display().to_string(),
                why: "tracefs is listed as mounted here but its events directory cannot be \
                      read (a failed or stale mount)"
                    .into(),
                errno: Some(libc::ENOENT),
                hint: Some(Hint::TracefsNotMounted),
            }),
            MountState::NotMounted => Err(Error::File {
                path: MOUNT_POINTS[0].into(),
                why: "tracefs is not mounted".into(),
                errno: Some(libc::ENOENT),
                hint: Some(Hint::TracefsNotMounted),
            }),
        }
    }

    /// A tracefs tree at `root` (tests use fixture trees).
    pub fn at(root: impl Into<PathBuf>) -> Tracefs {
        Tracefs { root: root.into() }
    }

    /// The mount point.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn event_dir(&self, subsystem: &str, event: &str) -> Result<PathBuf> {
        let valid = |s: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
        };
        if !valid(subsystem) || !valid(event) {
            return Err(Error::invalid(
                format!("tracepoint {subsystem}:{event}"),
                "subsystem and event are letters, digits, `_`, `-`, `.`",
            ));
        }
        let dir = self.root.join("events").join(subsystem).join(event);
        if dir.join("id").exists() || dir.join("format").exists() {
            return Ok(dir);
        }
        let wanted = format!("{subsystem}:{event}");
        let all: Vec<String> = self
            .list()
            .unwrap_or_default()
            .into_iter()
            .map(|(s, e)| format!("{s}:{e}"))
            .collect();
        let closest = pmc_suggest::closest(&wanted, all.iter().map(String::as_str), 5);
        Err(Error::NoSuchTracepoint {
            subsystem: subsystem.to_string(),
            event: event.to_string(),
            path: dir.display().to_string(),
            closest,
        })
    }

    /// The id of `subsystem:event` (for `PERF_TYPE_TRACEPOINT`'s config).
    pub fn tracepoint_id(&self, subsystem: &str, event: &str) -> Result<u64> {
        let path = self.event_dir(subsystem, event)?.join("id");
        let text = fs::read_to_string(&path).map_err(|e| Error::file(path.display(), &e))?;
        text.trim().parse().map_err(|_| Error::File {
            path: path.display().to_string(),
            why: format!("not a tracepoint id: {:?}", text.trim()),
            errno: None,
            hint: None,
        })
    }

    /// The event's `format`.
    pub fn format(&self, subsystem: &str, event: &str) -> Result<Format> {
        let path = self.event_dir(subsystem, event)?.join("format");
        let text = fs::read_to_string(&path).map_err(|e| Error::file(path.display(), &e))?;
        Format::parse(&text)
    }

    /// Every tracepoint as (subsystem, event), sorted.
    pub fn list(&self) -> Result<Vec<(String, String)>> {
        let events = self.root.join("events");
        let subsystems = fs::read_dir(&events).map_err(|e| Error::file(events.display(), &e))?;
        let mut out = Vec::new();
        for s in subsystems.flatten() {
            if !s.path().is_dir() {
                continue;
            }
            let subsystem = s.file_name().to_string_lossy().into_owned();
            let Ok(evs) = fs::read_dir(s.path()) else {
                continue;
            };
            for e in evs.flatten() {
                if e.path().join("id").exists() {
                    out.push((
                        subsystem.clone(),
                        e.file_name().to_string_lossy().into_owned(),
                    ));
                }
            }
        }
        out.sort();
        Ok(out)
    }
}

/// One field of a tracepoint's record.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Field {
    /// The field name (`count`, `__syscall_nr`, …).
    pub name: String,
    /// The C declaration's type (`size_t`, `char[16]`, `__data_loc char[]`).
    pub type_name: String,
    /// Byte offset in the raw record.
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
    /// Whether the integer is signed.
    pub signed: bool,
    /// Whether it is one of the common fields shared by every tracepoint.
    pub common: bool,
}

/// A decoded field value.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum FieldValue {
    /// A signed integer.
    Signed(i64),
    /// An unsigned integer.
    Unsigned(u64),
    /// A string (char arrays, `__data_loc` strings), up to its NUL.
    Str(String),
    /// Any other bytes.
    Bytes(Vec<u8>),
}

/// A tracepoint's `format` file.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Format {
    /// The event name.
    pub name: String,
    /// Its id.
    pub id: u64,
    /// Its fields, common ones first.
    pub fields: Vec<Field>,
}

impl Format {
    /// Parses a `format` file.
    pub fn parse(text: &str) -> Result<Format> {
        let mut name = String::new();
        let mut id = 0;
        let mut fields = Vec::new();
        let mut common = true;
        for line in text.lines() {
            let line = line.trim();
            if let Some(n) = line.strip_prefix("name:") {
                name = n.trim().to_string();
            } else if let Some(n) = line.strip_prefix("ID:") {
                id = n.trim().parse().unwrap_or(0);
            } else if line.is_empty() && !fields.is_empty() {
                common = false;
            } else if let Some(rest) = line.strip_prefix("field:")
                && let Some(f) = parse_field(rest, common)
            {
                fields.push(f);
            }
        }
        if name.is_empty() {
            return Err(Error::invalid("tracepoint format", "no `name:` line"));
        }
        Ok(Format { name, id, fields })
    }

    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// Decodes field `name` from a raw tracepoint record (bounds-checked:
    /// `None` when the field is unknown or the record too short).
    pub fn decode(&self, raw: &[u8], name: &str) -> Option<FieldValue> {
        let f = self.field(name)?;
        let bytes = raw.get(f.offset..f.offset.checked_add(f.size)?)?;
        if f.type_name.starts_with("__data_loc") {
            // A u32: offset in the low 16 bits, length in the high 16.
            let loc = u32::from_ne_bytes(bytes.get(..4)?.try_into().ok()?);
            let (off, len) = ((loc & 0xffff) as usize, (loc >> 16) as usize);
            let s = raw.get(off..off.checked_add(len)?)?;
            return Some(FieldValue::Str(c_string(s)));
        }
        if f.type_name.contains('[') {
            return Some(if f.type_name.starts_with("char") {
                FieldValue::Str(c_string(bytes))
            } else {
                FieldValue::Bytes(bytes.to_vec())
            });
        }
        let u = match f.size {
            1 => u64::from(bytes[0]),
            2 => u64::from(u16::from_ne_bytes(bytes.try_into().ok()?)),
            4 => u64::from(u32::from_ne_bytes(bytes.try_into().ok()?)),
            8 => u64::from_ne_bytes(bytes.try_into().ok()?),
            _ => return Some(FieldValue::Bytes(bytes.to_vec())),
        };
        Some(if f.signed {
            let shift = 64 - 8 * f.size as u32;
            FieldValue::Signed(((u << shift) as i64) >> shift)
        } else {
            FieldValue::Unsigned(u)
        })
    }
}

fn c_string(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// Parses `TYPE NAME; offset:N; size:N; signed:N;` (tab-separated).
fn parse_field(rest: &str, common: bool) -> Option<Field> {
    let mut parts = rest.split(';').map(str::trim);
    let decl = parts.next()?;
    let mut offset = None;
    let mut size = None;
    let mut signed = false;
    for p in parts {
        if let Some(v) = p.strip_prefix("offset:") {
            offset = v.trim().parse().ok();
        } else if let Some(v) = p.strip_prefix("size:") {
            size = v.trim().parse().ok();
        } else if let Some(v) = p.strip_prefix("signed:") {
            signed = v.trim() == "1";
        }
    }
    // The name is the last identifier, before a trailing `[N]` if any
    // (`char comm[16]`); `__data_loc char[] name` has its brackets earlier.
    let (head, array) = match decl.strip_suffix(']').and_then(|d| d.rfind('[')) {
        Some(i) => (decl[..i].trim_end(), &decl[i..]),
        None => (decl, ""),
    };
    let name_start = head
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map_or(0, |i| i + 1);
    let name = head[name_start..].to_string();
    let type_name = format!("{}{array}", head[..name_start].trim());
    if name.is_empty() {
        return None;
    }
    Some(Field {
        name,
        type_name,
        offset: offset?,
        size: size?,
        signed,
        common,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tracefs")
    }

    #[test]
    fn an_unmounted_tracefs_is_said_once_with_the_mount_command() {
        let gone = fixture().join("no-such-mount");
        let state = mount_state_in(std::slice::from_ref(&gone), String::new);
        assert_eq!(state, MountState::NotMounted);
        let err = Tracefs::from_state(state).unwrap_err();
        // As pmc and the probe show it: the error, then its hint.
        let text = format!("{err}; {}", err.hint().expect("a remedy"));
        assert_eq!(text.matches("not mounted").count(), 1, "{text}");
        assert!(text.contains(MOUNT_COMMAND), "{text}");
    }

    #[test]
    fn mount_state_prefers_a_readable_mount_then_names_a_broken_one() {
        let gone = fixture().join("no-such-mount");
        let listed = format!(
            "sysfs /sys sysfs rw 0 0\nnodev {} tracefs rw,relatime 0 0\n",
            gone.display()
        );
        // The first readable mount point wins, whatever the mount table says.
        assert_eq!(
            mount_state_in(&[gone.clone(), fixture()], || unreachable!("not read")),
            MountState::Readable(fixture())
        );
        // Nothing readable: a listed tracefs is broken, an unlisted one absent.
        assert_eq!(
            mount_state_in(std::slice::from_ref(&gone), || listed.clone()),
            MountState::Broken(gone.clone())
        );
        assert_eq!(
            mount_state_in(std::slice::from_ref(&gone), String::new),
            MountState::NotMounted
        );
    }

    #[test]
    fn mounts_are_matched_by_path_and_type() {
        let mounts = "sysfs /sys sysfs rw 0 0\n\
                      nodev /sys/kernel/tracing tracefs rw,relatime 0 0\n\
                      debugfs /sys/kernel/debug debugfs rw 0 0\n";
        let at = |p: &str| mounted_as(mounts, Path::new(p), "tracefs");
        assert!(at("/sys/kernel/tracing"));
        assert!(!at("/sys/kernel/debug/tracing"));
        assert!(!at("/sys/kernel/debug"));
        assert!(!mounted_as("", Path::new("/sys/kernel/tracing"), "tracefs"));
    }

    const WRITE_FORMAT: &str = "name: sys_enter_write
ID: 716
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;
\tfield:unsigned int fd;\toffset:16;\tsize:8;\tsigned:0;
\tfield:const char * buf;\toffset:24;\tsize:8;\tsigned:0;
\tfield:size_t count;\toffset:32;\tsize:8;\tsigned:0;
\tfield:char comm[16];\toffset:40;\tsize:16;\tsigned:0;
\tfield:__data_loc char[] name;\toffset:56;\tsize:4;\tsigned:0;

print fmt: \"fd: 0x%08lx\"
";

    #[test]
    fn format_files_parse_into_fields() {
        let f = Format::parse(WRITE_FORMAT).unwrap();
        assert_eq!((f.name.as_str(), f.id), ("sys_enter_write", 716));
        let count = f.field("count").unwrap();
        assert_eq!((count.offset, count.size, count.signed), (32, 8, false));
        assert_eq!(count.type_name, "size_t");
        assert!(f.field("common_pid").unwrap().common);
        assert!(!f.field("__syscall_nr").unwrap().common);
        assert_eq!(f.field("comm").unwrap().type_name, "char[16]");
        assert_eq!(f.field("buf").unwrap().type_name, "const char *");
    }

    #[test]
    fn raw_records_decode_by_field_name() {
        let f = Format::parse(WRITE_FORMAT).unwrap();
        let mut raw = vec![0u8; 72];
        raw[4..8].copy_from_slice(&(-7i32).to_ne_bytes());
        raw[8..12].copy_from_slice(&1i32.to_ne_bytes());
        raw[32..40].copy_from_slice(&3u64.to_ne_bytes());
        raw[40..44].copy_from_slice(b"cat\0");
        raw[56..60].copy_from_slice(&((5u32 << 16) | 60).to_ne_bytes());
        raw[60..65].copy_from_slice(b"hey\0\0");
        assert_eq!(f.decode(&raw, "count"), Some(FieldValue::Unsigned(3)));
        assert_eq!(f.decode(&raw, "common_pid"), Some(FieldValue::Signed(-7)));
        assert_eq!(f.decode(&raw, "comm"), Some(FieldValue::Str("cat".into())));
        assert_eq!(f.decode(&raw, "name"), Some(FieldValue::Str("hey".into())));
        assert_eq!(f.decode(&raw, "nope"), None);
        assert_eq!(
            f.decode(&raw[..30], "count"),
            None,
            "short records are refused"
        );
        raw[56..60].copy_from_slice(&((500u32 << 16) | 60).to_ne_bytes());
        assert_eq!(f.decode(&raw, "name"), None, "a bad __data_loc is refused");
    }
}
