//! The executor of `rewrite_manifests` (and `OPTIMIZE TABLE t MANIFEST`): read the current
//! snapshot's manifest list and the manifests to rewrite, decide ([`super::decide`]), write the
//! new manifests and a manifest list, commit a `replace` snapshot through
//! [`MaintenanceTarget::commit`], and on a conflict apply Java's `BaseRewriteManifests` rule.

use std::collections::{BTreeSet, HashSet};

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};

use super::decide::{
    LiveEntry, ManifestVerdict, Selection, cluster, partition_key, select, target_size,
};
use super::explain::{ExplainRow, PlannedManifest, explain_rows};
use super::metrics::RewriteManifestsMetrics;
use super::reuse::{PlannedFrom, Reuse, reuse};
use crate::error::{Error, ErrorKind, Result};
use crate::iceberg::avro::Codec;
use crate::iceberg::commit::{CommitOptions, CommitOutcome, unconfirmed_error};
use crate::iceberg::locate::LocatedMetadata;
use crate::iceberg::manifest::read_manifest;
use crate::iceberg::manifest::{Manifest, ManifestEntry, ManifestWriter, NewManifest, inherit};
use crate::iceberg::manifest_list::{
    ManifestFile, ManifestListMeta, read_manifest_list, write_manifest_list,
};
use crate::iceberg::metadata::TableMetadata;
use crate::iceberg::spec::{EntryStatus, FormatVersion, Snapshot};
use crate::iceberg::txn::names::{
    current_schema_json, fresh_snapshot_id, manifest_list_path, manifest_path, metadata_dir,
    spec_json,
};
use crate::iceberg::txn::summary::{Tally, build_summary};
use crate::io::FileIO;
use crate::maintain::target::MaintenanceTarget;
use crate::plan::RewriteManifestsOptions;
use crate::progress::Phase;

const PROCEDURE: &str = "rewrite_manifests";
const CODEC: Codec = Codec::Deflate;

/// What a run (or dry run, or EXPLAIN) of `rewrite_manifests` returns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RewriteManifestsOutcome {
    pub metrics: RewriteManifestsMetrics,
    /// The plan, for EXPLAIN.
    pub explain: Option<Vec<ExplainRow>>,
    pub warnings: Vec<String>,
    /// The committed snapshot, when one was.
    pub snapshot_id: Option<i64>,
}

/// New manifests written but not yet committed.
#[derive(Debug, Clone)]
struct Written {
    /// List entries of the new manifests (snapshot id and sequence number set at commit).
    manifests: Vec<(ManifestFile, Option<i64>)>,
    /// Paths of the manifests they replace.
    replaced: BTreeSet<String>,
    /// Live entries rewritten.
    entries: usize,
    /// The snapshot and format version they were planned from.
    planned: PlannedFrom,
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
enum Step {
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
    let max_attempts = target.settings.commit_max_attempts();
    let mut carried: Option<Written> = None;
    let mut last_conflict = String::new();
    let mut warnings = Vec::new();
    for _ in 0..max_attempts {
        let located = target.locate_newest(PROCEDURE).await?;
        let metadata = &located.metadata;
        let Some(current) = metadata.current_snapshot() else {
            if let Some(w) = carried.take() {
                let why = "the table has no current snapshot any more";
                warnings.push(drop_written(target, &w, why, None).await);
            }
            return Ok(with_warnings(noop(options), warnings));
        };
        let list = read_list(&target.io, current).await?;
        // The manifests written before a conflict serve this attempt only when the head still
        // descends from what they were planned from, in the same format version, and lists every
        // manifest they replace (`reuse.rs`); else they go and the rewrite plans again.
        let verdict = carried.as_ref().map(|w| {
            let history = metadata.ancestry(w.planned.snapshot_id, Some(current.snapshot_id));
            reuse(
                w.planned,
                history,
                metadata.format_version(),
                still_listed(w, &list),
            )
        });
        let written = match (carried.take(), verdict) {
            (Some(w), Some(Reuse::Reuse)) => w,
            (Some(w), Some(Reuse::PlanAgain(why))) => {
                let planned_again = Some(current.snapshot_id);
                warnings.push(drop_written(target, &w, &why, planned_again).await);
                match plan(target, &located, &list, options, explain).await? {
                    Step::Done(outcome) => return Ok(with_warnings(outcome, warnings)),
                    Step::Write(w) => w,
                }
            }
            _ => match plan(target, &located, &list, options, explain).await? {
                Step::Done(outcome) => return Ok(with_warnings(outcome, warnings)),
                Step::Write(w) => w,
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
        let commit_options = CommitOptions {
            update_metadata_log: true,
            now_ms: Some(target.now_ms),
        };
        match target
            .commit(&located, new_metadata, &commit_options)
            .await?
        {
            CommitOutcome::Committed(_) => {
                return Ok(RewriteManifestsOutcome {
                    metrics: RewriteManifestsMetrics {
                        rewritten_manifests_count: written.replaced.len() as i64,
                        added_manifests_count: written.manifests.len() as i64,
                        dry_run: false,
                    },
                    explain: None,
                    warnings,
                    snapshot_id: Some(snapshot_id),
                });
            }
            CommitOutcome::Conflict { path } => {
                // Never committed: the list goes, the manifests may serve the next attempt.
                target.progress.writes_abandoned();
                target.io.delete_many(&[list_path]).await;
                last_conflict = path;
                carried = Some(written);
            }
            CommitOutcome::Unconfirmed { path, rival, why } => {
                return Err(unconfirmed_error(&target.location, &path, &rival, &why));
            }
            CommitOutcome::Unknown { why } => {
                // The catalog may hold our commit: the files we wrote stay (orphans at worst).
                return Err(Error::new(ErrorKind::NetworkError, why));
            }
        }
    }
    if let Some(w) = carried {
        // Never committed: every attempt conflicted.
        target.io.delete_many(&w.paths()).await;
    }
    Err(Error::new(
        ErrorKind::LimitExceeded,
        format!(
            "{PROCEDURE} on {}: {max_attempts} commit attempt(s) conflicted with concurrent \
             writers (last taken name: {last_conflict})",
            target.table_name
        ),
    ))
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
) -> Result<Step> {
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
        return Ok(Step::Done(outcome));
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
        return Ok(Step::Done(outcome));
    }
    target.progress.begin_writes()?;
    let written = write_outputs(target, metadata, list, &selection, &manifests, &outputs).await?;
    Ok(Step::Write(written))
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

/// One new manifest: its entries as (manifest index, entry index) and its plan row.
#[derive(Debug, Clone)]
struct Output {
    entries: Vec<(usize, usize)>,
    planned: PlannedManifest,
}

/// Cluster each group's live entries into its new manifests.
fn regroup(
    list: &[ManifestFile],
    selection: &Selection,
    manifests: &[Option<Manifest>],
) -> Vec<Output> {
    let mut outputs = Vec::new();
    for (g, group) in selection.groups.iter().enumerate() {
        let mut refs = Vec::new();
        let mut entries = Vec::new();
        for &i in &group.manifests {
            let Some(manifest) = &manifests[i] else {
                continue;
            };
            // Each entry stands for an equal share of its manifest's length.
            let total = manifest.entries.len().max(1) as i64;
            let length = list[i].manifest_length.max(total);
            for (j, e) in manifest.entries.iter().enumerate() {
                if !e.status.is_live() {
                    continue;
                }
                refs.push((i, j));
                entries.push(LiveEntry {
                    key: partition_key(&e.data_file.partition),
                    bytes: length / total,
                });
            }
        }
        if entries.is_empty() {
            continue;
        }
        for bin in cluster(&entries, group.target_count) {
            let mut partitions = BTreeSet::new();
            for &k in &bin {
                partitions.insert(&entries[k].key);
            }
            outputs.push(Output {
                entries: bin.iter().map(|&k| refs[k]).collect(),
                planned: PlannedManifest {
                    spec_id: group.spec_id,
                    content: group.content,
                    entries: bin.len(),
                    estimated_bytes: bin.iter().map(|&k| entries[k].bytes).sum(),
                    partitions: partitions.len(),
                    group: g,
                },
            });
        }
    }
    outputs
}

/// Write every new manifest (Iceberg's schema for the table's format version, the partition type
/// of the group's spec; every live entry EXISTING with its numbers explicit and every metric kept).
async fn write_outputs(
    target: &MaintenanceTarget,
    metadata: &TableMetadata,
    list: &[ManifestFile],
    selection: &Selection,
    manifests: &[Option<Manifest>],
    outputs: &[Output],
) -> Result<Written> {
    let dir = metadata_dir(metadata);
    let uuid = uuid::Uuid::new_v4();
    let version = metadata.format_version();
    let current_schema = current_schema_json(metadata)?;
    let mut files = Vec::new();
    let mut new_manifests = Vec::new();
    let mut entries = 0usize;
    for (n, output) in outputs.iter().enumerate() {
        let group = &selection.groups[output.planned.group];
        let source = group
            .manifests
            .iter()
            .find_map(|&i| manifests[i].as_ref())
            .ok_or_else(|| Error::logical(format!("{PROCEDURE}: a group without manifests")))?;
        let mut writer = new_writer(metadata, version, source, group.spec_id, &current_schema)?;
        for &(i, j) in &output.entries {
            let Some(manifest) = &manifests[i] else {
                continue;
            };
            let mut entry: ManifestEntry = manifest.entries[j].clone();
            entry.status = EntryStatus::Existing;
            writer.add(&entry).map_err(|e| {
                Error::new(
                    e.kind(),
                    format!(
                        "{PROCEDURE} on {}: cannot rewrite an entry of '{}': {}",
                        target.table_name,
                        list[i].manifest_path,
                        e.message()
                    ),
                )
            })?;
            entries += 1;
        }
        let done = writer.finish()?;
        let path = manifest_path(&dir, &uuid, n);
        let min_seq = done.min_sequence_number;
        new_manifests.push((done.manifest_file(path.clone(), 0, 0), min_seq));
        files.push((path, done.bytes));
    }
    let replaced = selection
        .groups
        .iter()
        .flat_map(|g| g.manifests.iter().map(|&i| list[i].manifest_path.clone()))
        .collect();
    let io = &target.io;
    let concurrency = target.settings.metadata_read_concurrency();
    futures::stream::iter(files)
        .map(|(path, bytes)| async move { io.overwrite(&path, Bytes::from(bytes)).await })
        .buffer_unordered(concurrency)
        .boxed()
        .try_collect::<Vec<()>>()
        .await?;
    Ok(Written {
        manifests: new_manifests,
        replaced,
        entries,
        planned: PlannedFrom {
            snapshot_id: metadata.current_snapshot_id().unwrap_or_default(),
            format_version: version,
        },
    })
}

/// A writer with Iceberg's manifest schema for `version` and the partition type of `spec_id`
/// (from the source manifest's header, else the table's spec); when that cannot be built (an
/// unknown transform), a rewrite of the source manifest's own schema and header.
fn new_writer(
    metadata: &TableMetadata,
    version: FormatVersion,
    source: &Manifest,
    spec_id: i32,
    current_schema: &str,
) -> Result<ManifestWriter> {
    let schema = source.meta_str("schema").unwrap_or(current_schema);
    let spec = match source.meta_str("partition-spec") {
        Some(spec) => spec.to_string(),
        None => spec_json(metadata, spec_id)?,
    };
    ManifestWriter::new(&NewManifest {
        format_version: version,
        content: source.content(),
        table_schema_json: schema,
        partition_spec_json: &spec,
        partition_spec_id: spec_id,
        codec: CODEC,
    })
    .or_else(|_| ManifestWriter::rewrite_of(source, CODEC))
}

/// Write the manifest list of the `replace` snapshot on top of `parent` (new manifests first, then
/// the parent's other manifests in order) and build the metadata that makes it current.
async fn new_snapshot(
    io: &FileIO,
    metadata: &TableMetadata,
    parent: &Snapshot,
    list: &[ManifestFile],
    written: &Written,
    now_ms: i64,
) -> Result<(TableMetadata, String, i64)> {
    let version = metadata.format_version();
    let snapshot_id = fresh_snapshot_id(metadata);
    let sequence_number = if version >= FormatVersion::V2 {
        metadata.last_sequence_number() + 1
    } else {
        0
    };
    let first_row_id = (version >= FormatVersion::V3).then(|| metadata.next_row_id().unwrap_or(0));
    let mut new_list: Vec<ManifestFile> = written
        .manifests
        .iter()
        .map(|(m, min_seq)| {
            let mut m = m.clone();
            m.added_snapshot_id = snapshot_id;
            m.sequence_number = sequence_number;
            m.min_sequence_number = min_seq.unwrap_or(sequence_number);
            m
        })
        .collect();
    let kept: Vec<ManifestFile> = list
        .iter()
        .filter(|m| !written.replaced.contains(&m.manifest_path))
        .cloned()
        .collect();
    let kept_count = kept.len();
    new_list.extend(kept);
    let meta = ManifestListMeta {
        format_version: version,
        snapshot_id,
        parent_snapshot_id: Some(parent.snapshot_id),
        sequence_number,
        first_row_id,
    };
    let out = write_manifest_list(&meta, &new_list, CODEC)?;
    let path = manifest_list_path(&metadata_dir(metadata), snapshot_id, &uuid::Uuid::new_v4());
    io.overwrite(&path, Bytes::from(out.bytes)).await?;
    let mut summary = build_summary(
        "replace",
        &Tally::default(),
        &Tally::default(),
        Some(&parent.summary.to_map()),
    );
    for (key, value) in [
        ("manifests-created", written.manifests.len()),
        ("manifests-kept", kept_count),
        ("manifests-replaced", written.replaced.len()),
        ("entries-processed", written.entries),
    ] {
        summary.insert(key.to_string(), value.to_string());
    }
    let added_rows = match (first_row_id, out.next_row_id) {
        (Some(first), Some(next)) => Some(next - first),
        _ => None,
    };
    let snapshot = Snapshot {
        snapshot_id,
        parent_snapshot_id: Some(parent.snapshot_id),
        sequence_number,
        timestamp_ms: now_ms.max(parent.timestamp_ms),
        manifest_list: Some(path.clone()),
        manifests: Vec::new(),
        summary: summary.into(),
        schema_id: Some(metadata.current_schema_id()),
        first_row_id,
        added_rows,
    };
    let mut md = metadata.clone();
    md.add_snapshot(&snapshot)?;
    if version >= FormatVersion::V2 {
        md.set_last_sequence_number(sequence_number)?;
    }
    if let Some(next) = out.next_row_id {
        md.set_next_row_id(next)?;
    }
    md.set_current_snapshot(Some(snapshot_id), snapshot.timestamp_ms)?;
    Ok((md, path, snapshot_id))
}
