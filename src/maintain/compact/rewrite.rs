//! Rewriting one file group: load the delete files that apply to its inputs, stream each input
//! Parquet file batch by batch (adapted to the table schema by field id), drop deleted rows, fill
//! the v3 lineage columns, and write the output files.
//!
//! Deletes, per input file (rules in `deletes.rs`): position deletes (rows of position delete
//! files naming the file's path, and v3 deletion vectors: Puffin `deletion-vector-v1` blobs, a
//! 64-bit roaring bitmap in the portable format) drop rows by position in the file; equality
//! deletes drop rows whose `equality_ids` columns equal a delete row (nulls equal, compared in
//! Arrow's row format after adapting both sides to the table schema).
//!
//! Row lineage (v3): `_row_id` and `_last_updated_sequence_number` are written explicitly; where
//! the input leaves them null (inherited), `first_row_id + position` and the input file's data
//! sequence number.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, BooleanArray, Int64Array, RecordBatch};
use arrow_row::{RowConverter, SortField};
use arrow_schema::{DataType, SchemaRef};
use bytes::Bytes;
use parquet::arrow::arrow_reader::{ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
use parquet::file::reader::ChunkReader;
use roaring::RoaringTreemap;

use super::deletes::applies;
use super::memory::MemoryPlan;
use super::model::LiveFile;
use super::path::partition_path;
use super::repartition::OutputSpec;
use super::sort::{RowOrder, Sorter};
use super::writer::{Finished, OutputFile, WriteConfig};
use crate::error::{Error, ErrorKind, Result};
use crate::iceberg::arrow::schema::{
    LAST_UPDATED_FIELD, ROW_ID_FIELD, adapt_batch, field_by_id, field_id, leaf_by_id, project,
};
use crate::iceberg::arrow::transform::Transform;
use crate::iceberg::manifest::PartitionTuple;
use crate::io::FileIO;
use crate::io::Upload;

/// `file_path` of a position delete file.
const DELETE_FILE_PATH: i32 = 2_147_483_546;
/// `pos` of a position delete file.
const DELETE_POS: i32 = 2_147_483_545;
const DV_MAGIC: [u8; 4] = [0xD1, 0xD3, 0x39, 0x64];
const BATCH_ROWS: usize = 8192;

/// The deletes of one group, loaded.
#[derive(Default)]
pub struct LoadedDeletes {
    /// Data file path → deleted positions.
    positions: HashMap<String, RoaringTreemap>,
    equality: Vec<EqualitySet>,
    /// Position delete file path → the data file paths it names.
    pub mentions: HashMap<String, HashSet<String>>,
}

struct EqualitySet {
    delete: LiveFile,
    /// The equality field ids: columns or fields nested in structs.
    ids: Vec<i32>,
    converter: RowConverter,
    rows: HashSet<Vec<u8>>,
}

fn parquet_reader<R: ChunkReader + 'static>(
    path: &str,
    bytes: R,
) -> Result<parquet::arrow::arrow_reader::ParquetRecordBatchReader> {
    let options = ArrowReaderOptions::new().with_skip_arrow_metadata(true);
    ParquetRecordBatchReaderBuilder::try_new_with_options(bytes, options)
        .and_then(|b| b.with_batch_size(BATCH_ROWS).build())
        .map_err(|e| Error::incorrect_data(format!("reading Parquet file '{path}': {e}")))
}

/// A reader over an input data file whose batches aim at `memory.batch` decoded bytes: rows per
/// batch from the footer's uncompressed size per row (at least the schema's fixed widths).
fn data_reader<R: ChunkReader + 'static>(
    path: &str,
    bytes: R,
    schema: &SchemaRef,
    memory: &MemoryPlan,
) -> Result<parquet::arrow::arrow_reader::ParquetRecordBatchReader> {
    let bad = |e: parquet::errors::ParquetError| {
        Error::incorrect_data(format!("reading Parquet file '{path}': {e}"))
    };
    let options = ArrowReaderOptions::new().with_skip_arrow_metadata(true);
    let builder =
        ParquetRecordBatchReaderBuilder::try_new_with_options(bytes, options).map_err(bad)?;
    let fixed: u64 = schema
        .fields()
        .iter()
        .map(|f| f.data_type().primitive_width().unwrap_or(8) as u64 + 1)
        .sum();
    let row_bytes = builder
        .metadata()
        .row_groups()
        .iter()
        .filter(|rg| rg.num_rows() > 0)
        .map(|rg| (rg.total_byte_size().max(0) as u64).div_ceil(rg.num_rows() as u64))
        .max()
        .unwrap_or(0)
        .max(fixed);
    let Some(rows) = memory.batch_rows(row_bytes) else {
        return Err(Error::new(
            ErrorKind::MemoryLimitExceeded,
            format!(
                "compaction cannot read '{path}' within iceberg_compaction_max_memory_bytes = {}: \
                 its rows take about {row_bytes} bytes each decoded, more than the {} bytes a \
                 decoded batch may take; raise the setting",
                memory.budget, memory.batch
            ),
        ));
    };
    builder.with_batch_size(rows).build().map_err(bad)
}

fn column_by_id(batch: &RecordBatch, id: i32) -> Option<ArrayRef> {
    batch
        .schema()
        .fields()
        .iter()
        .position(|f| field_id(f) == Some(id))
        .map(|i| batch.column(i).clone())
}

/// Loads `deletes` (those applying to at least one of `inputs`).
pub async fn load_deletes(
    io: &FileIO,
    schema: &SchemaRef,
    inputs: &[&LiveFile],
    deletes: &[&LiveFile],
) -> Result<LoadedDeletes> {
    let mut loaded = LoadedDeletes::default();
    let wanted: HashSet<&str> = inputs.iter().map(|f| f.path()).collect();
    for d in deletes {
        let path = d.path();
        if d.is_deletion_vector() {
            let target = d.file.referenced_data_file.clone().ok_or_else(|| {
                Error::incorrect_data(format!(
                    "deletion vector in '{path}' names no referenced_data_file"
                ))
            })?;
            let (Some(offset), Some(size)) = (d.file.content_offset, d.file.content_size_in_bytes)
            else {
                return Err(Error::incorrect_data(format!(
                    "deletion vector in '{path}' has no content_offset / content_size_in_bytes"
                )));
            };
            let blob = io
                .read_range(path, offset as u64..(offset + size) as u64)
                .await?;
            let bitmap = parse_deletion_vector(&blob)
                .map_err(|m| Error::incorrect_data(format!("deletion vector in '{path}': {m}")))?;
            *loaded.positions.entry(target.clone()).or_default() |= bitmap;
            loaded
                .mentions
                .entry(path.to_string())
                .or_default()
                .insert(target);
            continue;
        }
        let bytes = io.read(path).await?;
        match d.content() {
            crate::iceberg::spec::DataContent::PositionDeletes => {
                let mentions = read_position_deletes(path, bytes, &wanted, &mut loaded.positions)?;
                loaded.mentions.insert(path.to_string(), mentions);
            }
            crate::iceberg::spec::DataContent::EqualityDeletes => {
                let set = read_equality_deletes(d, bytes, schema)?;
                loaded.equality.push(set);
            }
            crate::iceberg::spec::DataContent::Data => {}
        }
    }
    Ok(loaded)
}

/// A `deletion-vector-v1` blob: length (4 bytes, big-endian), magic, the bitmap, CRC-32.
pub fn parse_deletion_vector(blob: &[u8]) -> std::result::Result<RoaringTreemap, String> {
    if blob.len() < 12 {
        return Err("blob too short".into());
    }
    let len = u32::from_be_bytes([blob[0], blob[1], blob[2], blob[3]]) as usize;
    if len < 4 || 4 + len + 4 > blob.len() {
        return Err(format!(
            "length {len} does not fit the blob of {} bytes",
            blob.len()
        ));
    }
    if blob[4..8] != DV_MAGIC {
        return Err("bad magic".into());
    }
    let body = &blob[4..4 + len];
    let crc = u32::from_be_bytes([blob[4 + len], blob[5 + len], blob[6 + len], blob[7 + len]]);
    if crc32fast::hash(body) != crc {
        return Err("CRC mismatch".into());
    }
    RoaringTreemap::deserialize_from(&body[4..]).map_err(|e| e.to_string())
}

/// Serialises a deletion vector blob (the inverse of [`parse_deletion_vector`]; the generator
/// and tests write deletion vectors with it).
pub fn deletion_vector_blob(bitmap: &RoaringTreemap) -> Vec<u8> {
    let mut body = DV_MAGIC.to_vec();
    let _ = bitmap.serialize_into(&mut body);
    let mut out = (body.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(&body);
    out.extend_from_slice(&crc32fast::hash(&body).to_be_bytes());
    out
}

fn read_position_deletes(
    path: &str,
    bytes: Bytes,
    wanted: &HashSet<&str>,
    positions: &mut HashMap<String, RoaringTreemap>,
) -> Result<HashSet<String>> {
    let mut mentions = HashSet::new();
    let bad = |m: &str| Error::incorrect_data(format!("position delete file '{path}': {m}"));
    for batch in parquet_reader(path, bytes)? {
        let batch = batch.map_err(|e| bad(&e.to_string()))?;
        let (Some(paths), Some(pos)) = (
            column_by_id(&batch, DELETE_FILE_PATH).or_else(|| by_name(&batch, "file_path")),
            column_by_id(&batch, DELETE_POS).or_else(|| by_name(&batch, "pos")),
        ) else {
            return Err(bad("no file_path / pos columns"));
        };
        let paths = arrow_cast::cast(&paths, &DataType::Utf8).map_err(|e| bad(&e.to_string()))?;
        let pos = arrow_cast::cast(&pos, &DataType::Int64).map_err(|e| bad(&e.to_string()))?;
        let paths = paths.as_string::<i32>();
        let pos = pos.as_primitive::<Int64Type>();
        for i in 0..batch.num_rows() {
            if paths.is_null(i) || pos.is_null(i) {
                continue;
            }
            let p = paths.value(i);
            if !mentions.contains(p) {
                mentions.insert(p.to_string());
            }
            if wanted.contains(p) {
                let at = u64::try_from(pos.value(i)).map_err(|_| bad("negative pos"))?;
                positions.entry(p.to_string()).or_default().insert(at);
            }
        }
    }
    Ok(mentions)
}

fn by_name(batch: &RecordBatch, name: &str) -> Option<ArrayRef> {
    batch.column_by_name(name).cloned()
}

fn read_equality_deletes(d: &LiveFile, bytes: Bytes, schema: &SchemaRef) -> Result<EqualitySet> {
    let path = d.path();
    let ids = d.file.equality_ids.clone().unwrap_or_default();
    if ids.is_empty() {
        return Err(Error::incorrect_data(format!(
            "equality delete file '{path}' has no equality_ids"
        )));
    }
    // The spec allows struct fields (a null parent makes them null), not list or map ones.
    let leaves = ids
        .iter()
        .map(|id| {
            field_by_id(schema.fields(), *id).ok_or_else(|| {
                Error::not_implemented(format!(
                    "equality delete file '{path}' compares field {id}, which is neither a \
                     column nor a struct field of the current schema"
                ))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let eq_schema = Arc::new(project(schema, &ids));
    let converter = RowConverter::new(
        leaves
            .iter()
            .map(|f| SortField::new(f.data_type().clone()))
            .collect(),
    )
    .map_err(|e| Error::incorrect_data(format!("equality delete '{path}': {e}")))?;
    let mut rows = HashSet::new();
    for batch in parquet_reader(path, bytes)? {
        let batch =
            batch.map_err(|e| Error::incorrect_data(format!("equality delete '{path}': {e}")))?;
        let adapted = adapt_batch(&batch, &eq_schema)?;
        let columns = equality_columns(&adapted, &ids, path)?;
        let converted = converter
            .convert_columns(&columns)
            .map_err(|e| Error::incorrect_data(format!("equality delete '{path}': {e}")))?;
        for r in converted.iter() {
            rows.insert(r.as_ref().to_vec());
        }
    }
    Ok(EqualitySet {
        delete: d.clone(),
        ids,
        converter,
        rows,
    })
}

/// The equality columns `ids` of `batch`.
fn equality_columns(batch: &RecordBatch, ids: &[i32], path: &str) -> Result<Vec<ArrayRef>> {
    let schema = batch.schema();
    ids.iter()
        .map(|id| {
            leaf_by_id(schema.fields(), batch.columns(), *id).ok_or_else(|| {
                Error::logical(format!(
                    "'{path}': equality field {id} missing from a batch"
                ))
            })
        })
        .collect()
}

/// One key of the table's sort order: a transform of a column or struct field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SortKey {
    pub source_id: i32,
    pub transform: Transform,
    pub descending: bool,
    pub nulls_first: bool,
}

/// The group's output files as they are written. With a sort order, or when rows are split by
/// the default spec (`split`), rows go through a [`Sorter`] (`sort.rs`: sorted in memory, or in
/// runs spilled to local disk and merged) and come out as one ordered stream: by partition under
/// the default spec, then by the sort order. Output files hold one partition each and roll at the
/// target size, so a group gives about `size / target` files (more only where rows of several
/// partitions split), every file sorted and the files of a partition in order.
pub struct GroupWriter {
    config: WriteConfig,
    split: Option<Arc<OutputSpec>>,
    memory: MemoryPlan,
    sorter: Option<Sorter>,
    /// The folder of the output files: `data/` or the partition's folder under it.
    dir: String,
    partition: PartitionTuple,
    uuid: uuid::Uuid,
    current: Option<OutputFile>,
    handle: tokio::runtime::Handle,
    count: usize,
    pub finished: Vec<Finished>,
    /// Rows written after deletes.
    pub rows: u64,
}

impl GroupWriter {
    pub fn new(
        config: WriteConfig,
        dir: String,
        partition: PartitionTuple,
        sort: Vec<SortKey>,
        split: Option<Arc<OutputSpec>>,
        memory: MemoryPlan,
    ) -> Self {
        let order = RowOrder {
            sort,
            split: split.clone(),
        };
        let sorter = (!order.is_empty()).then(|| {
            Sorter::new(
                order,
                config.schema.clone(),
                usize::try_from(memory.sort_buffer).unwrap_or(usize::MAX),
            )
        });
        GroupWriter {
            config,
            split,
            memory,
            sorter,
            handle: tokio::runtime::Handle::current(),
            dir,
            partition,
            uuid: uuid::Uuid::new_v4(),
            current: None,
            count: 0,
            finished: Vec::new(),
            rows: 0,
        }
    }

    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        match &mut self.sorter {
            Some(sorter) => sorter.push(batch),
            None => self.write_unsorted(batch),
        }
    }

    /// Writes rows that come in order: a new file (in its partition's folder) where the
    /// partition changes.
    fn write_ordered(&mut self, batch: &RecordBatch) -> Result<()> {
        let Some(spec) = self.split.clone() else {
            return self.write_rows(batch);
        };
        let keys = spec.keys(batch)?;
        let runs = arrow_ord::partition::partition(&keys)
            .map_err(|e| Error::incorrect_data(format!("sorting: {e}")))?;
        let path_fields = spec.path_fields();
        for run in runs.ranges() {
            let tuple = spec.tuple(&keys, run.start)?;
            if tuple != self.partition {
                self.roll_current()?;
                self.partition = tuple;
                let folder = partition_path(&path_fields, &self.partition);
                self.dir = if folder.is_empty() {
                    self.config.data_dir.clone()
                } else {
                    format!("{}/{folder}", self.config.data_dir)
                };
            }
            self.write_rows(&batch.slice(run.start, run.end - run.start))?;
        }
        Ok(())
    }

    /// Writes `batch` in slices of at most `BATCH_ROWS` rows.
    fn write_rows(&mut self, batch: &RecordBatch) -> Result<()> {
        for start in (0..batch.num_rows()).step_by(BATCH_ROWS) {
            let len = BATCH_ROWS.min(batch.num_rows() - start);
            self.write_unsorted(&batch.slice(start, len))?;
        }
        Ok(())
    }

    fn write_unsorted(&mut self, batch: &RecordBatch) -> Result<()> {
        if self.current.is_none() {
            self.count += 1;
            let path = format!(
                "{}/{}-compacted-{:05}.parquet",
                self.dir, self.uuid, self.count
            );
            self.current = Some(OutputFile::new(&self.config, path, self.handle.clone())?);
        }
        if let Some(out) = &mut self.current {
            out.write(&self.config, batch)?;
            self.rows += batch.num_rows() as u64;
            if out.size() >= self.config.roll_bytes {
                self.roll_current()?;
            }
        }
        Ok(())
    }

    /// Writes what is buffered (in order) and closes the file being written, if any.
    pub fn roll(&mut self) -> Result<()> {
        if let Some(mut sorter) = self.sorter.take() {
            let done = sorter.finish(&mut |b| self.write_ordered(b));
            self.sorter = Some(sorter);
            done?;
        }
        self.roll_current()
    }

    fn roll_current(&mut self) -> Result<()> {
        if let Some(out) = self.current.take() {
            self.finished
                .push(out.finish(&self.config, self.partition.clone())?);
        }
        Ok(())
    }

    /// Gives up: the upload of the file being written (to abort) and the paths of the files
    /// finished but not yet taken from [`GroupWriter::finished`].
    pub fn abandon(self) -> (Option<Upload>, Vec<String>) {
        let upload = self.current.and_then(OutputFile::into_upload);
        let finished = self
            .finished
            .into_iter()
            .map(|done| done.data_file.file_path)
            .collect();
        (upload, finished)
    }

    /// Rewrites one input file (its bytes) into the outputs, applying `deletes`.
    pub fn rewrite_file<R: ChunkReader + 'static>(
        &mut self,
        input: &LiveFile,
        bytes: R,
        deletes: &LoadedDeletes,
        row_lineage: bool,
    ) -> Result<()> {
        let path = input.path();
        let positions = deletes.positions.get(path);
        let equality: Vec<&EqualitySet> = deletes
            .equality
            .iter()
            .filter(|e| applies(&e.delete, input))
            .collect();
        let first_row_id = if row_lineage {
            Some(input.file.first_row_id.ok_or_else(|| {
                Error::not_implemented(format!(
                    "data file '{path}' of a v3 table has no first_row_id: its row ids cannot \
                     be carried over"
                ))
            })?)
        } else {
            None
        };
        let schema = self.config.schema.clone();
        let mut offset: u64 = 0;
        for batch in data_reader(path, bytes, &schema, &self.memory)? {
            let batch = batch.map_err(|e| {
                Error::incorrect_data(format!("reading Parquet file '{path}': {e}"))
            })?;
            let n = batch.num_rows();
            let mut adapted = adapt_batch(&batch, &schema)?;
            if let Some(first) = first_row_id {
                adapted = fill_lineage(adapted, first, offset, input.data_sequence_number)?;
            }
            let mut keep = vec![true; n];
            if let Some(bitmap) = positions {
                for (i, k) in keep.iter_mut().enumerate() {
                    if bitmap.contains(offset + i as u64) {
                        *k = false;
                    }
                }
            }
            for eq in &equality {
                let cols = equality_columns(&adapted, &eq.ids, path)?;
                let rows = eq
                    .converter
                    .convert_columns(&cols)
                    .map_err(|e| Error::incorrect_data(format!("'{path}': {e}")))?;
                for (i, r) in rows.iter().enumerate() {
                    if keep[i] && eq.rows.contains(r.as_ref()) {
                        keep[i] = false;
                    }
                }
            }
            offset += n as u64;
            let out = if keep.iter().all(|k| *k) {
                adapted
            } else {
                arrow_select::filter::filter_record_batch(&adapted, &BooleanArray::from(keep))
                    .map_err(|e| Error::incorrect_data(format!("'{path}': {e}")))?
            };
            self.write(&out)?;
        }
        Ok(())
    }
}

/// Fills null `_row_id` with `first + position` and null `_last_updated_sequence_number` with
/// the file's data sequence number.
fn fill_lineage(batch: RecordBatch, first: i64, offset: u64, seq: i64) -> Result<RecordBatch> {
    let schema = batch.schema();
    let mut columns = batch.columns().to_vec();
    for (i, f) in schema.fields().iter().enumerate() {
        let id = field_id(f);
        if id != Some(ROW_ID_FIELD) && id != Some(LAST_UPDATED_FIELD) {
            continue;
        }
        let col = columns[i].as_primitive::<Int64Type>();
        let filled: Int64Array = (0..col.len())
            .map(|r| {
                Some(if col.is_valid(r) {
                    col.value(r)
                } else if id == Some(ROW_ID_FIELD) {
                    first + offset as i64 + r as i64
                } else {
                    seq
                })
            })
            .collect();
        columns[i] = Arc::new(filled);
    }
    RecordBatch::try_new(schema, columns)
        .map_err(|e| Error::incorrect_data(format!("row lineage: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deletion_vectors_round_trip_and_are_checked() {
        let mut b = RoaringTreemap::new();
        b.insert(3);
        b.insert(1 << 40);
        let blob = deletion_vector_blob(&b);
        assert_eq!(parse_deletion_vector(&blob).unwrap(), b);
        let mut broken = blob.clone();
        let last = broken.len() - 1;
        broken[last] ^= 1;
        assert!(parse_deletion_vector(&broken).unwrap_err().contains("CRC"));
        assert!(parse_deletion_vector(&blob[..6]).is_err());
    }
}
