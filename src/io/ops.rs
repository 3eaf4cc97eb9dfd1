//! The reads and listings of [`FileIO`] on URIs: read, range read, head, and streaming listings
//! (plain, fanned out over the first folder level, or saying what they saw: [`Listed`]). Writes
//! are in `writes`, deletes in `deletes`.
//!
//! Errors name the URI and carry ClickHouse's code for the store (`errors`: not found →
//! `FILE_DOESNT_EXIST`; S3 `S3_ERROR`, Azure `AZURE_BLOB_STORAGE_ERROR`, local disk the code of the
//! step that failed).

use std::ops::Range;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt, stream::BoxStream};
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};

use super::FileIO;
use super::errors::storage_error;
use super::location::{Family, Location};
use crate::error::{Error, ErrorKind, Result};

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

    /// Whether `uri` is read directly from local disk, blocking ([`FileIO::read_and`]'s fast
    /// path; see [`FileIO::read_immutable_blocking_and`]).
    pub fn reads_directly(&self, uri: &str) -> bool {
        Location::parse(uri).is_ok_and(|l| self.reads_local_directly(&l))
    }

    /// [`FileIO::read_immutable_and`] on the calling thread, for a file read directly from
    /// local disk (as [`FileIO::read_and`] would): through the statement's cache, if any (kept
    /// after `work` succeeded). `None` when `uri` is not read directly (a remote or layered
    /// store: read it on the async task). For decoding pipelines that read and decode several
    /// small files in one blocking call.
    pub fn read_immutable_blocking_and<T>(
        &self,
        uri: &str,
        length: Option<u64>,
        work: impl FnOnce(&[u8]) -> Result<T>,
    ) -> Option<Result<(usize, T)>> {
        let location = match Location::parse(uri) {
            Ok(location) => location,
            Err(e) => return Some(Err(e)),
        };
        if !self.reads_local_directly(&location) {
            return None;
        }
        let Some(cache) = &self.cache else {
            let read = super::local_fs::read_blocking(uri, &format!("/{}", location.path));
            return Some(read.and_then(|bytes| Ok((bytes.len(), work(&bytes)?))));
        };
        let key = super::path_key(uri);
        if let Some(bytes) = cache.get(&key, length) {
            return Some(work(&bytes).map(|answer| (bytes.len(), answer)));
        }
        let read = super::local_fs::read_blocking(uri, &format!("/{}", location.path));
        Some(read.and_then(|bytes| {
            let answer = work(&bytes)?;
            cache.insert(&key, length, &bytes);
            Ok((bytes.len(), answer))
        }))
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

    /// The names of the folders directly inside `dir_uri` (object stores: the common prefixes
    /// of one delimited listing), sorted, at most `limit`. For hints: any failure is no folders.
    pub async fn folder_names(&self, dir_uri: &str, limit: usize) -> Vec<String> {
        let dir_uri = dir_uri.trim_end_matches('/');
        let Ok(location) = Location::parse(dir_uri) else {
            return Vec::new();
        };
        if self.lists_local_directly(&location) {
            let dir = format!("/{}", location.path);
            return tokio::task::spawn_blocking(move || super::local_fs::folder_names(&dir, limit))
                .await
                .unwrap_or_default();
        }
        let Ok((_, path, store)) = self.resolve(dir_uri) else {
            return Vec::new();
        };
        let Ok(listed) = store.list_with_delimiter(Some(&path)).await else {
            return Vec::new();
        };
        let mut names: Vec<String> = listed
            .common_prefixes
            .iter()
            .filter_map(|prefix| prefix.filename().map(str::to_string))
            .take(limit)
            .collect();
        names.sort();
        names
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
