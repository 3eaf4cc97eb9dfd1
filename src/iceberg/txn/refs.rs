//! Ref and table operations as metadata edits, each `fn(&TableMetadata, ..) -> Result<TableMetadata>`
//! (the input is left as it was); each is committed through the one loop
//! ([`crate::iceberg::commit::protocol::run`] with a [`crate::iceberg::commit::protocol::Edit`]).
//!
//! Rules (Iceberg Java `UpdateSnapshotReferencesOperation` / `SetSnapshotOperation`): a ref must
//! point at a listed snapshot; creating an existing ref or replacing / removing a missing one is
//! `BAD_ARGUMENTS`; `main` cannot be removed (roll it back instead) and is changed through
//! [`set_current_snapshot`], which keeps `current-snapshot-id`, `refs.main` and `snapshot-log` in
//! step; tags carry no snapshot retention (only `max-ref-age-ms`). Staging a snapshot is a commit with
//! [`super::Target::Staged`].

use crate::error::{Error, Result};
use crate::iceberg::metadata::TableMetadata;
use crate::iceberg::spec::{MAIN_BRANCH, RefKind, SnapshotId, SnapshotRef, StatisticsFile};

/// Retention of a branch (all optional; absent means the table's defaults).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retention {
    pub min_snapshots_to_keep: Option<i32>,
    pub max_snapshot_age_ms: Option<i64>,
    pub max_ref_age_ms: Option<i64>,
}

fn check_name(metadata: &TableMetadata, name: &str, must_exist: bool) -> Result<()> {
    if name.is_empty() {
        return Err(Error::bad_arguments("A ref name cannot be empty"));
    }
    let exists = metadata.ref_named(name).is_some();
    match (must_exist, exists) {
        (true, false) => Err(Error::bad_arguments(format!(
            "Ref '{name}' does not exist in '{}'",
            metadata.file()
        ))),
        (false, true) => Err(Error::bad_arguments(format!(
            "Ref '{name}' already exists in '{}'",
            metadata.file()
        ))),
        _ => Ok(()),
    }
}

fn check_snapshot(metadata: &TableMetadata, id: SnapshotId) -> Result<()> {
    match metadata.snapshot(id) {
        Some(_) => Ok(()),
        None => Err(Error::bad_arguments(format!(
            "Snapshot {id} is not a snapshot of '{}'",
            metadata.file()
        ))),
    }
}

fn branch(name: &str, snapshot_id: SnapshotId, r: Retention) -> SnapshotRef {
    SnapshotRef {
        name: name.to_string(),
        kind: RefKind::Branch,
        snapshot_id,
        min_snapshots_to_keep: r.min_snapshots_to_keep,
        max_snapshot_age_ms: r.max_snapshot_age_ms,
        max_ref_age_ms: r.max_ref_age_ms,
    }
}

fn tag(name: &str, snapshot_id: SnapshotId, max_ref_age_ms: Option<i64>) -> SnapshotRef {
    SnapshotRef {
        name: name.to_string(),
        kind: RefKind::Tag,
        snapshot_id,
        min_snapshots_to_keep: None,
        max_snapshot_age_ms: None,
        max_ref_age_ms,
    }
}

fn with_ref(metadata: &TableMetadata, r: &SnapshotRef) -> Result<TableMetadata> {
    check_snapshot(metadata, r.snapshot_id)?;
    if r.name == MAIN_BRANCH {
        return Err(Error::bad_arguments(
            "'main' is changed with set_current_snapshot, not as a ref",
        ));
    }
    let mut md = metadata.clone();
    md.set_ref(r)?;
    Ok(md)
}

/// A new branch at `snapshot_id`.
pub fn create_branch(
    metadata: &TableMetadata,
    name: &str,
    snapshot_id: SnapshotId,
    retention: Retention,
) -> Result<TableMetadata> {
    check_name(metadata, name, false)?;
    with_ref(metadata, &branch(name, snapshot_id, retention))
}

/// A new tag at `snapshot_id`.
pub fn create_tag(
    metadata: &TableMetadata,
    name: &str,
    snapshot_id: SnapshotId,
    max_ref_age_ms: Option<i64>,
) -> Result<TableMetadata> {
    check_name(metadata, name, false)?;
    with_ref(metadata, &tag(name, snapshot_id, max_ref_age_ms))
}

/// Point an existing branch at `snapshot_id` with `retention` (fields absent are removed).
pub fn replace_branch(
    metadata: &TableMetadata,
    name: &str,
    snapshot_id: SnapshotId,
    retention: Retention,
) -> Result<TableMetadata> {
    check_kind(metadata, name, RefKind::Branch)?;
    with_ref(metadata, &branch(name, snapshot_id, retention))
}

/// Point an existing tag at `snapshot_id`.
pub fn replace_tag(
    metadata: &TableMetadata,
    name: &str,
    snapshot_id: SnapshotId,
    max_ref_age_ms: Option<i64>,
) -> Result<TableMetadata> {
    check_kind(metadata, name, RefKind::Tag)?;
    with_ref(metadata, &tag(name, snapshot_id, max_ref_age_ms))
}

fn check_kind(metadata: &TableMetadata, name: &str, kind: RefKind) -> Result<()> {
    check_name(metadata, name, true)?;
    match metadata.ref_named(name) {
        Some(r) if r.kind != kind => Err(Error::bad_arguments(format!(
            "Ref '{name}' is a {}, not a {}",
            r.kind.as_str(),
            kind.as_str()
        ))),
        _ => Ok(()),
    }
}

/// Remove a branch or tag (not `main`).
pub fn remove_ref(metadata: &TableMetadata, name: &str) -> Result<TableMetadata> {
    if name == MAIN_BRANCH {
        return Err(Error::bad_arguments(
            "Cannot remove the main branch; roll it back with set_current_snapshot instead",
        ));
    }
    check_name(metadata, name, true)?;
    let mut md = metadata.clone();
    md.remove_refs(&[name])?;
    Ok(md)
}

/// Make `snapshot_id` current (rollback or fast-forward of `main`), logged at `timestamp_ms`.
pub fn set_current_snapshot(
    metadata: &TableMetadata,
    snapshot_id: SnapshotId,
    timestamp_ms: i64,
) -> Result<TableMetadata> {
    check_snapshot(metadata, snapshot_id)?;
    let mut md = metadata.clone();
    md.set_current_snapshot(Some(snapshot_id), timestamp_ms)?;
    Ok(md)
}

/// Set table properties (`key`, `value`) in order.
pub fn set_properties(metadata: &TableMetadata, props: &[(&str, &str)]) -> Result<TableMetadata> {
    let mut md = metadata.clone();
    for (k, v) in props {
        md.set_property(k, v)?;
    }
    Ok(md)
}

/// Remove table properties; keys not present are ignored.
pub fn remove_properties(metadata: &TableMetadata, keys: &[&str]) -> Result<TableMetadata> {
    let mut md = metadata.clone();
    for k in keys {
        md.remove_property(k)?;
    }
    Ok(md)
}

/// Register a statistics (Puffin) or partition-statistics file for its snapshot, replacing the
/// snapshot's previous one of the same kind.
pub fn set_statistics(metadata: &TableMetadata, stats: &StatisticsFile) -> Result<TableMetadata> {
    check_snapshot(metadata, stats.snapshot_id)?;
    let mut md = metadata.clone();
    md.set_statistics(stats)?;
    Ok(md)
}

/// Register a Puffin statistics file with the members readers require beside the ones
/// [`StatisticsFile`] names (pyiceberg refuses a `statistics` entry without them):
/// `file-footer-size-in-bytes` and `blob-metadata` (empty: the blobs are not described).
pub fn set_puffin_statistics(
    metadata: &TableMetadata,
    stats: &StatisticsFile,
    footer_size_in_bytes: i64,
) -> Result<TableMetadata> {
    let stats = StatisticsFile {
        partition_statistics: false,
        ..stats.clone()
    };
    let mut md = set_statistics(metadata, &stats)?;
    md.edit(|json| {
        add_puffin_members(json, stats.snapshot_id, footer_size_in_bytes);
        Ok(())
    })?;
    Ok(md)
}

fn add_puffin_members(
    json: &mut serde_json::Map<String, serde_json::Value>,
    snapshot_id: SnapshotId,
    footer_size_in_bytes: i64,
) {
    if let Some(serde_json::Value::Array(list)) = json.get_mut("statistics") {
        for entry in list.iter_mut().filter_map(serde_json::Value::as_object_mut) {
            if entry.get("snapshot-id").and_then(serde_json::Value::as_i64) == Some(snapshot_id) {
                entry.insert(
                    "file-footer-size-in-bytes".into(),
                    footer_size_in_bytes.into(),
                );
                entry
                    .entry("blob-metadata")
                    .or_insert_with(|| serde_json::Value::Array(Vec::new()));
            }
        }
    }
}
