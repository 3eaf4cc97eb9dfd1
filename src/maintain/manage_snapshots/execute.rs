//! The executor of snapshot management: locate, decide, commit (see the module comment of
//! [`super`]). Reads and commits only through [`MaintenanceTarget`].

use super::explain::{SnapshotExplainRow, nothing_row};
use super::moved_base::{
    Pinned, PlannedFrom, change_may_commit, change_on_new_head, pin_procedure, procedure_may_commit,
};
use super::reapply::{picked_changes, reapply_row, write_snapshot};
use super::{Change, Decision, SnapshotMetrics, decide_change, decide_pinned};
use crate::error::{Error, ErrorKind, Result};
use crate::iceberg::commit::Committed;
use crate::iceberg::commit::protocol::{self, Attempt, Procedure, Step};
use crate::iceberg::locate::LocatedMetadata;
use crate::iceberg::metadata::TableMetadata;
use crate::maintain::report::{Metrics, Report, ReportBody, Reported};
use crate::maintain::shape::{Intent, MaintenanceProcedure};
use crate::maintain::target::MaintenanceTarget;
use crate::plan::{SnapshotProcedure, TableChange};
use crate::progress::Phase;

/// What a snapshot-management statement did.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SnapshotOutcome {
    /// The procedures' `previous_snapshot_id` / `current_snapshot_id`; `None` for the DDL.
    pub metrics: Option<SnapshotMetrics>,
    /// The EXPLAIN rows, when explaining (nothing was changed).
    pub explain: Option<Vec<SnapshotExplainRow>>,
    pub warnings: Vec<String>,
    /// The metadata file written, if any.
    pub committed_path: Option<String>,
}

/// The procedures' two metric rows, the plan of EXPLAIN, or nothing (the ref and property
/// statements: "Ok.").
impl Reported for SnapshotOutcome {
    fn into_report(self) -> Report {
        let body = match self.metrics {
            Some(metrics) => ReportBody::Metrics(Metrics::Snapshots(metrics)),
            None => ReportBody::Nothing,
        };
        Report::explain_or(self.explain, body, self.warnings)
    }
}

fn explain_rows(rows: Vec<SnapshotExplainRow>) -> Vec<SnapshotExplainRow> {
    if rows.is_empty() {
        vec![nothing_row("the statement changes nothing")]
    } else {
        rows
    }
}

/// The snapshot-management procedures (`rollback_to_snapshot`, `cherrypick_snapshot`, ...) in
/// the procedure shape.
pub struct ManageSnapshots;

/// The branch, tag and table-property statements in the procedure shape.
pub struct ChangeTable;

/// What a snapshot or ref statement decided.
pub enum SnapshotPlan {
    /// EXPLAIN: the decision on the newest metadata, as the rows of what it changes.
    Decided(Vec<SnapshotExplainRow>),
    /// A run decides on each commit attempt's base inside the commit protocol, pinned to what
    /// the first attempt resolved (`moved_base.rs`).
    AtCommit,
}

impl SnapshotPlan {
    fn explain(self) -> SnapshotOutcome {
        let rows = match self {
            SnapshotPlan::Decided(rows) => rows,
            SnapshotPlan::AtCommit => Vec::new(),
        };
        SnapshotOutcome {
            explain: Some(explain_rows(rows)),
            ..Default::default()
        }
    }
}

impl MaintenanceProcedure for ManageSnapshots {
    type Options = SnapshotProcedure;
    type Plan = SnapshotPlan;
    type Outcome = SnapshotOutcome;
    const PHASES: &'static [Phase] = &[];

    fn name(call: &SnapshotProcedure) -> String {
        call.procedure_name().to_string()
    }

    /// These procedures have no dry run (EXPLAIN shows what they would do).
    fn dry_run(_: &SnapshotProcedure) -> bool {
        false
    }

    async fn plan(
        target: &MaintenanceTarget,
        call: &SnapshotProcedure,
        intent: Intent,
    ) -> Result<SnapshotPlan> {
        let context = format!("{} on {}", call.procedure_name(), target.table_name);
        call.validate().map_err(|e| e.context(&context))?;
        if intent != Intent::Explain {
            return Ok(SnapshotPlan::AtCommit);
        }
        let outcome = run_procedure(target, call, true)
            .await
            .map_err(|e| contextual(e, &context))?;
        Ok(SnapshotPlan::Decided(outcome.explain.unwrap_or_default()))
    }

    fn explain(plan: SnapshotPlan) -> SnapshotOutcome {
        plan.explain()
    }

    fn count(_: SnapshotPlan) -> SnapshotOutcome {
        SnapshotOutcome::default()
    }

    async fn execute(
        target: &MaintenanceTarget,
        call: &SnapshotProcedure,
        _: SnapshotPlan,
    ) -> Result<SnapshotOutcome> {
        let context = format!("{} on {}", call.procedure_name(), target.table_name);
        run_procedure(target, call, false)
            .await
            .map_err(|e| contextual(e, &context))
    }
}

impl MaintenanceProcedure for ChangeTable {
    type Options = TableChange;
    type Plan = SnapshotPlan;
    type Outcome = SnapshotOutcome;
    const PHASES: &'static [Phase] = &[];

    fn name(change: &TableChange) -> String {
        change.statement_name()
    }

    /// The ref and property statements have no dry run.
    fn dry_run(_: &TableChange) -> bool {
        false
    }

    async fn plan(
        target: &MaintenanceTarget,
        change: &TableChange,
        intent: Intent,
    ) -> Result<SnapshotPlan> {
        let context = format!("{} on {}", change.statement_name(), target.table_name);
        change.validate().map_err(|e| e.context(&context))?;
        if intent != Intent::Explain {
            return Ok(SnapshotPlan::AtCommit);
        }
        let decided = async {
            let located = target.locate_newest(&change.statement_name()).await?;
            decide_change(&located.metadata, change, target.now_ms)
        };
        let decided = decided.await.map_err(|e| contextual(e, &context))?;
        Ok(SnapshotPlan::Decided(decided.rows))
    }

    fn explain(plan: SnapshotPlan) -> SnapshotOutcome {
        plan.explain()
    }

    fn count(_: SnapshotPlan) -> SnapshotOutcome {
        SnapshotOutcome::default()
    }

    async fn execute(
        target: &MaintenanceTarget,
        change: &TableChange,
        _: SnapshotPlan,
    ) -> Result<SnapshotOutcome> {
        execute_change(target, change).await
    }
}

/// Run a DDL statement on `target`. A retry after a concurrent commit first asks
/// [`change_may_commit`] whether the statement still holds on the new head, then decides it there
/// ([`change_on_new_head`]).
async fn execute_change(
    target: &MaintenanceTarget,
    change: &TableChange,
) -> Result<SnapshotOutcome> {
    let statement = change.statement_name();
    let context = format!("{statement} on {}", target.table_name);
    let mut planned: Option<PlannedFrom> = None;
    let decide = |md: &TableMetadata| match &planned {
        None => {
            let decided = decide_change(md, change, target.now_ms)?;
            planned = Some(PlannedFrom::of(md));
            Ok(decided)
        }
        Some(from) => {
            change_may_commit(change, from, md).map_err(|e| e.context(&context))?;
            decide_change(md, &change_on_new_head(change), target.now_ms)
        }
    };
    let (_, outcome) = run_edit(target, &statement, decide)
        .await
        .map_err(|e| contextual(e, &context))?;
    Ok(outcome)
}

/// Errors of the decision get the statement and table in front; others already name them.
fn contextual(error: Error, context: &str) -> Error {
    let decided = matches!(
        error.kind(),
        ErrorKind::BadArguments | ErrorKind::NotImplemented
    );
    if decided && !error.message().contains(context) {
        error.context(context)
    } else {
        error
    }
}

/// Locate, decide with `decide`, commit; the last decision's ids come back.
async fn run_edit<F>(
    target: &MaintenanceTarget,
    statement: &str,
    mut decide: F,
) -> Result<(Change, SnapshotOutcome)>
where
    F: FnMut(&TableMetadata) -> Result<Change>,
{
    let mut last: Option<Change> = None;
    let committed = target
        .commit_edit(statement, |md| {
            // A new attempt (after a conflict) may be cancelled again until it writes.
            target.progress.writes_abandoned();
            let change = decide(md)?;
            let metadata = change.metadata.clone();
            last = Some(change);
            if metadata.is_some() {
                // The point of no return: a cancel from here on lets the commit finish.
                target.progress.begin_writes()?;
            }
            Ok(metadata)
        })
        .await?;
    let change = last.ok_or_else(|| Error::logical(format!("{statement}: no decision made")))?;
    let outcome = SnapshotOutcome {
        committed_path: committed.map(|c| c.path),
        ..Default::default()
    };
    Ok((change, outcome))
}

/// Run a snapshot-management procedure on `target` through the commit loop (with `explain`,
/// decide on the newest metadata and stop there).
async fn run_procedure(
    target: &MaintenanceTarget,
    call: &SnapshotProcedure,
    explain: bool,
) -> Result<SnapshotOutcome> {
    let mut procedure = SnapshotCall {
        target,
        call,
        explain,
        planned: None,
        metrics: SnapshotMetrics::default(),
    };
    let max_attempts = target.settings.commit_max_attempts();
    protocol::run(target, &mut procedure, max_attempts, None).await
}

/// A snapshot-management procedure's side of the commit loop.
struct SnapshotCall<'a> {
    target: &'a MaintenanceTarget,
    call: &'a SnapshotProcedure,
    explain: bool,
    /// What the first attempt planned from and resolved.
    planned: Option<(PlannedFrom, Pinned)>,
    /// The metrics of the attempt being committed.
    metrics: SnapshotMetrics,
}

impl Procedure for SnapshotCall<'_> {
    type Output = SnapshotOutcome;

    fn name(&self) -> &str {
        self.call.procedure_name()
    }

    fn plans_only_on_writable(&self) -> bool {
        !self.explain
    }

    async fn step(
        &mut self,
        _attempt: u32,
        located: &LocatedMetadata,
    ) -> Result<Step<SnapshotOutcome>> {
        let (target, call, explain) = (self.target, self.call, self.explain);
        let name = call.procedure_name();
        let metadata = &located.metadata;
        let pinned = match &self.planned {
            None => {
                let pinned = pin_procedure(metadata, call)?;
                self.planned = Some((PlannedFrom::of(metadata), pinned.clone()));
                pinned
            }
            Some((from, pinned)) => {
                // Another writer committed since the plan: may the statement still commit here?
                procedure_may_commit(pinned, from, metadata)
                    .map_err(|e| e.context(format!("{name} on {}", target.table_name)))?;
                pinned.clone()
            }
        };
        let decision = decide_pinned(metadata, &pinned, target.now_ms)?;
        let (new_metadata, rows, metrics, written) = match decision {
            Decision::Edit(change) => (
                change.metadata,
                change.rows,
                SnapshotMetrics {
                    previous_snapshot_id: change.previous_snapshot_id,
                    current_snapshot_id: change.current_snapshot_id,
                },
                Vec::new(),
            ),
            Decision::Reapply(reapply) => {
                let changes = picked_changes(target, metadata, &reapply).await?;
                let rows = vec![reapply_row(metadata, &reapply, &changes)];
                if explain {
                    (None, rows, SnapshotMetrics::default(), Vec::new())
                } else {
                    let prepared = write_snapshot(target, metadata, &reapply, changes).await?;
                    let metrics = SnapshotMetrics {
                        previous_snapshot_id: metadata.current_snapshot_id(),
                        current_snapshot_id: Some(prepared.snapshot.snapshot_id),
                    };
                    (Some(prepared.metadata), rows, metrics, prepared.written)
                }
            }
        };
        if explain {
            return Ok(Step::Done(SnapshotOutcome {
                explain: Some(explain_rows(rows)),
                ..Default::default()
            }));
        }
        let Some(new_metadata) = new_metadata else {
            return Ok(Step::Done(SnapshotOutcome {
                metrics: Some(metrics),
                ..Default::default()
            }));
        };
        if let Err(cancelled) = target.progress.begin_writes() {
            target.io.delete_many(&written).await;
            return Err(cancelled);
        }
        self.metrics = metrics;
        // On a conflict the loop deletes our manifests: never referenced by a committed file.
        Ok(Step::Commit(Box::new(Attempt {
            metadata: new_metadata,
            written,
            options: target.commit_options(),
        })))
    }

    async fn committed(
        &mut self,
        _base: &LocatedMetadata,
        done: Committed,
    ) -> Result<SnapshotOutcome> {
        Ok(SnapshotOutcome {
            metrics: Some(self.metrics),
            committed_path: Some(done.path),
            ..Default::default()
        })
    }

    async fn conflicted(&mut self, _kept: Vec<String>) {
        self.target.progress.writes_abandoned();
    }

    // After an unconfirmed or unknown outcome the files we wrote stay (orphans at worst).
}
