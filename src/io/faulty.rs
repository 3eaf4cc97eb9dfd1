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
//!
//! A test that needs more (run a concurrent writer before a commit, drop a connection in the
//! middle of a bulk delete, count requests in flight) gives the store a [`StoreHook`]: code run
//! before and after each call, told the call's [`Op`] and path, that may fail the call.

use std::fmt;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use async_trait::async_trait;
use futures::{StreamExt, stream::BoxStream};
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    ObjectStoreExt, PutMode, PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
    path::Path,
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

/// The kind of call a [`StoreHook`] is told about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// A put; `create` when it must not overwrite (`PutMode::Create`, a metadata commit).
    Put {
        create: bool,
    },
    /// The start of a multipart upload.
    PutMultipart,
    Get,
    /// One `delete_stream` request as a whole: before its first key, after its last answer.
    DeleteRequest,
    /// One key of a delete request; `index` is its position in the request.
    Delete {
        index: usize,
    },
    List,
    ListWithDelimiter,
    /// A copy; the path is the target.
    Copy,
}

/// Code a test runs around each call of a [`FaultyStore`] (before the [`FaultInjector`] judges
/// it). All three default to doing nothing.
#[async_trait]
pub trait StoreHook: fmt::Debug + Send + Sync {
    /// Before the call; an error fails it without effect (a key of a delete request: that key
    /// answers the error, the request goes on).
    async fn before(&self, op: Op, path: Option<&Path>) -> Result<()> {
        let _ = (op, path);
        Ok(())
    }

    /// Once the call is answered (a listing or delete request: once its stream ends); `ok`
    /// whether it succeeded (a stream: whether no item was an error).
    async fn after(&self, op: Op, path: Option<&Path>, ok: bool) {
        let _ = (op, path, ok);
    }

    /// Before key `index` of a delete request: `Some(error)` drops the connection there, as a
    /// network failure does: that key answers the error and the keys after it get no answer.
    async fn drop_delete(&self, index: usize, path: &Path) -> Option<object_store::Error> {
        let _ = (index, path);
        None
    }
}

/// A [`StoreHook`] that runs a closure before each call.
pub struct HookFn<F>(pub F);

impl<F> fmt::Debug for HookFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HookFn")
    }
}

#[async_trait]
impl<F> StoreHook for HookFn<F>
where
    F: Fn(Op, Option<&Path>) -> Result<()> + Send + Sync,
{
    async fn before(&self, op: Op, path: Option<&Path>) -> Result<()> {
        (self.0)(op, path)
    }
}

/// A store that obeys a [`FaultInjector`] and runs an optional [`StoreHook`].
#[derive(Debug)]
pub struct FaultyStore {
    inner: Arc<dyn ObjectStore>,
    injector: Arc<FaultInjector>,
    hook: Option<Arc<dyn StoreHook>>,
}

impl FaultyStore {
    pub fn new(inner: Arc<dyn ObjectStore>, injector: Arc<FaultInjector>) -> Self {
        FaultyStore {
            inner,
            injector,
            hook: None,
        }
    }

    /// A store that only runs `hook` (its injector has no plan).
    pub fn hooked(inner: Arc<dyn ObjectStore>, hook: Arc<dyn StoreHook>) -> Self {
        Self::new(inner, FaultInjector::new()).with_hook(hook)
    }

    /// Run `hook` around every call.
    pub fn with_hook(mut self, hook: Arc<dyn StoreHook>) -> Self {
        self.hook = Some(hook);
        self
    }

    async fn before(&self, op: Op, path: Option<&Path>) -> Result<()> {
        match &self.hook {
            Some(hook) => hook.before(op, path).await,
            None => Ok(()),
        }
    }

    async fn after<T>(&self, op: Op, path: Option<&Path>, result: Result<T>) -> Result<T> {
        if let Some(hook) = &self.hook {
            hook.after(op, path, result.is_ok()).await;
        }
        result
    }

    /// `stream` after the hook's `before(op)`, and followed by its `after(op)`.
    fn hook_stream<T: Send + 'static>(
        &self,
        op: Op,
        path: Option<&Path>,
        stream: impl FnOnce() -> BoxStream<'static, Result<T>> + Send + 'static,
    ) -> BoxStream<'static, Result<T>> {
        let Some(hook) = self.hook.clone() else {
            return stream();
        };
        let path = path.cloned();
        let ended = Arc::clone(&hook);
        let end_path = path.clone();
        let failed = Arc::new(AtomicBool::new(false));
        let seen = Arc::clone(&failed);
        futures::stream::once(async move {
            match hook.before(op, path.as_ref()).await {
                Ok(()) => stream(),
                Err(e) => futures::stream::once(async move { Err(e) }).boxed(),
            }
        })
        .flatten()
        .inspect(move |item| {
            if item.is_err() {
                seen.store(true, Ordering::SeqCst);
            }
        })
        .chain(
            futures::stream::once(async move {
                let ok = !failed.load(Ordering::SeqCst);
                ended.after(op, end_path.as_ref(), ok).await
            })
            .filter_map(|()| async { None }),
        )
        .boxed()
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
        let op = Op::Put {
            create: matches!(opts.mode, PutMode::Create),
        };
        self.before(op, Some(location)).await?;
        let write = self.inner.put_opts(location, payload, opts);
        let result = self
            .injector
            .mutate(&format!("put {location}"), write)
            .await;
        self.after(op, Some(location), result).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.before(Op::PutMultipart, Some(location)).await?;
        let start = self.inner.put_multipart_opts(location, opts);
        let result = self
            .injector
            .mutate(&format!("put {location}"), start)
            .await;
        self.after(Op::PutMultipart, Some(location), result).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.before(Op::Get, Some(location)).await?;
        self.injector.check_read(&format!("get {location}"))?;
        let result = self.inner.get_opts(location, options).await;
        self.after(Op::Get, Some(location), result).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        let inner = Arc::clone(&self.inner);
        let injector = Arc::clone(&self.injector);
        let hook = self.hook.clone();
        let keys = move || {
            // (the keys left, the next key's index, whether a dropped connection ended it)
            futures::stream::unfold(
                (locations, 0, false),
                move |(mut locations, index, ended)| {
                    let inner = Arc::clone(&inner);
                    let injector = Arc::clone(&injector);
                    let hook = hook.clone();
                    async move {
                        if ended {
                            return None;
                        }
                        let location = match locations.next().await? {
                            Ok(location) => location,
                            Err(e) => return Some((Err(e), (locations, index + 1, false))),
                        };
                        let op = Op::Delete { index };
                        if let Some(hook) = &hook {
                            // A dropped connection: the keys after this one get no answer.
                            if let Some(e) = hook.drop_delete(index, &location).await {
                                return Some((Err(e), (locations, index + 1, true)));
                            }
                            if let Err(e) = hook.before(op, Some(&location)).await {
                                return Some((Err(e), (locations, index + 1, false)));
                            }
                        }
                        let what = format!("delete {location}");
                        let result = injector.mutate(&what, inner.delete(&location)).await;
                        if let Some(hook) = &hook {
                            hook.after(op, Some(&location), result.is_ok()).await;
                        }
                        Some((result.map(|()| location), (locations, index + 1, false)))
                    }
                },
            )
            .boxed()
        };
        self.hook_stream(Op::DeleteRequest, None, keys)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        let inner = Arc::clone(&self.inner);
        let injector = Arc::clone(&self.injector);
        let owned = prefix.cloned();
        self.hook_stream(Op::List, prefix, move || {
            match injector.check_read("list") {
                Ok(()) => inner.list(owned.as_ref()),
                Err(e) => futures::stream::once(async move { Err(e) }).boxed(),
            }
        })
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.before(Op::ListWithDelimiter, prefix).await?;
        self.injector.check_read("list")?;
        let result = self.inner.list_with_delimiter(prefix).await;
        self.after(Op::ListWithDelimiter, prefix, result).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.before(Op::Copy, Some(to)).await?;
        let copy = self.inner.copy_opts(from, to, options);
        let result = self.injector.mutate(&format!("copy to {to}"), copy).await;
        self.after(Op::Copy, Some(to), result).await
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

    #[tokio::test]
    async fn a_hook_sees_each_call_and_refuses_one_key_of_a_delete_request() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        let hook = HookFn(move |op: Op, path: Option<&Path>| -> Result<()> {
            log.lock().unwrap().push((op, path.map(|p| p.to_string())));
            match (op, path) {
                (Op::Delete { .. }, Some(path)) if path.as_ref() == "b" => {
                    Err(object_store::Error::Generic {
                        store: "hook",
                        source: "dropped".into(),
                    })
                }
                _ => Ok(()),
            }
        });
        let store = FaultyStore::hooked(Arc::new(InMemory::new()), Arc::new(hook));
        for name in ["a", "b", "c"] {
            assert!(put(&store, name).await.is_ok());
        }
        let paths = futures::stream::iter(["a", "b", "c"].map(|n| Ok(Path::from(n)))).boxed();
        let results: Vec<_> = store.delete_stream(paths).collect().await;
        let outcomes: Vec<bool> = results.iter().map(|r| r.is_ok()).collect();
        assert_eq!(outcomes, [true, false, true]);
        assert!(!exists(&store, "a").await && !exists(&store, "c").await);
        assert!(exists(&store, "b").await);
        let seen = seen.lock().unwrap().clone();
        let key = |name: &str| Some(name.to_string());
        assert_eq!(
            seen[3..],
            [
                (Op::DeleteRequest, None),
                (Op::Delete { index: 0 }, key("a")),
                (Op::Delete { index: 1 }, key("b")),
                (Op::Delete { index: 2 }, key("c")),
            ]
        );
        assert_eq!(seen[0], (Op::Put { create: false }, key("a")));
    }
}
