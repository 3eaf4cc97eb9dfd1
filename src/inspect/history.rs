//! The tables read from the metadata file alone:
//!
//! - `system.iceberg_history` — ClickHouse's columns: `made_current_at` (the last `snapshot-log`
//!   time of the snapshot, NULL if never current), `snapshot_id`, `parent_id` (0 when none, as
//!   ClickHouse's UInt64 column), `is_current_ancestor`, `operation` (upper case), `summary`;
//! - `system.iceberg_snapshots` — one row per snapshot with what expiry looks at: sequence number,
//!   time, operation, manifest list, whether it is current, and which refs point at it;
//! - `system.iceberg_refs` — one row per branch or tag with its retention fields.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, Int64Array, MapBuilder, StringArray, StringBuilder, TimestampMillisecondArray,
    UInt8Array, UInt64Array,
};
use datafusion::arrow::datatypes::{DataType, Field, TimeUnit};

use crate::iceberg::metadata::TableMetadata;

/// The timestamp type of every time column: milliseconds since the epoch, UTC (printed in the
/// session's time zone).
pub(crate) fn timestamp_type() -> DataType {
    DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()))
}

/// `Map(String, String)` as Arrow builds it (entries `keys`, `values`).
pub(crate) fn string_map_type() -> DataType {
    let entries = Field::new(
        "entries",
        DataType::Struct(
            vec![
                Field::new("keys", DataType::Utf8, false),
                Field::new("values", DataType::Utf8, true),
            ]
            .into(),
        ),
        false,
    );
    DataType::Map(Arc::new(entries), false)
}

pub(super) fn history_fields() -> Vec<Field> {
    vec![
        Field::new("made_current_at", timestamp_type(), true),
        Field::new("snapshot_id", DataType::UInt64, false),
        Field::new("parent_id", DataType::UInt64, false),
        Field::new("is_current_ancestor", DataType::UInt8, false),
        Field::new("operation", DataType::Utf8, false),
        Field::new("summary", string_map_type(), false),
    ]
}

pub(super) fn snapshot_fields() -> Vec<Field> {
    vec![
        Field::new("snapshot_id", DataType::Int64, false),
        Field::new("parent_id", DataType::Int64, true),
        Field::new("sequence_number", DataType::Int64, false),
        Field::new("timestamp", timestamp_type(), false),
        Field::new("operation", DataType::Utf8, false),
        Field::new("manifest_list", DataType::Utf8, false),
        Field::new("is_current", DataType::UInt8, false),
        Field::new("is_current_ancestor", DataType::UInt8, false),
        Field::new("refs", DataType::Utf8, false),
    ]
}

pub(super) fn ref_fields() -> Vec<Field> {
    vec![
        Field::new("name", DataType::Utf8, false),
        Field::new("type", DataType::Utf8, false),
        Field::new("snapshot_id", DataType::Int64, false),
        Field::new("snapshot_timestamp", timestamp_type(), true),
        Field::new("min_snapshots_to_keep", DataType::Int64, true),
        Field::new("max_snapshot_age_ms", DataType::Int64, true),
        Field::new("max_ref_age_ms", DataType::Int64, true),
    ]
}

/// Snapshot ids on the current snapshot's parent chain (cycle-safe).
fn current_ancestors(m: &TableMetadata) -> HashSet<i64> {
    let parents: HashMap<i64, Option<i64>> = m
        .snapshots()
        .iter()
        .map(|s| (s.snapshot_id, s.parent_snapshot_id))
        .collect();
    let mut seen = HashSet::new();
    let mut next = m.current_snapshot_id();
    while let Some(id) = next {
        if !parents.contains_key(&id) || !seen.insert(id) {
            break;
        }
        next = parents.get(&id).copied().flatten();
    }
    seen
}

/// ClickHouse's `operation` column: the four spec operations upper case, else `UNKNOWN`.
fn operation_upper(op: Option<&str>) -> String {
    match op {
        Some(op @ ("append" | "overwrite" | "delete" | "replace")) => op.to_ascii_uppercase(),
        _ => "UNKNOWN".to_string(),
    }
}

fn timestamps(values: impl Iterator<Item = Option<i64>>) -> ArrayRef {
    Arc::new(TimestampMillisecondArray::from_iter(values).with_timezone("UTC"))
}

fn flags(values: impl Iterator<Item = bool>) -> ArrayRef {
    Arc::new(UInt8Array::from_iter_values(values.map(u8::from)))
}

pub(super) fn history_columns(m: &TableMetadata) -> Vec<ArrayRef> {
    let ancestors = current_ancestors(m);
    let made_current: HashMap<i64, i64> = m
        .snapshot_log()
        .iter()
        .map(|e| (e.snapshot_id, e.timestamp_ms))
        .collect();
    let snaps = m.snapshots();
    let mut summary = MapBuilder::new(None, StringBuilder::new(), StringBuilder::new());
    for s in snaps {
        for (k, v) in s.summary.iter() {
            summary.keys().append_value(k);
            summary.values().append_value(v);
        }
        // Infallible: keys and values were appended in pairs.
        let _ = summary.append(true);
    }
    vec![
        timestamps(
            snaps
                .iter()
                .map(|s| made_current.get(&s.snapshot_id).copied()),
        ),
        Arc::new(UInt64Array::from_iter_values(
            snaps.iter().map(|s| s.snapshot_id as u64),
        )),
        Arc::new(UInt64Array::from_iter_values(
            snaps
                .iter()
                .map(|s| s.parent_snapshot_id.map_or(0, |p| p as u64)),
        )),
        flags(snaps.iter().map(|s| ancestors.contains(&s.snapshot_id))),
        Arc::new(StringArray::from_iter_values(
            snaps.iter().map(|s| operation_upper(s.operation())),
        )),
        Arc::new(summary.finish()),
    ]
}

pub(super) fn snapshot_columns(m: &TableMetadata) -> Vec<ArrayRef> {
    let ancestors = current_ancestors(m);
    let mut refs_of: HashMap<i64, Vec<&str>> = HashMap::new();
    for r in m.refs() {
        refs_of.entry(r.snapshot_id).or_default().push(&r.name);
    }
    let snaps = m.snapshots();
    let refs = snaps.iter().map(|s| {
        let mut names = refs_of.get(&s.snapshot_id).cloned().unwrap_or_default();
        names.sort_unstable();
        names.join(",")
    });
    vec![
        Arc::new(Int64Array::from_iter_values(
            snaps.iter().map(|s| s.snapshot_id),
        )),
        Arc::new(Int64Array::from_iter(
            snaps.iter().map(|s| s.parent_snapshot_id),
        )),
        Arc::new(Int64Array::from_iter_values(
            snaps.iter().map(|s| s.sequence_number),
        )),
        timestamps(snaps.iter().map(|s| Some(s.timestamp_ms))),
        Arc::new(StringArray::from_iter_values(
            snaps.iter().map(|s| s.operation().unwrap_or("")),
        )),
        Arc::new(StringArray::from_iter_values(
            snaps
                .iter()
                .map(|s| s.manifest_list.as_deref().unwrap_or("")),
        )),
        flags(
            snaps
                .iter()
                .map(|s| m.current_snapshot_id() == Some(s.snapshot_id)),
        ),
        flags(snaps.iter().map(|s| ancestors.contains(&s.snapshot_id))),
        Arc::new(StringArray::from_iter_values(refs)),
    ]
}

pub(super) fn ref_columns(m: &TableMetadata) -> Vec<ArrayRef> {
    let refs = m.refs();
    vec![
        Arc::new(StringArray::from_iter_values(refs.iter().map(|r| &r.name))),
        Arc::new(StringArray::from_iter_values(
            refs.iter().map(|r| r.kind.as_str()),
        )),
        Arc::new(Int64Array::from_iter_values(
            refs.iter().map(|r| r.snapshot_id),
        )),
        timestamps(
            refs.iter()
                .map(|r| m.snapshot(r.snapshot_id).map(|s| s.timestamp_ms)),
        ),
        Arc::new(Int64Array::from_iter(
            refs.iter().map(|r| r.min_snapshots_to_keep.map(i64::from)),
        )),
        Arc::new(Int64Array::from_iter(
            refs.iter().map(|r| r.max_snapshot_age_ms),
        )),
        Arc::new(Int64Array::from_iter(refs.iter().map(|r| r.max_ref_age_ms))),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, RecordBatch};
    use datafusion::arrow::datatypes::Schema;

    fn metadata() -> TableMetadata {
        let json = br#"{"format-version":2,"table-uuid":"9c12d441-03fe-4693-9a96-a0705ddf69c1","location":"/t",
            "last-sequence-number":2,"last-updated-ms":2000,"last-column-id":1,"current-schema-id":0,
            "schemas":[{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"x","required":false,"type":"long"}]}],
            "default-spec-id":0,"partition-specs":[{"spec-id":0,"fields":[]}],"last-partition-id":999,
            "default-sort-order-id":0,"sort-orders":[{"order-id":0,"fields":[]}],"properties":{},
            "current-snapshot-id":2,
            "snapshots":[{"snapshot-id":1,"sequence-number":1,"timestamp-ms":1000,"manifest-list":"/t/metadata/a.avro","summary":{"operation":"append"}},
                         {"snapshot-id":2,"parent-snapshot-id":1,"sequence-number":2,"timestamp-ms":2000,"manifest-list":"/t/metadata/b.avro","summary":{"operation":"weird","k'":"a\\b"}}],
            "refs":{"main":{"snapshot-id":2,"type":"branch"},"t1":{"snapshot-id":1,"type":"tag","max-ref-age-ms":5}},
            "snapshot-log":[{"snapshot-id":1,"timestamp-ms":1000}],
            "metadata-log":[]}"#;
        TableMetadata::parse(json, "v2.metadata.json").unwrap()
    }

    /// Every table's columns form a batch of its schema (types, nullability, lengths).
    #[test]
    fn columns_match_their_fields() {
        let m = metadata();
        for (fields, columns) in [
            (history_fields(), history_columns(&m)),
            (snapshot_fields(), snapshot_columns(&m)),
            (ref_fields(), ref_columns(&m)),
        ] {
            let schema = Arc::new(Schema::new(fields));
            let batch = RecordBatch::try_new(schema, columns).unwrap();
            assert_eq!(batch.num_rows(), 2);
        }
    }

    #[test]
    fn history_rows_say_what_clickhouse_says() {
        let cols = history_columns(&metadata());
        let made = cols[0]
            .as_any()
            .downcast_ref::<TimestampMillisecondArray>()
            .unwrap();
        assert_eq!(made.value(0), 1000);
        assert!(made.is_null(1), "snapshot 2 was never in the snapshot log");
        let parent = cols[2].as_any().downcast_ref::<UInt64Array>().unwrap();
        assert_eq!((parent.value(0), parent.value(1)), (0, 1));
        let op = cols[4].as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!((op.value(0), op.value(1)), ("APPEND", "UNKNOWN"));
    }

    #[test]
    fn snapshot_rows_name_their_refs() {
        let cols = snapshot_columns(&metadata());
        let refs = cols[8].as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!((refs.value(0), refs.value(1)), ("t1", "main"));
        let current = cols[6].as_any().downcast_ref::<UInt8Array>().unwrap();
        assert_eq!((current.value(0), current.value(1)), (0, 1));
    }
}
