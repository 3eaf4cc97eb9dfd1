//! Iceberg's Avro schemas for manifest lists and manifests, format versions 1 to 3, as JSON text.
//!
//! Field names and ids follow the Iceberg spec ("Manifests", "Manifest Lists"): manifest entry fields
//! 0-4, `data_file` fields 100-145, manifest list fields 500-520, partition summaries 508-511 and 518.
//! Avro naming follows what Java and pyiceberg write: the root records `manifest_entry` /
//! `manifest_file`, a nested record for field id N is `rN`, a map with non-string keys is an array of
//! `k<key-id>_v<value-id>` records carrying `"logicalType": "map"`, arrays carry `element-id`.
//! Optional fields are `["null", T]` with `"default": null`.

use serde_json::{Value as Json, json};

use crate::iceberg::spec::FormatVersion;

fn field(id: i32, name: &str, ty: Json, required: bool) -> Json {
    if required {
        json!({"name": name, "type": ty, "field-id": id})
    } else {
        json!({"name": name, "type": ["null", ty], "default": null, "field-id": id})
    }
}

fn req(id: i32, name: &str, ty: Json) -> Json {
    field(id, name, ty, true)
}

fn opt(id: i32, name: &str, ty: Json) -> Json {
    field(id, name, ty, false)
}

/// A map with `int` keys as Iceberg writes it in Avro: an array of key/value records.
fn int_map(key_id: i32, value_id: i32, value: &str) -> Json {
    json!({
        "type": "array",
        "items": {
            "type": "record",
            "name": format!("k{key_id}_v{value_id}"),
            "fields": [
                {"name": "key", "type": "int", "field-id": key_id},
                {"name": "value", "type": value, "field-id": value_id}
            ]
        },
        "logicalType": "map"
    })
}

fn list(element_id: i32, items: Json) -> Json {
    json!({"type": "array", "items": items, "element-id": element_id})
}

fn record(name: &str, fields: Vec<Json>) -> Json {
    json!({"type": "record", "name": name, "fields": fields})
}

/// The `data_file` record (field 2) for `version`, with `partition` as the Avro type of the partition
/// tuple (a record named `r102`).
pub fn data_file_type(version: FormatVersion, partition: Json) -> Json {
    let v1 = version == FormatVersion::V1;
    let mut fields = Vec::new();
    if !v1 {
        fields.push(req(134, "content", json!("int")));
    }
    fields.extend([
        req(100, "file_path", json!("string")),
        req(101, "file_format", json!("string")),
        req(102, "partition", partition),
        req(103, "record_count", json!("long")),
        req(104, "file_size_in_bytes", json!("long")),
    ]);
    if v1 {
        fields.push(req(105, "block_size_in_bytes", json!("long")));
    }
    fields.extend([
        opt(108, "column_sizes", int_map(117, 118, "long")),
        opt(109, "value_counts", int_map(119, 120, "long")),
        opt(110, "null_value_counts", int_map(121, 122, "long")),
        opt(137, "nan_value_counts", int_map(138, 139, "long")),
        opt(125, "lower_bounds", int_map(126, 127, "bytes")),
        opt(128, "upper_bounds", int_map(129, 130, "bytes")),
        opt(131, "key_metadata", json!("bytes")),
        opt(132, "split_offsets", list(133, json!("long"))),
    ]);
    if !v1 {
        fields.push(opt(135, "equality_ids", list(136, json!("int"))));
    }
    fields.push(opt(140, "sort_order_id", json!("int")));
    if version >= FormatVersion::V3 {
        fields.extend([
            opt(142, "first_row_id", json!("long")),
            opt(143, "referenced_data_file", json!("string")),
            opt(144, "content_offset", json!("long")),
            opt(145, "content_size_in_bytes", json!("long")),
        ]);
    }
    record("r2", fields)
}

/// The manifest entry schema for `version` with the given partition record type.
pub fn manifest_entry_schema(version: FormatVersion, partition: Json) -> String {
    let data_file = data_file_type(version, partition);
    let fields = if version == FormatVersion::V1 {
        vec![
            req(0, "status", json!("int")),
            req(1, "snapshot_id", json!("long")),
            req(2, "data_file", data_file),
        ]
    } else {
        vec![
            req(0, "status", json!("int")),
            opt(1, "snapshot_id", json!("long")),
            opt(3, "sequence_number", json!("long")),
            opt(4, "file_sequence_number", json!("long")),
            req(2, "data_file", data_file),
        ]
    };
    record("manifest_entry", fields).to_string()
}

fn field_summary() -> Json {
    record(
        "r508",
        vec![
            req(509, "contains_null", json!("boolean")),
            opt(518, "contains_nan", json!("boolean")),
            opt(510, "lower_bound", json!("bytes")),
            opt(511, "upper_bound", json!("bytes")),
        ],
    )
}

/// The manifest list schema for `version`.
pub fn manifest_list_schema(version: FormatVersion) -> String {
    let v1 = version == FormatVersion::V1;
    let counts = |id: i32, name: &str, ty: &str| field(id, name, json!(ty), !v1);
    let mut fields = vec![
        req(500, "manifest_path", json!("string")),
        req(501, "manifest_length", json!("long")),
        req(502, "partition_spec_id", json!("int")),
    ];
    if !v1 {
        fields.extend([
            req(517, "content", json!("int")),
            req(515, "sequence_number", json!("long")),
            req(516, "min_sequence_number", json!("long")),
        ]);
    }
    fields.extend([
        req(503, "added_snapshot_id", json!("long")),
        counts(504, "added_files_count", "int"),
        counts(505, "existing_files_count", "int"),
        counts(506, "deleted_files_count", "int"),
        counts(512, "added_rows_count", "long"),
        counts(513, "existing_rows_count", "long"),
        counts(514, "deleted_rows_count", "long"),
        opt(507, "partitions", list(508, field_summary())),
        opt(519, "key_metadata", json!("bytes")),
    ]);
    if version >= FormatVersion::V3 {
        fields.push(opt(520, "first_row_id", json!("long")));
    }
    record("manifest_file", fields).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iceberg::avro::schema::parse_schema;

    #[test]
    fn schemas_parse_and_keep_map_annotation() {
        for v in [FormatVersion::V1, FormatVersion::V2, FormatVersion::V3] {
            let entry = manifest_entry_schema(v, record("r102", vec![]));
            assert!(entry.contains(r#""logicalType":"map""#));
            assert!(entry.contains(r#""name":"k117_v118""#));
            let node = parse_schema(&entry).unwrap();
            let df = node.as_record().unwrap().field("data_file").unwrap();
            let df = df.node.as_record().unwrap();
            assert_eq!(df.name, "r2");
            assert!(df.fields.iter().all(|f| f.field_id.is_some()));
            assert_eq!(df.field("first_row_id").is_some(), v == FormatVersion::V3);
            let list = parse_schema(&manifest_list_schema(v)).unwrap();
            let list = list.as_record().unwrap();
            assert_eq!(list.name, "manifest_file");
            assert_eq!(
                list.field("sequence_number").is_some(),
                v != FormatVersion::V1
            );
        }
    }
}
