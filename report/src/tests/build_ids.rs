//! Whether the object on disk is the one sampled: the build id the log's
//! reader was given decides where there is one, else the modification
//! time against the log's last write; a status change (ctime) never does.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use object::Object;

use super::{log_with, own_text_mapping, report_crate_test_target};
use crate::{Profile, ProfileOptions};
use pmc::log::{LogEvent, LogRecord};

fn own_path() -> String {
    std::env::current_exe().unwrap().display().to_string()
}

fn own_build_id() -> Vec<u8> {
    let data = std::fs::read(own_path()).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let id = file
        .build_id()
        .unwrap()
        .expect("the test binary has a build id");
    id.to_vec()
}

/// The leaf's name for a log of one sample in this binary, and the notes.
fn leaf(options: &ProfileOptions) -> (String, Vec<String>) {
    let (start, _) = own_text_mapping();
    let pc = report_crate_test_target as *const () as usize as u64 + 1;
    let profile = Profile::from_events_with(&log_with(start, None, vec![pc]), options);
    let leaf = profile.locations[profile.stack(&profile.samples[0])[0] as usize]
        .function()
        .to_string();
    (leaf, profile.debug_notes)
}

/// A log written long before the binary was built: by its times alone,
/// the binary is another build.
fn written_at_the_epoch(build_ids: HashMap<String, Vec<u8>>) -> ProfileOptions {
    ProfileOptions {
        recorded_until: Some(SystemTime::UNIX_EPOCH),
        build_ids,
        ..ProfileOptions::default()
    }
}

#[test]
fn a_matching_build_id_names_the_object_whatever_its_times() {
    let ids = HashMap::from([(own_path(), own_build_id())]);
    let (name, notes) = leaf(&written_at_the_epoch(ids));
    assert!(
        name.contains("report_crate_test_target"),
        "{name} {notes:?}"
    );
}

#[test]
fn another_build_id_leaves_the_object_unnamed_and_says_why() {
    let mut other = own_build_id();
    other[0] ^= 0xff;
    let options = ProfileOptions {
        // Times alone would name it: the log is newer than the binary.
        recorded_until: Some(SystemTime::now() + Duration::from_secs(3600)),
        build_ids: HashMap::from([(own_path(), other)]),
        ..ProfileOptions::default()
    };
    let (name, notes) = leaf(&options);
    let base = own_path().rsplit('/').next().unwrap().to_string();
    assert!(name.starts_with(&format!("{base}+0x")), "{name}");
    assert!(
        notes
            .iter()
            .any(|n| n.contains("is not the one the log recorded")),
        "{notes:?}"
    );
}

#[test]
fn without_a_build_id_a_later_modification_leaves_it_unnamed() {
    let (name, notes) = leaf(&written_at_the_epoch(HashMap::new()));
    assert!(!name.contains("report_crate_test_target"), "{name}");
    assert!(
        notes
            .iter()
            .any(|n| n.contains("changed on disk after the log was written")),
        "{notes:?}"
    );
}

#[test]
fn a_status_change_after_the_log_keeps_the_names() {
    // A copy of this binary, the caller's own (the binary may be another
    // user's: the privilege matrix runs the tests as nobody), mapped where
    // this one is: the same content, so the same names.
    let dir = std::env::temp_dir().join(format!("pmc-report-status-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join("copy");
    std::fs::copy(own_path(), &copy).unwrap();
    let log_written = SystemTime::now();
    std::thread::sleep(Duration::from_millis(20));
    // chmod to the mode it has: the inode's ctime moves, its content not.
    let mode = std::fs::metadata(&copy).unwrap().permissions();
    std::fs::set_permissions(&copy, mode).unwrap();
    let options = ProfileOptions {
        recorded_until: Some(log_written),
        ..ProfileOptions::default()
    };
    let (start, _) = own_text_mapping();
    let pc = report_crate_test_target as *const () as usize as u64 + 1;
    let events: Vec<LogEvent> = log_with(start, None, vec![pc])
        .into_iter()
        .map(|mut e| {
            if let LogRecord::MapIn { path, .. } = &mut e.record {
                *path = copy.display().to_string();
            }
            e
        })
        .collect();
    let profile = Profile::from_events_with(&events, &options);
    let name = profile.locations[profile.stack(&profile.samples[0])[0] as usize].function();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        name.contains("report_crate_test_target"),
        "{name} {:?}",
        profile.debug_notes
    );
}
