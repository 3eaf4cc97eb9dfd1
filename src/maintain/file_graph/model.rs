//! The file graph of a table, as data: each snapshot's manifest list and manifests, the entries
//! of manifests that were read, statistics entries. Paths are interned ids ([`PathId`]). Plain
//! types, no I/O: [`super::graph`] fills them from storage, the procedures decide on them.

use std::collections::HashMap;

use super::paths::{PathId, PathSet};
use crate::iceberg::spec::{DataContent, EntryStatus, ManifestContent, SnapshotId};

/// A manifest as a manifest list (or a v1 snapshot's inline `manifests`) names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ManifestRef {
    pub path: PathId,
    /// `manifest_length`; 0 when unknown (v1 inline manifests).
    pub length: i64,
    pub content: ManifestContent,
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

/// How many entries of each status a manifest holds, as its manifest list says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryCounts {
    pub added: i64,
    pub existing: i64,
    pub deleted: i64,
}

impl EntryCounts {
    /// ADDED + EXISTING: the files the manifest keeps live.
    pub fn live(&self) -> i64 {
        self.added.saturating_add(self.existing)
    }
}

/// What manifest lists say about one manifest besides its path: the snapshot that wrote it and
/// its entry counts (`None` when a list leaves a count out, as v1 lists may, or when two lists
/// disagree).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListedManifest {
    pub added_snapshot_id: SnapshotId,
    pub counts: Option<EntryCounts>,
}

/// Every snapshot's files and every statistics entry of the table metadata.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileGraph {
    pub snapshots: Vec<SnapshotFiles>,
    pub statistics: Vec<StatisticsRef>,
    /// Each manifest a manifest list names (v1 inline manifests have none).
    pub listed: HashMap<PathId, ListedManifest>,
}

impl FileGraph {
    /// Record what a list says about `manifest`; lists that disagree leave no counts.
    pub fn note_listed(&mut self, manifest: PathId, facts: ListedManifest) {
        let known = self.listed.entry(manifest).or_insert(facts);
        if *known != facts {
            known.counts = None;
        }
    }
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

/// Each id once, in first-seen order.
pub fn unique(ids: impl Iterator<Item = PathId>) -> Vec<PathId> {
    let mut seen = PathSet::default();
    ids.filter(|id| seen.insert(*id)).collect()
}
