//! Whether the object on disk is the one a log sampled: pmclog names
//! objects by path, so a file rebuilt or upgraded since would lend its
//! names to another build's pcs. What identifies the content decides:
//! the build id where the log's reader knows the one recorded
//! ([`crate::ProfileOptions::build_ids`]), else the file's modification
//! time against the log's last write. Status changes (the ctime a
//! `chmod`, a hard link, perf's `~/.debug` cache or a backup tool sets)
//! leave the content as it was and do not count.

use std::collections::HashMap;
use std::time::SystemTime;

use object::Object;
use pmc_unwind::ObjectFile;

use super::debuginfo::hex;

/// What a log says of the objects it sampled.
#[derive(Clone, Debug, Default)]
pub(crate) struct Recorded {
    /// When the log was last written.
    pub(crate) until: Option<SystemTime>,
    /// Object path as the log names it → its build id when sampled.
    pub(crate) build_ids: HashMap<String, Vec<u8>>,
}

impl Recorded {
    /// `Ok` when `file` (the object the log names `logged`) may name the
    /// log's pcs; else why not, for `-v`.
    pub(crate) fn check(&self, logged: &str, file: &ObjectFile) -> Result<(), String> {
        if let Some(want) = self.build_ids.get(logged) {
            let have = object::File::parse(file)
                .ok()
                .and_then(|f| f.build_id().ok().flatten().map(<[u8]>::to_vec));
            return match have {
                Some(have) if have == *want => Ok(()),
                Some(have) => Err(format!(
                    "its build id {} is not the one the log recorded ({}): another build",
                    hex(&have),
                    hex(want)
                )),
                None => Err(format!(
                    "it has no build id, and the log recorded {}: another build",
                    hex(want)
                )),
            };
        }
        if let Some(until) = self.until
            && let Ok(modified) = file.metadata().modified()
            && modified > until
        {
            return Err(
                "changed on disk after the log was written (its modification time is later, \
                 and the log recorded no build id to tell the builds apart)"
                    .to_string(),
            );
        }
        Ok(())
    }
}
