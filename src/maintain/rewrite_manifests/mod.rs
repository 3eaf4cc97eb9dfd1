//! `rewrite_manifests` and `OPTIMIZE TABLE t MANIFEST`: rewrite the current snapshot's manifests
//! into fewer, partition-clustered ones, as a `replace` snapshot whose data is identical (Iceberg
//! Java `BaseRewriteManifests` and Spark's `RewriteManifestsSparkAction`; ClickHouse 26.9's
//! `OPTIMIZE TABLE t MANIFEST`).
//!
//! Algorithm, in order (each attempt starts from the newest metadata):
//! 1. Locate the newest committed metadata ([`MaintenanceTarget::locate_newest`]); no current
//!    snapshot: nothing to do. Read its manifest list.
//! 2. `OPTIMIZE TABLE t MANIFEST` only: nothing happens unless the list has more manifests than
//!    the setting `iceberg_manifest_min_count_to_compact` (ClickHouse's rule, default 100).
//! 3. [`decide::select`] (pure): group the manifests by (partition spec, content) — data and delete
//!    manifests and different specs never share a manifest; with `spec_id = N` only that spec's.
//!    The target size is `target_manifest_size_bytes`, else the table property
//!    `commit.manifest.target-size-bytes`, else 8 MiB. A group is rewritten when it has more
//!    manifests than `ceil(live bytes / target)`, so a second run is a no-op.
//! 4. Read the group's manifests whole; every inherited field (`snapshot_id`, `sequence_number`,
//!    `file_sequence_number`, v3 `first_row_id`) is made explicit (the Iceberg spec's rule for
//!    EXISTING entries: one with a null sequence number would be re-dated). [`decide::cluster`]
//!    (pure) sorts the live entries by partition and cuts them into at most that many manifests
//!    of about the same size, so a partition's files share as few manifests as possible. DELETED
//!    entries are dropped (they belong to older snapshots, which still list them).
//! 5. EXPLAIN: the plan ([`explain`]); dry run: the counts. Otherwise write the new manifests
//!    (Iceberg's schema for the table's format version, the spec's partition type, every metric of
//!    every entry: column sizes, value/null/NaN counts, bounds, split offsets, key metadata, sort
//!    order, equality ids) and a manifest list: new manifests first, then the kept ones by
//!    reference; partition summaries recomputed; the new manifests' list entries are credited to
//!    the new snapshot. The snapshot summary carries the parent's totals and Java's
//!    `manifests-created`, `manifests-kept`, `manifests-replaced`, `entries-processed`.
//! 6. Commit through [`MaintenanceTarget::commit`] (path and catalog tables alike), by way of
//!    the one commit loop (`iceberg::commit::protocol::run`). On a conflict
//!    the unreferenced manifest list is deleted; the next attempt re-reads the newest metadata and
//!    reuses the written manifests only when the head still descends from the snapshot they were
//!    planned from (Java's history check), the format version is unchanged, and every manifest
//!    they replace is still in the new parent's list (Java's rule) ([`reuse`]); otherwise they are
//!    deleted (never committed) and everything is planned again on the head, so the new snapshot
//!    lists exactly its parent's live files (a concurrent delete stays deleted, a rollback is not
//!    undone). At most `iceberg_commit_max_attempts`, then `LIMIT_EXCEEDED` (the written manifests
//!    deleted). An unconfirmed or unknown outcome deletes nothing.
//!
//! Only files this statement wrote and never committed are deleted: the replaced manifests
//! belong to the parent snapshot, which stays; a later `expire_snapshots` removes them. A crash
//! leaves at most unreferenced new files (orphans).
//!
//! Differences from ClickHouse 26.9: `rewrite_manifests(...)` is icetrim's (Spark's procedure
//! name and arguments); `OPTIMIZE ... MANIFEST` returns no rows, as in ClickHouse.
//!
//! [`MaintenanceTarget::locate_newest`]: crate::maintain::target::MaintenanceTarget::locate_newest
//! [`MaintenanceTarget::commit`]: crate::maintain::target::MaintenanceTarget::commit

pub mod decide;
pub mod execute;
pub mod explain;
pub mod metrics;
mod plan;
pub mod reuse;
mod write;

pub use execute::{RewriteManifests, RewriteManifestsOutcome};
pub use explain::RewriteManifestsExplainRow;
pub use metrics::RewriteManifestsMetrics;
