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
