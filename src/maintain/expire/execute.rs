//! `expire_snapshots`: the executor (SPEC §3). It chains the pure decisions of
//! [`super::policy`], [`super::retention`] and [`super::keepset`] with storage.
//!
//! Algorithm, in order (each attempt starts from scratch):
//! 1. Locate the newest committed metadata ([`MaintenanceTarget::locate_newest`]): a table
//!    setting `iceberg_metadata_file_path` pinning a file that is not the newest refuses the
//!    statement (`BAD_ARGUMENTS`), dry runs and EXPLAIN included (planning on an older file
//!    forks the table). A real run first settles journals of unconfirmed commits
//!    ([`retract_unconfirmed`]) and refuses an ambiguous table before recovering anything.
//! 2. [`plan::plan_expiry`]: refuse unless `gc.enabled` is true (Java `RemoveSnapshots`: "GC is
//!    disabled"; `BAD_ARGUMENTS`, as a table setting forbids the call) → effective policy
//!    (settings < table properties < `retain_last`/`retention_period`) → `decide_expiry` (policy or
//!    id mode, the `expire_before` fuse) → when something expires: read every manifest list
//!    ([`super::graph`]; a retained snapshot's unreadable list fails) → phase A (which manifests
//!    to read) → read them (a retained one must be readable; a gone candidate is skipped with a
//!    warning) → phase B (keep set, candidates) → refuse when a candidate lies outside the table
//!    location (`NOT_IMPLEMENTED`, naming up to 10). All of this also runs for dry runs and
//!    EXPLAIN, so they fail exactly where the real run would.
//! 3. EXPLAIN returns the plan ([`explain`]); nothing expires and no ref is removed → nothing is
//!    written, all counts 0; a dry run returns the counts of the plan.
//! 4. Commit `v<N+1>` ([`commit`], create-if-absent): kept snapshots in original order, removed
//!    refs dropped, snapshot-log trimmed after the last expired entry, statistics of expired
//!    snapshots dropped; the commit appends to and trims metadata-log and sets last-updated-ms.
//!    On [`CommitOutcome::Conflict`] go back to 1 (another writer may have added snapshots and
//!    files: nothing of the old plan is reused), at most `iceberg_commit_max_attempts` times, then
//!    `LIMIT_EXCEEDED`. On [`CommitOutcome::Unconfirmed`] (another file of our version appeared
//!    after we wrote and ours could not be taken back) nothing is deleted, the journal is marked
//!    and a warning says so; the next run retracts our file and plans again.
//!    Before the commit, when the plan has files to delete, a journal records the base metadata
//!    and the expired snapshot ids ([`journal`]); it is removed after a conflict and after the
//!    deletes. The first attempt of every real run first finishes what earlier, interrupted runs
//!    journaled ([`recover`]), so a crash between commit and deletes converges on the next run.
//!    Those deletions are a warning, not part of the rows: the rows are this statement's own
//!    expiry (as in ClickHouse), so a dry run's rows still equal the real run's.
//! 5. Only after the commit, delete leaf first ([`delete`]): content files, manifests, manifest
//!    lists, statistics files (Java `ReachableFileCleanup`'s order; a crash in between leaves
//!    orphans, never dangling metadata). Failures are a warning, not an error; the counts are of
//!    files actually deleted (a file already gone counts as deleted), so a dry run's counts equal
//!    a real run's whenever every delete succeeds.
//!
//! Deliberate differences from ClickHouse 26.9 (SPEC §3): unreferenced snapshots younger than the
//! table max age are kept (Java's rule); candidates outside the location and `gc.enabled=false`
//! refuse the statement; old metadata files are never deleted.

mod delete;
mod explain;
pub mod journal;
mod plan;
mod recover;

pub use delete::DeleteReport;
pub use explain::{category_name, format_ts};
pub use plan::{ExpiryPlan, PROP_GC_ENABLED, new_metadata, plan_expiry, plan_files};
pub use recover::{Recovered, finish_pending, retract_unconfirmed};

use super::keepset::ExpiryFileCounts;
use super::target::MaintenanceTarget;
use crate::engine::{ExpireMetrics, Metrics, QueryResult};
use crate::error::{Error, ErrorKind, Result};
use crate::iceberg::commit::{CommitOptions, CommitOutcome, commit};
use crate::iceberg::locate::LocatedMetadata;
use crate::maintain::DropLater;
use crate::maintain::policy::{RefFate, RefRemoval};
use crate::plan::ExpireOptions;

/// Run `expire_snapshots` on `target`; with `explain`, return the plan only.
pub async fn run(
    target: &MaintenanceTarget,
    options: &ExpireOptions,
    explain: bool,
) -> Result<QueryResult> {
    let max_attempts = target.settings.commit_max_attempts();
    let mut last_conflict = String::new();
    let mut recovered = Recovered::default();
    let mut retracted = Vec::new();
    let mut journals = None;
    for attempt in 0..max_attempts {
        if attempt == 0 && !explain && !options.dry_run {
            let (found, parse_warnings) = journal::pending(&target.io, &target.location).await?;
            let (still, warnings) = retract_unconfirmed(target, found).await?;
            retracted = warnings;
            journals = Some((still, parse_warnings));
        }
        let located = DropLater::new(target.locate_newest("expire_snapshots").await?);
        if let Some(pending) = journals.take() {
            // Recovery deletes files: never on a table whose current file is in doubt.
            located.check_writable()?;
            recovered = finish_pending(target, &located.metadata, pending).await?;
        }
        let plan = DropLater::new(plan_expiry(target, &located.metadata, options).await?);
        let mut warnings = retracted.clone();
        warnings.extend(located.warnings.iter().cloned());
        warnings.extend(recovered.warnings.iter().cloned());
        warnings.extend(plan_warnings(&plan));
        if explain {
            let metadata = &located.metadata;
            let parent_of = |id| metadata.snapshot(id).and_then(|s| s.parent_snapshot_id);
            return Ok(explain::explain_table(
                &plan,
                parent_of,
                &warnings,
                &target.settings.session_time_zone(),
            ));
        }
        if plan.is_noop() {
            return Ok(metrics_result(
                ExpiryFileCounts::default(),
                options.dry_run,
                warnings,
            ));
        }
        if options.dry_run {
            // A dry run fails where the real run would: an ambiguous table cannot be committed.
            located.check_writable()?;
            return Ok(metrics_result(plan.delete.counts(), true, warnings));
        }
        located.check_writable()?;
        target.progress.begin_writes()?;
        let journal_uri = write_journal(target, &located, &plan).await?;
        match commit_plan(target, &located, &plan).await? {
            CommitOutcome::Conflict { path } => {
                // Definitely not committed: the journal announces nothing.
                if let Some(uri) = journal_uri {
                    journal::remove(&target.io, &uri).await;
                }
                target.progress.writes_abandoned();
                last_conflict = path;
                continue;
            }
            CommitOutcome::Unconfirmed { path, rival, why } => {
                warnings.push(
                    unconfirmed(target, &located, &plan, journal_uri, (&path, &rival, &why)).await,
                );
                return Ok(metrics_result(ExpiryFileCounts::default(), false, warnings));
            }
            CommitOutcome::Committed(_) => {}
        }
        let report = delete::delete_planned(
            &target.io,
            &target.location,
            &plan,
            target.settings.delete_concurrency(),
        )
        .await;
        warnings.extend(report.warning());
        // A cancelled run skipped deletes: its journal stays for the next run to finish.
        let finished = report.failed.is_empty() && target.progress.keep_going();
        if let Some(uri) = journal_uri.filter(|_| finished) {
            warnings.extend(journal::remove(&target.io, &uri).await);
        }
        warnings.extend(target.progress.cancel_warning());
        return Ok(metrics_result(report.counts, false, warnings));
    }
    Err(Error::new(
        ErrorKind::LimitExceeded,
        format!(
            "expire_snapshots on {}: {max_attempts} commit attempt(s) conflicted with concurrent \
             writers (last taken name: {last_conflict}); nothing was deleted",
            target.table_name
        ),
    ))
}

/// An unconfirmed commit: nothing is deleted; the journal (written now if the plan had none) is
/// marked so the next run retracts our file when it can. Returns the warning.
async fn unconfirmed(
    target: &MaintenanceTarget,
    located: &LocatedMetadata,
    plan: &ExpiryPlan,
    journal_uri: Option<String>,
    (path, rival, why): (&str, &str, &str),
) -> String {
    let mut record = journal::Journal::new(
        &located.path,
        plan.decision.expired.iter().copied(),
        target.now_ms,
    );
    record.unconfirmed_metadata = Some(path.to_string());
    let marked = match &journal_uri {
        Some(uri) => journal::rewrite(&target.io, uri, &record)
            .await
            .map(|()| uri.clone()),
        None => journal::write(&target.io, &target.location, &record).await,
    };
    let next = match marked {
        Ok(uri) => format!(
            "the next expire_snapshots retracts '{path}' if it still can and plans again \
             (journal '{uri}')"
        ),
        Err(e) => format!(
            "the expiry journal could not record it ({}); remove '{path}' or '{rival}' by hand",
            e.message()
        ),
    };
    format!(
        "expire_snapshots on {}: {}; no file was deleted; {next}",
        target.table_name,
        CommitOutcome::unconfirmed_message(path, rival, why)
    )
}

/// Record the plan's expired snapshots before committing, when it has files to delete.
async fn write_journal(
    target: &MaintenanceTarget,
    located: &LocatedMetadata,
    plan: &ExpiryPlan,
) -> Result<Option<String>> {
    if plan.delete.is_empty() {
        return Ok(None);
    }
    let record = journal::Journal::new(
        &located.path,
        plan.decision.expired.iter().copied(),
        target.now_ms,
    );
    journal::write(&target.io, &target.location, &record)
        .await
        .map(Some)
}

async fn commit_plan(
    target: &MaintenanceTarget,
    located: &LocatedMetadata,
    plan: &ExpiryPlan,
) -> Result<CommitOutcome> {
    let metadata = new_metadata(&located.metadata, &plan.decision)?;
    let options = CommitOptions {
        update_metadata_log: true,
        now_ms: Some(target.now_ms),
    };
    commit(&target.io, located, metadata, &options).await
}

/// Warnings of a plan: dangling refs removed, files already gone.
fn plan_warnings(plan: &ExpiryPlan) -> Vec<String> {
    let dangling = plan.decision.refs.iter().filter_map(|r| match r.fate {
        RefFate::Removed(RefRemoval::Dangling) => Some(format!(
            "ref '{}' points at snapshot {} which does not exist; it is removed",
            r.name, r.snapshot_id
        )),
        _ => None,
    });
    dangling
        .chain(plan.files.warnings.iter().cloned())
        .collect()
}

fn metrics_result(counts: ExpiryFileCounts, dry_run: bool, warnings: Vec<String>) -> QueryResult {
    let metrics = ExpireMetrics {
        deleted_data_files_count: counts.data_files,
        deleted_position_delete_files_count: counts.position_delete_files,
        deleted_equality_delete_files_count: counts.equality_delete_files,
        deleted_manifest_files_count: counts.manifest_files,
        deleted_manifest_lists_count: counts.manifest_lists,
        deleted_statistics_files_count: counts.statistics_files,
        dry_run,
    };
    let mut result = QueryResult::from_metrics(Metrics::Expire(metrics));
    result.warnings = warnings;
    result
}
