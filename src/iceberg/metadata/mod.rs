//! `metadata.json`, format versions 1, 2 and 3, read and edited losslessly.
//!
//! A [`TableMetadata`] keeps the file's JSON object as parsed (serde_json with `preserve_order` and
//! `arbitrary_precision`: member order and number text survive) next to a validated typed view
//! ([`view`]); the snapshots and the snapshot log, most of a long-lived table's file, are held as
//! compact JSON texts (slices of the file's bytes where it wrote them compactly) beside their typed
//! fields ([`snapshots`], [`held`]). Reads go through the view; edits (`edit.rs`) change
//! only the JSON members they touch and then rebuild the view, so every field icetrim does not
//! know — vendor keys, schemas, sort orders, encryption keys — is written back exactly as it was
//! read.

mod ancestry;
mod codec;
mod edit;
mod fields;
mod held;
mod snapshots;
mod view;

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Map, Value};

pub use ancestry::Ancestry;
pub use codec::{MetadataCompression, decode, decode_bytes};
pub use edit::{PREVIOUS_VERSIONS_MAX_PROPERTY, parse_previous_versions_max};
pub use view::{PartitionField, PartitionSpec};

use crate::error::Result;
use crate::iceberg::spec::{
    FormatVersion, MetadataLogEntry, Snapshot, SnapshotId, SnapshotLogEntry, SnapshotRef,
    StatisticsFile,
};
use snapshots::{DocumentIn, DocumentOut, SnapshotList, SnapshotLog};
use view::View;

/// Files at least this large are kept in the buffer they were read into (a reused read buffer
/// holds at most this much, so the buffer is at most about twice the file); smaller ones are copied
/// into a buffer of their own first.
const KEEP_READ_BUFFER_FROM: usize = 16 << 20;

/// A parsed metadata file: the original JSON object and its typed view, always in sync.
#[derive(Debug, Clone, PartialEq)]
pub struct TableMetadata {
    /// The file it was read from (or will be written to), for messages.
    file: String,
    /// Every member; `snapshots` and `snapshot-log`, when arrays, are empty placeholders for the
    /// two lists.
    json: Map<String, Value>,
    /// Shared between clones: edits other than snapshot edits do not copy it.
    snapshots: Arc<SnapshotList>,
    /// Shared between clones, as `snapshots`.
    snapshot_log: Arc<SnapshotLog>,
    view: View,
}

impl TableMetadata {
    /// Parse a metadata file's bytes (gzip is recognised by name or content). `file` names the file
    /// in errors. Malformed JSON, a missing or mistyped field, or an unknown format version is
    /// `INCORRECT_DATA` naming the file and the field's JSON path.
    pub fn parse(bytes: &[u8], file: &str) -> Result<Self> {
        Self::parse_bytes(Bytes::copy_from_slice(bytes), file)
    }

    /// [`Self::parse`] of bytes the metadata may keep: snapshot and log texts that the file wrote
    /// compactly stay slices of them (no second copy of most of the file).
    pub fn parse_bytes(bytes: Bytes, file: &str) -> Result<Self> {
        let mut text = decode_bytes(bytes, file)?;
        if text.len() < KEEP_READ_BUFFER_FROM {
            // A small file may sit in a larger reused read buffer, which its slices would keep.
            text = Bytes::copy_from_slice(&text);
        }
        let document = DocumentIn::parse(&text, file)?;
        let view = view::derive(&document.members, file)?;
        let snapshots =
            SnapshotList::from_texts(&document.snapshots, &text, view.format_version, file)?;
        let snapshot_log = snapshots::log_from_texts(&document.snapshot_log, &text, file)?;
        Ok(TableMetadata {
            file: file.to_string(),
            json: document.members,
            snapshots: Arc::new(snapshots),
            snapshot_log: Arc::new(snapshot_log),
            view,
        })
    }

    /// From an already parsed JSON object (the whole document, snapshots included).
    pub fn from_json(json: Map<String, Value>, file: &str) -> Result<Self> {
        let view = view::derive(&json, file)?;
        let (json, snapshots, snapshot_log) =
            snapshots::split_values(json, view.format_version, file)?;
        Ok(TableMetadata {
            file: file.to_string(),
            json,
            snapshots: Arc::new(snapshots),
            snapshot_log: Arc::new(snapshot_log),
            view,
        })
    }

    /// The JSON text, compact, members in their original order.
    pub fn to_json_bytes(&self) -> Vec<u8> {
        let document = DocumentOut {
            members: &self.json,
            snapshots: &self.snapshots,
            snapshot_log: &self.snapshot_log,
        };
        // Serialising JSON values into a vector cannot fail.
        document.to_vec().unwrap_or_default()
    }

    /// The bytes of a file with `compression`.
    pub fn to_file_bytes(&self, compression: MetadataCompression) -> Result<Vec<u8>> {
        compression.encode(&self.to_json_bytes(), &self.file)
    }

    /// The whole JSON object as it stands, built anew (the snapshots and log entries parsed back
    /// into values): for inspection and tests, not for hot paths.
    pub fn json(&self) -> Map<String, Value> {
        let mut json = self.json.clone();
        if let Some(slot @ Value::Array(_)) = json.get_mut(snapshots::SNAPSHOTS) {
            *slot = Value::Array(self.snapshots.items().to_values());
        }
        if let Some(slot @ Value::Array(_)) = json.get_mut(snapshots::SNAPSHOT_LOG) {
            *slot = Value::Array(self.snapshot_log.to_values());
        }
        json
    }

    /// Every member but the contents of `snapshots` and `snapshot-log` (each, when present as an
    /// array, is empty here): schemas, specs, refs and the rest, without copying.
    pub fn members(&self) -> &Map<String, Value> {
        &self.json
    }

    /// The file this metadata was read from (or is to be written to).
    pub fn file(&self) -> &str {
        &self.file
    }

    /// Rename the file this metadata is attributed to (after a commit).
    pub fn set_file(&mut self, file: &str) {
        self.file = file.to_string();
    }

    pub fn format_version(&self) -> FormatVersion {
        self.view.format_version
    }

    /// `table-uuid`; optional in v1 only.
    pub fn table_uuid(&self) -> Option<&str> {
        self.view.table_uuid.as_deref()
    }

    /// `location`, as written (ClickHouse writes a bare path with a trailing slash).
    pub fn location(&self) -> &str {
        &self.view.location
    }

    /// `current-snapshot-id`; `None` when absent, `null` or `-1`.
    pub fn current_snapshot_id(&self) -> Option<SnapshotId> {
        self.view.current_snapshot_id
    }

    /// The current snapshot, when there is one and it is listed.
    pub fn current_snapshot(&self) -> Option<&Snapshot> {
        self.current_snapshot_id().and_then(|id| self.snapshot(id))
    }

    pub fn last_sequence_number(&self) -> i64 {
        self.view.last_sequence_number
    }

    pub fn last_updated_ms(&self) -> i64 {
        self.view.last_updated_ms
    }

    /// v3 `next-row-id`.
    pub fn next_row_id(&self) -> Option<i64> {
        self.view.next_row_id
    }

    pub fn properties(&self) -> &BTreeMap<String, String> {
        &self.view.properties
    }

    pub fn property(&self, key: &str) -> Option<&str> {
        self.view.properties.get(key).map(String::as_str)
    }

    /// `snapshots`, in file order.
    pub fn snapshots(&self) -> &[Snapshot] {
        self.snapshots.snapshots()
    }

    pub fn snapshot(&self, id: SnapshotId) -> Option<&Snapshot> {
        self.snapshots.get(id)
    }

    /// Branches and tags in file order, with the implicit `main` of tables without one first.
    pub fn refs(&self) -> &[SnapshotRef] {
        &self.view.refs
    }

    pub fn ref_named(&self, name: &str) -> Option<&SnapshotRef> {
        self.view.refs.iter().find(|r| r.name == name)
    }

    pub fn snapshot_log(&self) -> &[SnapshotLogEntry] {
        self.snapshot_log.typed()
    }

    pub fn metadata_log(&self) -> &[MetadataLogEntry] {
        &self.view.metadata_log
    }

    /// `statistics` followed by `partition-statistics` (see [`StatisticsFile::partition_statistics`]).
    pub fn statistics(&self) -> &[StatisticsFile] {
        &self.view.statistics
    }

    pub fn partition_specs(&self) -> &[PartitionSpec] {
        &self.view.partition_specs
    }

    pub fn partition_spec(&self, spec_id: i32) -> Option<&PartitionSpec> {
        self.view
            .partition_specs
            .iter()
            .find(|s| s.spec_id == spec_id)
    }

    pub fn default_spec_id(&self) -> i32 {
        self.view.default_spec_id
    }

    /// The schemas as JSON (`schemas`, or the v1 legacy `schema`).
    pub fn schemas(&self) -> &[Value] {
        &self.view.schemas
    }

    pub fn current_schema_id(&self) -> i32 {
        self.view.current_schema_id
    }
}

#[cfg(test)]
mod tests;
