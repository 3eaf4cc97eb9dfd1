//! The tables read from manifest lists and manifests, with pyiceberg's `inspect` columns:
//!
//! - per snapshot (`snapshot_id = X`, `ref = 'b'`, else the current snapshot of `main`; a table
//!   without one has no rows): `iceberg_files` (live data and delete files), `iceberg_entries`
//!   (every entry, deleted ones included, with inherited snapshot ids and sequence numbers),
//!   `iceberg_manifests` (the manifest list) and `iceberg_partitions` (counts per partition);
//! - over every snapshot: `iceberg_all_files` and `iceberg_all_entries` (each manifest read once,
//!   deduplicated by path) and `iceberg_all_manifests` (every snapshot's list, with
//!   `reference_snapshot_id`).
//!
//! Manifests are read a few at a time but sent in list order, decoded a few Avro blocks at a time
//! and sent in batches of at most [`BATCH_ROWS`] rows, so neither a large table nor a large
//! manifest is ever held whole in memory.
//!
//! One Arrow schema serves every Iceberg table, so what pyiceberg types per table is text here:
//! `partition` is a `Map(String, Nullable(String))` (field name to value) and `readable_metrics`
//! a `Map(String, Tuple(...))` keyed by top-level column name (bounds as text, see [`values`]).
//! Per-snapshot tables also carry the `snapshot_id` read (`read_snapshot_id` in
//! `iceberg_entries`, whose `snapshot_id` is the entry's) and the `ref` named (`main` by default,
//! NULL when a snapshot id chose the snapshot): the columns the scope's predicates compare.

mod columns;
mod manifests;
mod partitions;
mod seen;
mod values;

use std::sync::Arc;

use datafusion::arrow::array::Int64Array;

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::Value as Json;

use super::{BatchSink, InspectedTable, Scope};
use crate::error::{Error, Result};
use crate::iceberg::avro::container::BlockPosition;
use crate::iceberg::manifest::{ManifestEntry, inherit_part, read_manifest_part};
use crate::iceberg::manifest_list::{ManifestFile, read_manifest_list};
use crate::iceberg::spec::{MAIN_BRANCH, Snapshot};

pub(super) use columns::{all_entries_fields, all_files_fields, entries_fields, files_fields};
pub(super) use manifests::{all_manifests_fields, manifests_fields};
pub(super) use partitions::partitions_fields;

/// Rows per batch at most.
pub(crate) const BATCH_ROWS: usize = 8192;
/// Manifests read at once.
const MANIFEST_READS: usize = 4;

/// The snapshot a per-snapshot table reads (`None`: the table has no current snapshot, or the
/// scope's snapshot id and ref disagree).
pub(crate) fn chosen_snapshot<'a>(
    table: &'a InspectedTable,
    scope: &Scope,
) -> Result<Option<&'a Snapshot>> {
    let m = &table.metadata;
    let unknown = |what: String| {
        Error::bad_arguments(format!(
            "Table {}.{} has no {what}",
            table.database, table.name
        ))
    };
    let by_ref = match &scope.ref_name {
        Some(name) => Some(
            m.ref_named(name)
                .ok_or_else(|| unknown(format!("branch or tag '{name}'")))?
                .snapshot_id,
        ),
        None => None,
    };
    let id = match (scope.snapshot_id, by_ref) {
        (Some(id), Some(r)) if id != r => return Ok(None),
        (Some(id), _) | (None, Some(id)) => id,
        (None, None) => match m.current_snapshot_id() {
            Some(id) => id,
            None => return Ok(None),
        },
    };
    m.snapshot(id)
        .map(Some)
        .ok_or_else(|| unknown(format!("snapshot {id}")))
}

/// The `ref` column's value for `scope`.
pub(crate) fn ref_label(scope: &Scope) -> Option<&str> {
    match (&scope.ref_name, scope.snapshot_id) {
        (Some(name), _) => Some(name),
        (None, Some(_)) => None,
        (None, None) => Some(MAIN_BRANCH),
    }
}

/// What every row of one table needs: its current schema's top-level columns and its specs.
pub(crate) struct TableShape {
    /// `(name, Iceberg type text or None when nested, field id)` of each top-level column.
    pub columns: Vec<(String, Option<String>, i32)>,
    /// `spec_id` → the result type of each of its fields, in order.
    pub spec_types: Vec<(i32, Vec<String>)>,
    /// `spec_id` → the transform of each of its fields, in order.
    pub spec_transforms: Vec<(i32, Vec<String>)>,
}

impl TableShape {
    pub(crate) fn of(table: &InspectedTable) -> TableShape {
        let m = &table.metadata;
        let schema = m
            .schemas()
            .iter()
            .find(|s| {
                s.get("schema-id").and_then(Json::as_i64) == Some(i64::from(m.current_schema_id()))
            })
            .or_else(|| m.schemas().last());
        let columns = schema
            .and_then(|s| s.get("fields"))
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
            .filter_map(|f| {
                let name = f.get("name")?.as_str()?.to_string();
                let id = i32::try_from(f.get("id")?.as_i64()?).ok()?;
                Some((name, f.get("type")?.as_str().map(str::to_string), id))
            })
            .collect();
        let spec_types = m
            .partition_specs()
            .iter()
            .map(|spec| {
                let types = spec
                    .fields
                    .iter()
                    .map(|f| {
                        let source = schema
                            .and_then(|s| values::field_type(s, i64::from(f.source_id)))
                            .and_then(Json::as_str)
                            .unwrap_or("");
                        values::transform_result(&f.transform, source)
                    })
                    .collect();
                (spec.spec_id, types)
            })
            .collect();
        let spec_transforms = m
            .partition_specs()
            .iter()
            .map(|s| {
                (
                    s.spec_id,
                    s.fields.iter().map(|f| f.transform.clone()).collect(),
                )
            })
            .collect();
        TableShape {
            columns,
            spec_types,
            spec_transforms,
        }
    }

    pub(crate) fn spec_types(&self, spec_id: i32) -> &[String] {
        self.spec_types
            .iter()
            .find(|(id, _)| *id == spec_id)
            .map_or(&[], |(_, t)| t.as_slice())
    }

    pub(crate) fn spec_transforms(&self, spec_id: i32) -> &[String] {
        self.spec_transforms
            .iter()
            .find(|(id, _)| *id == spec_id)
            .map_or(&[], |(_, t)| t.as_slice())
    }
}

fn list_path<'a>(table: &InspectedTable, snapshot: &'a Snapshot) -> Result<&'a str> {
    snapshot.manifest_list.as_deref().ok_or_else(|| {
        Error::not_implemented(format!(
            "Snapshot {} of {}.{} lists its manifests inline (v1 without a manifest list); the \
             metadata tables read manifest lists only",
            snapshot.snapshot_id, table.database, table.name
        ))
    })
}

/// Decodes a manifest list off the async task.
async fn decode_list(path: &str, bytes: Bytes) -> Result<Vec<ManifestFile>> {
    let path = path.to_string();
    crate::pool::off_task(move || read_manifest_list(&bytes, &path)).await
}

/// The manifest list of `snapshot`.
pub(crate) async fn manifest_list(
    table: &InspectedTable,
    snapshot: &Snapshot,
) -> Result<Vec<ManifestFile>> {
    let path = list_path(table, snapshot)?;
    let bytes = table.io.read_immutable(path, None).await?;
    decode_list(path, bytes).await
}

/// The entries of each manifest of a list (inheritance applied), in list order, a part of a
/// manifest at a time (whole Avro blocks, at least [`BATCH_ROWS`] entries): the files are fetched
/// [`MANIFEST_READS`] at a time ahead, and decoded only when asked for. Reading ahead is plain
/// I/O: a decoding permit (shared by every statement) is taken only by the caller's own `next`,
/// so a stream left unpolled while its rows are sent never holds one. A merged manifest of 50,000
/// entries is never decoded whole.
pub(crate) struct ManifestEntries<'a> {
    reads: BoxStream<'a, Result<(&'a ManifestFile, Bytes)>>,
    /// The manifest being read: its bytes, where its next part starts, the next row id.
    current: Option<PartlyRead<'a>>,
}

struct PartlyRead<'a> {
    manifest: &'a ManifestFile,
    bytes: Bytes,
    next: BlockPosition,
    next_row_id: Option<i64>,
}

impl<'a> ManifestEntries<'a> {
    /// The next part of a manifest's entries; a manifest may come in several parts, in order.
    pub(crate) async fn next(&mut self) -> Option<Result<(&'a ManifestFile, Vec<ManifestEntry>)>> {
        let mut part = match self.current.take() {
            Some(part) => part,
            None => match self.reads.next().await? {
                Ok((manifest, bytes)) => PartlyRead {
                    manifest,
                    bytes,
                    next: BlockPosition::default(),
                    next_row_id: manifest.first_row_id,
                },
                Err(e) => return Some(Err(e)),
            },
        };
        let path = part.manifest.manifest_path.clone();
        let (bytes, from) = (part.bytes.clone(), part.next);
        let decoded =
            crate::pool::off_task(move || read_manifest_part(&bytes, &path, from, BATCH_ROWS))
                .await;
        let (mut entries, next) = match decoded {
            Ok(read) => read,
            Err(e) => return Some(Err(e)),
        };
        let manifest = part.manifest;
        inherit_part(&mut entries, manifest, &mut part.next_row_id);
        if let Some(next) = next {
            part.next = next;
            self.current = Some(part);
        }
        Some(Ok((manifest, entries)))
    }
}

pub(crate) fn manifest_entries<'a>(
    table: &'a InspectedTable,
    list: &'a [ManifestFile],
) -> ManifestEntries<'a> {
    let reads = futures::stream::iter(list.iter())
        .map(move |m| async move {
            let bytes = table
                .io
                .read_immutable(&m.manifest_path, m.length())
                .await?;
            Ok((m, bytes))
        })
        .buffered(MANIFEST_READS)
        .boxed();
    ManifestEntries {
        reads,
        current: None,
    }
}

/// Which shape of entry rows: live files, or every entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryTable {
    Files,
    Entries,
}

/// Sends the rows of one manifest (`entries` read from `manifest`), [`BATCH_ROWS`] at a time.
async fn send_entries(
    kind: EntryTable,
    table: &InspectedTable,
    shape: &TableShape,
    manifest: &ManifestFile,
    mut entries: Vec<ManifestEntry>,
    read: Option<&columns::ReadContext>,
    sink: &BatchSink,
) -> Result<bool> {
    if kind == EntryTable::Files {
        entries.retain(|e| e.status.is_live());
    }
    for chunk in entries.chunks(BATCH_ROWS) {
        let cols = columns::build(kind, shape, manifest.partition_spec_id, chunk, read)?;
        if !sink.send(table, cols).await? {
            return Ok(false);
        }
    }
    Ok(true)
}

fn read_context(snapshot: &Snapshot, scope: &Scope) -> columns::ReadContext {
    columns::ReadContext {
        snapshot_id: snapshot.snapshot_id,
        ref_name: ref_label(scope).map(str::to_string),
    }
}

/// `iceberg_files` / `iceberg_entries`: the snapshot `scope` chooses.
pub(crate) async fn produce(
    kind: EntryTable,
    table: &InspectedTable,
    scope: &Scope,
    sink: &BatchSink,
) -> Result<bool> {
    let Some(snapshot) = chosen_snapshot(table, scope)? else {
        return Ok(true);
    };
    let list = manifest_list(table, snapshot).await?;
    let shape = TableShape::of(table);
    let read = read_context(snapshot, scope);
    let mut manifests = manifest_entries(table, &list);
    while let Some(next) = manifests.next().await {
        let (manifest, entries) = next?;
        if !send_entries(kind, table, &shape, manifest, entries, Some(&read), sink).await? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The manifest lists of every snapshot, in metadata order, fetched [`MANIFEST_READS`] at a
/// time ahead and decoded when asked for (see [`ManifestEntries`]).
pub(crate) struct ManifestLists<'a> {
    reads: BoxStream<'a, Result<(&'a Snapshot, &'a str, Bytes)>>,
}

impl<'a> ManifestLists<'a> {
    pub(crate) async fn next(&mut self) -> Option<Result<(&'a Snapshot, Vec<ManifestFile>)>> {
        let (s, path, bytes) = match self.reads.next().await? {
            Ok(read) => read,
            Err(e) => return Some(Err(e)),
        };
        Some(decode_list(path, bytes).await.map(|l| (s, l)))
    }
}

fn every_manifest_list(table: &InspectedTable) -> ManifestLists<'_> {
    let reads = futures::stream::iter(table.metadata.snapshots().iter())
        .map(move |s| async move {
            let path = list_path(table, s)?;
            let bytes = table.io.read_immutable(path, None).await?;
            Ok((s, path, bytes))
        })
        .buffered(MANIFEST_READS)
        .boxed();
    ManifestLists { reads }
}

/// `iceberg_all_files` / `iceberg_all_entries`: every manifest of every snapshot, each read once
/// (the first snapshot listing it, in metadata order).
pub(crate) async fn produce_all(
    kind: EntryTable,
    table: &InspectedTable,
    sink: &BatchSink,
) -> Result<bool> {
    let shape = TableShape::of(table);
    let mut seen = seen::SeenPaths::default();
    let mut lists = every_manifest_list(table);
    while let Some(next) = lists.next().await {
        let (_, list) = next?;
        let new: Vec<ManifestFile> = list
            .into_iter()
            .filter(|m| seen.insert(&m.manifest_path))
            .collect();
        let mut manifests = manifest_entries(table, &new);
        while let Some(next) = manifests.next().await {
            let (manifest, entries) = next?;
            if !send_entries(kind, table, &shape, manifest, entries, None, sink).await? {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// `iceberg_manifests`: the manifest list of the snapshot `scope` chooses.
pub(crate) async fn produce_manifests(
    table: &InspectedTable,
    scope: &Scope,
    sink: &BatchSink,
) -> Result<bool> {
    let Some(snapshot) = chosen_snapshot(table, scope)? else {
        return Ok(true);
    };
    let list = manifest_list(table, snapshot).await?;
    let shape = TableShape::of(table);
    let read = read_context(snapshot, scope);
    for chunk in list.chunks(BATCH_ROWS) {
        let mut cols = manifests::common_columns(chunk, &shape);
        cols.extend(columns::repeated(&read, chunk.len()));
        if !sink.send(table, cols).await? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `iceberg_all_manifests`: the manifest list of every snapshot, one batch per snapshot.
pub(crate) async fn produce_all_manifests(
    table: &InspectedTable,
    sink: &BatchSink,
) -> Result<bool> {
    let shape = TableShape::of(table);
    let mut lists = every_manifest_list(table);
    while let Some(next) = lists.next().await {
        let (snapshot, list) = next?;
        for chunk in list.chunks(BATCH_ROWS) {
            let mut cols = manifests::common_columns(chunk, &shape);
            cols.push(Arc::new(Int64Array::from_iter_values(std::iter::repeat_n(
                snapshot.snapshot_id,
                chunk.len(),
            ))));
            cols.push(manifests::key_metadata(chunk));
            if !sink.send(table, cols).await? {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// `iceberg_partitions`: the live files of the snapshot `scope` chooses, counted per partition.
pub(crate) async fn produce_partitions(
    table: &InspectedTable,
    scope: &Scope,
    sink: &BatchSink,
) -> Result<bool> {
    let Some(snapshot) = chosen_snapshot(table, scope)? else {
        return Ok(true);
    };
    let list = manifest_list(table, snapshot).await?;
    let shape = TableShape::of(table);
    let mut stats = partitions::PartitionStats::default();
    let mut manifests = manifest_entries(table, &list);
    while let Some(next) = manifests.next().await {
        let (manifest, entries) = next?;
        let types = shape.spec_types(manifest.partition_spec_id);
        for e in entries.iter().filter(|e| e.status.is_live()) {
            stats.add(&table.metadata, manifest.partition_spec_id, types, e);
        }
    }
    let read = read_context(snapshot, scope);
    for chunk in stats.rows.chunks(BATCH_ROWS) {
        let mut cols = partitions::partitions_columns(chunk);
        cols.extend(columns::repeated(&read, chunk.len()));
        if !sink.send(table, cols).await? {
            return Ok(false);
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests;
