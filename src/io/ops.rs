//! The operations of [`FileIO`] on URIs: read, range read, head, create-if-absent write,
//! overwrite, delete, bulk delete, and streaming listings.
//!
//! Errors name the URI; not found → `FILE_DOESNT_EXIST`, anything else → `S3_ERROR`
//! (`StorageError`). Deleting a missing object succeeds everywhere (S3 says so itself; Azure and
//! local disk answer NotFound, which is mapped to success). Bulk deletes go out in the service's
//! batch size (S3 1000 keys a request, Azure 256) with several batches in flight.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt, stream::BoxStream};
use object_store::{
    ObjectMeta, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload,
    path::Path as ObjectPath,
};

use super::FileIO;
use super::location::{Family, Location, StoreKey};
use crate::error::{Error, ErrorKind, Result};

/// Batches of one bulk delete in flight at once.
const DELETE_BATCHES_IN_FLIGHT: usize = 8;

/// A listed (or inspected) file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileInfo {
    /// Full URI, in the same scheme and authority as the listed prefix.
    pub uri: String,
    pub size: u64,
    /// Milliseconds since the epoch; `None` when the store did not say.
    pub last_modified_ms: Option<i64>,
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

pub(crate) fn storage_error(op: &str, uri: &str, e: object_store::Error) -> Error {
    let kind = match e {
        object_store::Error::NotFound { .. } => ErrorKind::FileDoesntExist,
        object_store::Error::AlreadyExists { .. } => ErrorKind::FileAlreadyExists,
        _ => ErrorKind::StorageError,
    };
    Error::new(kind, format!("Cannot {op} '{uri}': {e}"))
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
        let (_, path, store) = self.resolve(uri)?;
        let got = store
            .get(&path)
            .await
            .map_err(|e| storage_error("read", uri, e))?;
        got.bytes().await.map_err(|e| storage_error("read", uri, e))
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

    /// Delete many files, batched per store; one outcome per URI, in the order given.
    pub async fn delete_many(&self, uris: &[String]) -> Vec<DeleteOutcome> {
        let mut results: Vec<Option<Result<()>>> = vec![None; uris.len()];
        let mut groups: HashMap<StoreKey, (Arc<dyn ObjectStore>, Vec<Target>)> = HashMap::new();
        for (index, uri) in uris.iter().enumerate() {
            match self.resolve(uri) {
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
        let batches = groups.into_iter().flat_map(|(key, (store, targets))| {
            let size = delete_batch_size(key.family);
            let mut batches = Vec::new();
            let mut targets = targets.into_iter().peekable();
            while targets.peek().is_some() {
                let batch: Vec<Target> = targets.by_ref().take(size).collect();
                batches.push((Arc::clone(&store), batch));
            }
            batches
        });
        let mut answered = futures::stream::iter(batches)
            .map(|(store, batch)| delete_batch(store, batch))
            .buffer_unordered(DELETE_BATCHES_IN_FLIGHT);
        while let Some(outcomes) = answered.next().await {
            for (index, outcome) in outcomes {
                if let Some(slot) = results.get_mut(index) {
                    *slot = Some(outcome.map_err(|e| {
                        storage_error("delete", uris.get(index).map_or("", |u| u), e)
                    }));
                }
            }
        }
        uris.iter()
            .zip(results)
            .map(|(uri, result)| DeleteOutcome {
                uri: uri.clone(),
                result: result.unwrap_or_else(|| {
                    Err(Error::new(
                        ErrorKind::StorageError,
                        format!("Cannot delete '{uri}': the store gave no answer"),
                    ))
                }),
            })
            .collect()
    }

    /// Every file under the directory `prefix_uri`, recursively, as one streaming listing.
    pub fn list(&self, prefix_uri: &str) -> BoxStream<'static, Result<FileInfo>> {
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

    /// Like [`FileIO::list`], but lists each first-level directory under `prefix_uri` as its own
    /// listing, up to `max_in_flight` at once, merging them into one stream (order unspecified).
    pub fn list_concurrent(
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

/// Delete one batch with one `delete_stream` call. Stores answer each key in order, or fail the
/// whole request with one error; either way every target gets an outcome.
async fn delete_batch(
    store: Arc<dyn ObjectStore>,
    batch: Vec<Target>,
) -> Vec<(usize, object_store::Result<()>)> {
    let paths: Vec<object_store::Result<ObjectPath>> =
        batch.iter().map(|t| Ok(t.path.clone())).collect();
    let answers: Vec<object_store::Result<ObjectPath>> = store
        .delete_stream(futures::stream::iter(paths).boxed())
        .collect()
        .await;
    let gone = |answer: object_store::Result<ObjectPath>| match answer {
        Ok(_) | Err(object_store::Error::NotFound { .. }) => Ok(()),
        Err(e) => Err(e),
    };
    if answers.len() == batch.len() {
        return batch
            .iter()
            .map(|t| t.index)
            .zip(answers.into_iter().map(gone))
            .collect();
    }
    // A request-level failure: keys the store confirmed are done, the rest share the error.
    let confirmed: Vec<ObjectPath> = answers
        .iter()
        .filter_map(|a| a.as_ref().ok().cloned())
        .collect();
    let failure = answers
        .into_iter()
        .find_map(|a| a.err())
        .map(|e| e.to_string())
        .unwrap_or_else(|| "the store answered for only part of the batch".to_string());
    batch
        .into_iter()
        .map(|t| {
            let outcome = if confirmed.contains(&t.path) {
                Ok(())
            } else {
                Err(object_store::Error::Generic {
                    store: "bulk delete",
                    source: failure.clone().into(),
                })
            };
            (t.index, outcome)
        })
        .collect()
}
