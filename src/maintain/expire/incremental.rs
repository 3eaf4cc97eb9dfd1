//! Incremental cleanup: the same files as the full keep set ([`super::keepset`]) without reading
//! the candidate manifests that delete nothing, when the history is one line on `main` and the
//! manifest lists prove it adds up. Pure: history and file graph in, which manifests to read and
//! the file decision out.
//!
//! The full rule: a content file is a candidate when a candidate manifest (named by an expired
//! snapshot and by no retained one) names it, with any status, and no retained manifest lists it
//! live (the keep set `L`). Most manifests of a long history are candidates, and most of them
//! only add files. On one line of history `s1 … sn` (oldest first, `sn` main's head) whose
//! expired snapshots are the prefix `s1 … s(k-1)`:
//! - a file live in an expired snapshot and not in `L` is not live in `sk`, so on the way from
//!   that snapshot to `sk` some `sd` dropped it, through a DELETED entry in a manifest `sd` wrote
//!   and lists: a candidate manifest, or a retained one written by one of `s2 … sk`. So every
//!   candidate of the full rule has a DELETED entry in a manifest read here, or is named by a
//!   candidate manifest only through DELETED entries (read here too);
//! - conversely a DELETED path of a candidate manifest is named by it; a DELETED path of a
//!   retained manifest written by `sd` (`d` in `2 … k`) was live in `s(d-1)`, through a manifest
//!   that, when the path is not in `L`, no retained snapshot lists: a candidate manifest.
//!
//! So candidates = (DELETED paths of candidate manifests with DELETED entries, and of retained
//! manifests with DELETED entries written by `s2 … sk`) minus `L`. `L` is still read whole
//! (every retained manifest, as in the full rule: few, when most snapshots expire), so no file
//! live in a retained snapshot is ever a candidate, whatever a writer did: a path added again
//! after its delete stays protected. Manifests, lists and statistics files are decided from the
//! lists exactly as in the full rule.
//!
//! Some writers (this crate's commits and generator among them) drop a manifest whose every file
//! is deleted instead of writing its DELETED entries. The lists show it: from a snapshot's
//! parent to it, the live count (ADDED + EXISTING of the listed manifests) then changes by more
//! than the added minus the deleted entries of the manifests it added. For such a step up to
//! `sk`, the manifests the child no longer lists are read too, and their live paths count as
//! deleted ones (a path live in one of them and not in `L` is named by it, a candidate manifest).
//!
//! Checked here, each a reason to fall back to the full keep set ([`choose_cleanup`]):
//! policy mode (not `snapshot_ids`); no ref but `main`, which is the current snapshot; every
//! snapshot of the metadata on main's ancestry (so none staged, rolled back, left by a removed
//! branch, or behind a parent missing from the metadata); no snapshot with a `source-snapshot-id`
//! (cherry-picked); the expired snapshots are the oldest of that line; every snapshot has its own
//! manifest list that lists each manifest once; every list gives the added, existing and deleted
//! counts; a manifest is first listed by the snapshot that wrote it (a manifest new in a
//! snapshot's list was written by that snapshot).
//!
//! Delete files need nothing of their own: they are named by entries with the same statuses, so
//! the argument above holds for them word for word; a delete file dropped without a DELETED entry
//! (with the data file it applied to, say) unbalances its step like a data file, since the counts
//! of delete manifests and of data manifests are balanced apart.
//!
//! What the lists cannot show, and equality (not safety) rests on: the counts are those of the
//! entries; a DELETED entry names a file live in its writer's parent; where a step's counts add
//! up, no file left without a DELETED entry (a writer would have to drop one file and bring
//! another back as EXISTING in the same commit); each path has one content type and size. Then
//! the decision is the same set of files, in the same categories with the same sizes, as the
//! full rule; the order within a category may differ (content files are named in the order the
//! manifests are read).

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::error::{Error, Result};
use crate::iceberg::metadata::TableMetadata;
use crate::iceberg::spec::{EntryStatus, MAIN_BRANCH, ManifestContent, RefKind, SnapshotId};
use crate::maintain::expire::keepset::{
    FileDecision, FileGraph, ManifestContents, ManifestReadPlan, PathId, PathSet, SnapshotFiles,
    decide_with_content, plan_manifest_reads, unique,
};

/// The summary key of a cherry-picked snapshot.
const SOURCE_SNAPSHOT_ID: &str = "source-snapshot-id";

/// One snapshot as the history check needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistorySnapshot {
    pub id: SnapshotId,
    pub parent: Option<SnapshotId>,
    /// The snapshot was cherry-picked (its summary names a `source-snapshot-id`).
    pub picked_from: Option<String>,
}

/// The history of a table: snapshots, refs, the current snapshot, and whether the statement
/// named the snapshots to expire.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct History {
    pub snapshots: Vec<HistorySnapshot>,
    pub refs: Vec<(String, RefKind, SnapshotId)>,
    pub current: Option<SnapshotId>,
    pub by_ids: bool,
}

impl History {
    /// The history of `metadata`; `by_ids` when `snapshot_ids` chose what expires.
    pub fn of(metadata: &TableMetadata, by_ids: bool) -> History {
        History {
            snapshots: metadata
                .snapshots()
                .iter()
                .map(|s| HistorySnapshot {
                    id: s.snapshot_id,
                    parent: s.parent_snapshot_id,
                    picked_from: s.summary.get(SOURCE_SNAPSHOT_ID).map(str::to_string),
                })
                .collect(),
            refs: metadata
                .refs()
                .iter()
                .map(|r| (r.name.clone(), r.kind, r.snapshot_id))
                .collect(),
            current: metadata.current_snapshot_id(),
            by_ids,
        }
    }
}

/// Which cleanup runs: the incremental one with the manifests it reads, or the full keep set and
/// why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cleanup {
    Incremental(IncrementalReads),
    Full(String),
}

/// Which cleanup a plan ran, for EXPLAIN: what the incremental one read, or why the full keep
/// set was needed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CleanupRan {
    Incremental(String),
    Full(String),
}

impl CleanupRan {
    /// `incremental` or `full`.
    pub fn name(&self) -> &'static str {
        match self {
            CleanupRan::Incremental(_) => "incremental",
            CleanupRan::Full(_) => "full",
        }
    }

    /// What was read, or why the full keep set ran.
    pub fn reason(&self) -> &str {
        match self {
            CleanupRan::Incremental(text) | CleanupRan::Full(text) => text,
        }
    }
}

/// What the incremental cleanup takes from a manifest it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Take {
    /// Its DELETED entries.
    pub deleted: bool,
    /// Its live entries (a manifest dropped whole where files left without DELETED entries).
    pub live: bool,
}

/// What the incremental cleanup reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncrementalReads {
    /// The full rule's phase A: its candidate manifests and lists decide the metadata files,
    /// and its retained manifests (all of them, when there is a candidate manifest) are read for
    /// the files they keep live.
    pub plan: ManifestReadPlan,
    /// Candidate manifests to read, in the plan's order, with what each gives.
    pub candidates: Vec<(PathId, Take)>,
    /// Retained manifests with DELETED entries written by the second-oldest snapshot up to the
    /// oldest retained one, in first-listed order.
    pub retained_deletes: Vec<PathId>,
}

impl IncrementalReads {
    /// Every manifest to read for its entries: candidates, then retained ones.
    pub fn manifests_to_read(&self) -> Vec<PathId> {
        self.candidates
            .iter()
            .map(|(m, _)| *m)
            .chain(self.retained_deletes.iter().copied())
            .collect()
    }

    /// The EXPLAIN line of this path.
    pub fn explain(&self) -> String {
        let dropped = self.candidates.iter().filter(|(_, t)| t.live).count();
        format!(
            "main only, one line of history: read {} of {} \
             candidate manifest(s) (with DELETED entries, or dropped whole: {dropped}), {} \
             retained one(s) with DELETED entries and the {} retained one(s) for the files they \
             keep live",
            self.candidates.len(),
            self.plan.candidate_manifests.len(),
            self.retained_deletes.len(),
            self.plan.retained_manifests.len()
        )
    }
}

/// Decide which cleanup runs for expiring `expired` from `history` with file graph `graph`
/// (every snapshot's manifest list read). `expired` must not be empty.
pub fn choose_cleanup(
    history: &History,
    graph: &FileGraph,
    expired: &BTreeSet<SnapshotId>,
) -> Cleanup {
    match check(history, graph, expired) {
        Ok(reads) => Cleanup::Incremental(reads),
        Err(reason) => Cleanup::Full(reason),
    }
}

fn check(
    history: &History,
    graph: &FileGraph,
    expired: &BTreeSet<SnapshotId>,
) -> std::result::Result<IncrementalReads, String> {
    if history.by_ids {
        return Err("snapshot_ids names the snapshots".into());
    }
    check_refs(history)?;
    let line = main_line(history)?;
    let oldest_retained = check_prefix(&line, expired)?;
    let position: HashMap<SnapshotId, usize> =
        line.iter().enumerate().map(|(i, id)| (*id, i)).collect();
    let lists = snapshot_manifests(graph, &line)?;
    check_lists(graph, &line, &lists, &position)?;
    let dropped = check_transitions(graph, &line[..=oldest_retained], &lists)?;
    let writers: HashSet<SnapshotId> = line[1..=oldest_retained].iter().copied().collect();
    Ok(reads(graph, expired, &writers, &dropped))
}

fn check_refs(history: &History) -> std::result::Result<(), String> {
    let others: Vec<String> = history
        .refs
        .iter()
        .filter(|(name, kind, _)| !(name == MAIN_BRANCH && *kind == RefKind::Branch))
        .map(|(name, kind, _)| match kind {
            RefKind::Branch => format!("branch '{name}'"),
            RefKind::Tag => format!("tag '{name}'"),
        })
        .collect();
    if !others.is_empty() {
        let shown = others
            .iter()
            .take(3)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ");
        let more = others.len().saturating_sub(3);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        return Err(format!("refs besides main: {shown}{more}"));
    }
    let main = history.refs.iter().find(|(name, _, _)| name == MAIN_BRANCH);
    match (main, history.current) {
        (Some((_, _, head)), Some(current)) if *head == current => Ok(()),
        (_, None) => Err("no current snapshot".into()),
        _ => Err("main is not the current snapshot".into()),
    }
}

/// Main's ancestry, oldest first, when it holds every snapshot of the metadata.
fn main_line(history: &History) -> std::result::Result<Vec<SnapshotId>, String> {
    let parents: HashMap<SnapshotId, Option<SnapshotId>> =
        history.snapshots.iter().map(|s| (s.id, s.parent)).collect();
    if parents.len() != history.snapshots.len() {
        return Err("two snapshots share an id".into());
    }
    if let Some(s) = history.snapshots.iter().find(|s| s.picked_from.is_some()) {
        let source = s.picked_from.as_deref().unwrap_or_default();
        return Err(format!(
            "snapshot {} was cherry-picked from snapshot {source}",
            s.id
        ));
    }
    let mut line = Vec::new();
    let mut seen = HashSet::new();
    let mut next = history.current;
    let mut missing_parent = None;
    while let Some(id) = next {
        let Some(parent) = parents.get(&id) else {
            missing_parent = Some(id);
            break;
        };
        if !seen.insert(id) {
            return Err(format!("main's ancestry loops at snapshot {id}"));
        }
        line.push(id);
        next = *parent;
    }
    if line.len() < history.snapshots.len() {
        let off = history.snapshots.iter().find(|s| !seen.contains(&s.id));
        let off = off.map_or(0, |s| s.id);
        return Err(match (missing_parent, line.last()) {
            (Some(gone), Some(child)) => format!(
                "main's ancestry breaks at snapshot {child}: its parent {gone} is not in the \
                 metadata, and snapshot {off} is not on it"
            ),
            _ => format!(
                "snapshot {off} is not in main's ancestry (staged, rolled back or left by a \
                 removed branch)"
            ),
        });
    }
    line.reverse();
    Ok(line)
}

/// The expired snapshots must be the oldest of the line; returns the oldest retained position.
fn check_prefix(
    line: &[SnapshotId],
    expired: &BTreeSet<SnapshotId>,
) -> std::result::Result<usize, String> {
    let first_kept = line.iter().position(|id| !expired.contains(id));
    let Some(first_kept) = first_kept.filter(|i| *i > 0) else {
        return Err("nothing expires before a retained snapshot".into());
    };
    if let Some(late) = line[first_kept..].iter().find(|id| expired.contains(id)) {
        return Err(format!(
            "expired snapshot {late} is newer on main than retained snapshot {}",
            line[first_kept]
        ));
    }
    if expired.len() != first_kept {
        return Err("an expired snapshot is not in the metadata".into());
    }
    Ok(first_kept)
}

/// Each snapshot of the line's files; each snapshot must have its own list that names each
/// manifest once.
fn snapshot_manifests<'g>(
    graph: &'g FileGraph,
    line: &[SnapshotId],
) -> std::result::Result<HashMap<SnapshotId, &'g SnapshotFiles>, String> {
    let mut out = HashMap::new();
    let mut lists = PathSet::default();
    for s in &graph.snapshots {
        let Some(list) = s.manifest_list else {
            return Err(format!(
                "snapshot {} has no manifest list (v1 inline manifests carry no file counts)",
                s.snapshot_id
            ));
        };
        if !lists.insert(list) {
            return Err(format!(
                "snapshot {} shares its manifest list with another snapshot",
                s.snapshot_id
            ));
        }
        let distinct: HashSet<PathId> = s.manifests.iter().map(|m| m.path).collect();
        if distinct.len() != s.manifests.len() {
            return Err(format!(
                "the manifest list of snapshot {} names a manifest twice",
                s.snapshot_id
            ));
        }
        out.insert(s.snapshot_id, s);
    }
    if out.len() != line.len() || line.iter().any(|id| !out.contains_key(id)) {
        return Err("the file graph does not have every snapshot of main's ancestry".into());
    }
    Ok(out)
}

/// Counts everywhere, no delete manifests, and no manifest listed before its writer.
fn check_lists(
    graph: &FileGraph,
    line: &[SnapshotId],
    lists: &HashMap<SnapshotId, &SnapshotFiles>,
    position: &HashMap<SnapshotId, usize>,
) -> std::result::Result<(), String> {
    for (at, id) in line.iter().enumerate() {
        let Some(snapshot) = lists.get(id) else {
            return Err(format!("snapshot {id} has no files read"));
        };
        for m in &snapshot.manifests {
            let Some(facts) = graph.listed.get(&m.path).filter(|f| f.counts.is_some()) else {
                return Err(format!(
                    "the manifest list of snapshot {id} lacks file counts (or lists disagree)"
                ));
            };
            if position
                .get(&facts.added_snapshot_id)
                .is_some_and(|w| *w > at)
            {
                return Err(format!(
                    "snapshot {id} lists a manifest written later, by snapshot {}",
                    facts.added_snapshot_id
                ));
            }
        }
    }
    Ok(())
}

/// Between each snapshot of `line` (oldest first, up to the oldest retained) and its parent: new
/// manifests must be the child's own. Where the live count does not change by exactly the added
/// minus the deleted entries of those manifests, some file left without a DELETED entry (a
/// writer that drops an emptied manifest whole): the manifests the child no longer lists are
/// returned, to be read for their live files.
fn check_transitions(
    graph: &FileGraph,
    line: &[SnapshotId],
    lists: &HashMap<SnapshotId, &SnapshotFiles>,
) -> std::result::Result<Vec<PathId>, String> {
    let counts = |m: PathId| graph.listed.get(&m).and_then(|f| f.counts);
    // Data and delete files balance apart: one kind of file must not hide the other's drop.
    let live = |s: &SnapshotFiles, kind: ManifestContent| -> i128 {
        s.manifests
            .iter()
            .filter(|m| m.content == kind)
            .filter_map(|m| counts(m.path))
            .map(|c| i128::from(c.live()))
            .sum()
    };
    let mut dropped = Vec::new();
    for pair in line.windows(2) {
        let [parent, child] = pair else { continue };
        let (Some(before), Some(after)) = (lists.get(parent), lists.get(child)) else {
            return Err(format!("snapshot {child} has no files read"));
        };
        let listed: HashSet<PathId> = after.manifests.iter().map(|m| m.path).collect();
        let carried: HashSet<PathId> = before.manifests.iter().map(|m| m.path).collect();
        let (mut data_change, mut deletes_change) = (0i128, 0i128);
        for m in after
            .manifests
            .iter()
            .filter(|m| !carried.contains(&m.path))
        {
            let facts = graph.listed.get(&m.path);
            if let Some(f) = facts.filter(|f| f.added_snapshot_id != *child) {
                return Err(format!(
                    "snapshot {child} lists a manifest new since its parent but written by \
                     snapshot {}",
                    f.added_snapshot_id
                ));
            }
            if let Some(c) = counts(m.path) {
                let change = match m.content {
                    ManifestContent::Data => &mut data_change,
                    ManifestContent::Deletes => &mut deletes_change,
                };
                *change += i128::from(c.added) - i128::from(c.deleted);
            }
        }
        let balanced = |kind, change| live(after, kind) - live(before, kind) == change;
        if !balanced(ManifestContent::Data, data_change)
            || !balanced(ManifestContent::Deletes, deletes_change)
        {
            dropped.extend(
                before
                    .manifests
                    .iter()
                    .map(|m| m.path)
                    .filter(|m| !listed.contains(m)),
            );
        }
    }
    Ok(unique(dropped.into_iter()))
}

/// The manifests to read: candidates with DELETED entries or dropped whole, and retained ones
/// with DELETED entries written by `writers`.
fn reads(
    graph: &FileGraph,
    expired: &BTreeSet<SnapshotId>,
    writers: &HashSet<SnapshotId>,
    dropped: &[PathId],
) -> IncrementalReads {
    let plan = plan_manifest_reads(graph, expired);
    let has_deletes = |m: &PathId| {
        graph
            .listed
            .get(m)
            .and_then(|f| f.counts)
            .is_some_and(|c| c.deleted > 0)
    };
    let dropped: HashSet<PathId> = dropped.iter().copied().collect();
    let candidates: Vec<(PathId, Take)> = plan
        .candidate_manifests
        .iter()
        .map(|m| {
            let take = Take {
                deleted: has_deletes(&m.path),
                live: dropped.contains(&m.path),
            };
            (m.path, take)
        })
        .filter(|(_, take)| take.deleted || take.live)
        .collect();
    // Without a candidate manifest no content file is a candidate (and the keep set is not
    // read): nothing to read.
    let retained_deletes = if plan.candidate_manifests.is_empty() {
        Vec::new()
    } else {
        let retained = graph
            .snapshots
            .iter()
            .filter(|s| !expired.contains(&s.snapshot_id))
            .flat_map(|s| s.manifests.iter().map(|m| m.path));
        unique(retained)
            .into_iter()
            .filter(|m| {
                has_deletes(m)
                    && graph
                        .listed
                        .get(m)
                        .is_some_and(|f| writers.contains(&f.added_snapshot_id))
            })
            .collect()
    };
    IncrementalReads {
        plan,
        candidates,
        retained_deletes,
    }
}

/// The incremental decision from the manifests of `reads` (`contents` must hold each; only the
/// entries [`Take`] names count), with the content keep set given as `live_kept` (true for a
/// path some retained manifest lists live), as in [`super::keepset::decide_candidates`].
pub fn decide_incremental(
    graph: &FileGraph,
    expired: &BTreeSet<SnapshotId>,
    reads: &IncrementalReads,
    live_kept: impl Fn(PathId) -> bool,
    contents: &ManifestContents,
) -> Result<FileDecision> {
    let to_read = reads.manifests_to_read();
    if let Some(missing) = to_read.iter().find(|m| !contents.contains_key(m)) {
        return Err(Error::logical(format!(
            "manifest #{} is needed by the incremental cleanup but was not read",
            missing.index()
        )));
    }
    let only_deleted = Take {
        deleted: true,
        live: false,
    };
    let takes: HashMap<PathId, Take> = (reads.candidates.iter().copied())
        .chain(reads.retained_deletes.iter().map(|m| (*m, only_deleted)))
        .collect();
    let content = to_read
        .iter()
        .filter_map(|m| Some((*takes.get(m)?, contents.get(m)?)))
        .flat_map(|(take, c)| {
            c.entries.iter().filter(move |e| match e.status {
                EntryStatus::Deleted => take.deleted,
                _ => take.live,
            })
        })
        .map(|e| (e.path, e.content, Some(e.file_size)));
    decide_with_content(graph, expired, &reads.plan, live_kept, content)
}

#[cfg(test)]
#[path = "incremental_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "incremental_props.rs"]
mod props;
