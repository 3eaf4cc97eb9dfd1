//! Table maintenance: the procedures, one folder each, over a shared reading of the file graph.
//!
//! - [`target`]: the table a procedure works on ([`target::MaintenanceTarget`]: storage, location,
//!   settings, "now", the statement's [`crate::progress::Progress`]).
//! - [`file_graph`]: reading a table's file graph from storage (manifest lists, manifests,
//!   statistics entries), interned path keys and fingerprints, the reachable set. Shared by the
//!   procedures.
//! - [`old_metadata`]: after a confirmed path-table commit, the metadata files that left
//!   `metadata-log` (`write.metadata.delete-after-commit.enabled`).
//! - [`expire`]: the procedure `expire_snapshots`.
//! - [`orphans`]: the procedure `remove_orphan_files`.
//! - [`manage_snapshots`]: snapshot and ref management (rollback, cherry-pick, fast-forward,
//!   write-audit-publish, branches and tags, table properties).
//! - [`rewrite_manifests`]: `rewrite_manifests` and `OPTIMIZE TABLE t MANIFEST`.
//! - [`compact`]: `OPTIMIZE TABLE` and `rewrite_data_files`.
//! - [`lease`]: the per-table maintenance lease of `SYSTEM MAINTAIN` (generation-numbered files
//!   under `metadata/.icetrim/`, created if absent) and its background renewal.
//! - [`upkeep`]: the maintenance policy of `SYSTEM MAINTAIN` (knobs, precedence, floors) and its
//!   per-procedure gates; [`upkeep_share`]: how a run maintaining tables in parallel splits its
//!   memory and request budgets.
//!
//! - [`shape`]: the one shape every procedure implements ([`shape::MaintenanceProcedure`]: plan
//!   on the newest metadata, then explain, count or execute the plan) and the one function that
//!   runs any of them.
//! - [`report`]: outcomes in terms that know no output format (EXPLAIN columns and cells, the
//!   metrics), which the engine renders through one function.
//!
//! **The shape of a procedure folder** (every procedure folder above has it;
//! `docs/statement-life.md` follows one statement through it):
//! - `mod.rs`: what the procedure owns: its algorithm in order, its result, its deliberate
//!   differences from ClickHouse; re-exports of its public pieces.
//! - decision files: pure functions on data (no I/O, no async): they take what was read and
//!   return what to do, with a reason for every verdict (e.g. `expire/policy.rs`,
//!   `expire/keepset.rs`, `orphans/classify.rs`).
//! - `metrics.rs`: the metrics struct, the one place that knows the procedure's metric names and
//!   ClickHouse's row order.
//! - `explain.rs`: the EXPLAIN plan as typed rows with their columns ([`report::ExplainRow`]).
//! - `execute.rs`: the procedure's unit type implementing [`shape::MaintenanceProcedure`] on the
//!   typed options of [`crate::plan`]: its plan value, how the plan is printed and counted, and
//!   the executor that carries it out (reading, committing through the commit protocol and
//!   deleting through the other execution files). Procedures that commit through the protocol's
//!   loop decide a run's plan on each attempt's base, with the same decision function EXPLAIN
//!   uses (`manage_snapshots` has two unit types: `ManageSnapshots` and `ChangeTable` for the DDL).
//!
//! Layers: maintenance sits below the engine and above `catalog`, `iceberg` and `io` (only
//! [`target`] imports `catalog`); it never imports
//! `engine`, `format` or `shell`. Progress and cancellation come in explicitly, on the target.

pub mod compact;
pub mod expire;
pub mod file_graph;
pub mod lease;
pub mod manage_snapshots;
pub mod old_metadata;
pub mod orphans;
pub mod report;
pub mod rewrite_manifests;
pub mod shape;
pub mod target;
pub mod upkeep;
pub mod upkeep_share;

pub use compact::{CompactMetrics, CompactOutcome};
pub use expire::{ExpireMetrics, ExpireOutcome};
pub use manage_snapshots::{SnapshotMetrics, SnapshotOutcome};
pub use orphans::{OrphanMetrics, OrphanOutcome};
pub use rewrite_manifests::{RewriteManifestsMetrics, RewriteManifestsOutcome};
