//! Writing snapshots and editing refs: commits that add and remove files ([`prepare_commit`]),
//! ref and table operations ([`refs`]), each computed as new [`TableMetadata`] that the caller
//! commits through the one loop of [`crate::iceberg::commit::protocol`] ([`ChangesCommit`] for a
//! [`CommitRequest`]).
//!
//! A commit walks its parent's manifest list once (Iceberg Java `MergingSnapshotProducer` /
//! `ManifestFilterManager`, pyiceberg `_SnapshotProducer`): manifests that mention no removed path
//! are carried by reference, manifests that do are rewritten (see [`prepare`] for the rules), the new
//! files go into new manifests listed first. Nothing is written before the change set is validated.

pub mod create;
pub mod names;
pub mod prepare;
pub mod refs;
pub mod summary;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use crate::iceberg::avro::Codec;
use crate::iceberg::manifest::DataFile;
use crate::iceberg::metadata::TableMetadata;
use crate::iceberg::spec::{Snapshot, SnapshotId};

pub use prepare::{ChangesCommit, prepare_commit, prepare_commit_with};

/// The `operation` of a snapshot summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    /// Only adds data files.
    Append,
    /// Only removes files (or adds delete files).
    Delete,
    /// Adds and removes files, changing the table's rows.
    Overwrite,
    /// Rewrites files without changing the rows (compaction).
    Replace,
}

impl Operation {
    /// The summary value.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Append => "append",
            Operation::Delete => "delete",
            Operation::Overwrite => "overwrite",
            Operation::Replace => "replace",
        }
    }

    /// From the summary value.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "append" => Some(Operation::Append),
            "delete" => Some(Operation::Delete),
            "overwrite" => Some(Operation::Overwrite),
            "replace" => Some(Operation::Replace),
            _ => None,
        }
    }
}

/// What one snapshot adds and what it takes away.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileChanges {
    pub added_data: Vec<DataFile>,
    /// Position or equality delete files (v2+).
    pub added_deletes: Vec<DataFile>,
    /// Paths of live files (data or delete) the snapshot removes: their entries become DELETED.
    pub removed: Vec<String>,
}

impl FileChanges {
    pub fn is_empty(&self) -> bool {
        self.added_data.is_empty() && self.added_deletes.is_empty() && self.removed.is_empty()
    }

    pub fn removes(&self, path: &str) -> bool {
        self.removed.iter().any(|p| p == path)
    }
}

/// Where the new snapshot goes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Target {
    /// The current snapshot and `main`.
    #[default]
    Main,
    /// The head of this branch (created from the current snapshot when absent); `main` is [`Target::Main`].
    Branch(String),
    /// Added to `snapshots` only: not current, on no ref (write-audit-publish). Its parent is the
    /// current snapshot.
    Staged,
}

/// Choices of [`prepare_commit_with`].
#[derive(Debug, Clone)]
pub struct PrepareOptions {
    pub target: Target,
    /// The new snapshot's id; random when `None`.
    pub snapshot_id: Option<SnapshotId>,
    /// The snapshot's `timestamp-ms`; the clock when `None`.
    pub timestamp_ms: Option<i64>,
    /// Codec of the manifests and the manifest list written.
    pub codec: Codec,
    /// An explicit data `sequence_number` for the ADDED data entries (Java's `RewriteFiles`
    /// with a data sequence number: compaction writes the starting snapshot's, so deletes
    /// committed after it still apply to the new files); `None`: inherited (the new snapshot's).
    pub data_sequence_number: Option<i64>,
}

impl Default for PrepareOptions {
    fn default() -> Self {
        PrepareOptions {
            target: Target::Main,
            snapshot_id: None,
            timestamp_ms: None,
            codec: Codec::Deflate,
            data_sequence_number: None,
        }
    }
}

/// Everything [`ChangesCommit`] needs to (re)compute a commit.
#[derive(Debug, Clone)]
pub struct CommitRequest {
    pub operation: Operation,
    pub changes: FileChanges,
    pub extra_summary: Summary,
    pub options: PrepareOptions,
}

impl CommitRequest {
    /// A commit onto `main` with default options and no extra summary.
    pub fn new(operation: Operation, changes: FileChanges) -> Self {
        CommitRequest {
            operation,
            changes,
            extra_summary: Summary::new(),
            options: PrepareOptions::default(),
        }
    }
}

/// A snapshot written to storage but not committed.
#[derive(Debug, Clone)]
pub struct PreparedCommit {
    /// The table metadata with the snapshot added (and made current or put on its branch).
    pub metadata: TableMetadata,
    pub snapshot: Snapshot,
    /// Every file written: the new and rewritten manifests, then the manifest list.
    pub written: Vec<String>,
}

/// Extra summary entries, in key order.
pub type Summary = BTreeMap<String, String>;
