//! When the base moves: whether a snapshot or ref statement planned on one metadata may still
//! commit on a newer head. Pure: the state the statement planned from ([`PlannedFrom`]), what it
//! resolved there ([`Pinned`], or the pinned [`TableChange`]) and the new head in; `Ok` or the
//! refusal out.
//!
//! A statement plans on the newest metadata and commits on it. When another writer committed in
//! between (a path table's next version taken, a REST catalog's 409, a Glue concurrent
//! modification), the executor locates the new head and, before committing there, asks this
//! module whether the statement still means what it meant when planned; only then does it decide
//! again on the new head, with everything it resolved when planning kept: the snapshot
//! `rollback_to_timestamp` picked, the head of the ref `set_current_snapshot(ref)` or
//! `fast_forward` named, the snapshot `publish_changes` found by its `wap.id`. (`CREATE` or
//! `REPLACE BRANCH|TAG` without `AS OF VERSION` names no snapshot: it takes `main`'s head where it
//! commits.) A REST commit asserts every ref as loaded, so a catalog never applies a ref statement
//! over a ref that moved.
//!
//! The rules. A refusal changes nothing and is `LIMIT_EXCEEDED`, as every other failure a
//! concurrent writer causes (running the statement again plans on the new state):
//! "a concurrent commit moved main from X to Y; nothing was changed".
//! - `rollback_to_snapshot`, `rollback_to_timestamp`: the target must still be `main`'s head or
//!   an ancestor of it (Java's rule). The rollback then proceeds: moving `main` back is its
//!   meaning, so a commit made on `main` meanwhile is rolled back too (it stays listed).
//! - `set_current_snapshot`: `main` must not have moved (unless another writer moved it to the
//!   very snapshot: nothing is left to do). Stricter than Java, which commits anyway and so drops
//!   the other writer's commit from `main`.
//! - `fast_forward(branch, to)`: `branch` must still be a branch whose head is the target (`to`'s
//!   head when planned) or an ancestor of it; one created meanwhile is held to the same rule; one
//!   dropped meanwhile is refused (the fast-forward would recreate what another writer removed).
//!   `to` moving meanwhile does not matter: the target is kept.
//! - `cherrypick_snapshot`, `publish_changes`, when `main` moved: the picked snapshot must still
//!   be listed, must not be `main`'s head or an ancestor of it, nor the `source-snapshot-id` of
//!   one (already picked); a dynamic overwrite's parent must still be absent or an ancestor of
//!   `main`; a snapshot that is neither an append nor a dynamic overwrite can only be
//!   fast-forwarded, so its parent must be `main`'s new head. An append planned as a
//!   fast-forward is re-applied as a new snapshot when `main` moved on (as Java does). The
//!   decision on the new head then checks the rest (published WAP ids, replaced partitions).
//! - `REPLACE BRANCH|TAG`, `CREATE OR REPLACE BRANCH|TAG`: the ref must not have moved, been
//!   created, dropped or turned into the other kind since planning (unless another writer put it
//!   where the statement puts it). Stricter than Java, which overwrites the other writer's ref. A
//!   retention another writer set on it is kept where the statement sets none.
//! - `CREATE BRANCH|TAG [IF NOT EXISTS]`: no rule of its own: a name taken meanwhile is "already
//!   exists" (or, with `IF NOT EXISTS`, nothing to do).
//! - `DROP BRANCH`: the branch must not have moved (or turned into a tag): dropping it would
//!   silently lose the commit another writer just made on it, which Java does. `DROP TAG` keeps
//!   Java's behaviour: a tag re-pointed meanwhile is dropped (a tag move commits no data; the
//!   snapshot stays listed). A ref dropped meanwhile leaves nothing to do.
//! - `SET TBLPROPERTIES`, `UNSET TBLPROPERTIES`: no ref matters; they apply on the new head
//!   (properties another writer set are kept; a key both set gets this statement's value, the
//!   last commit winning as in Java); a key another writer unset meanwhile leaves nothing to do.

use super::ancestry::{current_ancestors, is_ancestor_of, is_current_ancestor};
use super::cherrypick::{REPLACE_PARTITIONS, SOURCE_SNAPSHOT_ID, wap_snapshot};
use super::history::{fast_forward_target, latest_ancestor_older_than, selected_snapshot};
use crate::error::{Error, ErrorKind, Result};
use crate::iceberg::metadata::TableMetadata;
use crate::iceberg::spec::{MAIN_BRANCH, RefKind, SnapshotId, SnapshotRef};
use crate::plan::{CreateMode, RefType, SnapshotProcedure, TableChange};

/// What a retry compares the new head with: `main`'s head and the refs of the metadata the
/// statement planned from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedFrom {
    current: Option<SnapshotId>,
    refs: Vec<SnapshotRef>,
}

impl PlannedFrom {
    /// The state `metadata` holds.
    pub fn of(metadata: &TableMetadata) -> PlannedFrom {
        PlannedFrom {
            current: metadata.current_snapshot_id(),
            refs: metadata.refs().to_vec(),
        }
    }

    fn ref_named(&self, name: &str) -> Option<&SnapshotRef> {
        self.refs.iter().find(|r| r.name == name)
    }
}

/// A snapshot procedure with what it resolved on the metadata it planned from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pinned {
    /// `rollback_to_snapshot` / `rollback_to_timestamp`: `main` back to `target`.
    Rollback { target: SnapshotId },
    /// `set_current_snapshot`: `main` to `target`.
    SetCurrent { target: SnapshotId },
    /// `fast_forward(branch, to)`: `branch` to `target`, `to`'s head when planned.
    FastForward {
        branch: String,
        to: String,
        target: SnapshotId,
    },
    /// `cherrypick_snapshot` / `publish_changes`: the picked snapshot.
    Cherrypick { picked: SnapshotId },
}

/// Resolve `call` on `metadata` (the metadata it plans from); errors are the decision's.
pub fn pin_procedure(metadata: &TableMetadata, call: &SnapshotProcedure) -> Result<Pinned> {
    Ok(match call {
        SnapshotProcedure::RollbackToSnapshot { snapshot_id } => Pinned::Rollback {
            target: *snapshot_id,
        },
        SnapshotProcedure::RollbackToTimestamp { timestamp_ms } => {
            let Some(target) = latest_ancestor_older_than(metadata, *timestamp_ms) else {
                return Err(Error::bad_arguments(format!(
                    "Cannot roll back, no valid snapshot older than: {timestamp_ms}"
                )));
            };
            Pinned::Rollback { target }
        }
        SnapshotProcedure::SetCurrentSnapshot(selector) => Pinned::SetCurrent {
            target: selected_snapshot(metadata, selector)?,
        },
        SnapshotProcedure::FastForward { branch, to } => Pinned::FastForward {
            branch: branch.clone(),
            to: to.clone(),
            target: fast_forward_target(metadata, to)?,
        },
        SnapshotProcedure::Cherrypick { snapshot_id } => Pinned::Cherrypick {
            picked: *snapshot_id,
        },
        SnapshotProcedure::PublishChanges { wap_id } => Pinned::Cherrypick {
            picked: wap_snapshot(metadata, wap_id)?,
        },
    })
}

/// The form of `change` decided on a newer head than it planned on: a `DROP` or `UNSET`
/// whose ref or key another writer removed meanwhile has nothing left to do (`IF EXISTS`).
pub fn change_on_new_head(change: &TableChange) -> TableChange {
    match change {
        TableChange::DropRef { kind, name, .. } => TableChange::DropRef {
            kind: *kind,
            name: name.clone(),
            if_exists: true,
        },
        TableChange::UnsetProperties { keys, .. } => TableChange::UnsetProperties {
            keys: keys.clone(),
            if_exists: true,
        },
        other => other.clone(),
    }
}

/// May the pinned procedure commit on `head`, having planned from `planned`? (Module comment.)
pub fn procedure_may_commit(
    pinned: &Pinned,
    planned: &PlannedFrom,
    head: &TableMetadata,
) -> Result<()> {
    let (before, after) = (planned.current, head.current_snapshot_id());
    match pinned {
        Pinned::FastForward { branch, target, .. } => {
            fast_forward_may_commit(branch, *target, planned.ref_named(branch), head)
        }
        _ if before == after => Ok(()),
        Pinned::Rollback { target } => rollback_may_commit(*target, before, head),
        Pinned::SetCurrent { target } if after == Some(*target) => Ok(()),
        Pinned::SetCurrent { .. } => Err(refused(&main_moved(before, after), "")),
        Pinned::Cherrypick { picked } => cherrypick_may_commit(*picked, before, head),
    }
}

/// May the DDL `change` commit on `head`, having planned from `planned`? (Module comment.)
pub fn change_may_commit(
    change: &TableChange,
    planned: &PlannedFrom,
    head: &TableMetadata,
) -> Result<()> {
    let (name, why) = match change {
        TableChange::PutRef {
            kind,
            mode: CreateMode::Replace | CreateMode::CreateOrReplace,
            name,
            snapshot_id,
            ..
        } => {
            let kind = match kind {
                RefType::Branch => RefKind::Branch,
                RefType::Tag => RefKind::Tag,
            };
            let after = head.ref_named(name).map(|r| (r.kind, r.snapshot_id));
            let wanted = snapshot_id.or(head.current_snapshot_id());
            if after.is_some() && after == wanted.map(|id| (kind, id)) {
                // Another writer put it where this statement puts it: nothing is overwritten.
                return Ok(());
            }
            (name, "")
        }
        TableChange::DropRef {
            kind: RefType::Branch,
            name,
            ..
        } => (name, "; dropping it would lose that commit"),
        _ => return Ok(()),
    };
    let (before, after) = (planned.ref_named(name), head.ref_named(name));
    let dropped_meanwhile = matches!(change, TableChange::DropRef { .. }) && after.is_none();
    if dropped_meanwhile || !moved(before, after) {
        return Ok(());
    }
    Err(refused(&ref_moved(name, before, after), why))
}

fn rollback_may_commit(
    target: SnapshotId,
    before: Option<SnapshotId>,
    head: &TableMetadata,
) -> Result<()> {
    let after = head.current_snapshot_id();
    if head.snapshot(target).is_none() {
        let why = format!("; snapshot {target} is no longer listed");
        return Err(refused(&main_moved(before, after), &why));
    }
    if is_current_ancestor(head, target) {
        return Ok(());
    }
    let why = format!(", of which snapshot {target} is not an ancestor");
    Err(refused(&main_moved(before, after), &why))
}

fn fast_forward_may_commit(
    branch: &str,
    target: SnapshotId,
    before: Option<&SnapshotRef>,
    head: &TableMetadata,
) -> Result<()> {
    let after = head.ref_named(branch);
    if !moved(before, after) {
        return Ok(());
    }
    let what = ref_moved(branch, before, after);
    if head.snapshot(target).is_none() {
        return Err(refused(
            &what,
            &format!("; snapshot {target} is no longer listed"),
        ));
    }
    match after {
        Some(r)
            if r.kind == RefKind::Branch
                && (r.snapshot_id == target || is_ancestor_of(head, r.snapshot_id, target)) =>
        {
            Ok(())
        }
        Some(r) if r.kind == RefKind::Branch => Err(refused(
            &what,
            &format!(
                ", which is not an ancestor of snapshot {target}: fast-forwarding would undo that \
                 commit"
            ),
        )),
        _ => Err(refused(&what, "")),
    }
}

fn cherrypick_may_commit(
    picked: SnapshotId,
    before: Option<SnapshotId>,
    head: &TableMetadata,
) -> Result<()> {
    let after = head.current_snapshot_id();
    let refuse = |why: String| Err(refused(&main_moved(before, after), &why));
    let Some(snapshot) = head.snapshot(picked) else {
        return refuse(format!("; snapshot {picked} is no longer listed"));
    };
    if is_current_ancestor(head, picked) {
        return refuse(format!(
            "; snapshot {picked} is now main's head or one of its ancestors"
        ));
    }
    let text = picked.to_string();
    if let Some(copy) = current_ancestors(head)
        .iter()
        .find(|s| s.summary.get(SOURCE_SNAPSHOT_ID) == Some(text.as_str()))
    {
        return refuse(format!(
            "; snapshot {picked} was already picked to create ancestor {}",
            copy.snapshot_id
        ));
    }
    let operation = snapshot.operation().unwrap_or_default();
    let dynamic_overwrite = operation == "overwrite"
        && snapshot
            .summary
            .get(REPLACE_PARTITIONS)
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    let parent = snapshot.parent_snapshot_id;
    if dynamic_overwrite && parent.is_some_and(|p| !is_current_ancestor(head, p)) {
        let parent = parent.map_or_else(String::new, |p| p.to_string());
        return refuse(format!(
            "; the parent {parent} of overwrite {picked} is not an ancestor of main any more"
        ));
    }
    if operation != "append" && !dynamic_overwrite && parent != after {
        return refuse(format!(
            "; snapshot {picked} ({operation}) can only be fast-forwarded and main's head is no \
             longer its parent"
        ));
    }
    Ok(())
}

/// Whether a ref differs between two states in what it points at (kind, snapshot, existence).
fn moved(before: Option<&SnapshotRef>, after: Option<&SnapshotRef>) -> bool {
    let key = |r: Option<&SnapshotRef>| r.map(|r| (r.kind, r.snapshot_id));
    key(before) != key(after)
}

fn refused(what: &str, why: &str) -> Error {
    Error::new(
        ErrorKind::LimitExceeded,
        format!("a concurrent commit {what}{why}; nothing was changed"),
    )
}

fn snapshot_text(id: Option<SnapshotId>) -> String {
    id.map_or_else(|| "no snapshot".to_string(), |id| id.to_string())
}

fn main_moved(before: Option<SnapshotId>, after: Option<SnapshotId>) -> String {
    format!(
        "moved main from {} to {}",
        snapshot_text(before),
        snapshot_text(after)
    )
}

/// "moved branch dev from 1 to 2", "created tag v1 at 2", "dropped branch dev (at 1)", ...
fn ref_moved(name: &str, before: Option<&SnapshotRef>, after: Option<&SnapshotRef>) -> String {
    if name == MAIN_BRANCH {
        return main_moved(before.map(|r| r.snapshot_id), after.map(|r| r.snapshot_id));
    }
    match (before, after) {
        (Some(b), Some(a)) if b.kind == a.kind => format!(
            "moved {} {name} from {} to {}",
            b.kind.as_str(),
            b.snapshot_id,
            a.snapshot_id
        ),
        (Some(b), Some(a)) => format!(
            "replaced {} {name} (at {}) with a {} at {}",
            b.kind.as_str(),
            b.snapshot_id,
            a.kind.as_str(),
            a.snapshot_id
        ),
        (None, Some(a)) => format!("created {} {name} at {}", a.kind.as_str(), a.snapshot_id),
        (Some(b), None) => format!("dropped {} {name} (at {})", b.kind.as_str(), b.snapshot_id),
        (None, None) => format!("changed nothing of {name}"),
    }
}

#[cfg(test)]
#[path = "moved_base_tests.rs"]
mod tests;
