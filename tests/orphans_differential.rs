//! Differential: `remove_orphan_files()` on ClickHouse (chdb) and on icetrim, each on its own copy
//! of the same fixture (built twice with the same `now`: metadata paths are absolute), gives the
//! same nine rows — except for files under `_`/`.` folders and dotfiles, which ClickHouse counts
//! as orphaned data files and icetrim keeps (Java's hidden-path rule; SPEC §4). The test asserts
//! that difference explicitly. Neither run loses a live file.

#[path = "common/fixtures.rs"]
mod fixtures;
mod orphans_support;

use fixtures::{Fixture, clickhouse, make_fixture, now_ms, oracle_inspect};
use icetrim::engine::OrphanMetrics;
use orphans_support::*;
use serde_json::Value;

fn rows_as_metrics(rows: &[Vec<String>]) -> OrphanMetrics {
    let names: Vec<&str> = rows
        .iter()
        .filter_map(|r| r.first().map(String::as_str))
        .collect();
    let expected_names: Vec<&str> = OrphanMetrics::default()
        .named_values()
        .iter()
        .map(|(name, _)| *name)
        .collect();
    assert_eq!(names, expected_names, "ClickHouse's row names and order");
    let value = |i: usize| -> i64 {
        rows[i][1]
            .parse()
            .unwrap_or_else(|e| panic!("row {i} value {:?}: {e}", rows[i][1]))
    };
    OrphanMetrics {
        deleted_data_files_count: value(0),
        deleted_position_delete_files_count: value(1),
        deleted_equality_delete_files_count: value(2),
        deleted_manifest_files_count: value(3),
        deleted_manifest_lists_count: value(4),
        deleted_metadata_files_count: value(5),
        deleted_statistics_files_count: value(6),
        skipped_missing_metadata_count: value(7),
        failed_deletions_count: value(8),
    }
}

fn row_count(fixture: &Fixture) -> Vec<Vec<String>> {
    clickhouse(&fixture.table_dir(), "SELECT count() FROM t").expect("ClickHouse reads the table")
}

async fn differential(scenario: &str, pyiceberg: bool) {
    let now = now_ms();
    let for_clickhouse = make_fixture(scenario, now, true);
    let for_icetrim = make_fixture(scenario, now, true);
    let rows_before = row_count(&for_clickhouse);
    let ch_rows = clickhouse(
        &for_clickhouse.table_dir(),
        "ALTER TABLE t EXECUTE remove_orphan_files()",
    )
    .expect("ClickHouse runs remove_orphan_files");
    let ch = rows_as_metrics(&ch_rows);
    let ours = metrics(
        &run_local(&for_icetrim.table_dir(), now, options(None, false))
            .await
            .unwrap(),
    );
    let hidden = strays(&for_icetrim.facts)
        .iter()
        .filter(|s| s.kind == "hidden")
        .inspect(|s| assert_eq!(s.category, "data", "{}", s.path))
        .count();
    assert_eq!(hidden, 4, "the fixture's hidden strays");
    let hidden = i64::try_from(hidden).unwrap_or(i64::MAX);
    // The deliberate difference: ClickHouse deletes the hidden strays as data files.
    assert_eq!(
        ch.deleted_data_files_count,
        ours.deleted_data_files_count + hidden,
        "{scenario}: ClickHouse {ch:?}, icetrim {ours:?}"
    );
    let same_otherwise = OrphanMetrics {
        deleted_data_files_count: ours.deleted_data_files_count,
        ..ch
    };
    assert_eq!(same_otherwise, ours, "{scenario}: ClickHouse {ch:?}");
    assert!(ours.deleted_data_files_count >= 2);
    for stray in strays(&for_icetrim.facts) {
        let exists = std::path::Path::new(&stray.path).exists();
        assert_eq!(
            exists,
            stray.kind != "old",
            "icetrim: {} ({})",
            stray.path,
            stray.kind
        );
    }
    assert_eq!(
        row_count(&for_clickhouse),
        rows_before,
        "{scenario}: ClickHouse's copy"
    );
    assert_eq!(
        row_count(&for_icetrim),
        rows_before,
        "{scenario}: icetrim's copy"
    );
    if pyiceberg {
        let oracle = oracle_inspect(&for_icetrim.metadata_path());
        assert_eq!(oracle["missing"], Value::Array(vec![]));
        assert!(oracle.get("errors").is_none(), "{}", oracle["errors"]);
    }
}

#[tokio::test]
async fn same_rows_as_clickhouse_on_a_pyiceberg_table() {
    differential("py_v2_for_clickhouse", true).await;
}

#[tokio::test]
async fn same_rows_as_clickhouse_on_a_clickhouse_v2_table() {
    differential("ch_v2", false).await;
}

#[tokio::test]
async fn same_rows_as_clickhouse_on_a_clickhouse_v3_table() {
    differential("ch_v3", false).await;
}

/// Dry runs scoped by `location` on one fixture (dry runs change nothing): the same rows as
/// ClickHouse, but for the hidden strays under the scanned folder.
#[tokio::test]
async fn location_scoped_dry_runs_match_clickhouse() {
    let now = now_ms();
    let fixture = make_fixture("py_v2_for_clickhouse", now, true);
    let dir = fixture.table_dir();
    let root = dir.to_string_lossy().into_owned();
    for location in ["data/", "metadata/", "./data/"] {
        let sql = format!(
            "ALTER TABLE t EXECUTE remove_orphan_files(location = '{location}', dry_run = 1)"
        );
        let ch = rows_as_metrics(&clickhouse(&dir, &sql).expect("ClickHouse dry run"));
        let options = icetrim::plan::OrphanOptions {
            location: Some(location.to_string()),
            ..options(None, true)
        };
        let ours = metrics(&run_local(&dir, now, options).await.unwrap());
        let prefix = format!("{root}/{}", location.trim_start_matches("./"));
        let hidden = strays(&fixture.facts)
            .iter()
            .filter(|s| s.kind == "hidden" && s.path.starts_with(&prefix))
            .count();
        let hidden = i64::try_from(hidden).unwrap_or(i64::MAX);
        assert_eq!(
            OrphanMetrics {
                deleted_data_files_count: ch.deleted_data_files_count - hidden,
                ..ch
            },
            ours,
            "location {location}: ClickHouse {ch:?}"
        );
        assert_eq!(
            ours,
            expected_old(&fixture.facts, |p| p.starts_with(&prefix))
        );
    }
    for stray in strays(&fixture.facts) {
        assert!(
            std::path::Path::new(&stray.path).exists(),
            "dry run deleted {}",
            stray.path
        );
    }
}
