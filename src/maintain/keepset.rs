//! Which files `expire_snapshots` deletes (SPEC §3 "Files" and "Order"; seeds/000).
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
//!   which paths a manifest may list).
//! - **B** [`decide_files`], after reading those manifests: the keep set, and the candidates grouped
//!   by category, each path once, with sizes for EXPLAIN totals.
//!
//! A path is counted once, in the first category that claims it, in deletion order: content file,
//! manifest, manifest list, statistics file. A content path listed with several content types is
//! counted under the first one seen, walking candidate manifests in the order the expired snapshots
//! and their manifest lists give them, and each manifest's entries in order.
//!
//! Deletion order is leaf first ([`FileDecision::deletion_order`]); after failed deletes,
//! [`after_failed_deletes`] says which manifests and manifest lists must then be kept (a manifest
//! naming a file that could not be deleted, and a list naming such a manifest, stay — SPEC §3).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use crate::error::{Error, ErrorKind, Result};
use crate::iceberg::spec::{DataContent, EntryStatus, ManifestContent, SnapshotId};

/// An interned path key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PathId(u32);

impl PathId {
    /// The id's index in its interner.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Path keys ↔ [`PathId`]s; one allocation per distinct key, shared by both directions.
#[derive(Debug, Default, Clone)]
pub struct PathInterner {
    ids: HashMap<Arc<str>, PathId>,
    keys: Vec<Arc<str>>,
}

impl PathInterner {
    pub fn new() -> Self {
        Self::default()
    }

    /// The id of `key`, adding it if new. Fails only past 2^32 distinct keys.
    pub fn intern(&mut self, key: &str) -> Result<PathId> {
        if let Some(id) = self.ids.get(key) {
            return Ok(*id);
        }
        let id = u32::try_from(self.keys.len()).map_err(|_| {
            Error::new(
                ErrorKind::LimitExceeded,
                "more than 2^32 distinct file paths",
            )
        })?;
        let key: Arc<str> = Arc::from(key);
        self.keys.push(Arc::clone(&key));
        self.ids.insert(key, PathId(id));
        Ok(PathId(id))
    }

    /// The id of `key`, if interned.
    pub fn get(&self, key: &str) -> Option<PathId> {
        self.ids.get(key).copied()
    }

    /// The key of `id`; `None` for an id from another interner.
    pub fn resolve(&self, id: PathId) -> Option<&str> {
        self.keys.get(id.index()).map(|k| &**k)
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// A set of [`PathId`]s as a bitset: ids are dense, so membership is an index, not a hash.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathSet {
    words: Vec<u64>,
    len: usize,
}

impl PathSet {
    /// Add `id`; true when it was not there yet.
    pub fn insert(&mut self, id: PathId) -> bool {
        let (word, bit) = (id.index() / 64, 1u64 << (id.index() % 64));
        if word >= self.words.len() {
            self.words.resize(word + 1, 0);
        }
        match self.words.get_mut(word) {
            Some(w) if *w & bit == 0 => {
                *w |= bit;
                self.len += 1;
                true
            }
            _ => false,
        }
    }

    pub fn contains(&self, id: &PathId) -> bool {
        self.words
            .get(id.index() / 64)
            .is_some_and(|w| w & (1u64 << (id.index() % 64)) != 0)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Extend<PathId> for PathSet {
    fn extend<I: IntoIterator<Item = PathId>>(&mut self, ids: I) {
        for id in ids {
            self.insert(id);
        }
    }
}

impl FromIterator<PathId> for PathSet {
    fn from_iter<I: IntoIterator<Item = PathId>>(ids: I) -> Self {
        let mut set = PathSet::default();
        set.extend(ids);
        set
    }
}

/// A manifest as a manifest list (or a v1 snapshot's inline `manifests`) names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ManifestRef {
    pub path: PathId,
    /// `manifest_length`; 0 when unknown (v1 inline manifests).
    pub length: i64,
    pub content: ManifestContent,
    pub added_snapshot_id: Option<SnapshotId>,
}

/// One snapshot's files, from its manifest list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotFiles {
    pub snapshot_id: SnapshotId,
    pub manifest_list: Option<PathId>,
    /// Size of the manifest list file, when the caller knows it.
    pub manifest_list_size: Option<i64>,
    pub manifests: Vec<ManifestRef>,
}

/// An entry of `statistics` or `partition-statistics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatisticsRef {
    pub snapshot_id: SnapshotId,
    pub path: PathId,
    pub size: Option<i64>,
}

/// Every snapshot's files and every statistics entry of the table metadata.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileGraph {
    pub snapshots: Vec<SnapshotFiles>,
    pub statistics: Vec<StatisticsRef>,
}

/// One manifest entry: the content file it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryRef {
    pub path: PathId,
    pub content: DataContent,
    pub status: EntryStatus,
    /// `file_size_in_bytes`.
    pub file_size: i64,
}

/// The entries of one manifest that was read. A candidate manifest that is already gone is passed
/// as empty entries (its files cannot be found any more; orphan removal finds them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ManifestEntries {
    pub entries: Vec<EntryRef>,
}

/// Manifests read, by path.
pub type ManifestContents = HashMap<PathId, ManifestEntries>;

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

fn unique(ids: impl Iterator<Item = PathId>) -> Vec<PathId> {
    let mut seen = PathSet::default();
    ids.filter(|id| seen.insert(*id)).collect()
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

/// Counts per category, in the metric order of SPEC §3 "Result".
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
    /// The seven result rows of `expire_snapshots`, in ClickHouse 26.9's order.
    pub fn metrics(&self, dry_run: bool) -> [(&'static str, i64); 7] {
        [
            ("deleted_data_files_count", self.data_files),
            (
                "deleted_position_delete_files_count",
                self.position_delete_files,
            ),
            (
                "deleted_equality_delete_files_count",
                self.equality_delete_files,
            ),
            ("deleted_manifest_files_count", self.manifest_files),
            ("deleted_manifest_lists_count", self.manifest_lists),
            ("deleted_statistics_files_count", self.statistics_files),
            ("dry_run", i64::from(dry_run)),
        ]
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
    /// statistics files (leaf first, SPEC §3 "Order").
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
pub fn decide_files(
    graph: &FileGraph,
    expired: &BTreeSet<SnapshotId>,
    contents: &ManifestContents,
) -> Result<FileDecision> {
    let plan = plan_manifest_reads(graph, expired);
    let keep = keep_set(graph, expired, &plan, contents)?;
    let mut claimed = PathSet::default();
    let mut decision = FileDecision::default();
    let mut claim =
        |category: FileCategory, path: PathId, size: Option<i64>, d: &mut FileDecision| {
            if !keep.contains(&path) && claimed.insert(path) {
                d.files_mut(category).push(FileCandidate { path, size });
            }
        };
    for manifest in &plan.candidate_manifests {
        for e in &read(contents, manifest.path)?.entries {
            claim(
                FileCategory::of_content(e.content),
                e.path,
                Some(e.file_size),
                &mut decision,
            );
        }
    }
    for manifest in &plan.candidate_manifests {
        claim(
            FileCategory::Manifest,
            manifest.path,
            Some(manifest.length),
            &mut decision,
        );
    }
    let (_, expiring) = split(graph, expired);
    for s in &expiring {
        if let Some(list) = s.manifest_list {
            claim(
                FileCategory::ManifestList,
                list,
                s.manifest_list_size,
                &mut decision,
            );
        }
    }
    for st in graph
        .statistics
        .iter()
        .filter(|st| expired.contains(&st.snapshot_id))
    {
        claim(
            FileCategory::StatisticsFile,
            st.path,
            st.size,
            &mut decision,
        );
    }
    Ok(decision)
}

fn read(contents: &ManifestContents, manifest: PathId) -> Result<&ManifestEntries> {
    contents.get(&manifest).ok_or_else(|| {
        Error::logical(format!(
            "manifest #{} is needed to decide which files expiry deletes but was not read",
            manifest.index()
        ))
    })
}

fn keep_set(
    graph: &FileGraph,
    expired: &BTreeSet<SnapshotId>,
    plan: &ManifestReadPlan,
    contents: &ManifestContents,
) -> Result<PathSet> {
    let (retained, _) = split(graph, expired);
    let mut keep = PathSet::default();
    for s in &retained {
        keep.extend(s.manifest_list);
        keep.extend(s.manifests.iter().map(|m| m.path));
    }
    for manifest in &plan.retained_manifests {
        let entries = &read(contents, *manifest)?.entries;
        keep.extend(
            entries
                .iter()
                .filter(|e| e.status.is_live())
                .map(|e| e.path),
        );
    }
    keep.extend(
        graph
            .statistics
            .iter()
            .filter(|st| !expired.contains(&st.snapshot_id))
            .map(|st| st.path),
    );
    Ok(keep)
}

/// Manifests and manifest lists of a decision that must not be deleted after some deletes failed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeldFiles {
    pub manifests: BTreeSet<PathId>,
    pub manifest_lists: BTreeSet<PathId>,
}

/// After deletes of `failed` paths failed: every candidate manifest that names a failed path (any
/// entry status) is held, and every candidate manifest list of an expired snapshot that names a
/// held or failed manifest is held, so that nothing that survived is left without the file that
/// names it (SPEC §3 "Order"). Call it after each deletion stage with that stage's failures.
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
    for m in &decision.manifests {
        let names_failed = contents
            .get(&m.path)
            .is_some_and(|c| c.entries.iter().any(|e| failed.contains(&e.path)));
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
