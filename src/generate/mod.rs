//! A fast, deterministic Iceberg table generator for tests, demos and benchmarks.
//!
//! [`generate`] writes a table with a planned history — fast appends, merge appends, deletes,
//! overwrites, compactions (`replace`), branches with retention, tags, staged snapshots,
//! statistics files and orphan files, timestamps spread over a span ending at a given "now" — at
//! any [`FileIO`] location. Everything random comes from one seeded RNG (snapshot ids and file
//! uuids included), so the same options give the same bytes.
//!
//! Speed: the live state is kept in memory ([`model`]) and every manifest and manifest list is
//! encoded once and queued for concurrent writing ([`sink`]); only the final metadata file is
//! written (no metadata log). Manifests are merged when a list grows past
//! [`GenerateOptions::max_manifests`] (size-tiered, see `history`), so a list stays short and the work per snapshot does not
//! grow with the history. Data files are tiny placeholders (`PAR1<n>PAR1`, not Parquet), real
//! Parquet with rows ([`GenerateOptions::parquet_data`], see [`parquet`]), or not written at all
//! ([`GenerateOptions::write_data_files`]); manifests, lists and metadata are real.

mod demo;
mod history;
mod model;
pub mod parquet;
mod run;
mod schedule;
mod sink;

use std::collections::BTreeMap;

use serde_json::{Value, json};

pub use demo::{DemoFacts, demo_table};
pub use run::generate;
pub use sink::Written;

use crate::error::{Error, Result};
use crate::iceberg::avro::Codec;
use crate::iceberg::spec::{FormatVersion, RefKind, SnapshotId};
use crate::io::FileIO;

/// The operation of one main-branch snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MainOp {
    /// Fast append: one new manifest, the parent's carried.
    Append,
    /// Merge append: like append, then small manifests are merged (size-tiered, whatever the
    /// list's length).
    Merge,
    /// Removes files (v2: or adds a position delete file).
    Delete,
    /// Removes files and adds others.
    Overwrite,
    /// Compaction: several files replaced by one with the same rows.
    Replace,
}

impl MainOp {
    /// The summary `operation`.
    pub fn operation(self) -> &'static str {
        match self {
            MainOp::Append | MainOp::Merge => "append",
            MainOp::Delete => "delete",
            MainOp::Overwrite => "overwrite",
            MainOp::Replace => "replace",
        }
    }
}

/// Weights of the main-branch operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mix {
    pub append: u32,
    pub merge: u32,
    pub delete: u32,
    pub overwrite: u32,
    pub replace: u32,
}

impl Default for Mix {
    fn default() -> Self {
        Mix {
            append: 70,
            merge: 10,
            delete: 10,
            overwrite: 5,
            replace: 5,
        }
    }
}

impl Mix {
    /// `append=70,merge=10,delete=10,overwrite=5,replace=5`; names left out weigh 0.
    pub fn parse(text: &str) -> Result<Mix> {
        let mut mix = Mix {
            append: 0,
            merge: 0,
            delete: 0,
            overwrite: 0,
            replace: 0,
        };
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, weight) = part
                .split_once('=')
                .ok_or_else(|| Error::bad_arguments(format!("mix: '{part}' is not name=weight")))?;
            let weight: u32 = weight.trim().parse().map_err(|_| {
                Error::bad_arguments(format!("mix: weight of '{name}' is not a number"))
            })?;
            let slot = match name.trim() {
                "append" => &mut mix.append,
                "merge" => &mut mix.merge,
                "delete" => &mut mix.delete,
                "overwrite" => &mut mix.overwrite,
                "replace" => &mut mix.replace,
                other => {
                    return Err(Error::bad_arguments(format!(
                        "mix: unknown operation '{other}'"
                    )));
                }
            };
            *slot = weight;
        }
        if mix.weights().iter().all(|(_, w)| *w == 0) {
            return Err(Error::bad_arguments("mix: every weight is 0"));
        }
        Ok(mix)
    }

    fn weights(&self) -> [(MainOp, u32); 5] {
        [
            (MainOp::Append, self.append),
            (MainOp::Merge, self.merge),
            (MainOp::Delete, self.delete),
            (MainOp::Overwrite, self.overwrite),
            (MainOp::Replace, self.replace),
        ]
    }
}

/// What to generate.
#[derive(Debug, Clone)]
pub struct GenerateOptions {
    pub location: String,
    pub format_version: FormatVersion,
    /// Snapshots in all (main, branch commits and staged ones).
    pub snapshots: usize,
    pub files_per_snapshot: usize,
    pub seed: u64,
    pub mix: Mix,
    /// Branches, each forked from main and given [`GenerateOptions::branch_commits`] commits.
    pub branches: usize,
    pub branch_commits: usize,
    pub tags: usize,
    /// Snapshots added on no ref (write-audit-publish).
    pub staged: usize,
    /// Main snapshots with a statistics file (every other one also a partition-statistics file).
    pub statistics: usize,
    pub orphans: usize,
    pub write_data_files: bool,
    /// Data files (and position delete files) are real Parquet with rows (`id`, `data`), not
    /// placeholders: tables compaction can rewrite and benchmarks can measure.
    pub parquet_data: bool,
    /// Partitions: 0 gives an unpartitioned table; N > 0 adds the column `part` (int, field id
    /// 3) and the partition spec `identity(part)`, new data files taking `part` = 0, 1, …, N - 1
    /// in turn (files under `data/part=<value>/`; Parquet rows hold the value).
    pub partitions: usize,
    /// Parquet mode: rows of every new data file (`None`: 1 to 1,000, drawn per file).
    pub rows_per_file: Option<i64>,
    /// Parquet mode: `data` values padded to this many bytes with incompressible characters
    /// (0: `row-<id>`): large real files, for memory and throughput measurements.
    pub row_bytes: usize,
    /// Parquet mode: data files and the schema add `amount` (double), `ts` (timestamptz) and
    /// `flag` (boolean), field ids 4 to 6: several column types for throughput measurements.
    pub wide_columns: bool,
    /// Snapshot timestamps are spread over `[now - span, now)`.
    pub span_ms: i64,
    pub now_ms: i64,
    pub codec: Codec,
    /// A list longer than this triggers a size-tiered merge.
    pub max_manifests: usize,
    /// Manifests this large are never merged again.
    pub target_manifest_entries: usize,
    /// Manifests of one size tier merged together.
    pub merge_fan_in: usize,
    /// Fill [`Generated::expected`] (the live files of every ref).
    pub collect_expected: bool,
    /// Operations of the first main snapshots, in order (the mix draws the rest).
    pub script: Vec<MainOp>,
    /// Retention of every branch (random per branch when `None`).
    pub branch_retention: Option<crate::iceberg::txn::refs::Retention>,
}

impl GenerateOptions {
    /// Defaults: the default mix, nothing but main, data files written, 30 days ending at `now_ms`,
    /// deflate, a merge when a list passes 32 manifests (fan-in 4), manifests up to 50,000 entries.
    pub fn new(
        location: &str,
        format_version: FormatVersion,
        snapshots: usize,
        files_per_snapshot: usize,
        seed: u64,
        now_ms: i64,
    ) -> Self {
        GenerateOptions {
            location: location.trim_end_matches('/').to_string(),
            format_version,
            snapshots,
            files_per_snapshot,
            seed,
            mix: Mix::default(),
            branches: 0,
            branch_commits: 2,
            tags: 0,
            staged: 0,
            statistics: 0,
            orphans: 0,
            write_data_files: true,
            parquet_data: false,
            partitions: 0,
            rows_per_file: None,
            row_bytes: 0,
            wide_columns: false,
            span_ms: 30 * 86_400_000,
            now_ms,
            codec: Codec::Deflate,
            max_manifests: 32,
            target_manifest_entries: 50_000,
            merge_fan_in: 4,
            collect_expected: false,
            script: Vec::new(),
            branch_retention: None,
        }
    }
}

/// The files a scan of one ref plans: live data files, and the live delete files that apply to one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExpectedFiles {
    pub data: Vec<String>,
    pub deletes: Vec<String>,
}

/// A generated ref.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefFacts {
    pub name: String,
    pub kind: RefKind,
    pub snapshot_id: SnapshotId,
    pub min_snapshots_to_keep: Option<i32>,
    pub max_snapshot_age_ms: Option<i64>,
    pub max_ref_age_ms: Option<i64>,
    pub live_data_files: usize,
}

/// What [`generate`] wrote.
#[derive(Debug, Clone)]
pub struct Generated {
    pub location: String,
    pub metadata_path: String,
    pub table_uuid: String,
    pub format_version: FormatVersion,
    pub snapshots: usize,
    pub current_snapshot_id: Option<SnapshotId>,
    /// `main` first, then branches, then tags.
    pub refs: Vec<RefFacts>,
    pub staged: Vec<SnapshotId>,
    pub statistics_files: Vec<String>,
    pub partition_statistics_files: Vec<String>,
    pub orphans: Vec<String>,
    pub data_files_added: u64,
    pub written: Written,
    /// Ref name → what a scan of it plans (when [`GenerateOptions::collect_expected`]).
    pub expected: BTreeMap<String, ExpectedFiles>,
}

impl Generated {
    /// The summary the command prints.
    pub fn to_json(&self) -> Value {
        json!({
            "location": self.location,
            "metadata_path": self.metadata_path,
            "table_uuid": self.table_uuid,
            "format_version": self.format_version.number(),
            "snapshots": self.snapshots,
            "current_snapshot_id": self.current_snapshot_id,
            "refs": self.refs.iter().map(|r| json!({
                "name": r.name,
                "type": r.kind.as_str(),
                "snapshot_id": r.snapshot_id,
                "min_snapshots_to_keep": r.min_snapshots_to_keep,
                "max_snapshot_age_ms": r.max_snapshot_age_ms,
                "max_ref_age_ms": r.max_ref_age_ms,
                "live_data_files": r.live_data_files,
            })).collect::<Vec<_>>(),
            "staged": self.staged,
            "statistics_files": self.statistics_files,
            "partition_statistics_files": self.partition_statistics_files,
            "orphans": self.orphans,
            "data_files_added": self.data_files_added,
            "files_written": self.written.files,
            "bytes_written": self.written.bytes,
            "manifests_written": self.written.manifests,
            "manifest_lists_written": self.written.manifest_lists,
            "manifest_entries_written": self.written.manifest_entries,
        })
    }
}

/// The table schema: the default one, plus `part` (int, field id 3) when partitioned and the
/// wide columns when asked.
fn table_schema(partitioned: bool, wide: bool) -> Value {
    let mut schema = crate::iceberg::txn::create::default_schema();
    if let Some(fields) = schema["fields"].as_array_mut() {
        if partitioned {
            fields.push(
                json!({"id": 3, "name": model::PARTITION_NAME, "required": false, "type": "int"}),
            );
        }
        if wide {
            for (name, ty, id) in parquet::WIDE_COLUMNS {
                fields.push(json!({"id": id, "name": name, "required": false, "type": ty}));
            }
        }
    }
    schema
}

/// The partition spec 0: unpartitioned, or `identity(part)` (partition field id 1000).
fn partition_spec(partitioned: bool) -> Value {
    if partitioned {
        json!({"spec-id": 0, "fields": [{
            "source-id": 3, "field-id": 1000, "name": model::PARTITION_NAME, "transform": "identity"
        }]})
    } else {
        json!({"spec-id": 0, "fields": []})
    }
}

/// Validate options before anything is written.
fn validate(opts: &GenerateOptions) -> Result<()> {
    let special = opts.branches * opts.branch_commits + opts.staged;
    if opts.snapshots == 0 || opts.snapshots <= special {
        return Err(Error::bad_arguments(format!(
            "--snapshots {} leaves no main snapshot beside {} branch commits and {} staged",
            opts.snapshots,
            opts.branches * opts.branch_commits,
            opts.staged
        )));
    }
    let main = opts.snapshots - special;
    if opts.tags > main || opts.statistics > main {
        return Err(Error::bad_arguments(format!(
            "{} tags / {} statistics files need as many main snapshots; there are {main}",
            opts.tags, opts.statistics
        )));
    }
    if opts.partitions > i32::MAX as usize {
        return Err(Error::bad_arguments("--partitions is too large"));
    }
    if opts.files_per_snapshot == 0 {
        return Err(Error::bad_arguments(
            "--files-per-snapshot must be at least 1",
        ));
    }
    if opts.span_ms <= 0 || opts.max_manifests < 2 || opts.target_manifest_entries < 2 {
        return Err(Error::bad_arguments(
            "span, max manifests and target manifest entries must be positive",
        ));
    }
    Ok(())
}

/// Whether `location` is on local disk (mtimes can be set), and its local path.
fn local_path(uri: &str) -> Option<std::path::PathBuf> {
    if let Some(rest) = uri.strip_prefix("file://") {
        return Some(rest.into());
    }
    uri.starts_with('/').then(|| uri.into())
}

/// Generate with a [`FileIO`] for local paths and `memory://`, or remote URIs with default options.
pub fn io_for(location: &str) -> FileIO {
    if location.starts_with("memory:") {
        FileIO::memory()
    } else if local_path(location).is_some() {
        FileIO::local()
    } else {
        FileIO::new(Default::default())
    }
}

#[cfg(test)]
mod tests;
