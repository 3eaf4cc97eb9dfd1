//! The executor of `expire_snapshots` in the procedure shape: [`super`]'s algorithm (locate,
//! plan, commit, delete) as a [`Procedure`] of the commit protocol's one loop
//! ([`protocol::run`]), returning an [`ExpireOutcome`]. EXPLAIN and dry runs decide on the newest
//! metadata and stop there; a run decides on each attempt's base with the same [`decide`].

use super::cleanup::{self, MetadataCleanup};
use crate::maintain::report::{Metrics, Report, ReportBody, Reported};
use std::collections::HashMap;

use super::explain::{ExpireExplainRow, explain_rows};
use super::keepset::ExpiryFileCounts;
use super::metrics::ExpireMetrics;
use super::plan::{ExpiryPlan, new_metadata, plan_expiry};
use super::policy::{RefFate, RefRemoval};
use super::recover::{Recovered, finish_pending, retract_unconfirmed};
use super::{delete, journal};
use crate::error::{Error, ErrorKind, Result};
use crate::iceberg::commit::Committed;
use crate::iceberg::commit::protocol::{self, Attempt, Procedure, Step};
use crate::iceberg::locate::LocatedMetadata;
use crate::iceberg::metadata::TableMetadata;
use crate::iceberg::spec::SnapshotId;
use crate::maintain::shape::{Intent, MaintenanceProcedure};
use crate::maintain::target::MaintenanceTarget;
use crate::progress::Phase;
use crate::time_zone::SessionTimeZone;

const PROCEDURE: &str = "expire_snapshots";
use crate::plan::ExpireOptions;
use crate::pool::DropLater;

/// What one `expire_snapshots` statement did (a dry run: would do; EXPLAIN: plans).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExpireOutcome {
    /// The counts (all 0 for EXPLAIN).
    pub metrics: ExpireMetrics,
    /// EXPLAIN only: the plan, row by row.
    pub explain: Option<Vec<ExpireExplainRow>>,
    /// Things the user should know that did not fail the statement.
    pub warnings: Vec<String>,
    /// Planned deletes that failed after the commit (each named in a warning; the files stay,
    /// for `remove_orphan_files`). ClickHouse's metric rows have no place for it.
    pub failed_deletions: i64,
    /// A run: the bytes its deletes freed, summed over the deleted files whose size it knows (the
    /// sizes manifests record for data and delete files, the manifest lists' for manifests, the
    /// statistics files' own, and the manifest lists' as read).
    pub freed_bytes: Option<i64>,
}

impl Reported for ExpireOutcome {
    fn into_report(self) -> Report {
        let metrics = ReportBody::Metrics(Metrics::Expire(self.metrics));
        let mut report = Report::explain_or(self.explain, metrics, self.warnings);
        report.failed_deletions = self.failed_deletions;
        report.freed_bytes = self.freed_bytes;
        report
    }
}

/// `expire_snapshots` in the procedure shape.
pub struct Expire;

/// What `expire_snapshots` decided.
pub enum ExpirePlan {
    /// EXPLAIN and dry runs: the decision on the newest metadata.
    Decided(Box<Decided>),
    /// A run: it first finishes what earlier runs left (their journals), then decides on each
    /// commit attempt's base inside the commit protocol, with the same [`decide`].
    AtCommit,
}

/// The decision on one base: what expires, which files go, what metadata cleanup removes.
pub struct Decided {
    plan: DropLater<ExpiryPlan>,
    cleanup: Option<MetadataCleanup>,
    warnings: Vec<String>,
    /// EXPLAIN's context: each snapshot's parent on the base, and the session time zone.
    parents: HashMap<SnapshotId, SnapshotId>,
    zone: SessionTimeZone,
    dry_run: bool,
}

impl Decided {
    /// Nothing expires, no ref goes, no schema or spec to remove: nothing is written.
    fn is_noop(&self) -> bool {
        self.plan.is_noop() && self.cleanup.as_ref().is_none_or(MetadataCleanup::is_empty)
    }
}

impl MaintenanceProcedure for Expire {
    type Options = ExpireOptions;
    type Plan = ExpirePlan;
    type Outcome = ExpireOutcome;
    const PHASES: &'static [Phase] = &[
        Phase::ReadingManifestLists,
        Phase::ReadingManifests,
        Phase::DeletingFiles,
    ];

    fn name(_: &ExpireOptions) -> String {
        PROCEDURE.to_string()
    }

    fn dry_run(options: &ExpireOptions) -> bool {
        options.dry_run
    }

    async fn plan(
        target: &MaintenanceTarget,
        options: &ExpireOptions,
        intent: Intent,
    ) -> Result<ExpirePlan> {
        if intent == Intent::Run {
            return Ok(ExpirePlan::AtCommit);
        }
        let mut planning = Planning {
            target,
            options,
            explain: intent == Intent::Explain,
        };
        let max_attempts = target.settings.commit_max_attempts();
        let decided = protocol::run(target, &mut planning, max_attempts, None).await?;
        Ok(ExpirePlan::Decided(Box::new(decided)))
    }

    fn explain(plan: ExpirePlan) -> ExpireOutcome {
        let ExpirePlan::Decided(d) = plan else {
            return ExpireOutcome::default();
        };
        let parent_of = |id| d.parents.get(&id).copied();
        let mut rows = explain_rows(&d.plan, parent_of, &d.warnings, &d.zone);
        rows.extend(super::explain::cleanup_rows(d.cleanup.as_ref()));
        ExpireOutcome {
            explain: Some(rows),
            warnings: d.warnings,
            ..ExpireOutcome::default()
        }
    }

    fn count(plan: ExpirePlan) -> ExpireOutcome {
        let ExpirePlan::Decided(d) = plan else {
            return ExpireOutcome::default();
        };
        let counts = if d.is_noop() {
            ExpiryFileCounts::default()
        } else {
            d.plan.delete.counts()
        };
        outcome(counts, d.dry_run, d.warnings, &d.cleanup)
    }

    async fn execute(
        target: &MaintenanceTarget,
        options: &ExpireOptions,
        _: ExpirePlan,
    ) -> Result<ExpireOutcome> {
        run(target, options).await
    }
}

/// Decide on `located` (the warnings gathered before deciding come first): the plan, or the
/// newer metadata to plan on when a file the plan reads vanished.
async fn decide(
    target: &MaintenanceTarget,
    options: &ExpireOptions,
    located: &LocatedMetadata,
    mut warnings: Vec<String>,
) -> Result<Step<Decided>> {
    let plan = match plan_expiry(target, &located.metadata, options).await {
        Ok(plan) => DropLater::new(plan),
        // A concurrent expiry may have committed and deleted a file our plan reads: that is
        // a conflict (re-plan on the newest metadata), not a broken table.
        Err(e) if e.kind() == ErrorKind::FileDoesntExist => {
            return match newer_metadata_path(target, located).await {
                Some(newer) => Ok(Step::Moved(newer)),
                None => Err(e),
            };
        }
        Err(e) => return Err(e),
    };
    let cleanup = if options.clean_expired_metadata {
        let retained = &plan.decision.retained;
        let specs = cleanup::specs_in_use(target, &located.metadata, retained).await?;
        Some(cleanup::decide_cleanup(
            &located.metadata,
            retained,
            specs.as_ref(),
        ))
    } else {
        None
    };
    warnings.extend(plan_warnings(&plan));
    Ok(Step::Done(Decided {
        plan,
        cleanup,
        warnings,
        parents: HashMap::new(),
        zone: target.settings.session_time_zone(),
        dry_run: options.dry_run,
    }))
}

/// The parent of every snapshot of `metadata` that has one.
fn parents(metadata: &TableMetadata) -> HashMap<SnapshotId, SnapshotId> {
    metadata
        .snapshots()
        .iter()
        .filter_map(|s| Some((s.snapshot_id, s.parent_snapshot_id?)))
        .collect()
}

/// EXPLAIN's and dry runs' side of the commit loop: decide on the newest metadata (again on a
/// newer one when a file the plan reads vanished), commit nothing.
struct Planning<'a> {
    target: &'a MaintenanceTarget,
    options: &'a ExpireOptions,
    explain: bool,
}

impl Procedure for Planning<'_> {
    type Output = Decided;

    fn name(&self) -> &str {
        PROCEDURE
    }

    /// EXPLAIN and dry runs read any table; a dry run that would write checks it below.
    fn plans_only_on_writable(&self) -> bool {
        false
    }

    async fn step(&mut self, _attempt: u32, located: &LocatedMetadata) -> Result<Step<Decided>> {
        let warnings = located.warnings.clone();
        let mut decided = match decide(self.target, self.options, located, warnings).await? {
            Step::Done(decided) => decided,
            other => return Ok(other),
        };
        if self.explain {
            decided.parents = parents(&located.metadata);
        } else if !decided.is_noop() {
            // A dry run fails where the real run would: an ambiguous table cannot be committed.
            located.check_writable()?;
        }
        Ok(Step::Done(decided))
    }

    async fn committed(&mut self, _: &LocatedMetadata, _: Committed) -> Result<Decided> {
        Err(Error::logical("expire_snapshots: planning committed"))
    }
}

/// A run: finish earlier runs' journals, then decide, commit and delete in the commit loop.
async fn run(target: &MaintenanceTarget, options: &ExpireOptions) -> Result<ExpireOutcome> {
    let mut expiry = Expiry {
        target,
        options,
        retracted: Vec::new(),
        journals: None,
        recovered: Recovered::default(),
        attempt: None,
        unsettled: None,
    };
    let (found, parse_warnings) = journal::pending(&target.io, &target.location).await?;
    let (still, warnings) = retract_unconfirmed(target, found).await?;
    expiry.retracted = warnings;
    expiry.journals = Some((still, parse_warnings));
    let max_attempts = target.settings.commit_max_attempts();
    let result = protocol::run(target, &mut expiry, max_attempts, None).await;
    // An outcome that is not known ends the statement with an error, as in every procedure,
    // followed by what the statement did before it.
    result.map_err(|e| match expiry.unsettled.take() {
        Some(warnings) => with_warnings(e, &warnings),
        None => e,
    })
}

/// A run's side of the commit loop.
struct Expiry<'a> {
    target: &'a MaintenanceTarget,
    options: &'a ExpireOptions,
    /// Warnings of retracting unconfirmed commits of earlier runs.
    retracted: Vec<String>,
    /// Journals of earlier runs still to finish (on the first attempt's metadata).
    journals: Option<(Vec<journal::PendingJournal>, Vec<String>)>,
    recovered: Recovered,
    /// The attempt being committed.
    attempt: Option<Planned>,
    /// The warnings of an attempt whose outcome is unconfirmed or unknown, for the error.
    unsettled: Option<Vec<String>>,
}

/// An attempt's plan, committed or not.
struct Planned {
    plan: DropLater<ExpiryPlan>,
    journal_uri: Option<String>,
    metadata: TableMetadata,
    cleanup: Option<MetadataCleanup>,
    warnings: Vec<String>,
}

impl Expiry<'_> {
    fn attempt(&mut self) -> Result<Planned> {
        self.attempt
            .take()
            .ok_or_else(|| Error::logical("expire_snapshots: a commit without a plan"))
    }
}

impl Procedure for Expiry<'_> {
    type Output = ExpireOutcome;

    fn name(&self) -> &str {
        PROCEDURE
    }

    /// Plans that change nothing read any table; recovery and commits check it first.
    fn plans_only_on_writable(&self) -> bool {
        false
    }

    async fn step(
        &mut self,
        _attempt: u32,
        located: &LocatedMetadata,
    ) -> Result<Step<ExpireOutcome>> {
        let (target, options) = (self.target, self.options);
        if let Some(pending) = self.journals.take() {
            // Recovery deletes files: never on a table whose current file is in doubt.
            located.check_writable()?;
            self.recovered = finish_pending(target, &located.metadata, pending).await?;
        }
        let mut warnings = self.retracted.clone();
        warnings.extend(located.warnings.iter().cloned());
        warnings.extend(self.recovered.warnings.iter().cloned());
        let decided = match decide(target, options, located, warnings).await? {
            Step::Done(decided) => decided,
            Step::Moved(newer) => return Ok(Step::Moved(newer)),
            Step::Commit(_) => return Err(Error::logical("expire_snapshots: decided a commit")),
        };
        if decided.is_noop() {
            let counts = ExpiryFileCounts::default();
            let Decided {
                warnings, cleanup, ..
            } = decided;
            return Ok(Step::Done(outcome(counts, false, warnings, &cleanup)));
        }
        let Decided {
            plan,
            cleanup,
            warnings,
            ..
        } = decided;
        located.check_writable()?;
        target.progress.begin_writes()?;
        let journal_uri = write_journal(target, located, &plan).await?;
        let metadata = planned_metadata(located, &plan, cleanup.as_ref())?;
        self.attempt = Some(Planned {
            plan,
            journal_uri,
            metadata: metadata.clone(),
            cleanup,
            warnings,
        });
        Ok(Step::Commit(Box::new(Attempt {
            metadata,
            written: Vec::new(),
            options: target.commit_options(),
        })))
    }

    async fn committed(
        &mut self,
        base: &LocatedMetadata,
        done: Committed,
    ) -> Result<ExpireOutcome> {
        let target = self.target;
        let Planned {
            plan,
            journal_uri,
            metadata: planned,
            cleanup,
            mut warnings,
        } = self.attempt()?;
        // A catalog may merge our commit after another writer's: then the returned metadata is
        // not ours alone and the plan's deletes are not proven; the journal re-plans them
        // against every current snapshot next run.
        if let Some(why) = target.foreign_commit(base, &planned, &done) {
            warnings.push(format!("expire_snapshots on {}: {why}", target.table_name));
            let counts = ExpiryFileCounts::default();
            return Ok(outcome(counts, false, warnings, &cleanup));
        }
        let report = delete::delete_planned(
            &target.io,
            &target.location,
            &plan,
            target.settings.delete_concurrency(),
            &target.progress,
        )
        .await;
        warnings.extend(report.warning());
        // A cancelled run skipped deletes: its journal stays for the next run to finish.
        let finished = report.failed.is_empty() && target.progress.keep_going();
        if let Some(uri) = journal_uri.filter(|_| finished) {
            warnings.extend(journal::remove(&target.io, &uri).await);
        }
        warnings.extend(target.progress.cancel_warning());
        let mut done = outcome(report.counts, false, warnings, &cleanup);
        done.failed_deletions = i64::try_from(report.failed.len()).unwrap_or(i64::MAX);
        done.freed_bytes = Some(report.freed_bytes);
        Ok(done)
    }

    async fn conflicted(&mut self, _kept: Vec<String>) {
        // Definitely not committed: the journal announces nothing.
        if let Some(uri) = self.attempt.take().and_then(|a| a.journal_uri) {
            journal::remove(&self.target.io, &uri).await;
        }
        self.target.progress.writes_abandoned();
    }

    /// Nothing is deleted; the journal (written now if the plan had none) is marked so the
    /// next run retracts our file when it can.
    async fn unconfirmed(&mut self, base: &LocatedMetadata, ours: &str, rival: &str) -> String {
        let Some(planned) = self.attempt.take() else {
            return "no file was deleted".to_string();
        };
        let next = unconfirmed(
            self.target,
            base,
            &planned.plan,
            planned.journal_uri,
            ours,
            rival,
        );
        let next = next.await;
        self.unsettled = Some(planned.warnings);
        format!("no file was deleted; {next}")
    }

    /// Nothing is deleted; the journal stays, so the next run settles it and finishes the
    /// deletes.
    async fn unknown(&mut self) -> Option<String> {
        let planned = self.attempt.take()?;
        let next = match &planned.journal_uri {
            Some(uri) => format!(
                "no file was deleted; the next expire_snapshots finishes the deletes if it \
                 landed (journal '{uri}')"
            ),
            None => "no file was deleted (the plan deleted none)".to_string(),
        };
        self.unsettled = Some(planned.warnings);
        Some(next)
    }

    async fn exhausted(&mut self) -> Option<String> {
        Some("nothing was deleted".to_string())
    }
}

/// The newest metadata file when it is no longer the one `located` planned on (another writer
/// committed meanwhile); `None` when it is the same file or cannot be told.
async fn newer_metadata_path(
    target: &MaintenanceTarget,
    located: &LocatedMetadata,
) -> Option<String> {
    let now = target.locate_newest("expire_snapshots").await.ok()?;
    (crate::io::path_key(&now.path) != crate::io::path_key(&located.path)).then_some(now.path)
}

/// An unconfirmed commit of `path`: the journal (written now if the plan had none) is marked
/// with it. Returns what the next run does.
async fn unconfirmed(
    target: &MaintenanceTarget,
    located: &LocatedMetadata,
    plan: &ExpiryPlan,
    journal_uri: Option<String>,
    path: &str,
    rival: &str,
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
    match marked {
        Ok(uri) => format!(
            "the next expire_snapshots retracts '{path}' if it still can and plans again \
             (journal '{uri}')"
        ),
        Err(e) => format!(
            "the expiry journal could not record it ({}); remove '{path}' or '{rival}' by hand",
            e.message()
        ),
    }
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

/// The metadata the plan commits: the expiry's, minus the schemas and specs `cleanup` removes.
fn planned_metadata(
    located: &LocatedMetadata,
    plan: &ExpiryPlan,
    cleanup: Option<&MetadataCleanup>,
) -> Result<TableMetadata> {
    let mut metadata = new_metadata(&located.metadata, &plan.decision)?;
    if let Some(c) = cleanup {
        metadata.remove_schemas(&c.schemas)?;
        metadata.remove_partition_specs(&c.partition_specs)?;
    }
    Ok(metadata)
}

/// Warnings of a plan: dangling refs removed, files already gone.
/// `error`, followed by the warnings gathered before it (an error has no warnings of its own, and
/// these may say what an earlier step already did: a journal finished, a commit retracted).
fn with_warnings(error: Error, warnings: &[String]) -> Error {
    if warnings.is_empty() {
        return error;
    }
    let kind = error.kind();
    Error::new(
        kind,
        format!("{}; before that: {}", error.message(), warnings.join("; ")),
    )
}

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
        .chain(super::reasons::age_kept_warning(plan))
        .collect()
}

fn outcome(
    counts: ExpiryFileCounts,
    dry_run: bool,
    warnings: Vec<String>,
    cleanup: &Option<MetadataCleanup>,
) -> ExpireOutcome {
    let mut metrics = ExpireMetrics::new(counts, dry_run);
    if let Some(c) = cleanup {
        metrics.removed_schemas_count = Some(c.schemas.len() as i64);
        metrics.removed_partition_specs_count = Some(c.partition_specs.len() as i64);
    }
    ExpireOutcome {
        metrics,
        explain: None,
        warnings,
        failed_deletions: 0,
        freed_bytes: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_keeps_the_warnings_gathered_before_it() {
        let error = Error::new(ErrorKind::NetworkError, "no answer");
        assert_eq!(with_warnings(error.clone(), &[]), error);
        let with = with_warnings(
            error,
            &["journal 'j' finished".into(), "commit retracted".into()],
        );
        assert_eq!(with.kind(), ErrorKind::NetworkError);
        assert_eq!(
            with.message(),
            "no answer; before that: journal 'j' finished; commit retracted"
        );
    }
}
