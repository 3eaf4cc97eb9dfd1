//! The deletes of [`FileIO`]: one file, or many at once. Deleting a missing object succeeds
//! everywhere (S3 says so itself; Azure and local disk answer NotFound, which is mapped to
//! success). Bulk deletes go out in the service's batch size (S3 1000 keys a request, Azure 256)
//! with several batches in flight; a batch whose request fails whole is sent again for the keys
//! the store did not confirm.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, StreamExt, stream::BoxStream};
use object_store::{ObjectStore, ObjectStoreExt, path::Path as ObjectPath};

use super::FileIO;
use super::errors::storage_error;
use super::location::{Family, StoreKey};
use crate::error::{Error, Result};

/// Batches of one bulk delete in flight at once.
pub const DELETE_BATCHES_IN_FLIGHT: usize = 8;
/// Attempts per batch when the whole request fails.
const DELETE_ATTEMPTS: u32 = 3;

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

impl FileIO {
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
    use object_store::PutPayload;
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
