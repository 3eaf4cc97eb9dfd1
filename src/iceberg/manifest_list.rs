//! Manifest lists (`snap-*.avro`): one [`ManifestFile`] per manifest of a snapshot; reading and writing.
//!
//! Fields follow the Iceberg spec "Manifest Lists" table (ids 500-520). Reading matches fields by
//! name (v1 writers may say `added_data_files_count` for `added_files_count`, likewise existing and
//! deleted); v1 lists lack `content`, `sequence_number`, `min_sequence_number`: they default to data
//! and 0. The list is small, so it is decoded generically and converted. Writing uses the exact Iceberg
//! schema of the format version and header keys `snapshot-id`, `parent-snapshot-id`,
//! `sequence-number` (v2+), `first-row-id` (v3), `format-version`.
//!
//! First row id assignment (v3, spec "First Row ID Assignment"): existing values are kept, delete
//! manifests get none, and each data manifest without one gets the next id, starting at the
//! snapshot's `first-row-id` and advancing by its `existing_rows_count + added_rows_count`.

use apache_avro::types::Value;

use crate::error::{Error, Result};
use crate::iceberg::avro::codec::Codec;
use crate::iceberg::avro::container::{Container, ContainerWriter};
use crate::iceberg::avro::encode::encode_value;
use crate::iceberg::avro::iceberg_schema::manifest_list_schema;
pub use crate::iceberg::avro::list_projection::ListEntryRef;
use crate::iceberg::avro::list_projection::ListPlan;
use crate::iceberg::avro::schema::Node;
use crate::iceberg::avro::value::{decode_value, strip_union};
use crate::iceberg::spec::{FormatVersion, ManifestContent, SnapshotId};

/// A partition field summary of a manifest (`r508`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldSummary {
    pub contains_null: bool,
    pub contains_nan: Option<bool>,
    pub lower_bound: Option<Vec<u8>>,
    pub upper_bound: Option<Vec<u8>>,
}

/// One manifest-list entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestFile {
    pub manifest_path: String,
    pub manifest_length: i64,
    pub partition_spec_id: i32,
    pub content: ManifestContent,
    /// 0 in v1.
    pub sequence_number: i64,
    /// 0 in v1.
    pub min_sequence_number: i64,
    pub added_snapshot_id: SnapshotId,
    pub added_files_count: Option<i32>,
    pub existing_files_count: Option<i32>,
    pub deleted_files_count: Option<i32>,
    pub added_rows_count: Option<i64>,
    pub existing_rows_count: Option<i64>,
    pub deleted_rows_count: Option<i64>,
    pub partitions: Option<Vec<FieldSummary>>,
    pub key_metadata: Option<Vec<u8>>,
    /// v3.
    pub first_row_id: Option<i64>,
}

impl ManifestFile {
    /// `manifest_length` when the list gives one (a cached read is checked against it).
    pub fn length(&self) -> Option<u64> {
        u64::try_from(self.manifest_length).ok().filter(|n| *n > 0)
    }
}

/// Reads every entry of a manifest list; `file_name` names the file in errors.
pub fn read_manifest_list(bytes: &[u8], file_name: &str) -> Result<Vec<ManifestFile>> {
    let container = Container::open(bytes, file_name)?;
    let record = container
        .header
        .schema
        .as_record()
        .ok_or_else(|| container.error("manifest list schema is not a record"))?;
    for required in [
        "manifest_path",
        "manifest_length",
        "partition_spec_id",
        "added_snapshot_id",
    ] {
        if record.field(required).is_none() {
            return Err(container.error(format!("manifest list schema has no {required} field")));
        }
    }
    let node = container.header.schema.clone();
    let mut values = Vec::new();
    container.for_each_datum(|c| {
        values.push(decode_value(c, &node)?);
        Ok(())
    })?;
    values
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            manifest_file_from_value(v).map_err(|m| container.error(format!("entry {i}: {m}")))
        })
        .collect()
}

/// Calls `each` for every entry of the manifest list, projected to the fields maintenance needs
/// ([`ListEntryRef`]); nothing is allocated per entry. Refuses what [`read_manifest_list`] refuses.
pub fn for_each_list_entry(
    bytes: &[u8],
    file_name: &str,
    mut each: impl FnMut(ListEntryRef<'_>),
) -> Result<()> {
    let container = Container::open(bytes, file_name)?;
    let plan = ListPlan::new(&container.header.schema).map_err(|m| container.error(m))?;
    container.for_each_datum(|c| {
        each(plan.decode(c)?);
        Ok(())
    })
}

fn get<'v>(fields: &'v [(String, Value)], names: &[&str]) -> Option<&'v Value> {
    names
        .iter()
        .find_map(|n| fields.iter().find(|(k, _)| k == n))
        .map(|(_, v)| strip_union(v))
        .filter(|v| !matches!(v, Value::Null))
}

fn long(fields: &[(String, Value)], names: &[&str]) -> Result<Option<i64>, String> {
    match get(fields, names) {
        None => Ok(None),
        Some(Value::Int(i)) => Ok(Some(i64::from(*i))),
        Some(Value::Long(i)) => Ok(Some(*i)),
        Some(other) => Err(format!("{} is not an integer: {other:?}", names[0])),
    }
}

fn int(fields: &[(String, Value)], names: &[&str]) -> Result<Option<i32>, String> {
    long(fields, names)?
        .map(|v| i32::try_from(v).map_err(|_| format!("{} out of int range", names[0])))
        .transpose()
}

fn bytes(fields: &[(String, Value)], name: &str) -> Result<Option<Vec<u8>>, String> {
    match get(fields, &[name]) {
        None => Ok(None),
        Some(Value::Bytes(b) | Value::Fixed(_, b)) => Ok(Some(b.clone())),
        Some(other) => Err(format!("{name} is not bytes: {other:?}")),
    }
}

fn summaries(fields: &[(String, Value)]) -> Result<Option<Vec<FieldSummary>>, String> {
    let Some(v) = get(fields, &["partitions"]) else {
        return Ok(None);
    };
    let Value::Array(items) = v else {
        return Err("partitions is not an array".into());
    };
    let summary = |item: &Value| match strip_union(item) {
        Value::Record(f) => Ok(FieldSummary {
            contains_null: matches!(get(f, &["contains_null"]), Some(Value::Boolean(true))),
            contains_nan: match get(f, &["contains_nan"]) {
                Some(Value::Boolean(b)) => Some(*b),
                _ => None,
            },
            lower_bound: bytes(f, "lower_bound")?,
            upper_bound: bytes(f, "upper_bound")?,
        }),
        other => Err(format!("partition summary is not a record: {other:?}")),
    };
    items
        .iter()
        .map(summary)
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

fn manifest_file_from_value(v: Value) -> Result<ManifestFile, String> {
    let Value::Record(f) = v else {
        return Err("entry is not a record".into());
    };
    let required =
        |name: &str| long(&f, &[name])?.ok_or_else(|| format!("{name} is missing or null"));
    let manifest_path = match get(&f, &["manifest_path"]) {
        Some(Value::String(s)) => s.clone(),
        _ => return Err("manifest_path is missing or not a string".into()),
    };
    let content = match int(&f, &["content"])?.unwrap_or(0) {
        0 => ManifestContent::Data,
        1 => ManifestContent::Deletes,
        other => return Err(format!("content {other} is not 0 or 1")),
    };
    Ok(ManifestFile {
        manifest_path,
        manifest_length: required("manifest_length")?,
        partition_spec_id: i32::try_from(required("partition_spec_id")?)
            .map_err(|_| "partition_spec_id out of range")?,
        content,
        sequence_number: long(&f, &["sequence_number"])?.unwrap_or(0),
        min_sequence_number: long(&f, &["min_sequence_number"])?.unwrap_or(0),
        added_snapshot_id: required("added_snapshot_id")?,
        added_files_count: int(&f, &["added_files_count", "added_data_files_count"])?,
        existing_files_count: int(&f, &["existing_files_count", "existing_data_files_count"])?,
        deleted_files_count: int(&f, &["deleted_files_count", "deleted_data_files_count"])?,
        added_rows_count: long(&f, &["added_rows_count"])?,
        existing_rows_count: long(&f, &["existing_rows_count"])?,
        deleted_rows_count: long(&f, &["deleted_rows_count"])?,
        partitions: summaries(&f)?,
        key_metadata: bytes(&f, "key_metadata")?,
        first_row_id: long(&f, &["first_row_id"])?,
    })
}

/// What a manifest list's header says about its snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestListMeta {
    pub format_version: FormatVersion,
    pub snapshot_id: SnapshotId,
    pub parent_snapshot_id: Option<SnapshotId>,
    /// Written for v2+.
    pub sequence_number: i64,
    /// Written for v3.
    pub first_row_id: Option<i64>,
}

fn opt<T>(v: Option<T>, f: impl FnOnce(T) -> Value) -> Value {
    v.map_or(Value::Null, f)
}

fn manifest_file_to_value(m: &ManifestFile) -> Value {
    let summary = |s: &FieldSummary| {
        Value::Record(vec![
            ("contains_null".into(), Value::Boolean(s.contains_null)),
            ("contains_nan".into(), opt(s.contains_nan, Value::Boolean)),
            (
                "lower_bound".into(),
                opt(s.lower_bound.clone(), Value::Bytes),
            ),
            (
                "upper_bound".into(),
                opt(s.upper_bound.clone(), Value::Bytes),
            ),
        ])
    };
    Value::Record(vec![
        (
            "manifest_path".into(),
            Value::String(m.manifest_path.clone()),
        ),
        ("manifest_length".into(), Value::Long(m.manifest_length)),
        ("partition_spec_id".into(), Value::Int(m.partition_spec_id)),
        ("content".into(), Value::Int(m.content as i32)),
        ("sequence_number".into(), Value::Long(m.sequence_number)),
        (
            "min_sequence_number".into(),
            Value::Long(m.min_sequence_number),
        ),
        ("added_snapshot_id".into(), Value::Long(m.added_snapshot_id)),
        (
            "added_files_count".into(),
            opt(m.added_files_count, Value::Int),
        ),
        (
            "existing_files_count".into(),
            opt(m.existing_files_count, Value::Int),
        ),
        (
            "deleted_files_count".into(),
            opt(m.deleted_files_count, Value::Int),
        ),
        (
            "added_rows_count".into(),
            opt(m.added_rows_count, Value::Long),
        ),
        (
            "existing_rows_count".into(),
            opt(m.existing_rows_count, Value::Long),
        ),
        (
            "deleted_rows_count".into(),
            opt(m.deleted_rows_count, Value::Long),
        ),
        (
            "partitions".into(),
            opt(m.partitions.as_ref(), |p| {
                Value::Array(p.iter().map(summary).collect())
            }),
        ),
        (
            "key_metadata".into(),
            opt(m.key_metadata.clone(), Value::Bytes),
        ),
        ("first_row_id".into(), opt(m.first_row_id, Value::Long)),
    ])
}

/// A written manifest list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenManifestList {
    pub bytes: Vec<u8>,
    /// v3: the row id after the last one assigned (the table's new `next-row-id`); the snapshot's
    /// `added-rows` is this minus `first-row-id`.
    pub next_row_id: Option<i64>,
}

/// Writes a manifest list of `manifests` with Iceberg's schema for `meta.format_version`, assigning
/// v3 first row ids.
pub fn write_manifest_list(
    meta: &ManifestListMeta,
    manifests: &[ManifestFile],
    codec: Codec,
) -> Result<WrittenManifestList> {
    let version = meta.format_version;
    if version == FormatVersion::V1
        && let Some(m) = manifests
            .iter()
            .find(|m| m.content != ManifestContent::Data)
    {
        return Err(Error::bad_arguments(format!(
            "a v1 manifest list cannot hold the delete manifest {}",
            m.manifest_path
        )));
    }
    let schema_json = manifest_list_schema(version);
    let node = crate::iceberg::avro::schema::parse_schema(&schema_json)
        .map_err(|m| Error::logical(format!("manifest list schema: {m}")))?;
    let mut metadata = vec![
        ("snapshot-id".to_string(), meta.snapshot_id.to_string()),
        (
            "parent-snapshot-id".to_string(),
            meta.parent_snapshot_id
                .map_or("null".to_string(), |p| p.to_string()),
        ),
    ];
    if version >= FormatVersion::V2 {
        metadata.push(("sequence-number".into(), meta.sequence_number.to_string()));
    }
    if version >= FormatVersion::V3
        && let Some(id) = meta.first_row_id
    {
        metadata.push(("first-row-id".into(), id.to_string()));
    }
    metadata.push(("format-version".into(), version.number().to_string()));
    let metadata: Vec<_> = metadata
        .into_iter()
        .map(|(k, v)| (k, v.into_bytes()))
        .collect();
    let mut writer = ContainerWriter::new(&schema_json, &metadata, codec);
    let mut next_row_id = meta.first_row_id.filter(|_| version >= FormatVersion::V3);
    for m in manifests {
        let mut m = m.clone();
        if let (Some(next), ManifestContent::Data, None) = (next_row_id, m.content, m.first_row_id)
        {
            m.first_row_id = Some(next);
            let rows = m.existing_rows_count.unwrap_or(0) + m.added_rows_count.unwrap_or(0);
            next_row_id = Some(next.saturating_add(rows.max(0)));
        }
        write_one(&mut writer, &node, &m)?;
    }
    Ok(WrittenManifestList {
        bytes: writer.finish()?,
        next_row_id,
    })
}

fn write_one(writer: &mut ContainerWriter, node: &Node, m: &ManifestFile) -> Result<()> {
    let value = manifest_file_to_value(m);
    writer
        .append(|buf| encode_value(buf, node, &value))
        .map_err(|e| {
            Error::bad_arguments(format!("manifest list entry {}: {e}", m.manifest_path))
        })?;
    if writer.block_full() {
        writer.flush_block()?;
    }
    Ok(())
}
