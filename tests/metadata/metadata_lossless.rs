//! Lossless round trips of every sample under `tests/data/metadata/` (real pyiceberg and ClickHouse
//! files plus hand-made edge cases), edits that touch only their own fields, and errors that name
//! the file and the JSON field path.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use icetrim::ErrorKind;
use icetrim::internals::iceberg::metadata::{MetadataCompression, TableMetadata};
use icetrim::internals::iceberg::spec::{FormatVersion, RefKind};
use serde_json::{Map, Value};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/metadata")
}

/// (file name, bytes) of samples whose name starts with `prefix` (or all good ones for "").
fn samples(good: bool) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<_> = std::fs::read_dir(data_dir())
        .expect("tests/data/metadata exists")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("bad-") != good)
        })
        .map(|p| {
            let name = p
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            (name, std::fs::read(&p).expect("readable sample"))
        })
        .collect();
    out.sort();
    assert!(
        out.len() >= 5,
        "samples missing in {}",
        data_dir().display()
    );
    out
}

/// The original file's JSON, re-serialised compactly (order and number text kept).
fn canonical(bytes: &[u8]) -> String {
    let v: Value = serde_json::from_slice(bytes).expect("sample is JSON");
    serde_json::to_string(&v).expect("serialises")
}

fn object(bytes: &[u8]) -> Map<String, Value> {
    match serde_json::from_slice(bytes).expect("JSON") {
        Value::Object(m) => m,
        _ => panic!("not an object"),
    }
}

/// Keys whose values differ, or whose position changed, between two objects.
fn changed_keys(a: &Map<String, Value>, b: &Map<String, Value>) -> Vec<String> {
    let mut keys: Vec<String> = a
        .iter()
        .filter(|(k, v)| b.get(*k).map(|w| w.to_string()) != Some(v.to_string()))
        .map(|(k, _)| k.clone())
        .chain(b.keys().filter(|k| !a.contains_key(*k)).cloned())
        .collect();
    let common_a: Vec<_> = a.keys().filter(|k| b.contains_key(*k)).collect();
    let common_b: Vec<_> = b.keys().filter(|k| a.contains_key(*k)).collect();
    if common_a != common_b {
        keys.push("<order>".into());
    }
    keys.sort();
    keys.dedup();
    keys
}

#[test]
fn every_sample_round_trips_byte_for_byte_as_json() {
    for (name, bytes) in samples(true) {
        let m = TableMetadata::parse(&bytes, &name).unwrap_or_else(|e| panic!("{name}: {e}"));
        let out = String::from_utf8(m.to_json_bytes()).expect("utf8");
        assert_eq!(out, canonical(&bytes), "{name} changed on round trip");
    }
}

#[test]
fn gzip_samples_round_trip() {
    for (name, bytes) in samples(true) {
        for compression in [
            MetadataCompression::GzipInfix,
            MetadataCompression::GzipSuffix,
        ] {
            let m = TableMetadata::parse(&bytes, &name).expect("parses");
            let packed = m.to_file_bytes(compression).expect("gzip");
            let gz_name = format!("v1{}", compression.file_suffix());
            let back = TableMetadata::parse(&packed, &gz_name).expect("gunzips");
            assert_eq!(back.to_json_bytes(), m.to_json_bytes(), "{name}");
        }
    }
}

#[test]
fn one_edit_changes_one_field() {
    for (name, bytes) in samples(true) {
        let original = object(&bytes);
        let mut m = TableMetadata::parse(&bytes, &name).expect("parses");
        m.set_last_updated_ms(42).expect("edit");
        let edited = object(&m.to_json_bytes());
        assert_eq!(
            changed_keys(&original, &edited),
            ["last-updated-ms"],
            "{name}"
        );
        assert_eq!(edited["last-updated-ms"], Value::from(42));

        let mut m = TableMetadata::parse(&bytes, &name).expect("parses");
        m.set_property("icetrim.test", "1").expect("edit");
        let edited = object(&m.to_json_bytes());
        assert_eq!(changed_keys(&original, &edited), ["properties"], "{name}");
    }
}

#[test]
fn expiry_edits_touch_only_their_fields_and_keep_kept_snapshots_verbatim() {
    for (name, bytes) in samples(true) {
        let original = object(&bytes);
        let mut m = TableMetadata::parse(&bytes, &name).expect("parses");
        let Some(oldest) = m.snapshots().first().map(|s| s.snapshot_id) else {
            continue;
        };
        let keep: HashSet<i64> = m
            .snapshots()
            .iter()
            .map(|s| s.snapshot_id)
            .filter(|&id| id != oldest)
            .collect();
        let doomed_refs: Vec<String> = m
            .refs()
            .iter()
            .filter(|r| r.snapshot_id == oldest)
            .map(|r| r.name.clone())
            .collect();
        m.retain_snapshots(&keep).expect("retain");
        m.remove_refs(&doomed_refs).expect("refs");
        m.trim_snapshot_log_after_expired(&HashSet::from([oldest]))
            .expect("log");
        m.retain_statistics(&keep).expect("stats");
        let edited = object(&m.to_json_bytes());
        let allowed = [
            "snapshots",
            "refs",
            "snapshot-log",
            "statistics",
            "partition-statistics",
            "<order>",
        ];
        for key in changed_keys(&original, &edited) {
            assert!(allowed.contains(&key.as_str()), "{name}: {key} changed");
        }
        assert!(
            !changed_keys(&original, &edited).contains(&"<order>".to_string()),
            "{name}"
        );
        let kept_before: Vec<String> = original["snapshots"]
            .as_array()
            .expect("array")
            .iter()
            .filter(|s| s["snapshot-id"].as_i64() != Some(oldest))
            .map(Value::to_string)
            .collect();
        let kept_after: Vec<String> = edited["snapshots"]
            .as_array()
            .expect("array")
            .iter()
            .map(Value::to_string)
            .collect();
        assert_eq!(kept_before, kept_after, "{name}");
        assert!(m.snapshot(oldest).is_none());
        assert!(m.snapshot_log().iter().all(|e| e.snapshot_id != oldest));
    }
}

#[test]
fn typed_views_of_real_files() {
    let load = |prefix: &str| {
        let (name, bytes) = samples(true)
            .into_iter()
            .rfind(|(n, _)| n.starts_with(prefix))
            .unwrap_or_else(|| panic!("no sample {prefix}"));
        TableMetadata::parse(&bytes, &name).expect("parses")
    };
    let py1 = load("pyiceberg-v1-00007");
    assert_eq!(py1.format_version(), FormatVersion::V1);
    assert_eq!(py1.snapshots().len(), 4);
    assert_eq!(
        py1.ref_named("audit").and_then(|r| r.min_snapshots_to_keep),
        Some(2)
    );
    assert_eq!(
        py1.ref_named("v1-release").map(|r| r.kind),
        Some(RefKind::Tag)
    );
    assert_eq!(
        py1.property("history.expire.min-snapshots-to-keep"),
        Some("3")
    );
    assert_eq!(py1.metadata_log().len(), 7);

    let ch3 = load("clickhouse-v3-v4");
    assert_eq!(ch3.format_version(), FormatVersion::V3);
    assert_eq!(ch3.next_row_id(), Some(4));
    assert_eq!(
        ch3.snapshots()[0].parent_snapshot_id,
        None,
        "-1 parent is none"
    );
    assert_eq!(ch3.snapshots()[2].first_row_id, Some(4));
    assert_eq!(
        ch3.current_snapshot().map(|s| s.operation()),
        Some(Some("overwrite"))
    );

    let empty = load("clickhouse-v3-v1");
    assert_eq!(empty.current_snapshot_id(), None);
    assert!(empty.refs().is_empty(), "main at -1 is no ref");

    let legacy = load("edge-v1-no-refs-legacy");
    assert_eq!(legacy.refs().len(), 1, "implicit main");
    assert_eq!(legacy.ref_named("main").map(|r| r.snapshot_id), Some(2));
    assert_eq!(legacy.current_schema_id(), 3);
    assert_eq!(legacy.partition_specs()[0].fields[0].field_id, 1000);
    assert_eq!(legacy.table_uuid(), None);

    let inline = load("edge-v1-inline-manifests");
    assert_eq!(inline.snapshots()[0].manifest_list, None);
    assert_eq!(inline.snapshots()[0].manifests.len(), 2);

    let edge = load("edge-v2-vendor-keys-bigints");
    assert_eq!(edge.current_snapshot_id(), Some(i64::MAX));
    assert_eq!(edge.snapshots()[1].parent_snapshot_id, Some(i64::MIN));
    assert_eq!(edge.snapshots()[0].summary.get("x-count"), Some("3"));
    assert_eq!(edge.previous_versions_max().expect("valid"), 2);
    assert_eq!(edge.default_spec_id(), 1);
}

#[test]
fn bad_samples_name_file_and_field() {
    let expected = [
        ("bad-float-snapshot-id", "'current-snapshot-id'"),
        ("bad-format-version-4", "'format-version' is 4"),
        ("bad-missing-location", "'location' is missing"),
        (
            "bad-missing-snapshot-timestamp",
            "'snapshots[1].timestamp-ms' is missing",
        ),
        (
            "bad-wrong-type-last-updated",
            "'last-updated-ms' must be an integer, got a string",
        ),
    ];
    let bad = samples(false);
    assert_eq!(bad.len(), expected.len());
    for (name, bytes) in bad {
        let err = TableMetadata::parse(&bytes, &name).expect_err(&name);
        assert_eq!(err.kind(), ErrorKind::IncorrectData, "{name}");
        assert!(err.message().contains(&name), "{err}");
        let (_, needle) = expected
            .iter()
            .find(|(prefix, _)| name.starts_with(prefix))
            .unwrap_or_else(|| panic!("unexpected sample {name}"));
        assert!(err.message().contains(needle), "{name}: {err}");
    }
}

#[test]
fn mangled_samples_never_panic() {
    for (name, bytes) in samples(true) {
        let text = String::from_utf8(bytes).expect("utf8");
        // Replace each number, string and bracket position in turn with a wrong token.
        for (i, _) in text.char_indices().step_by(7) {
            for junk in ["\"x\"", "-1", "null", "{}", "[]", "1.5"] {
                let mangled = format!("{}{junk}{}", &text[..i], &text[i..]);
                let _ = TableMetadata::parse(mangled.as_bytes(), &name);
            }
        }
    }
}
