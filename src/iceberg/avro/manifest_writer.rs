//! Writing a manifest: a new one from the table's schema and partition spec, or a rewrite that reuses
//! an existing manifest's writer schema and header verbatim (so partition types and fields we do not
//! know survive). The writer counts entries per status and the partition summaries, which the caller
//! needs for the manifest-list entry ([`WrittenManifest::manifest_file`]).
//!
//! Header keys (as Java and pyiceberg write them): `schema` (table schema JSON), `partition-spec`
//! (JSON array of partition fields), `partition-spec-id`, `format-version`, and `content`
//! (`data`/`deletes`) from v2 on.

use serde_json::Value as Json;

use super::codec::Codec;
use super::container::ContainerWriter;
use super::encode::encode_value;
use super::entry_value::entry_to_value;
use super::iceberg_schema::manifest_entry_schema;
use super::partition::{SummaryBuilder, partition_fields, partition_record};
use super::schema::{Node, parse_schema};
use crate::error::{Error, Result};
use crate::iceberg::manifest::{Manifest, ManifestEntry};
use crate::iceberg::manifest_list::{FieldSummary, ManifestFile};
use crate::iceberg::spec::{DataContent, FormatVersion, ManifestContent, SnapshotId};

/// What a new manifest is for.
#[derive(Debug, Clone)]
pub struct NewManifest<'a> {
    pub format_version: FormatVersion,
    pub content: ManifestContent,
    /// The Iceberg table schema JSON (one element of `schemas` in metadata).
    pub table_schema_json: &'a str,
    /// The partition spec JSON: an object with `spec-id` and `fields`, or the bare fields array.
    pub partition_spec_json: &'a str,
    pub partition_spec_id: i32,
    pub codec: Codec,
}

/// Builds one manifest in memory.
#[derive(Debug)]
pub struct ManifestWriter {
    container: ContainerWriter,
    node: Node,
    format_version: FormatVersion,
    content: ManifestContent,
    partition_spec_id: i32,
    summary: Option<SummaryBuilder>,
    counts: [(i32, i64); 3],
    min_sequence_number: Option<i64>,
}

/// A finished manifest and what its manifest-list entry needs.
#[derive(Debug, Clone, PartialEq)]
pub struct WrittenManifest {
    pub bytes: Vec<u8>,
    pub partition_spec_id: i32,
    pub content: ManifestContent,
    /// (files, rows) for EXISTING, ADDED, DELETED entries.
    pub counts: [(i32, i64); 3],
    /// Smallest sequence number of a live entry, when any entry carries one.
    pub min_sequence_number: Option<i64>,
    pub partitions: Option<Vec<FieldSummary>>,
}

fn content_name(content: ManifestContent) -> &'static str {
    match content {
        ManifestContent::Data => "data",
        ManifestContent::Deletes => "deletes",
    }
}

impl ManifestWriter {
    /// A new manifest with Iceberg's schema for the format version and the spec's partition type.
    pub fn new(opts: &NewManifest<'_>) -> Result<Self> {
        if opts.format_version == FormatVersion::V1 && opts.content == ManifestContent::Deletes {
            return Err(Error::bad_arguments(
                "format version 1 has no delete manifests",
            ));
        }
        let fields = partition_fields(opts.partition_spec_json, opts.table_schema_json)?;
        let schema_json = manifest_entry_schema(opts.format_version, partition_record(&fields)?);
        let spec: Json = serde_json::from_str(opts.partition_spec_json)
            .map_err(|e| Error::bad_arguments(format!("partition spec: {e}")))?;
        let spec_fields = spec.get("fields").cloned().unwrap_or(spec);
        let mut metadata = vec![
            ("schema".to_string(), opts.table_schema_json.to_string()),
            ("partition-spec".to_string(), spec_fields.to_string()),
            (
                "partition-spec-id".to_string(),
                opts.partition_spec_id.to_string(),
            ),
            (
                "format-version".to_string(),
                opts.format_version.number().to_string(),
            ),
        ];
        if opts.format_version >= FormatVersion::V2 {
            metadata.push((
                "content".to_string(),
                content_name(opts.content).to_string(),
            ));
        }
        let metadata: Vec<_> = metadata
            .into_iter()
            .map(|(k, v)| (k, v.into_bytes()))
            .collect();
        let mut writer = Self::with_schema(&schema_json, &metadata, opts.codec)?;
        writer.summary = Some(SummaryBuilder::new(&fields));
        Ok(writer)
    }

    /// A rewrite of `manifest`: same writer schema and header, entries supplied anew.
    pub fn rewrite_of(manifest: &Manifest, codec: Codec) -> Result<Self> {
        let mut writer = Self::with_schema(&manifest.schema_json, &manifest.metadata, codec)?;
        if let (Some(spec), Some(schema)) = (
            manifest.meta_str("partition-spec"),
            manifest.meta_str("schema"),
        ) {
            writer.summary = partition_fields(spec, schema)
                .ok()
                .map(|f| SummaryBuilder::new(&f));
        }
        Ok(writer)
    }

    /// The content type when the header does not say it (ClickHouse writes delete manifests
    /// without a `content` key; the manifest-list entry says `deletes`).
    pub fn with_content(mut self, content: ManifestContent) -> Self {
        self.content = content;
        self
    }

    /// A manifest with this writer schema and header metadata (`avro.*` keys are replaced).
    pub fn with_schema(
        schema_json: &str,
        metadata: &[(String, Vec<u8>)],
        codec: Codec,
    ) -> Result<Self> {
        let node = parse_schema(schema_json)
            .map_err(|m| Error::bad_arguments(format!("manifest schema: {m}")))?;
        let meta = |key: &str| {
            metadata
                .iter()
                .find(|(k, _)| k == key)
                .and_then(|(_, v)| std::str::from_utf8(v).ok())
        };
        let format_version = meta("format-version")
            .and_then(|v| v.parse().ok())
            .and_then(FormatVersion::from_number)
            .unwrap_or(FormatVersion::V1);
        let content = match meta("content") {
            Some("deletes") => ManifestContent::Deletes,
            _ => ManifestContent::Data,
        };
        let partition_spec_id = meta("partition-spec-id")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        Ok(ManifestWriter {
            container: ContainerWriter::new(schema_json, metadata, codec),
            node,
            format_version,
            content,
            partition_spec_id,
            summary: None,
            counts: [(0, 0); 3],
            min_sequence_number: None,
        })
    }

    /// Appends one entry.
    pub fn add(&mut self, entry: &ManifestEntry) -> Result<()> {
        let path = &entry.data_file.file_path;
        let is_data = entry.data_file.content == DataContent::Data;
        if is_data != (self.content == ManifestContent::Data) {
            return Err(Error::bad_arguments(format!(
                "{path}: a {} manifest cannot hold a {:?} file",
                content_name(self.content),
                entry.data_file.content
            )));
        }
        if self.format_version == FormatVersion::V1 && entry.snapshot_id.is_none() {
            return Err(Error::bad_arguments(format!(
                "{path}: v1 manifest entries need a snapshot_id"
            )));
        }
        let value = entry_to_value(entry);
        self.container
            .append(|buf| encode_value(buf, &self.node, &value))
            .map_err(|e| Error::bad_arguments(format!("manifest entry {path}: {e}")))?;
        if self.container.block_full() {
            self.container.flush_block()?;
        }
        let slot = &mut self.counts[entry.status as usize];
        slot.0 += 1;
        slot.1 += entry.data_file.record_count;
        if entry.status.is_live()
            && let Some(seq) = entry.sequence_number
        {
            self.min_sequence_number = Some(self.min_sequence_number.map_or(seq, |m| m.min(seq)));
        }
        if let Some(summary) = &mut self.summary {
            summary.update(&entry.data_file.partition);
        }
        Ok(())
    }

    /// The finished file.
    pub fn finish(self) -> Result<WrittenManifest> {
        Ok(WrittenManifest {
            bytes: self.container.finish()?,
            partition_spec_id: self.partition_spec_id,
            content: self.content,
            counts: self.counts,
            min_sequence_number: self.min_sequence_number,
            partitions: self.summary.map(SummaryBuilder::finish),
        })
    }
}

impl WrittenManifest {
    /// The manifest-list entry for this manifest stored at `path`, added by `snapshot_id` with
    /// `sequence_number` (which also stands in for the minimum when no entry carries one).
    pub fn manifest_file(
        &self,
        path: impl Into<String>,
        snapshot_id: SnapshotId,
        sequence_number: i64,
    ) -> ManifestFile {
        let [existing, added, deleted] = self.counts;
        ManifestFile {
            manifest_path: path.into(),
            manifest_length: self.bytes.len() as i64,
            partition_spec_id: self.partition_spec_id,
            content: self.content,
            sequence_number,
            min_sequence_number: self.min_sequence_number.unwrap_or(sequence_number),
            added_snapshot_id: snapshot_id,
            added_files_count: Some(added.0),
            existing_files_count: Some(existing.0),
            deleted_files_count: Some(deleted.0),
            added_rows_count: Some(added.1),
            existing_rows_count: Some(existing.1),
            deleted_rows_count: Some(deleted.1),
            partitions: self.partitions.clone(),
            key_metadata: None,
            first_row_id: None,
        }
    }
}
