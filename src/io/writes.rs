//! The writes of [`FileIO`]: create-if-absent (the commit primitive), overwrite, and streamed
//! multipart uploads ([`Upload`]). Errors as in `ops`: the URI and ClickHouse's code for the store.

use bytes::Bytes;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

use super::FileIO;
use super::errors::storage_error;
use crate::error::Result;

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

/// The outcome of a create-if-absent write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOutcome {
    Created,
    AlreadyExists,
}

impl FileIO {
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
}
