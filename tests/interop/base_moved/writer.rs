//! The other writer: commits with real files (Parquet data and position delete files) and ref
//! moves, through a `MaintenanceTarget` of its own (no before-commit hook), so a path table is
//! committed through `metadata/` and a REST or Glue table through its catalog, exactly as
//! icetrim's statements commit. Also builds the setups some statements need (a branch ahead of
//! main, a staged append).

use std::collections::BTreeMap;

use bytes::Bytes;
use icetrim::internals::iceberg::commit::{CommitOptions, CommitOutcome};
use icetrim::internals::iceberg::locate::LocatedMetadata;
use icetrim::internals::iceberg::manifest::{
    DataFile, PartitionTuple, PartitionValue, inherit, read_manifest,
};
use icetrim::internals::iceberg::manifest_list::read_manifest_list;
use icetrim::internals::iceberg::metadata::TableMetadata;
use icetrim::internals::iceberg::spec::{DataContent, MAIN_BRANCH};
use icetrim::internals::iceberg::txn::refs::{Retention, create_branch, replace_branch};
use icetrim::internals::iceberg::txn::{
    FileChanges, Operation, PrepareOptions, Target, prepare_commit_with,
};
use icetrim::internals::maintain::target::MaintenanceTarget;
use rand::Rng;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;

use super::cases::Writer;
use super::parquet_files::{data_file, position_deletes};

/// What the writer's commit left, for the second invariant.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Ref `name` points at `snapshot` (a new snapshot, or a moved ref).
    RefAt { name: String, snapshot: i64 },
    /// The table is format version 3 from this commit on.
    FormatV3,
}

type Outcome<T> = Result<T, String>;

/// The newest metadata of the target, located.
pub async fn located(target: &MaintenanceTarget) -> Outcome<LocatedMetadata> {
    target
        .locate_newest("base-moved test")
        .await
        .map_err(|e| format!("locate {}: {e}", target.table_name))
}

/// The newest metadata of the target.
pub async fn newest(target: &MaintenanceTarget) -> Outcome<TableMetadata> {
    located(target).await.map(|l| l.metadata)
}

/// Run `writer` once on the newest metadata.
pub async fn apply(
    target: &MaintenanceTarget,
    writer: &Writer,
    rng: &mut StdRng,
) -> Outcome<Effect> {
    match writer {
        Writer::Rollback(id) | Writer::SetCurrent(id) => move_ref(target, MAIN_BRANCH, *id).await,
        Writer::ReplaceBranch(name, id) => move_ref(target, name, *id).await,
        Writer::Delete => delete_rows(target, rng).await,
        Writer::Append => {
            let snapshot = append_rows(target, Target::Main, rng).await?;
            Ok(Effect::RefAt {
                name: MAIN_BRANCH.into(),
                snapshot,
            })
        }
        Writer::UpgradeFormat => upgrade_to_v3(target).await,
    }
}

/// Point `name` (main or another branch) at `snapshot`.
pub async fn move_ref(target: &MaintenanceTarget, name: &str, snapshot: i64) -> Outcome<Effect> {
    let at = icetrim::Clock::now_ms(&icetrim::SystemClock);
    let owned = name.to_string();
    commit_metadata(target, move |md| {
        if owned == MAIN_BRANCH {
            icetrim::internals::iceberg::txn::refs::set_current_snapshot(md, snapshot, at)
        } else {
            let r = md.ref_named(&owned).cloned();
            let retention = Retention {
                min_snapshots_to_keep: r.as_ref().and_then(|r| r.min_snapshots_to_keep),
                max_snapshot_age_ms: r.as_ref().and_then(|r| r.max_snapshot_age_ms),
                max_ref_age_ms: r.as_ref().and_then(|r| r.max_ref_age_ms),
            };
            replace_branch(md, &owned, snapshot, retention)
        }
    })
    .await?;
    Ok(Effect::RefAt {
        name: name.to_string(),
        snapshot,
    })
}

/// Create branch `name` at `snapshot`.
pub async fn branch_at(target: &MaintenanceTarget, name: &str, snapshot: i64) -> Outcome<()> {
    let owned = name.to_string();
    commit_metadata(target, move |md| {
        create_branch(md, &owned, snapshot, Retention::default())
    })
    .await
}

/// Format version 2 → 3 (`next-row-id` starts at 0), as Java's `upgradeFormatVersion(3)`.
async fn upgrade_to_v3(target: &MaintenanceTarget) -> Outcome<Effect> {
    commit_metadata(target, |md| {
        let mut json = md.json();
        json.insert("format-version".into(), 3.into());
        json.entry("next-row-id").or_insert(0.into());
        TableMetadata::from_json(json, md.file())
    })
    .await?;
    Ok(Effect::FormatV3)
}

/// `target` with "now" read again: each commit gets its own time, as a real writer's would.
fn now(target: &MaintenanceTarget) -> MaintenanceTarget {
    let mut target = target.clone();
    target.now_ms = icetrim::Clock::now_ms(&icetrim::SystemClock);
    target
}

async fn commit_metadata<F>(target: &MaintenanceTarget, edit: F) -> Outcome<()>
where
    F: Fn(&TableMetadata) -> icetrim::Result<TableMetadata>,
{
    now(target)
        .commit_edit("base-moved writer", |md| edit(md).map(Some))
        .await
        .map(|_| ())
        .map_err(|e| format!("writer commit: {e}"))
}

/// Live data files of main's head, with their partition records.
async fn live_data_files(target: &MaintenanceTarget, md: &TableMetadata) -> Outcome<Vec<DataFile>> {
    let Some(snapshot) = md.current_snapshot() else {
        return Ok(Vec::new());
    };
    let io = &target.io;
    let list_path = snapshot.manifest_list.clone().ok_or("no manifest list")?;
    let read = |p: String| async move { io.read(&p).await.map_err(|e| format!("read {p}: {e}")) };
    let list = read_manifest_list(&read(list_path.clone()).await?, &list_path)
        .map_err(|e| e.to_string())?;
    let mut files = BTreeMap::new();
    for m in &list {
        let mut manifest = read_manifest(&read(m.manifest_path.clone()).await?, &m.manifest_path)
            .map_err(|e| e.to_string())?;
        inherit(&mut manifest.entries, m);
        for e in manifest.entries {
            if e.status.is_live() && e.data_file.content == DataContent::Data {
                files.insert(e.data_file.file_path.clone(), e.data_file);
            }
        }
    }
    Ok(files.into_values().collect())
}

/// The `part` value of a partition record (`None`: unpartitioned).
fn partition_value(partition: &PartitionTuple) -> Option<i32> {
    match partition.values().next() {
        Some(PartitionValue::Int(p)) => Some(*p),
        _ => None,
    }
}

/// A fresh file path under the table's `data/` folder.
fn new_path(md: &TableMetadata, kind: &str) -> String {
    format!(
        "{}/data/base-moved-{}-{kind}.parquet",
        md.location().trim_end_matches('/'),
        uuid::Uuid::new_v4().simple()
    )
}

async fn write(target: &MaintenanceTarget, path: &str, bytes: Bytes) -> Outcome<()> {
    target
        .io
        .overwrite(path, bytes)
        .await
        .map_err(|e| format!("write {path}: {e}"))
}

/// A position delete file removing some rows of one live data file of main's head.
async fn delete_rows(target: &MaintenanceTarget, rng: &mut StdRng) -> Outcome<Effect> {
    let base = located(target).await?;
    let md = &base.metadata;
    let files = live_data_files(target, md).await?;
    let victim = files
        .choose(rng)
        .ok_or("main has no live data file")?
        .clone();
    let n = rng.random_range(1..=victim.record_count.clamp(1, 3));
    let mut positions: Vec<i64> =
        rand::seq::index::sample(rng, victim.record_count as usize, n as usize)
            .into_iter()
            .map(|p| p as i64)
            .collect();
    positions.sort_unstable();
    let bytes = position_deletes(&victim.file_path, &positions)?;
    let path = new_path(md, "deletes");
    let size = bytes.len() as i64;
    write(target, &path, bytes).await?;
    let mut delete = DataFile::new(DataContent::PositionDeletes, &path, n as i64, size);
    delete.partition = victim.partition.clone();
    let changes = FileChanges {
        added_deletes: vec![delete],
        ..Default::default()
    };
    let snapshot = commit_files(target, &base, Operation::Delete, changes, Target::Main).await?;
    Ok(Effect::RefAt {
        name: MAIN_BRANCH.into(),
        snapshot,
    })
}

/// A data file of 1 to 5 rows with ids no generated file holds, in a partition main uses.
async fn append_rows(target: &MaintenanceTarget, on: Target, rng: &mut StdRng) -> Outcome<i64> {
    let base = located(target).await?;
    let md = &base.metadata;
    let files = live_data_files(target, md).await?;
    let partition = files.choose(rng).map(|f| f.partition.clone());
    let part = partition.as_ref().and_then(partition_value);
    let rows = rng.random_range(1..=5);
    let first = rng.random_range(1_000_000..2_000_000_000);
    let bytes = data_file(first, rows, part)?;
    let path = new_path(md, "data");
    let size = bytes.len() as i64;
    write(target, &path, bytes).await?;
    let mut data = DataFile::new(DataContent::Data, &path, rows, size);
    if let Some(p) = partition {
        data.partition = p;
    }
    let changes = FileChanges {
        added_data: vec![data],
        ..Default::default()
    };
    commit_files(target, &base, Operation::Append, changes, on).await
}

/// A staged append (on no ref, for `cherrypick_snapshot`): its snapshot id.
pub async fn staged_append(target: &MaintenanceTarget, rng: &mut StdRng) -> Outcome<i64> {
    append_rows(target, Target::Staged, rng).await
}

/// An append on branch `name`: the branch's new head.
pub async fn branch_append(
    target: &MaintenanceTarget,
    name: &str,
    rng: &mut StdRng,
) -> Outcome<i64> {
    append_rows(target, Target::Branch(name.to_string()), rng).await
}

/// A position delete on main's head, as a setup step.
pub async fn delete_on_main(target: &MaintenanceTarget, rng: &mut StdRng) -> Outcome<()> {
    delete_rows(target, rng).await.map(|_| ())
}

/// An append on main when its head has no live data file (a history whose deletes removed
/// everything), so that a delete always has rows to delete.
pub async fn ensure_main_has_data(target: &MaintenanceTarget, rng: &mut StdRng) -> Outcome<()> {
    let md = newest(target).await?;
    if live_data_files(target, &md).await?.is_empty() {
        append_rows(target, Target::Main, rng).await?;
    }
    Ok(())
}

/// Prepare a snapshot with `changes` on `base` and commit it (one attempt: nobody else writes
/// while the writer runs): the new snapshot's id.
async fn commit_files(
    target: &MaintenanceTarget,
    base: &LocatedMetadata,
    op: Operation,
    changes: FileChanges,
    on: Target,
) -> Outcome<i64> {
    let md = &base.metadata;
    let options = PrepareOptions {
        target: on,
        ..PrepareOptions::default()
    };
    let prepared = prepare_commit_with(&target.io, md, op, changes, Default::default(), &options)
        .await
        .map_err(|e| format!("prepare {}: {e}", op.as_str()))?;
    let snapshot = prepared.snapshot.snapshot_id;
    let target = now(target);
    let commit_options = CommitOptions {
        update_metadata_log: true,
        now_ms: Some(target.now_ms),
    };
    match target
        .commit(base, prepared.metadata, &commit_options)
        .await
    {
        Ok(CommitOutcome::Committed(_)) => Ok(snapshot),
        Ok(other) => Err(format!("writer commit of {}: {other:?}", op.as_str())),
        Err(e) => Err(format!("writer commit of {}: {e}", op.as_str())),
    }
}
