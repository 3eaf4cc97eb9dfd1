//! Shared helpers of the `expire_*` integration tests: build a fixture, run `expire_snapshots`
//! through the engine entry point, ask the pyiceberg oracle, and check the table is still whole.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use icetrim::ExpireMetrics;
use icetrim::FixedClock;
use icetrim::Settings;
use icetrim::engine::{Metrics, QueryResult};
use icetrim::internals::engine::Runtime;
use icetrim::internals::engine::run_procedure;
use icetrim::internals::engine::{EngineArg, TableDef};
use icetrim::internals::iceberg::locate::{MetadataSettings, locate};
use icetrim::internals::io::FileIO;
use icetrim::internals::plan::{ExpireOptions, ProcedureCall};
use serde_json::Value;

pub use crate::support::fixtures;

#[allow(unused_imports)]
pub use fixtures::{Fixture, make_fixture, oracle_inspect};

/// "Now" for pyiceberg fixtures (deterministic for a seed and this now).
pub const NOW: i64 = 1_750_000_000_000;
pub const HOUR: i64 = 3_600_000;
pub const DAY: i64 = 24 * HOUR;

pub fn table_def(dir: &Path) -> TableDef {
    TableDef {
        database: "default".into(),
        name: "t".into(),
        engine: "IcebergLocal".into(),
        args: vec![EngineArg::Str(dir.to_string_lossy().into_owned())],
        settings: BTreeMap::new(),
        columns: None,
    }
}

/// Run `expire_snapshots(opts)` (or its EXPLAIN) at `now` with the default settings.
pub async fn expire_at(
    dir: &Path,
    now: i64,
    opts: ExpireOptions,
    explain: bool,
    io: Option<FileIO>,
) -> icetrim::Result<QueryResult> {
    expire_with(dir, now, opts, explain, io, &Settings::new()).await
}

pub async fn expire_with(
    dir: &Path,
    now: i64,
    opts: ExpireOptions,
    explain: bool,
    io: Option<FileIO>,
    settings: &Settings,
) -> icetrim::Result<QueryResult> {
    let runtime = Runtime {
        clock: FixedClock::new(now),
        io_override: io,
        before_commit: None,
        host_stores: Default::default(),
    };
    run_procedure(
        &runtime,
        settings,
        &table_def(dir),
        ProcedureCall::Expire(opts),
        explain,
    )
    .await
}

/// Run at [`NOW`], expecting success.
pub async fn expire(dir: &Path, opts: ExpireOptions) -> QueryResult {
    expire_at(dir, NOW, opts, false, None)
        .await
        .unwrap_or_else(|e| panic!("expire_snapshots failed: {e}"))
}

/// The typed metrics of a procedure result.
pub fn metrics(r: &QueryResult) -> ExpireMetrics {
    match r.metrics {
        Some(Metrics::Expire(m)) => m,
        ref other => panic!("not an expire result: {other:?}"),
    }
}

/// The seven counts as `[data, pos, eq, manifests, lists, stats, dry_run]`.
pub fn counts(r: &QueryResult) -> [i64; 7] {
    let m = metrics(r);
    let values = m.named_values();
    let mut out = [0; 7];
    for (slot, (_, v)) in out.iter_mut().zip(values) {
        *slot = v;
    }
    out
}

/// The newest metadata file of the table in `dir`.
pub async fn current_metadata(dir: &Path) -> PathBuf {
    let located = locate(
        &FileIO::local(),
        &dir.to_string_lossy(),
        &MetadataSettings::default(),
    )
    .await
    .unwrap_or_else(|e| panic!("cannot locate metadata in {}: {e}", dir.display()));
    PathBuf::from(located.path)
}

/// What pyiceberg reads from the newest metadata file.
pub async fn inspect(dir: &Path) -> Value {
    oracle_inspect(&current_metadata(dir).await)
}

/// Every file under `dir`, as absolute paths.
pub fn files_on_disk(dir: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.insert(path.to_string_lossy().into_owned());
            }
        }
    }
    out
}

/// Snapshot ids the oracle lists.
pub fn snapshot_ids(report: &Value) -> BTreeSet<i64> {
    report["snapshots"]
        .as_array()
        .expect("snapshots array")
        .iter()
        .map(|s| s["id"].as_i64().expect("snapshot id"))
        .collect()
}

/// Ref names the oracle lists.
pub fn ref_names(report: &Value) -> BTreeSet<String> {
    report["refs"]
        .as_object()
        .expect("refs object")
        .keys()
        .cloned()
        .collect()
}

/// The table after an expiry is whole: nothing referenced is missing, and every ref that
/// remains plans the same files as before.
pub fn assert_whole(before: &Value, after: &Value) {
    assert_eq!(
        after["missing"],
        Value::Array(vec![]),
        "files referenced by the table are missing: {}",
        after["missing"]
    );
    if let Some(errors) = after.get("errors") {
        assert!(
            errors.as_object().is_none_or(|e| e.is_empty()),
            "pyiceberg could not read the table: {errors}"
        );
    }
    for name in ref_names(after) {
        assert_eq!(
            before["ref_files"][&name], after["ref_files"][&name],
            "ref {name} plans different files after expiry"
        );
    }
    assert_eq!(before["rows_main"], after["rows_main"], "main's row count");
}

/// Expire at [`NOW`] with the oracle checked before and after; returns (result, after report).
pub async fn expire_checked(dir: &Path, opts: ExpireOptions) -> (QueryResult, Value) {
    let before = inspect(dir).await;
    let result = expire(dir, opts).await;
    let after = inspect(dir).await;
    assert_whole(&before, &after);
    (result, after)
}

pub fn policy(retain_last: Option<i32>, retention_period_ms: Option<i64>) -> ExpireOptions {
    ExpireOptions {
        retain_last,
        retention_period_ms,
        ..Default::default()
    }
}

pub fn ids(ids: &[i64]) -> ExpireOptions {
    ExpireOptions {
        snapshot_ids: Some(ids.to_vec()),
        ..Default::default()
    }
}

pub fn dry(mut opts: ExpireOptions) -> ExpireOptions {
    opts.dry_run = true;
    opts
}

/// The `metadata/*.metadata.json` files of a table.
pub fn metadata_files(dir: &Path) -> BTreeSet<String> {
    files_on_disk(dir)
        .into_iter()
        .filter(|f| f.ends_with(".metadata.json"))
        .collect()
}

pub fn shared<T>(t: T) -> Arc<T> {
    Arc::new(t)
}
