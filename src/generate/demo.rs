//! The README demo table: about 20 snapshots over 10 days (appends, a delete, an overwrite, a
//! compaction, a merge), a branch with retention, a tag, a staged snapshot, a statistics file and a
//! few orphan files dated before the history (on local disk; object stores keep their write time).

use super::{GenerateOptions, Generated, MainOp, generate};
use crate::error::Result;
use crate::iceberg::spec::{FormatVersion, SnapshotId};
use crate::iceberg::txn::refs::Retention;
use crate::io::FileIO;

const DAY_MS: i64 = 86_400_000;

/// What the demo table holds.
#[derive(Debug, Clone)]
pub struct DemoFacts {
    pub location: String,
    pub metadata_path: String,
    pub current_snapshot_id: Option<SnapshotId>,
    pub branch: String,
    pub tag: String,
    pub staged: Vec<SnapshotId>,
    pub statistics_files: Vec<String>,
    pub orphans: Vec<String>,
    /// Everything the generator reports.
    pub generated: Generated,
}

/// The options of the demo table at `location` with history ending at `now_ms`.
pub fn demo_options(location: &str, now_ms: i64) -> GenerateOptions {
    use MainOp::*;
    let mut opts = GenerateOptions::new(location, FormatVersion::V2, 20, 2, 20_260_101, now_ms);
    opts.span_ms = 10 * DAY_MS;
    opts.branches = 1;
    opts.tags = 1;
    opts.staged = 1;
    opts.statistics = 1;
    opts.orphans = 4;
    opts.collect_expected = true;
    // Real Parquet rows, so the demo's OPTIMIZE TABLE has data to rewrite.
    opts.parquet_data = true;
    opts.script = vec![
        Append, Append, Append, Append, Delete, Append, Append, Overwrite, Append, Append, Replace,
        Append, Merge, Append, Delete, Append, Append,
    ];
    opts.branch_retention = Some(Retention {
        min_snapshots_to_keep: Some(2),
        max_snapshot_age_ms: Some(3 * DAY_MS),
        max_ref_age_ms: Some(30 * DAY_MS),
    });
    opts
}

/// Write the demo table at `location`.
pub async fn demo_table(io: &FileIO, location: &str, now_ms: i64) -> Result<DemoFacts> {
    let generated = generate(io, &demo_options(location, now_ms)).await?;
    Ok(DemoFacts {
        location: generated.location.clone(),
        metadata_path: generated.metadata_path.clone(),
        current_snapshot_id: generated.current_snapshot_id,
        branch: "branch_0".into(),
        tag: "tag_0".into(),
        staged: generated.staged.clone(),
        statistics_files: generated.statistics_files.clone(),
        orphans: generated.orphans.clone(),
        generated,
    })
}
