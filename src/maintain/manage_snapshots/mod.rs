//! Snapshot and ref management: the procedures `rollback_to_snapshot`,
//! `rollback_to_timestamp`, `set_current_snapshot`, `fast_forward`, `cherrypick_snapshot`,
//! `publish_changes`, and the DDL `CREATE/REPLACE/DROP BRANCH|TAG`, `SET/UNSET TBLPROPERTIES`.
//!
//! Semantics and messages follow Apache Iceberg Java's `ManageSnapshots` (`SetSnapshotOperation`,
//! `UpdateSnapshotReferencesOperation`, `CherryPickOperation`, `WapUtil`) and Spark's procedures
//! and DDL execs; each decision file says which rules it carries.
//!
//! The algorithm, for every statement:
//! 1. Locate the newest metadata ([`crate::maintain::target::MaintenanceTarget::locate_newest`]).
//! 2. Resolve what a procedure names ([`moved_base::pin_procedure`]) and decide (pure:
//!    [`history`], [`cherrypick`], [`refs`], [`properties`]): the new metadata, or nothing to
//!    write, or an error (nothing written). A
//!    cherry-pick that is not a fast-forward also reads the picked snapshot's manifests and
//!    writes the new snapshot's manifests and manifest list (`iceberg::txn::prepare_commit_with`)
//!    before committing.
//! 3. Commit through the commit protocol's one loop (`iceberg::commit::protocol::run`, by way of
//!    `MaintenanceTarget::commit_edit` for the edits). After a concurrent commit the statement locates the new head, asks
//!    [`moved_base`] whether it may still commit there (refused: nothing is changed), and decides
//!    again on it with what it resolved when planning kept (a cherry-pick deletes the files it
//!    wrote for the lost attempt first). Nothing is ever deleted otherwise.
//!
//! Results: the procedures answer `previous_snapshot_id`, `current_snapshot_id`
//! ([`SnapshotMetrics`]); the DDL statements return no rows. EXPLAIN returns
//! [`SnapshotExplainRow`]s and changes nothing.
//!
//! Deliberate differences: Spark's `cherrypick_snapshot`/`publish_changes` name their first column
//! `source_snapshot_id` and `fast_forward` answers `branch_updated, previous_ref, updated_ref`;
//! icetrim answers `previous_snapshot_id, current_snapshot_id` for all six (one result shape for
//! every snapshot procedure). `CREATE BRANCH` on a table without snapshots is refused (Java creates
//! an empty snapshot). A cherry-picked snapshot that added delete files, or files of a partition
//! spec other than the default one, is refused (`NOT_IMPLEMENTED`; Java ignores the delete files).
//! `set_current_snapshot`, `REPLACE BRANCH|TAG` and `DROP BRANCH` refuse to commit over a ref
//! another writer moved since they planned (Java overwrites it; see [`moved_base`]).

pub mod ancestry;
pub mod cherrypick;
pub mod execute;
pub mod explain;
pub mod history;
pub mod metrics;
pub mod moved_base;
pub mod properties;
mod reapply;
pub mod refs;

#[cfg(test)]
mod refs_tests;
#[cfg(test)]
mod tests;

pub use execute::{ChangeTable, ManageSnapshots, SnapshotOutcome};
pub use explain::SnapshotExplainRow;
pub use metrics::SnapshotMetrics;

use crate::error::Result;
use crate::iceberg::metadata::TableMetadata;
use crate::plan::{SnapshotProcedure, TableChange};
use cherrypick::{CherrypickPlan, plan_cherrypick};
use moved_base::{Pinned, pin_procedure};

/// The outcome of a decision that needs no new snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// The metadata to commit; `None`: nothing changes, nothing is written.
    pub metadata: Option<TableMetadata>,
    /// What changes, as EXPLAIN rows (empty when nothing does).
    pub rows: Vec<SnapshotExplainRow>,
    /// The moved ref's head before (`main` for the procedures).
    pub previous_snapshot_id: Option<i64>,
    /// ... and after.
    pub current_snapshot_id: Option<i64>,
}

impl Change {
    /// Nothing to write; the ref stays at `at`.
    pub fn unchanged(at: Option<i64>) -> Change {
        Change {
            metadata: None,
            rows: Vec::new(),
            previous_snapshot_id: at,
            current_snapshot_id: at,
        }
    }

    /// An edit that moves no snapshot (properties): nothing to write when `rows` is empty.
    pub fn edit(metadata: TableMetadata, rows: Vec<SnapshotExplainRow>) -> Change {
        let current = metadata.current_snapshot_id();
        Change {
            metadata: (!rows.is_empty()).then_some(metadata),
            rows,
            previous_snapshot_id: current,
            current_snapshot_id: current,
        }
    }
}

/// What a procedure decides on one metadata.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// A metadata edit (or nothing).
    Edit(Box<Change>),
    /// A cherry-pick that writes a new snapshot.
    Reapply(cherrypick::Reapply),
}

/// Decide `call` on `metadata` at `now_ms` (pure): [`moved_base::pin_procedure`] then
/// [`decide_pinned`].
pub fn decide_procedure(
    metadata: &TableMetadata,
    call: &SnapshotProcedure,
    now_ms: i64,
) -> Result<Decision> {
    call.validate()?;
    decide_pinned(metadata, &pin_procedure(metadata, call)?, now_ms)
}

/// Decide a procedure with what it resolved when planning (`pinned`) on `metadata`, the metadata
/// it planned from or a newer head [`moved_base::procedure_may_commit`] accepted (pure).
pub fn decide_pinned(metadata: &TableMetadata, pinned: &Pinned, now_ms: i64) -> Result<Decision> {
    let edit = |c: Result<Change>| c.map(|c| Decision::Edit(Box::new(c)));
    match pinned {
        Pinned::Rollback { target } => {
            edit(history::rollback_to_snapshot(metadata, *target, now_ms))
        }
        Pinned::SetCurrent { target } => edit(history::move_main(metadata, *target, now_ms)),
        Pinned::FastForward { branch, to, target } => edit(history::fast_forward_to(
            metadata, branch, to, *target, now_ms,
        )),
        Pinned::Cherrypick { picked } => cherrypick_decision(metadata, *picked, now_ms),
    }
}

fn cherrypick_decision(metadata: &TableMetadata, id: i64, now_ms: i64) -> Result<Decision> {
    Ok(match plan_cherrypick(metadata, id, now_ms)? {
        CherrypickPlan::FastForward(change) => Decision::Edit(change),
        CherrypickPlan::Reapply(reapply) => Decision::Reapply(reapply),
    })
}

/// Decide a DDL statement on `metadata` at `now_ms` (pure).
pub fn decide_change(
    metadata: &TableMetadata,
    change: &TableChange,
    now_ms: i64,
) -> Result<Change> {
    change.validate()?;
    match change {
        TableChange::PutRef { .. } | TableChange::DropRef { .. } => {
            refs::change_ref(metadata, change, now_ms)
        }
        TableChange::SetProperties(pairs) => properties::set_properties(metadata, pairs),
        TableChange::UnsetProperties { keys, if_exists } => {
            properties::unset_properties(metadata, keys, *if_exists)
        }
    }
}
