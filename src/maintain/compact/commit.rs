//! The commit of a compaction: one `replace` snapshot of the rewritten groups through the commit
//! protocol's one loop ([`protocol::run`]), every attempt after the first judged against the start
//! ([`super::conflicts`]: the history, the format version, the default spec, then each group).
//!
//! What this statement wrote and no commit references is deleted as soon as that is certain:
//! the outputs of a group refused on a moved base, the manifests and manifest list of an attempt
//! that conflicted (the catalog refused it or another writer took the version: never committed),
//! and, when every attempt conflicted, all the outputs. After an unconfirmed or unknown outcome
//! nothing is deleted (the commit may stand). A group that fails while writing cleans up after
//! itself (`group.rs`); a kill leaves orphans at worst.

use std::collections::{HashMap, HashSet};

use super::PROCEDURE;
use super::conflicts::{LiveSet, TableFacts, base_refusal, group_conflict};
use super::deletes::droppable;
use super::metrics::CompactMetrics;
use super::model::LiveFile;
use super::plan::Group;
use super::read::{TableState, read_state};
use crate::error::Result;
use crate::iceberg::commit::protocol::{self, Attempt, Procedure, Step};
use crate::iceberg::commit::{CommitOptions, Committed};
use crate::iceberg::locate::LocatedMetadata;
use crate::iceberg::manifest::DataFile;
use crate::iceberg::metadata::TableMetadata;
use crate::iceberg::spec::{FormatVersion, Snapshot};
use crate::iceberg::txn::{FileChanges, Operation, PrepareOptions, Summary, prepare_commit_with};
use crate::maintain::compact::CompactOutcome;
use crate::maintain::target::MaintenanceTarget;

/// One group rewritten: its output files (already written) and what its deletes named.
pub(super) struct Rewritten {
    pub group: usize,
    pub outputs: Vec<DataFile>,
    pub mentions: HashMap<String, HashSet<String>>,
}

/// The facts [`base_refusal`] compares.
pub(super) fn table_facts(md: &TableMetadata) -> TableFacts {
    TableFacts {
        format_version: md.format_version(),
        default_spec_id: md.default_spec_id(),
    }
}

/// The delete files a compaction that rewrote `rewritten` may drop from `state`.
pub(super) fn removable_deletes(
    state: &TableState,
    rewritten: &[&LiveFile],
    mentions: &HashMap<String, HashSet<String>>,
) -> Vec<String> {
    let gone: HashSet<&str> = rewritten.iter().map(|f| f.path()).collect();
    let remaining: Vec<&LiveFile> = state
        .data
        .iter()
        .filter(|f| !gone.contains(f.path()))
        .collect();
    droppable(&state.deletes, rewritten, &remaining, mentions)
}

/// What the loop carries from attempt to attempt.
struct Attempts<'a> {
    target: &'a MaintenanceTarget,
    groups: &'a [Group],
    start_state: &'a TableState,
    failed_files: i64,
    warnings: Vec<String>,
}

impl Attempts<'_> {
    /// `r` is not committed because of `why`: counted, named in a warning, its outputs deleted.
    async fn refuse(&mut self, r: Rewritten, why: &str) {
        let g = &self.groups[r.group];
        self.failed_files += g.inputs.len() as i64;
        let paths: Vec<String> = r.outputs.iter().map(|f| f.file_path.clone()).collect();
        let kept = delete_uncommitted(self.target, &paths).await;
        let fate = if kept.is_empty() {
            "its new files were deleted (never committed)".to_string()
        } else {
            format!(
                "its new files were deleted (never committed) except {}, left for \
                 remove_orphan_files",
                kept.join("; ")
            )
        };
        self.warnings.push(format!(
            "{}: file group in partition '{}' ({} data files) was not committed: {why}; {fate}",
            self.target.table_name,
            g.partition,
            g.inputs.len()
        ));
    }

    fn inputs_of(&self, r: &Rewritten) -> Vec<&LiveFile> {
        self.groups[r.group]
            .inputs
            .iter()
            .map(|i| &self.start_state.data[*i])
            .collect()
    }
}

/// No group left to commit: only the failed files counted.
fn nothing_committed(failed_files: i64, warnings: Vec<String>) -> CompactOutcome {
    CompactOutcome {
        metrics: CompactMetrics {
            failed_data_files_count: failed_files,
            ..Default::default()
        },
        explain: None,
        warnings,
    }
}

/// Commits the rewritten groups on the newest metadata through the one loop
/// ([`protocol::run`]), re-judging them on every attempt after the first against the starting
/// snapshot `snapshot` of `start` (see the module comment).
pub(super) async fn commit_loop(
    target: &MaintenanceTarget,
    start: &LocatedMetadata,
    snapshot: &Snapshot,
    start_state: &TableState,
    groups: &[Group],
    rewritten: Vec<Rewritten>,
    warnings: Vec<String>,
) -> Result<CompactOutcome> {
    let mut compaction = Compaction {
        run: Attempts {
            target,
            groups,
            start_state,
            failed_files: 0,
            warnings,
        },
        snapshot,
        start_facts: table_facts(&start.metadata),
        start_set: LiveSet::new(&start_state.data, &start_state.deletes),
        data_sequence_number: (start.metadata.format_version() >= FormatVersion::V2)
            .then_some(snapshot.sequence_number),
        rewritten,
        metrics: CompactMetrics::default(),
    };
    let max_attempts = target.settings.commit_max_attempts();
    protocol::run(target, &mut compaction, max_attempts, Some(start.clone())).await
}

/// Compaction's side of the commit loop.
struct Compaction<'a> {
    run: Attempts<'a>,
    snapshot: &'a Snapshot,
    start_facts: TableFacts,
    start_set: LiveSet<'a>,
    data_sequence_number: Option<i64>,
    /// The groups still to commit.
    rewritten: Vec<Rewritten>,
    /// The metrics of the attempt being committed.
    metrics: CompactMetrics,
}

impl Compaction<'_> {
    /// Refuses the groups the moved base `md` no longer allows (attempts after the first), and
    /// returns the newest state the rest commit on.
    async fn judge(&mut self, attempt: u32, md: &TableMetadata) -> Result<TableState> {
        let target = self.run.target;
        let snapshot_id = self.snapshot.snapshot_id;
        let head = md.current_snapshot_id();
        if attempt > 0 {
            let history = md.ancestry(snapshot_id, head);
            if let Some(why) = base_refusal(snapshot_id, history, self.start_facts, table_facts(md))
            {
                for r in std::mem::take(&mut self.rewritten) {
                    self.run.refuse(r, &why).await;
                }
            }
        }
        let now_state = match md.current_snapshot() {
            Some(s) if s.snapshot_id == snapshot_id => self.run.start_state.clone(),
            Some(s) if !self.rewritten.is_empty() => {
                read_state(
                    &target.io,
                    md,
                    s,
                    target.settings.metadata_read_concurrency(),
                )
                .await?
            }
            _ => TableState::default(),
        };
        if head != Some(snapshot_id) && !self.rewritten.is_empty() {
            let now_set = LiveSet::new(&now_state.data, &now_state.deletes);
            let mut kept = Vec::new();
            for r in std::mem::take(&mut self.rewritten) {
                match group_conflict(&self.run.inputs_of(&r), &self.start_set, &now_set) {
                    None => kept.push(r),
                    Some(why) => self.run.refuse(r, &why).await,
                }
            }
            self.rewritten = kept;
        }
        Ok(now_state)
    }
}

impl Procedure for Compaction<'_> {
    type Output = CompactOutcome;

    fn name(&self) -> &str {
        PROCEDURE
    }

    async fn step(&mut self, attempt: u32, base: &LocatedMetadata) -> Result<Step<CompactOutcome>> {
        let target = self.run.target;
        let md = &base.metadata;
        let now_state = self.judge(attempt, md).await?;
        if self.rewritten.is_empty() {
            let warnings = std::mem::take(&mut self.run.warnings);
            return Ok(Step::Done(nothing_committed(
                self.run.failed_files,
                warnings,
            )));
        }
        let (changes, metrics) = changes_of(&self.run, &self.rewritten, &now_state);
        let parent_ts = md.current_snapshot().map_or(0, |s| s.timestamp_ms);
        let options = PrepareOptions {
            timestamp_ms: Some(target.now_ms.max(parent_ts)),
            data_sequence_number: self.data_sequence_number,
            ..PrepareOptions::default()
        };
        target.progress.check()?;
        let prepared = prepare_commit_with(
            &target.io,
            md,
            Operation::Replace,
            changes,
            Summary::new(),
            &options,
        )
        .await?;
        target.progress.begin_writes()?;
        self.metrics = CompactMetrics {
            failed_data_files_count: self.run.failed_files,
            ..metrics
        };
        Ok(Step::Commit(Box::new(Attempt {
            metadata: prepared.metadata,
            written: prepared.written,
            options: CommitOptions {
                update_metadata_log: true,
                now_ms: Some(target.now_ms.max(parent_ts)),
            },
        })))
    }

    async fn committed(
        &mut self,
        _base: &LocatedMetadata,
        _done: Committed,
    ) -> Result<CompactOutcome> {
        Ok(CompactOutcome {
            metrics: self.metrics,
            explain: None,
            warnings: std::mem::take(&mut self.run.warnings),
        })
    }

    async fn conflicted(&mut self, kept: Vec<String>) {
        // Refused or superseded: this attempt's manifests and list are referenced by nothing,
        // now or later (the loop deleted them).
        self.run.target.progress.writes_abandoned();
        if !kept.is_empty() {
            self.run.warnings.push(format!(
                "{}: files of a commit attempt that conflicted are left for \
                 remove_orphan_files: {}",
                self.run.target.table_name,
                kept.join("; ")
            ));
        }
    }

    // After an unconfirmed or unknown outcome the new files stay: the commit may stand.

    async fn exhausted(&mut self) -> Option<String> {
        // Every attempt conflicted: none of the outputs was ever committed.
        let outputs: Vec<String> = self
            .rewritten
            .iter()
            .flat_map(|r| r.outputs.iter().map(|f| f.file_path.clone()))
            .collect();
        let kept = delete_uncommitted(self.run.target, &outputs).await;
        Some(if kept.is_empty() {
            "the new data files were deleted (never committed)".to_string()
        } else {
            format!(
                "the new data files were deleted (never committed) except {}, left for \
                 remove_orphan_files",
                kept.join("; ")
            )
        })
    }
}

/// The file changes and metrics of committing `rewritten` on `now_state`.
fn changes_of(
    run: &Attempts,
    rewritten: &[Rewritten],
    now_state: &TableState,
) -> (FileChanges, CompactMetrics) {
    let inputs: Vec<&LiveFile> = rewritten.iter().flat_map(|r| run.inputs_of(r)).collect();
    let mut mentions: HashMap<String, HashSet<String>> = HashMap::new();
    for r in rewritten {
        for (k, v) in &r.mentions {
            mentions
                .entry(k.clone())
                .or_default()
                .extend(v.iter().cloned());
        }
    }
    // Deletes are judged on the newest state: a data file added meanwhile may need one.
    let inputs_now: Vec<&LiveFile> = {
        let wanted: HashSet<&str> = inputs.iter().map(|f| f.path()).collect();
        now_state
            .data
            .iter()
            .filter(|f| wanted.contains(f.path()))
            .collect()
    };
    let removed_deletes = removable_deletes(now_state, &inputs_now, &mentions);
    let added: Vec<DataFile> = rewritten
        .iter()
        .flat_map(|r| r.outputs.iter().cloned())
        .collect();
    let metrics = CompactMetrics {
        rewritten_data_files_count: inputs.len() as i64,
        added_data_files_count: added.len() as i64,
        rewritten_bytes_count: inputs.iter().map(|f| f.file.file_size_in_bytes).sum(),
        added_bytes_count: added.iter().map(|f| f.file_size_in_bytes).sum(),
        removed_delete_files_count: removed_deletes.len() as i64,
        rewritten_file_groups_count: rewritten.len() as i64,
        failed_data_files_count: 0,
        dry_run: false,
    };
    let mut removed: Vec<String> = inputs.iter().map(|f| f.path().to_string()).collect();
    removed.extend(removed_deletes);
    let changes = FileChanges {
        added_data: added,
        added_deletes: Vec::new(),
        removed,
    };
    (changes, metrics)
}

/// Deletes `paths`, files this statement wrote that no commit references (never one outside the
/// table location). Returns those not deleted, each with the reason.
pub(super) async fn delete_uncommitted(
    target: &MaintenanceTarget,
    paths: &[String],
) -> Vec<String> {
    target.delete_uncommitted(paths).await
}
