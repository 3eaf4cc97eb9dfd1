//! The Iceberg domain model maintenance works on: snapshots, refs, statistics files, manifest-list
//! entries and manifest entries, as typed values. Parsing and writing live elsewhere
//! (`metadata/` for `metadata.json`, `avro/` + `manifest*.rs` for Avro); this file only says what
//! the things are. Field names follow the Iceberg spec (<https://iceberg.apache.org/spec/>).

pub use super::summary::Summary;

/// A snapshot id (`snapshot-id`).
pub type SnapshotId = i64;

/// The table format version (`format-version`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FormatVersion {
    V1 = 1,
    V2 = 2,
    V3 = 3,
}

impl FormatVersion {
    /// The number as written in metadata.
    pub fn number(self) -> i32 {
        self as i32
    }

    /// From the number in metadata; `None` for versions icetrim does not know.
    pub fn from_number(n: i64) -> Option<Self> {
        match n {
            1 => Some(FormatVersion::V1),
            2 => Some(FormatVersion::V2),
            3 => Some(FormatVersion::V3),
            _ => None,
        }
    }
}

/// One entry of `snapshots`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub snapshot_id: SnapshotId,
    pub parent_snapshot_id: Option<SnapshotId>,
    /// `sequence-number`; 0 when absent (v1).
    pub sequence_number: i64,
    pub timestamp_ms: i64,
    /// `manifest-list` (v2+, and most v1 writers).
    pub manifest_list: Option<String>,
    /// v1 inline `manifests` (used only when `manifest_list` is absent).
    pub manifests: Vec<String>,
    /// `summary` as strings (`operation` included).
    pub summary: Summary,
    pub schema_id: Option<i32>,
    /// v3 `first-row-id`.
    pub first_row_id: Option<i64>,
    /// v3 `added-rows`.
    pub added_rows: Option<i64>,
}

impl Snapshot {
    /// `summary.operation`, if present.
    pub fn operation(&self) -> Option<&str> {
        self.summary.get("operation")
    }
}

/// Branch or tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RefKind {
    Branch,
    Tag,
}

impl RefKind {
    /// `"branch"` or `"tag"`, as in metadata.
    pub fn as_str(self) -> &'static str {
        match self {
            RefKind::Branch => "branch",
            RefKind::Tag => "tag",
        }
    }
}

/// One entry of `refs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotRef {
    pub name: String,
    pub kind: RefKind,
    pub snapshot_id: SnapshotId,
    /// Branches only.
    pub min_snapshots_to_keep: Option<i32>,
    /// Branches only.
    pub max_snapshot_age_ms: Option<i64>,
    pub max_ref_age_ms: Option<i64>,
}

/// The name of the main branch.
pub const MAIN_BRANCH: &str = "main";

/// An entry of `statistics` or `partition-statistics`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatisticsFile {
    pub snapshot_id: SnapshotId,
    /// `statistics-path`.
    pub path: String,
    /// `file-size-in-bytes`, when given.
    pub file_size_in_bytes: Option<i64>,
    /// True for `partition-statistics`, false for `statistics` (Puffin).
    pub partition_statistics: bool,
}

/// An entry of `snapshot-log`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotLogEntry {
    pub snapshot_id: SnapshotId,
    pub timestamp_ms: i64,
}

/// An entry of `metadata-log`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataLogEntry {
    pub metadata_file: String,
    pub timestamp_ms: i64,
}

/// What a manifest holds (`content` of a manifest-list entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ManifestContent {
    Data = 0,
    Deletes = 1,
}

/// What a content file holds (`data_file.content`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DataContent {
    Data = 0,
    PositionDeletes = 1,
    EqualityDeletes = 2,
}

impl DataContent {
    /// From the integer in Avro; `None` when out of range.
    pub fn from_i32(v: i32) -> Option<Self> {
        match v {
            0 => Some(DataContent::Data),
            1 => Some(DataContent::PositionDeletes),
            2 => Some(DataContent::EqualityDeletes),
            _ => None,
        }
    }
}

/// `status` of a manifest entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryStatus {
    Existing = 0,
    Added = 1,
    Deleted = 2,
}

impl EntryStatus {
    /// From the integer in Avro; `None` when out of range.
    pub fn from_i32(v: i32) -> Option<Self> {
        match v {
            0 => Some(EntryStatus::Existing),
            1 => Some(EntryStatus::Added),
            2 => Some(EntryStatus::Deleted),
            _ => None,
        }
    }

    /// ADDED or EXISTING: the file is part of the snapshot's table state.
    pub fn is_live(self) -> bool {
        !matches!(self, EntryStatus::Deleted)
    }
}
