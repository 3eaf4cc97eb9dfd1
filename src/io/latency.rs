//! Simulated object-store latency for tests and benchmarks: a store wrapper that makes every
//! request wait as a remote store would — a first-byte latency per request, then the body at a
//! per-stream bandwidth, all streams together within one aggregate bandwidth cap (for example
//! 30 ms, 100 MB/s a stream, 1 GB/s in all: S3 from a nearby region).
//!
//! The model, per request: wait `first_byte`; then the body's `n` bytes take `n ÷ per_stream`
//! on their own stream, and a slot of `n ÷ cap` on the shared link, which transfers one body
//! after another (a virtual clock: a body starts on the link when the link is free, at the
//! earliest when its first byte arrived). The request completes when both are done. A HEAD, a
//! DELETE request and each listing page (`list_page_size` objects, one page at least) pay the
//! first-byte latency only; a PUT pays it and its body. The layer also counts what it charged
//! ([`LatencyStats`]: requests and body bytes), the `R` and `B` of a latency floor
//! `⌈R ÷ N⌉ × first_byte + B ÷ min(N × per_stream, cap)` for `N` requests in flight.
//!
//! Reachable only through [`super::FileIO::with_latency`] (the Rust API that tests and the
//! benchmark call): no setting, environment variable or command-line flag builds it, so a
//! production statement never waits on it.

use std::fmt;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use futures::{StreamExt, stream::BoxStream};
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result, path::Path,
};
use tokio::time::Instant;

/// How slow the simulated store is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyProfile {
    /// Time to the first byte of every request.
    pub first_byte: Duration,
    /// Bytes a second of one request's body.
    pub stream_bytes_per_second: f64,
    /// Bytes a second of all bodies together.
    pub total_bytes_per_second: f64,
    /// Objects per listing page (S3: 1000); each page pays the first-byte latency.
    pub list_page_size: u64,
}

impl LatencyProfile {
    /// S3 from a nearby region: 30 ms to the first byte, 100 MB/s a stream, 1 GB/s in all,
    /// 1000 objects a listing page.
    pub fn nearby_s3() -> LatencyProfile {
        LatencyProfile {
            first_byte: Duration::from_millis(30),
            stream_bytes_per_second: 100e6,
            total_bytes_per_second: 1e9,
            list_page_size: 1000,
        }
    }

    /// The floor of `requests` requests moving `bytes` body bytes with `in_flight` requests at
    /// once: `⌈requests ÷ in_flight⌉ × first_byte + bytes ÷ min(in_flight × per_stream, cap)`.
    pub fn floor(&self, requests: u64, bytes: u64, in_flight: usize) -> Duration {
        let n = in_flight.max(1) as u64;
        let rounds = requests.div_ceil(n);
        let bandwidth = (n as f64 * self.stream_bytes_per_second).min(self.total_bytes_per_second);
        let transfer = if bandwidth > 0.0 {
            bytes as f64 / bandwidth
        } else {
            0.0
        };
        self.first_byte * u32::try_from(rounds).unwrap_or(u32::MAX)
            + Duration::from_secs_f64(transfer)
    }
}

/// What a [`LatencyStore`] charged so far (shared by every store of one `FileIO`).
#[derive(Debug, Default)]
pub struct LatencyStats {
    requests: AtomicU64,
    bytes: AtomicU64,
}

impl LatencyStats {
    /// Requests charged the first-byte latency (listing pages counted one each).
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Body bytes charged a transfer time (GET bodies and PUT payloads).
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }
}

/// The shared state of the simulated link: the profile, what was charged, and when the link is
/// free next.
#[derive(Debug)]
pub struct Latency {
    profile: LatencyProfile,
    stats: LatencyStats,
    link_free_at: Mutex<Option<Instant>>,
}

impl Latency {
    pub fn new(profile: LatencyProfile) -> Arc<Latency> {
        Arc::new(Latency {
            profile,
            stats: LatencyStats::default(),
            link_free_at: Mutex::new(None),
        })
    }

    pub fn profile(&self) -> &LatencyProfile {
        &self.profile
    }

    pub fn stats(&self) -> &LatencyStats {
        &self.stats
    }

    /// Wait the first-byte latency of one request.
    async fn first_byte(&self) {
        self.stats.requests.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep(self.profile.first_byte).await;
    }

    /// Wait for `bytes` of body that start arriving now.
    async fn transfer(&self, bytes: u64) {
        if bytes == 0 {
            return;
        }
        self.stats.bytes.fetch_add(bytes, Ordering::Relaxed);
        let now = Instant::now();
        let seconds = |rate: f64| {
            if rate > 0.0 {
                Duration::from_secs_f64(bytes as f64 / rate)
            } else {
                Duration::ZERO
            }
        };
        let stream_done = now + seconds(self.profile.stream_bytes_per_second);
        let link_done = {
            let mut free = self
                .link_free_at
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let start = free.map_or(now, |at| at.max(now));
            let done = start + seconds(self.profile.total_bytes_per_second);
            *free = Some(done);
            done
        };
        tokio::time::sleep_until(stream_done.max(link_done)).await;
    }
}

/// Wraps a store and makes every request wait as [`Latency`] says.
#[derive(Debug)]
pub struct LatencyStore {
    inner: Arc<dyn ObjectStore>,
    latency: Arc<Latency>,
}

impl LatencyStore {
    pub fn new(inner: Arc<dyn ObjectStore>, latency: Arc<Latency>) -> Self {
        LatencyStore { inner, latency }
    }

    /// `stream` with the first-byte latency before its first item and before every
    /// `list_page_size`-th item after it.
    fn paged<T: Send + 'static>(
        &self,
        stream: BoxStream<'static, Result<T>>,
    ) -> BoxStream<'static, Result<T>> {
        let latency = Arc::clone(&self.latency);
        let page = latency.profile.list_page_size.max(1);
        let first = {
            let latency = Arc::clone(&latency);
            futures::stream::once(async move { latency.first_byte().await })
        };
        let items = stream.enumerate().then(move |(i, item)| {
            let latency = Arc::clone(&latency);
            async move {
                if i > 0 && (i as u64).is_multiple_of(page) {
                    latency.first_byte().await;
                }
                item
            }
        });
        first
            .flat_map(|()| futures::stream::empty::<Result<T>>())
            .chain(items)
            .boxed()
    }
}

impl fmt::Display for LatencyStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Latency({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for LatencyStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.latency.first_byte().await;
        self.latency.transfer(payload.content_length() as u64).await;
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.latency.first_byte().await;
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let head = options.head;
        self.latency.first_byte().await;
        let got = self.inner.get_opts(location, options).await?;
        if !head {
            self.latency.transfer(got.range.end - got.range.start).await;
        }
        Ok(got)
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.paged(self.inner.delete_stream(locations))
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.paged(self.inner.list(prefix))
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        self.paged(self.inner.list_with_offset(prefix, offset))
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.latency.first_byte().await;
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.latency.first_byte().await;
        self.inner.copy_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::FileIO;

    fn profile(first_byte_ms: u64) -> LatencyProfile {
        LatencyProfile {
            first_byte: Duration::from_millis(first_byte_ms),
            stream_bytes_per_second: 1e6,
            total_bytes_per_second: 2e6,
            list_page_size: 10,
        }
    }

    #[test]
    fn the_floor_is_rounds_of_latency_plus_bytes_over_the_narrower_pipe() {
        let p = LatencyProfile::nearby_s3();
        // 100 requests, 32 at once: 4 rounds of 30 ms; 1 GB over min(3.2, 1) GB/s = 1 s.
        let floor = p.floor(100, 1_000_000_000, 32);
        assert_eq!(floor, Duration::from_millis(120) + Duration::from_secs(1));
        // One stream: 100 MB/s bounds the transfer.
        assert_eq!(
            p.floor(1, 100_000_000, 1),
            Duration::from_millis(30) + Duration::from_secs(1)
        );
        assert_eq!(p.floor(0, 0, 0), Duration::ZERO);
    }

    #[tokio::test]
    async fn each_request_waits_the_first_byte_and_bodies_their_bandwidth() {
        let latency = Latency::new(profile(20));
        let io = FileIO::memory().with_latency(Arc::clone(&latency));
        let started = std::time::Instant::now();
        io.overwrite("memory:///t/a", bytes::Bytes::from(vec![1u8; 10_000]))
            .await
            .unwrap();
        let put = started.elapsed();
        // 20 ms to the first byte, then 10 kB at 1 MB/s: 10 ms.
        assert!(put >= Duration::from_millis(30), "{put:?}");
        let started = std::time::Instant::now();
        assert_eq!(io.read("memory:///t/a").await.unwrap().len(), 10_000);
        let get = started.elapsed();
        assert!(get >= Duration::from_millis(30), "{get:?}");
        let started = std::time::Instant::now();
        io.head("memory:///t/a").await.unwrap();
        assert!(started.elapsed() >= Duration::from_millis(20));
        assert_eq!(latency.stats().bytes(), 20_000);
        assert!(latency.stats().requests() >= 3);
    }

    #[tokio::test]
    async fn concurrent_bodies_share_the_aggregate_cap() {
        let latency = Latency::new(profile(1));
        let io = FileIO::memory();
        for i in 0..4 {
            io.overwrite(
                &format!("memory:///t/{i}"),
                bytes::Bytes::from(vec![0u8; 20_000]),
            )
            .await
            .unwrap();
        }
        let slow = io.with_latency(Arc::clone(&latency));
        let started = std::time::Instant::now();
        let reads = (0..4).map(|i| {
            let slow = slow.clone();
            async move { slow.read(&format!("memory:///t/{i}")).await }
        });
        for read in futures::future::join_all(reads).await {
            assert_eq!(read.unwrap().len(), 20_000);
        }
        // Each 20 kB body alone takes 20 ms at 1 MB/s; four at once are 80 kB through the
        // 2 MB/s link: 40 ms at least, however the streams overlap.
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(40), "{took:?}");
    }

    #[tokio::test]
    async fn every_listing_page_pays_the_first_byte() {
        let io = FileIO::memory();
        for i in 0..25 {
            io.overwrite(
                &format!("memory:///t/f{i:02}"),
                bytes::Bytes::from_static(b"x"),
            )
            .await
            .unwrap();
        }
        let latency = Latency::new(profile(15));
        let slow = io.with_latency(Arc::clone(&latency));
        let started = std::time::Instant::now();
        let listed: Vec<_> = slow.list("memory:///t").collect().await;
        assert_eq!(listed.len(), 25);
        assert!(listed.iter().all(Result::is_ok));
        // 25 objects, 10 a page: 3 pages, 3 × 15 ms.
        assert_eq!(latency.stats().requests(), 3);
        assert!(started.elapsed() >= Duration::from_millis(45));
    }
}
