//! Compaction: `OPTIMIZE TABLE t` and `ALTER TABLE t EXECUTE rewrite_data_files(...)`, Iceberg
//! Java's `RewriteDataFiles` with the bin-pack strategy.
//!
//! Algorithm, in order:
//! 1. Locate the newest metadata; its current snapshot is the start (sequence number `S`).
//!    Column types icetrim cannot rewrite (`variant`, `geometry`, `geography`, `unknown`) refuse
//!    the table with `NOT_IMPLEMENTED` before anything is read.
//! 2. Read every manifest of the start: the live data and delete files (`read.rs`).
//! 3. Plan (pure, `plan.rs`): options resolved with Java's defaults, files selected (size,
//!    delete count, `where` on partition values: `filter.rs`), grouped by their partition
//!    under the default spec (files of older specs join the partition their tuple decides, or
//!    are grouped together and split row by row: `repartition.rs`), bin-packed, groups kept by
//!    Java's rules; the deletes applying to each input follow the spec's sequence-number rules
//!    (`deletes.rs`). A data file named by a position delete file out of its scope (readers
//!    disagree on it) is left out of every group (`disputed.rs`). `EXPLAIN` and `dry_run` stop
//!    here.
//! 4. Rewrite each group (at most `max_concurrent_file_group_rewrites` at once, fewer when
//!    `iceberg_compaction_max_memory_bytes` says so: `memory.rs` splits the budget between the
//!    groups in flight and, inside one, between input, decoded batches, output row group, upload
//!    parts, sort buffer and delete files; the planner has already split groups whose delete files
//!    would not fit): inputs streamed batch by batch (batches sized to the budget; large inputs
//!    read by ranges, page by page: `source.rs`), outputs streamed to storage as multipart uploads
//!    with row groups flushed when their buffered memory reaches the group's share, deletes
//!    (equality deletes also on struct fields) applied, v3 row lineage written explicitly, rows
//!    sorted by the default sort order (any transform: `transform.rs`) and split by partition
//!    where needed (`sort.rs`: in memory, or runs spilled to local disk and merged, so the
//!    outputs roll at the target size), Parquet written with field ids, the table's
//!    codec and row-group size, complete Iceberg metrics (`rewrite.rs`, `writer.rs`,
//!    `stats.rs`, `schema.rs`).
//! 5. Commit a `replace` snapshot through [`MaintenanceTarget::commit`] (`commit.rs`): inputs
//!    become DELETED entries, outputs ADDED with the explicit data sequence number `S`, delete
//!    files no remaining data file needs are removed. On a conflict, re-read the newest state and
//!    judge it against the start (`conflicts.rs`): every group fails when the start is no longer
//!    in the head's history (a rollback: Java's "Cannot determine history between starting
//!    snapshot … and the last known ancestor …"), the format version or the default spec changed;
//!    a group fails when its inputs vanished, a delete applied to them vanished or a new delete
//!    touches them. Failed groups count in `failed_data_files_count`, a warning names each, and
//!    their outputs are deleted (this statement wrote them and no commit references them); the
//!    others commit, and a `replace` never reads other rows than its parent.
//!
//! Deliberate difference from ClickHouse 26.9: ClickHouse's `OPTIMIZE TABLE` rewrites the
//! table's history in place (measured losing rows in the current and older snapshots). icetrim
//! adds one new `replace` snapshot; earlier snapshots read exactly as before, and the replaced
//! files stay until `expire_snapshots` removes them. Compaction deletes only files it wrote itself
//! and never committed (refused groups, conflicting attempts); new files of a run that fails with
//! an error, is interrupted, or whose commit outcome is unknown are orphans for
//! `remove_orphan_files`.
//!
//! [`MaintenanceTarget::commit`]: crate::maintain::target::MaintenanceTarget::commit

mod commit;
pub mod conflicts;
pub mod deletes;
pub mod disputed;
pub mod execute;
pub mod explain;
pub mod filter;
mod group;
pub mod memory;
pub mod metrics;
pub mod model;
pub mod path;
pub mod plan;
#[cfg(test)]
mod plan_props;
pub mod prepare;
pub mod read;
pub mod repartition;
pub mod rewrite;
pub mod sort;
pub mod source;
pub mod stats;
pub mod where_value;
pub mod writer;

use crate::maintain::report::{Metrics, Report, ReportBody, Reported};
pub use execute::Compact;
pub use explain::CompactExplainRow;
pub use metrics::CompactMetrics;

/// The procedure's name in messages.
pub const PROCEDURE: &str = "rewrite_data_files";

/// What a compaction returns: its metrics, or its EXPLAIN plan; warnings either way.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CompactOutcome {
    pub metrics: CompactMetrics,
    pub explain: Option<Vec<CompactExplainRow>>,
    pub warnings: Vec<String>,
}

impl Reported for CompactOutcome {
    fn into_report(self) -> Report {
        let metrics = ReportBody::Metrics(Metrics::Compact(self.metrics));
        Report::explain_or(self.explain, metrics, self.warnings)
    }
}
