//! Tables read from the metadata file alone, pyiceberg's `inspect` columns:
//!
//! - `system.iceberg_properties` — `key`, `value` of every table property;
//! - `system.iceberg_metadata_log_entries` — the `metadata-log` plus the current metadata file
//!   (at `last-updated-ms`), each with the snapshot that was current at its time (the newest
//!   `snapshot-log` entry at or before it: its id, schema id and sequence number). As pyiceberg
//!   does, the logged metadata files themselves are not read: they may be gone, and the current
//!   snapshot log answers for the snapshots it still lists.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, Int32Array, Int64Array, StringArray, TimestampMillisecondArray,
};
use datafusion::arrow::datatypes::{DataType, Field};

use super::history::timestamp_type;
use crate::iceberg::metadata::TableMetadata;
use crate::iceberg::spec::Snapshot;

pub(super) fn properties_fields() -> Vec<Field> {
    vec![
        Field::new("key", DataType::Utf8, false),
        Field::new("value", DataType::Utf8, false),
    ]
}

pub(super) fn properties_columns(m: &TableMetadata) -> Vec<ArrayRef> {
    let p = m.properties();
    vec![
        Arc::new(StringArray::from_iter_values(p.keys())),
        Arc::new(StringArray::from_iter_values(p.values())),
    ]
}

pub(super) fn metadata_log_fields() -> Vec<Field> {
    vec![
        Field::new("timestamp", timestamp_type(), false),
        Field::new("file", DataType::Utf8, false),
        Field::new("latest_snapshot_id", DataType::Int64, true),
        Field::new("latest_schema_id", DataType::Int32, true),
        Field::new("latest_sequence_number", DataType::Int64, true),
    ]
}

/// The snapshot current at `at_ms` by the snapshot log.
fn current_at(m: &TableMetadata, at_ms: i64) -> Option<&Snapshot> {
    let entry = m
        .snapshot_log()
        .iter()
        .rev()
        .find(|e| e.timestamp_ms <= at_ms)?;
    m.snapshot(entry.snapshot_id)
}

/// `current_file`: where the newest metadata was read from (else the file name it was parsed as).
pub(super) fn metadata_log_columns(m: &TableMetadata, current_file: &str) -> Vec<ArrayRef> {
    let mut rows: Vec<(i64, &str)> = m
        .metadata_log()
        .iter()
        .map(|e| (e.timestamp_ms, e.metadata_file.as_str()))
        .collect();
    rows.push((m.last_updated_ms(), current_file));
    let latest: Vec<Option<&Snapshot>> = rows.iter().map(|(t, _)| current_at(m, *t)).collect();
    vec![
        Arc::new(
            TimestampMillisecondArray::from_iter_values(rows.iter().map(|(t, _)| *t))
                .with_timezone("UTC"),
        ),
        Arc::new(StringArray::from_iter_values(rows.iter().map(|(_, f)| *f))),
        Arc::new(Int64Array::from_iter(
            latest.iter().map(|s| s.map(|s| s.snapshot_id)),
        )),
        Arc::new(Int32Array::from_iter(
            latest.iter().map(|s| s.and_then(|s| s.schema_id)),
        )),
        Arc::new(Int64Array::from_iter(
            latest.iter().map(|s| s.map(|s| s.sequence_number)),
        )),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, RecordBatch};
    use datafusion::arrow::datatypes::Schema;

    fn metadata() -> TableMetadata {
        let json = br#"{"format-version":2,"table-uuid":"9c12d441-03fe-4693-9a96-a0705ddf69c1","location":"/t",
            "last-sequence-number":2,"last-updated-ms":3000,"last-column-id":1,"current-schema-id":0,
            "schemas":[{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"x","required":false,"type":"long"}]}],
            "default-spec-id":0,"partition-specs":[{"spec-id":0,"fields":[]}],"last-partition-id":999,
            "default-sort-order-id":0,"sort-orders":[{"order-id":0,"fields":[]}],"properties":{"b":"2","a":"1"},
            "current-snapshot-id":2,
            "snapshots":[{"snapshot-id":1,"sequence-number":1,"timestamp-ms":1000,"manifest-list":"/t/metadata/a.avro","summary":{"operation":"append"},"schema-id":0},
                         {"snapshot-id":2,"parent-snapshot-id":1,"sequence-number":2,"timestamp-ms":2000,"manifest-list":"/t/metadata/b.avro","summary":{"operation":"append"}}],
            "snapshot-log":[{"snapshot-id":1,"timestamp-ms":1000},{"snapshot-id":2,"timestamp-ms":2000}],
            "metadata-log":[{"metadata-file":"/t/metadata/v0.metadata.json","timestamp-ms":500},
                            {"metadata-file":"/t/metadata/v1.metadata.json","timestamp-ms":1500}]}"#;
        TableMetadata::parse(json, "v2.metadata.json").unwrap()
    }

    #[test]
    fn properties_are_sorted_pairs() {
        let cols = properties_columns(&metadata());
        let keys = cols[0].as_any().downcast_ref::<StringArray>().unwrap();
        let values = cols[1].as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!((keys.value(0), values.value(0)), ("a", "1"));
        assert_eq!((keys.value(1), values.value(1)), ("b", "2"));
        let schema = Arc::new(Schema::new(properties_fields()));
        RecordBatch::try_new(schema, cols).unwrap();
    }

    #[test]
    fn metadata_log_names_the_snapshot_current_at_each_file() {
        let cols = metadata_log_columns(&metadata(), "/t/metadata/v2.metadata.json");
        let schema = Arc::new(Schema::new(metadata_log_fields()));
        let batch = RecordBatch::try_new(schema, cols.clone()).unwrap();
        assert_eq!(batch.num_rows(), 3);
        let files = cols[1].as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(files.value(2), "/t/metadata/v2.metadata.json");
        let snap = cols[2].as_any().downcast_ref::<Int64Array>().unwrap();
        assert!(snap.is_null(0), "no snapshot before 1000");
        assert_eq!((snap.value(1), snap.value(2)), (1, 2));
        let schema_id = cols[3].as_any().downcast_ref::<Int32Array>().unwrap();
        assert_eq!(schema_id.value(1), 0);
        assert!(schema_id.is_null(2), "snapshot 2 names no schema");
        let seq = cols[4].as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!(seq.value(2), 2);
    }
}
