//! `cherrypick_snapshot` and `publish_changes` decisions (Iceberg Java `CherryPickOperation`,
//! `WapUtil`; Spark's `publish_changes` procedure). Pure; the executor reads the picked snapshot's
//! files and writes the new snapshot.
//!
//! In Java's order:
//! 1. The snapshot must be listed ("Cannot cherry-pick unknown snapshot ID").
//! 2. Its parent is the current snapshot (or both are absent): **fast-forward** — `main` moves to
//!    the picked snapshot itself, no new snapshot (any operation).
//! 3. `append`: a new snapshot on `main` adding the picked snapshot's added data files.
//!    `overwrite` with summary `replace-partitions=true` (a dynamic partition overwrite): its parent
//!    must be absent or an ancestor of the current snapshot ("Cannot cherry-pick overwrite not
//!    based on an ancestor of the current state"); the new snapshot adds its added data files and
//!    removes its removed ones, which must still be live; no snapshot committed on `main` since its
//!    parent may have added a file to a partition it replaces ("Cannot cherry-pick replace
//!    partitions with changed partition"). Anything else: "Cannot cherry-pick snapshot N: not
//!    append, dynamic overwrite, or fast-forward".
//! 4. For a new snapshot: the picked one must not be the current snapshot or an ancestor ("Cannot
//!    cherrypick snapshot N: already an ancestor"), nor the `source-snapshot-id` of one ("already
//!    picked to create ancestor M"); a `wap.id` already published by an ancestor
//!    (`published-wap-id`) is refused ("Duplicate request to cherry pick wap id that was
//!    published already"). The new snapshot's summary carries `source-snapshot-id` and, for a
//!    staged WAP snapshot, `published-wap-id`; its operation is the picked one's.
//!
//! `publish_changes(wap_id)`: the first listed snapshot whose summary `wap.id` equals `wap_id`
//! ("Cannot apply unknown WAP ID '...'"), cherry-picked.

use std::collections::BTreeMap;

use super::Change;
use super::ancestry::{current_ancestors, is_current_ancestor};
use super::history::move_main;
use crate::error::{Error, Result};
use crate::iceberg::metadata::TableMetadata;
use crate::iceberg::spec::{Snapshot, SnapshotId};

/// Summary key of a snapshot staged for write-audit-publish.
pub const WAP_ID: &str = "wap.id";
/// Summary key recording the WAP id a cherry-pick published.
pub const PUBLISHED_WAP_ID: &str = "published-wap-id";
/// Summary key linking a cherry-picked snapshot to its source.
pub const SOURCE_SNAPSHOT_ID: &str = "source-snapshot-id";
/// Summary key of a dynamic partition overwrite.
pub const REPLACE_PARTITIONS: &str = "replace-partitions";

/// What a cherry-pick does.
#[derive(Debug, Clone, PartialEq)]
pub enum CherrypickPlan {
    /// The picked snapshot's parent is the current snapshot: `main` moves to it.
    FastForward(Box<Change>),
    /// A new snapshot on `main` re-applying the picked one's changes.
    Reapply(Reapply),
}

/// The new snapshot of a cherry-pick that is not a fast-forward.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reapply {
    /// The picked snapshot.
    pub source: SnapshotId,
    /// `append` or `overwrite`, the picked snapshot's.
    pub operation: String,
    /// Extra summary entries of the new snapshot (`source-snapshot-id`, `published-wap-id`).
    pub summary: BTreeMap<String, String>,
    /// A dynamic overwrite: the picked snapshot's removed data files are removed too, and the
    /// snapshots in `check_since` must have added no file to a partition it replaces.
    pub replace_partitions: bool,
    /// The ancestors of the current snapshot committed after the picked snapshot's parent,
    /// newest first (empty for appends).
    pub check_since: Vec<SnapshotId>,
    /// The current snapshot the new one goes on top of.
    pub parent: Option<SnapshotId>,
}

/// The snapshot `publish_changes(wap_id)` cherry-picks.
pub fn wap_snapshot(metadata: &TableMetadata, wap_id: &str) -> Result<SnapshotId> {
    metadata
        .snapshots()
        .iter()
        .find(|s| s.summary.get(WAP_ID) == Some(wap_id))
        .map(|s| s.snapshot_id)
        .ok_or_else(|| Error::bad_arguments(format!("Cannot apply unknown WAP ID '{wap_id}'")))
}

fn is_fast_forward(metadata: &TableMetadata, picked: &Snapshot) -> bool {
    match metadata.current_snapshot_id() {
        Some(current) => picked.parent_snapshot_id == Some(current),
        None => picked.parent_snapshot_id.is_none(),
    }
}

/// Decide `cherrypick_snapshot(snapshot_id)` on `metadata` at `now_ms`.
pub fn plan_cherrypick(
    metadata: &TableMetadata,
    snapshot_id: SnapshotId,
    now_ms: i64,
) -> Result<CherrypickPlan> {
    let Some(picked) = metadata.snapshot(snapshot_id) else {
        return Err(Error::bad_arguments(format!(
            "Cannot cherry-pick unknown snapshot ID: {snapshot_id}"
        )));
    };
    let operation = picked.operation().unwrap_or_default().to_string();
    let replace_partitions = operation == "overwrite"
        && picked
            .summary
            .get(REPLACE_PARTITIONS)
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    if operation == "append" || replace_partitions {
        if replace_partitions
            && picked
                .parent_snapshot_id
                .is_some_and(|p| !is_current_ancestor(metadata, p))
        {
            return Err(Error::bad_arguments(format!(
                "Cannot cherry-pick overwrite not based on an ancestor of the current state: \
                 {snapshot_id}"
            )));
        }
        check_wap_unpublished(metadata, picked)?;
    }
    if is_fast_forward(metadata, picked) {
        return move_main(metadata, snapshot_id, now_ms)
            .map(|c| CherrypickPlan::FastForward(Box::new(c)));
    }
    if operation != "append" && !replace_partitions {
        return Err(Error::bad_arguments(format!(
            "Cannot cherry-pick snapshot {snapshot_id}: not append, dynamic overwrite, or \
             fast-forward"
        )));
    }
    check_not_ancestor(metadata, snapshot_id)?;
    let mut summary = BTreeMap::new();
    if let Some(wap) = staged_wap_id(picked) {
        summary.insert(PUBLISHED_WAP_ID.to_string(), wap.to_string());
    }
    summary.insert(SOURCE_SNAPSHOT_ID.to_string(), snapshot_id.to_string());
    let check_since = if replace_partitions {
        current_ancestors(metadata)
            .iter()
            .map(|s| s.snapshot_id)
            .take_while(|id| Some(*id) != picked.parent_snapshot_id)
            .collect()
    } else {
        Vec::new()
    };
    Ok(CherrypickPlan::Reapply(Reapply {
        source: snapshot_id,
        operation,
        summary,
        replace_partitions,
        check_since,
        parent: metadata.current_snapshot_id(),
    }))
}

fn staged_wap_id(snapshot: &Snapshot) -> Option<&str> {
    snapshot.summary.get(WAP_ID).filter(|w| !w.is_empty())
}

fn check_wap_unpublished(metadata: &TableMetadata, picked: &Snapshot) -> Result<()> {
    let Some(wap) = staged_wap_id(picked) else {
        return Ok(());
    };
    let published = current_ancestors(metadata)
        .iter()
        .any(|s| s.summary.get(PUBLISHED_WAP_ID) == Some(wap));
    if published {
        return Err(Error::bad_arguments(format!(
            "Duplicate request to cherry pick wap id that was published already: {wap}"
        )));
    }
    Ok(())
}

fn check_not_ancestor(metadata: &TableMetadata, snapshot_id: SnapshotId) -> Result<()> {
    if is_current_ancestor(metadata, snapshot_id) {
        return Err(Error::bad_arguments(format!(
            "Cannot cherrypick snapshot {snapshot_id}: already an ancestor"
        )));
    }
    let text = snapshot_id.to_string();
    if let Some(ancestor) = current_ancestors(metadata)
        .iter()
        .find(|s| s.summary.get(SOURCE_SNAPSHOT_ID) == Some(text.as_str()))
    {
        return Err(Error::bad_arguments(format!(
            "Cannot cherrypick snapshot {snapshot_id}: already picked to create ancestor {}",
            ancestor.snapshot_id
        )));
    }
    Ok(())
}

/// A file a snapshot added, by partition: `(spec id, partition tuple as text)`.
pub type PartitionKey = (i32, String);

/// Java's `validateReplacedPartitions`: the first file added since the overwrite's parent to a
/// partition the overwrite replaces, as an error.
pub fn check_replaced_partitions(
    replaced: &[PartitionKey],
    added_since: &[PartitionKey],
) -> Result<()> {
    match added_since.iter().find(|key| replaced.contains(key)) {
        Some((_, partition)) => Err(Error::bad_arguments(format!(
            "Cannot cherry-pick replace partitions with changed partition: {partition}"
        ))),
        None => Ok(()),
    }
}
