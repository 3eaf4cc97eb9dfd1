//! Rewriting one file group: every input read (whole or by ranges), its deletes applied, the
//! outputs streamed to storage; and giving up cleanly. When the group fails (a read or write
//! error, a cancelled statement, another group's failure), the output being uploaded is aborted
//! (on S3 its parts are discarded instead of lingering, unseen and billed) and the outputs already
//! finished are deleted: this statement wrote them and no commit references them.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;

use super::PROCEDURE;
use super::commit::delete_uncommitted;
use super::memory::MemoryPlan;
use super::model::LiveFile;
use super::rewrite::{GroupWriter, LoadedDeletes, load_deletes};
use super::source::RangeSource;
use super::writer::WriteConfig;
use crate::error::{Error, Result};
use crate::iceberg::manifest::DataFile;
use crate::maintain::target::MaintenanceTarget;

/// What one group wrote: its output files and, per data file, the delete files that named it.
pub(super) type GroupOutputs = (Vec<DataFile>, HashMap<String, HashSet<String>>);

/// The inputs of one group and how to write them.
pub(super) struct GroupJob {
    pub writer: GroupWriter,
    pub config: WriteConfig,
    pub inputs: Vec<LiveFile>,
    pub deletes: Vec<LiveFile>,
    pub row_lineage: bool,
    pub memory: MemoryPlan,
}

/// Rewrites one group. On failure nothing it wrote is left behind (uploads aborted, finished
/// outputs deleted, any that could not be are named in the error) and `stop` is raised so the
/// other groups give up too; a group that sees `stop` raised gives up the same way and returns
/// `None`.
pub(super) async fn rewrite_group(
    target: &MaintenanceTarget,
    job: GroupJob,
    stop: &AtomicBool,
) -> Result<Option<GroupOutputs>> {
    let GroupJob {
        writer,
        config,
        inputs,
        deletes,
        row_lineage,
        memory,
    } = job;
    let mut slot = Some(writer);
    let mut outputs = Vec::new();
    let written = write_inputs(
        target,
        &config,
        &mut slot,
        &mut outputs,
        (inputs, deletes),
        row_lineage,
        memory,
        stop,
    )
    .await;
    match written {
        Ok(Some(mentions)) => Ok(Some((outputs, mentions))),
        Ok(None) => {
            let kept = give_up(target, slot, outputs).await;
            if kept.is_empty() {
                Ok(None)
            } else {
                Err(with_leftovers(stopped_error(), &kept))
            }
        }
        Err(e) => {
            stop.store(true, Ordering::Relaxed);
            let kept = give_up(target, slot, outputs).await;
            Err(with_leftovers(e, &kept))
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn write_inputs(
    target: &MaintenanceTarget,
    config: &WriteConfig,
    slot: &mut Option<GroupWriter>,
    outputs: &mut Vec<DataFile>,
    (inputs, deletes): (Vec<LiveFile>, Vec<LiveFile>),
    row_lineage: bool,
    memory: MemoryPlan,
    stop: &AtomicBool,
) -> Result<Option<HashMap<String, HashSet<String>>>> {
    if stop.load(Ordering::Relaxed) {
        return Ok(None);
    }
    // Inputs up to this size are read whole (one request); larger ones by ranges.
    let whole_file_bytes = memory.whole_file;
    let io = &target.io;
    let input_refs: Vec<&LiveFile> = inputs.iter().collect();
    let delete_refs: Vec<&LiveFile> = deletes.iter().collect();
    let loaded: Arc<LoadedDeletes> =
        Arc::new(load_deletes(io, &config.schema, &input_refs, &delete_refs).await?);
    for input in inputs {
        target.progress.check()?;
        if stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let size = input.file.file_size_in_bytes.max(0) as u64;
        let deletes = loaded.clone();
        if size <= whole_file_bytes {
            let bytes: Bytes = io.read(input.path()).await?;
            on_worker(slot, move |w| {
                w.rewrite_file(&input, bytes, &deletes, row_lineage)
            })
            .await?;
        } else {
            // Large: streamed by ranges, row group by row group.
            let len = io.head(input.path()).await?.size;
            let source = RangeSource::new(
                io.clone(),
                input.path().to_string(),
                len,
                tokio::runtime::Handle::current(),
            );
            on_worker(slot, move |w| {
                w.rewrite_file(&input, source, &deletes, row_lineage)
            })
            .await?;
        }
        target.progress.advance(0, size);
        collect(slot, outputs);
    }
    on_worker(slot, GroupWriter::roll).await?;
    collect(slot, outputs);
    Ok(Some(
        Arc::try_unwrap(loaded)
            .map(|l| l.mentions)
            .unwrap_or_default(),
    ))
}

/// Runs `work` on the writer on a blocking thread (encoding is CPU work); the writer comes back
/// to `slot` whether or not the work succeeded, so a failure can still clean up after it.
async fn on_worker<F>(slot: &mut Option<GroupWriter>, work: F) -> Result<()>
where
    F: FnOnce(&mut GroupWriter) -> Result<()> + Send + 'static,
{
    let mut writer = slot
        .take()
        .ok_or_else(|| Error::logical("compaction writer lost after a failed step".to_string()))?;
    let (writer, done) = tokio::task::spawn_blocking(move || {
        let done = work(&mut writer);
        (writer, done)
    })
    .await
    .map_err(|e| Error::logical(format!("compaction worker failed: {e}")))?;
    *slot = Some(writer);
    done
}

/// Moves the output files the writer finished (complete in storage) to `outputs`.
fn collect(slot: &mut Option<GroupWriter>, outputs: &mut Vec<DataFile>) {
    if let Some(writer) = slot {
        outputs.extend(
            std::mem::take(&mut writer.finished)
                .into_iter()
                .map(|done| done.data_file),
        );
    }
}

/// Aborts the upload in progress and deletes the finished outputs; returns the files that could
/// not be deleted, each with the reason.
async fn give_up(
    target: &MaintenanceTarget,
    slot: Option<GroupWriter>,
    outputs: Vec<DataFile>,
) -> Vec<String> {
    let mut paths: Vec<String> = outputs.into_iter().map(|f| f.file_path).collect();
    if let Some(writer) = slot {
        let (upload, finished) = writer.abandon();
        paths.extend(finished);
        if let Some(upload) = upload {
            upload.abort().await;
        }
    }
    delete_uncommitted(target, &paths).await
}

/// The error of a group that stopped because another one failed (only reported when its
/// leftovers could not be deleted).
fn stopped_error() -> Error {
    Error::logical(format!(
        "{PROCEDURE} stopped after another file group failed"
    ))
}

/// `error`, naming the files written that could not be deleted (orphans `remove_orphan_files`
/// finds), if any.
pub(super) fn with_leftovers(error: Error, kept: &[String]) -> Error {
    if kept.is_empty() {
        return error;
    }
    Error::new(
        error.kind(),
        format!(
            "{}; {PROCEDURE} could not delete the files it wrote: {} (orphans: \
             remove_orphan_files deletes them)",
            error.message(),
            kept.join(", ")
        ),
    )
}
