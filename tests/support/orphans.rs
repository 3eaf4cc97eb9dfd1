//! Shared helpers of the `orphans_*` integration tests: run `remove_orphan_files` through the
//! engine entry point on a fixture folder, read the nine metrics, derive the expected metrics
//! from a fixture's `orphans` facts, and check that no live file was lost.
#![allow(dead_code)]

pub mod nested;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use icetrim::FixedClock;
use icetrim::OrphanMetrics;
use icetrim::Settings;
use icetrim::engine::{Metrics, QueryResult};
use icetrim::internals::engine::Runtime;
use icetrim::internals::engine::run_procedure;
use icetrim::internals::engine::{EngineArg, TableDef};
use icetrim::internals::io::FileIO;
use icetrim::internals::plan::{OrphanOptions, ProcedureCall};
use serde_json::Value;

pub const MINUTE_MS: i64 = 60_000;
pub const DAY_MS: i64 = 86_400_000;

/// `IcebergLocal('<dir>')` registered as `default.t`, with table `settings`.
pub fn local_table(dir: &Path, settings: &[(&str, &str)]) -> TableDef {
    TableDef {
        database: "default".into(),
        name: "t".into(),
        engine: "IcebergLocal".into(),
        args: vec![EngineArg::Str(dir.to_string_lossy().into_owned())],
        settings: settings
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
        columns: None,
    }
}

/// A runtime standing at `now_ms`, optionally on injected storage.
pub fn runtime(now_ms: i64, io: Option<FileIO>) -> Runtime {
    Runtime {
        clock: FixedClock::new(now_ms),
        io_override: io,
        before_commit: None,
        host_stores: Default::default(),
    }
}

/// Runs `remove_orphan_files(options)` on `table` at `now_ms`.
pub async fn run_on(
    runtime: &Runtime,
    table: &TableDef,
    options: OrphanOptions,
    explain: bool,
) -> icetrim::Result<QueryResult> {
    let settings = Settings::new();
    run_procedure(
        runtime,
        &settings,
        table,
        ProcedureCall::Orphans(options),
        explain,
    )
    .await
}

/// Runs `remove_orphan_files(options)` on the local table at `dir` at `now_ms`.
pub async fn run_local(
    dir: &Path,
    now_ms: i64,
    options: OrphanOptions,
) -> icetrim::Result<QueryResult> {
    run_on(
        &runtime(now_ms, None),
        &local_table(dir, &[]),
        options,
        false,
    )
    .await
}

/// The typed metrics of a result, checked against its rows.
pub fn metrics(result: &QueryResult) -> OrphanMetrics {
    let Some(Metrics::Orphans(m)) = result.metrics else {
        panic!("not an orphan result: {result:?}");
    };
    assert_eq!(result.rows.len(), 9, "nine rows");
    m
}

/// Options with `older_than` and `dry_run`.
pub fn options(older_than_ms: Option<i64>, dry_run: bool) -> OrphanOptions {
    OrphanOptions {
        older_than_ms,
        location: None,
        dry_run,
        protect_other_tables: false,
    }
}

/// The metrics that deleting the fixture's strays of kind `old` whose path passes `keep` gives.
pub fn expected_old(facts: &Value, keep: impl Fn(&str) -> bool) -> OrphanMetrics {
    expected_of_kinds(facts, &["old"], keep)
}

/// The metrics that deleting the fixture's strays of `kinds` whose path passes `keep` gives.
pub fn expected_of_kinds(
    facts: &Value,
    kinds: &[&str],
    keep: impl Fn(&str) -> bool,
) -> OrphanMetrics {
    let mut m = OrphanMetrics::default();
    for orphan in strays(facts) {
        if !kinds.contains(&orphan.kind.as_str()) || !keep(&orphan.path) {
            continue;
        }
        let slot = match orphan.category.as_str() {
            "data" => &mut m.deleted_data_files_count,
            "position_delete" => &mut m.deleted_position_delete_files_count,
            "equality_delete" => &mut m.deleted_equality_delete_files_count,
            "manifest" => &mut m.deleted_manifest_files_count,
            "manifest_list" => &mut m.deleted_manifest_lists_count,
            "metadata" => &mut m.deleted_metadata_files_count,
            "statistics" => &mut m.deleted_statistics_files_count,
            other => panic!("unknown stray category {other}"),
        };
        *slot += 1;
    }
    m
}

/// One stray file of a fixture built with orphans.
pub struct Stray {
    pub path: String,
    pub category: String,
    pub kind: String,
}

/// The fixture's strays.
pub fn strays(facts: &Value) -> Vec<Stray> {
    facts["orphans"]
        .as_array()
        .unwrap_or_else(|| panic!("fixture has no orphans facts"))
        .iter()
        .map(|o| Stray {
            path: o["path"].as_str().expect("stray path").to_string(),
            category: o["category"].as_str().expect("stray category").to_string(),
            kind: o["kind"].as_str().expect("stray kind").to_string(),
        })
        .collect()
}

/// Every file path a fixture's facts name as part of the table (data, delete, metadata,
/// statistics files, and every snapshot's live files).
pub fn table_files(facts: &Value) -> Vec<String> {
    let mut files = Vec::new();
    let mut strings = |v: &Value| match v {
        Value::String(s) => files.push(s.clone()),
        Value::Array(items) => {
            files.extend(items.iter().filter_map(|i| i.as_str().map(String::from)))
        }
        Value::Object(map) => {
            for item in map.values() {
                match item {
                    Value::String(s) => files.push(s.clone()),
                    Value::Array(items) => {
                        files.extend(items.iter().filter_map(|i| i.as_str().map(String::from)))
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    };
    for key in [
        "data_files",
        "delete_files",
        "metadata_files",
        "live_files",
        "live_delete_files",
        "live_files_by_snapshot",
        "statistics_files",
        "partition_statistics_files",
    ] {
        strings(&facts[key]);
    }
    files.sort();
    files.dedup();
    files
}

/// Panics naming every table file (per the facts) that is gone.
pub fn assert_table_files_exist(facts: &Value) {
    let files = table_files(facts);
    assert!(!files.is_empty(), "facts name no table files");
    let missing: Vec<&String> = files.iter().filter(|f| !Path::new(f).exists()).collect();
    assert!(missing.is_empty(), "table files lost: {missing:?}");
}

/// Sets a file's mtime to `ms`.
pub fn set_mtime(path: &Path, ms: i64) {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    let secs = u64::try_from(ms.div_euclid(1000)).expect("positive time");
    let nanos = u32::try_from(ms.rem_euclid(1000) * 1_000_000).expect("millis fit");
    let time = std::time::UNIX_EPOCH + std::time::Duration::new(secs, nanos);
    file.set_modified(time).expect("set mtime");
}

/// Writes a stray file at `dir/rel` with mtime `ms`.
pub fn write_stray(dir: &Path, rel: &str, ms: i64) -> std::path::PathBuf {
    let path = dir.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("create folders");
    }
    std::fs::write(&path, b"stray").expect("write stray");
    set_mtime(&path, ms);
    path
}

/// Shared handle on a runtime's clock, for tests that move time.
pub fn fixed_clock(now_ms: i64) -> Arc<FixedClock> {
    FixedClock::new(now_ms)
}
