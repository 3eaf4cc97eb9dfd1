//! Moving `main` and branches along history (Iceberg Java `SetSnapshotOperation`,
//! `UpdateSnapshotReferencesOperation.fastForward`, `CherryPickOperation`; Spark's procedures).
//! Pure: metadata in, a [`Change`] (new metadata or nothing, explain rows, the ids before and
//! after) or an error out. Errors carry Java's messages; the executor adds the table's name.
//!
//! - `rollback_to_snapshot(id)`: `id` must be listed ("Cannot roll back to unknown snapshot id")
//!   and be the current snapshot or one of its ancestors ("Cannot roll back to snapshot, not an
//!   ancestor of the current state").
//! - `rollback_to_timestamp(ts)`: the ancestor of the current snapshot with the largest
//!   `timestamp-ms` strictly below `ts` ("Cannot roll back, no valid snapshot older than").
//! - `set_current_snapshot(id | ref)`: any listed snapshot, or the head of a ref.
//! - `fast_forward(branch, to)`: `to` must exist ("Ref does not exist"), `branch` must be a branch
//!   ("Ref b is a tag not a branch") whose head is an ancestor of `to`'s head ("Cannot
//!   fast-forward: b is not an ancestor of to"). A `branch` that does not exist is created at
//!   `to`'s head, as current Java does (`testFastForwardBranchNonExistingFromBranchCreatesTheBranch`;
//!   older releases refused with "Target branch does not exist").
//! - Moving `main` also sets `current-snapshot-id` and appends to `snapshot-log`; moving `main`
//!   to where it is writes nothing.

use super::Change;
use super::ancestry::{current_ancestors, is_ancestor_of, is_current_ancestor};
use super::explain::{SnapshotExplainRow, ref_text};
use crate::error::{Error, Result};
use crate::iceberg::metadata::TableMetadata;
use crate::iceberg::spec::{MAIN_BRANCH, RefKind, SnapshotId, SnapshotRef};
use crate::plan::SnapshotSelector;

/// Point `main` at `to` (listed), logged at `now_ms`. Nothing to write when it is there already.
pub fn move_main(metadata: &TableMetadata, to: SnapshotId, now_ms: i64) -> Result<Change> {
    let previous = metadata.current_snapshot_id();
    if metadata.snapshot(to).is_none() {
        return Err(unknown_snapshot(to));
    }
    let before = metadata.ref_named(MAIN_BRANCH).cloned();
    if previous == Some(to) {
        return Ok(Change::unchanged(previous));
    }
    let mut md = metadata.clone();
    md.set_current_snapshot(Some(to), now_ms)?;
    let after = md.ref_named(MAIN_BRANCH).cloned();
    Ok(Change {
        rows: vec![ref_row(MAIN_BRANCH, before.as_ref(), after.as_ref())],
        metadata: Some(md),
        previous_snapshot_id: previous,
        current_snapshot_id: Some(to),
    })
}

fn unknown_snapshot(id: SnapshotId) -> Error {
    Error::bad_arguments(format!("Cannot roll back to unknown snapshot id: {id}"))
}

pub(super) fn ref_row(
    name: &str,
    before: Option<&SnapshotRef>,
    after: Option<&SnapshotRef>,
) -> SnapshotExplainRow {
    let detail = match (before, after) {
        (None, _) => "created",
        (_, None) => "removed",
        (Some(b), Some(a)) if b.snapshot_id != a.snapshot_id => "moved",
        _ => "retention changed",
    };
    SnapshotExplainRow {
        kind: "ref".into(),
        name: name.into(),
        before: before.map(ref_text),
        after: after.map(ref_text),
        detail: detail.into(),
    }
}

/// `rollback_to_snapshot(snapshot_id)`.
pub fn rollback_to_snapshot(
    metadata: &TableMetadata,
    snapshot_id: SnapshotId,
    now_ms: i64,
) -> Result<Change> {
    if metadata.snapshot(snapshot_id).is_none() {
        return Err(unknown_snapshot(snapshot_id));
    }
    if !is_current_ancestor(metadata, snapshot_id) {
        return Err(Error::bad_arguments(format!(
            "Cannot roll back to snapshot, not an ancestor of the current state: {snapshot_id}"
        )));
    }
    move_main(metadata, snapshot_id, now_ms)
}

/// The ancestor of the current snapshot that `rollback_to_timestamp(timestamp_ms)` picks: the
/// largest `timestamp-ms` strictly below `timestamp_ms` (the newest such one on a tie).
pub fn latest_ancestor_older_than(
    metadata: &TableMetadata,
    timestamp_ms: i64,
) -> Option<SnapshotId> {
    let mut best: Option<(i64, SnapshotId)> = None;
    for s in current_ancestors(metadata) {
        if s.timestamp_ms < timestamp_ms && best.is_none_or(|(ts, _)| s.timestamp_ms > ts) {
            best = Some((s.timestamp_ms, s.snapshot_id));
        }
    }
    best.map(|(_, id)| id)
}

/// `rollback_to_timestamp(timestamp)`.
pub fn rollback_to_timestamp(
    metadata: &TableMetadata,
    timestamp_ms: i64,
    now_ms: i64,
) -> Result<Change> {
    let Some(id) = latest_ancestor_older_than(metadata, timestamp_ms) else {
        return Err(Error::bad_arguments(format!(
            "Cannot roll back, no valid snapshot older than: {timestamp_ms}"
        )));
    };
    move_main(metadata, id, now_ms)
}

/// The snapshot `set_current_snapshot(snapshot_id = N | ref = 'name')` makes current: `N`, or the
/// head of ref `name`.
pub fn selected_snapshot(
    metadata: &TableMetadata,
    selector: &SnapshotSelector,
) -> Result<SnapshotId> {
    match selector {
        SnapshotSelector::Id(id) => Ok(*id),
        SnapshotSelector::Ref(name) => {
            metadata
                .ref_named(name)
                .map(|r| r.snapshot_id)
                .ok_or_else(|| {
                    Error::bad_arguments(format!("Cannot find matching snapshot ID for ref {name}"))
                })
        }
    }
}

/// `set_current_snapshot(snapshot_id = N | ref = 'name')`.
pub fn set_current_snapshot(
    metadata: &TableMetadata,
    selector: &SnapshotSelector,
    now_ms: i64,
) -> Result<Change> {
    move_main(metadata, selected_snapshot(metadata, selector)?, now_ms)
}

/// The snapshot `fast_forward(_, to)` moves its branch to: the head of ref `to`.
pub fn fast_forward_target(metadata: &TableMetadata, to: &str) -> Result<SnapshotId> {
    metadata
        .ref_named(to)
        .map(|r| r.snapshot_id)
        .ok_or_else(|| Error::bad_arguments(format!("Ref does not exist: {to}")))
}

/// `fast_forward(branch, to)`.
pub fn fast_forward(
    metadata: &TableMetadata,
    branch: &str,
    to: &str,
    now_ms: i64,
) -> Result<Change> {
    let target = fast_forward_target(metadata, to)?;
    fast_forward_to(metadata, branch, to, target, now_ms)
}

/// `fast_forward(branch, to)` with `to`'s head resolved to `to_id` (on the metadata the statement
/// planned from; a retry on a newer head keeps it). `to` names it in messages.
pub fn fast_forward_to(
    metadata: &TableMetadata,
    branch: &str,
    to: &str,
    to_id: SnapshotId,
    now_ms: i64,
) -> Result<Change> {
    if metadata.snapshot(to_id).is_none() {
        return Err(Error::bad_arguments(format!(
            "Cannot fast-forward {branch} to unknown snapshot id: {to_id}"
        )));
    }
    let Some(target) = metadata.ref_named(branch).cloned() else {
        if branch == MAIN_BRANCH {
            return move_main(metadata, to_id, now_ms);
        }
        let created = SnapshotRef {
            name: branch.to_string(),
            kind: RefKind::Branch,
            snapshot_id: to_id,
            min_snapshots_to_keep: None,
            max_snapshot_age_ms: None,
            max_ref_age_ms: None,
        };
        let mut md = metadata.clone();
        md.set_ref(&created)?;
        return Ok(Change {
            rows: vec![ref_row(branch, None, Some(&created))],
            metadata: Some(md),
            previous_snapshot_id: None,
            current_snapshot_id: Some(to_id),
        });
    };
    if target.kind != RefKind::Branch {
        return Err(Error::bad_arguments(format!(
            "Ref {branch} is a tag not a branch"
        )));
    }
    if to_id == target.snapshot_id {
        return Ok(Change::unchanged(Some(target.snapshot_id)));
    }
    if !is_ancestor_of(metadata, target.snapshot_id, to_id) {
        return Err(Error::bad_arguments(format!(
            "Cannot fast-forward: {branch} is not an ancestor of {to}"
        )));
    }
    if branch == MAIN_BRANCH {
        return move_main(metadata, to_id, now_ms);
    }
    let moved = SnapshotRef {
        snapshot_id: to_id,
        ..target.clone()
    };
    let mut md = metadata.clone();
    md.set_ref(&moved)?;
    Ok(Change {
        rows: vec![ref_row(branch, Some(&target), Some(&moved))],
        metadata: Some(md),
        previous_snapshot_id: Some(target.snapshot_id),
        current_snapshot_id: Some(to_id),
    })
}
