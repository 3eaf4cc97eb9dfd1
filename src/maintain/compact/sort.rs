//! Ordering a file group's rows for its output files: by the partition each row takes under the
//! default spec (when the group's rows are split), then by the table's sort order (each key's
//! transform of its column, its direction and null order; floats in the spec's order, -NaN <
//! -Infinity < ... < -0 < 0 < ... < NaN). Keys are compared in Arrow's row format, one code path
//! for the in-memory sort and the merge.
//!
//! Rows are buffered up to the memory plan's sort buffer. A group that fits is sorted in memory.
//! A larger one is sorted buffer by buffer into *runs*, each spilled to a local temporary file
//! (Arrow IPC stream, zstd) under the system's temporary folder (`TMPDIR`), then merged: at most
//! [`FAN_IN`] runs at once, each read one small batch at a time (a batch takes a `FAN_IN`-th of
//! the buffer), earlier passes merging runs into longer runs when there are more. So the output
//! is one ordered stream, written into files of the target size: a group gives about
//! `size / target` files whatever the memory setting, not a file per buffer. The merge holds
//! about one buffer of rows (plus the merged batch being written), within the share the memory
//! plan gives the sort. Spilling needs local disk for the group's rows (compressed); the files
//! are removed as soon as they are merged, and the folder when the group is done (a killed
//! process leaves them to the system's temporary-file cleanup).

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, UInt32Array};
use arrow_ipc::CompressionType;
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::{IpcWriteOptions, StreamWriter};
use arrow_row::{RowConverter, Rows, SortField};
use arrow_schema::{ArrowError, SchemaRef, SortOptions};

use super::repartition::OutputSpec;
use super::rewrite::SortKey;
use crate::error::{Error, ErrorKind, Result};
use crate::iceberg::arrow::schema::leaf_by_id;

/// Runs merged at once.
pub const FAN_IN: usize = 16;

/// How a group's rows are ordered.
#[derive(Clone)]
pub struct RowOrder {
    pub sort: Vec<SortKey>,
    /// Rows split by the default spec: their partition keys come first.
    pub split: Option<Arc<OutputSpec>>,
}

impl RowOrder {
    pub fn is_empty(&self) -> bool {
        self.sort.is_empty() && self.split.is_none()
    }

    /// The key columns of `batch`, in order, with their sort options.
    fn keys(&self, batch: &RecordBatch) -> Result<Vec<(ArrayRef, SortOptions)>> {
        let mut out = Vec::new();
        if let Some(spec) = &self.split {
            let ascending = SortOptions {
                descending: false,
                nulls_first: true,
            };
            out.extend(spec.keys(batch)?.into_iter().map(|k| (k, ascending)));
        }
        for k in &self.sort {
            let source = leaf_by_id(batch.schema().fields(), batch.columns(), k.source_id)
                .ok_or_else(|| {
                    Error::logical(format!("sort column {} missing from a batch", k.source_id))
                })?;
            let options = SortOptions {
                descending: k.descending,
                nulls_first: k.nulls_first,
            };
            out.push((k.transform.apply(&source)?, options));
        }
        Ok(out)
    }
}

/// Where sorted batches go.
type Sink<'a> = dyn FnMut(&RecordBatch) -> Result<()> + 'a;

fn sort_err(e: ArrowError) -> Error {
    Error::incorrect_data(format!("sorting: {e}"))
}

/// The rows of one file group, put in order.
pub struct Sorter {
    order: RowOrder,
    schema: SchemaRef,
    buffer_bytes: usize,
    pending: Vec<RecordBatch>,
    pending_bytes: usize,
    converter: Option<RowConverter>,
    spill: Option<Spill>,
}

impl Sorter {
    /// A sorter for batches of `schema`, buffering `buffer_bytes` of decoded rows.
    pub fn new(order: RowOrder, schema: SchemaRef, buffer_bytes: usize) -> Self {
        Sorter {
            order,
            schema,
            buffer_bytes: buffer_bytes.max(1),
            pending: Vec::new(),
            pending_bytes: 0,
            converter: None,
            spill: None,
        }
    }

    /// Buffers `batch`; a full buffer is sorted and spilled as a run.
    pub fn push(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        self.pending_bytes += batch.get_array_memory_size();
        self.pending.push(batch.clone());
        if self.pending_bytes >= self.buffer_bytes
            && let Some(sorted) = self.sort_pending()?
        {
            if self.spill.is_none() {
                self.spill = Some(Spill::new(self.schema.clone())?);
            }
            if let Some(spill) = &mut self.spill {
                spill.write_sorted(&sorted, self.buffer_bytes / FAN_IN)?;
            }
        }
        Ok(())
    }

    /// Hands every row pushed so far to `emit`, in order, in batches; the sorter is empty after.
    pub fn finish(&mut self, emit: &mut dyn FnMut(&RecordBatch) -> Result<()>) -> Result<()> {
        let sorted = self.sort_pending()?;
        let Some(mut spill) = self.spill.take() else {
            return sorted.map_or(Ok(()), |b| emit(&b));
        };
        if let Some(b) = sorted {
            spill.write_sorted(&b, self.buffer_bytes / FAN_IN)?;
        }
        let converter = self
            .converter
            .as_ref()
            .ok_or_else(|| Error::logical("a spilled sort without a row converter"))?;
        spill.merge_all(&self.order, converter, emit)
    }

    /// Sorts the buffered rows into one batch.
    fn sort_pending(&mut self) -> Result<Option<RecordBatch>> {
        if self.pending.is_empty() {
            return Ok(None);
        }
        let batches = std::mem::take(&mut self.pending);
        self.pending_bytes = 0;
        let all = arrow_select::concat::concat_batches(&self.schema, &batches).map_err(sort_err)?;
        drop(batches);
        let keys = self.order.keys(&all)?;
        if self.converter.is_none() {
            let fields = keys
                .iter()
                .map(|(k, o)| SortField::new_with_options(k.data_type().clone(), *o))
                .collect();
            self.converter = Some(RowConverter::new(fields).map_err(sort_err)?);
        }
        let rows = convert(self.converter.as_ref(), &keys)?;
        drop(keys);
        let mut indices: Vec<u32> = (0..all.num_rows() as u32).collect();
        indices.sort_unstable_by(|a, b| rows.row(*a as usize).cmp(&rows.row(*b as usize)));
        drop(rows);
        let indices = UInt32Array::from(indices);
        arrow_select::take::take_record_batch(&all, &indices)
            .map(Some)
            .map_err(sort_err)
    }
}

fn convert(converter: Option<&RowConverter>, keys: &[(ArrayRef, SortOptions)]) -> Result<Rows> {
    let converter = converter.ok_or_else(|| Error::logical("no row converter"))?;
    let columns: Vec<ArrayRef> = keys.iter().map(|(k, _)| k.clone()).collect();
    converter.convert_columns(&columns).map_err(sort_err)
}

/// One sorted run on local disk.
struct Run {
    path: PathBuf,
    /// Rows per batch in the file (each about a `FAN_IN`-th of the sort buffer).
    batch_rows: usize,
}

/// The spill folder of one group and its runs.
struct Spill {
    dir: PathBuf,
    schema: SchemaRef,
    runs: Vec<Run>,
    /// Every file created and not yet removed.
    created: Vec<PathBuf>,
    next: usize,
}

fn spill_error(
    kind: ErrorKind,
    what: &str,
    path: &std::path::Path,
    e: impl std::fmt::Display,
) -> Error {
    Error::new(
        kind,
        format!("compaction's sort spill {what} '{}': {e}", path.display()),
    )
}

impl Spill {
    fn new(schema: SchemaRef) -> Result<Spill> {
        let dir = std::env::temp_dir().join(format!("icetrim-sort-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir(&dir)
            .map_err(|e| spill_error(ErrorKind::CannotCreateDirectory, "folder", &dir, e))?;
        Ok(Spill {
            dir,
            schema,
            runs: Vec::new(),
            created: Vec::new(),
            next: 0,
        })
    }

    /// A new run file, written by `fill` through `write`.
    fn new_run(
        &mut self,
        batch_rows: usize,
        fill: &mut dyn FnMut(&mut Sink<'_>) -> Result<()>,
    ) -> Result<()> {
        self.next += 1;
        let path = self.dir.join(format!("run-{:05}.arrows", self.next));
        let file = File::create_new(&path)
            .map_err(|e| spill_error(ErrorKind::CannotOpenFile, "file", &path, e))?;
        self.created.push(path.clone());
        let options = IpcWriteOptions::default()
            .try_with_compression(Some(CompressionType::ZSTD))
            .map_err(|e| spill_error(ErrorKind::CannotOpenFile, "file", &path, e))?;
        let mut writer =
            StreamWriter::try_new_with_options(BufWriter::new(file), &self.schema, options)
                .map_err(|e| spill_error(ErrorKind::CannotOpenFile, "file", &path, e))?;
        fill(&mut |b: &RecordBatch| {
            writer
                .write(b)
                .map_err(|e| spill_error(ErrorKind::CannotOpenFile, "file", &path, e))
        })?;
        writer
            .finish()
            .map_err(|e| spill_error(ErrorKind::CannotOpenFile, "file", &path, e))?;
        self.runs.push(Run { path, batch_rows });
        Ok(())
    }

    /// Spills a sorted batch as a run, in batches of about `batch_bytes`.
    fn write_sorted(&mut self, sorted: &RecordBatch, batch_bytes: usize) -> Result<()> {
        let n = sorted.num_rows();
        let row_bytes = (sorted.get_array_memory_size() / n.max(1)).max(1);
        let batch_rows = (batch_bytes / row_bytes).max(1);
        self.new_run(batch_rows, &mut |write| {
            for start in (0..n).step_by(batch_rows) {
                write(&sorted.slice(start, batch_rows.min(n - start)))?;
            }
            Ok(())
        })
    }

    /// Merges every run into `emit`: passes of `FAN_IN` runs into longer runs until at most
    /// `FAN_IN` are left, then the last pass into `emit`.
    fn merge_all(
        &mut self,
        order: &RowOrder,
        converter: &RowConverter,
        emit: &mut dyn FnMut(&RecordBatch) -> Result<()>,
    ) -> Result<()> {
        while self.runs.len() > FAN_IN {
            let batch: Vec<Run> = self.runs.drain(..FAN_IN).collect();
            let batch_rows = batch.iter().map(|r| r.batch_rows).min().unwrap_or(1);
            let mut merger = Merger::open(&batch, order, converter)?;
            self.new_run(batch_rows, &mut |write| merger.run(batch_rows, write))?;
            drop(merger);
            self.remove(batch);
        }
        let runs = std::mem::take(&mut self.runs);
        let batch_rows = runs.iter().map(|r| r.batch_rows).min().unwrap_or(1);
        let schema = self.schema.clone();
        let mut merger = Merger::open(&runs, order, converter)?;
        merger.run(batch_rows, &mut |b: &RecordBatch| {
            // Batches read back carry the schema as written; hand them on as the table's.
            let b = RecordBatch::try_new(schema.clone(), b.columns().to_vec()).map_err(sort_err)?;
            emit(&b)
        })?;
        drop(merger);
        self.remove(runs);
        Ok(())
    }

    /// Removes merged run files (ours: created by this spill).
    fn remove(&mut self, runs: Vec<Run>) {
        for r in runs {
            if std::fs::remove_file(&r.path).is_ok() {
                self.created.retain(|p| *p != r.path);
            }
        }
    }
}

impl Drop for Spill {
    /// Removes the files this spill created and its (then empty) folder; nothing else.
    fn drop(&mut self) {
        for p in &self.created {
            let _ = std::fs::remove_file(p);
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// One run being read: its current batch and that batch's keys.
struct Cursor {
    reader: StreamReader<BufReader<File>>,
    path: PathBuf,
    batch: RecordBatch,
    rows: Rows,
    at: usize,
}

impl Cursor {
    /// Loads the next non-empty batch; `false` at the end of the run.
    fn advance(&mut self, order: &RowOrder, converter: &RowConverter) -> Result<bool> {
        for next in self.reader.by_ref() {
            let batch = next.map_err(|e| {
                spill_error(
                    ErrorKind::CannotReadFromFileDescriptor,
                    "file",
                    &self.path,
                    e,
                )
            })?;
            if batch.num_rows() == 0 {
                continue;
            }
            self.rows = convert(Some(converter), &order.keys(&batch)?)?;
            self.batch = batch;
            self.at = 0;
            return Ok(true);
        }
        Ok(false)
    }
}

/// A k-way merge of runs.
struct Merger<'a> {
    order: &'a RowOrder,
    converter: &'a RowConverter,
    cursors: Vec<Cursor>,
    /// Cursors with rows left, a binary min-heap by their current row.
    heap: Vec<usize>,
}

impl<'a> Merger<'a> {
    fn open(runs: &[Run], order: &'a RowOrder, converter: &'a RowConverter) -> Result<Self> {
        let mut cursors = Vec::with_capacity(runs.len());
        let mut heap = Vec::with_capacity(runs.len());
        for r in runs {
            let file = File::open(&r.path)
                .map_err(|e| spill_error(ErrorKind::CannotOpenFile, "file", &r.path, e))?;
            let reader = StreamReader::try_new(BufReader::new(file), None).map_err(|e| {
                spill_error(ErrorKind::CannotReadFromFileDescriptor, "file", &r.path, e)
            })?;
            let schema = reader.schema();
            let mut cursor = Cursor {
                reader,
                path: r.path.clone(),
                batch: RecordBatch::new_empty(schema),
                rows: converter.empty_rows(0, 0),
                at: 0,
            };
            if cursor.advance(order, converter)? {
                heap.push(cursors.len());
            }
            cursors.push(cursor);
        }
        let mut m = Merger {
            order,
            converter,
            cursors,
            heap,
        };
        for i in (0..m.heap.len() / 2).rev() {
            m.sift_down(i);
        }
        Ok(m)
    }

    fn less(&self, a: usize, b: usize) -> bool {
        let (ca, cb) = (&self.cursors[a], &self.cursors[b]);
        match ca.rows.row(ca.at).cmp(&cb.rows.row(cb.at)) {
            std::cmp::Ordering::Equal => a < b,
            o => o.is_lt(),
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut least = i;
            if l < self.heap.len() && self.less(self.heap[l], self.heap[least]) {
                least = l;
            }
            if r < self.heap.len() && self.less(self.heap[r], self.heap[least]) {
                least = r;
            }
            if least == i {
                return;
            }
            self.heap.swap(i, least);
            i = least;
        }
    }

    /// Writes the merged rows to `write` in batches of at most `batch_rows`.
    fn run(
        &mut self,
        batch_rows: usize,
        write: &mut dyn FnMut(&RecordBatch) -> Result<()>,
    ) -> Result<()> {
        let mut picks: Vec<(usize, usize)> = Vec::with_capacity(batch_rows);
        while let Some(&top) = self.heap.first() {
            let cursor = &mut self.cursors[top];
            picks.push((top, cursor.at));
            cursor.at += 1;
            let exhausted = cursor.at == cursor.batch.num_rows();
            if exhausted || picks.len() >= batch_rows {
                // Before a batch is replaced, the rows picked from it are written.
                self.flush(&mut picks, write)?;
            }
            if exhausted && !self.cursors[top].advance(self.order, self.converter)? {
                let last = self.heap.len() - 1;
                self.heap.swap(0, last);
                self.heap.pop();
            }
            self.sift_down(0);
        }
        self.flush(&mut picks, write)
    }

    fn flush(
        &self,
        picks: &mut Vec<(usize, usize)>,
        write: &mut dyn FnMut(&RecordBatch) -> Result<()>,
    ) -> Result<()> {
        if picks.is_empty() {
            return Ok(());
        }
        let batches: Vec<&RecordBatch> = self.cursors.iter().map(|c| &c.batch).collect();
        let merged =
            arrow_select::interleave::interleave_record_batch(&batches, picks).map_err(sort_err)?;
        picks.clear();
        write(&merged)
    }
}

#[cfg(test)]
#[path = "sort_tests.rs"]
mod tests;
