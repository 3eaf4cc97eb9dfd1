//! The executor of `rewrite_manifests` (and `OPTIMIZE TABLE t MANIFEST`): read the current
//! snapshot's manifest list and the manifests to rewrite, decide ([`super::decide`]), write the
//! new manifests and a manifest list, commit a `replace` snapshot through the commit protocol's
//! one loop ([`protocol::run`]), and on a conflict apply Java's `BaseRewriteManifests` rule.

use crate::maintain::report::{Metrics, Report, ReportBody, Reported};
use std::collections::{BTreeSet, HashSet};

use super::explain::RewriteManifestsExplainRow;
use super::metrics::RewriteManifestsMetrics;
use super::plan::{ManifestPlan, read_list};
use super::reuse::{PlannedFrom, Reuse, reuse};
use super::write::new_snapshot;
use crate::error::{Error, Result};
use crate::iceberg::avro::Codec;
use crate::iceberg::commit::Committed;
use crate::iceberg::commit::protocol::{self, Attempt, Procedure, Step};
use crate::iceberg::locate::LocatedMetadata;
use crate::iceberg::manifest_list::ManifestFile;
use crate::maintain::shape::{Intent, MaintenanceProcedure};
use crate::maintain::target::MaintenanceTarget;
use crate::plan::RewriteManifestsOptions;
use crate::progress::Phase;

pub(super) const PROCEDURE: &str = "rewrite_manifests";
pub(super) const CODEC: Codec = Codec::Deflate;

/// What a run (or dry run, or EXPLAIN) of `rewrite_manifests` returns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RewriteManifestsOutcome {
    pub metrics: RewriteManifestsMetrics,
    /// The plan, for EXPLAIN.
    pub explain: Option<Vec<RewriteManifestsExplainRow>>,
    pub warnings: Vec<String>,
    /// The committed snapshot, when one was.
    pub snapshot_id: Option<i64>,
}

impl Reported for RewriteManifestsOutcome {
    fn into_report(self) -> Report {
        let metrics = ReportBody::Metrics(Metrics::RewriteManifests(self.metrics));
        Report::explain_or(self.explain, metrics, self.warnings)
    }
}

/// New manifests written but not yet committed.
#[derive(Debug, Clone)]
pub(super) struct Written {
    /// List entries of the new manifests (snapshot id and sequence number set at commit).
    pub(super) manifests: Vec<(ManifestFile, Option<i64>)>,
    /// Paths of the manifests they replace.
    pub(super) replaced: BTreeSet<String>,
    /// Live entries rewritten.
    pub(super) entries: usize,
    /// The snapshot and format version they were planned from.
    pub(super) planned: PlannedFrom,
}

impl Written {
    fn paths(&self) -> Vec<String> {
        self.manifests
            .iter()
            .map(|(m, _)| m.manifest_path.clone())
            .collect()
    }
}

/// What one planning pass ended in.
enum Planned {
    Done(RewriteManifestsOutcome),
    Write(Written),
}

/// `rewrite_manifests` and `OPTIMIZE TABLE t MANIFEST` in the procedure shape.
pub struct RewriteManifests;

impl MaintenanceProcedure for RewriteManifests {
    type Options = RewriteManifestsOptions;
    type Plan = RewritePlan;
    type Outcome = RewriteManifestsOutcome;
    const PHASES: &'static [Phase] = &[Phase::ReadingManifests, Phase::WritingManifests];

    fn name(_: &RewriteManifestsOptions) -> String {
        PROCEDURE.to_string()
    }

    fn dry_run(options: &RewriteManifestsOptions) -> bool {
        options.dry_run
    }

    async fn plan(
        target: &MaintenanceTarget,
        options: &RewriteManifestsOptions,
        intent: Intent,
    ) -> Result<RewritePlan> {
        options.validate()?;
        if intent == Intent::Run {
            return Ok(RewritePlan::AtCommit);
        }
        let mut planning = Planning { target, options };
        let max_attempts = target.settings.commit_max_attempts();
        protocol::run(target, &mut planning, max_attempts, None).await
    }

    fn explain(plan: RewritePlan) -> RewriteManifestsOutcome {
        match plan {
            RewritePlan::Decided(plan) => plan.explain(),
            other => Self::count(other),
        }
    }

    fn count(plan: RewritePlan) -> RewriteManifestsOutcome {
        match plan {
            RewritePlan::Decided(plan) => plan.count(),
            RewritePlan::NoSnapshot { dry_run } => noop(dry_run),
            RewritePlan::AtCommit => noop(false),
        }
    }

    async fn execute(
        target: &MaintenanceTarget,
        options: &RewriteManifestsOptions,
        _: RewritePlan,
    ) -> Result<RewriteManifestsOutcome> {
        let mut rewrite = Rewrite {
            target,
            options,
            carried: None,
            attempt: None,
            warnings: Vec::new(),
        };
        let max_attempts = target.settings.commit_max_attempts();
        protocol::run(target, &mut rewrite, max_attempts, None).await
    }
}

/// What `rewrite_manifests` decided.
pub enum RewritePlan {
    /// EXPLAIN and dry runs: the decision on the newest metadata's current snapshot.
    Decided(Box<ManifestPlan>),
    /// The table has no current snapshot: nothing to rewrite.
    NoSnapshot { dry_run: bool },
    /// A run decides on each commit attempt's base inside the commit protocol (a conflict may
    /// keep the manifests already written), with the same [`ManifestPlan::decide`].
    AtCommit,
}

/// EXPLAIN's and dry runs' side of the commit loop: decide on the newest metadata, commit
/// nothing.
struct Planning<'a> {
    target: &'a MaintenanceTarget,
    options: &'a RewriteManifestsOptions,
}

impl Procedure for Planning<'_> {
    type Output = RewritePlan;

    fn name(&self) -> &str {
        PROCEDURE
    }

    fn plans_only_on_writable(&self) -> bool {
        false
    }

    async fn step(
        &mut self,
        _attempt: u32,
        located: &LocatedMetadata,
    ) -> Result<Step<RewritePlan>> {
        let Some(current) = located.metadata.current_snapshot() else {
            let dry_run = self.options.dry_run;
            return Ok(Step::Done(RewritePlan::NoSnapshot { dry_run }));
        };
        let list = read_list(&self.target.io, current).await?;
        let plan = ManifestPlan::decide(self.target, located, list, self.options).await?;
        Ok(Step::Done(RewritePlan::Decided(Box::new(plan))))
    }

    async fn committed(&mut self, _: &LocatedMetadata, _: Committed) -> Result<RewritePlan> {
        Err(Error::logical(format!("{PROCEDURE}: planning committed")))
    }
}

/// The rewrite's side of the commit loop.
struct Rewrite<'a> {
    target: &'a MaintenanceTarget,
    options: &'a RewriteManifestsOptions,
    /// Manifests written before a conflict, which may serve the next attempt.
    carried: Option<Written>,
    /// The manifests and snapshot id of the attempt being committed.
    attempt: Option<(Written, i64)>,
    warnings: Vec<String>,
}

impl Rewrite<'_> {
    /// Decide on `located`'s current snapshot (listing `list`) and write the new manifests.
    async fn plan_and_write(
        &self,
        located: &LocatedMetadata,
        list: Vec<ManifestFile>,
    ) -> Result<Planned> {
        let target = self.target;
        let plan = ManifestPlan::decide(target, located, list, self.options).await?;
        if plan.is_noop() {
            return Ok(Planned::Done(noop(false)));
        }
        target.progress.begin_writes()?;
        plan.write(target, &located.metadata)
            .await
            .map(Planned::Write)
    }

    fn done(&mut self, outcome: RewriteManifestsOutcome) -> Step<RewriteManifestsOutcome> {
        Step::Done(with_warnings(outcome, std::mem::take(&mut self.warnings)))
    }
}

impl Procedure for Rewrite<'_> {
    type Output = RewriteManifestsOutcome;

    fn name(&self) -> &str {
        PROCEDURE
    }

    /// EXPLAIN and dry runs read any table; the loop checks before committing.
    fn plans_only_on_writable(&self) -> bool {
        false
    }

    async fn step(
        &mut self,
        _attempt: u32,
        located: &LocatedMetadata,
    ) -> Result<Step<RewriteManifestsOutcome>> {
        let (target, options) = (self.target, self.options);
        let metadata = &located.metadata;
        let Some(current) = metadata.current_snapshot() else {
            if let Some(w) = self.carried.take() {
                let why = "the table has no current snapshot any more";
                self.warnings
                    .push(drop_written(target, &w, why, None).await);
            }
            return Ok(self.done(noop(options.dry_run)));
        };
        let list = read_list(&target.io, current).await?;
        // The manifests written before a conflict serve this attempt only when the head still
        // descends from what they were planned from, in the same format version, and lists every
        // manifest they replace (`reuse.rs`); else they go and the rewrite plans again.
        let verdict = self.carried.as_ref().map(|w| {
            let history = metadata.ancestry(w.planned.snapshot_id, Some(current.snapshot_id));
            reuse(
                w.planned,
                history,
                metadata.format_version(),
                still_listed(w, &list),
            )
        });
        let written = match (self.carried.take(), verdict) {
            (Some(w), Some(Reuse::Reuse)) => w,
            (Some(w), Some(Reuse::PlanAgain(why))) => {
                let planned_again = Some(current.snapshot_id);
                self.warnings
                    .push(drop_written(target, &w, &why, planned_again).await);
                match self.plan_and_write(located, list.clone()).await? {
                    Planned::Done(outcome) => return Ok(self.done(outcome)),
                    Planned::Write(w) => w,
                }
            }
            _ => match self.plan_and_write(located, list.clone()).await? {
                Planned::Done(outcome) => return Ok(self.done(outcome)),
                Planned::Write(w) => w,
            },
        };
        let (new_metadata, list_path, snapshot_id) = new_snapshot(
            &target.io,
            metadata,
            current,
            &list,
            &written,
            target.now_ms,
        )
        .await?;
        self.attempt = Some((written, snapshot_id));
        // On a conflict the loop deletes the list; the manifests may serve the next attempt.
        Ok(Step::Commit(Box::new(Attempt {
            metadata: new_metadata,
            written: vec![list_path],
            options: target.commit_options(),
        })))
    }

    async fn committed(
        &mut self,
        _base: &LocatedMetadata,
        _done: Committed,
    ) -> Result<RewriteManifestsOutcome> {
        let (written, snapshot_id) = self
            .attempt
            .take()
            .ok_or_else(|| Error::logical(format!("{PROCEDURE}: a commit without an attempt")))?;
        Ok(RewriteManifestsOutcome {
            metrics: RewriteManifestsMetrics {
                rewritten_manifests_count: written.replaced.len() as i64,
                added_manifests_count: written.manifests.len() as i64,
                dry_run: false,
            },
            explain: None,
            warnings: std::mem::take(&mut self.warnings),
            snapshot_id: Some(snapshot_id),
        })
    }

    async fn conflicted(&mut self, _kept: Vec<String>) {
        self.target.progress.writes_abandoned();
        self.carried = self.attempt.take().map(|(written, _)| written);
    }

    // After an unconfirmed or unknown outcome the files we wrote stay (orphans at worst).

    async fn exhausted(&mut self) -> Option<String> {
        if let Some(w) = self.carried.take() {
            // Never committed: every attempt conflicted.
            self.target.delete_uncommitted(&w.paths()).await;
        }
        None
    }
}

fn with_warnings(
    mut outcome: RewriteManifestsOutcome,
    mut warnings: Vec<String>,
) -> RewriteManifestsOutcome {
    warnings.append(&mut outcome.warnings);
    outcome.warnings = warnings;
    outcome
}

/// Nothing rewritten (`dry_run` as asked).
pub(super) fn noop(dry_run: bool) -> RewriteManifestsOutcome {
    RewriteManifestsOutcome {
        metrics: RewriteManifestsMetrics {
            dry_run,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Deletes the manifests of `written` (this statement wrote them, no commit references them)
/// because of `why`: the warning saying so, and with `planned_again` what the rewrite plans from.
async fn drop_written(
    target: &MaintenanceTarget,
    written: &Written,
    why: &str,
    planned_again: Option<i64>,
) -> String {
    let paths = written.paths();
    let outcomes = target.io.delete_many(&paths).await;
    let failed: Vec<String> = outcomes
        .into_iter()
        .filter_map(|o| Some(format!("'{}' ({})", o.uri, o.result.err()?.message())))
        .collect();
    let except = if failed.is_empty() {
        String::new()
    } else {
        format!(
            " except {}, left for remove_orphan_files",
            failed.join("; ")
        )
    };
    let next = planned_again.map_or_else(String::new, |id| {
        format!("; planned again from snapshot {id}")
    });
    format!(
        "{PROCEDURE} on {}: {why}; the {} manifest(s) it wrote from snapshot {} were deleted \
         (never committed){except}{next}",
        target.table_name,
        paths.len(),
        written.planned.snapshot_id
    )
}

fn still_listed(written: &Written, list: &[ManifestFile]) -> bool {
    let listed: HashSet<&str> = list.iter().map(|m| m.manifest_path.as_str()).collect();
    written.replaced.iter().all(|p| listed.contains(p.as_str()))
}
