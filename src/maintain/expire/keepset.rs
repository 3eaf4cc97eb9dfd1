//! Which files `expire_snapshots` deletes, and in which order (see docs/safety.md, "Delete only
//! what no retained snapshot lists live").
//!
//! A file goes only when **no retained snapshot still names it**:
//! - keep set = manifest lists, manifests and live (ADDED/EXISTING) entries of every retained
//!   snapshot, plus the statistics / partition-statistics paths of entries that stay in metadata
//!   (those whose snapshot is not expired);
//! - candidates = manifest lists of expired snapshots, their manifests, every path any entry of
//!   the candidate manifests names (DELETED entries included), and the statistics paths of expired
//!   snapshots' entries; minus the keep set. A DELETED entry never protects a file.
//!
//! Paths are interned ([`PathInterner`]) from keys the caller already normalised for identity
//! (`io::path_key`: `s3`/`s3a`/`s3n` alike, duplicate slashes folded), so comparisons are integer
//! compares and each distinct path is stored once.
//!
//! Two phases, so the caller reads as little as possible (as Java's `ReachableFileCleanup` does):
//! - **A** [`plan_manifest_reads`], after reading every snapshot's manifest list: the *candidate
//!   manifests* are those named by an expired snapshot and by no retained one. A content file can
//!   only be a candidate if a candidate manifest names it, and only a retained manifest listing it
//!   live can protect it. So: candidate manifests are always read; retained manifests are read
//!   only when there is at least one candidate manifest, and then all of them (no cheaper rule is
//!   provably safe on metadata from outside: sequence numbers and `added_snapshot_id` do not bound
//!   which paths a manifest may list). Like Java, this assumes a manifest list or statistics path
//!   is never also a retained snapshot's content file: without candidate manifests, retained
//!   manifests are not read, so such a (nonsensical) overlap would go unseen.
//! - **B** [`decide_candidates`], after reading those manifests: the keep set, and the candidates
//!   grouped by category, each path once, with sizes for EXPLAIN totals. The content part of the
//!   keep set comes in as a predicate, so the executor can stream: it folds retained manifests into
//!   fingerprints of their live files (`paths::FingerprintSet`), then reads candidate manifests
//!   keeping only entries that set does not cover. Memory grows with distinct files, never with
//!   manifest entries. [`decide_files`] is the same decision from whole manifests (tests, and the
//!   reference the streamed form is proven equal to).
//!
//! A path is counted once, in the first category that claims it, in deletion order: content file,
//! manifest, manifest list, statistics file. A content path listed with several content types is
//! counted under the first one seen, walking candidate manifests in the order the expired snapshots
//! and their manifest lists give them, and each manifest's entries in order.
//!
//! The caller must have read the manifest list of **every retained snapshot**: one that cannot be
//! read must fail the statement, never be passed as an empty list (the keep set would miss its
//! files). An expired snapshot's manifest list or a candidate manifest that is already gone may be
//! passed empty; its files are then left to orphan removal.
//!
//! Deletion order is leaf first ([`FileDecision::deletion_order`]); after failed deletes,
//! [`after_failed_deletes`] says which manifests and manifest lists must then be kept (a manifest
//! naming a file that could not be deleted, and a list naming such a manifest, stay, so no
//! surviving file loses the metadata that names it).

use std::collections::{BTreeSet, HashSet};

use crate::error::{Error, Result};
use crate::iceberg::spec::{DataContent, SnapshotId};

pub use crate::maintain::file_graph::model::{
    EntryRef, FileGraph, ManifestContents, ManifestEntries, ManifestRef, SnapshotFiles,
    StatisticsRef, unique,
};
use crate::maintain::file_graph::paths::relative_path;
pub use crate::maintain::file_graph::paths::{PathId, PathInterner, PathSet};

/// Phase A's answer: which manifests to read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ManifestReadPlan {
    /// Manifest lists of expired snapshots that no retained snapshot uses (read already).
    pub candidate_manifest_lists: Vec<PathId>,
    /// Manifests named by an expired snapshot and no retained one, in first-seen order.
    pub candidate_manifests: Vec<ManifestRef>,
    /// Manifests of retained snapshots that must be read to protect content files (all of them
    /// when there is a candidate manifest, none otherwise).
    pub retained_manifests: Vec<PathId>,
}

impl ManifestReadPlan {
    /// Every manifest to read: candidates, then retained.
    pub fn manifests_to_read(&self) -> impl Iterator<Item = PathId> + '_ {
        self.candidate_manifests
            .iter()
            .map(|m| m.path)
            .chain(self.retained_manifests.iter().copied())
    }
}

fn split<'g>(
    graph: &'g FileGraph,
    expired: &BTreeSet<SnapshotId>,
) -> (Vec<&'g SnapshotFiles>, Vec<&'g SnapshotFiles>) {
    graph
        .snapshots
        .iter()
        .partition(|s| !expired.contains(&s.snapshot_id))
}

/// Phase A: which manifests the caller must read, given every snapshot's manifest list and the
/// expired snapshot ids. Pure and cheap; [`decide_files`] recomputes it.
pub fn plan_manifest_reads(graph: &FileGraph, expired: &BTreeSet<SnapshotId>) -> ManifestReadPlan {
    let (retained, expiring) = split(graph, expired);
    let retained_lists: PathSet = retained.iter().filter_map(|s| s.manifest_list).collect();
    let retained_manifests: Vec<PathId> = unique(
        retained
            .iter()
            .flat_map(|s| s.manifests.iter().map(|m| m.path)),
    );
    let retained_set: PathSet = retained_manifests.iter().copied().collect();
    let candidate_manifest_lists = unique(
        expiring
            .iter()
            .filter_map(|s| s.manifest_list)
            .filter(|l| !retained_lists.contains(l)),
    );
    let mut seen = PathSet::default();
    let candidate_manifests: Vec<ManifestRef> = expiring
        .iter()
        .flat_map(|s| s.manifests.iter())
        .filter(|m| !retained_set.contains(&m.path) && seen.insert(m.path))
        .copied()
        .collect();
    ManifestReadPlan {
        candidate_manifest_lists,
        retained_manifests: if candidate_manifests.is_empty() {
            Vec::new()
        } else {
            retained_manifests
        },
        candidate_manifests,
    }
}

/// What kind of file a candidate is; the metric it counts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FileCategory {
    DataFile,
    PositionDeleteFile,
    EqualityDeleteFile,
    Manifest,
    ManifestList,
    StatisticsFile,
}

impl FileCategory {
    fn of_content(content: DataContent) -> Self {
        match content {
            DataContent::Data => FileCategory::DataFile,
            DataContent::PositionDeletes => FileCategory::PositionDeleteFile,
            DataContent::EqualityDeletes => FileCategory::EqualityDeleteFile,
        }
    }
}

/// A file to delete, with its size when known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileCandidate {
    pub path: PathId,
    pub size: Option<i64>,
}

/// Phase B's answer: the files to delete, by category, each path once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileDecision {
    pub data_files: Vec<FileCandidate>,
    pub position_delete_files: Vec<FileCandidate>,
    pub equality_delete_files: Vec<FileCandidate>,
    pub manifests: Vec<FileCandidate>,
    pub manifest_lists: Vec<FileCandidate>,
    pub statistics_files: Vec<FileCandidate>,
}

/// Counts per category, in ClickHouse's metric row order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExpiryFileCounts {
    pub data_files: i64,
    pub position_delete_files: i64,
    pub equality_delete_files: i64,
    pub manifest_files: i64,
    pub manifest_lists: i64,
    pub statistics_files: i64,
}

impl ExpiryFileCounts {
    /// The sum of two counts, category by category (saturating).
    pub fn plus(self, other: ExpiryFileCounts) -> ExpiryFileCounts {
        ExpiryFileCounts {
            data_files: self.data_files.saturating_add(other.data_files),
            position_delete_files: self
                .position_delete_files
                .saturating_add(other.position_delete_files),
            equality_delete_files: self
                .equality_delete_files
                .saturating_add(other.equality_delete_files),
            manifest_files: self.manifest_files.saturating_add(other.manifest_files),
            manifest_lists: self.manifest_lists.saturating_add(other.manifest_lists),
            statistics_files: self.statistics_files.saturating_add(other.statistics_files),
        }
    }

    /// All categories together.
    pub fn total(&self) -> i64 {
        [
            self.data_files,
            self.position_delete_files,
            self.equality_delete_files,
            self.manifest_files,
            self.manifest_lists,
            self.statistics_files,
        ]
        .iter()
        .fold(0, |a, b| a.saturating_add(*b))
    }

    /// The seven result rows of `expire_snapshots`, in ClickHouse 26.9's order (named by
    /// [`ExpireMetrics`](super::ExpireMetrics)).
    pub fn metrics(&self, dry_run: bool) -> [(&'static str, i64); 7] {
        super::ExpireMetrics::new(*self, dry_run).named_values()
    }
}

impl FileDecision {
    /// The candidates of one category.
    pub fn files(&self, category: FileCategory) -> &[FileCandidate] {
        match category {
            FileCategory::DataFile => &self.data_files,
            FileCategory::PositionDeleteFile => &self.position_delete_files,
            FileCategory::EqualityDeleteFile => &self.equality_delete_files,
            FileCategory::Manifest => &self.manifests,
            FileCategory::ManifestList => &self.manifest_lists,
            FileCategory::StatisticsFile => &self.statistics_files,
        }
    }

    fn files_mut(&mut self, category: FileCategory) -> &mut Vec<FileCandidate> {
        match category {
            FileCategory::DataFile => &mut self.data_files,
            FileCategory::PositionDeleteFile => &mut self.position_delete_files,
            FileCategory::EqualityDeleteFile => &mut self.equality_delete_files,
            FileCategory::Manifest => &mut self.manifests,
            FileCategory::ManifestList => &mut self.manifest_lists,
            FileCategory::StatisticsFile => &mut self.statistics_files,
        }
    }

    /// Categories in deletion order: content files, then manifests, then manifest lists, then
    /// statistics files (leaf first: a crash never leaves metadata naming a deleted file).
    pub const DELETION_ORDER: [FileCategory; 6] = [
        FileCategory::DataFile,
        FileCategory::PositionDeleteFile,
        FileCategory::EqualityDeleteFile,
        FileCategory::Manifest,
        FileCategory::ManifestList,
        FileCategory::StatisticsFile,
    ];

    /// Every candidate with its category, in deletion order.
    pub fn deletion_order(&self) -> impl Iterator<Item = (FileCategory, &FileCandidate)> {
        Self::DELETION_ORDER
            .into_iter()
            .flat_map(move |c| self.files(c).iter().map(move |f| (c, f)))
    }

    /// How many files of each category.
    pub fn counts(&self) -> ExpiryFileCounts {
        let n = |c| i64::try_from(self.files(c).len()).unwrap_or(i64::MAX);
        ExpiryFileCounts {
            data_files: n(FileCategory::DataFile),
            position_delete_files: n(FileCategory::PositionDeleteFile),
            equality_delete_files: n(FileCategory::EqualityDeleteFile),
            manifest_files: n(FileCategory::Manifest),
            manifest_lists: n(FileCategory::ManifestList),
            statistics_files: n(FileCategory::StatisticsFile),
        }
    }

    /// Total number of candidates.
    pub fn len(&self) -> usize {
        Self::DELETION_ORDER
            .iter()
            .map(|c| self.files(*c).len())
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sum of the known sizes (saturating), and how many sizes are unknown.
    pub fn total_bytes(&self) -> (i64, usize) {
        self.deletion_order()
            .fold((0i64, 0usize), |(sum, unknown), (_, f)| match f.size {
                Some(size) => (sum.saturating_add(size.max(0)), unknown),
                None => (sum, unknown + 1),
            })
    }

    /// The candidates not strictly below `table_root_key` (expiry refuses to delete them: a file
    /// outside the location may belong to another table): how many, and the keys of the first
    /// `limit`, in deletion order.
    pub fn outside_location<'p>(
        &self,
        paths: &'p PathInterner,
        table_root_key: &str,
        limit: usize,
    ) -> (usize, Vec<&'p str>) {
        let mut count = 0;
        let mut first = Vec::new();
        for (_, f) in self.deletion_order() {
            let key = paths.resolve(f.path);
            let inside = key.is_some_and(|k| relative_path(table_root_key, k).is_some());
            if !inside {
                count += 1;
                if first.len() < limit {
                    first.push(key.unwrap_or("<unknown path id>"));
                }
            }
        }
        (count, first)
    }

    /// This decision without the manifests and manifest lists in `held`.
    pub fn without(&self, held: &HeldFiles) -> FileDecision {
        let mut out = self.clone();
        out.manifests.retain(|f| !held.manifests.contains(&f.path));
        out.manifest_lists
            .retain(|f| !held.manifest_lists.contains(&f.path));
        out
    }
}

/// Phase B: the keep set and the files to delete. `contents` must hold every manifest of
/// [`plan_manifest_reads`] (a missing one is a `LOGICAL_ERROR`: deciding without it is unsafe).
/// The whole-graph form of [`decide_candidates`], which the executor streams into.
pub fn decide_files(
    graph: &FileGraph,
    expired: &BTreeSet<SnapshotId>,
    contents: &ManifestContents,
) -> Result<FileDecision> {
    let plan = plan_manifest_reads(graph, expired);
    let mut live = PathSet::default();
    for manifest in &plan.retained_manifests {
        let entries = &read(contents, *manifest)?.entries;
        live.extend(
            entries
                .iter()
                .filter(|e| e.status.is_live())
                .map(|e| e.path),
        );
    }
    decide_candidates(graph, expired, &plan, |id| live.contains(&id), contents)
}

/// Phase B with the content keep set given as `live_kept` (true for a path some retained
/// manifest lists live). `candidates` must hold every candidate manifest of `plan`; it may omit
/// entries whose path `live_kept` holds (they can never be candidates). Lists, manifests and
/// statistics of retained snapshots are kept here from the graph.
pub fn decide_candidates(
    graph: &FileGraph,
    expired: &BTreeSet<SnapshotId>,
    plan: &ManifestReadPlan,
    live_kept: impl Fn(PathId) -> bool,
    candidates: &ManifestContents,
) -> Result<FileDecision> {
    for manifest in &plan.candidate_manifests {
        read(candidates, manifest.path)?;
    }
    let content = plan
        .candidate_manifests
        .iter()
        .filter_map(|m| candidates.get(&m.path))
        .flat_map(|c| c.entries.iter())
        .map(|e| (e.path, e.content, Some(e.file_size)));
    decide_with_content(graph, expired, plan, live_kept, content)
}

/// Phase B from the content paths that may go, in claim order (path, content type, size), the
/// content keep set given as `live_kept`: each path once, in the category of its first
/// appearance, unless kept; then the candidate manifests, lists and statistics of `plan`. Shared
/// by the full rule and the incremental cleanup ([`super::incremental`]).
pub fn decide_with_content(
    graph: &FileGraph,
    expired: &BTreeSet<SnapshotId>,
    plan: &ManifestReadPlan,
    live_kept: impl Fn(PathId) -> bool,
    content: impl IntoIterator<Item = (PathId, DataContent, Option<i64>)>,
) -> Result<FileDecision> {
    let mut out = Claims {
        keep: metadata_keep(graph, expired),
        live_kept,
        claimed: PathSet::default(),
        decision: FileDecision::default(),
    };
    for (path, data_content, size) in content {
        out.claim(FileCategory::of_content(data_content), path, size);
    }
    for manifest in &plan.candidate_manifests {
        out.claim(FileCategory::Manifest, manifest.path, Some(manifest.length));
    }
    let (_, expiring) = split(graph, expired);
    for s in &expiring {
        if let Some(list) = s.manifest_list {
            out.claim(FileCategory::ManifestList, list, s.manifest_list_size);
        }
    }
    for st in &graph.statistics {
        if expired.contains(&st.snapshot_id) {
            out.claim(FileCategory::StatisticsFile, st.path, st.size);
        }
    }
    Ok(out.decision)
}

/// Candidates being collected: each path once, none from the keep set.
struct Claims<F> {
    keep: PathSet,
    live_kept: F,
    claimed: PathSet,
    decision: FileDecision,
}

impl<F: Fn(PathId) -> bool> Claims<F> {
    fn claim(&mut self, category: FileCategory, path: PathId, size: Option<i64>) {
        if !self.keep.contains(&path) && !(self.live_kept)(path) && self.claimed.insert(path) {
            self.decision
                .files_mut(category)
                .push(FileCandidate { path, size });
        }
    }
}

fn read(contents: &ManifestContents, manifest: PathId) -> Result<&ManifestEntries> {
    contents.get(&manifest).ok_or_else(|| {
        Error::logical(format!(
            "manifest #{} is needed to decide which files expiry deletes but was not read",
            manifest.index()
        ))
    })
}

/// The keep set's metadata part: manifest lists and manifests of retained snapshots, and the
/// statistics files whose entries stay in metadata.
fn metadata_keep(graph: &FileGraph, expired: &BTreeSet<SnapshotId>) -> PathSet {
    let (retained, _) = split(graph, expired);
    let mut keep = PathSet::default();
    for s in &retained {
        keep.extend(s.manifest_list);
        keep.extend(s.manifests.iter().map(|m| m.path));
    }
    keep.extend(
        graph
            .statistics
            .iter()
            .filter(|st| !expired.contains(&st.snapshot_id))
            .map(|st| st.path),
    );
    keep
}

/// Manifests and manifest lists of a decision that must not be deleted after some deletes failed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeldFiles {
    pub manifests: BTreeSet<PathId>,
    pub manifest_lists: BTreeSet<PathId>,
}

/// After deletes of `failed` paths failed: every candidate manifest that names a failed path (any
/// entry status) is held (a candidate manifest `contents` lacks, not read, is held when a content
/// file failed), and every candidate manifest list of an expired snapshot that names a
/// held or failed manifest is held, so that nothing that survived is left without the file that
/// names it (leaf-first order). Call it after each deletion stage with that stage's failures.
pub fn after_failed_deletes(
    graph: &FileGraph,
    expired: &BTreeSet<SnapshotId>,
    decision: &FileDecision,
    contents: &ManifestContents,
    failed: &HashSet<PathId>,
) -> HeldFiles {
    let mut held = HeldFiles::default();
    if failed.is_empty() {
        return held;
    }
    let content_failed = decision
        .deletion_order()
        .any(|(c, f)| c < FileCategory::Manifest && failed.contains(&f.path));
    for m in &decision.manifests {
        let names_failed = match contents.get(&m.path) {
            Some(c) => c.entries.iter().any(|e| failed.contains(&e.path)),
            // Not read (the incremental cleanup skips candidates that delete nothing): it may
            // name a content file that failed, so it stays.
            None => content_failed,
        };
        if names_failed {
            held.manifests.insert(m.path);
        }
    }
    let candidate_lists: PathSet = decision.manifest_lists.iter().map(|f| f.path).collect();
    let (_, expiring) = split(graph, expired);
    for s in expiring {
        let Some(list) = s.manifest_list.filter(|l| candidate_lists.contains(l)) else {
            continue;
        };
        let blocked = s
            .manifests
            .iter()
            .any(|m| failed.contains(&m.path) || held.manifests.contains(&m.path));
        if blocked {
            held.manifest_lists.insert(list);
        }
    }
    held
}

#[cfg(test)]
#[path = "keepset_tests.rs"]
mod tests;
