//! The commit of a compaction: one `replace` snapshot of the rewritten groups through
//! [`MaintenanceTarget::commit`], every attempt after the first judged against the start
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
use crate::error::{Error, ErrorKind, Result};
use crate::iceberg::commit::{CommitOptions, CommitOutcome, unconfirmed_error};
use crate::iceberg::locate::LocatedMetadata;
use crate::iceberg::manifest::DataFile;
use crate::iceberg::metadata::TableMetadata;
use crate::iceberg::spec::{FormatVersion, Snapshot};
use crate::iceberg::txn::{FileChanges, Operation, PrepareOptions, Summary, prepare_commit_with};
use crate::io::is_under;
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

    fn nothing_committed(self) -> CompactOutcome {
        CompactOutcome {
            metrics: CompactMetrics {
                failed_data_files_count: self.failed_files,
                ..Default::default()
            },
            explain: None,
            warnings: self.warnings,
        }
    }
}

/// Commits the rewritten groups on the newest metadata, re-judging them on every attempt after
/// the first against the starting snapshot `snapshot` of `start` (see the module comment).
pub(super) async fn commit_loop(
    target: &MaintenanceTarget,
    start: &LocatedMetadata,
    snapshot: &Snapshot,
    start_state: &TableState,
    groups: &[Group],
    mut rewritten: Vec<Rewritten>,
    warnings: Vec<String>,
) -> Result<CompactOutcome> {
    let max_attempts = target.settings.commit_max_attempts();
    let start_facts = table_facts(&start.metadata);
    let start_set = LiveSet::new(&start_state.data, &start_state.deletes);
    let mut run = Attempts {
        target,
        groups,
        start_state,
        failed_files: 0,
        warnings,
    };
    let mut last_conflict = String::new();
    let data_sequence_number =
        (start.metadata.format_version() >= FormatVersion::V2).then_some(snapshot.sequence_number);
    for attempt in 0..max_attempts {
        let located = if attempt == 0 {
            start.clone()
        } else {
            target.locate_newest(PROCEDURE).await?
        };
        located.check_writable()?;
        let md = &located.metadata;
        let head = md.current_snapshot_id();
        if attempt > 0 {
            let history = md.ancestry(snapshot.snapshot_id, head);
            if let Some(why) =
                base_refusal(snapshot.snapshot_id, history, start_facts, table_facts(md))
            {
                for r in std::mem::take(&mut rewritten) {
                    run.refuse(r, &why).await;
                }
            }
        }
        let now_state = match md.current_snapshot() {
            Some(s) if s.snapshot_id == snapshot.snapshot_id => start_state.clone(),
            Some(s) if !rewritten.is_empty() => {
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
        if head != Some(snapshot.snapshot_id) && !rewritten.is_empty() {
            let now_set = LiveSet::new(&now_state.data, &now_state.deletes);
            let mut kept = Vec::new();
            for r in std::mem::take(&mut rewritten) {
                match group_conflict(&run.inputs_of(&r), &start_set, &now_set) {
                    None => kept.push(r),
                    Some(why) => run.refuse(r, &why).await,
                }
            }
            rewritten = kept;
        }
        if rewritten.is_empty() {
            return Ok(run.nothing_committed());
        }
        let (changes, metrics) = changes_of(&run, &rewritten, &now_state);
        let parent_ts = md.current_snapshot().map_or(0, |s| s.timestamp_ms);
        let options = PrepareOptions {
            timestamp_ms: Some(target.now_ms.max(parent_ts)),
            data_sequence_number,
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
        let commit_options = CommitOptions {
            update_metadata_log: true,
            now_ms: Some(target.now_ms.max(parent_ts)),
        };
        let metrics = CompactMetrics {
            failed_data_files_count: run.failed_files,
            ..metrics
        };
        match target
            .commit(&located, prepared.metadata, &commit_options)
            .await?
        {
            CommitOutcome::Committed(_) => {
                return Ok(CompactOutcome {
                    metrics,
                    explain: None,
                    warnings: run.warnings,
                });
            }
            CommitOutcome::Conflict { path } => {
                // Refused or superseded: this attempt's manifests and list are referenced by
                // nothing, now or later.
                target.progress.writes_abandoned();
                let kept = delete_uncommitted(target, &prepared.written).await;
                if !kept.is_empty() {
                    run.warnings.push(format!(
                        "{}: files of a commit attempt that conflicted are left for \
                         remove_orphan_files: {}",
                        target.table_name,
                        kept.join("; ")
                    ));
                }
                last_conflict = path;
            }
            CommitOutcome::Unconfirmed { path, rival, why } => {
                return Err(unconfirmed_error(&target.location, &path, &rival, &why));
            }
            CommitOutcome::Unknown { why } => {
                // The catalog may hold our commit: the new files stay (orphans at worst).
                return Err(Error::new(ErrorKind::NetworkError, why));
            }
        }
    }
    // Every attempt conflicted: none of the outputs was ever committed.
    let outputs: Vec<String> = rewritten
        .iter()
        .flat_map(|r| r.outputs.iter().map(|f| f.file_path.clone()))
        .collect();
    let kept = delete_uncommitted(target, &outputs).await;
    let fate = if kept.is_empty() {
        "the new data files were deleted (never committed)".to_string()
    } else {
        format!(
            "the new data files were deleted (never committed) except {}, left for \
             remove_orphan_files",
            kept.join("; ")
        )
    };
    Err(Error::new(
        ErrorKind::LimitExceeded,
        format!(
            "{PROCEDURE} on {}: {max_attempts} commit attempt(s) conflicted with concurrent \
             writers (last taken name: {last_conflict}); {fate}",
            target.table_name
        ),
    ))
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
    let (inside, outside): (Vec<String>, Vec<String>) = paths
        .iter()
        .cloned()
        .partition(|p| is_under(&target.location, p));
    let mut kept: Vec<String> = outside
        .into_iter()
        .map(|p| format!("'{p}' (outside the table location)"))
        .collect();
    for outcome in target.io.delete_many(&inside).await {
        if let Err(e) = outcome.result {
            kept.push(format!("'{}' ({})", outcome.uri, e.message()));
        }
    }
    kept
}
