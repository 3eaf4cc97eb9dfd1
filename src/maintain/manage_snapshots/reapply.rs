//! The I/O of a cherry-pick (`cherrypick_snapshot` of an append or a dynamic overwrite): reading
//! the files the picked snapshot added and removed, checking them against the current head
//! (`cherrypick.rs` decides), and writing the re-applied snapshot on `main`.

use std::collections::HashSet;

use futures::{StreamExt, TryStreamExt};

use super::cherrypick::{PartitionKey, Reapply, check_replaced_partitions};
use super::explain::SnapshotExplainRow;
use crate::error::{Error, Result};
use crate::iceberg::manifest::{DataFile, inherit, read_manifest};
use crate::iceberg::manifest_list::read_manifest_list;
use crate::iceberg::metadata::TableMetadata;
use crate::iceberg::spec::{EntryStatus, ManifestContent, Snapshot, SnapshotId};
use crate::iceberg::txn::{FileChanges, Operation, PrepareOptions, Target, prepare_commit_with};
use crate::io::FileIO;
use crate::maintain::target::MaintenanceTarget;

/// Manifests read at once.
const READ_CONCURRENCY: usize = 16;

/// The files a cherry-pick re-applies.
pub(super) struct Picked {
    added: Vec<DataFile>,
    removed: Vec<String>,
}

pub(super) fn reapply_row(
    metadata: &TableMetadata,
    reapply: &Reapply,
    picked: &Picked,
) -> SnapshotExplainRow {
    let summary: Vec<String> = reapply
        .summary
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    SnapshotExplainRow {
        kind: "snapshot".into(),
        name: "main".into(),
        before: metadata
            .current_snapshot_id()
            .map(|id| format!("branch {id}")),
        after: Some(format!("new {} snapshot", reapply.operation)),
        detail: format!(
            "{}; adds {} data file(s), removes {}",
            summary.join(", "),
            picked.added.len(),
            picked.removed.len()
        ),
    }
}

/// The files the picked snapshot added and removed (its own manifests' ADDED and DELETED
/// entries), checked: data files only, of the default spec; for a dynamic overwrite, no file
/// added since its parent in a partition it replaces.
pub(super) async fn picked_changes(
    target: &MaintenanceTarget,
    metadata: &TableMetadata,
    reapply: &Reapply,
) -> Result<Picked> {
    let picked = metadata
        .snapshot(reapply.source)
        .ok_or_else(|| Error::logical("cherry-pick: the picked snapshot vanished"))?;
    let own = own_entries(&target.io, picked).await?;
    let default_spec = metadata.default_spec_id();
    let mut added = Vec::new();
    let mut replaced: Vec<PartitionKey> = Vec::new();
    for (spec_id, content, status, file) in own {
        if status != EntryStatus::Added {
            continue;
        }
        if content == ManifestContent::Deletes {
            return Err(Error::not_implemented(format!(
                "Cannot cherry-pick snapshot {}: it adds delete files ({}), which icetrim does \
                 not re-apply",
                reapply.source, file.file_path
            )));
        }
        if spec_id != default_spec {
            return Err(Error::not_implemented(format!(
                "Cannot cherry-pick snapshot {}: file {} is of partition spec {spec_id}, not the \
                 table's default spec {default_spec}",
                reapply.source, file.file_path
            )));
        }
        replaced.push((spec_id, format!("{:?}", file.partition)));
        let mut file = file;
        file.first_row_id = None;
        added.push(file);
    }
    let mut removed = Vec::new();
    if reapply.replace_partitions {
        removed = removed_data_files(&target.io, metadata, picked).await?;
    }
    if reapply.replace_partitions {
        let mut since = Vec::new();
        for id in &reapply.check_since {
            if let Some(s) = metadata.snapshot(*id) {
                for (spec_id, content, status, file) in own_entries(&target.io, s).await? {
                    if content == ManifestContent::Data && status == EntryStatus::Added {
                        since.push((spec_id, format!("{:?}", file.partition)));
                    }
                }
            }
        }
        check_replaced_partitions(&replaced, &since)?;
    }
    if added.is_empty() && removed.is_empty() {
        return Err(Error::bad_arguments(format!(
            "Cannot cherry-pick snapshot {}: it changes no data file",
            reapply.source
        )));
    }
    Ok(Picked { added, removed })
}

/// The data files live in the picked snapshot's parent and not in the snapshot: what it removed.
/// Computed from the two snapshots' live files rather than from the snapshot's DELETED entries,
/// which a writer may not keep (a rewritten manifest with nothing live left is dropped from the
/// list by `iceberg::txn::prepare`).
async fn removed_data_files(
    io: &FileIO,
    metadata: &TableMetadata,
    picked: &Snapshot,
) -> Result<Vec<String>> {
    let Some(parent) = picked
        .parent_snapshot_id
        .and_then(|id| metadata.snapshot(id))
    else {
        return Ok(Vec::new());
    };
    let before = live_data_paths(io, parent).await?;
    let after: HashSet<String> = live_data_paths(io, picked).await?.into_iter().collect();
    Ok(before.into_iter().filter(|p| !after.contains(p)).collect())
}

/// The paths of a snapshot's live data files, in manifest order, each once.
async fn live_data_paths(io: &FileIO, snapshot: &Snapshot) -> Result<Vec<String>> {
    let list = manifest_list(io, snapshot).await?;
    let data: Vec<_> = list
        .into_iter()
        .filter(|m| m.content == ManifestContent::Data)
        .collect();
    let read = futures::stream::iter(data.into_iter().map(|m| async move {
        let bytes = io.read_immutable(&m.manifest_path, m.length()).await?;
        read_manifest(&bytes, &m.manifest_path).map(|manifest| manifest.entries)
    }))
    .buffered(READ_CONCURRENCY)
    .try_collect::<Vec<_>>()
    .await?;
    let mut seen = HashSet::new();
    Ok(read
        .into_iter()
        .flatten()
        .filter(|e| e.status != EntryStatus::Deleted)
        .map(|e| e.data_file.file_path)
        .filter(|p| seen.insert(p.clone()))
        .collect())
}

async fn manifest_list(
    io: &FileIO,
    snapshot: &Snapshot,
) -> Result<Vec<crate::iceberg::manifest_list::ManifestFile>> {
    let Some(list_path) = &snapshot.manifest_list else {
        return Err(Error::not_implemented(format!(
            "Snapshot {} lists its manifests inline (v1 without a manifest list); cherry-picking \
             it is not supported",
            snapshot.snapshot_id
        )));
    };
    let bytes = io.read_immutable(list_path, None).await?;
    read_manifest_list(&bytes, list_path)
}

/// The entries a snapshot wrote itself: `(spec id, manifest content, status, file)` of the
/// ADDED and DELETED entries carrying its id, in the manifests it added (Java's
/// `addedDataFiles`).
async fn own_entries(
    io: &FileIO,
    snapshot: &Snapshot,
) -> Result<Vec<(i32, ManifestContent, EntryStatus, DataFile)>> {
    let list = manifest_list(io, snapshot).await?;
    let id: SnapshotId = snapshot.snapshot_id;
    let own: Vec<_> = list
        .into_iter()
        .filter(|m| m.added_snapshot_id == id)
        .collect();
    let read = futures::stream::iter(own.into_iter().map(|m| async move {
        let bytes = io.read_immutable(&m.manifest_path, m.length()).await?;
        let mut manifest = read_manifest(&bytes, &m.manifest_path)?;
        inherit(&mut manifest.entries, &m);
        Ok::<_, Error>((m, manifest.entries))
    }))
    .buffered(READ_CONCURRENCY)
    .try_collect::<Vec<_>>()
    .await?;
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for (m, entries) in read {
        for e in entries {
            let mine = e.snapshot_id == Some(id);
            let counted = matches!(e.status, EntryStatus::Added | EntryStatus::Deleted);
            if mine && counted && seen.insert((e.status as u8, e.data_file.file_path.clone())) {
                out.push((m.partition_spec_id, m.content, e.status, e.data_file));
            }
        }
    }
    Ok(out)
}

pub(super) async fn write_snapshot(
    target: &MaintenanceTarget,
    metadata: &TableMetadata,
    reapply: &Reapply,
    picked: Picked,
) -> Result<crate::iceberg::txn::PreparedCommit> {
    let operation = if reapply.operation == "append" {
        Operation::Append
    } else {
        Operation::Overwrite
    };
    let changes = FileChanges {
        added_data: picked.added,
        added_deletes: Vec::new(),
        removed: picked.removed,
    };
    let options = PrepareOptions {
        target: Target::Main,
        snapshot_id: None,
        timestamp_ms: Some(target.now_ms),
        ..PrepareOptions::default()
    };
    prepare_commit_with(
        &target.io,
        metadata,
        operation,
        changes,
        reapply.summary.clone(),
        &options,
    )
    .await
}
