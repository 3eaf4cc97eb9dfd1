//! Reading the starting state of a compaction: every live content file of the current snapshot,
//! with full manifest entries (metrics, partition, sequence numbers inherited); and the data files
//! a position delete file out of their scope names (`disputed.rs`), reading only the `file_path`
//! column of the delete files whose bounds leave it open.

use std::collections::{HashMap, HashSet};

use arrow_array::cast::AsArray;
use arrow_schema::DataType;
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
use parquet::file::reader::ChunkReader;

use super::deletes::DELETE_FILE_PATH;
use super::disputed;
use super::model::{LiveFile, name_partition_fields, partition_text};
use super::source::RangeSource;
use crate::error::{Error, Result};
use crate::iceberg::manifest::{inherit, read_manifest};
use crate::iceberg::manifest_list::{ManifestFile, read_manifest_list};
use crate::iceberg::metadata::TableMetadata;
use crate::iceberg::spec::Snapshot;
use crate::io::FileIO;

/// The live files of `snapshot`: data files and delete files.
#[derive(Debug, Clone, Default)]
pub struct TableState {
    pub data: Vec<LiveFile>,
    pub deletes: Vec<LiveFile>,
}

/// Reads every manifest of `snapshot` (at most `concurrency` at once).
pub async fn read_state(
    io: &FileIO,
    metadata: &TableMetadata,
    snapshot: &Snapshot,
    concurrency: usize,
) -> Result<TableState> {
    let Some(list_path) = &snapshot.manifest_list else {
        return Err(Error::not_implemented(format!(
            "Snapshot {} lists its manifests inline (v1 without a manifest list); compaction \
             does not support it",
            snapshot.snapshot_id
        )));
    };
    let bytes = io.read_immutable(list_path, None).await?;
    let list = read_manifest_list(&bytes, list_path)?;
    // Boxed streams here and below: a closure taking a reference, held across an await, makes
    // the statement's future one the compiler cannot prove `Send` (a host's `tokio::spawn`).
    let reads: BoxStream<'_, Result<(&ManifestFile, Bytes)>> = futures::stream::iter(list.iter())
        .map(|m| async move {
            io.read_immutable(&m.manifest_path, m.length())
                .await
                .map(|b| (m, b))
        })
        .buffered(concurrency.max(1))
        .boxed();
    let manifests: Vec<_> = reads.try_collect().await?;
    let mut state = TableState::default();
    for (m, bytes) in manifests {
        let mut manifest = read_manifest(&bytes, &m.manifest_path)?;
        inherit(&mut manifest.entries, m);
        let spec = metadata.partition_spec(m.partition_spec_id);
        let spec_unpartitioned = spec.is_none_or(|s| s.fields.is_empty());
        let names: Vec<String> = spec.map_or_else(Vec::new, |s| {
            s.fields.iter().map(|f| f.name.clone()).collect()
        });
        for mut e in manifest.entries {
            if !e.status.is_live() {
                continue;
            }
            if spec.is_some() {
                name_partition_fields(&mut e.data_file.partition, &names);
            }
            let live = LiveFile {
                spec_id: m.partition_spec_id,
                spec_unpartitioned,
                partition: partition_text(&e.data_file.partition),
                data_sequence_number: e.sequence_number.unwrap_or(0),
                file: e.data_file,
            };
            if live.is_data() {
                state.data.push(live);
            } else {
                state.deletes.push(live);
            }
        }
    }
    Ok(state)
}

/// The disputed data files among `candidates` (indexes into `state.data`): data file path → the
/// path of a position delete file out of its scope that names it. Delete files are read only as
/// `disputed::check` says, `concurrency` at a time; one above `whole_file` bytes by ranges.
pub async fn find_disputed(
    io: &FileIO,
    state: &TableState,
    candidates: &[usize],
    whole_file: u64,
    concurrency: usize,
) -> Result<HashMap<String, String>> {
    let check = disputed::check(&state.data, &state.deletes, candidates);
    let reads: BoxStream<'_, Result<(usize, HashSet<String>)>> =
        futures::stream::iter(check.to_read.iter().map(|(di, files)| {
            let delete = &state.deletes[*di];
            let wanted: HashSet<String> = files
                .iter()
                .map(|fi| state.data[*fi].path().to_string())
                .collect();
            async move {
                named_paths(io, delete, wanted, whole_file)
                    .await
                    .map(|paths| (*di, paths))
            }
        }))
        .buffer_unordered(concurrency.max(1))
        .boxed();
    let read: HashMap<usize, HashSet<String>> = reads.try_collect().await?;
    Ok(disputed::resolve(
        &state.data,
        &state.deletes,
        &check,
        &read,
    ))
}

/// The paths among `wanted` that the rows of position delete file `delete` name.
async fn named_paths(
    io: &FileIO,
    delete: &LiveFile,
    wanted: HashSet<String>,
    whole_file: u64,
) -> Result<HashSet<String>> {
    let path = delete.path().to_string();
    let size = delete.file.file_size_in_bytes.max(0) as u64;
    let joined = if size <= whole_file {
        let bytes = io.read(&path).await?;
        tokio::task::spawn_blocking(move || scan_paths(&path, bytes, &wanted)).await
    } else {
        let len = io.head(&path).await?.size;
        let source = RangeSource::new(
            io.clone(),
            path.clone(),
            len,
            tokio::runtime::Handle::current(),
        );
        tokio::task::spawn_blocking(move || scan_paths(&path, source, &wanted)).await
    };
    joined.map_err(|e| Error::logical(format!("reading a position delete file failed: {e}")))?
}

/// Decodes only the `file_path` column of a position delete file, keeping the `wanted` paths.
fn scan_paths<R: ChunkReader + 'static>(
    path: &str,
    input: R,
    wanted: &HashSet<String>,
) -> Result<HashSet<String>> {
    let bad = |m: String| Error::incorrect_data(format!("position delete file '{path}': {m}"));
    let options = ArrowReaderOptions::new().with_skip_arrow_metadata(true);
    let builder = ParquetRecordBatchReaderBuilder::try_new_with_options(input, options)
        .map_err(|e| bad(e.to_string()))?;
    let descr = builder.parquet_schema();
    let is_path = |i: &usize| {
        let column = descr.column(*i);
        let info = column.self_type().get_basic_info();
        if info.has_id() {
            info.id() == DELETE_FILE_PATH
        } else {
            column.path().parts() == ["file_path"]
        }
    };
    let leaf = (0..descr.num_columns())
        .find(is_path)
        .ok_or_else(|| bad("no file_path column".into()))?;
    let mask = ProjectionMask::leaves(descr, [leaf]);
    let reader = builder
        .with_projection(mask)
        .build()
        .map_err(|e| bad(e.to_string()))?;
    let mut found = HashSet::new();
    for batch in reader {
        let batch = batch.map_err(|e| bad(e.to_string()))?;
        let column =
            arrow_cast::cast(batch.column(0), &DataType::Utf8).map_err(|e| bad(e.to_string()))?;
        for p in column.as_string::<i32>().iter().flatten() {
            if wanted.contains(p) && !found.contains(p) {
                found.insert(p.to_string());
            }
        }
        if found.len() == wanted.len() {
            break;
        }
    }
    Ok(found)
}
