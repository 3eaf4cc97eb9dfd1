//! Encoding the generator's manifests and manifest lists, and writing files concurrently: writes
//! are queued as futures and at most [`IN_FLIGHT`] run at once, so encoding the next snapshot
//! overlaps the storage round trips of the previous ones.

use std::collections::BTreeMap;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};

use super::model::{Entry, PARTITION_NAME, Paths};
use crate::error::Result;
use crate::iceberg::avro::Codec;
use crate::iceberg::manifest::{
    DataFile, ManifestEntry, ManifestWriter, NewManifest, PartitionTuple, PartitionValue,
    WrittenManifest,
};
use crate::iceberg::manifest_list::{ManifestFile, ManifestListMeta, write_manifest_list};
use crate::iceberg::spec::DataContent;
use crate::iceberg::spec::{FormatVersion, ManifestContent};
use crate::io::FileIO;

/// Writes in flight at most.
pub(crate) const IN_FLIGHT: usize = 64;

/// Field id of `file_path` in position delete files (its bounds name the data file).
const DELETE_FILE_PATH_ID: i32 = 2147483546;

/// Field id of the partition column `part` of partitioned tables.
const PARTITION_COLUMN_ID: i32 = 3;

/// Counts of what was written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Written {
    pub files: u64,
    pub bytes: u64,
    pub manifests: u64,
    pub manifest_lists: u64,
    pub manifest_entries: u64,
}

/// How a written manifest's list entry is credited, and the file's sync marker.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Credit {
    pub snapshot_id: i64,
    pub sequence_number: i64,
    pub first_row_id: Option<i64>,
    pub sync: [u8; 16],
}

pub(crate) struct Sink {
    io: FileIO,
    pending: FuturesUnordered<BoxFuture<'static, Result<()>>>,
    pub version: FormatVersion,
    pub codec: Codec,
    schema_json: String,
    spec_json: String,
    pub paths: Paths,
    pub written: Written,
}

impl Sink {
    pub fn new(
        io: &FileIO,
        version: FormatVersion,
        codec: Codec,
        schema_json: String,
        spec_json: String,
        paths: Paths,
    ) -> Self {
        Sink {
            io: io.clone(),
            pending: FuturesUnordered::new(),
            version,
            codec,
            schema_json,
            spec_json,
            paths,
            written: Written::default(),
        }
    }

    /// Queue a write; waits while [`IN_FLIGHT`] writes are pending.
    pub async fn write(&mut self, path: String, bytes: Bytes) -> Result<()> {
        while self.pending.len() >= IN_FLIGHT {
            if let Some(done) = self.pending.next().await {
                done?;
            }
        }
        self.written.files += 1;
        self.written.bytes += bytes.len() as u64;
        let io = self.io.clone();
        self.pending
            .push(async move { io.overwrite(&path, bytes).await }.boxed());
        Ok(())
    }

    /// Wait for every queued write.
    pub async fn flush(&mut self) -> Result<()> {
        while let Some(done) = self.pending.next().await {
            done?;
        }
        Ok(())
    }

    /// Encode a manifest of `entries` and queue it at `path`; returns its list entry.
    pub async fn manifest(
        &mut self,
        content: ManifestContent,
        entries: &[Entry],
        path: String,
        credit: &Credit,
    ) -> Result<ManifestFile> {
        let mut written = self.encode_manifest(content, entries)?;
        written.bytes = resync(written.bytes, credit.sync);
        let mut list_entry =
            written.manifest_file(path.clone(), credit.snapshot_id, credit.sequence_number);
        list_entry.first_row_id = credit.first_row_id;
        self.written.manifests += 1;
        self.written.manifest_entries += entries.len() as u64;
        self.write(path, Bytes::from(written.bytes)).await?;
        Ok(list_entry)
    }

    fn encode_manifest(
        &self,
        content: ManifestContent,
        entries: &[Entry],
    ) -> Result<WrittenManifest> {
        let mut writer = ManifestWriter::new(&NewManifest {
            format_version: self.version,
            content,
            table_schema_json: &self.schema_json,
            partition_spec_json: &self.spec_json,
            partition_spec_id: 0,
            codec: self.codec,
        })?;
        for e in entries {
            writer.add(&self.entry(e))?;
        }
        writer.finish()
    }

    fn entry(&self, e: &Entry) -> ManifestEntry {
        let f = &e.file;
        let mut df = DataFile::new(f.content, self.paths.file(f), f.records, f.size);
        if !e.inherits {
            df.first_row_id = f.first_row_id;
        }
        if let Some(p) = f.part {
            df.partition =
                PartitionTuple::new(vec![(PARTITION_NAME.to_string(), PartitionValue::Int(p))]);
        }
        // pyiceberg's `inspect.entries()` needs `column_sizes` (Java and pyiceberg always write it).
        let mut columns = match f.content {
            DataContent::Data => vec![1, 2],
            _ => vec![DELETE_FILE_PATH_ID, DELETE_FILE_PATH_ID - 1],
        };
        if f.content == DataContent::Data && f.part.is_some() {
            columns.push(PARTITION_COLUMN_ID);
        }
        let per_column = f.size / columns.len() as i64;
        df.column_sizes = Some(columns.iter().map(|&c| (c, per_column)).collect());
        df.value_counts = Some(columns.iter().map(|&c| (c, f.records)).collect());
        df.null_value_counts = Some(columns.iter().map(|&c| (c, 0)).collect());
        if let (DataContent::Data, Some(p)) = (f.content, f.part) {
            // The partition column holds one value: its bounds (4-byte little-endian int).
            let bound = BTreeMap::from([(PARTITION_COLUMN_ID, p.to_le_bytes().to_vec())]);
            df.lower_bounds = Some(bound.clone());
            df.upper_bounds = Some(bound);
        }
        if let Some(target) = f.referenced {
            let target = self.paths.of(target, DataContent::Data, f.part);
            let bound = BTreeMap::from([(DELETE_FILE_PATH_ID, target.clone().into_bytes())]);
            df.lower_bounds = Some(bound.clone());
            df.upper_bounds = Some(bound);
            if self.version >= FormatVersion::V3 {
                df.referenced_data_file = Some(target);
            }
        }
        let explicit_seq = (!e.inherits).then_some(f.seq);
        ManifestEntry {
            status: e.status,
            snapshot_id: Some(e.snapshot_id),
            sequence_number: explicit_seq,
            file_sequence_number: explicit_seq,
            data_file: df,
            extra: Vec::new(),
        }
    }

    /// Encode and queue a manifest list.
    pub async fn manifest_list(
        &mut self,
        meta: &ManifestListMeta,
        list: &[ManifestFile],
        path: String,
        sync: [u8; 16],
    ) -> Result<()> {
        let out = write_manifest_list(meta, list, self.codec)?;
        self.written.manifest_lists += 1;
        self.write(path, Bytes::from(resync(out.bytes, sync))).await
    }
}

/// The Avro file with its (random) sync marker replaced by `sync`, so the same seed gives the same
/// bytes. Every container ends with its sync marker (after the header, and after each block); a
/// random 16-byte marker occurs elsewhere in the file with negligible probability.
fn resync(mut bytes: Vec<u8>, sync: [u8; 16]) -> Vec<u8> {
    let Some(start) = bytes.len().checked_sub(16) else {
        return bytes;
    };
    let mut old = [0u8; 16];
    old.copy_from_slice(&bytes[start..]);
    let mut i = 0;
    while i + 16 <= bytes.len() {
        if bytes[i] == old[0] && bytes[i..i + 16] == old {
            bytes[i..i + 16].copy_from_slice(&sync);
            i += 16;
        } else {
            i += 1;
        }
    }
    bytes
}
