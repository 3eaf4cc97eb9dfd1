//! A new, empty table's metadata: one schema (`id` long, `data` string), unpartitioned, unsorted,
//! written as Java writes a fresh table of the format version (v1 also carries the legacy `schema`
//! and `partition-spec`; v3 starts `next-row-id` at 0).

use serde_json::{Map, Value, json};

use crate::error::Result;
use crate::iceberg::metadata::TableMetadata;
use crate::iceberg::spec::FormatVersion;

/// The schema of tables icetrim creates.
pub fn default_schema() -> Value {
    json!({
        "type": "struct",
        "schema-id": 0,
        "fields": [
            {"id": 1, "name": "id", "required": false, "type": "long"},
            {"id": 2, "name": "data", "required": false, "type": "string"}
        ]
    })
}

/// The metadata JSON object of an empty table.
pub fn new_table_json(
    location: &str,
    version: FormatVersion,
    table_uuid: &uuid::Uuid,
    now_ms: i64,
) -> Map<String, Value> {
    let location = location.trim_end_matches('/');
    let mut m = Map::new();
    m.insert("format-version".into(), version.number().into());
    m.insert("table-uuid".into(), table_uuid.to_string().into());
    m.insert("location".into(), location.into());
    m.insert("last-sequence-number".into(), 0.into());
    m.insert("last-updated-ms".into(), now_ms.into());
    m.insert("last-column-id".into(), 2.into());
    if version == FormatVersion::V1 {
        m.insert("schema".into(), default_schema());
    }
    m.insert("schemas".into(), json!([default_schema()]));
    m.insert("current-schema-id".into(), 0.into());
    if version == FormatVersion::V1 {
        m.insert("partition-spec".into(), json!([]));
    }
    m.insert(
        "partition-specs".into(),
        json!([{"spec-id": 0, "fields": []}]),
    );
    m.insert("default-spec-id".into(), 0.into());
    m.insert("last-partition-id".into(), 999.into());
    m.insert("properties".into(), json!({}));
    m.insert("current-snapshot-id".into(), (-1).into());
    m.insert("refs".into(), json!({}));
    m.insert("snapshots".into(), json!([]));
    m.insert("statistics".into(), json!([]));
    m.insert("partition-statistics".into(), json!([]));
    m.insert("snapshot-log".into(), json!([]));
    m.insert("metadata-log".into(), json!([]));
    m.insert("sort-orders".into(), json!([{"order-id": 0, "fields": []}]));
    m.insert("default-sort-order-id".into(), 0.into());
    if version >= FormatVersion::V3 {
        m.insert("next-row-id".into(), 0.into());
    }
    m
}

/// An empty table's metadata, attributed to `file`.
pub fn new_table(
    location: &str,
    version: FormatVersion,
    table_uuid: &uuid::Uuid,
    now_ms: i64,
    file: &str,
) -> Result<TableMetadata> {
    TableMetadata::from_json(new_table_json(location, version, table_uuid, now_ms), file)
}
