//! `remove_orphan_files` keeps everything the newest metadata reaches — metadata-log files, the
//! version hint, staged snapshots, statistics, delete files — and refuses to run when it cannot
//! be sure (gc.enabled=false, references outside the table, a pinned older metadata file).

#[path = "common/fixtures.rs"]
mod fixtures;
mod orphans_support;

use std::path::{Path, PathBuf};

use fixtures::{Fixture, clickhouse, make_fixture, now_ms, oracle_inspect};
use icetrim::ErrorKind;
use icetrim::engine::OrphanMetrics;
use orphans_support::*;
use serde_json::{Map, Value, json};

fn assert_oracle_clean(fixture: &Fixture) {
    let oracle = oracle_inspect(&fixture.metadata_path());
    assert_eq!(oracle["missing"], Value::Array(vec![]), "files missing");
    assert!(
        oracle.get("errors").is_none(),
        "oracle errors: {}",
        oracle["errors"]
    );
}

/// Rewrites the newest metadata file in place with `edit`, keeping its mtime.
fn edit_newest_metadata(fixture: &Fixture, edit: impl FnOnce(&mut Map<String, Value>)) {
    let path = fixture.metadata_path();
    let mtime = std::fs::metadata(&path)
        .and_then(|m| m.modified())
        .expect("mtime");
    let mut json: Map<String, Value> =
        serde_json::from_slice(&std::fs::read(&path).expect("read metadata")).expect("json");
    edit(&mut json);
    std::fs::write(&path, serde_json::to_vec(&json).expect("encode")).expect("write metadata");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("open");
    file.set_modified(mtime).expect("restore mtime");
}

fn metadata_files(fixture: &Fixture) -> Vec<PathBuf> {
    fixtures::sorted_strings(&fixture.facts["metadata_files"])
        .into_iter()
        .map(PathBuf::from)
        .collect()
}

/// Metadata files (per the facts) neither newest nor in the newest file's `metadata-log`.
fn unlogged_metadata_files(fixture: &Fixture) -> Vec<PathBuf> {
    let newest = fixture.metadata_path();
    let json: Value =
        serde_json::from_slice(&std::fs::read(&newest).expect("read metadata")).expect("json");
    let logged: Vec<String> = json["metadata-log"]
        .as_array()
        .expect("metadata-log")
        .iter()
        .filter_map(|e| e["metadata-file"].as_str())
        .map(|f| f.trim_start_matches("file://").to_string())
        .collect();
    metadata_files(fixture)
        .into_iter()
        .filter(|f| *f != newest && !logged.contains(&f.to_string_lossy().into_owned()))
        .collect()
}

#[tokio::test]
async fn metadata_log_files_and_the_version_hint_are_kept_dropped_log_entries_are_not() {
    let now = now_ms();
    let fixture = make_fixture("py_v2_linear", now, false);
    let dir = fixture.table_dir();
    let files = metadata_files(&fixture);
    assert!(files.len() >= 3, "{files:?}");
    let dropped = files[0].clone();
    let dropped_text = dropped.to_string_lossy().into_owned();
    edit_newest_metadata(&fixture, |json| {
        let log = json["metadata-log"].as_array_mut().expect("metadata-log");
        let before = log.len();
        log.retain(|e| {
            !e["metadata-file"]
                .as_str()
                .is_some_and(|f| f.ends_with(&dropped_text))
        });
        assert_eq!(log.len(), before - 1, "first metadata file was in the log");
    });
    // A stale hint (version 1), old: never an orphan, and never followed.
    let hint = write_stray(&dir, "metadata/version-hint.text", now - 10 * DAY_MS);
    std::fs::write(&hint, b"1").expect("write hint");
    set_mtime(&hint, now - 10 * DAY_MS);
    let table = local_table(&dir, &[("iceberg_use_version_hint", "1")]);
    let r = run_on(
        &runtime(now, None),
        &table,
        options(Some(now), false),
        false,
    )
    .await
    .unwrap();
    assert_eq!(
        metrics(&r),
        OrphanMetrics {
            deleted_metadata_files_count: 1,
            ..Default::default()
        }
    );
    assert!(!dropped.exists());
    assert!(hint.exists());
    for kept in &files[1..] {
        assert!(kept.exists(), "{} deleted", kept.display());
    }
    assert_oracle_clean(&fixture);
}

#[tokio::test]
async fn staged_and_rolled_back_snapshots_keep_their_files() {
    let now = now_ms();
    let fixture = make_fixture("py_v2_staged", now, true);
    let r = run_local(&fixture.table_dir(), now, options(Some(now), false))
        .await
        .unwrap();
    assert_eq!(
        metrics(&r),
        expected_of_kinds(&fixture.facts, &["old", "young"], |_| true)
    );
    let staged = &fixture.facts["live_files_by_snapshot"];
    for label in ["s_old", "r_young"] {
        let files = fixtures::sorted_strings(&staged[label]);
        assert!(!files.is_empty(), "{label} has live files");
        for f in files {
            assert!(Path::new(&f).exists(), "{label}: {f} deleted");
        }
    }
    assert_table_files_exist(&fixture.facts);
    assert_oracle_clean(&fixture);
}

#[tokio::test]
async fn registered_statistics_files_are_kept_unregistered_ones_go() {
    let now = now_ms();
    let fixture = make_fixture("py_v2_statistics", now, true);
    let r = run_local(&fixture.table_dir(), now, options(None, false))
        .await
        .unwrap();
    let m = metrics(&r);
    assert_eq!(m, expected_old(&fixture.facts, |_| true));
    assert_eq!(m.deleted_statistics_files_count, 1);
    let registered = table_files(&json!({
        "statistics_files": fixture.facts["statistics_files"],
        "partition_statistics_files": fixture.facts["partition_statistics_files"],
    }));
    assert!(registered.len() >= 4, "{registered:?}");
    for f in registered {
        assert!(Path::new(&f).exists(), "{f} deleted");
    }
    assert_table_files_exist(&fixture.facts);
    assert_oracle_clean(&fixture);
}

async fn clickhouse_table_loses_nothing(scenario: &str) {
    let now = now_ms();
    let fixture = make_fixture(scenario, now, true);
    let dir = fixture.table_dir();
    let count = || clickhouse(&dir, "SELECT count() FROM t").expect("ClickHouse reads the table");
    let before = count();
    let r = run_local(&dir, now, options(Some(now), false))
        .await
        .unwrap();
    let m = metrics(&r);
    // ClickHouse's CREATE writes v1.metadata.json and never lists it in `metadata-log`: it is
    // unreachable from the newest metadata, hence an orphan like the strays.
    let unlogged = unlogged_metadata_files(&fixture);
    assert_eq!(unlogged.len(), 1, "{unlogged:?}");
    let mut expected = expected_of_kinds(&fixture.facts, &["old", "young"], |_| true);
    expected.deleted_metadata_files_count += 1;
    assert_eq!(m, expected);
    assert_eq!(m.deleted_position_delete_files_count, 1);
    assert!(!unlogged[0].exists());
    let deletes = table_files(&json!({ "live_delete_files": fixture.facts["live_delete_files"] }));
    assert!(!deletes.is_empty(), "{scenario} has live delete files");
    let mut facts = fixture.facts.clone();
    facts["metadata_files"] = json!([fixture.metadata_path()]);
    assert_table_files_exist(&facts);
    assert_eq!(count(), before, "{scenario}: ClickHouse row count changed");
}

#[tokio::test]
async fn clickhouse_v2_table_keeps_its_delete_files() {
    clickhouse_table_loses_nothing("ch_v2").await;
}

#[tokio::test]
async fn clickhouse_v3_table_keeps_its_delete_files() {
    clickhouse_table_loses_nothing("ch_v3").await;
}

#[tokio::test]
async fn refusals_gc_disabled_outside_reference_pinned_older_metadata() {
    let now = now_ms();
    let fixture = make_fixture("py_v2_linear", now, true);
    let dir = fixture.table_dir();
    let files = metadata_files(&fixture);
    // Pinned to an older metadata file: refused; pinned to the newest: runs.
    let first = files[0].to_string_lossy().into_owned();
    let pinned = local_table(&dir, &[("iceberg_metadata_file_path", first.as_str())]);
    let e = run_on(&runtime(now, None), &pinned, options(None, true), false)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadArguments);
    assert!(
        e.message()
            .contains("works only on the newest metadata file"),
        "{}",
        e.message()
    );
    let newest = fixture.metadata_path().to_string_lossy().into_owned();
    let pinned = local_table(&dir, &[("iceberg_metadata_file_path", newest.as_str())]);
    let r = run_on(&runtime(now, None), &pinned, options(None, true), false)
        .await
        .unwrap();
    assert_eq!(metrics(&r), expected_old(&fixture.facts, |_| true));

    edit_newest_metadata(&fixture, |json| {
        let log = json["metadata-log"].as_array_mut().expect("metadata-log");
        log.push(json!({"metadata-file": "/elsewhere/v0.metadata.json", "timestamp-ms": 1}));
    });
    let e = run_local(&dir, now, options(None, false))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotImplemented);
    assert!(
        e.message().contains("/elsewhere/v0.metadata.json"),
        "{}",
        e.message()
    );

    edit_newest_metadata(&fixture, |json| {
        let log = json["metadata-log"].as_array_mut().expect("metadata-log");
        log.pop();
        let props = json["properties"].as_object_mut().expect("properties");
        props.insert("gc.enabled".into(), json!("false"));
    });
    let e = run_local(&dir, now, options(None, false))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadArguments);
    assert!(e.message().contains("gc.enabled"), "{}", e.message());
    for stray in strays(&fixture.facts) {
        assert!(
            Path::new(&stray.path).exists(),
            "{} deleted by a refused run",
            stray.path
        );
    }
}

/// The most aggressive run (`older_than` = now) on a pyiceberg table: exactly the strays go,
/// pyiceberg still finds every referenced file and plans every ref.
async fn pyiceberg_table_loses_nothing(scenario: &str) {
    let now = now_ms();
    let fixture = make_fixture(scenario, now, true);
    let r = run_local(&fixture.table_dir(), now, options(Some(now), false))
        .await
        .unwrap();
    assert_eq!(
        metrics(&r),
        expected_of_kinds(&fixture.facts, &["old", "young"], |_| true),
        "{scenario}"
    );
    assert_table_files_exist(&fixture.facts);
    assert_oracle_clean(&fixture);
}

#[tokio::test]
async fn pyiceberg_v1_table_loses_nothing() {
    pyiceberg_table_loses_nothing("py_v1_linear").await;
}

#[tokio::test]
async fn pyiceberg_branches_and_tags_lose_nothing() {
    pyiceberg_table_loses_nothing("py_v2_branches_tags").await;
}

#[tokio::test]
async fn pyiceberg_deletes_and_overwrites_lose_nothing() {
    pyiceberg_table_loses_nothing("py_v2_deletes").await;
}
