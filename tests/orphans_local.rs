//! `remove_orphan_files` end to end on local fixture tables built by pyiceberg and ClickHouse:
//! what is deleted, what is kept, and that no live file is ever lost.

#[path = "common/fixtures.rs"]
mod fixtures;
mod orphans_support;

use std::path::Path;

use fixtures::{Fixture, make_fixture, now_ms, oracle_inspect};
use icetrim::engine::OrphanMetrics;
use icetrim::plan::{OrphanOptions, ProcedureCall};
use icetrim::sql::{BindContext, SessionTimeZone, Statement, bind, parse_statement};
use orphans_support::*;
use serde_json::Value;

/// pyiceberg's view after the run: nothing referenced is missing and every ref still plans.
fn assert_oracle_clean(fixture: &Fixture) {
    let oracle = oracle_inspect(&fixture.metadata_path());
    assert_eq!(oracle["missing"], Value::Array(vec![]), "files missing");
    assert!(
        oracle.get("errors").is_none(),
        "oracle errors: {}",
        oracle["errors"]
    );
}

fn stray_paths(facts: &Value, kind: &str) -> Vec<String> {
    strays(facts)
        .into_iter()
        .filter(|s| s.kind == kind)
        .map(|s| s.path)
        .collect()
}

#[tokio::test]
async fn strays_of_every_category_go_young_and_hidden_stay_second_run_is_clean() {
    let now = now_ms();
    let fixture = make_fixture("py_v2_linear", now, true);
    let dir = fixture.table_dir();
    let first = run_local(&dir, now, options(None, false)).await.unwrap();
    assert!(first.warnings.is_empty(), "{:?}", first.warnings);
    let expected = expected_old(&fixture.facts, |_| true);
    assert_eq!(metrics(&first), expected);
    assert!(expected.deleted_data_files_count >= 2);
    for category in [
        expected.deleted_position_delete_files_count,
        expected.deleted_equality_delete_files_count,
        expected.deleted_manifest_files_count,
        expected.deleted_manifest_lists_count,
        expected.deleted_metadata_files_count,
        expected.deleted_statistics_files_count,
    ] {
        assert_eq!(category, 1, "one stray of each category: {expected:?}");
    }
    for gone in stray_paths(&fixture.facts, "old") {
        assert!(!Path::new(&gone).exists(), "{gone} survived");
    }
    for kept in stray_paths(&fixture.facts, "young")
        .into_iter()
        .chain(stray_paths(&fixture.facts, "hidden"))
    {
        assert!(Path::new(&kept).exists(), "{kept} was deleted");
    }
    assert_table_files_exist(&fixture.facts);
    assert_oracle_clean(&fixture);
    let second = run_local(&dir, now, options(None, false)).await.unwrap();
    assert_eq!(metrics(&second), OrphanMetrics::default());
}

#[tokio::test]
async fn a_table_without_strays_gives_zeros_even_with_older_than_now() {
    let now = now_ms();
    let fixture = make_fixture("py_v2_deletes", now, false);
    let r = run_local(&fixture.table_dir(), now, options(Some(now), false))
        .await
        .unwrap();
    assert_eq!(metrics(&r), OrphanMetrics::default());
    assert_table_files_exist(&fixture.facts);
    assert_oracle_clean(&fixture);
}

#[tokio::test]
async fn thresholds_default_window_and_second_boundary() {
    let now = now_ms();
    let fixture = make_fixture("py_v2_linear", now, false);
    let dir = fixture.table_dir();
    write_stray(&dir, "data/two-days.parquet", now - 2 * DAY_MS);
    write_stray(&dir, "data/four-days.parquet", now - 4 * DAY_MS);
    // Default: now - 3 days. The two-day stray is inside the in-progress-write window.
    let r = run_local(&dir, now, options(None, true)).await.unwrap();
    assert_eq!(metrics(&r).deleted_data_files_count, 1);
    // Second precision: a file modified within the older_than second is too young.
    let t = (now / 1000 - 5 * 86_400) * 1000; // whole second, five days ago
    let boundary = write_stray(&dir, "data/boundary.parquet", t + 500);
    let at = |older_than: i64| run_local(&dir, now, options(Some(older_than), true));
    let count = |m: OrphanMetrics| m.deleted_data_files_count;
    // older_than t+999 ms is the file's own second: kept (the other strays are younger).
    assert_eq!(count(metrics(&at(t + 999).await.unwrap())), 0);
    assert_eq!(count(metrics(&at(t + 1000).await.unwrap())), 1);
    set_mtime(&boundary, t + 999);
    assert_eq!(count(metrics(&at(t + 1000).await.unwrap())), 1);
    assert_eq!(count(metrics(&at(t).await.unwrap())), 0);
    // The real run at the boundary deletes exactly the boundary file.
    let r = run_local(&dir, now, options(Some(t + 1000), false))
        .await
        .unwrap();
    assert_eq!(count(metrics(&r)), 1);
    assert!(!boundary.exists());
    assert!(dir.join("data/four-days.parquet").exists());
    assert!(dir.join("data/two-days.parquet").exists());
}

#[tokio::test]
async fn future_older_than_is_refused_before_io() {
    let now = now_ms();
    let missing = Path::new("/nonexistent/icetrim/table");
    let e = run_local(missing, now, options(Some(now + 1000), false))
        .await
        .unwrap_err();
    assert_eq!(
        e.message(),
        "older_than must not be in the future; a future value would bypass the \
         in-progress-write safety window"
    );
    let e = run_local(
        missing,
        now,
        OrphanOptions {
            location: Some("../x".into()),
            ..options(None, false)
        },
    )
    .await
    .unwrap_err();
    assert_eq!(
        e.message(),
        "location must be a relative path under the table root, got '../x'"
    );
}

#[tokio::test]
async fn dry_run_deletes_nothing_and_reports_the_same_counts() {
    let now = now_ms();
    let fixture = make_fixture("py_v2_linear", now, true);
    let dir = fixture.table_dir();
    let dry = run_local(&dir, now, options(None, true)).await.unwrap();
    for path in strays(&fixture.facts).iter().map(|s| &s.path) {
        assert!(Path::new(path).exists(), "dry run deleted {path}");
    }
    let real = run_local(&dir, now, options(None, false)).await.unwrap();
    assert_eq!(metrics(&dry), metrics(&real));
    assert_eq!(metrics(&dry), expected_old(&fixture.facts, |_| true));
}

fn bound_location(call: &str) -> Option<String> {
    let sql = format!("ALTER TABLE t EXECUTE {call}");
    let Ok(Statement::AlterExecute(alter)) = parse_statement(&sql) else {
        panic!("{sql} does not parse as ALTER");
    };
    let context = BindContext {
        now_ms: now_ms(),
        time_zone: SessionTimeZone::Named(chrono_tz::UTC),
    };
    match bind(&alter.procedure, &alter.args, &context) {
        Ok(ProcedureCall::Orphans(o)) => o.location,
        other => panic!("{call}: {other:?}"),
    }
}

#[tokio::test]
async fn location_scopes_the_scan() {
    let now = now_ms();
    let fixture = make_fixture("py_v2_partitioned", now, true);
    let dir = fixture.table_dir();
    let root = dir.to_string_lossy().into_owned();
    let nested = write_stray(&dir, "data/a/b/c/deep.parquet", now - 10 * DAY_MS);
    let with_location = |location: Option<String>| OrphanOptions {
        location,
        ..options(None, true)
    };
    let data = bound_location("remove_orphan_files(location = 'data/', dry_run = 1)");
    let dotted = bound_location("remove_orphan_files(location = './data/', dry_run = 1)");
    assert_eq!(data, dotted);
    let under = |prefix: &str| {
        let prefix = format!("{root}/{prefix}");
        move |p: &str| p.starts_with(&prefix)
    };
    let mut expected_data = expected_old(&fixture.facts, under("data/"));
    expected_data.deleted_data_files_count += 1; // the nested stray
    let r = run_local(&dir, now, with_location(data)).await.unwrap();
    assert_eq!(metrics(&r), expected_data);
    let r = run_local(&dir, now, with_location(dotted)).await.unwrap();
    assert_eq!(metrics(&r), expected_data);
    let r = run_local(&dir, now, with_location(Some("metadata".into())))
        .await
        .unwrap();
    assert_eq!(
        metrics(&r),
        expected_old(&fixture.facts, under("metadata/"))
    );
    assert_eq!(metrics(&r).deleted_data_files_count, 0);
    let r = run_local(&dir, now, with_location(Some("data/a".into())))
        .await
        .unwrap();
    assert_eq!(metrics(&r).deleted_data_files_count, 1);
    let e = run_local(&dir, now, with_location(Some("nope".into())))
        .await
        .unwrap_err();
    assert_eq!(
        e.message(),
        format!("Scan path '{root}/nope' does not exist")
    );
    // The partition folders `data/_c=<v>/` are scanned: their strays are orphans.
    let in_partitions = expected_old(&fixture.facts, |p| p.contains("/data/_c="));
    assert!(
        in_partitions.deleted_data_files_count >= 3,
        "{in_partitions:?}"
    );
    let r = run_local(&dir, now, options(None, false)).await.unwrap();
    assert_eq!(
        metrics(&r).deleted_data_files_count,
        expected_old(&fixture.facts, |_| true).deleted_data_files_count + 1
    );
    assert!(!nested.exists());
    assert!(dir.join("data/_temporary/part-00001.parquet").exists());
    assert_table_files_exist(&fixture.facts);
    assert_oracle_clean(&fixture);
}

#[tokio::test]
async fn explain_lists_orphans_and_kept_files_reads_each_file_once_and_changes_nothing() {
    use icetrim::format::Value as Cell;
    use icetrim::io::{FileIO, RequestCounter};
    let now = now_ms();
    let fixture = make_fixture("py_v2_linear", now, true);
    let dir = fixture.table_dir();
    let counter = RequestCounter::new();
    let io = FileIO::local().with_request_counter(counter.clone());
    let rt = runtime(now, Some(io));
    let r = run_on(&rt, &local_table(&dir, &[]), options(None, false), true)
        .await
        .unwrap();
    let counts = counter.snapshot();
    let oracle = oracle_inspect(&fixture.metadata_path());
    let snapshots = oracle["snapshot_files"]
        .as_object()
        .expect("snapshot_files");
    let mut lists = std::collections::BTreeSet::new();
    let mut manifests = std::collections::BTreeSet::new();
    for s in snapshots.values() {
        lists.insert(s["manifest_list"].as_str().expect("list").to_string());
        manifests.extend(fixtures::sorted_strings(&s["manifests"]));
    }
    assert!(manifests.len() >= 2, "{manifests:?}");
    // The metadata file once, then each distinct manifest list and manifest once.
    let reads = u64::try_from(1 + lists.len() + manifests.len()).unwrap_or(u64::MAX);
    assert_eq!(counts.get, reads, "{counts}");
    assert_eq!((counts.put, counts.delete), (0, 0), "{counts}");
    for stray in strays(&fixture.facts) {
        assert!(
            Path::new(&stray.path).exists(),
            "EXPLAIN deleted {}",
            stray.path
        );
    }
    let text = |row: &Vec<Cell>, i: usize| match &row[i] {
        Cell::Str(s) => s.clone(),
        other => panic!("column {i} is not text: {other:?}"),
    };
    let int = |row: &Vec<Cell>, i: usize| match &row[i] {
        Cell::Int(v) => *v,
        other => panic!("column {i} is not Int64: {other:?}"),
    };
    let names: Vec<&str> = r.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "item",
            "path",
            "category",
            "reason",
            "files",
            "size_bytes",
            "last_modified"
        ]
    );
    let mut orphan_paths: Vec<String> = r
        .rows
        .iter()
        .filter(|row| text(row, 0) == "orphan")
        .map(|row| text(row, 1))
        .collect();
    orphan_paths.sort();
    let mut old: Vec<String> = strays(&fixture.facts)
        .into_iter()
        .filter(|s| s.kind == "old")
        .map(|s| s.path)
        .collect();
    old.sort();
    assert_eq!(orphan_paths, old);
    let kept: Vec<(String, String)> = r
        .rows
        .iter()
        .filter(|row| text(row, 0) == "kept")
        .map(|row| (text(row, 1), text(row, 3)))
        .collect();
    for stray in strays(&fixture.facts).iter().filter(|s| s.kind != "old") {
        let reason = if stray.kind == "young" {
            "too_young"
        } else {
            "hidden"
        };
        assert!(
            kept.contains(&(stray.path.clone(), reason.to_string())),
            "{} not kept as {reason}: {kept:?}",
            stray.path
        );
    }
    let total = |name: &str| {
        r.rows
            .iter()
            .find(|row| text(row, 0) == "total" && text(row, 1) == name)
            .map(|row| int(row, 4))
            .unwrap_or_else(|| panic!("no total {name}"))
    };
    let expected = expected_old(&fixture.facts, |_| true);
    assert_eq!(
        total("deleted_data_files_count"),
        expected.deleted_data_files_count
    );
    assert_eq!(total("deleted_metadata_files_count"), 1);
    assert_eq!(total("kept_hidden_count"), 4);
    assert_eq!(total("kept_too_young_count"), 1);
    // Every reachable file is on disk except the version hint, which this table lacks.
    assert_eq!(
        total("reachable_files_count"),
        total("reachable_listed_count") + 1
    );
}
