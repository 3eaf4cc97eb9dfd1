//! Manifests: the entries (content files) of one manifest, read fast (projected) or fully, and
//! sequence-number / row-id inheritance from the manifest-list entry.
//!
//! Inheritance (Iceberg spec, "Sequence Number Inheritance" and "First Row ID Inheritance"): a null
//! `snapshot_id` takes the manifest's `added_snapshot_id`; a null `sequence_number` or
//! `file_sequence_number` takes the manifest's `sequence_number` when the entry is ADDED, or when the
//! manifest's sequence number is 0 (v1: every sequence number is 0). In v3, when the manifest has a
//! `first_row_id`, a live (ADDED or EXISTING) data entry with a null `first_row_id` gets the manifest's
//! `first_row_id` plus the record counts of the earlier such entries of the same manifest (spec "First
//! Row ID Inheritance"; Java's `ManifestReader` also skips DELETED entries). Readers return raw values;
//! callers apply [`inherit`] with the manifest-list entry in hand.

use std::collections::BTreeMap;

use apache_avro::types::Value;

pub use crate::iceberg::partition_tuple::{PartitionTuple, PartitionValue};

pub use crate::iceberg::avro::manifest_writer::{ManifestWriter, NewManifest, WrittenManifest};

use crate::error::Result;
use crate::iceberg::avro::container::{BlockPosition, Container};
use crate::iceberg::avro::entry_decode::decode_entry;
use crate::iceberg::avro::projection::EntryPlan;
use crate::iceberg::avro::schema::Record;
use crate::iceberg::manifest_list::ManifestFile;
use crate::iceberg::spec::{DataContent, EntryStatus, FormatVersion, ManifestContent, SnapshotId};

/// A projected entry borrowed from the decoded block (the hot path of maintenance).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryRef<'a> {
    pub status: EntryStatus,
    pub snapshot_id: Option<SnapshotId>,
    pub sequence_number: Option<i64>,
    pub file_sequence_number: Option<i64>,
    pub content: DataContent,
    pub file_path: &'a str,
    pub record_count: i64,
    pub file_size_in_bytes: i64,
    pub first_row_id: Option<i64>,
    pub referenced_data_file: Option<&'a str>,
}

/// A projected entry, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectedEntry {
    pub status: EntryStatus,
    pub snapshot_id: Option<SnapshotId>,
    pub sequence_number: Option<i64>,
    pub file_sequence_number: Option<i64>,
    pub content: DataContent,
    pub file_path: String,
    pub record_count: i64,
    pub file_size_in_bytes: i64,
    pub first_row_id: Option<i64>,
    pub referenced_data_file: Option<String>,
}

impl EntryRef<'_> {
    /// An owned copy.
    pub fn to_owned_entry(&self) -> ProjectedEntry {
        ProjectedEntry {
            status: self.status,
            snapshot_id: self.snapshot_id,
            sequence_number: self.sequence_number,
            file_sequence_number: self.file_sequence_number,
            content: self.content,
            file_path: self.file_path.to_string(),
            record_count: self.record_count,
            file_size_in_bytes: self.file_size_in_bytes,
            first_row_id: self.first_row_id,
            referenced_data_file: self.referenced_data_file.map(str::to_string),
        }
    }
}

/// A content file as a manifest describes it, every field kept.
#[derive(Debug, Clone, PartialEq)]
pub struct DataFile {
    pub content: DataContent,
    pub file_path: String,
    pub file_format: String,
    /// The partition tuple (empty when unpartitioned).
    pub partition: PartitionTuple,
    pub record_count: i64,
    pub file_size_in_bytes: i64,
    /// v1 only.
    pub block_size_in_bytes: Option<i64>,
    pub column_sizes: Option<BTreeMap<i32, i64>>,
    pub value_counts: Option<BTreeMap<i32, i64>>,
    pub null_value_counts: Option<BTreeMap<i32, i64>>,
    pub nan_value_counts: Option<BTreeMap<i32, i64>>,
    pub lower_bounds: Option<BTreeMap<i32, Vec<u8>>>,
    pub upper_bounds: Option<BTreeMap<i32, Vec<u8>>>,
    pub key_metadata: Option<Vec<u8>>,
    pub split_offsets: Option<Vec<i64>>,
    pub equality_ids: Option<Vec<i32>>,
    pub sort_order_id: Option<i32>,
    pub first_row_id: Option<i64>,
    pub referenced_data_file: Option<String>,
    pub content_offset: Option<i64>,
    pub content_size_in_bytes: Option<i64>,
    /// Fields of `data_file` this type does not name, as decoded: opaque Avro values, kept only
    /// to be written back unchanged.
    pub extra: Vec<(String, Value)>,
}

impl DataFile {
    /// A data file with the required fields and everything optional empty.
    pub fn new(
        content: DataContent,
        file_path: impl Into<String>,
        record_count: i64,
        file_size_in_bytes: i64,
    ) -> Self {
        DataFile {
            content,
            file_path: file_path.into(),
            file_format: "PARQUET".into(),
            partition: PartitionTuple::default(),
            record_count,
            file_size_in_bytes,
            block_size_in_bytes: None,
            column_sizes: None,
            value_counts: None,
            null_value_counts: None,
            nan_value_counts: None,
            lower_bounds: None,
            upper_bounds: None,
            key_metadata: None,
            split_offsets: None,
            equality_ids: None,
            sort_order_id: None,
            first_row_id: None,
            referenced_data_file: None,
            content_offset: None,
            content_size_in_bytes: None,
            extra: Vec::new(),
        }
    }
}

/// A manifest entry, every field kept.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestEntry {
    pub status: EntryStatus,
    pub snapshot_id: Option<SnapshotId>,
    pub sequence_number: Option<i64>,
    pub file_sequence_number: Option<i64>,
    pub data_file: DataFile,
    /// Fields of `manifest_entry` this type does not name, as decoded.
    pub extra: Vec<(String, Value)>,
}

/// A whole manifest: header and entries.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// Header metadata, in file order (includes `avro.schema` and `avro.codec`).
    pub metadata: Vec<(String, Vec<u8>)>,
    /// The writer schema, verbatim (reuse it to rewrite the manifest).
    pub schema_json: String,
    pub entries: Vec<ManifestEntry>,
}

impl Manifest {
    /// A header value as text.
    pub fn meta_str(&self, key: &str) -> Option<&str> {
        self.metadata
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| std::str::from_utf8(v).ok())
    }

    /// `format-version` from the header (v1 when absent or unknown).
    pub fn format_version(&self) -> FormatVersion {
        self.meta_str("format-version")
            .and_then(|v| v.parse().ok())
            .and_then(FormatVersion::from_number)
            .unwrap_or(FormatVersion::V1)
    }

    /// `content` from the header (`deletes` or data).
    pub fn content(&self) -> ManifestContent {
        match self.meta_str("content") {
            Some("deletes") => ManifestContent::Deletes,
            _ => ManifestContent::Data,
        }
    }

    /// `partition-spec-id` from the header.
    pub fn partition_spec_id(&self) -> Option<i32> {
        self.meta_str("partition-spec-id")
            .and_then(|v| v.parse().ok())
    }
}

/// Calls `each` for every entry of the manifest, projected; nothing is allocated per entry.
pub fn for_each_projected(
    bytes: &[u8],
    file_name: &str,
    mut each: impl FnMut(EntryRef<'_>),
) -> Result<()> {
    let container = Container::open(bytes, file_name)?;
    let plan = EntryPlan::new(&container.header.schema).map_err(|m| container.error(m))?;
    container.for_each_datum(|c| {
        each(plan.decode(c)?);
        Ok(())
    })
}

/// Every entry of the manifest, projected (see [`EntryRef`]).
pub fn read_manifest_projected(bytes: &[u8], file_name: &str) -> Result<Vec<ProjectedEntry>> {
    let mut out = Vec::new();
    for_each_projected(bytes, file_name, |e| out.push(e.to_owned_entry()))?;
    Ok(out)
}

/// Entries of the manifest, every field kept, from the block at `from` on: whole blocks until at
/// least `at_least` entries are read, and where the next block starts (`None` at the end). A large
/// manifest (a merged one holds 50,000 entries and more) is so read a part at a time.
pub fn read_manifest_part(
    bytes: &[u8],
    file_name: &str,
    from: BlockPosition,
    at_least: usize,
) -> Result<(Vec<ManifestEntry>, Option<BlockPosition>)> {
    let container = Container::open(bytes, file_name)?;
    let record = entry_record(&container)?;
    let mut entries = Vec::new();
    let next = container.for_each_datum_from(
        from,
        |c| {
            entries.push(decode_entry(c, record)?);
            Ok(())
        },
        |read| read >= at_least,
    )?;
    Ok((entries, next))
}

/// The record schema of a manifest's entries, checked to be one icetrim reads.
fn entry_record<'c>(container: &'c Container<'_>) -> Result<&'c std::sync::Arc<Record>> {
    EntryPlan::new(&container.header.schema).map_err(|m| container.error(m))?;
    container
        .header
        .schema
        .as_record()
        .ok_or_else(|| container.error("manifest schema is not a record"))
}

/// The whole manifest, every field of every entry kept.
pub fn read_manifest(bytes: &[u8], file_name: &str) -> Result<Manifest> {
    let container = Container::open(bytes, file_name)?;
    // Shared, not borrowed: the header is moved out below.
    let record = std::sync::Arc::clone(entry_record(&container)?);
    let mut entries = Vec::new();
    container.for_each_datum(|c| {
        entries.push(decode_entry(c, &record)?);
        Ok(())
    })?;
    let header = container.header;
    Ok(Manifest {
        metadata: header.metadata,
        schema_json: header.schema_json,
        entries,
    })
}

/// The fields inheritance reads and fills.
pub trait Inheritable {
    fn status(&self) -> EntryStatus;
    fn content(&self) -> DataContent;
    fn record_count(&self) -> i64;
    /// `(snapshot_id, sequence_number, file_sequence_number, first_row_id)`.
    fn inherited_slots(&mut self) -> [&mut Option<i64>; 4];
}

impl Inheritable for ProjectedEntry {
    fn status(&self) -> EntryStatus {
        self.status
    }
    fn content(&self) -> DataContent {
        self.content
    }
    fn record_count(&self) -> i64 {
        self.record_count
    }
    fn inherited_slots(&mut self) -> [&mut Option<i64>; 4] {
        [
            &mut self.snapshot_id,
            &mut self.sequence_number,
            &mut self.file_sequence_number,
            &mut self.first_row_id,
        ]
    }
}

impl Inheritable for ManifestEntry {
    fn status(&self) -> EntryStatus {
        self.status
    }
    fn content(&self) -> DataContent {
        self.data_file.content
    }
    fn record_count(&self) -> i64 {
        self.data_file.record_count
    }
    fn inherited_slots(&mut self) -> [&mut Option<i64>; 4] {
        let d = &mut self.data_file;
        [
            &mut self.snapshot_id,
            &mut self.sequence_number,
            &mut self.file_sequence_number,
            &mut d.first_row_id,
        ]
    }
}

/// Fills inherited fields of the entries of one manifest (in file order) from its list entry.
pub fn inherit<E: Inheritable>(entries: &mut [E], manifest: &ManifestFile) {
    let mut next_row_id = manifest.first_row_id;
    inherit_part(entries, manifest, &mut next_row_id);
}

/// [`inherit`] for a part of a manifest's entries read in order: `next_row_id` starts as the list
/// entry's `first_row_id` and carries from one part to the next.
pub fn inherit_part<E: Inheritable>(
    entries: &mut [E],
    manifest: &ManifestFile,
    next_row_id: &mut Option<i64>,
) {
    for e in entries {
        let added = e.status() == EntryStatus::Added;
        let takes_sequence = added || manifest.sequence_number == 0;
        let assigns_row_id = e.status().is_live() && e.content() == DataContent::Data;
        let records = e.record_count();
        let [
            snapshot_id,
            sequence_number,
            file_sequence_number,
            first_row_id,
        ] = e.inherited_slots();
        snapshot_id.get_or_insert(manifest.added_snapshot_id);
        if takes_sequence {
            sequence_number.get_or_insert(manifest.sequence_number);
            file_sequence_number.get_or_insert(manifest.sequence_number);
        }
        if let (true, None, Some(next)) = (assigns_row_id, *first_row_id, *next_row_id) {
            *first_row_id = Some(next);
            *next_row_id = Some(next.saturating_add(records.max(0)));
        }
    }
}
