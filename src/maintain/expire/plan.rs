//! Planning one expiry attempt on one metadata file: the decision, the file graph, the files to
//! delete, the safety checks, and the metadata to commit. Reads, never writes.

use std::collections::HashSet;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::iceberg::metadata::TableMetadata;
use crate::iceberg::spec::SnapshotId;
use crate::io::path_key;
use crate::maintain::expire::incremental::{
    Cleanup, CleanupRan, History, IncrementalReads, choose_cleanup, decide_incremental,
};
use crate::maintain::expire::keepset::{
    FileDecision, ManifestContents, PathId, decide_candidates, plan_manifest_reads,
};
use crate::maintain::expire::policy::{ExpiryDecision, ExpiryInput, ExpiryMode, decide_expiry};
use crate::maintain::expire::retention::{Retention, effective_policy_sourced, session_policy};
use crate::maintain::file_graph::graph::TableFiles;
use crate::maintain::target::MaintenanceTarget;
use crate::plan::ExpireOptions;
use crate::progress::Phase;

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
    /// The candidate manifests, each with only its entries no retained manifest keeps live
    /// (what [`crate::maintain::expire::keepset::after_failed_deletes`] needs).
    pub contents: ManifestContents,
    pub delete: FileDecision,
    /// The retention applied (policy mode; `None` when `snapshot_ids` named the snapshots).
    pub retention: Option<Retention>,
    /// Which cleanup decided the files (`None` when nothing expires).
    pub cleanup: Option<CleanupRan>,
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
    check_gc_enabled(&target.table_name, metadata)?;
    let (policy, sources) = effective_policy_sourced(
        session_policy(&target.settings)?,
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
    let cleanup = if target.settings.expire_incremental_cleanup() {
        CleanupMode::Auto {
            by_ids: options.snapshot_ids.is_some(),
        }
    } else {
        CleanupMode::Full
    };
    let mut plan = plan_files_in(target, metadata, decision, cleanup).await?;
    plan.retention = matches!(mode, ExpiryMode::Policy).then(|| Retention {
        policy,
        sources,
        refs: metadata.refs().to_vec(),
        now_ms: target.now_ms,
        retain_last_alone: options
            .retain_last
            .filter(|_| options.retention_period_ms.is_none()),
    });
    Ok(plan)
}

/// Which cleanup [`plan_files_in`] may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CleanupMode {
    /// The incremental cleanup when [`choose_cleanup`] proves it equal, else the full keep set
    /// (`by_ids`: `snapshot_ids` chose what expires).
    Auto { by_ids: bool },
    /// Always the full keep set.
    Full,
}

/// The files side of a plan with the full keep set (journal recovery: the expired snapshots
/// come from a journal, not from the policy).
pub async fn plan_files(
    target: &MaintenanceTarget,
    metadata: &TableMetadata,
    decision: ExpiryDecision,
) -> Result<ExpiryPlan> {
    plan_files_in(target, metadata, decision, CleanupMode::Full).await
}

/// The files side of a plan: read what `decision` needs from `metadata` (whose snapshots are
/// the retained and the expired ones), decide the files to delete and check them.
pub async fn plan_files_in(
    target: &MaintenanceTarget,
    metadata: &TableMetadata,
    decision: ExpiryDecision,
    mode: CleanupMode,
) -> Result<ExpiryPlan> {
    if decision.expired.is_empty() {
        return Ok(ExpiryPlan {
            decision,
            files: TableFiles::default(),
            contents: ManifestContents::new(),
            delete: FileDecision::default(),
            retention: None,
            cleanup: None,
        });
    }
    let concurrency = target.settings.metadata_read_concurrency();
    let retained = &decision.retained;
    let progress = &target.progress;
    let mut files = TableFiles::read(&target.io, metadata, concurrency, progress, |id| {
        retained.contains(&id)
    })
    .await?;
    let full_reason = match mode {
        CleanupMode::Full => "iceberg_expire_incremental_cleanup = 0".to_string(),
        CleanupMode::Auto { by_ids } => {
            let history = History::of(metadata, by_ids);
            match choose_cleanup(&history, &files.graph, &decision.expired) {
                Cleanup::Incremental(reads) => {
                    let (contents, delete) =
                        incremental_files(target, &mut files, &decision, &reads).await?;
                    check_inside_location(target, &files, &delete)?;
                    return Ok(ExpiryPlan {
                        decision,
                        files,
                        contents,
                        delete,
                        retention: None,
                        cleanup: Some(CleanupRan::Incremental(reads.explain())),
                    });
                }
                Cleanup::Full(reason) => reason,
            }
        }
    };
    let reads = plan_manifest_reads(&files.graph, &decision.expired);
    // Retained manifests first (their live files, as fingerprints), then the candidates checked
    // against them as they decode: no manifest's entries are held whole.
    // One progress phase for both streams (a manifest is on one side only).
    let manifests = reads.retained_manifests.len() + reads.candidate_manifests.len();
    progress.phase(Phase::ReadingManifests, Some(manifests))?;
    let live = files
        .read_live_fingerprints(&target.io, &reads.retained_manifests, concurrency, progress)
        .await?;
    let live = Arc::new(live);
    let candidates: Vec<PathId> = reads.candidate_manifests.iter().map(|m| m.path).collect();
    let contents = files
        .read_candidate_manifests(
            &target.io,
            &candidates,
            Arc::clone(&live),
            concurrency,
            progress,
        )
        .await?;
    let live_kept = |id: PathId| files.is_live(&live, id);
    let delete = decide_candidates(
        &files.graph,
        &decision.expired,
        &reads,
        live_kept,
        &contents,
    )?;
    check_inside_location(target, &files, &delete)?;
    Ok(ExpiryPlan {
        decision,
        files,
        contents,
        delete,
        retention: None,
        cleanup: Some(CleanupRan::Full(full_reason)),
    })
}

/// The incremental cleanup's reads and decision: the retained manifests folded into the
/// fingerprints of their live files (as in the full rule), then the manifests with DELETED
/// entries, keeping the entries those do not cover.
async fn incremental_files(
    target: &MaintenanceTarget,
    files: &mut TableFiles,
    decision: &ExpiryDecision,
    reads: &IncrementalReads,
) -> Result<(ManifestContents, FileDecision)> {
    let progress = &target.progress;
    let concurrency = target.settings.metadata_read_concurrency();
    let retained = &reads.plan.retained_manifests;
    // Candidates may be gone already (their files are left to orphan removal); a retained
    // manifest must be readable, as in the full rule.
    let to_read: Vec<(PathId, bool)> = (reads.candidates.iter().map(|(m, _)| (*m, false)))
        .chain(reads.retained_deletes.iter().map(|m| (*m, true)))
        .collect();
    progress.phase(
        Phase::ReadingManifests,
        Some(retained.len() + to_read.len()),
    )?;
    let live = files
        .read_live_fingerprints(&target.io, retained, concurrency, progress)
        .await?;
    let live = Arc::new(live);
    let contents = files
        .read_entries(
            &target.io,
            &to_read,
            Arc::clone(&live),
            concurrency,
            progress,
        )
        .await?;
    let live_kept = |id: PathId| files.is_live(&live, id);
    let delete = decide_incremental(&files.graph, &decision.expired, reads, live_kept, &contents)?;
    Ok((contents, delete))
}

/// Java's rule (`RemoveSnapshots`): expiry is refused unless `gc.enabled` parses as true
/// (absent = true; `Boolean.parseBoolean`, so any other text is false).
fn check_gc_enabled(table_name: &str, metadata: &TableMetadata) -> Result<()> {
    match metadata.property(PROP_GC_ENABLED) {
        Some(value) if !value.trim().eq_ignore_ascii_case("true") => {
            Err(Error::bad_arguments(format!(
                "Cannot expire snapshots of {table_name}: GC is disabled by table property \
                 {PROP_GC_ENABLED}={value} (deleting files may corrupt other tables)"
            )))
        }
        _ => Ok(()),
    }
}

/// Refuse when any candidate lies outside the table location, naming up to 10: a file outside
/// may belong to another table or shared storage (see docs/safety.md, "Never delete outside the
/// table location").
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
    // Name each file as the metadata wrote it, not by its identity key (`:///../x` for `../x`).
    let first: Vec<&str> = first
        .into_iter()
        .map(|key| {
            files
                .paths
                .get(key)
                .and_then(|id| files.uri(id))
                .unwrap_or(key)
        })
        .collect();
    Err(Error::not_implemented(format!(
        "expire_snapshots on {} would delete {count} file(s) outside the table location '{}', \
         which is not supported: {}{}",
        target.table_name,
        target.location,
        named_paths(&first, count),
        crate::iceberg::locate::copied_or_moved_hint(&target.location, &first)
    )))
}

/// `a, b and 3 more`: the first paths of `count`, for an error message (no trailing dots, which
/// the error frame would strip).
fn named_paths<S: AsRef<str>>(first: &[S], count: usize) -> String {
    let first: Vec<&str> = first.iter().map(AsRef::as_ref).collect();
    match count.saturating_sub(first.len()) {
        0 => first.join(", "),
        more => format!("{} and {more} more", first.join(", ")),
    }
}

/// The metadata to commit: kept snapshots (original order), removed refs dropped, snapshot-log
/// trimmed after the last expired entry, statistics of expired snapshots dropped. `metadata-log`
/// and `last-updated-ms` are the commit's business.
pub fn new_metadata(base: &TableMetadata, decision: &ExpiryDecision) -> Result<TableMetadata> {
    let expired: HashSet<SnapshotId> = decision.expired.iter().copied().collect();
    let keep: HashSet<SnapshotId> = decision.retained.iter().copied().collect();
    let stats_keep: HashSet<SnapshotId> = base
        .statistics()
        .iter()
        .map(|s| s.snapshot_id)
        .filter(|id| !expired.contains(id))
        .chain(keep.iter().copied())
        .collect();
    let removed: Vec<&str> = decision.removed_refs().map(|r| r.name.as_str()).collect();
    base.expiry_edit(&keep, &expired, &removed, &stats_keep)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::{Value, json};

    use super::*;
    use crate::ErrorKind;
    use crate::iceberg::spec::RefKind;
    use crate::maintain::expire::policy::{RefFate, RefRemoval, RefVerdict};

    fn doc(gc: Option<&str>) -> Value {
        let mut d = json!({
            "format-version": 2,
            "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
            "location": "s3://b/t",
            "last-sequence-number": 3,
            "last-updated-ms": 1000,
            "last-column-id": 1,
            "current-schema-id": 0,
            "schemas": [{"type": "struct", "schema-id": 0, "fields": []}],
            "default-spec-id": 0,
            "partition-specs": [{"spec-id": 0, "fields": []}],
            "properties": {},
            "current-snapshot-id": 3,
            "snapshots": ([1, 2, 3].map(|i: i64| json!({
                "snapshot-id": i, "sequence-number": i, "timestamp-ms": i * 100,
                "manifest-list": format!("s3://b/t/metadata/snap-{i}.avro"),
                "summary": {"operation": "append"}}))),
            "refs": {"main": {"snapshot-id": 3, "type": "branch"},
                     "old": {"snapshot-id": 1, "type": "tag"}},
            "snapshot-log": ([1, 2, 3].map(|i: i64| json!({"snapshot-id": i, "timestamp-ms": i * 100}))),
            "metadata-log": [],
            "statistics": ([1, 3].map(|i: i64| json!({"snapshot-id": i,
                "statistics-path": format!("s3://b/t/metadata/{i}.stats"),
                "file-size-in-bytes": 10, "file-footer-size-in-bytes": 4, "blob-metadata": []}))),
        });
        if let Some(gc) = gc {
            d["properties"]["gc.enabled"] = gc.into();
        }
        d
    }

    fn parse(v: &Value) -> TableMetadata {
        TableMetadata::parse(v.to_string().as_bytes(), "v3.metadata.json").unwrap()
    }

    #[test]
    fn gc_enabled_follows_java_boolean_parsing() {
        for ok in [None, Some("true"), Some("TRUE"), Some(" True ")] {
            assert!(check_gc_enabled("db.t", &parse(&doc(ok))).is_ok(), "{ok:?}");
        }
        for refused in ["false", "no", "0", ""] {
            let err = check_gc_enabled("db.t", &parse(&doc(Some(refused)))).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::BadArguments);
            assert!(err.message().contains("gc.enabled"), "{err}");
        }
    }

    #[test]
    fn new_metadata_drops_expired_snapshots_refs_log_and_statistics() {
        let base = parse(&doc(None));
        let decision = ExpiryDecision {
            snapshots: Vec::new(),
            refs: vec![RefVerdict {
                name: "old".into(),
                kind: RefKind::Tag,
                snapshot_id: 1,
                fate: RefFate::Removed(RefRemoval::AgedOut {
                    age_ms: 10,
                    max_ref_age_ms: 1,
                }),
            }],
            retained: BTreeSet::from([2, 3]),
            expired: BTreeSet::from([1]),
        };
        let md = new_metadata(&base, &decision).unwrap();
        let ids: Vec<i64> = md.snapshots().iter().map(|s| s.snapshot_id).collect();
        assert_eq!(ids, [2, 3]);
        assert!(md.ref_named("old").is_none() && md.ref_named("main").is_some());
        let log: Vec<i64> = md.snapshot_log().iter().map(|e| e.snapshot_id).collect();
        assert_eq!(log, [2, 3]);
        let stats: Vec<i64> = md.statistics().iter().map(|s| s.snapshot_id).collect();
        assert_eq!(stats, [3]);
        assert_eq!(md.json()["table-uuid"], base.json()["table-uuid"]);
    }

    #[test]
    fn named_paths_say_how_many_more() {
        let first = vec!["s3://b/x".to_string(), "s3://b/y".to_string()];
        assert_eq!(named_paths(&first, 2), "s3://b/x, s3://b/y");
        assert_eq!(named_paths(&first, 12), "s3://b/x, s3://b/y and 10 more");
        let err = Error::not_implemented(format!("outside: {}", named_paths(&first, 5)));
        assert!(
            err.to_string()
                .ends_with("s3://b/y and 3 more. (NOT_IMPLEMENTED)"),
            "{err}"
        );
    }
}
