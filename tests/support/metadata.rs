//! Helpers shared by the `metadata_*` integration tests: tiny tables written straight to a store.

#![allow(dead_code)]

use bytes::Bytes;
use icetrim::internals::io::FileIO;
use serde_json::{Value, json};

pub const UUID_A: &str = "aaaaaaaa-0000-4000-8000-000000000001";
pub const UUID_B: &str = "bbbbbbbb-0000-4000-8000-000000000002";

/// Both stores the tests run on, each with a table location inside it.
pub fn stores() -> Vec<(FileIO, String, Option<tempfile::TempDir>)> {
    let dir = tempfile::tempdir().expect("tempdir");
    let local = format!("{}/t", dir.path().display());
    vec![
        (FileIO::local(), local, Some(dir)),
        (FileIO::memory(), "memory://bucket/t".to_string(), None),
    ]
}

/// A minimal v2 metadata document with one snapshot per id in `snapshots`.
pub fn doc(location: &str, uuid: &str, last_updated_ms: i64, snapshots: &[i64]) -> Value {
    let snaps: Vec<Value> = snapshots
        .iter()
        .enumerate()
        .map(|(i, id)| {
            json!({"snapshot-id": id, "sequence-number": i + 1, "timestamp-ms": 1000 + i as i64,
                   "manifest-list": format!("{location}/metadata/snap-{id}.avro"),
                   "summary": {"operation": "append"}})
        })
        .collect();
    let current = snapshots.last().copied().unwrap_or(-1);
    json!({
        "format-version": 2, "table-uuid": uuid, "location": location,
        "last-sequence-number": snapshots.len(), "last-updated-ms": last_updated_ms,
        "last-column-id": 0, "current-schema-id": 0,
        "schemas": [{"type": "struct", "schema-id": 0, "fields": []}],
        "default-spec-id": 0, "partition-specs": [{"spec-id": 0, "fields": []}],
        "current-snapshot-id": current,
        "refs": {"main": {"snapshot-id": current, "type": "branch"}},
        "snapshots": snaps, "snapshot-log": [], "metadata-log": [],
        "x-vendor": {"keep": 1.0}
    })
}

pub async fn put(io: &FileIO, path: &str, bytes: Vec<u8>) {
    io.overwrite(path, Bytes::from(bytes))
        .await
        .expect("write fixture");
}

pub async fn put_doc(io: &FileIO, location: &str, name: &str, value: &Value) {
    put(
        io,
        &format!("{location}/metadata/{name}"),
        value.to_string().into_bytes(),
    )
    .await;
}

pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).expect("gzip");
    e.finish().expect("gzip")
}
