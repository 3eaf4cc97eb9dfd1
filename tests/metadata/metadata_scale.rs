//! Metadata of a long-lived table (10,000 snapshots): parsing and an expiry's edits stay fast,
//! because edits rebuild the typed view a handful of times, not per snapshot.

use crate::support::metadata as metadata_support;

use std::collections::HashSet;
use std::time::Instant;

use icetrim::internals::iceberg::metadata::TableMetadata;
use metadata_support::*;

#[test]
fn ten_thousand_snapshots() {
    let ids: Vec<i64> = (1..=10_000).collect();
    let mut value = doc("s3://b/t", UUID_A, 1, &ids);
    value["snapshot-log"] = ids
        .iter()
        .map(|id| serde_json::json!({"snapshot-id": id, "timestamp-ms": id}))
        .collect();
    let bytes = value.to_string().into_bytes();

    let start = Instant::now();
    let mut m = TableMetadata::parse(&bytes, "big.metadata.json").expect("parses");
    let parsed = start.elapsed();
    let expired: HashSet<i64> = ids
        .iter()
        .copied()
        .filter(|id| id % 2 == 0 && *id < 9_000)
        .collect();
    let keep: HashSet<i64> = ids
        .iter()
        .copied()
        .filter(|id| !expired.contains(id))
        .collect();
    let start = Instant::now();
    m.retain_snapshots(&keep).expect("retain");
    m.trim_snapshot_log_after_expired(&expired).expect("log");
    m.retain_statistics(&keep).expect("stats");
    m.append_metadata_log("s3://b/t/metadata/v1.metadata.json", 1, 100)
        .expect("log");
    m.set_last_updated_ms(2).expect("ts");
    let out = m.to_json_bytes();
    let edited = start.elapsed();
    eprintln!(
        "{} KiB: parse {parsed:?}, expiry edits + serialise {edited:?}",
        bytes.len() / 1024
    );
    assert_eq!(m.snapshots().len(), keep.len());
    assert_eq!(
        m.snapshot_log().len(),
        1_002,
        "entries after the last expired one (8998)"
    );
    assert!(m.snapshot(9_999).is_some() && m.snapshot(2).is_none());
    assert!(!out.is_empty());
    assert!(
        parsed.as_secs() < 5 && edited.as_secs() < 10,
        "too slow: {parsed:?} {edited:?}"
    );
}
