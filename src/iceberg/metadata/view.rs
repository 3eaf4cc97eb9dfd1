//! The typed view of a `metadata.json` object: everything maintenance reads, validated once when
//! the file is parsed (and again after each edit). Lenient where writers differ, strict where a
//! wrong value would make maintenance unsafe:
//! - `current-snapshot-id` and `parent-snapshot-id` of `-1` or `null` mean none (ClickHouse, Java).
//! - A ref pointing at snapshot `-1` (ClickHouse's empty `main`) is no ref.
//! - With a current snapshot and no `main` in `refs` (v1 tables have no `refs`), `main` is implicit.
//! - v1 legacy `schema` and `partition-spec` are read when `schemas` / `partition-specs` are absent;
//!   legacy partition fields without `field-id` get 1000, 1001, … (the spec's assignment).
//! - Required: `format-version` (1..=3), `location`, `last-updated-ms`; for v2+ also `table-uuid`
//!   and `last-sequence-number`; each snapshot's `snapshot-id`, `timestamp-ms` and either
//!   `manifest-list` or (v1) `manifests`.

use std::collections::BTreeMap;

use bytes::Bytes;
use serde_json::{Map, Value};

use super::fields::Obj;
use crate::error::Result;
use crate::iceberg::spec::{
    FormatVersion, MAIN_BRANCH, MetadataLogEntry, RefKind, Snapshot, SnapshotId, SnapshotRef,
    StatisticsFile, Summary,
};

/// One field of a partition spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionField {
    pub name: String,
    /// As written, e.g. `identity`, `bucket[16]`, `day`.
    pub transform: String,
    pub source_id: i32,
    pub field_id: i32,
}

/// An entry of `partition-specs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionSpec {
    pub spec_id: i32,
    pub fields: Vec<PartitionField>,
}

/// The typed fields of a metadata file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct View {
    pub format_version: FormatVersion,
    pub table_uuid: Option<String>,
    pub location: String,
    pub current_snapshot_id: Option<SnapshotId>,
    pub last_sequence_number: i64,
    pub last_updated_ms: i64,
    pub next_row_id: Option<i64>,
    pub properties: BTreeMap<String, String>,
    pub refs: Vec<SnapshotRef>,
    pub metadata_log: Vec<MetadataLogEntry>,
    pub statistics: Vec<StatisticsFile>,
    pub partition_specs: Vec<PartitionSpec>,
    pub default_spec_id: i32,
    pub schemas: Vec<Value>,
    pub current_schema_id: i32,
}

/// Validate `json` and build its typed view of every member but the contents of `snapshots` and
/// `snapshot-log` (`snapshots.rs` holds those; here they need only be arrays or absent).
pub(crate) fn derive(json: &Map<String, Value>, file: &str) -> Result<View> {
    let root = Obj::root(json, file);
    let format_version = format_version(&root)?;
    let v2_plus = format_version >= FormatVersion::V2;
    let table_uuid = match root.opt_str("table-uuid")? {
        Some(uuid) => Some(uuid.to_string()),
        None if v2_plus => return Err(root.error("table-uuid", "is missing")),
        None => None,
    };
    let last_sequence_number = if v2_plus {
        root.req_i64("last-sequence-number")?
    } else {
        root.opt_i64("last-sequence-number")?.unwrap_or(0)
    };
    let current_snapshot_id = none_if_negative(root.opt_i64("current-snapshot-id")?);
    let (schemas, current_schema_id) = schemas(&root)?;
    let (partition_specs, default_spec_id) = partition_specs(&root)?;
    root.opt_array(super::snapshots::SNAPSHOTS)?;
    root.opt_array(super::snapshots::SNAPSHOT_LOG)?;
    let mut statistics = statistics_files(&root, "statistics", false)?;
    statistics.extend(statistics_files(&root, "partition-statistics", true)?);
    Ok(View {
        format_version,
        table_uuid,
        location: root.req_str("location")?.to_string(),
        current_snapshot_id,
        last_sequence_number,
        last_updated_ms: root.req_i64("last-updated-ms")?,
        next_row_id: root.opt_i64("next-row-id")?,
        properties: string_map(root.opt_obj("properties")?)?,
        refs: refs(&root, current_snapshot_id)?,
        metadata_log: root
            .objects("metadata-log")?
            .iter()
            .map(|e| {
                Ok(MetadataLogEntry {
                    metadata_file: e.req_str("metadata-file")?.to_string(),
                    timestamp_ms: e.req_i64("timestamp-ms")?,
                })
            })
            .collect::<Result<_>>()?,
        statistics,
        partition_specs,
        default_spec_id,
        schemas,
        current_schema_id,
    })
}

fn format_version(root: &Obj<'_>) -> Result<FormatVersion> {
    let number = root.req_i64("format-version")?;
    FormatVersion::from_number(number).ok_or_else(|| {
        root.error(
            "format-version",
            &format!("is {number}, a format version icetrim does not support (1, 2 or 3)"),
        )
    })
}

fn none_if_negative(id: Option<i64>) -> Option<i64> {
    id.filter(|&id| id != -1)
}

fn string_map(obj: Option<Obj<'_>>) -> Result<BTreeMap<String, String>> {
    let Some(obj) = obj else {
        return Ok(BTreeMap::new());
    };
    obj.entries()
        .map(|(k, v)| Ok((k.clone(), obj.member_string(k, v)?)))
        .collect()
}

/// `summary` values are strings by the spec; other scalars are taken as their JSON text.
fn summary(obj: Option<Obj<'_>>) -> Result<Summary> {
    let Some(obj) = obj else {
        return Ok(Summary::default());
    };
    obj.entries()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k.as_str(), std::borrow::Cow::Borrowed(s.as_str()))),
            Value::Number(_) | Value::Bool(_) => Ok((k.as_str(), v.to_string().into())),
            other => Err(obj.error(
                k,
                &format!("must be a string, got {}", super::fields::type_name(other)),
            )),
        })
        .collect()
}

/// One item of `snapshots`, from its object and its compact text (whose summary it keeps as text
/// when it can).
pub(super) fn snapshot(s: &Obj<'_>, text: &Bytes, version: FormatVersion) -> Result<Snapshot> {
    let manifest_list = s.opt_str("manifest-list")?.map(str::to_string);
    let manifests = s.strings("manifests")?;
    if manifest_list.is_none() && (version >= FormatVersion::V2 || !s.has("manifests")) {
        return Err(s.error("manifest-list", "is missing"));
    }
    Ok(Snapshot {
        snapshot_id: s.req_i64("snapshot-id")?,
        parent_snapshot_id: none_if_negative(s.opt_i64("parent-snapshot-id")?),
        sequence_number: s.opt_i64("sequence-number")?.unwrap_or(0),
        timestamp_ms: s.req_i64("timestamp-ms")?,
        manifest_list,
        manifests,
        summary: match super::snapshots::summary_text(text) {
            Some(held) => held,
            None => summary(s.opt_obj("summary")?)?,
        },
        schema_id: s.opt_i32("schema-id")?,
        first_row_id: s.opt_i64("first-row-id")?,
        added_rows: s.opt_i64("added-rows")?,
    })
}

fn refs(root: &Obj<'_>, current: Option<SnapshotId>) -> Result<Vec<SnapshotRef>> {
    let mut refs = Vec::new();
    if let Some(obj) = root.opt_obj("refs")? {
        for (name, value) in obj.entries() {
            let r = obj.member_obj(name, value)?;
            let kind = match r.req_str("type")? {
                "branch" => RefKind::Branch,
                "tag" => RefKind::Tag,
                other => {
                    return Err(
                        r.error("type", &format!("must be 'branch' or 'tag', got '{other}'"))
                    );
                }
            };
            let snapshot_id = r.req_i64("snapshot-id")?;
            if snapshot_id == -1 {
                continue;
            }
            refs.push(SnapshotRef {
                name: name.clone(),
                kind,
                snapshot_id,
                min_snapshots_to_keep: r.opt_i32("min-snapshots-to-keep")?,
                max_snapshot_age_ms: r.opt_i64("max-snapshot-age-ms")?,
                max_ref_age_ms: r.opt_i64("max-ref-age-ms")?,
            });
        }
    }
    if let Some(current) = current
        && !refs.iter().any(|r| r.name == MAIN_BRANCH)
    {
        refs.insert(0, implicit_main(current));
    }
    Ok(refs)
}

fn implicit_main(snapshot_id: SnapshotId) -> SnapshotRef {
    SnapshotRef {
        name: MAIN_BRANCH.to_string(),
        kind: RefKind::Branch,
        snapshot_id,
        min_snapshots_to_keep: None,
        max_snapshot_age_ms: None,
        max_ref_age_ms: None,
    }
}

fn statistics_files(root: &Obj<'_>, key: &str, partition: bool) -> Result<Vec<StatisticsFile>> {
    root.objects(key)?
        .iter()
        .map(|e| {
            Ok(StatisticsFile {
                snapshot_id: e.req_i64("snapshot-id")?,
                path: e.req_str("statistics-path")?.to_string(),
                file_size_in_bytes: e.opt_i64("file-size-in-bytes")?,
                partition_statistics: partition,
            })
        })
        .collect()
}

fn schemas(root: &Obj<'_>) -> Result<(Vec<Value>, i32)> {
    if let Some(items) = root.opt_array("schemas")? {
        let current = match root.opt_i32("current-schema-id")? {
            Some(id) => id,
            None => first_schema_id(root, items)?,
        };
        return Ok((items.clone(), current));
    }
    match root.get("schema") {
        Some(schema @ Value::Object(_)) => {
            let legacy = root.opt_obj("schema")?;
            let id = match legacy {
                Some(s) => s.opt_i32("schema-id")?.unwrap_or(0),
                None => 0,
            };
            Ok((vec![schema.clone()], id))
        }
        Some(_) => Err(root.error("schema", "must be an object")),
        None => Err(root.error("schemas", "is missing")),
    }
}

fn first_schema_id(root: &Obj<'_>, items: &[Value]) -> Result<i32> {
    let schemas = root.objects("schemas")?;
    match schemas.first() {
        Some(s) => Ok(s.opt_i32("schema-id")?.unwrap_or(0)),
        None if items.is_empty() => Err(root.error("current-schema-id", "is missing")),
        None => Ok(0),
    }
}

fn partition_specs(root: &Obj<'_>) -> Result<(Vec<PartitionSpec>, i32)> {
    if root.has("partition-specs") {
        let specs = root
            .objects("partition-specs")?
            .iter()
            .map(|s| {
                Ok(PartitionSpec {
                    spec_id: s.req_i32("spec-id")?,
                    fields: partition_fields(s, "fields")?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let default = match root.opt_i32("default-spec-id")? {
            Some(id) => id,
            None => specs.iter().map(|s| s.spec_id).max().unwrap_or(0),
        };
        return Ok((specs, default));
    }
    if root.has("partition-spec") {
        let spec = PartitionSpec {
            spec_id: 0,
            fields: partition_fields(root, "partition-spec")?,
        };
        return Ok((vec![spec], root.opt_i32("default-spec-id")?.unwrap_or(0)));
    }
    Err(root.error("partition-specs", "is missing"))
}

/// Legacy v1 fields may lack `field-id`; the spec assigns 1000, 1001, ….
fn partition_fields(obj: &Obj<'_>, key: &str) -> Result<Vec<PartitionField>> {
    obj.objects(key)?
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let position = i32::try_from(i).unwrap_or(i32::MAX);
            Ok(PartitionField {
                name: f.req_str("name")?.to_string(),
                transform: f.req_str("transform")?.to_string(),
                source_id: f.req_i32("source-id")?,
                field_id: f
                    .opt_i32("field-id")?
                    .unwrap_or(position.saturating_add(1000)),
            })
        })
        .collect()
}
