//! `metadata.json`, format versions 1, 2 and 3, read and edited losslessly.
//!
//! A [`TableMetadata`] keeps the file's JSON object as parsed (serde_json with `preserve_order` and
//! `arbitrary_precision`: member order and number text survive) next to a validated typed view
//! ([`view`]); the snapshots, most of a long-lived table's file, are held as compact JSON texts
//! beside their typed fields ([`snapshots`]). Reads go through the view; edits (`edit.rs`) change
//! only the JSON members they touch and then rebuild the view, so every field icetrim does not
//! know — vendor keys, schemas, sort orders, encryption keys — is written back exactly as it was
//! read.

mod ancestry;
mod codec;
mod edit;
mod fields;
mod snapshots;
mod view;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value};

pub use ancestry::Ancestry;
pub use codec::{MetadataCompression, decode};
pub use edit::{PREVIOUS_VERSIONS_MAX_PROPERTY, parse_previous_versions_max};
pub use view::{PartitionField, PartitionSpec};

use crate::error::Result;
use crate::iceberg::spec::{
    FormatVersion, MetadataLogEntry, Snapshot, SnapshotId, SnapshotLogEntry, SnapshotRef,
    StatisticsFile,
};
use snapshots::{DocumentIn, DocumentOut, SnapshotList};
use view::View;

/// A parsed metadata file: the original JSON object and its typed view, always in sync.
#[derive(Debug, Clone, PartialEq)]
pub struct TableMetadata {
    /// The file it was read from (or will be written to), for messages.
    file: String,
    /// Every member; `snapshots`, when an array, is an empty placeholder for `snapshots`.
    json: Map<String, Value>,
    /// Shared between clones: edits other than snapshot edits do not copy it.
    snapshots: Arc<SnapshotList>,
    view: View,
}

impl TableMetadata {
    /// Parse a metadata file's bytes (gzip is recognised by name or content). `file` names the file
    /// in errors. Malformed JSON, a missing or mistyped field, or an unknown format version is
    /// `INCORRECT_DATA` naming the file and the field's JSON path.
    pub fn parse(bytes: &[u8], file: &str) -> Result<Self> {
        let text = decode(bytes, file)?;
        let document = DocumentIn::parse(&text, file)?;
        let view = view::derive(&document.members, file)?;
        let snapshots = SnapshotList::from_texts(&document.snapshots, view.format_version, file)?;
        Ok(TableMetadata {
            file: file.to_string(),
            json: document.members,
            snapshots: Arc::new(snapshots),
            view,
        })
    }

    /// From an already parsed JSON object (the whole document, snapshots included).
    pub fn from_json(json: Map<String, Value>, file: &str) -> Result<Self> {
        let view = view::derive(&json, file)?;
        let (json, snapshots) = snapshots::split_values(json, view.format_version, file)?;
        Ok(TableMetadata {
            file: file.to_string(),
            json,
            snapshots: Arc::new(snapshots),
            view,
        })
    }

    /// The JSON text, compact, members in their original order.
    pub fn to_json_bytes(&self) -> Vec<u8> {
        let document = DocumentOut {
            members: &self.json,
            snapshots: &self.snapshots,
        };
        // Serialising JSON values and valid JSON texts under string keys cannot fail.
        serde_json::to_vec(&document).unwrap_or_default()
    }

    /// The bytes of a file with `compression`.
    pub fn to_file_bytes(&self, compression: MetadataCompression) -> Result<Vec<u8>> {
        compression.encode(&self.to_json_bytes(), &self.file)
    }

    /// The whole JSON object as it stands, built anew (the snapshots parsed back into values):
    /// for inspection and tests, not for hot paths.
    pub fn json(&self) -> Map<String, Value> {
        let mut json = self.json.clone();
        if let Some(slot @ Value::Array(_)) = json.get_mut(snapshots::SNAPSHOTS) {
            *slot = Value::Array(self.snapshots.to_values());
        }
        json
    }

    /// Every member but the snapshots' contents (`snapshots`, when present as an array, is empty
    /// here): schemas, specs, refs and the rest, without copying.
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
        &self.view.snapshot_log
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
