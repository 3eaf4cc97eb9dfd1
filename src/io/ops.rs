//! The operations of [`FileIO`] on URIs: read, range read, head, create-if-absent write,
//! overwrite, delete, bulk delete, and streaming listings.
//!
//! Errors name the URI and carry ClickHouse's code for the store (`errors`: not found →
//! `FILE_DOESNT_EXIST`; S3 `S3_ERROR`, Azure `AZURE_BLOB_STORAGE_ERROR`, local disk the code of the
//! step that failed). Deleting a missing object succeeds everywhere (S3 says so itself; Azure and
//! local disk answer NotFound, which is mapped to success). Bulk deletes go out in the service's
//! batch size (S3 1000 keys a request, Azure 256) with several batches in flight.

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::{FutureExt, StreamExt, TryStreamExt, stream::BoxStream};
use object_store::{
    ObjectMeta, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload,
    path::Path as ObjectPath,
};

use super::FileIO;
use super::errors::storage_error;
use super::location::{Family, Location, StoreKey};
use crate::error::{Error, ErrorKind, Result};

/// Part size of a streamed write ([`FileIO::start_upload`]); S3 needs at least 5 MiB.
const UPLOAD_PART_BYTES: usize = 8 << 20;

/// A streamed write in progress ([`FileIO::start_upload`]). Parts are uploaded by tasks of the
/// current Tokio runtime: call [`Upload::write`] inside it (or inside `Handle::enter`).
pub struct Upload {
    uri: String,
    inner: object_store::WriteMultipart,
    written: u64,
}

impl std::fmt::Debug for Upload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upload")
            .field("uri", &self.uri)
            .field("written", &self.written)
            .finish()
    }
}

impl Upload {
    /// Queue `buf`; a full part starts uploading.
    pub fn write(&mut self, buf: &[u8]) {
        self.inner.write(buf);
        self.written += buf.len() as u64;
    }

    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Wait until at most `parts` part uploads are in flight (bounds the memory they hold).
    pub async fn wait_for_capacity(&mut self, parts: usize) -> Result<()> {
        self.inner
            .wait_for_capacity(parts)
            .await
            .map_err(|e| storage_error("write", &self.uri, e))
    }

    /// Upload what is left and complete the file.
    pub async fn finish(self) -> Result<()> {
        let uri = self.uri;
        self.inner
            .finish()
            .await
            .map(|_| ())
            .map_err(|e| storage_error("write", &uri, e))
    }

    /// Give up: nothing becomes visible.
    pub async fn abort(self) {
        let _ = self.inner.abort().await;
    }
}

/// Batches of one bulk delete in flight at once.
pub const DELETE_BATCHES_IN_FLIGHT: usize = 8;
/// Attempts per batch when the whole request fails.
const DELETE_ATTEMPTS: u32 = 3;

/// A listed (or inspected) file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileInfo {
    /// Full URI, in the same scheme and authority as the listed prefix.
    pub uri: String,
    pub size: u64,
    /// Milliseconds since the epoch; `None` when the store did not say.
    pub last_modified_ms: Option<i64>,
}

/// One entry of a listing that says what it saw ([`FileIO::list_entries`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listed {
    /// A regular file.
    File(FileInfo),
    /// A symbolic link (to a file, a folder, nowhere or itself): never followed, never a file
    /// of the listing. Only local disk has links.
    Link { uri: String },
    /// Something the listing cannot vouch for: not listed (so never deleted).
    Skipped { uri: String, reason: SkipReason },
    /// A regular local file named `<name>#<digits>`: object_store's multipart upload of
    /// `<name>`, still running or left by a killed writer. object_store neither lists, reads nor
    /// deletes it; [`FileIO::delete_below`] removes it on the local store a `FileIO` builds
    /// itself, the only store that reports it (object_store's own local listing hides it; on
    /// object stores such a name is a plain object, a [`Listed::File`]).
    UnfinishedUpload(FileInfo),
}

/// Why a listing skipped an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkipReason {
    /// The name is not UTF-8 (the URI shows its bytes escaped, `\xff`).
    NotUtf8Name,
    /// The name holds an ASCII control character (shown escaped).
    ControlCharacterName,
    /// A folder (or file) that could not be opened or read: the system's reason.
    Unreadable(String),
    /// A folder met again below itself (a bind-mount loop).
    FolderLoop,
}

impl SkipReason {
    /// The short spelling (EXPLAIN's `reason` column).
    pub fn as_str(&self) -> &'static str {
        match self {
            SkipReason::NotUtf8Name => "not_utf8_name",
            SkipReason::ControlCharacterName => "control_character_name",
            SkipReason::Unreadable(_) => "unreadable",
            SkipReason::FolderLoop => "folder_loop",
        }
    }
}

impl std::fmt::Display for SkipReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SkipReason::NotUtf8Name => f.write_str("the name is not UTF-8"),
            SkipReason::ControlCharacterName => f.write_str("the name holds a control character"),
            SkipReason::Unreadable(why) => write!(f, "cannot be read: {why}"),
            SkipReason::FolderLoop => f.write_str("the folder appears again below itself"),
        }
    }
}

/// The outcome of a create-if-absent write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOutcome {
    Created,
    AlreadyExists,
}

/// The outcome of deleting one URI of a bulk delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteOutcome {
    pub uri: String,
    /// `Ok` when the object is gone (deleted now, or already missing).
    pub result: Result<()>,
}

impl DeleteOutcome {
    /// One outcome per uri, in order: its answer, or "Cannot delete '<uri>': <why>" (the store's
    /// code for a failed delete) when none came.
    pub(crate) fn for_each(
        uris: &[String],
        results: Vec<Option<Result<()>>>,
        why: &str,
    ) -> Vec<DeleteOutcome> {
        uris.iter()
            .zip(results)
            .map(|(uri, result)| DeleteOutcome {
                uri: uri.clone(),
                result: result.unwrap_or_else(|| {
                    let kind = super::errors::delete_failure_kind(uri);
                    Err(Error::new(kind, format!("Cannot delete '{uri}': {why}")))
                }),
            })
            .collect()
    }
}

/// Keys per delete request the service accepts.
pub(crate) fn delete_batch_size(family: Family) -> usize {
    match family {
        Family::S3 => 1000,
        Family::Azure => 256,
        Family::File | Family::Memory | Family::Gcs => 1,
    }
}

/// Objects per listing response.
pub(crate) fn list_page_size(family: Family) -> u64 {
    match family {
        Family::S3 | Family::Gcs => 1000,
        Family::Azure => 5000,
        Family::File | Family::Memory => u64::MAX,
    }
}

fn file_info(location: &Location, meta: &ObjectMeta) -> FileInfo {
    FileInfo {
        uri: location.uri_of(&meta.location),
        size: meta.size,
        last_modified_ms: Some(meta.last_modified.timestamp_millis()),
    }
}

impl FileIO {
    /// Read a whole file.
    pub async fn read(&self, uri: &str) -> Result<Bytes> {
        let (location, path, store) = self.resolve(uri)?;
        if self.reads_local_directly(&location) {
            return super::local_fs::read(uri, &location.path).await;
        }
        let got = store
            .get(&path)
            .await
            .map_err(|e| storage_error("read", uri, e))?;
        got.bytes().await.map_err(|e| storage_error("read", uri, e))
    }

    /// Read `uri` whole and hand its bytes to `work`, off the async task. A direct local read
    /// (see [`FileIO::read`]) and `work` run in one blocking call under one CPU permit (two
    /// hand-offs per file were a tenth of a 100,000-manifest expiry); other stores read
    /// asynchronously first. Returns the file's size with `work`'s answer.
    pub async fn read_and<T, W>(&self, uri: &str, work: W) -> Result<(usize, T)>
    where
        T: Send + 'static,
        W: FnOnce(&[u8]) -> Result<T> + Send + 'static,
    {
        let location = Location::parse(uri)?;
        if self.reads_local_directly(&location) {
            let file = format!("/{}", location.path);
            let uri = uri.to_string();
            return crate::pool::off_task(move || {
                let bytes = super::local_fs::read_blocking(&uri, &file)?;
                Ok((bytes.len(), work(&bytes)?))
            })
            .await;
        }
        let bytes = self.read(uri).await?;
        crate::pool::off_task(move || Ok((bytes.len(), work(&bytes)?))).await
    }

    /// [`FileIO::read_and`] for a file that never changes once written (a manifest list or a
    /// manifest), `length` bytes long when the caller knows it: answered from the statement's
    /// [`super::ReadCache`] when it holds the file, else read and kept there (after `work`
    /// succeeded). Without a cache, exactly [`FileIO::read_and`].
    pub async fn read_immutable_and<T, W>(
        &self,
        uri: &str,
        length: Option<u64>,
        work: W,
    ) -> Result<(usize, T)>
    where
        T: Send + 'static,
        W: FnOnce(&[u8]) -> Result<T> + Send + 'static,
    {
        let Some(cache) = &self.cache else {
            return self.read_and(uri, work).await;
        };
        let key = super::path_key(uri);
        if let Some(bytes) = cache.get(&key, length) {
            return crate::pool::off_task(move || Ok((bytes.len(), work(&bytes)?))).await;
        }
        let location = Location::parse(uri)?;
        let (bytes, answer) = if self.reads_local_directly(&location) {
            let file = format!("/{}", location.path);
            let uri = uri.to_string();
            crate::pool::off_task(move || {
                let bytes = super::local_fs::read_blocking(&uri, &file)?;
                let answer = work(&bytes)?;
                Ok((bytes, answer))
            })
            .await?
        } else {
            let bytes = self.read(uri).await?;
            crate::pool::off_task(move || {
                let answer = work(&bytes)?;
                Ok((bytes, answer))
            })
            .await?
        };
        cache.insert(&key, length, &bytes);
        Ok((bytes.len(), answer))
    }

    /// [`FileIO::read`] of a file that never changes once written, through the statement's cache
    /// as [`FileIO::read_immutable_and`] reads.
    pub async fn read_immutable(&self, uri: &str, length: Option<u64>) -> Result<Bytes> {
        let Some(cache) = &self.cache else {
            return self.read(uri).await;
        };
        let key = super::path_key(uri);
        if let Some(bytes) = cache.get(&key, length) {
            return Ok(bytes);
        }
        let bytes = self.read(uri).await?;
        cache.insert(&key, length, &bytes);
        Ok(bytes)
    }

    /// Read bytes `range` of a file (the range must lie within the file).
    pub async fn read_range(&self, uri: &str, range: Range<u64>) -> Result<Bytes> {
        let (_, path, store) = self.resolve(uri)?;
        store
            .get_range(&path, range)
            .await
            .map_err(|e| storage_error("read", uri, e))
    }

    /// Size and last-modified time of a file.
    pub async fn head(&self, uri: &str) -> Result<FileInfo> {
        let (location, path, store) = self.resolve(uri)?;
        let meta = store
            .head(&path)
            .await
            .map_err(|e| storage_error("inspect", uri, e))?;
        Ok(FileInfo {
            uri: location.uri(),
            ..file_info(&location, &meta)
        })
    }

    /// Write a file only if no file has that name (atomic on local disk, S3 and Azure).
    pub async fn write_if_absent(&self, uri: &str, data: Bytes) -> Result<WriteOutcome> {
        let (_, path, store) = self.resolve(uri)?;
        let opts = PutOptions {
            mode: PutMode::Create,
            ..Default::default()
        };
        match store.put_opts(&path, PutPayload::from(data), opts).await {
            Ok(_) => Ok(WriteOutcome::Created),
            Err(object_store::Error::AlreadyExists { .. }) => Ok(WriteOutcome::AlreadyExists),
            Err(e) => Err(storage_error("write", uri, e)),
        }
    }

    /// Start a streamed write of `uri` (a multipart upload: parts go out as they fill, nothing is
    /// visible at `uri` before [`Upload::finish`]). Writes replace any file of that name.
    pub async fn start_upload(&self, uri: &str) -> Result<Upload> {
        let (_, path, store) = self.resolve(uri)?;
        let upload = store
            .put_multipart(&path)
            .await
            .map_err(|e| storage_error("write", uri, e))?;
        Ok(Upload {
            uri: uri.to_string(),
            inner: object_store::WriteMultipart::new_with_chunk_size(upload, UPLOAD_PART_BYTES),
            written: 0,
        })
    }

    /// Write a file, replacing any file of that name.
    pub async fn overwrite(&self, uri: &str, data: Bytes) -> Result<()> {
        let (_, path, store) = self.resolve(uri)?;
        store
            .put(&path, PutPayload::from(data))
            .await
            .map(|_| ())
            .map_err(|e| storage_error("write", uri, e))
    }

    /// Delete a file; a file that is already gone counts as deleted.
    pub async fn delete(&self, uri: &str) -> Result<()> {
        let (_, path, store) = self.resolve(uri)?;
        match store.delete(&path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(storage_error("delete", uri, e)),
        }
    }

    /// Delete many files, batched per store; one outcome per URI, in the order given. Up to
    /// [`DELETE_BATCHES_IN_FLIGHT`] requests run at once; see [`FileIO::delete_many_with`].
    pub async fn delete_many(&self, uris: &[String]) -> Vec<DeleteOutcome> {
        self.delete_many_with(uris, DELETE_BATCHES_IN_FLIGHT).await
    }

    /// [`FileIO::delete_many`] with at most `in_flight` delete requests at once (each a bulk
    /// request of up to 1000 keys on S3 and 256 on Azure, one file elsewhere).
    pub async fn delete_many_with(&self, uris: &[String], in_flight: usize) -> Vec<DeleteOutcome> {
        let mut results: Vec<Option<Result<()>>> = vec![None; uris.len()];
        let mut groups: HashMap<StoreKey, (Arc<dyn ObjectStore>, Vec<Target>)> = HashMap::new();
        let mut local: Vec<(usize, String)> = Vec::new();
        for (index, uri) in uris.iter().enumerate() {
            match self.resolve(uri) {
                Ok((location, _, _)) if self.reads_local_directly(&location) => {
                    local.push((index, format!("/{}", location.path)));
                }
                Ok((location, path, store)) => {
                    groups
                        .entry(location.store.clone())
                        .or_insert_with(|| (store, Vec::new()))
                        .1
                        .push(Target { index, path });
                }
                Err(e) => results[index] = Some(Err(e.context("Cannot delete"))),
            }
        }
        // Named types, not tuples, in the closures below: a closure over `Arc<dyn ObjectStore>`
        // infers a trait-object lifetime of its own, and the future is then not `Send` for every
        // lifetime (a host's `tokio::spawn` refuses it).
        let mut batches: Vec<DeleteBatch> = Vec::new();
        for (key, (store, targets)) in groups {
            let size = delete_batch_size(key.family);
            let mut targets = targets.into_iter().peekable();
            while targets.peek().is_some() {
                let batch: Vec<Target> = targets.by_ref().take(size).collect();
                batches.push(DeleteBatch {
                    store: Arc::clone(&store),
                    targets: batch,
                });
            }
        }
        // Owned names for the messages: a stream that borrowed `uris` would make this future
        // one the compiler cannot prove `Send` for every lifetime (a host's `tokio::spawn`).
        let names: Arc<[String]> = uris.into();
        let stored = futures::stream::iter(batches).map(move |batch: DeleteBatch| -> Deleting {
            let names = Arc::clone(&names);
            async move {
                delete_batch(batch.store, batch.targets)
                    .await
                    .into_iter()
                    .map(|(index, outcome)| {
                        let uri = names.get(index).map_or("", |u| u.as_str());
                        (index, outcome.map_err(|e| storage_error("delete", uri, e)))
                    })
                    .collect::<Vec<_>>()
            }
            .boxed()
        });
        let unlinked = super::local_fs::unlink_in_chunks(local, uris);
        // Boxed: held across the awaits below, the combinator's own type would make this future
        // one the compiler cannot prove `Send` for every lifetime.
        let mut answered: BoxStream<'static, Vec<(usize, Result<()>)>> =
            futures::stream::select(stored, unlinked)
                .buffer_unordered(in_flight.max(1))
                .boxed();
        while let Some(outcomes) = answered.next().await {
            for (index, outcome) in outcomes {
                if let Some(slot) = results.get_mut(index) {
                    *slot = Some(outcome);
                }
            }
        }
        DeleteOutcome::for_each(uris, results, "the store gave no answer")
    }

    /// Every file under the directory `prefix_uri`, recursively, as one streaming listing. On a
    /// local store this `FileIO` built itself, the files of [`FileIO::list_concurrent`] with one
    /// worker: no symbolic link below `prefix_uri` is followed.
    pub fn list(&self, prefix_uri: &str) -> BoxStream<'static, Result<FileInfo>> {
        if Location::parse(prefix_uri).is_ok_and(|l| self.lists_local_directly(&l)) {
            return self.list_concurrent(prefix_uri, 1);
        }
        let (location, path, store) = match self.resolve(prefix_uri) {
            Ok(resolved) => resolved,
            Err(e) => return futures::stream::once(async move { Err(e) }).boxed(),
        };
        let owned_prefix = prefix_uri.to_string();
        store
            .list(Some(&path))
            .map_ok(move |meta| file_info(&location, &meta))
            .map_err(move |e| storage_error("list", &owned_prefix, e))
            .boxed()
    }

    /// The names of the files directly inside the folder `dir_uri` (not recursive); an empty
    /// list when the folder does not exist. A local folder of a store this `FileIO` built itself
    /// is read with one `readdir` and no `stat` per file (object_store's local listing stats
    /// every file of its recursive walk: a second of a 200,000-file `metadata/`); there, only
    /// regular files count (a symbolic link is never a file of the table) and names that are
    /// not UTF-8 are left out (they are no metadata file this table can name).
    pub async fn list_names(&self, dir_uri: &str) -> Result<Vec<String>> {
        let dir_uri = dir_uri.trim_end_matches('/');
        let location = Location::parse(dir_uri)?;
        if self.lists_local_directly(&location) {
            let dir = format!("/{}", location.path);
            let uri = dir_uri.to_string();
            return tokio::task::spawn_blocking(move || super::local_fs::file_names(&uri, &dir))
                .await
                .map_err(|e| Error::logical(format!("local listing task failed: {e}")))?;
        }
        let listed: Result<Vec<FileInfo>> = self.list(dir_uri).try_collect().await;
        let files = match listed {
            Ok(files) => files,
            Err(e) if e.kind() == ErrorKind::FileDoesntExist => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let base = self.object_path(dir_uri)?;
        let base = base.as_ref();
        Ok(files
            .into_iter()
            .filter_map(|f| {
                let path = self.object_path(&f.uri).ok()?;
                let rest = path.as_ref().strip_prefix(base)?;
                let rest = if base.is_empty() {
                    rest
                } else {
                    rest.strip_prefix('/')?
                };
                (!rest.is_empty() && !rest.contains('/')).then(|| rest.to_string())
            })
            .collect())
    }

    /// Like [`FileIO::list`], but lists each first-level directory under `prefix_uri` as its own
    /// listing, up to `max_in_flight` at once, merging them into one stream (order unspecified).
    /// The files of [`FileIO::list_entries`]`(prefix_uri, prefix_uri, ..)`: on local disk no link
    /// below `prefix_uri` is followed and nothing the listing cannot vouch for is listed.
    pub fn list_concurrent(
        &self,
        prefix_uri: &str,
        max_in_flight: usize,
    ) -> BoxStream<'static, Result<FileInfo>> {
        self.list_entries(prefix_uri, prefix_uri, max_in_flight)
            .try_filter_map(|entry| async move {
                Ok(match entry {
                    Listed::File(file) => Some(file),
                    Listed::Link { .. } | Listed::Skipped { .. } | Listed::UnfinishedUpload(_) => {
                        None
                    }
                })
            })
            .boxed()
    }

    /// Every entry under `prefix_uri`, which is `root_uri` or lies below it, recursively
    /// (first-level folders concurrently, up to `max_in_flight`; order unspecified).
    ///
    /// On local disk no symbolic link below `root_uri` is followed, in `prefix_uri` or under it:
    /// each is a [`Listed::Link`], and nothing behind it is listed. `root_uri` itself is opened as
    /// the path it is (a link there is the caller's choice). Names and folders the listing cannot
    /// vouch for are [`Listed::Skipped`]. The local store a `FileIO` builds itself is walked
    /// directly (`local_walk`; it also reports object_store's unfinished local uploads,
    /// [`Listed::UnfinishedUpload`]); an injected or layered local store is listed by object_store,
    /// which follows links: every file whose path below `root_uri` passes through a link is
    /// reported as that link instead (a link loop still fails that listing). Object stores have
    /// no links: every entry is a file.
    pub fn list_entries(
        &self,
        root_uri: &str,
        prefix_uri: &str,
        max_in_flight: usize,
    ) -> BoxStream<'static, Result<Listed>> {
        let parsed = Location::parse(root_uri).and_then(|r| Ok((r, Location::parse(prefix_uri)?)));
        match parsed {
            Ok((root, prefix)) if self.lists_local_directly(&prefix) => {
                super::local_walk::list(&root, &prefix, max_in_flight)
            }
            Ok((root, prefix)) if prefix.store.family == Family::File => {
                let files = self.list_concurrent_store(prefix_uri, max_in_flight);
                super::local_fs::drop_linked(files, root, prefix)
            }
            _ => self
                .list_concurrent_store(prefix_uri, max_in_flight)
                .map_ok(Listed::File)
                .boxed(),
        }
    }

    /// [`FileIO::list_concurrent`] through object_store.
    pub(super) fn list_concurrent_store(
        &self,
        prefix_uri: &str,
        max_in_flight: usize,
    ) -> BoxStream<'static, Result<FileInfo>> {
        let (location, path, store) = match self.resolve(prefix_uri) {
            Ok(resolved) => resolved,
            Err(e) => return futures::stream::once(async move { Err(e) }).boxed(),
        };
        let owned_prefix = prefix_uri.to_string();
        let top = async move {
            store
                .list_with_delimiter(Some(&path))
                .await
                .map(|r| (store, r))
        };
        futures::stream::once(top)
            .map_ok(move |(store, top)| {
                let files = futures::stream::iter(top.objects.into_iter().map(Ok));
                let directories = futures::stream::iter(top.common_prefixes)
                    .map(move |directory| store.list(Some(&directory)))
                    .flatten_unordered(max_in_flight.max(1));
                files.chain(directories)
            })
            .try_flatten()
            .map_ok(move |meta| file_info(&location, &meta))
            .map_err(move |e| storage_error("list", &owned_prefix, e))
            .boxed()
    }
}

/// One object of a bulk delete and its place in the caller's list.
struct Target {
    index: usize,
    path: ObjectPath,
}

/// A delete request in flight: the outcome of each target, by index.
type Deleting = futures::future::BoxFuture<'static, Vec<(usize, Result<()>)>>;

/// One bulk delete request: targets of one store.
struct DeleteBatch {
    store: Arc<dyn ObjectStore>,
    targets: Vec<Target>,
}

/// Delete one batch, one `delete_stream` call per attempt. Stores answer each key in order
/// (final: per-key errors are not retried), or fail the whole request with one error (a dropped
/// connection: azurite under load); deleting is idempotent, so the keys the store did not
/// confirm are sent again, up to [`DELETE_ATTEMPTS`] times. Every target gets an outcome.
async fn delete_batch(
    store: Arc<dyn ObjectStore>,
    batch: Vec<Target>,
) -> Vec<(usize, object_store::Result<()>)> {
    let mut pending = batch;
    let mut outcomes = Vec::with_capacity(pending.len());
    for attempt in 1..=DELETE_ATTEMPTS {
        let paths: Vec<object_store::Result<ObjectPath>> =
            pending.iter().map(|t| Ok(t.path.clone())).collect();
        let answers: Vec<object_store::Result<ObjectPath>> = store
            .delete_stream(futures::stream::iter(paths).boxed())
            .collect()
            .await;
        if answers.len() == pending.len() {
            let answered = pending
                .iter()
                .map(|t| t.index)
                .zip(answers.into_iter().map(gone));
            outcomes.extend(answered);
            return outcomes;
        }
        let mut failure = None;
        let mut confirmed = HashSet::new();
        for answer in answers {
            match answer {
                Ok(path) => {
                    confirmed.insert(path);
                }
                Err(e) => failure = failure.or(Some(e)),
            }
        }
        let (done, rest): (Vec<Target>, Vec<Target>) = pending
            .into_iter()
            .partition(|t| confirmed.contains(&t.path));
        outcomes.extend(done.into_iter().map(|t| (t.index, Ok(()))));
        pending = rest;
        if pending.is_empty() || attempt == DELETE_ATTEMPTS {
            let message = failure.map_or_else(
                || "the store answered for only part of the batch".to_string(),
                |e| e.to_string(),
            );
            outcomes.extend(pending.iter().map(|t| {
                let error = object_store::Error::Generic {
                    store: "bulk delete",
                    source: message.clone().into(),
                };
                (t.index, Err(error))
            }));
            return outcomes;
        }
        tokio::time::sleep(Duration::from_millis(100 * attempt as u64)).await;
    }
    outcomes
}

/// A missing key counts as deleted.
fn gone(answer: object_store::Result<ObjectPath>) -> object_store::Result<()> {
    match answer {
        Ok(_) | Err(object_store::Error::NotFound { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

    use async_trait::async_trait;
    use object_store::memory::InMemory;

    use super::*;
    use crate::io::{FaultyStore, Op, StoreHook};

    /// Its first `failures` delete requests drop the connection after deleting their first key,
    /// and it counts the delete requests running at once (each pauses a little first).
    #[derive(Debug, Default)]
    struct Dropping {
        failures: AtomicU32,
        active: AtomicUsize,
        peak: AtomicUsize,
    }

    #[async_trait]
    impl StoreHook for Dropping {
        async fn before(&self, op: Op, _: Option<&ObjectPath>) -> object_store::Result<()> {
            if op == Op::DeleteRequest {
                let now = self.active.fetch_add(1, Ordering::SeqCst) + 1;
                self.peak.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            Ok(())
        }

        async fn after(&self, op: Op, _: Option<&ObjectPath>, _: bool) {
            if op == Op::DeleteRequest {
                self.active.fetch_sub(1, Ordering::SeqCst);
            }
        }

        async fn drop_delete(&self, index: usize, _: &ObjectPath) -> Option<object_store::Error> {
            let drop = index == 1
                && self
                    .failures
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                    .is_ok();
            drop.then(|| object_store::Error::Generic {
                store: "Dropping",
                source: "connection dropped".into(),
            })
        }
    }

    fn dropping(inner: &Arc<InMemory>, failures: u32) -> (Arc<dyn ObjectStore>, Arc<Dropping>) {
        let hook = Arc::new(Dropping {
            failures: AtomicU32::new(failures),
            ..Dropping::default()
        });
        let inner: Arc<dyn ObjectStore> = Arc::clone(inner) as Arc<dyn ObjectStore>;
        let store = FaultyStore::hooked(inner, Arc::clone(&hook) as Arc<dyn StoreHook>);
        (Arc::new(store), hook)
    }

    async fn run(failures: u32) -> (Vec<bool>, Arc<InMemory>) {
        let inner = Arc::new(InMemory::new());
        let mut batch = Vec::new();
        for (index, name) in ["a", "b", "c", "d"].into_iter().enumerate() {
            let path = ObjectPath::from(name);
            let written = inner.put(&path, PutPayload::from_static(b"x")).await;
            assert!(written.is_ok());
            batch.push(Target { index, path });
        }
        let (store, _) = dropping(&inner, failures);
        let mut outcomes = delete_batch(store, batch).await;
        outcomes.sort_by_key(|(index, _)| *index);
        (outcomes.iter().map(|(_, r)| r.is_ok()).collect(), inner)
    }

    #[tokio::test]
    async fn dropped_batches_are_sent_again() {
        let (ok, inner) = run(DELETE_ATTEMPTS - 1).await;
        assert_eq!(ok, [true, true, true, true]);
        assert_eq!(inner.list(None).count().await, 0);
    }

    #[tokio::test]
    async fn batches_that_keep_dropping_fail_the_unconfirmed_keys() {
        // Each attempt deletes one key before the connection drops; the last key is never sent
        // successfully.
        let (ok, inner) = run(DELETE_ATTEMPTS + 5).await;
        assert_eq!(ok, [true, true, true, false]);
        assert_eq!(inner.list(None).count().await, 1);
    }

    #[tokio::test]
    async fn delete_many_with_bounds_the_requests_in_flight() {
        for in_flight in [1, 3, 8] {
            let inner = Arc::new(InMemory::new());
            let (store, hook) = dropping(&inner, 0);
            let io = FileIO::from_store("memory:///", store).expect("memory io");
            let uris: Vec<String> = (0..40).map(|i| format!("memory:///t/f{i}")).collect();
            for uri in &uris {
                io.overwrite(uri, bytes::Bytes::from_static(b"x"))
                    .await
                    .expect("write");
            }
            let outcomes = io.delete_many_with(&uris, in_flight).await;
            assert!(outcomes.iter().all(|o| o.result.is_ok()));
            assert_eq!(inner.list(None).count().await, 0);
            let peak = hook.peak.load(Ordering::SeqCst);
            assert!(
                peak <= in_flight,
                "{peak} requests at once, asked for {in_flight}"
            );
            assert!(
                peak >= in_flight.min(2),
                "deletes ran one at a time ({peak})"
            );
        }
    }
}
