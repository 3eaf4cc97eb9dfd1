//! The generator's in-memory table state: files (named by a 128-bit id, so a million of them cost
//! no string allocations until written), manifests with their entries and list entry, and branch
//! heads that share manifests by `Arc` (a fork or a tag costs one vector of pointers).

use std::sync::Arc;

use crate::iceberg::manifest_list::ManifestFile;
use crate::iceberg::spec::{DataContent, EntryStatus, ManifestContent, SnapshotId};
use crate::iceberg::txn::summary::{Counted, Tally};

/// One content file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileRec {
    pub id: u128,
    pub content: DataContent,
    pub records: i64,
    pub size: i64,
    /// Data and file sequence number (0 in v1).
    pub seq: i64,
    pub first_row_id: Option<i64>,
    /// Position deletes: the data file they apply to.
    pub referenced: Option<u128>,
    /// The value of the identity partition `part` (partitioned tables only; a position delete
    /// file has its data file's).
    pub part: Option<i32>,
}

impl FileRec {
    pub fn counted(&self) -> Counted {
        Counted {
            content: self.content,
            record_count: self.records,
            file_size_in_bytes: self.size,
        }
    }
}

/// A manifest entry: the file, its status and the snapshot that added it (or, DELETED, removed it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    pub status: EntryStatus,
    pub snapshot_id: SnapshotId,
    pub file: FileRec,
    /// Written with null sequence numbers and row id (inherited): ADDED by the manifest's snapshot.
    pub inherits: bool,
}

/// A written manifest.
#[derive(Debug)]
pub(crate) struct Manifest {
    pub list_entry: ManifestFile,
    pub entries: Vec<Entry>,
}

impl Manifest {
    pub fn content(&self) -> ManifestContent {
        self.list_entry.content
    }

    pub fn live(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|e| e.status.is_live())
    }
}

/// The state of one branch (or of the snapshot a tag names).
#[derive(Debug, Clone, Default)]
pub(crate) struct Head {
    pub snapshot_id: Option<SnapshotId>,
    /// The manifest list, newest first.
    pub manifests: Vec<Arc<Manifest>>,
    pub totals: Tally,
}

impl Head {
    pub fn live_files(&self) -> impl Iterator<Item = &FileRec> {
        self.manifests
            .iter()
            .flat_map(|m| m.live().map(|e| &e.file))
    }
}

/// Name of the partitioned tables' partition field (identity of the `part` column, field id 3).
pub(crate) const PARTITION_NAME: &str = "part";

/// Paths of the generator's files under a table location.
#[derive(Debug, Clone)]
pub(crate) struct Paths {
    pub location: String,
}

impl Paths {
    pub fn new(location: &str) -> Self {
        Paths {
            location: location.trim_end_matches('/').to_string(),
        }
    }

    pub fn file(&self, f: &FileRec) -> String {
        self.of(f.id, f.content, f.part)
    }

    /// A file's path: under `data/`, in the partition folder `data/part=<value>/` when the table
    /// is partitioned (as Java and pyiceberg lay files out).
    pub fn of(&self, id: u128, content: DataContent, part: Option<i32>) -> String {
        let u = uuid::Uuid::from_u128(id);
        let folder = match part {
            Some(p) => format!("{}/data/{PARTITION_NAME}={p}", self.location),
            None => format!("{}/data", self.location),
        };
        match content {
            DataContent::Data => format!("{folder}/00000-0-{u}.parquet"),
            _ => format!("{folder}/00000-0-{u}-deletes.parquet"),
        }
    }

    pub fn metadata(&self, name: &str) -> String {
        format!("{}/metadata/{name}", self.location)
    }
}
