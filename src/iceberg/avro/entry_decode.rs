//! The full decode of a manifest entry straight into [`ManifestEntry`] / [`DataFile`], walking the
//! writer schema: fields the spec names are decoded into their typed slots (any `["null", T]` order,
//! `int` or `long`, maps in the array-of-key/value form or as string-keyed Avro maps); the partition
//! tuple and every unknown field are kept as generic `Value`s so a rewrite with the same schema is
//! lossless. Decoding typed (not through a `Value` tree first) keeps allocations to what is kept.

use std::collections::BTreeMap;

use super::cursor::{Cursor, Decoded, Malformed};
use super::partition_value::decode_partition;
use super::schema::{Node, Record};
use super::value::{decode_value, read_blocks};
use crate::iceberg::manifest::{DataFile, ManifestEntry};
use crate::iceberg::spec::{DataContent, EntryStatus};

const BAD_TYPE: Malformed = Malformed("a manifest field has an unexpected Avro type");

/// Reads an optional value: nulls and union branches are resolved, the leaf read by `leaf`.
fn opt<T>(
    c: &mut Cursor<'_>,
    node: &Node,
    leaf: fn(&mut Cursor<'_>, &Node) -> Decoded<T>,
) -> Decoded<Option<T>> {
    match node {
        Node::Null => Ok(None),
        Node::Union(branches) => {
            let i = c.read_branch(branches.len())?;
            opt(c, &branches[i], leaf)
        }
        other => leaf(c, other).map(Some),
    }
}

fn long(c: &mut Cursor<'_>, node: &Node) -> Decoded<i64> {
    match node {
        Node::Int | Node::Long => c.read_long(),
        _ => Err(BAD_TYPE),
    }
}

fn int(c: &mut Cursor<'_>, node: &Node) -> Decoded<i32> {
    i32::try_from(long(c, node)?).map_err(|_| Malformed("a manifest int field is out of range"))
}

fn string(c: &mut Cursor<'_>, node: &Node) -> Decoded<String> {
    match node {
        Node::String => Ok(c.read_str()?.to_string()),
        _ => Err(BAD_TYPE),
    }
}

fn bytes(c: &mut Cursor<'_>, node: &Node) -> Decoded<Vec<u8>> {
    match node {
        Node::Bytes => Ok(c.read_bytes()?.to_vec()),
        Node::Fixed { size, .. } => Ok(c.take(*size)?.to_vec()),
        _ => Err(BAD_TYPE),
    }
}

fn long_list(c: &mut Cursor<'_>, node: &Node) -> Decoded<Vec<i64>> {
    let Node::Array(items) = node else {
        return Err(BAD_TYPE);
    };
    let mut out = Vec::new();
    read_blocks(c, items, false, |c| {
        out.push(opt(c, items, long)?.ok_or(Malformed("null list element"))?);
        Ok(())
    })?;
    Ok(out)
}

fn int_list(c: &mut Cursor<'_>, node: &Node) -> Decoded<Vec<i32>> {
    long_list(c, node)?
        .into_iter()
        .map(|v| i32::try_from(v).map_err(|_| Malformed("equality id out of range")))
        .collect()
}

/// An Iceberg map with `int` keys: array of `{key, value}` records, or an Avro map with numeric keys.
fn int_map<V>(
    c: &mut Cursor<'_>,
    node: &Node,
    value: fn(&mut Cursor<'_>, &Node) -> Decoded<V>,
) -> Decoded<BTreeMap<i32, V>> {
    let mut out = BTreeMap::new();
    match node {
        Node::Array(items) => {
            let Node::Record(kv) = items.as_ref() else {
                return Err(BAD_TYPE);
            };
            read_blocks(c, items, false, |c| {
                let (mut k, mut v) = (None, None);
                for f in &kv.fields {
                    match f.name.as_str() {
                        "key" => k = opt(c, &f.node, int)?,
                        "value" => v = opt(c, &f.node, value)?,
                        _ => c.skip(&f.node)?,
                    }
                }
                if let (Some(k), Some(v)) = (k, v) {
                    out.insert(k, v);
                }
                Ok(())
            })?;
        }
        Node::Map(values) => {
            read_blocks(c, values, true, |c| {
                let key = c
                    .read_str()?
                    .parse()
                    .map_err(|_| Malformed("map key is not an int"))?;
                if let Some(v) = opt(c, values, value)? {
                    out.insert(key, v);
                }
                Ok(())
            })?;
        }
        _ => return Err(BAD_TYPE),
    }
    Ok(out)
}

fn long_map(c: &mut Cursor<'_>, node: &Node) -> Decoded<BTreeMap<i32, i64>> {
    int_map(c, node, long)
}

fn bytes_map(c: &mut Cursor<'_>, node: &Node) -> Decoded<BTreeMap<i32, Vec<u8>>> {
    int_map(c, node, bytes)
}

/// Decodes one `manifest_entry` record of schema `entry`.
pub fn decode_entry(c: &mut Cursor<'_>, entry: &Record) -> Decoded<ManifestEntry> {
    let (mut status, mut snapshot_id, mut sequence_number, mut file_sequence_number) =
        (None, None, None, None);
    let mut data_file = None;
    let mut extra = Vec::new();
    for f in &entry.fields {
        let n = &f.node;
        match f.name.as_str() {
            "status" => status = opt(c, n, int)?,
            "snapshot_id" => snapshot_id = opt(c, n, long)?,
            "sequence_number" => sequence_number = opt(c, n, long)?,
            "file_sequence_number" => file_sequence_number = opt(c, n, long)?,
            "data_file" => data_file = Some(decode_data_file(c, n.as_record().ok_or(BAD_TYPE)?)?),
            name => extra.push((name.to_string(), decode_value(c, n)?)),
        }
    }
    let status = status
        .and_then(EntryStatus::from_i32)
        .ok_or(Malformed("status is null or not 0, 1 or 2"))?;
    let data_file = data_file.ok_or(Malformed("entry has no data_file"))?;
    Ok(ManifestEntry {
        status,
        snapshot_id,
        sequence_number,
        file_sequence_number,
        data_file,
        extra,
    })
}

fn decode_data_file(c: &mut Cursor<'_>, record: &Record) -> Decoded<DataFile> {
    let mut d = DataFile::new(DataContent::Data, String::new(), 0, 0);
    d.file_format.clear();
    let (mut path, mut records, mut size) = (None, None, None);
    for f in &record.fields {
        let n = &f.node;
        match f.name.as_str() {
            "content" => {
                let v = opt(c, n, int)?.unwrap_or(0);
                d.content = DataContent::from_i32(v)
                    .ok_or(Malformed("data_file.content is not 0, 1 or 2"))?;
            }
            "file_path" => path = opt(c, n, string)?,
            "file_format" => d.file_format = opt(c, n, string)?.unwrap_or_default(),
            "partition" => d.partition = decode_partition(c, n)?,
            "record_count" => records = opt(c, n, long)?,
            "file_size_in_bytes" => size = opt(c, n, long)?,
            "block_size_in_bytes" => d.block_size_in_bytes = opt(c, n, long)?,
            "column_sizes" => d.column_sizes = opt(c, n, long_map)?,
            "value_counts" => d.value_counts = opt(c, n, long_map)?,
            "null_value_counts" => d.null_value_counts = opt(c, n, long_map)?,
            "nan_value_counts" => d.nan_value_counts = opt(c, n, long_map)?,
            "lower_bounds" => d.lower_bounds = opt(c, n, bytes_map)?,
            "upper_bounds" => d.upper_bounds = opt(c, n, bytes_map)?,
            "key_metadata" => d.key_metadata = opt(c, n, bytes)?,
            "split_offsets" => d.split_offsets = opt(c, n, long_list)?,
            "equality_ids" => d.equality_ids = opt(c, n, int_list)?,
            "sort_order_id" => d.sort_order_id = opt(c, n, int)?,
            "first_row_id" => d.first_row_id = opt(c, n, long)?,
            "referenced_data_file" => d.referenced_data_file = opt(c, n, string)?,
            "content_offset" => d.content_offset = opt(c, n, long)?,
            "content_size_in_bytes" => d.content_size_in_bytes = opt(c, n, long)?,
            name => d.extra.push((name.to_string(), decode_value(c, n)?)),
        }
    }
    d.file_path = path.ok_or(Malformed("data_file.file_path is null"))?;
    d.record_count = records.ok_or(Malformed("data_file.record_count is null"))?;
    d.file_size_in_bytes = size.ok_or(Malformed("data_file.file_size_in_bytes is null"))?;
    Ok(d)
}
