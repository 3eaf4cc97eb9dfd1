//! Request counting for benchmarks: a store wrapper that counts calls by kind.
//!
//! Counted at the object_store API: one GET per `get`/range read, one HEAD per `head`, one PUT
//! per put (multipart: per part plus completion is not tracked, icetrim writes small files), one
//! DELETE per `delete_stream` call (FileIO sends one call per server-side batch: 1000 keys on
//! S3, 256 on Azure, 1 elsewhere) and per deleted key in `deleted_keys`, and LIST as one per
//! listing page (a page = `list_page_size` objects, at least one page per listing).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use futures::{StreamExt, stream::BoxStream};
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result, path::Path,
};

/// Live counters, shared by every store of one `FileIO`.
#[derive(Debug, Default)]
pub struct RequestCounter {
    get: AtomicU64,
    head: AtomicU64,
    put: AtomicU64,
    delete: AtomicU64,
    deleted_keys: AtomicU64,
    list: AtomicU64,
}

/// A snapshot of [`RequestCounter`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestCounts {
    pub get: u64,
    pub head: u64,
    pub put: u64,
    /// Delete requests (a bulk delete of up to 1000 keys is one).
    pub delete: u64,
    /// Keys submitted for deletion.
    pub deleted_keys: u64,
    pub list: u64,
}

impl RequestCounts {
    /// All requests together.
    pub fn total(&self) -> u64 {
        self.get + self.head + self.put + self.delete + self.list
    }
}

impl fmt::Display for RequestCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "GET {} HEAD {} PUT {} DELETE {} ({} keys) LIST {}",
            self.get, self.head, self.put, self.delete, self.deleted_keys, self.list
        )
    }
}

impl RequestCounter {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The counts so far.
    pub fn snapshot(&self) -> RequestCounts {
        RequestCounts {
            get: self.get.load(Ordering::Relaxed),
            head: self.head.load(Ordering::Relaxed),
            put: self.put.load(Ordering::Relaxed),
            delete: self.delete.load(Ordering::Relaxed),
            deleted_keys: self.deleted_keys.load(Ordering::Relaxed),
            list: self.list.load(Ordering::Relaxed),
        }
    }

    /// Set every counter to zero.
    pub fn reset(&self) {
        for counter in [
            &self.get,
            &self.head,
            &self.put,
            &self.delete,
            &self.deleted_keys,
            &self.list,
        ] {
            counter.store(0, Ordering::Relaxed);
        }
    }
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// Wraps a store and counts its requests into a shared [`RequestCounter`].
#[derive(Debug)]
pub struct CountingStore {
    inner: Arc<dyn ObjectStore>,
    counter: Arc<RequestCounter>,
    list_page_size: u64,
}

impl CountingStore {
    /// `list_page_size`: objects per listing response of the wrapped service (S3 1000,
    /// Azure 5000); use `u64::MAX` for stores without pages.
    pub fn new(
        inner: Arc<dyn ObjectStore>,
        counter: Arc<RequestCounter>,
        list_page_size: u64,
    ) -> Self {
        CountingStore {
            inner,
            counter,
            list_page_size: list_page_size.max(1),
        }
    }

    fn count_pages(
        &self,
        stream: BoxStream<'static, Result<ObjectMeta>>,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        let counter = Arc::clone(&self.counter);
        let page = self.list_page_size;
        bump(&counter.list);
        stream
            .enumerate()
            .map(move |(i, item)| {
                let seen = i as u64 + 1;
                if seen > 1 && (seen - 1).is_multiple_of(page) {
                    bump(&counter.list);
                }
                item
            })
            .boxed()
    }
}

impl fmt::Display for CountingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Counting({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for CountingStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        bump(&self.counter.put);
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        bump(&self.counter.put);
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        if options.head {
            bump(&self.counter.head);
        } else {
            bump(&self.counter.get);
        }
        self.inner.get_opts(location, options).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        bump(&self.counter.delete);
        let counter = Arc::clone(&self.counter);
        let counted = locations
            .map(move |location| {
                bump(&counter.deleted_keys);
                location
            })
            .boxed();
        self.inner.delete_stream(counted)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.count_pages(self.inner.list(prefix))
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        self.count_pages(self.inner.list_with_offset(prefix, offset))
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        bump(&self.counter.list);
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        bump(&self.counter.put);
        self.inner.copy_opts(from, to, options).await
    }
}
