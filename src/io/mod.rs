//! Storage: turns the URIs Iceberg metadata names (`/abs/path`, `file://`, `s3://`, `abfss://`,
//! `memory://`, …) into an object_store plus a path, and offers the few operations maintenance
//! needs: read, create-if-absent write, overwrite, delete (a missing file counts as deleted), and
//! recursive listing with size and last-modified.
//!
//! Everything above this module speaks full URIs (strings, as written in metadata); nothing above
//! it sees `object_store` types.

use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt, stream::BoxStream};
use object_store::{
    ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, path::Path as ObjectPath,
};

use crate::error::{Error, ErrorKind, Result};

/// A listed file.
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

/// One store and the URI prefix (`scheme://authority`, or `""` for local paths) it serves.
#[derive(Clone)]
pub struct FileIO {
    store: Arc<dyn ObjectStore>,
    /// `file` for local disk, `memory`, `s3`, ...
    scheme: String,
}

impl std::fmt::Debug for FileIO {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileIO")
            .field("scheme", &self.scheme)
            .finish()
    }
}

impl FileIO {
    /// Local disk: serves absolute paths and `file://` URIs.
    pub fn local() -> Self {
        FileIO {
            store: Arc::new(object_store::local::LocalFileSystem::new()),
            scheme: "file".into(),
        }
    }

    /// A fresh in-memory store serving `memory://` URIs (tests).
    pub fn memory() -> Self {
        FileIO {
            store: Arc::new(object_store::memory::InMemory::new()),
            scheme: "memory".into(),
        }
    }

    /// Map a URI to the object path within this store.
    pub fn object_path(&self, uri: &str) -> Result<ObjectPath> {
        let rest = match self.scheme.as_str() {
            "file" => uri.strip_prefix("file://").unwrap_or(uri),
            "memory" => uri
                .strip_prefix("memory://")
                .ok_or_else(|| Error::bad_arguments(format!("not a memory:// path: {uri}")))?,
            other => {
                return Err(Error::not_implemented(format!(
                    "storage scheme '{other}' for {uri}"
                )));
            }
        };
        ObjectPath::parse(rest.trim_start_matches('/'))
            .map_err(|e| Error::bad_arguments(format!("invalid path '{uri}': {e}")))
    }

    fn uri_of(&self, path: &ObjectPath) -> String {
        match self.scheme.as_str() {
            "file" => format!("/{path}"),
            s => format!("{s}://{path}"),
        }
    }

    /// Read a whole file.
    pub async fn read(&self, uri: &str) -> Result<Bytes> {
        let path = self.object_path(uri)?;
        let got = self
            .store
            .get(&path)
            .await
            .map_err(|e| storage_error("read", uri, e))?;
        got.bytes().await.map_err(|e| storage_error("read", uri, e))
    }

    /// Write a file only if no file has that name.
    pub async fn write_if_absent(&self, uri: &str, data: Bytes) -> Result<WriteOutcome> {
        let path = self.object_path(uri)?;
        let opts = PutOptions {
            mode: PutMode::Create,
            ..Default::default()
        };
        match self
            .store
            .put_opts(&path, PutPayload::from(data), opts)
            .await
        {
            Ok(_) => Ok(WriteOutcome::Created),
            Err(object_store::Error::AlreadyExists { .. }) => Ok(WriteOutcome::AlreadyExists),
            Err(e) => Err(storage_error("write", uri, e)),
        }
    }

    /// Write a file, replacing any file of that name.
    pub async fn overwrite(&self, uri: &str, data: Bytes) -> Result<()> {
        let path = self.object_path(uri)?;
        self.store
            .put(&path, PutPayload::from(data))
            .await
            .map(|_| ())
            .map_err(|e| storage_error("write", uri, e))
    }

    /// Delete a file; a file that is already gone counts as deleted.
    pub async fn delete(&self, uri: &str) -> Result<()> {
        let path = self.object_path(uri)?;
        match self.store.delete(&path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(storage_error("delete", uri, e)),
        }
    }

    /// Every file under `prefix_uri` (a directory), recursively.
    pub fn list(&self, prefix_uri: &str) -> BoxStream<'_, Result<FileInfo>> {
        let prefix = match self.object_path(prefix_uri) {
            Ok(p) => p,
            Err(e) => return futures::stream::once(async move { Err(e) }).boxed(),
        };
        let owned_prefix = prefix_uri.to_string();
        self.store
            .list(Some(&prefix))
            .map_ok(move |meta| FileInfo {
                uri: self.uri_of(&meta.location),
                size: meta.size,
                last_modified_ms: Some(meta.last_modified.timestamp_millis()),
            })
            .map_err(move |e| storage_error("list", &owned_prefix, e))
            .boxed()
    }
}

fn storage_error(op: &str, uri: &str, e: object_store::Error) -> Error {
    let kind = match e {
        object_store::Error::NotFound { .. } => ErrorKind::FileDoesntExist,
        object_store::Error::AlreadyExists { .. } => ErrorKind::FileAlreadyExists,
        _ => ErrorKind::StorageError,
    };
    Error::new(kind, format!("Cannot {op} '{uri}': {e}"))
}
