//! Maintenance decisions, as pure functions on data (no I/O, no async, no parsing):
//!
//! - [`retention`]: the effective table retention policy (settings < table properties < arguments);
//! - [`policy`]: which snapshots and refs `expire_snapshots` lets go, and why (SPEC §3);
//! - [`keepset`]: which files go with them, planned in two phases so the caller reads only the
//!   manifests that matter (SPEC §3 "Files", "Order");
//! - [`paths`]: interned path keys and bitsets of them, for the keep set;
//! - [`orphans`]: how `remove_orphan_files` classifies a listed file (SPEC §4);
//! - [`graph`]: reading the file graph (manifest lists, manifests) from storage, for expiry;
//! - [`expire`]: the executor of `expire_snapshots` (plan, commit, delete);
//! - [`reachable`] and [`orphan_scan`]: the executor of `remove_orphan_files` (reads, lists, deletes).
//!
//! The executors that read metadata, commit and delete call these and act on their answers.

use crate::error::{Error, Result};

mod decoded;
pub mod expire;
mod fingerprint_set;
pub mod graph;
pub mod keepset;
pub mod orphan_scan;
pub mod orphans;
pub mod paths;
pub mod policy;
pub mod reachable;
pub mod retention;
pub mod target;

/// Run CPU work on the blocking pool (so files decode in parallel), or inline outside a runtime.
/// At most one piece of work per core runs at once, however many reads are in flight: more
/// decoding threads than cores only add context switches, and each new thread starts with cold
/// buffers and its own allocator arena (on 2 cores, 32 decoding threads spent a third of a
/// 1,000-snapshot expiry faulting in fresh pages).
pub(crate) async fn off_task<T, F>(work: F) -> Result<T>
where
    F: FnOnce() -> Result<T> + Send + 'static,
    T: Send + 'static,
{
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return work();
    };
    let permit = cpu_permits()
        .acquire_owned()
        .await
        .map_err(|e| Error::logical(format!("decoding permits closed: {e}")))?;
    handle
        .spawn_blocking(move || {
            let out = work();
            drop(permit);
            out
        })
        .await
        .map_err(|e| Error::logical(format!("decoding task failed: {e}")))?
}

/// Holds a value whose drop is slow (a parsed 100,000-snapshot metadata document, a large file
/// graph: most of a second of `free`) and drops it on a short-lived thread instead of making the
/// statement wait; dereferences to the value.
pub(crate) struct DropLater<T: Send + 'static>(Option<T>);

impl<T: Send + 'static> DropLater<T> {
    pub(crate) fn new(value: T) -> Self {
        DropLater(Some(value))
    }
}

impl<T: Send + 'static> std::ops::Deref for DropLater<T> {
    type Target = T;

    fn deref(&self) -> &T {
        // Only `Drop` takes the value out.
        self.0
            .as_ref()
            .unwrap_or_else(|| unreachable!("DropLater is emptied only by drop"))
    }
}

impl<T: Send + 'static> Drop for DropLater<T> {
    fn drop(&mut self) {
        if let Some(value) = self.0.take() {
            // When no thread can be started, the closure (and the value) drops here.
            let _ = std::thread::Builder::new()
                .name("icetrim-drop".into())
                .spawn(move || drop(value));
        }
    }
}

/// One permit per core, shared by every statement in the process.
fn cpu_permits() -> std::sync::Arc<tokio::sync::Semaphore> {
    static PERMITS: std::sync::OnceLock<std::sync::Arc<tokio::sync::Semaphore>> =
        std::sync::OnceLock::new();
    PERMITS
        .get_or_init(|| {
            let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
            std::sync::Arc::new(tokio::sync::Semaphore::new(cores))
        })
        .clone()
}
