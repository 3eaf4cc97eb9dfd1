//! Planning one expiry attempt on one metadata file: the decision, the file graph, the files to
//! delete, the safety checks, and the metadata to commit. Reads, never writes.

use std::collections::HashSet;

use crate::error::{Error, Result};
use crate::iceberg::metadata::TableMetadata;
use crate::iceberg::spec::SnapshotId;
use crate::io::path_key;
use crate::maintain::graph::TableFiles;
use crate::maintain::keepset::{
    FileDecision, ManifestContents, PathId, decide_files, plan_manifest_reads,
};
use crate::maintain::policy::{ExpiryDecision, ExpiryInput, ExpiryMode, decide_expiry};
use crate::maintain::retention::{SETTING_MIN_SNAPSHOTS_TO_KEEP, TablePolicy, effective_policy};
use crate::maintain::target::MaintenanceTarget;
use crate::plan::ExpireOptions;

/// The table property that allows deleting files (Java `TableProperties.GC_ENABLED`).
pub const PROP_GC_ENABLED: &str = "gc.enabled";

/// How many outside-location paths a refusal names.
const OUTSIDE_NAMED: usize = 10;

/// Everything one attempt decided.
#[derive(Debug, Clone)]
pub struct ExpiryPlan {
    pub decision: ExpiryDecision,
    /// The file graph (empty when nothing expires: then nothing is read).
    pub files: TableFiles,
    pub contents: ManifestContents,
    pub delete: FileDecision,
}

impl ExpiryPlan {
    /// Nothing expires and no ref is removed.
    pub fn is_noop(&self) -> bool {
        self.decision.is_noop()
    }

    /// The URI to delete for `id`.
    pub fn uri(&self, id: PathId) -> Option<&str> {
        self.files.uri(id)
    }
}

/// Plan an expiry of `metadata` (the newest committed file) for `target` with `options`.
/// Fails before any read on a refused table or invalid policy; fails after reading when a
/// retained file cannot be read or a candidate lies outside the table location.
pub async fn plan_expiry(
    target: &MaintenanceTarget,
    metadata: &TableMetadata,
    options: &ExpireOptions,
) -> Result<ExpiryPlan> {
    check_gc_enabled(target, metadata)?;
    let policy = effective_policy(
        session_policy(target)?,
        metadata.properties(),
        options.retain_last,
        options.retention_period_ms,
    )?;
    let mode = match &options.snapshot_ids {
        Some(ids) => ExpiryMode::Ids(ids.clone()),
        None => ExpiryMode::Policy,
    };
    let decision = decide_expiry(&ExpiryInput {
        snapshots: metadata.snapshots(),
        refs: metadata.refs(),
        current_snapshot_id: metadata.current_snapshot_id(),
        policy,
        now_ms: target.now_ms,
        expire_before_ms: options.expire_before_ms,
        mode: &mode,
    })?;
    if decision.expired.is_empty() {
        return Ok(ExpiryPlan {
            decision,
            files: TableFiles::default(),
            contents: ManifestContents::new(),
            delete: FileDecision::default(),
        });
    }
    let concurrency = target.settings.metadata_read_concurrency();
    let retained = &decision.retained;
    let mut files = TableFiles::read(&target.io, metadata, concurrency, |id| {
        retained.contains(&id)
    })
    .await?;
    let reads = plan_manifest_reads(&files.graph, &decision.expired);
    let wanted: Vec<(PathId, bool)> = reads
        .candidate_manifests
        .iter()
        .map(|m| (m.path, false))
        .chain(reads.retained_manifests.iter().map(|p| (*p, true)))
        .collect();
    let contents = files
        .read_manifests(&target.io, &wanted, concurrency)
        .await?;
    let delete = decide_files(&files.graph, &decision.expired, &contents)?;
    check_inside_location(target, &files, &delete)?;
    Ok(ExpiryPlan {
        decision,
        files,
        contents,
        delete,
    })
}

/// The session settings as the lowest layer of the policy.
fn session_policy(target: &MaintenanceTarget) -> Result<TablePolicy> {
    let s = &target.settings;
    let min_keep = s.expire_default_min_snapshots_to_keep();
    let min_snapshots_to_keep = i32::try_from(min_keep).map_err(|_| {
        Error::bad_arguments(format!(
            "{SETTING_MIN_SNAPSHOTS_TO_KEEP} must be in range [1, {}], got {min_keep}",
            i32::MAX
        ))
    })?;
    Ok(TablePolicy {
        min_snapshots_to_keep,
        max_snapshot_age_ms: s.expire_default_max_snapshot_age_ms(),
        max_ref_age_ms: s.expire_default_max_ref_age_ms(),
    })
}

/// Java's rule (`RemoveSnapshots`): expiry is refused unless `gc.enabled` parses as true
/// (absent = true; `Boolean.parseBoolean`, so any other text is false).
fn check_gc_enabled(target: &MaintenanceTarget, metadata: &TableMetadata) -> Result<()> {
    match metadata.property(PROP_GC_ENABLED) {
        Some(value) if !value.trim().eq_ignore_ascii_case("true") => {
            Err(Error::bad_arguments(format!(
                "Cannot expire snapshots of {}: GC is disabled by table property \
                 {PROP_GC_ENABLED}={value} (deleting files may corrupt other tables)",
                target.table_name
            )))
        }
        _ => Ok(()),
    }
}

/// SPEC §3: refuse when any candidate lies outside the table location, naming up to 10.
fn check_inside_location(
    target: &MaintenanceTarget,
    files: &TableFiles,
    delete: &FileDecision,
) -> Result<()> {
    let root = path_key(&target.location);
    let (count, first) = delete.outside_location(&files.paths, &root, OUTSIDE_NAMED);
    if count == 0 {
        return Ok(());
    }
    Err(Error::not_implemented(format!(
        "expire_snapshots on {} would delete {count} file(s) outside the table location '{}', \
         which is not supported: {}{}",
        target.table_name,
        target.location,
        first.join(", "),
        if count > first.len() { ", ..." } else { "" }
    )))
}

/// The metadata to commit: kept snapshots (original order), removed refs dropped, snapshot-log
/// trimmed after the last expired entry, statistics of expired snapshots dropped. `metadata-log`
/// and `last-updated-ms` are the commit's business.
pub fn new_metadata(base: &TableMetadata, decision: &ExpiryDecision) -> Result<TableMetadata> {
    let mut md = base.clone();
    let expired: HashSet<SnapshotId> = decision.expired.iter().copied().collect();
    md.trim_snapshot_log_after_expired(&expired)?;
    let keep: HashSet<SnapshotId> = decision.retained.iter().copied().collect();
    let stats_keep: HashSet<SnapshotId> = base
        .statistics()
        .iter()
        .map(|s| s.snapshot_id)
        .filter(|id| !expired.contains(id))
        .chain(keep.iter().copied())
        .collect();
    md.retain_snapshots(&keep)?;
    let removed: Vec<&str> = decision.removed_refs().map(|r| r.name.as_str()).collect();
    md.remove_refs(&removed)?;
    md.retain_statistics(&stats_keep)?;
    Ok(md)
}
