//! The tables read from manifests: `system.iceberg_files` (the live content files of one
//! snapshot) and `system.iceberg_entries` (every entry of that snapshot's manifests, deleted ones
//! included, with inherited snapshot ids and sequence numbers).
//!
//! The snapshot is chosen by the scope: `snapshot_id = X`, `ref = 'b'`, else the current snapshot
//! of `main` (a table without one has no rows). Manifests are read a few at a time but sent in the
//! manifest list's order, one batch per manifest (at most [`BATCH_ROWS`] rows each), so a large
//! table is never held whole in memory.
//!
//! Columns follow pyiceberg's `inspect.files()` / `inspect.entries()` names, with two differences
//! forced by one schema serving every table: `partition` is a `Map(String, Nullable(String))`
//! (partition field name to its value as text) and `readable_metrics` a
//! `Map(String, Tuple(...))` keyed by top-level column name (bounds as text, see [`values`]).
//! Every row also carries the `snapshot_id` read (`read_snapshot_id` in `iceberg_entries`, whose
//! `snapshot_id` is the entry's) and the `ref` named (`main` by default, NULL when a snapshot id
//! chose the snapshot), the columns the scope's predicates compare.

mod columns;
mod values;

use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::Value as Json;

use super::{BatchSink, InspectedTable, Scope};
use crate::error::{Error, Result};
use crate::iceberg::manifest::{ManifestEntry, inherit, read_manifest};
use crate::iceberg::manifest_list::{ManifestFile, read_manifest_list};
use crate::iceberg::spec::{MAIN_BRANCH, Snapshot};

pub(super) use columns::{entries_fields, files_fields};

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
        TableShape {
            columns,
            spec_types,
        }
    }

    pub(crate) fn spec_types(&self, spec_id: i32) -> &[String] {
        self.spec_types
            .iter()
            .find(|(id, _)| *id == spec_id)
            .map_or(&[], |(_, t)| t.as_slice())
    }
}

/// The manifest list of `snapshot`.
pub(crate) async fn manifest_list(
    table: &InspectedTable,
    snapshot: &Snapshot,
) -> Result<Vec<ManifestFile>> {
    let Some(path) = snapshot.manifest_list.clone() else {
        return Err(Error::not_implemented(format!(
            "Snapshot {} of {}.{} lists its manifests inline (v1 without a manifest list); the \
             metadata tables read manifest lists only",
            snapshot.snapshot_id, table.database, table.name
        )));
    };
    let (_, list) = table
        .io
        .read_immutable_and(&path.clone(), None, move |bytes| {
            read_manifest_list(bytes, &path)
        })
        .await?;
    Ok(list)
}

/// The entries of each manifest of `list` (inheritance applied), in list order, read
/// [`MANIFEST_READS`] at a time.
pub(crate) fn manifest_entries<'a>(
    table: &'a InspectedTable,
    list: &'a [ManifestFile],
) -> BoxStream<'a, Result<(&'a ManifestFile, Vec<ManifestEntry>)>> {
    futures::stream::iter(list.iter())
        .map(move |m| async move {
            let path = m.manifest_path.clone();
            let (_, manifest) = table
                .io
                .read_immutable_and(&m.manifest_path, m.length(), move |bytes| {
                    read_manifest(bytes, &path)
                })
                .await?;
            let mut entries = manifest.entries;
            inherit(&mut entries, m);
            Ok((m, entries))
        })
        .buffered(MANIFEST_READS)
        .boxed()
}

/// Which of the two tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryTable {
    Files,
    Entries,
}

/// Sends the rows of `kind` for the snapshot `scope` chooses.
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
    let shape = Arc::new(TableShape::of(table));
    let read = columns::ReadContext {
        snapshot_id: snapshot.snapshot_id,
        ref_name: ref_label(scope).map(str::to_string),
    };
    let mut manifests = manifest_entries(table, &list);
    while let Some(next) = manifests.next().await {
        let (manifest, mut entries) = next?;
        if kind == EntryTable::Files {
            entries.retain(|e| e.status.is_live());
        }
        for chunk in entries.chunks(BATCH_ROWS) {
            let cols = columns::build(kind, &shape, manifest.partition_spec_id, chunk, &read)?;
            if !sink.send(table, cols).await? {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests;
