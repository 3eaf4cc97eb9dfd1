//! Writing a manifest rewrite: the new manifests of the selected groups ([`write_outputs`]) and
//! the manifest list and metadata of the `replace` snapshot that lists them ([`new_snapshot`]).
//! Nothing here commits.

use std::collections::BTreeSet;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};

use super::decide::{LiveEntry, Selection, cluster, partition_key};
use super::execute::{CODEC, PROCEDURE, Written};
use super::explain::PlannedManifest;
use super::reuse::PlannedFrom;
use crate::error::{Error, Result};
use crate::iceberg::manifest::{Manifest, ManifestEntry, ManifestWriter, NewManifest};
use crate::iceberg::manifest_list::{ManifestFile, ManifestListMeta, write_manifest_list};
use crate::iceberg::metadata::TableMetadata;
use crate::iceberg::spec::{EntryStatus, FormatVersion, Snapshot};
use crate::iceberg::txn::names::{
    current_schema_json, fresh_snapshot_id, manifest_list_path, manifest_path, metadata_dir,
    spec_json,
};
use crate::iceberg::txn::summary::{Tally, build_summary};
use crate::io::FileIO;
use crate::maintain::target::MaintenanceTarget;
use crate::progress::Phase;

/// One new manifest: its entries as (manifest index, entry index) and its plan row.
#[derive(Debug, Clone)]
pub(super) struct Output {
    entries: Vec<(usize, usize)>,
    pub(super) planned: PlannedManifest,
}

/// Cluster each group's live entries into its new manifests.
pub(super) fn regroup(
    list: &[ManifestFile],
    selection: &Selection,
    manifests: &[Option<Manifest>],
) -> Vec<Output> {
    let mut outputs = Vec::new();
    for (g, group) in selection.groups.iter().enumerate() {
        let mut refs = Vec::new();
        let mut entries = Vec::new();
        for &i in &group.manifests {
            let Some(manifest) = &manifests[i] else {
                continue;
            };
            // Each entry stands for an equal share of its manifest's length.
            let total = manifest.entries.len().max(1) as i64;
            let length = list[i].manifest_length.max(total);
            for (j, e) in manifest.entries.iter().enumerate() {
                if !e.status.is_live() {
                    continue;
                }
                refs.push((i, j));
                entries.push(LiveEntry {
                    key: partition_key(&e.data_file.partition),
                    bytes: length / total,
                });
            }
        }
        if entries.is_empty() {
            continue;
        }
        for bin in cluster(&entries, group.target_count) {
            let mut partitions = BTreeSet::new();
            for &k in &bin {
                partitions.insert(&entries[k].key);
            }
            outputs.push(Output {
                entries: bin.iter().map(|&k| refs[k]).collect(),
                planned: PlannedManifest {
                    spec_id: group.spec_id,
                    content: group.content,
                    entries: bin.len(),
                    estimated_bytes: bin.iter().map(|&k| entries[k].bytes).sum(),
                    partitions: partitions.len(),
                    group: g,
                },
            });
        }
    }
    outputs
}

/// Write every new manifest (Iceberg's schema for the table's format version, the partition type
/// of the group's spec; every live entry EXISTING with its numbers explicit and every metric kept).
pub(super) async fn write_outputs(
    target: &MaintenanceTarget,
    metadata: &TableMetadata,
    list: &[ManifestFile],
    selection: &Selection,
    manifests: &[Option<Manifest>],
    outputs: &[Output],
) -> Result<Written> {
    let dir = metadata_dir(metadata);
    let uuid = uuid::Uuid::new_v4();
    let version = metadata.format_version();
    let current_schema = current_schema_json(metadata)?;
    let mut files = Vec::new();
    let mut new_manifests = Vec::new();
    let mut entries = 0usize;
    target
        .progress
        .start(Phase::WritingManifests, Some(outputs.len()));
    for (n, output) in outputs.iter().enumerate() {
        let group = &selection.groups[output.planned.group];
        let source = group
            .manifests
            .iter()
            .find_map(|&i| manifests[i].as_ref())
            .ok_or_else(|| Error::logical(format!("{PROCEDURE}: a group without manifests")))?;
        let mut writer = new_writer(metadata, version, source, group.spec_id, &current_schema)?;
        for &(i, j) in &output.entries {
            let Some(manifest) = &manifests[i] else {
                continue;
            };
            let mut entry: ManifestEntry = manifest.entries[j].clone();
            entry.status = EntryStatus::Existing;
            writer.add(&entry).map_err(|e| {
                Error::new(
                    e.kind(),
                    format!(
                        "{PROCEDURE} on {}: cannot rewrite an entry of '{}': {}",
                        target.table_name,
                        list[i].manifest_path,
                        e.message()
                    ),
                )
            })?;
            entries += 1;
        }
        let done = writer.finish()?;
        let path = manifest_path(&dir, &uuid, n);
        let min_seq = done.min_sequence_number;
        new_manifests.push((done.manifest_file(path.clone(), 0, 0), min_seq));
        target.progress.file_done(done.bytes.len());
        files.push((path, done.bytes));
    }
    let replaced = selection
        .groups
        .iter()
        .flat_map(|g| g.manifests.iter().map(|&i| list[i].manifest_path.clone()))
        .collect();
    let io = &target.io;
    let concurrency = target.settings.metadata_read_concurrency();
    futures::stream::iter(files)
        .map(|(path, bytes)| async move { io.overwrite(&path, Bytes::from(bytes)).await })
        .buffer_unordered(concurrency)
        .boxed()
        .try_collect::<Vec<()>>()
        .await?;
    Ok(Written {
        manifests: new_manifests,
        replaced,
        entries,
        planned: PlannedFrom {
            snapshot_id: metadata.current_snapshot_id().unwrap_or_default(),
            format_version: version,
        },
    })
}

/// A writer with Iceberg's manifest schema for `version` and the partition type of `spec_id`
/// (from the source manifest's header, else the table's spec); when that cannot be built (an
/// unknown transform), a rewrite of the source manifest's own schema and header.
fn new_writer(
    metadata: &TableMetadata,
    version: FormatVersion,
    source: &Manifest,
    spec_id: i32,
    current_schema: &str,
) -> Result<ManifestWriter> {
    let schema = source.meta_str("schema").unwrap_or(current_schema);
    let spec = match source.meta_str("partition-spec") {
        Some(spec) => spec.to_string(),
        None => spec_json(metadata, spec_id)?,
    };
    ManifestWriter::new(&NewManifest {
        format_version: version,
        content: source.content(),
        table_schema_json: schema,
        partition_spec_json: &spec,
        partition_spec_id: spec_id,
        codec: CODEC,
    })
    .or_else(|_| ManifestWriter::rewrite_of(source, CODEC))
}

/// Write the manifest list of the `replace` snapshot on top of `parent` (new manifests first, then
/// the parent's other manifests in order) and build the metadata that makes it current.
pub(super) async fn new_snapshot(
    io: &FileIO,
    metadata: &TableMetadata,
    parent: &Snapshot,
    list: &[ManifestFile],
    written: &Written,
    now_ms: i64,
) -> Result<(TableMetadata, String, i64)> {
    let version = metadata.format_version();
    let snapshot_id = fresh_snapshot_id(metadata);
    let sequence_number = if version >= FormatVersion::V2 {
        metadata.last_sequence_number() + 1
    } else {
        0
    };
    let first_row_id = (version >= FormatVersion::V3).then(|| metadata.next_row_id().unwrap_or(0));
    let mut new_list: Vec<ManifestFile> = written
        .manifests
        .iter()
        .map(|(m, min_seq)| {
            let mut m = m.clone();
            m.added_snapshot_id = snapshot_id;
            m.sequence_number = sequence_number;
            m.min_sequence_number = min_seq.unwrap_or(sequence_number);
            m
        })
        .collect();
    let kept: Vec<ManifestFile> = list
        .iter()
        .filter(|m| !written.replaced.contains(&m.manifest_path))
        .cloned()
        .collect();
    let kept_count = kept.len();
    new_list.extend(kept);
    let meta = ManifestListMeta {
        format_version: version,
        snapshot_id,
        parent_snapshot_id: Some(parent.snapshot_id),
        sequence_number,
        first_row_id,
    };
    let out = write_manifest_list(&meta, &new_list, CODEC)?;
    let path = manifest_list_path(&metadata_dir(metadata), snapshot_id, &uuid::Uuid::new_v4());
    io.overwrite(&path, Bytes::from(out.bytes)).await?;
    let mut summary = build_summary(
        "replace",
        &Tally::default(),
        &Tally::default(),
        Some(&parent.summary.to_map()),
    );
    for (key, value) in [
        ("manifests-created", written.manifests.len()),
        ("manifests-kept", kept_count),
        ("manifests-replaced", written.replaced.len()),
        ("entries-processed", written.entries),
    ] {
        summary.insert(key.to_string(), value.to_string());
    }
    let added_rows = match (first_row_id, out.next_row_id) {
        (Some(first), Some(next)) => Some(next - first),
        _ => None,
    };
    let snapshot = Snapshot {
        snapshot_id,
        parent_snapshot_id: Some(parent.snapshot_id),
        sequence_number,
        timestamp_ms: now_ms.max(parent.timestamp_ms),
        manifest_list: Some(path.clone()),
        manifests: Vec::new(),
        summary: summary.into(),
        schema_id: Some(metadata.current_schema_id()),
        first_row_id,
        added_rows,
    };
    let mut md = metadata.clone();
    md.add_snapshot(&snapshot)?;
    if version >= FormatVersion::V2 {
        md.set_last_sequence_number(sequence_number)?;
    }
    if let Some(next) = out.next_row_id {
        md.set_next_row_id(next)?;
    }
    md.set_current_snapshot(Some(snapshot_id), snapshot.timestamp_ms)?;
    Ok((md, path, snapshot_id))
}
