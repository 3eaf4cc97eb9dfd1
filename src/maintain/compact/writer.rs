//! Writing the output Parquet files of one file group, streamed to storage as multipart uploads
//! (a file is visible only once complete): the table's writer properties, rolling at the target
//! size, row groups flushed at `write.parquet.row-group-size-bytes` or when their buffered memory
//! reaches the group's share (`memory.rs`), whichever comes first, NaN counts
//! gathered for the metrics, and the manifest's `DataFile` built from the footer.
//!
//! Table properties honoured (Iceberg Java's names and defaults):
//! `write.parquet.compression-codec` (`zstd`; also `snappy`, `gzip`, `uncompressed`; `lz4`,
//! `brotli` are `NOT_IMPLEMENTED`), `write.parquet.compression-level` (zstd 3, gzip 6),
//! `write.parquet.row-group-size-bytes` (128 MiB), `write.parquet.page-size-bytes` (1 MiB),
//! `write.parquet.page-row-limit` (20,000), `write.parquet.dict-size-bytes` (2 MiB).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_writer::ArrowWriterOptions;
use parquet::basic::{Compression, GzipLevel, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};

use super::stats::{LeafInfo, file_metrics};
use crate::error::{Error, Result};
use crate::iceberg::arrow::schema::field_id;
use crate::iceberg::manifest::DataFile;
use crate::iceberg::manifest::PartitionTuple;
use crate::iceberg::spec::DataContent;
use crate::io::{FileIO, Upload};

/// How output files are written: the same for every group of a run.
#[derive(Debug, Clone)]
pub struct WriteConfig {
    /// The output schema (the table's current schema, plus the v3 lineage columns).
    pub schema: SchemaRef,
    pub leaves: Arc<HashMap<i32, LeafInfo>>,
    pub properties: WriterProperties,
    pub row_group_bytes: usize,
    /// A file rolls over once it reaches this many bytes.
    pub roll_bytes: u64,
    /// `<table location>/data`.
    pub data_dir: String,
    /// The table's default sort order id, recorded on each file.
    pub sort_order_id: Option<i32>,
    /// Storage the output files are streamed to.
    pub io: FileIO,
}

fn prop_u64(props: &BTreeMap<String, String>, key: &str, default: u64) -> Result<u64> {
    match props.get(key) {
        None => Ok(default),
        Some(t) => t
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|v| *v > 0)
            .ok_or_else(|| {
                Error::bad_arguments(format!(
                    "table property '{key}' is not a positive integer: '{t}'"
                ))
            }),
    }
}

/// The writer properties of the table.
pub fn writer_properties(props: &BTreeMap<String, String>) -> Result<(WriterProperties, usize)> {
    let codec = props
        .get("write.parquet.compression-codec")
        .map(|s| s.trim().to_ascii_lowercase())
        .unwrap_or_else(|| "zstd".into());
    let level = props
        .get("write.parquet.compression-level")
        .map(|t| {
            t.trim().parse::<i32>().map_err(|_| {
                Error::bad_arguments(format!(
                    "table property 'write.parquet.compression-level' is not an integer: '{t}'"
                ))
            })
        })
        .transpose()?;
    let bad_level = |e: parquet::errors::ParquetError| {
        Error::bad_arguments(format!(
            "table property 'write.parquet.compression-level': {e}"
        ))
    };
    let compression = match codec.as_str() {
        "zstd" => Compression::ZSTD(ZstdLevel::try_new(level.unwrap_or(3)).map_err(bad_level)?),
        "snappy" => Compression::SNAPPY,
        "gzip" => Compression::GZIP(
            GzipLevel::try_new(level.unwrap_or(6).max(0) as u32).map_err(bad_level)?,
        ),
        "uncompressed" | "none" => Compression::UNCOMPRESSED,
        other => {
            return Err(Error::not_implemented(format!(
                "compaction cannot write Parquet with codec '{other}' \
                 (write.parquet.compression-codec): zstd, snappy, gzip and uncompressed are \
                 supported"
            )));
        }
    };
    let row_group_bytes = prop_u64(props, "write.parquet.row-group-size-bytes", 128 << 20)?;
    let page = prop_u64(props, "write.parquet.page-size-bytes", 1 << 20)?;
    let page_rows = prop_u64(props, "write.parquet.page-row-limit", 20_000)?;
    let dict = prop_u64(props, "write.parquet.dict-size-bytes", 2 << 20)?;
    let properties = WriterProperties::builder()
        .set_compression(compression)
        .set_data_page_size_limit(page as usize)
        .set_data_page_row_count_limit(page_rows as usize)
        .set_dictionary_page_size_limit(dict as usize)
        // Exact statistics: Iceberg's truncation is applied to them afterwards.
        .set_statistics_truncate_length(None)
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_max_row_group_row_count(None)
        .build();
    Ok((properties, row_group_bytes as usize))
}

/// After each 8 MiB written, the writer waits until at most this many part uploads are in flight:
/// an output file holds at most this part, one more started since and one filling
/// (`memory::UPLOAD_BYTES`).
const PARTS_IN_FLIGHT: usize = 1;

/// The Parquet writer's sink: a streamed upload ([`FileIO::start_upload`]), written from the
/// blocking thread that encodes, its part uploads run on the statement's runtime.
struct UploadSink {
    upload: Option<Upload>,
    handle: tokio::runtime::Handle,
    since_wait: u64,
}

impl std::io::Write for UploadSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let upload = self
            .upload
            .as_mut()
            .ok_or_else(|| std::io::Error::other("the upload is closed"))?;
        {
            let _runtime = self.handle.enter();
            upload.write(buf);
        }
        self.since_wait += buf.len() as u64;
        if self.since_wait >= 8 << 20 {
            self.since_wait = 0;
            self.handle
                .block_on(upload.wait_for_capacity(PARTS_IN_FLIGHT))
                .map_err(std::io::Error::other)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// One output file being written (streamed to storage as it grows; visible only once finished).
pub struct OutputFile {
    pub path: String,
    writer: ArrowWriter<UploadSink>,
    handle: tokio::runtime::Handle,
    nan_counts: HashMap<i32, i64>,
    rows: u64,
}

/// A finished output file: its manifest description (the file is complete in storage).
pub struct Finished {
    pub data_file: DataFile,
}

impl OutputFile {
    /// Starts the upload of `path`; called on a blocking thread of the runtime behind `handle`.
    pub fn new(
        config: &WriteConfig,
        path: String,
        handle: tokio::runtime::Handle,
    ) -> Result<OutputFile> {
        let options = ArrowWriterOptions::new()
            .with_properties(config.properties.clone())
            .with_skip_arrow_metadata(true);
        let upload = handle.block_on(config.io.start_upload(&path))?;
        let sink = UploadSink {
            upload: Some(upload),
            handle: handle.clone(),
            since_wait: 0,
        };
        let writer = ArrowWriter::try_new_with_options(sink, config.schema.clone(), options)
            .map_err(|e| parquet_error(&path, e))?;
        Ok(OutputFile {
            path,
            writer,
            handle,
            nan_counts: HashMap::new(),
            rows: 0,
        })
    }

    pub fn write(&mut self, config: &WriteConfig, batch: &RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
            count_nans(field, column, &mut self.nan_counts);
        }
        self.writer
            .write(batch)
            .map_err(|e| parquet_error(&self.path, e))?;
        self.rows += batch.num_rows() as u64;
        // The buffered row group's memory (encoded pages, encoders, dictionaries) is what
        // counts against the memory plan, not its estimated size on disk.
        if self.writer.memory_size() >= config.row_group_bytes {
            self.writer
                .flush()
                .map_err(|e| parquet_error(&self.path, e))?;
        }
        Ok(())
    }

    /// Gives up on the file: the upload to abort (nothing of it becomes visible).
    pub fn into_upload(self) -> Option<Upload> {
        let mut writer = self.writer;
        writer.inner_mut().upload.take()
    }

    /// Bytes written so far, counting the row group in memory.
    pub fn size(&self) -> u64 {
        (self.writer.bytes_written() + self.writer.in_progress_size()) as u64
    }

    /// Closes the file and describes it for the manifest (`partition` as the spec needs it).
    pub fn finish(self, config: &WriteConfig, partition: PartitionTuple) -> Result<Finished> {
        let OutputFile {
            path,
            writer,
            handle,
            nan_counts,
            ..
        } = self;
        let mut writer = writer;
        let meta = writer.finish().map_err(|e| parquet_error(&path, e))?;
        let upload = writer
            .inner_mut()
            .upload
            .take()
            .ok_or_else(|| Error::logical(format!("'{path}': upload already closed")))?;
        let size = upload.written();
        handle.block_on(upload.finish())?;
        let m = file_metrics(&meta, &config.leaves, &nan_counts);
        let mut f = DataFile::new(DataContent::Data, path, m.record_count, size as i64);
        f.partition = partition;
        f.column_sizes = Some(m.column_sizes);
        f.value_counts = Some(m.value_counts);
        f.null_value_counts = Some(m.null_value_counts);
        f.nan_value_counts = Some(m.nan_value_counts);
        f.lower_bounds = Some(m.lower_bounds);
        f.upper_bounds = Some(m.upper_bounds);
        f.split_offsets = Some(m.split_offsets);
        f.sort_order_id = config.sort_order_id;
        Ok(Finished { data_file: f })
    }
}

fn parquet_error(path: &str, e: parquet::errors::ParquetError) -> Error {
    Error::incorrect_data(format!("writing Parquet file '{path}': {e}"))
}

/// Adds the NaN values of float and double leaves under `field` to `counts` (by field id).
fn count_nans(field: &Field, array: &ArrayRef, counts: &mut HashMap<i32, i64>) {
    match array.data_type() {
        DataType::Float32 => {
            let n = array
                .as_primitive::<Float32Type>()
                .iter()
                .filter(|v| v.is_some_and(f32::is_nan))
                .count();
            if let Some(id) = field_id(field) {
                *counts.entry(id).or_default() += n as i64;
            }
        }
        DataType::Float64 => {
            let n = array
                .as_primitive::<Float64Type>()
                .iter()
                .filter(|v| v.is_some_and(f64::is_nan))
                .count();
            if let Some(id) = field_id(field) {
                *counts.entry(id).or_default() += n as i64;
            }
        }
        DataType::Struct(fields) => {
            let s = array.as_struct();
            for (f, c) in fields.iter().zip(s.columns()) {
                count_nans(f, c, counts);
            }
        }
        DataType::List(f) => count_nans(f, array.as_list::<i32>().values(), counts),
        DataType::Map(entries, _) => {
            let m = array.as_map();
            if let DataType::Struct(kv) = entries.data_type() {
                for (f, c) in kv.iter().zip(m.entries().columns()) {
                    count_nans(f, c, counts);
                }
            }
        }
        _ => {}
    }
}
