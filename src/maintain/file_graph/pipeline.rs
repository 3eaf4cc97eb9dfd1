//! The reading pipeline of the file graph: read many manifest lists or manifests and decode each
//! off the async task, keeping both cores busy with few thread hand-offs.
//!
//! - **One task drives it.** Reads and decodes run on a spawned task that sends decoded files to
//!   the caller through a short bounded channel, so decoding continues while the caller interns
//!   what arrived (a stream polled only by the caller stopped decoding whenever the caller was
//!   busy: about one core of two was used).
//! - **Batches, not files.** Local files (read directly from disk) are read and decoded in
//!   batches of up to [`BATCH_FILES`] files (about [`BATCH_BYTES`] known bytes), dealt
//!   round-robin so batches cost alike, per blocking call;
//!   files from an object store are read `concurrency` at once on the async task and the reads
//!   that are ready are decoded together, a batch per blocking call. One hand-off per batch
//!   instead of one per file (a thousand lists were 7,800 futex calls). Batches shrink when there
//!   are few files, so every core still gets work.
//! - **Largest first.** Files whose length is known (manifests: the list names it) start in
//!   decreasing size, so a large file does not start last and leave one core working alone.
//!
//! Results come in completion order (callers never depend on it). A file that is gone and not
//! `required` comes back as `None`; any other failure fails the stream. The stream ends with an
//! explicit "done" from the pipeline: a pipeline that stopped early (a panic) is an error, never
//! a short answer (a keep set built from part of the files would delete live ones).

use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;

use crate::error::{Error, ErrorKind, Result};
use crate::io::FileIO;
use crate::progress::Progress;

/// One file to read: `id` identifies it to the caller; a gone file that is not `required` comes
/// back as `None`; `length`, when known, checks a cached copy ([`FileIO::read_immutable_and`]).
pub(super) struct ReadJob<I> {
    pub id: I,
    pub required: bool,
    pub uri: String,
    pub length: Option<u64>,
}

/// Most files decoded in one blocking call.
const BATCH_FILES: usize = 16;
/// Most known bytes read and decoded in one blocking call (decoded manifests are several times
/// their file size: what waits for the caller stays a few MiB of files).
const BATCH_BYTES: u64 = 1 << 20;
/// Batches decoded and waiting for the caller.
const QUEUED_BATCHES: usize = 2;

/// One file's outcome: its job and what reading and decoding it gave.
type Outcome<I, T> = (ReadJob<I>, Result<(usize, T)>);

enum Message<I, T> {
    Batch(Vec<Outcome<I, T>>),
    Failed(Error),
    Done,
}

/// Read each job's file (manifest lists and manifests: immutable, so through the statement's
/// read cache) and decode it off the async task, `concurrency` object-store reads at once (see
/// the module comment), in completion order. `progress` counts each file as it arrives.
pub(super) fn read_decoded<'a, I, T, D>(
    io: &'a FileIO,
    jobs: Vec<ReadJob<I>>,
    concurrency: usize,
    decode: Arc<D>,
    progress: &'a Progress,
) -> BoxStream<'a, Result<(I, Option<T>)>>
where
    I: Send + 'static,
    T: Send + 'static,
    D: Fn(&[u8], &str) -> Result<T> + Send + Sync + 'static,
{
    let (sender, receiver) = tokio::sync::mpsc::channel(QUEUED_BATCHES);
    let started = tokio::runtime::Handle::try_current().map(|runtime| {
        let pipeline = produce(io.clone(), jobs, concurrency, decode, sender);
        AbortOnDrop(runtime.spawn(pipeline).abort_handle())
    });
    let state = Receiving {
        receiver,
        _pipeline: started.ok(),
        done: false,
    };
    futures::stream::unfold(state, |mut state| async move {
        if state.done {
            return None;
        }
        let message = match state.receiver.recv().await {
            Some(message) => message,
            None => Message::Failed(Error::logical(
                "the manifest reading pipeline stopped before reading every file \
                 (no runtime, or it panicked)",
            )),
        };
        let items: Vec<Result<Outcome<I, T>>> = match message {
            Message::Batch(batch) => batch.into_iter().map(Ok).collect(),
            Message::Failed(e) => {
                state.done = true;
                vec![Err(e)]
            }
            Message::Done => return None,
        };
        Some((futures::stream::iter(items), state))
    })
    .flatten()
    .map(move |item| {
        let (job, outcome) = item?;
        match outcome {
            Ok((size, decoded)) => {
                progress.file_done(size);
                Ok((job.id, Some(decoded)))
            }
            Err(e) if !job.required && e.kind() == ErrorKind::FileDoesntExist => {
                progress.file_done(0);
                Ok((job.id, None))
            }
            Err(e) => Err(e),
        }
    })
    .boxed()
}

/// The caller's end: the channel, and the pipeline's task, aborted when the caller drops the
/// stream (a failure elsewhere, or a cancelled statement).
struct Receiving<I, T> {
    receiver: tokio::sync::mpsc::Receiver<Message<I, T>>,
    _pipeline: Option<AbortOnDrop>,
    done: bool,
}

struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// Files per batch for `files` files: small batches when there are few, so every core gets
/// several; at most [`BATCH_FILES`].
fn batch_files(files: usize) -> usize {
    (files / (cores() * 8)).clamp(1, BATCH_FILES)
}

/// The pipeline: local files in blocking batches, object-store files read on this task and
/// decoded in batches; every batch sent as it is done, then "done".
async fn produce<I, T, D>(
    io: FileIO,
    mut jobs: Vec<ReadJob<I>>,
    concurrency: usize,
    decode: Arc<D>,
    sender: tokio::sync::mpsc::Sender<Message<I, T>>,
) where
    I: Send + 'static,
    T: Send + 'static,
    D: Fn(&[u8], &str) -> Result<T> + Send + Sync + 'static,
{
    // Largest known length first; files of unknown length keep their order after them.
    jobs.sort_by_key(|job| std::cmp::Reverse(job.length.unwrap_or(0)));
    let per_batch = batch_files(jobs.len());
    let (local, remote): (Vec<_>, Vec<_>) = jobs
        .into_iter()
        .partition(|job| io.reads_directly(&job.uri));
    let in_flight = cores() * 4;
    let local = futures::stream::iter(local_batches(local, per_batch))
        .map(|batch| decode_local(io.clone(), batch, Arc::clone(&decode)))
        .buffer_unordered(in_flight);
    let remote = futures::stream::iter(remote)
        .map(|job| read_remote(&io, job))
        .buffer_unordered(concurrency.max(1))
        .ready_chunks(per_batch)
        .map(|reads| decode_read(reads, Arc::clone(&decode), io.read_cache().cloned()))
        .buffer_unordered(in_flight);
    let mut batches = std::pin::pin!(local.chain(remote));
    while let Some(batch) = batches.next().await {
        let message = match batch {
            Ok(batch) => Message::Batch(batch),
            Err(e) => Message::Failed(e),
        };
        if sender.send(message).await.is_err() {
            return;
        }
    }
    let _ = sender.send(Message::Done).await;
}

/// The jobs dealt round-robin into batches of about `per_batch` files, and enough batches that
/// each holds about [`BATCH_BYTES`] known bytes at most: dealt, not cut in runs, so that every
/// batch gets its share of large and small files (manifest lists have no known length, and the
/// newest, longest lists of a history come last).
fn local_batches<I>(jobs: Vec<ReadJob<I>>, per_batch: usize) -> Vec<Vec<ReadJob<I>>> {
    let known: u64 = jobs.iter().filter_map(|job| job.length).sum();
    let count = jobs
        .len()
        .div_ceil(per_batch.max(1))
        .max(usize::try_from(known.div_ceil(BATCH_BYTES)).unwrap_or(usize::MAX))
        .min(jobs.len());
    let mut batches: Vec<Vec<ReadJob<I>>> = (0..count).map(|_| Vec::new()).collect();
    for (i, job) in jobs.into_iter().enumerate() {
        if let Some(batch) = batches.get_mut(i % count) {
            batch.push(job);
        }
    }
    batches
}

/// Read and decode a batch of local files in one blocking call.
async fn decode_local<I, T, D>(
    io: FileIO,
    batch: Vec<ReadJob<I>>,
    decode: Arc<D>,
) -> Result<Vec<Outcome<I, T>>>
where
    I: Send + 'static,
    T: Send + 'static,
    D: Fn(&[u8], &str) -> Result<T> + Send + Sync + 'static,
{
    crate::pool::off_task(move || {
        Ok(batch
            .into_iter()
            .map(|job| {
                let outcome = io
                    .read_immutable_blocking_and(&job.uri, job.length, |b| decode(b, &job.uri))
                    .unwrap_or_else(|| {
                        Err(Error::logical(format!("'{}' is not a local file", job.uri)))
                    });
                (job, outcome)
            })
            .collect())
    })
    .await
}

/// Read one object-store file whole, from the statement's cache when it holds it.
async fn read_remote<I>(io: &FileIO, job: ReadJob<I>) -> (ReadJob<I>, Result<Cached>) {
    let key = io.read_cache().map(|_| crate::io::path_key(&job.uri));
    if let (Some(cache), Some(key)) = (io.read_cache(), &key)
        && let Some(bytes) = cache.get(key, job.length)
    {
        return (job, Ok(Cached { bytes, key: None }));
    }
    let read = io.read(&job.uri).await.map(|bytes| Cached { bytes, key });
    (job, read)
}

/// A file's bytes, and its cache key when it is to be kept after it decoded.
struct Cached {
    bytes: bytes::Bytes,
    key: Option<String>,
}

/// Decode object-store files that were read, in one blocking call; each kept in the statement's
/// cache once it decoded.
async fn decode_read<I, T, D>(
    reads: Vec<(ReadJob<I>, Result<Cached>)>,
    decode: Arc<D>,
    cache: Option<Arc<crate::io::ReadCache>>,
) -> Result<Vec<Outcome<I, T>>>
where
    I: Send + 'static,
    T: Send + 'static,
    D: Fn(&[u8], &str) -> Result<T> + Send + Sync + 'static,
{
    crate::pool::off_task(move || {
        Ok(reads
            .into_iter()
            .map(|(job, read)| {
                let outcome = read.and_then(|cached| {
                    let decoded = decode(&cached.bytes, &job.uri)?;
                    if let (Some(cache), Some(key)) = (&cache, &cached.key) {
                        cache.insert(key, job.length, &cached.bytes);
                    }
                    Ok((cached.bytes.len(), decoded))
                });
                (job, outcome)
            })
            .collect())
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(n: usize, length: Option<u64>) -> ReadJob<usize> {
        ReadJob {
            id: n,
            required: true,
            uri: format!("/t/{n}"),
            length,
        }
    }

    #[test]
    fn batches_are_dealt_by_files_and_bytes() {
        let ids = |batches: &[Vec<ReadJob<usize>>]| -> Vec<Vec<usize>> {
            batches
                .iter()
                .map(|b| b.iter().map(|j| j.id).collect())
                .collect()
        };
        let jobs: Vec<_> = (0..10).map(|n| job(n, Some(1_000))).collect();
        let batches = local_batches(jobs, 3);
        assert_eq!(
            ids(&batches),
            [vec![0, 4, 8], vec![1, 5, 9], vec![2, 6], vec![3, 7]]
        );
        // About 1 MiB a batch: three 400 kB files make two batches.
        let jobs: Vec<_> = (0..3).map(|n| job(n, Some(400_000))).collect();
        assert_eq!(ids(&local_batches(jobs, 16)), [vec![0, 2], vec![1]]);
        // Never more batches than files; every job is in exactly one batch.
        let jobs = vec![job(0, Some(64 << 20)), job(1, None), job(2, None)];
        assert_eq!(ids(&local_batches(jobs, 16)), [vec![0], vec![1], vec![2]]);
        let jobs: Vec<_> = (0..5).map(|n| job(n, None)).collect();
        assert_eq!(ids(&local_batches(jobs, 16)), [vec![0, 1, 2, 3, 4]]);
        assert!(local_batches(Vec::<ReadJob<usize>>::new(), 4).is_empty());
        assert_eq!(batch_files(1), 1);
        assert_eq!(batch_files(1_000_000), BATCH_FILES);
    }

    /// Every file comes back exactly once with its own decoded answer, on local disk (batched
    /// blocking reads) and on an object store (the memory store: reads on the task); a gone file
    /// that is not required is `None`, a gone required one fails the stream.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_file_once_locally_and_remotely() {
        let dir = tempfile::tempdir().unwrap();
        let memory = FileIO::memory();
        let mut local_jobs = Vec::new();
        let mut remote_jobs = Vec::new();
        for n in 0..100usize {
            let path = dir.path().join(format!("f{n}.avro"));
            std::fs::write(&path, vec![1u8; n]).unwrap();
            let uri = path.to_string_lossy().to_string();
            let length = (n % 2 == 0).then_some(n as u64);
            local_jobs.push(ReadJob {
                id: n,
                required: true,
                uri,
                length,
            });
            let uri = format!("memory:///t/f{n}.avro");
            memory
                .overwrite(&uri, bytes::Bytes::from(vec![1u8; n]))
                .await
                .unwrap();
            remote_jobs.push(ReadJob {
                id: n,
                required: true,
                uri,
                length,
            });
        }
        let gone = |uri: String, required: bool| ReadJob {
            id: 1000,
            required,
            uri,
            length: None,
        };
        let local = FileIO::local();
        let missing_local = dir.path().join("gone.avro").to_string_lossy().to_string();
        let decode = Arc::new(|bytes: &[u8], _: &str| Ok::<usize, Error>(bytes.len()));
        let progress = Progress::default();
        for (io, mut jobs, missing) in [
            (&local, local_jobs, missing_local),
            (&memory, remote_jobs, "memory:///t/gone.avro".to_string()),
        ] {
            assert_eq!(io.reads_directly(&jobs[0].uri), std::ptr::eq(io, &local));
            jobs.push(gone(missing.clone(), false));
            let got: Vec<(usize, Option<usize>)> =
                read_decoded(io, jobs, 8, Arc::clone(&decode), &progress)
                    .map(|r| r.unwrap())
                    .collect()
                    .await;
            let mut got = got;
            got.sort();
            assert_eq!(got.len(), 101);
            for (n, (id, len)) in got.iter().take(100).enumerate() {
                assert_eq!((*id, *len), (n, Some(n)));
            }
            assert_eq!(got[100], (1000, None), "a gone optional file");
            let failed: Vec<Result<(usize, Option<usize>)>> = read_decoded(
                io,
                vec![gone(missing, true)],
                8,
                Arc::clone(&decode),
                &progress,
            )
            .collect()
            .await;
            assert_eq!(failed.len(), 1);
            let err = failed.into_iter().next().unwrap().unwrap_err();
            assert_eq!(err.kind(), ErrorKind::FileDoesntExist, "{err}");
        }
    }
}
