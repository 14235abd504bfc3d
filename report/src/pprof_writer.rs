//! pprof's `profile.proto` (github.com/google/pprof `proto/profile.proto`),
//! gzipped, with a small hand encoder of its few messages.
//!
//! Per event `E` two sample types: `E`/`samples` (the sample count, the
//! default) and `E_events`/`events` (samples × period; the period is 1
//! when unknown). Locations
//! carry their mapping (with build id) and one line per frame, inlined
//! callee first, as the proto asks. Samples carry `pid`, `tid` and `cpu`
//! labels.

use std::collections::HashMap;
use std::io::Write as _;

use crate::{Error, Profile, Result};

/// Protobuf wire types.
const VARINT: u64 = 0;
const LEN: u64 = 2;

#[derive(Default)]
struct Msg(Vec<u8>);

impl Msg {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }
    fn key(&mut self, field: u64, wire: u64) {
        self.varint(field << 3 | wire);
    }
    /// An int64/uint64 field (omitted when 0, as proto3 does).
    fn int(&mut self, field: u64, v: u64) {
        if v != 0 {
            self.key(field, VARINT);
            self.varint(v);
        }
    }
    fn boolean(&mut self, field: u64, v: bool) {
        self.int(field, u64::from(v));
    }
    fn bytes(&mut self, field: u64, b: &[u8]) {
        self.key(field, LEN);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }
    fn msg(&mut self, field: u64, m: Msg) {
        self.bytes(field, &m.0);
    }
    fn packed(&mut self, field: u64, vs: &[u64]) {
        let mut p = Msg::default();
        for v in vs {
            p.varint(*v);
        }
        self.bytes(field, &p.0);
    }
}

/// Interned strings; index 0 is "" as the proto requires.
struct Strings {
    table: Vec<String>,
    index: HashMap<String, u64>,
}

impl Strings {
    fn new() -> Strings {
        Strings {
            table: vec![String::new()],
            index: HashMap::from([(String::new(), 0)]),
        }
    }
    fn id(&mut self, s: &str) -> u64 {
        if let Some(i) = self.index.get(s) {
            return *i;
        }
        let i = self.table.len() as u64;
        self.table.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }
}

/// The encoded (not compressed) `Profile` message.
pub fn pprof_uncompressed(profile: &Profile) -> Vec<u8> {
    let mut strings = Strings::new();
    let mut p = Msg::default();
    // sample_type = 1: per event, samples then events.
    let mut value_types = Vec::new();
    for e in &profile.events {
        value_types.push((e.name.clone(), "samples"));
        value_types.push((format!("{}_events", e.name), "events"));
    }
    for (ty, unit) in &value_types {
        let mut vt = Msg::default();
        vt.int(1, strings.id(ty));
        vt.int(2, strings.id(unit));
        p.msg(1, vt);
    }
    let nvalues = value_types.len();
    // sample = 2.
    for s in &profile.samples {
        let mut m = Msg::default();
        let ids: Vec<u64> = profile.stack(s).iter().map(|&l| u64::from(l) + 1).collect();
        m.packed(1, &ids);
        let mut values = vec![0u64; nvalues];
        values[2 * s.event] = s.count;
        values[2 * s.event + 1] = s.count * profile.events[s.event].period.unwrap_or(1);
        m.packed(2, &values);
        for (key, v) in [
            ("pid", u64::from(s.pid)),
            ("tid", u64::from(s.tid)),
            ("cpu", u64::from(s.cpu)),
        ] {
            let mut label = Msg::default();
            label.int(1, strings.id(key));
            label.int(3, v);
            // pprof drops a numeric label whose num and num_unit are both
            // 0 (proto3 cannot tell 0 from absent): a unit keeps cpu 0.
            label.int(4, strings.id("id"));
            m.msg(3, label);
        }
        p.msg(2, m);
    }
    // mapping = 3: distinct mappings of the locations.
    let mut mapping_ids: HashMap<*const crate::Mapping, u64> = HashMap::new();
    for loc in &profile.locations {
        let Some(mapping) = &loc.resolved.mapping else {
            continue;
        };
        let key = std::sync::Arc::as_ptr(mapping);
        if mapping_ids.contains_key(&key) {
            continue;
        }
        let id = mapping_ids.len() as u64 + 1;
        mapping_ids.insert(key, id);
        let mut m = Msg::default();
        m.int(1, id);
        m.int(2, mapping.memory_start);
        m.int(3, mapping.memory_limit);
        m.int(4, mapping.file_offset);
        m.int(5, strings.id(&mapping.path));
        if let Some(b) = &mapping.build_id {
            m.int(6, strings.id(b));
        }
        m.boolean(7, true);
        m.boolean(8, true);
        m.boolean(9, true);
        m.boolean(10, true);
        p.msg(3, m);
    }
    // location = 4, function = 5.
    let mut function_ids: HashMap<(String, Option<String>), u64> = HashMap::new();
    let mut functions = Vec::new();
    for (i, loc) in profile.locations.iter().enumerate() {
        let mut m = Msg::default();
        m.int(1, i as u64 + 1);
        if let Some(mapping) = &loc.resolved.mapping {
            m.int(2, mapping_ids[&std::sync::Arc::as_ptr(mapping)]);
        }
        m.int(3, loc.address);
        for f in &loc.resolved.frames {
            let key = (f.function.clone(), f.file.clone());
            let next = function_ids.len() as u64 + 1;
            let fid = *function_ids.entry(key).or_insert_with(|| {
                let mut fm = Msg::default();
                fm.int(1, next);
                fm.int(2, strings.id(&f.function));
                fm.int(3, strings.id(&f.function));
                if let Some(file) = &f.file {
                    fm.int(4, strings.id(file));
                }
                functions.push(fm);
                next
            });
            let mut line = Msg::default();
            line.int(1, fid);
            line.int(2, u64::from(f.line.unwrap_or(0)));
            m.msg(4, line);
        }
        p.msg(4, m);
    }
    for f in functions {
        p.msg(5, f);
    }
    // period_type = 11, period = 12: the first event's.
    if let Some(e) = profile.events.first() {
        let mut vt = Msg::default();
        vt.int(1, strings.id(&format!("{}_events", e.name)));
        vt.int(2, strings.id("events"));
        let period_type = vt;
        let period = e.period.unwrap_or(1);
        // default_sample_type = 14: the first event's sample count.
        let default_type = strings.id(&e.name);
        for s in &strings.table {
            p.bytes(6, s.as_bytes());
        }
        p.msg(11, period_type);
        p.int(12, period);
        p.int(14, default_type);
    } else {
        for s in &strings.table {
            p.bytes(6, s.as_bytes());
        }
    }
    p.0
}

/// The profile as a gzipped `profile.proto`, written to `out`.
pub fn pprof(profile: &Profile, out: impl std::io::Write) -> Result<()> {
    let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::default());
    gz.write_all(&pprof_uncompressed(profile))
        .and_then(|()| gz.finish().map(drop))
        .map_err(|e| Error::write("the pprof profile", e))
}
