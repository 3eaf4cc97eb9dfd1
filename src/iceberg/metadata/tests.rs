//! Unit tests of parsing and edits on small inline documents; the real-file samples are exercised
//! in `tests/metadata/metadata_lossless.rs`.

use std::collections::HashSet;

use serde_json::json;

use super::*;
use crate::iceberg::spec::RefKind;
use crate::{Error, ErrorKind};

fn v2_doc() -> Value {
    json!({
        "format-version": 2,
        "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
        "location": "s3://b/t",
        "last-sequence-number": 2,
        "last-updated-ms": 1000,
        "last-column-id": 1,
        "current-schema-id": 0,
        "schemas": [{"type": "struct", "schema-id": 0, "fields": []}],
        "default-spec-id": 0,
        "partition-specs": [{"spec-id": 0, "fields": [
            {"name": "d", "transform": "day", "source-id": 1, "field-id": 1000}]}],
        "current-snapshot-id": 2,
        "snapshots": [
            {"snapshot-id": 1, "sequence-number": 1, "timestamp-ms": 100,
             "manifest-list": "s3://b/t/metadata/snap-1.avro", "summary": {"operation": "append"}},
            {"snapshot-id": 2, "parent-snapshot-id": 1, "sequence-number": 2, "timestamp-ms": 200,
             "manifest-list": "s3://b/t/metadata/snap-2.avro", "summary": {"operation": "append"}}
        ],
        "refs": {"main": {"snapshot-id": 2, "type": "branch"},
                 "old": {"snapshot-id": 1, "type": "tag", "max-ref-age-ms": 5}},
        "snapshot-log": [{"snapshot-id": 1, "timestamp-ms": 100}, {"snapshot-id": 2, "timestamp-ms": 200}],
        "metadata-log": [],
        "statistics": [{"snapshot-id": 1, "statistics-path": "s3://b/t/metadata/1.stats",
                        "file-size-in-bytes": 10, "file-footer-size-in-bytes": 4, "blob-metadata": []}],
        "partition-statistics": [{"snapshot-id": 2, "statistics-path": "s3://b/t/metadata/2.parquet",
                                  "file-size-in-bytes": 7}]
    })
}

fn parse_value(v: &Value) -> Result<TableMetadata> {
    TableMetadata::parse(v.to_string().as_bytes(), "v7.metadata.json")
}

fn err_of(v: &Value) -> Error {
    match parse_value(v) {
        Ok(_) => panic!("expected an error for {v}"),
        Err(e) => e,
    }
}

#[test]
fn typed_view_of_v2() {
    let m = parse_value(&v2_doc()).unwrap();
    assert_eq!(m.format_version(), FormatVersion::V2);
    assert_eq!(m.current_snapshot().map(|s| s.snapshot_id), Some(2));
    assert_eq!(m.snapshot(2).and_then(|s| s.parent_snapshot_id), Some(1));
    assert_eq!(m.refs().len(), 2);
    assert_eq!(m.ref_named("old").map(|r| r.kind), Some(RefKind::Tag));
    assert_eq!(m.ref_named("old").and_then(|r| r.max_ref_age_ms), Some(5));
    assert_eq!(m.statistics().len(), 2);
    assert!(m.statistics()[1].partition_statistics);
    assert_eq!(
        m.partition_spec(0).map(|s| s.fields[0].transform.as_str()),
        Some("day")
    );
    assert_eq!(m.last_sequence_number(), 2);
}

#[test]
fn errors_name_file_and_field_path() {
    let mut doc = v2_doc();
    doc["snapshots"][1]["timestamp-ms"] = json!("yesterday");
    let e = err_of(&doc);
    assert_eq!(e.kind(), ErrorKind::IncorrectData);
    assert!(e.message().contains("v7.metadata.json"), "{e}");
    assert!(e.message().contains("'snapshots[1].timestamp-ms'"), "{e}");

    let mut doc = v2_doc();
    doc.as_object_mut().unwrap().remove("location");
    assert!(err_of(&doc).message().contains("'location' is missing"));

    let mut doc = v2_doc();
    doc["refs"]["old"]["type"] = json!("label");
    assert!(err_of(&doc).message().contains("'refs.old.type'"));

    let mut doc = v2_doc();
    doc["format-version"] = json!(4);
    assert!(err_of(&doc).message().contains("'format-version' is 4"));
}

#[test]
fn malformed_json_and_non_object_are_errors() {
    for bytes in [&b"{\"format-version\": 2,"[..], b"[]", b"", b"\x1f\x8bxx"] {
        let e = TableMetadata::parse(bytes, "bad.metadata.json").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::IncorrectData);
        assert!(e.message().contains("bad.metadata.json"));
    }
}

#[test]
fn truncated_file_never_panics() {
    let text = v2_doc().to_string();
    for cut in 0..text.len() {
        assert!(TableMetadata::parse(&text.as_bytes()[..cut], "t").is_err());
    }
}

#[test]
fn retain_snapshots_keeps_order_and_objects() {
    let mut m = parse_value(&v2_doc()).unwrap();
    let before = m.json()["snapshots"][1].clone();
    m.retain_snapshots(&HashSet::from([2])).unwrap();
    assert_eq!(m.snapshots().len(), 1);
    assert_eq!(m.json()["snapshots"][0], before);
}

#[test]
fn snapshot_log_trim_keeps_entries_after_last_expired() {
    let mut m = parse_value(&v2_doc()).unwrap();
    m.trim_snapshot_log_after_expired(&HashSet::from([1]))
        .unwrap();
    assert_eq!(
        m.snapshot_log()
            .iter()
            .map(|e| e.snapshot_id)
            .collect::<Vec<_>>(),
        vec![2]
    );
    m.trim_snapshot_log_after_expired(&HashSet::from([2]))
        .unwrap();
    assert!(m.snapshot_log().is_empty());
}

#[test]
fn set_ref_writes_retention_only_when_some_and_keeps_vendor_keys() {
    let mut doc = v2_doc();
    doc["refs"]["old"]["x-vendor"] = json!(true);
    let mut m = parse_value(&doc).unwrap();
    let r = SnapshotRef {
        name: "old".into(),
        kind: RefKind::Branch,
        snapshot_id: 2,
        min_snapshots_to_keep: Some(3),
        max_snapshot_age_ms: None,
        max_ref_age_ms: None,
    };
    m.set_ref(&r).unwrap();
    assert_eq!(
        m.json()["refs"]["old"],
        json!({"snapshot-id": 2, "type": "branch", "x-vendor": true, "min-snapshots-to-keep": 3})
    );
    assert_eq!(m.ref_named("old"), Some(&r));
    let missing = SnapshotRef {
        snapshot_id: 99,
        ..r
    };
    assert_eq!(
        m.set_ref(&missing).unwrap_err().kind(),
        ErrorKind::LogicalError
    );
}

#[test]
fn set_current_snapshot_moves_main_and_logs() {
    let mut m = parse_value(&v2_doc()).unwrap();
    m.set_current_snapshot(Some(1), 300).unwrap();
    assert_eq!(m.current_snapshot_id(), Some(1));
    assert_eq!(m.ref_named("main").map(|r| r.snapshot_id), Some(1));
    assert_eq!(
        m.snapshot_log()
            .last()
            .map(|e| (e.snapshot_id, e.timestamp_ms)),
        Some((1, 300))
    );
    m.set_current_snapshot(None, 400).unwrap();
    assert_eq!(m.json()["current-snapshot-id"], json!(-1));
    assert!(m.ref_named("main").is_none());
}

#[test]
fn metadata_log_append_trims_and_does_not_repeat() {
    let mut m = parse_value(&v2_doc()).unwrap();
    for i in 0..5 {
        m.append_metadata_log(&format!("v{i}.metadata.json"), i, 3)
            .unwrap();
    }
    m.append_metadata_log("v4.metadata.json", 9, 3).unwrap();
    let files: Vec<_> = m
        .metadata_log()
        .iter()
        .map(|e| e.metadata_file.as_str())
        .collect();
    assert_eq!(
        files,
        ["v2.metadata.json", "v3.metadata.json", "v4.metadata.json"]
    );
}

#[test]
fn previous_versions_max_property() {
    let mut m = parse_value(&v2_doc()).unwrap();
    assert_eq!(m.previous_versions_max().unwrap(), 100);
    m.set_property(PREVIOUS_VERSIONS_MAX_PROPERTY, "7").unwrap();
    assert_eq!(m.previous_versions_max().unwrap(), 7);
    m.set_property(PREVIOUS_VERSIONS_MAX_PROPERTY, "many")
        .unwrap();
    assert_eq!(
        m.previous_versions_max().unwrap_err().kind(),
        ErrorKind::BadArguments
    );
    m.remove_property(PREVIOUS_VERSIONS_MAX_PROPERTY).unwrap();
    assert!(m.properties().is_empty());
}

/// `expiry_edit` equals the separate edits applied in turn (the order `new_metadata` used).
#[test]
fn expiry_edit_equals_the_separate_edits() {
    let base = parse_value(&v2_doc()).unwrap();
    type Case<'a> = (&'a [i64], &'a [i64], &'a [&'a str], &'a [i64]);
    let cases: [Case; 4] = [
        (&[2], &[1], &["old"], &[2]),
        (&[1, 2], &[], &[], &[1, 2]),
        (&[2], &[], &["old", "absent"], &[]),
        (&[2], &[1, 9], &[], &[1, 2]),
    ];
    for (keep, expired, refs, stats) in cases {
        let keep: HashSet<i64> = keep.iter().copied().collect();
        let expired: HashSet<i64> = expired.iter().copied().collect();
        let stats: HashSet<i64> = stats.iter().copied().collect();
        let mut stepwise = base.clone();
        stepwise.trim_snapshot_log_after_expired(&expired).unwrap();
        stepwise.remove_refs(refs).unwrap();
        stepwise.retain_snapshots(&keep).unwrap();
        stepwise.retain_statistics(&stats).unwrap();
        let at_once = base.expiry_edit(&keep, &expired, refs, &stats).unwrap();
        assert_eq!(
            at_once.json(),
            stepwise.json(),
            "{keep:?} {expired:?} {refs:?}"
        );
        assert_eq!(at_once.snapshots(), stepwise.snapshots());
        let order: Vec<&String> = at_once.members().keys().collect();
        let base_order: Vec<&String> = base.members().keys().collect();
        assert_eq!(order, base_order, "members keep their order");
    }
}

#[test]
fn statistics_edits() {
    let mut m = parse_value(&v2_doc()).unwrap();
    m.retain_statistics(&HashSet::from([2])).unwrap();
    assert_eq!(m.statistics().len(), 1);
    assert_eq!(m.json()["statistics"], json!([]));
    let stats = StatisticsFile {
        snapshot_id: 2,
        path: "s3://b/t/metadata/2.stats".into(),
        file_size_in_bytes: Some(3),
        partition_statistics: false,
    };
    m.set_statistics(&stats).unwrap();
    assert!(m.statistics().contains(&stats));
    m.remove_statistics(2).unwrap();
    m.remove_partition_statistics(2).unwrap();
    assert!(m.statistics().is_empty());
}

#[test]
fn add_snapshot_per_format_version() {
    let mut m = parse_value(&v2_doc()).unwrap();
    let mut s = m.snapshot(2).cloned().unwrap();
    s.snapshot_id = 3;
    s.parent_snapshot_id = Some(2);
    s.sequence_number = 3;
    m.add_snapshot(&s).unwrap();
    assert_eq!(m.snapshot(3), Some(&s));
    assert_eq!(m.json()["snapshots"][2]["sequence-number"], json!(3));
    assert_eq!(
        m.add_snapshot(&s).unwrap_err().kind(),
        ErrorKind::LogicalError
    );

    let mut doc = v2_doc();
    doc["format-version"] = json!(3);
    let mut m3 = parse_value(&doc).unwrap();
    assert!(m3.add_snapshot(&s).is_err(), "v3 needs row lineage fields");
    s.first_row_id = Some(10);
    s.added_rows = Some(4);
    m3.add_snapshot(&s).unwrap();
    assert_eq!(m3.json()["snapshots"][2]["first-row-id"], json!(10));
}

#[test]
fn failed_edit_leaves_metadata_unchanged() {
    let mut m = parse_value(&v2_doc()).unwrap();
    let before = m.clone();
    assert!(m.set_current_snapshot(Some(42), 1).is_err());
    assert_eq!(m, before);
}

#[test]
fn snapshots_are_written_back_in_place_and_compact() {
    let doc = v2_doc();
    let pretty = serde_json::to_string_pretty(&doc).unwrap();
    let m = TableMetadata::parse(pretty.as_bytes(), "v7.metadata.json").unwrap();
    assert_eq!(
        m.to_json_bytes(),
        doc.to_string().into_bytes(),
        "same as the compact tree"
    );
    let order: Vec<&String> = m.members().keys().collect();
    let original: Vec<&String> = doc.as_object().unwrap().keys().collect();
    assert_eq!(
        order, original,
        "snapshots keep their place among the members"
    );
    assert_eq!(
        m.members()["snapshots"],
        json!([]),
        "members hold only a placeholder"
    );
    assert_eq!(m.json()["snapshots"], doc["snapshots"]);
}

/// A snapshot's summary reads from its text (a slice of the file) when it is plain; a list cut
/// down and repacked moves the summaries with the texts, keeping nothing of the old buffer.
#[test]
fn summaries_are_slices_of_their_snapshot_texts_and_follow_a_repack() {
    let within = |inner: &bytes::Bytes, outer: &bytes::Bytes| {
        let (at, base) = (inner.as_ptr() as usize, outer.as_ptr() as usize);
        at >= base && at + inner.len() <= base + outer.len()
    };
    let mut doc = v2_doc();
    let snapshots: Vec<Value> = (1..=10)
        .map(|id| {
            let note = if id == 4 { "say \"hi\"" } else { "plain" };
            json!({"snapshot-id": id, "timestamp-ms": id, "sequence-number": id,
                   "manifest-list": format!("s3://b/t/metadata/snap-{id}.avro"),
                   "summary": {"operation": "append", "note": note, "added-records": "5"}})
        })
        .collect();
    doc["snapshots"] = Value::Array(snapshots);
    doc["current-snapshot-id"] = json!(10);
    doc["refs"] = json!({"main": {"snapshot-id": 10, "type": "branch"}});
    let source = bytes::Bytes::from(doc.to_string());
    let document = DocumentIn::parse(&source, "v1").unwrap();
    let list =
        SnapshotList::from_texts(&document.snapshots, &source, FormatVersion::V2, "v1").unwrap();
    for (s, text) in list.snapshots().iter().zip(list.items().texts()) {
        let expected = doc["snapshots"][s.snapshot_id as usize - 1]["summary"].clone();
        let map: BTreeMap<String, String> = serde_json::from_value(expected).unwrap();
        assert_eq!(s.summary.to_map(), map);
        assert_eq!(s.operation(), Some("append"));
        match s.summary.held_text() {
            Some(held) => {
                assert!(within(held, text) && within(held, &source));
                assert_ne!(s.snapshot_id, 4);
            }
            None => assert_eq!(s.snapshot_id, 4, "the escaped one is packed"),
        }
    }
    let few = list.retained(|id| id == 2 || id == 4);
    assert_eq!(few.snapshots().len(), 2);
    for (s, text) in few.snapshots().iter().zip(few.items().texts()) {
        assert!(!within(text, &source), "repacked");
        if let Some(held) = s.summary.held_text() {
            assert!(within(held, text) && !within(held, &source), "rebased");
        }
        assert_eq!(s.summary.get("added-records"), Some("5"));
    }
    assert!(few.snapshots()[0].summary.held_text().is_some());
}

#[test]
fn snapshot_text_keeps_numbers_and_unknown_members() {
    let mut doc = v2_doc();
    doc["snapshots"][0]["x-vendor"] = json!({"ratio": 1.50, "big": 12345678901234567890u64});
    let text = doc.to_string().replace("1.5,", "1.50,");
    let m = TableMetadata::parse(text.as_bytes(), "v7.metadata.json").unwrap();
    let out = String::from_utf8(m.to_json_bytes()).unwrap();
    assert!(
        out.contains(r#""x-vendor":{"ratio":1.50,"big":12345678901234567890}"#),
        "{out}"
    );
}

#[test]
fn snapshots_absent_null_or_mistyped() {
    let mut doc = v2_doc();
    let o = doc.as_object_mut().unwrap();
    o.remove("snapshots");
    o.remove("current-snapshot-id");
    o.remove("refs");
    o.remove("statistics");
    o.remove("partition-statistics");
    o.insert("snapshot-log".into(), json!([]));
    let m = parse_value(&doc).unwrap();
    assert!(m.snapshots().is_empty());
    assert!(!m.members().contains_key("snapshots"));
    doc["snapshots"] = Value::Null;
    let m = parse_value(&doc).unwrap();
    assert!(m.snapshots().is_empty());
    assert!(
        String::from_utf8(m.to_json_bytes())
            .unwrap()
            .contains(r#""snapshots":null"#)
    );
    doc["snapshots"] = json!("many");
    assert!(
        err_of(&doc)
            .message()
            .contains("'snapshots' must be an array")
    );
    doc["snapshots"] = json!([7]);
    assert!(
        err_of(&doc)
            .message()
            .contains("'snapshots[0]' must be an object")
    );
}

#[test]
fn a_repeated_snapshots_member_keeps_the_last_value() {
    let doc = v2_doc();
    let text = doc.to_string();
    let doubled = text.replacen('{', r#"{"snapshots":[],"#, 1);
    let m = TableMetadata::parse(doubled.as_bytes(), "v7.metadata.json").unwrap();
    assert_eq!(m.snapshots().len(), 2);
    let first_key = m.members().keys().next().unwrap();
    assert_eq!(
        first_key, "snapshots",
        "first position, last value (serde_json's map)"
    );
}

#[test]
fn adding_a_snapshot_to_a_table_without_any() {
    let mut doc = v2_doc();
    let snapshot = doc["snapshots"][0].clone();
    doc["snapshots"] = Value::Null;
    doc["current-snapshot-id"] = json!(-1);
    let o = doc.as_object_mut().unwrap();
    o.remove("refs");
    o.remove("statistics");
    o.remove("partition-statistics");
    o.insert("snapshot-log".into(), json!([]));
    let mut m = parse_value(&doc).unwrap();
    let typed = parse_value(&v2_doc())
        .unwrap()
        .snapshot(1)
        .cloned()
        .unwrap();
    m.add_snapshot(&typed).unwrap();
    assert_eq!(m.snapshots(), [typed]);
    let back = TableMetadata::parse(&m.to_json_bytes(), "v8.metadata.json").unwrap();
    assert_eq!(back.snapshots(), m.snapshots());
    assert_eq!(
        back.json()["snapshots"][0]["manifest-list"],
        snapshot["manifest-list"]
    );
}

/// The log is held like the snapshots: a placeholder among the members, written back in its
/// place, and each edit writes what the same edit of the whole tree writes.
#[test]
fn snapshot_log_is_held_out_of_the_members_and_written_in_place() {
    let doc = v2_doc();
    let mut m = parse_value(&doc).unwrap();
    assert_eq!(m.members()["snapshot-log"], json!([]));
    assert_eq!(m.json()["snapshot-log"], doc["snapshot-log"]);
    assert_eq!(m.to_json_bytes(), doc.to_string().into_bytes());

    m.set_current_snapshot(Some(1), 300).unwrap();
    let mut expected = doc.clone();
    expected["current-snapshot-id"] = json!(1);
    expected["refs"]["main"]["snapshot-id"] = json!(1);
    expected["snapshot-log"]
        .as_array_mut()
        .unwrap()
        .push(json!({"snapshot-id": 1, "timestamp-ms": 300}));
    assert_eq!(m.to_json_bytes(), expected.to_string().into_bytes());

    m.trim_snapshot_log_after_expired(&HashSet::from([2]))
        .unwrap();
    expected["snapshot-log"] = json!([{"snapshot-id": 1, "timestamp-ms": 300}]);
    assert_eq!(m.to_json_bytes(), expected.to_string().into_bytes());

    let entries = [SnapshotLogEntry {
        snapshot_id: 2,
        timestamp_ms: 7,
    }];
    m.set_snapshot_log(&entries).unwrap();
    expected["snapshot-log"] = json!([{"snapshot-id": 2, "timestamp-ms": 7}]);
    assert_eq!(m.to_json_bytes(), expected.to_string().into_bytes());
    assert_eq!(m.snapshot_log(), entries);
    let back = TableMetadata::parse(&m.to_json_bytes(), m.file()).unwrap();
    assert_eq!(back, m);
}

#[test]
fn snapshot_log_absent_null_or_mistyped() {
    let mut doc = v2_doc();
    doc["snapshot-log"] = Value::Null;
    let mut m = parse_value(&doc).unwrap();
    assert!(m.snapshot_log().is_empty());
    let text = String::from_utf8(m.to_json_bytes()).unwrap();
    assert!(text.contains(r#""snapshot-log":null"#), "{text}");
    m.set_current_snapshot(Some(1), 300).unwrap();
    let text = String::from_utf8(m.to_json_bytes()).unwrap();
    assert!(
        text.contains(r#""snapshot-log":[{"snapshot-id":1,"timestamp-ms":300}]"#),
        "{text}"
    );
    doc.as_object_mut().unwrap().remove("snapshot-log");
    assert!(parse_value(&doc).unwrap().snapshot_log().is_empty());
    for (log, message) in [
        (json!("many"), "'snapshot-log' must be an array"),
        (json!([7]), "'snapshot-log[0]' must be an object"),
        (
            json!([{"snapshot-id": 1, "timestamp-ms": 1}, {"snapshot-id": 2}]),
            "'snapshot-log[1].timestamp-ms'",
        ),
    ] {
        doc["snapshot-log"] = log;
        let e = err_of(&doc);
        assert_eq!(e.kind(), ErrorKind::IncorrectData);
        assert!(e.message().contains(message), "{e}");
    }
}

mod held_props {
    use std::collections::HashSet;

    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::{TableMetadata, v2_doc};

    /// A v2 document with `n` snapshots (some with a vendor member holding escapes and a decimal
    /// written its own way) and a log of `log` entries over them.
    fn doc_of(n: i64, log: &[i64]) -> Value {
        let mut doc = v2_doc();
        let snapshots: Vec<Value> = (1..=n)
            .map(|id| {
                let mut s = json!({"snapshot-id": id, "sequence-number": id, "timestamp-ms": id * 10,
                    "manifest-list": format!("s3://b/t/metadata/snap-{id}.avro"),
                    "summary": {"operation": "append", "added-records": id.to_string()}});
                if id % 3 == 0 {
                    s["x-vendor"] = json!({"note": "caf\u{e9} \"q\" /", "ratio": 0.5});
                }
                if id % 4 == 0 {
                    s["summary"]["note"] = json!("tab\there, caf\u{e9}");
                }
                s
            })
            .collect();
        doc["snapshots"] = Value::Array(snapshots);
        doc["current-snapshot-id"] = json!(n);
        doc["refs"] = json!({"main": {"snapshot-id": n, "type": "branch"}});
        doc["snapshot-log"] = log
            .iter()
            .map(|&id| json!({"timestamp-ms": id * 10, "snapshot-id": id}))
            .collect();
        doc["statistics"] = json!([]);
        doc["partition-statistics"] = json!([]);
        doc
    }

    proptest! {
        /// Whatever the file's layout (compact, pretty, escaped), the document written back is
        /// what serde_json writes for the tree; after an expiry it is the tree's expiry, written so.
        #[test]
        fn written_back_as_the_tree_is(
            n in 1i64..12,
            log in prop::collection::vec(1i64..12, 0..16),
            layout in 0u8..3,
            keep_bits in any::<u16>(),
        ) {
            let log: Vec<i64> = log.into_iter().filter(|&id| id <= n).collect();
            let doc = doc_of(n, &log);
            let text = match layout {
                0 => doc.to_string(),
                1 => serde_json::to_string_pretty(&doc).unwrap(),
                _ => doc.to_string().replace("caf\u{e9}", "caf\\u00e9").replace(" /", " \\/"),
            };
            let m = TableMetadata::parse(text.as_bytes(), "v1.metadata.json").unwrap();
            prop_assert_eq!(m.to_json_bytes(), doc.to_string().into_bytes());
            let again = TableMetadata::parse(&m.to_json_bytes(), "v1.metadata.json").unwrap();
            prop_assert_eq!(&again, &m);
            for s in m.snapshots() {
                let tree = &doc["snapshots"][s.snapshot_id as usize - 1]["summary"];
                let map: std::collections::BTreeMap<String, String> =
                    serde_json::from_value(tree.clone()).unwrap();
                prop_assert_eq!(s.summary.to_map(), map);
            }

            let keep: HashSet<i64> = (1..=n)
                .filter(|id| id == &n || keep_bits & (1 << (id % 16)) != 0)
                .collect();
            let expired: HashSet<i64> = (1..=n).filter(|id| !keep.contains(id)).collect();
            let edited = m.expiry_edit(&keep, &expired, &[], &keep).unwrap();
            let mut tree = doc.clone();
            tree["snapshots"]
                .as_array_mut()
                .unwrap()
                .retain(|s| keep.contains(&s["snapshot-id"].as_i64().unwrap()));
            let entries = tree["snapshot-log"].as_array().unwrap().clone();
            let last_gone = entries
                .iter()
                .rposition(|e| expired.contains(&e["snapshot-id"].as_i64().unwrap()));
            let kept_log: Vec<Value> = entries.into_iter().skip(last_gone.map_or(0, |i| i + 1)).collect();
            tree["snapshot-log"] = Value::Array(kept_log);
            prop_assert_eq!(edited.to_json_bytes(), tree.to_string().into_bytes());
        }
    }
}
