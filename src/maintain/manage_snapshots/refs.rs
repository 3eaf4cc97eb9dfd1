//! `CREATE/REPLACE/DROP BRANCH|TAG` decisions (Spark's `CreateOrReplaceBranchExec`,
//! `CreateOrReplaceTagExec`, `DropBranchExec`, `DropTagExec` over Java's
//! `UpdateSnapshotReferencesOperation`). Pure.
//!
//! - The snapshot is `AS OF VERSION n` (must be listed: "Cannot set NAME to unknown snapshot: n"),
//!   else the current snapshot; a table without one refuses ("... main has no snapshot"; Java
//!   would create an empty branch, icetrim does not write snapshots for DDL).
//! - `CREATE`: the name must be free ("Ref NAME already exists"). `CREATE ... IF NOT EXISTS` of a
//!   taken name (branch or tag alike) changes nothing. `REPLACE`: the ref must exist as that kind
//!   ("Branch does not exist: NAME", "Ref NAME is a tag not a branch", and for tags the mirror
//!   messages); it keeps its retention unless the statement gives new values. `CREATE OR
//!   REPLACE`: creates when missing, else replaces.
//! - Retention clauses set `max-ref-age-ms` (`RETAIN`), `min-snapshots-to-keep` and
//!   `max-snapshot-age-ms` (branches only).
//! - `REPLACE BRANCH main` moves the current snapshot as `set_current_snapshot` does.
//! - `DROP`: not `main` ("Cannot remove main branch"); a missing name is an error unless
//!   `IF EXISTS` ("Branch does not exist: NAME"); the kind must match ("Ref NAME is a tag not a
//!   branch"), `IF EXISTS` or not.
//! - Nothing changes (same ref before and after): nothing is written.

use super::Change;
use super::history::ref_row;
use crate::error::{Error, Result};
use crate::iceberg::metadata::TableMetadata;
use crate::iceberg::spec::{MAIN_BRANCH, RefKind, SnapshotRef};
use crate::plan::{CreateMode, RefRetention, RefType, TableChange};

fn kind_of(t: RefType) -> RefKind {
    match t {
        RefType::Branch => RefKind::Branch,
        RefType::Tag => RefKind::Tag,
    }
}

fn word(t: RefType) -> &'static str {
    match t {
        RefType::Branch => "Branch",
        RefType::Tag => "Tag",
    }
}

fn wrong_kind(name: &str, wanted: RefType) -> Error {
    let (is, not) = match wanted {
        RefType::Branch => ("tag", "branch"),
        RefType::Tag => ("branch", "tag"),
    };
    Error::bad_arguments(format!("Ref {name} is a {is} not a {not}"))
}

/// Apply a ref DDL statement (`TableChange::PutRef` or `DropRef`) at `now_ms`.
pub fn change_ref(metadata: &TableMetadata, change: &TableChange, now_ms: i64) -> Result<Change> {
    change.validate()?;
    match change {
        TableChange::PutRef {
            kind,
            mode,
            name,
            snapshot_id,
            retention,
        } => put_ref(
            metadata,
            *kind,
            *mode,
            name,
            *snapshot_id,
            retention,
            now_ms,
        ),
        TableChange::DropRef {
            kind,
            name,
            if_exists,
        } => drop_ref(metadata, *kind, name, *if_exists),
        _ => Err(Error::logical("change_ref: not a ref statement")),
    }
}

fn put_ref(
    metadata: &TableMetadata,
    kind: RefType,
    mode: CreateMode,
    name: &str,
    snapshot_id: Option<i64>,
    retention: &RefRetention,
    now_ms: i64,
) -> Result<Change> {
    let existing = metadata.ref_named(name).cloned();
    let current = metadata.current_snapshot_id();
    if name == MAIN_BRANCH && kind == RefType::Tag && existing.is_none() {
        return Err(Error::bad_arguments(
            "Cannot set main to a tag, it must be a branch",
        ));
    }
    if mode == CreateMode::CreateIfNotExists && existing.is_some() {
        return Ok(Change::unchanged(existing.map(|r| r.snapshot_id)));
    }
    let replace = match mode {
        CreateMode::Create | CreateMode::CreateIfNotExists => {
            if existing.is_some() {
                return Err(Error::bad_arguments(format!("Ref {name} already exists")));
            }
            false
        }
        CreateMode::Replace => true,
        CreateMode::CreateOrReplace => existing.is_some(),
    };
    let Some(snapshot_id) = snapshot_id.or(current) else {
        return Err(Error::bad_arguments(format!(
            "Cannot complete {} {} operation on {name}: main has no snapshot (give AS OF VERSION)",
            if replace { "replace" } else { "create" },
            kind.keyword().to_ascii_lowercase()
        )));
    };
    if metadata.snapshot(snapshot_id).is_none() {
        return Err(Error::bad_arguments(format!(
            "Cannot set {name} to unknown snapshot: {snapshot_id}"
        )));
    }
    let base = if replace {
        match &existing {
            None => {
                return Err(Error::bad_arguments(format!(
                    "{} does not exist: {name}",
                    word(kind)
                )));
            }
            Some(r) if r.kind != kind_of(kind) => return Err(wrong_kind(name, kind)),
            Some(r) => SnapshotRef {
                snapshot_id,
                ..r.clone()
            },
        }
    } else {
        SnapshotRef {
            name: name.to_string(),
            kind: kind_of(kind),
            snapshot_id,
            min_snapshots_to_keep: None,
            max_snapshot_age_ms: None,
            max_ref_age_ms: None,
        }
    };
    let new_ref = SnapshotRef {
        min_snapshots_to_keep: retention
            .min_snapshots_to_keep
            .or(base.min_snapshots_to_keep),
        max_snapshot_age_ms: retention.max_snapshot_age_ms.or(base.max_snapshot_age_ms),
        max_ref_age_ms: retention.max_ref_age_ms.or(base.max_ref_age_ms),
        ..base
    };
    if existing.as_ref() == Some(&new_ref) {
        return Ok(Change::unchanged(Some(snapshot_id)));
    }
    let mut md = metadata.clone();
    if name == MAIN_BRANCH && current != Some(snapshot_id) {
        md.set_current_snapshot(Some(snapshot_id), now_ms)?;
    }
    md.set_ref(&new_ref)?;
    Ok(Change {
        rows: vec![ref_row(name, existing.as_ref(), Some(&new_ref))],
        metadata: Some(md),
        previous_snapshot_id: existing.map(|r| r.snapshot_id),
        current_snapshot_id: Some(snapshot_id),
    })
}

fn drop_ref(
    metadata: &TableMetadata,
    kind: RefType,
    name: &str,
    if_exists: bool,
) -> Result<Change> {
    if kind == RefType::Branch && name == MAIN_BRANCH {
        return Err(Error::bad_arguments("Cannot remove main branch"));
    }
    let Some(existing) = metadata.ref_named(name).cloned() else {
        if if_exists {
            return Ok(Change::unchanged(None));
        }
        return Err(Error::bad_arguments(format!(
            "{} does not exist: {name}",
            word(kind)
        )));
    };
    if existing.kind != kind_of(kind) {
        return Err(wrong_kind(name, kind));
    }
    if name == MAIN_BRANCH {
        return Err(Error::bad_arguments("Cannot remove main branch"));
    }
    let mut md = metadata.clone();
    md.remove_refs(&[name])?;
    Ok(Change {
        rows: vec![ref_row(name, Some(&existing), None)],
        metadata: Some(md),
        previous_snapshot_id: Some(existing.snapshot_id),
        current_snapshot_id: None,
    })
}
