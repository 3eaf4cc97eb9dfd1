//! A typed [`ManifestEntry`] as the `manifest_entry` datum the encoder writes: plain values (the
//! encoder picks union branches by value), `int`-keyed maps as the array of key/value records Iceberg
//! uses, and the entry's unknown fields appended as they were decoded.

use std::collections::BTreeMap;

use apache_avro::types::Value;

use super::partition_value::partition_to_avro;
use crate::iceberg::manifest::ManifestEntry;

type Fields = Vec<(String, Value)>;

fn opt<T>(v: Option<T>, f: impl FnOnce(T) -> Value) -> Value {
    v.map_or(Value::Null, f)
}

fn map_value<V: Clone>(m: &Option<BTreeMap<i32, V>>, f: impl Fn(V) -> Value) -> Value {
    opt(m.as_ref(), |m| {
        Value::Array(
            m.iter()
                .map(|(k, v)| {
                    Value::Record(vec![
                        ("key".into(), Value::Int(*k)),
                        ("value".into(), f(v.clone())),
                    ])
                })
                .collect(),
        )
    })
}

/// The `manifest_entry` record for a typed entry (plain values; the encoder picks union branches).
pub fn entry_to_value(e: &ManifestEntry) -> Value {
    let d = &e.data_file;
    let mut df: Fields = vec![
        ("content".into(), Value::Int(d.content as i32)),
        ("file_path".into(), Value::String(d.file_path.clone())),
        ("file_format".into(), Value::String(d.file_format.clone())),
        ("partition".into(), partition_to_avro(&d.partition)),
        ("record_count".into(), Value::Long(d.record_count)),
        (
            "file_size_in_bytes".into(),
            Value::Long(d.file_size_in_bytes),
        ),
        (
            "block_size_in_bytes".into(),
            Value::Long(d.block_size_in_bytes.unwrap_or(DEFAULT_BLOCK_SIZE)),
        ),
        (
            "column_sizes".into(),
            map_value(&d.column_sizes, Value::Long),
        ),
        (
            "value_counts".into(),
            map_value(&d.value_counts, Value::Long),
        ),
        (
            "null_value_counts".into(),
            map_value(&d.null_value_counts, Value::Long),
        ),
        (
            "nan_value_counts".into(),
            map_value(&d.nan_value_counts, Value::Long),
        ),
        (
            "lower_bounds".into(),
            map_value(&d.lower_bounds, Value::Bytes),
        ),
        (
            "upper_bounds".into(),
            map_value(&d.upper_bounds, Value::Bytes),
        ),
        (
            "key_metadata".into(),
            opt(d.key_metadata.clone(), Value::Bytes),
        ),
        (
            "split_offsets".into(),
            opt(d.split_offsets.as_ref(), |v| {
                Value::Array(v.iter().map(|i| Value::Long(*i)).collect())
            }),
        ),
        (
            "equality_ids".into(),
            opt(d.equality_ids.as_ref(), |v| {
                Value::Array(v.iter().map(|i| Value::Int(*i)).collect())
            }),
        ),
        ("sort_order_id".into(), opt(d.sort_order_id, Value::Int)),
        ("first_row_id".into(), opt(d.first_row_id, Value::Long)),
        (
            "referenced_data_file".into(),
            opt(d.referenced_data_file.clone(), Value::String),
        ),
        ("content_offset".into(), opt(d.content_offset, Value::Long)),
        (
            "content_size_in_bytes".into(),
            opt(d.content_size_in_bytes, Value::Long),
        ),
    ];
    df.extend(d.extra.iter().cloned());
    let mut entry: Fields = vec![
        ("status".into(), Value::Int(e.status as i32)),
        ("snapshot_id".into(), opt(e.snapshot_id, Value::Long)),
        (
            "sequence_number".into(),
            opt(e.sequence_number, Value::Long),
        ),
        (
            "file_sequence_number".into(),
            opt(e.file_sequence_number, Value::Long),
        ),
        ("data_file".into(), Value::Record(df)),
    ];
    entry.extend(e.extra.iter().cloned());
    Value::Record(entry)
}

/// `block_size_in_bytes` written in v1 when unknown (the Java and pyiceberg default, 64 MiB).
pub const DEFAULT_BLOCK_SIZE: i64 = 64 * 1024 * 1024;
