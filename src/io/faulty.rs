//! Fault injection for crash tests: a store wrapper that fails, or "crashes" (fails every call
//! from then on), after the k-th mutating operation, and counts what it was asked to do.
//!
//! Mutations are puts (and copies) and each key of a delete. With a plan `(k, fault)` the first
//! `k` mutations succeed and mutation `k + 1` meets the fault:
//! - [`Fault::FailOnce`]: that mutation fails without effect; everything after succeeds;
//! - [`Fault::FailMutations`]: it and every later mutation fail without effect; reads work;
//! - [`Fault::Crash`]: it fails without effect and every later call (reads too) fails;
//! - [`Fault::CrashAfterApplying`]: it takes effect but reports failure (a lost response), then
//!   every later call fails.

use std::fmt;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use async_trait::async_trait;
use futures::{StreamExt, stream::BoxStream};
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    ObjectStoreExt, PutMultipartOptions, PutOptions, PutPayload, PutResult, Result, path::Path,
};

/// What happens at the planned mutation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    FailOnce,
    FailMutations,
    Crash,
    CrashAfterApplying,
}

/// The shared control of one or more [`FaultyStore`]s: the plan and the counters.
#[derive(Debug, Default)]
pub struct FaultInjector {
    plan: Mutex<Option<(u64, Fault)>>,
    crashed: AtomicBool,
    calls: AtomicU64,
    mutations: AtomicU64,
    failures: AtomicU64,
}

/// What to do with one mutation.
enum Verdict {
    Apply,
    Refuse,
    ApplyThenFail,
}

impl FaultInjector {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// After `k` successful mutations, meet `fault`. Replaces any earlier plan; counters stay.
    pub fn fail_after(&self, k: u64, fault: Fault) {
        if let Ok(mut plan) = self.plan.lock() {
            *plan = Some((self.mutations.load(Ordering::SeqCst) + k, fault));
        }
    }

    /// Remove the plan and recover from a crash.
    pub fn heal(&self) {
        if let Ok(mut plan) = self.plan.lock() {
            *plan = None;
        }
        self.crashed.store(false, Ordering::SeqCst);
    }

    /// Whether the store has crashed.
    pub fn crashed(&self) -> bool {
        self.crashed.load(Ordering::SeqCst)
    }

    /// Every call made (reads, writes, deletes per key, listings).
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::SeqCst)
    }

    /// Mutations attempted (puts, copies, deleted keys), including refused ones.
    pub fn mutations(&self) -> u64 {
        self.mutations.load(Ordering::SeqCst)
    }

    /// Calls answered with an injected error.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::SeqCst)
    }

    fn fault(&self, what: &str) -> object_store::Error {
        self.failures.fetch_add(1, Ordering::SeqCst);
        object_store::Error::Generic {
            store: "FaultyStore",
            source: format!(
                "injected fault: {what} refused after {} mutations",
                self.mutations()
            )
            .into(),
        }
    }

    /// A read or listing: fails only after a crash.
    fn check_read(&self, what: &str) -> Result<()> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.crashed() {
            return Err(self.fault(what));
        }
        Ok(())
    }

    fn judge_mutation(&self) -> Verdict {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let n = self.mutations.fetch_add(1, Ordering::SeqCst) + 1;
        if self.crashed() {
            return Verdict::Refuse;
        }
        let plan = self.plan.lock().ok().and_then(|plan| *plan);
        match plan {
            Some((k, fault)) if n > k => match fault {
                Fault::FailOnce if n == k + 1 => Verdict::Refuse,
                Fault::FailOnce => Verdict::Apply,
                Fault::FailMutations => Verdict::Refuse,
                Fault::Crash => {
                    self.crashed.store(true, Ordering::SeqCst);
                    Verdict::Refuse
                }
                Fault::CrashAfterApplying => {
                    self.crashed.store(true, Ordering::SeqCst);
                    Verdict::ApplyThenFail
                }
            },
            _ => Verdict::Apply,
        }
    }

    /// Run a mutation under the plan.
    async fn mutate<T, F>(&self, what: &str, op: F) -> Result<T>
    where
        F: Future<Output = Result<T>>,
    {
        match self.judge_mutation() {
            Verdict::Apply => op.await,
            Verdict::Refuse => Err(self.fault(what)),
            Verdict::ApplyThenFail => {
                op.await?;
                Err(self.fault(what))
            }
        }
    }
}

/// A store that obeys a [`FaultInjector`].
#[derive(Debug)]
pub struct FaultyStore {
    inner: Arc<dyn ObjectStore>,
    injector: Arc<FaultInjector>,
}

impl FaultyStore {
    pub fn new(inner: Arc<dyn ObjectStore>, injector: Arc<FaultInjector>) -> Self {
        FaultyStore { inner, injector }
    }
}

impl fmt::Display for FaultyStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Faulty({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for FaultyStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        let write = self.inner.put_opts(location, payload, opts);
        self.injector
            .mutate(&format!("put {location}"), write)
            .await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        let start = self.inner.put_multipart_opts(location, opts);
        self.injector
            .mutate(&format!("put {location}"), start)
            .await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.injector.check_read(&format!("get {location}"))?;
        self.inner.get_opts(location, options).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        let inner = Arc::clone(&self.inner);
        let injector = Arc::clone(&self.injector);
        locations
            .then(move |location| {
                let inner = Arc::clone(&inner);
                let injector = Arc::clone(&injector);
                async move {
                    let location = location?;
                    let what = format!("delete {location}");
                    injector.mutate(&what, inner.delete(&location)).await?;
                    Ok(location)
                }
            })
            .boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        match self.injector.check_read("list") {
            Ok(()) => self.inner.list(prefix),
            Err(e) => futures::stream::once(async move { Err(e) }).boxed(),
        }
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.injector.check_read("list")?;
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        let copy = self.inner.copy_opts(from, to, options);
        self.injector.mutate(&format!("copy to {to}"), copy).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::memory::InMemory;

    fn store() -> (FaultyStore, Arc<FaultInjector>) {
        let injector = FaultInjector::new();
        let store = FaultyStore::new(Arc::new(InMemory::new()), Arc::clone(&injector));
        (store, injector)
    }

    async fn put(store: &FaultyStore, name: &str) -> Result<PutResult> {
        store
            .put(&Path::from(name), PutPayload::from_static(b"x"))
            .await
    }

    async fn exists(store: &FaultyStore, name: &str) -> bool {
        store.inner.head(&Path::from(name)).await.is_ok()
    }

    #[tokio::test]
    async fn fail_once_then_recover() {
        let (store, injector) = store();
        injector.fail_after(1, Fault::FailOnce);
        assert!(put(&store, "a").await.is_ok());
        assert!(put(&store, "b").await.is_err());
        assert!(!exists(&store, "b").await);
        assert!(put(&store, "c").await.is_ok());
        assert_eq!((injector.mutations(), injector.failures()), (3, 1));
    }

    #[tokio::test]
    async fn crash_fails_everything_after() {
        let (store, injector) = store();
        injector.fail_after(2, Fault::Crash);
        assert!(put(&store, "a").await.is_ok());
        assert!(put(&store, "b").await.is_ok());
        assert!(put(&store, "c").await.is_err());
        assert!(injector.crashed());
        assert!(store.get(&Path::from("a")).await.is_err());
        assert!(store.list(None).next().await.is_some_and(|r| r.is_err()));
        injector.heal();
        assert!(store.get(&Path::from("a")).await.is_ok());
        assert!(!exists(&store, "c").await);
    }

    #[tokio::test]
    async fn crash_after_applying_keeps_the_effect() {
        let (store, injector) = store();
        injector.fail_after(0, Fault::CrashAfterApplying);
        assert!(put(&store, "a").await.is_err());
        assert!(exists(&store, "a").await);
        assert!(put(&store, "b").await.is_err());
        assert!(!exists(&store, "b").await);
    }

    #[tokio::test]
    async fn deletes_count_per_key() {
        let (store, injector) = store();
        for name in ["a", "b", "c"] {
            assert!(put(&store, name).await.is_ok());
        }
        injector.fail_after(1, Fault::FailMutations);
        let paths = futures::stream::iter(["a", "b", "c"].map(|n| Ok(Path::from(n)))).boxed();
        let results: Vec<_> = store.delete_stream(paths).collect().await;
        let outcomes: Vec<bool> = results.iter().map(|r| r.is_ok()).collect();
        assert_eq!(outcomes, [true, false, false]);
        assert!(!exists(&store, "a").await);
        assert!(exists(&store, "b").await && exists(&store, "c").await);
        assert_eq!(injector.mutations(), 6);
    }
}
