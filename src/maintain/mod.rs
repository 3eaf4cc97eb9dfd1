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

pub mod expire;
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
pub(crate) async fn off_task<T, F>(work: F) -> Result<T>
where
    F: FnOnce() -> Result<T> + Send + 'static,
    T: Send + 'static,
{
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => handle
            .spawn_blocking(work)
            .await
            .map_err(|e| Error::logical(format!("decoding task failed: {e}")))?,
        Err(_) => work(),
    }
}
