//! The executor of snapshot management: locate, decide, commit (see the module comment of
//! [`super`]). Reads and commits only through [`MaintenanceTarget`].

use std::collections::HashSet;

use futures::{StreamExt, TryStreamExt};

use super::cherrypick::{PartitionKey, Reapply, check_replaced_partitions};
use super::explain::{SnapshotExplainRow, nothing_row};
use super::moved_base::{
    Pinned, PlannedFrom, change_may_commit, change_on_new_head, pin_procedure, procedure_may_commit,
};
use super::{Change, Decision, SnapshotMetrics, decide_change, decide_pinned};
use crate::error::{Error, ErrorKind, Result};
use crate::iceberg::commit::Committed;
use crate::iceberg::commit::protocol::{self, Attempt, Procedure, Step};
use crate::iceberg::locate::LocatedMetadata;
use crate::iceberg::manifest::{DataFile, inherit, read_manifest};
use crate::iceberg::manifest_list::read_manifest_list;
use crate::iceberg::metadata::TableMetadata;
use crate::iceberg::spec::{EntryStatus, ManifestContent, Snapshot, SnapshotId};
use crate::iceberg::txn::{FileChanges, Operation, PrepareOptions, Target, prepare_commit_with};
use crate::io::FileIO;
use crate::maintain::report::{Metrics, Report, ReportBody, Reported};
use crate::maintain::shape::{Intent, MaintenanceProcedure};
use crate::maintain::target::MaintenanceTarget;
use crate::plan::{SnapshotProcedure, TableChange};
use crate::progress::Phase;

/// Manifests read at once.
const READ_CONCURRENCY: usize = 16;

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

/// The files a cherry-pick re-applies.
struct Picked {
    added: Vec<DataFile>,
    removed: Vec<String>,
}

fn reapply_row(metadata: &TableMetadata, reapply: &Reapply, picked: &Picked) -> SnapshotExplainRow {
    let summary: Vec<String> = reapply
        .summary
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    SnapshotExplainRow {
        kind: "snapshot".into(),
        name: "main".into(),
        before: metadata
            .current_snapshot_id()
            .map(|id| format!("branch {id}")),
        after: Some(format!("new {} snapshot", reapply.operation)),
        detail: format!(
            "{}; adds {} data file(s), removes {}",
            summary.join(", "),
            picked.added.len(),
            picked.removed.len()
        ),
    }
}

/// The files the picked snapshot added and removed (its own manifests' ADDED and DELETED
/// entries), checked: data files only, of the default spec; for a dynamic overwrite, no file
/// added since its parent in a partition it replaces.
async fn picked_changes(
    target: &MaintenanceTarget,
    metadata: &TableMetadata,
    reapply: &Reapply,
) -> Result<Picked> {
    let picked = metadata
        .snapshot(reapply.source)
        .ok_or_else(|| Error::logical("cherry-pick: the picked snapshot vanished"))?;
    let own = own_entries(&target.io, picked).await?;
    let default_spec = metadata.default_spec_id();
    let mut added = Vec::new();
    let mut replaced: Vec<PartitionKey> = Vec::new();
    for (spec_id, content, status, file) in own {
        if status != EntryStatus::Added {
            continue;
        }
        if content == ManifestContent::Deletes {
            return Err(Error::not_implemented(format!(
                "Cannot cherry-pick snapshot {}: it adds delete files ({}), which icetrim does \
                 not re-apply",
                reapply.source, file.file_path
            )));
        }
        if spec_id != default_spec {
            return Err(Error::not_implemented(format!(
                "Cannot cherry-pick snapshot {}: file {} is of partition spec {spec_id}, not the \
                 table's default spec {default_spec}",
                reapply.source, file.file_path
            )));
        }
        replaced.push((spec_id, format!("{:?}", file.partition)));
        let mut file = file;
        file.first_row_id = None;
        added.push(file);
    }
    let mut removed = Vec::new();
    if reapply.replace_partitions {
        removed = removed_data_files(&target.io, metadata, picked).await?;
    }
    if reapply.replace_partitions {
        let mut since = Vec::new();
        for id in &reapply.check_since {
            if let Some(s) = metadata.snapshot(*id) {
                for (spec_id, content, status, file) in own_entries(&target.io, s).await? {
                    if content == ManifestContent::Data && status == EntryStatus::Added {
                        since.push((spec_id, format!("{:?}", file.partition)));
                    }
                }
            }
        }
        check_replaced_partitions(&replaced, &since)?;
    }
    if added.is_empty() && removed.is_empty() {
        return Err(Error::bad_arguments(format!(
            "Cannot cherry-pick snapshot {}: it changes no data file",
            reapply.source
        )));
    }
    Ok(Picked { added, removed })
}

/// The data files live in the picked snapshot's parent and not in the snapshot: what it removed.
/// Computed from the two snapshots' live files rather than from the snapshot's DELETED entries,
/// which a writer may not keep (a rewritten manifest with nothing live left is dropped from the
/// list by `iceberg::txn::prepare`).
async fn removed_data_files(
    io: &FileIO,
    metadata: &TableMetadata,
    picked: &Snapshot,
) -> Result<Vec<String>> {
    let Some(parent) = picked
        .parent_snapshot_id
        .and_then(|id| metadata.snapshot(id))
    else {
        return Ok(Vec::new());
    };
    let before = live_data_paths(io, parent).await?;
    let after: HashSet<String> = live_data_paths(io, picked).await?.into_iter().collect();
    Ok(before.into_iter().filter(|p| !after.contains(p)).collect())
}

/// The paths of a snapshot's live data files, in manifest order, each once.
async fn live_data_paths(io: &FileIO, snapshot: &Snapshot) -> Result<Vec<String>> {
    let list = manifest_list(io, snapshot).await?;
    let data: Vec<_> = list
        .into_iter()
        .filter(|m| m.content == ManifestContent::Data)
        .collect();
    let read = futures::stream::iter(data.into_iter().map(|m| async move {
        let bytes = io.read_immutable(&m.manifest_path, m.length()).await?;
        read_manifest(&bytes, &m.manifest_path).map(|manifest| manifest.entries)
    }))
    .buffered(READ_CONCURRENCY)
    .try_collect::<Vec<_>>()
    .await?;
    let mut seen = HashSet::new();
    Ok(read
        .into_iter()
        .flatten()
        .filter(|e| e.status != EntryStatus::Deleted)
        .map(|e| e.data_file.file_path)
        .filter(|p| seen.insert(p.clone()))
        .collect())
}

async fn manifest_list(
    io: &FileIO,
    snapshot: &Snapshot,
) -> Result<Vec<crate::iceberg::manifest_list::ManifestFile>> {
    let Some(list_path) = &snapshot.manifest_list else {
        return Err(Error::not_implemented(format!(
            "Snapshot {} lists its manifests inline (v1 without a manifest list); cherry-picking \
             it is not supported",
            snapshot.snapshot_id
        )));
    };
    let bytes = io.read_immutable(list_path, None).await?;
    read_manifest_list(&bytes, list_path)
}

/// The entries a snapshot wrote itself: `(spec id, manifest content, status, file)` of the
/// ADDED and DELETED entries carrying its id, in the manifests it added (Java's
/// `addedDataFiles`).
async fn own_entries(
    io: &FileIO,
    snapshot: &Snapshot,
) -> Result<Vec<(i32, ManifestContent, EntryStatus, DataFile)>> {
    let list = manifest_list(io, snapshot).await?;
    let id: SnapshotId = snapshot.snapshot_id;
    let own: Vec<_> = list
        .into_iter()
        .filter(|m| m.added_snapshot_id == id)
        .collect();
    let read = futures::stream::iter(own.into_iter().map(|m| async move {
        let bytes = io.read_immutable(&m.manifest_path, m.length()).await?;
        let mut manifest = read_manifest(&bytes, &m.manifest_path)?;
        inherit(&mut manifest.entries, &m);
        Ok::<_, Error>((m, manifest.entries))
    }))
    .buffered(READ_CONCURRENCY)
    .try_collect::<Vec<_>>()
    .await?;
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for (m, entries) in read {
        for e in entries {
            let mine = e.snapshot_id == Some(id);
            let counted = matches!(e.status, EntryStatus::Added | EntryStatus::Deleted);
            if mine && counted && seen.insert((e.status as u8, e.data_file.file_path.clone())) {
                out.push((m.partition_spec_id, m.content, e.status, e.data_file));
            }
        }
    }
    Ok(out)
}

async fn write_snapshot(
    target: &MaintenanceTarget,
    metadata: &TableMetadata,
    reapply: &Reapply,
    picked: Picked,
) -> Result<crate::iceberg::txn::PreparedCommit> {
    let operation = if reapply.operation == "append" {
        Operation::Append
    } else {
        Operation::Overwrite
    };
    let changes = FileChanges {
        added_data: picked.added,
        added_deletes: Vec::new(),
        removed: picked.removed,
    };
    let options = PrepareOptions {
        target: Target::Main,
        snapshot_id: None,
        timestamp_ms: Some(target.now_ms),
        ..PrepareOptions::default()
    };
    prepare_commit_with(
        &target.io,
        metadata,
        operation,
        changes,
        reapply.summary.clone(),
        &options,
    )
    .await
}
