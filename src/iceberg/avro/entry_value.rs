//! Conversion between a decoded manifest-entry `Value` and the typed [`ManifestEntry`] / [`DataFile`].
//!
//! Fields are taken by their spec names; any field we do not type is kept in `extra` with its value
//! as decoded, so writing the entry back with the file's own schema loses nothing. Maps with `int`
//! keys are read from either Avro form (array of key/value records, or a string-keyed map) and written
//! as the array form Iceberg uses.

use std::collections::BTreeMap;

use apache_avro::types::Value;

use super::value::strip_union;
use crate::iceberg::manifest::{DataFile, ManifestEntry};
use crate::iceberg::spec::{DataContent, EntryStatus};

type Fields = Vec<(String, Value)>;

fn take(fields: &mut Fields, name: &str) -> Option<Value> {
    let i = fields.iter().position(|(n, _)| n == name)?;
    Some(fields.remove(i).1)
}

fn opt_long(v: Option<Value>, name: &str) -> Result<Option<i64>, String> {
    match v.as_ref().map(strip_union) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Int(i)) => Ok(Some(i64::from(*i))),
        Some(Value::Long(i)) => Ok(Some(*i)),
        Some(other) => Err(format!("{name} is not an integer: {other:?}")),
    }
}

fn req_long(v: Option<Value>, name: &str) -> Result<i64, String> {
    opt_long(v, name)?.ok_or_else(|| format!("{name} is missing or null"))
}

fn opt_int(v: Option<Value>, name: &str) -> Result<Option<i32>, String> {
    opt_long(v, name)?
        .map(|i| i32::try_from(i).map_err(|_| format!("{name} out of int range")))
        .transpose()
}

fn opt_string(v: Option<Value>, name: &str) -> Result<Option<String>, String> {
    match v.map(unwrap_union) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(format!("{name} is not a string: {other:?}")),
    }
}

fn opt_bytes(v: Option<Value>, name: &str) -> Result<Option<Vec<u8>>, String> {
    match v.map(unwrap_union) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bytes(b) | Value::Fixed(_, b)) => Ok(Some(b)),
        Some(other) => Err(format!("{name} is not bytes: {other:?}")),
    }
}

fn unwrap_union(v: Value) -> Value {
    match v {
        Value::Union(_, inner) => unwrap_union(*inner),
        other => other,
    }
}

fn opt_list(v: Option<Value>, name: &str) -> Result<Option<Vec<i64>>, String> {
    match v.map(unwrap_union) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .into_iter()
            .map(|i| req_long(Some(i), name))
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(other) => Err(format!("{name} is not an array: {other:?}")),
    }
}

/// Key/value pairs of an Iceberg map with `int` keys, in either Avro form.
fn map_pairs(v: Option<Value>, name: &str) -> Result<Option<Vec<(i32, Value)>>, String> {
    let key = |k: i64| i32::try_from(k).map_err(|_| format!("{name} key out of int range"));
    match v.map(unwrap_union) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .into_iter()
            .map(|item| match unwrap_union(item) {
                Value::Record(mut kv) => {
                    let k = key(req_long(take(&mut kv, "key"), name)?)?;
                    Ok((k, take(&mut kv, "value").unwrap_or(Value::Null)))
                }
                other => Err(format!("{name} item is not a key/value record: {other:?}")),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(Value::Map(m)) => m
            .into_iter()
            .map(|(k, v)| {
                Ok((
                    k.parse::<i32>()
                        .map_err(|_| format!("{name} key '{k}' is not an int"))?,
                    v,
                ))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(other) => Err(format!("{name} is not a map: {other:?}")),
    }
}

fn long_map(v: Option<Value>, name: &str) -> Result<Option<BTreeMap<i32, i64>>, String> {
    map_pairs(v, name)?
        .map(|pairs| {
            pairs
                .into_iter()
                .map(|(k, v)| Ok((k, req_long(Some(v), name)?)))
                .collect()
        })
        .transpose()
}

fn bytes_map(v: Option<Value>, name: &str) -> Result<Option<BTreeMap<i32, Vec<u8>>>, String> {
    map_pairs(v, name)?
        .map(|pairs| {
            pairs
                .into_iter()
                .map(|(k, v)| Ok((k, opt_bytes(Some(v), name)?.unwrap_or_default())))
                .collect()
        })
        .transpose()
}

/// A typed entry from a decoded `manifest_entry` record.
pub fn entry_from_value(v: Value) -> Result<ManifestEntry, String> {
    let Value::Record(mut f) = unwrap_union(v) else {
        return Err("manifest entry is not a record".into());
    };
    let status = opt_int(take(&mut f, "status"), "status")?.ok_or("status is missing or null")?;
    let status =
        EntryStatus::from_i32(status).ok_or_else(|| format!("status {status} is not 0, 1 or 2"))?;
    let snapshot_id = opt_long(take(&mut f, "snapshot_id"), "snapshot_id")?;
    let sequence_number = opt_long(take(&mut f, "sequence_number"), "sequence_number")?;
    let file_sequence_number =
        opt_long(take(&mut f, "file_sequence_number"), "file_sequence_number")?;
    let data_file = take(&mut f, "data_file").ok_or("data_file is missing")?;
    let data_file = data_file_from_value(data_file)?;
    Ok(ManifestEntry {
        status,
        snapshot_id,
        sequence_number,
        file_sequence_number,
        data_file,
        extra: f,
    })
}

fn data_file_from_value(v: Value) -> Result<DataFile, String> {
    let Value::Record(mut f) = unwrap_union(v) else {
        return Err("data_file is not a record".into());
    };
    let content = opt_int(take(&mut f, "content"), "data_file.content")?.unwrap_or(0);
    let content = DataContent::from_i32(content)
        .ok_or_else(|| format!("data_file.content {content} is invalid"))?;
    let file_path = opt_string(take(&mut f, "file_path"), "file_path")?
        .ok_or("file_path is missing or null")?;
    Ok(DataFile {
        content,
        file_path,
        file_format: opt_string(take(&mut f, "file_format"), "file_format")?.unwrap_or_default(),
        partition: take(&mut f, "partition").unwrap_or(Value::Record(Vec::new())),
        record_count: req_long(take(&mut f, "record_count"), "record_count")?,
        file_size_in_bytes: req_long(take(&mut f, "file_size_in_bytes"), "file_size_in_bytes")?,
        block_size_in_bytes: opt_long(take(&mut f, "block_size_in_bytes"), "block_size_in_bytes")?,
        column_sizes: long_map(take(&mut f, "column_sizes"), "column_sizes")?,
        value_counts: long_map(take(&mut f, "value_counts"), "value_counts")?,
        null_value_counts: long_map(take(&mut f, "null_value_counts"), "null_value_counts")?,
        nan_value_counts: long_map(take(&mut f, "nan_value_counts"), "nan_value_counts")?,
        lower_bounds: bytes_map(take(&mut f, "lower_bounds"), "lower_bounds")?,
        upper_bounds: bytes_map(take(&mut f, "upper_bounds"), "upper_bounds")?,
        key_metadata: opt_bytes(take(&mut f, "key_metadata"), "key_metadata")?,
        split_offsets: opt_list(take(&mut f, "split_offsets"), "split_offsets")?,
        equality_ids: opt_list(take(&mut f, "equality_ids"), "equality_ids")?
            .map(|ids| {
                ids.into_iter()
                    .map(|i| i32::try_from(i).map_err(|_| "equality id out of range"))
                    .collect()
            })
            .transpose()?,
        sort_order_id: opt_int(take(&mut f, "sort_order_id"), "sort_order_id")?,
        first_row_id: opt_long(take(&mut f, "first_row_id"), "first_row_id")?,
        referenced_data_file: opt_string(
            take(&mut f, "referenced_data_file"),
            "referenced_data_file",
        )?,
        content_offset: opt_long(take(&mut f, "content_offset"), "content_offset")?,
        content_size_in_bytes: opt_long(
            take(&mut f, "content_size_in_bytes"),
            "content_size_in_bytes",
        )?,
        extra: f,
    })
}

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
        ("partition".into(), d.partition.clone()),
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
