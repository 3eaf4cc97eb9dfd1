//! The executor of `rewrite_manifests` (and `OPTIMIZE TABLE t MANIFEST`): read the current
//! snapshot's manifest list and the manifests to rewrite, decide ([`super::decide`]), write the
//! new manifests and a manifest list, commit a `replace` snapshot through the commit protocol's
//! one loop ([`protocol::run`]), and on a conflict apply Java's `BaseRewriteManifests` rule.

use std::collections::{BTreeSet, HashSet};

use futures::{StreamExt, TryStreamExt};

use super::decide::{ManifestVerdict, Selection, select, target_size};
use super::explain::{PlannedManifest, RewriteManifestsExplainRow, explain_rows};
use super::metrics::RewriteManifestsMetrics;
use super::reuse::{PlannedFrom, Reuse, reuse};
use super::write::{new_snapshot, regroup, write_outputs};
use crate::error::{Error, Result};
use crate::iceberg::avro::Codec;
use crate::iceberg::commit::Committed;
use crate::iceberg::commit::protocol::{self, Attempt, Procedure, Step};
use crate::iceberg::locate::LocatedMetadata;
use crate::iceberg::manifest::{Manifest, inherit, read_manifest};
use crate::iceberg::manifest_list::{ManifestFile, read_manifest_list};
use crate::iceberg::spec::Snapshot;
use crate::io::FileIO;
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

/// Run `rewrite_manifests` on `target`; with `explain`, return the plan and change nothing.
pub async fn execute(
    target: &MaintenanceTarget,
    options: &RewriteManifestsOptions,
    explain: bool,
) -> Result<RewriteManifestsOutcome> {
    options.validate()?;
    let mut rewrite = Rewrite {
        target,
        options,
        explain,
        carried: None,
        attempt: None,
        warnings: Vec::new(),
    };
    let max_attempts = target.settings.commit_max_attempts();
    protocol::run(target, &mut rewrite, max_attempts, None).await
}

/// The rewrite's side of the commit loop.
struct Rewrite<'a> {
    target: &'a MaintenanceTarget,
    options: &'a RewriteManifestsOptions,
    explain: bool,
    /// Manifests written before a conflict, which may serve the next attempt.
    carried: Option<Written>,
    /// The manifests and snapshot id of the attempt being committed.
    attempt: Option<(Written, i64)>,
    warnings: Vec<String>,
}

impl Rewrite<'_> {
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
        let (target, options, explain) = (self.target, self.options, self.explain);
        let metadata = &located.metadata;
        let Some(current) = metadata.current_snapshot() else {
            if let Some(w) = self.carried.take() {
                let why = "the table has no current snapshot any more";
                self.warnings
                    .push(drop_written(target, &w, why, None).await);
            }
            return Ok(self.done(noop(options)));
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
                match plan(target, located, &list, options, explain).await? {
                    Planned::Done(outcome) => return Ok(self.done(outcome)),
                    Planned::Write(w) => w,
                }
            }
            _ => match plan(target, located, &list, options, explain).await? {
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

fn noop(options: &RewriteManifestsOptions) -> RewriteManifestsOutcome {
    RewriteManifestsOutcome {
        metrics: RewriteManifestsMetrics {
            dry_run: options.dry_run,
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

async fn read_list(io: &FileIO, snapshot: &Snapshot) -> Result<Vec<ManifestFile>> {
    let Some(path) = &snapshot.manifest_list else {
        return Err(Error::not_implemented(format!(
            "{PROCEDURE}: snapshot {} lists its manifests inline (v1 without a manifest list); \
             rewriting them is not supported",
            snapshot.snapshot_id
        )));
    };
    let bytes = io.read_immutable(path, None).await?;
    read_manifest_list(&bytes, path)
}

/// Decide, read and (unless EXPLAIN or a dry run) write the new manifests.
async fn plan(
    target: &MaintenanceTarget,
    located: &LocatedMetadata,
    list: &[ManifestFile],
    options: &RewriteManifestsOptions,
    explain: bool,
) -> Result<Planned> {
    let metadata = &located.metadata;
    if let Some(id) = options.spec_id
        && metadata.partition_spec(id).is_none()
    {
        return Err(Error::bad_arguments(format!(
            "{PROCEDURE}: table {} has no partition spec with id {id}",
            target.table_name
        )));
    }
    let target_bytes = target_size(options.target_manifest_size_bytes, metadata.properties())?;
    let below_threshold = options
        .min_manifest_count
        .is_some_and(|min| list.len() as u64 <= min);
    let selection = if below_threshold {
        Selection {
            verdicts: vec![
                ManifestVerdict::Keep(super::decide::KeepReason::BelowMinCount);
                list.len()
            ],
            groups: Vec::new(),
        }
    } else {
        select(list, options.spec_id, target_bytes)
    };
    if selection.is_noop() {
        let mut outcome = noop(options);
        if explain {
            outcome.explain = Some(explain_rows(list, &selection, &[], target_bytes));
        }
        return Ok(Planned::Done(outcome));
    }
    let manifests = read_manifests(target, list, &selection).await?;
    let outputs = regroup(list, &selection, &manifests);
    if explain || options.dry_run {
        let planned: Vec<PlannedManifest> = outputs.iter().map(|o| o.planned.clone()).collect();
        let mut outcome = noop(options);
        if explain {
            outcome.explain = Some(explain_rows(list, &selection, &planned, target_bytes));
        } else {
            outcome.metrics.rewritten_manifests_count = selection.rewritten_count() as i64;
            outcome.metrics.added_manifests_count = planned.len() as i64;
        }
        return Ok(Planned::Done(outcome));
    }
    target.progress.begin_writes()?;
    let written = write_outputs(target, metadata, list, &selection, &manifests, &outputs).await?;
    Ok(Planned::Write(written))
}

/// The manifests of the rewritten groups, read whole, inherited fields made explicit (seed
/// 001's rule): `None` for the manifests that are kept.
async fn read_manifests(
    target: &MaintenanceTarget,
    list: &[ManifestFile],
    selection: &Selection,
) -> Result<Vec<Option<Manifest>>> {
    let wanted: Vec<usize> = selection
        .groups
        .iter()
        .flat_map(|g| g.manifests.iter().copied())
        .collect();
    target
        .progress
        .phase(Phase::ReadingManifests, Some(wanted.len()))?;
    let io = &target.io;
    let concurrency = target.settings.metadata_read_concurrency();
    let mut out: Vec<Option<Manifest>> = vec![None; list.len()];
    let mut reads = futures::stream::iter(wanted)
        .map(|i| async move {
            let m = &list[i];
            let bytes = io.read_immutable(&m.manifest_path, m.length()).await?;
            let mut manifest = read_manifest(&bytes, &m.manifest_path)?;
            inherit(&mut manifest.entries, m);
            Ok::<_, Error>((i, bytes.len(), manifest))
        })
        .buffer_unordered(concurrency)
        .boxed();
    while let Some((i, len, manifest)) = reads.try_next().await? {
        target.progress.advance(1, len as u64);
        out[i] = Some(manifest);
    }
    Ok(out)
}
