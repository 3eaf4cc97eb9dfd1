//! `EXPLAIN ALTER TABLE t EXECUTE remove_orphan_files()` on a local fixture with strays: each
//! orphan and each kept file with its reason, the totals, each reachable file read once, nothing
//! changed. What the statement deletes and keeps is walked through in the SQL sessions
//! `tests/sessions/orphans_*.test`.

#[path = "common/fixtures.rs"]
mod fixtures;
mod orphans_support;

use std::path::Path;

use fixtures::{make_fixture, now_ms, oracle_inspect};
use orphans_support::*;

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

/// EXPLAIN's `last_modified` is in the session time zone (issue #15 §4), as ClickHouse prints a
/// `DateTime` (`YYYY-MM-DD hh:mm:ss`).
#[tokio::test]
async fn explain_prints_last_modified_in_the_session_time_zone() {
    use icetrim::engine::procedures::run_procedure;
    use icetrim::format::Value as Cell;
    use icetrim::plan::ProcedureCall;
    use icetrim::settings::Settings;
    let now = now_ms();
    let fixture = make_fixture("py_v2_linear", now, true);
    let dir = fixture.table_dir();
    let mut settings = Settings::new();
    settings
        .set(
            "session_timezone",
            &icetrim::sql::ast::Literal::String("America/New_York".into()),
        )
        .unwrap();
    let r = run_procedure(
        &runtime(now, None),
        &settings,
        &local_table(&dir, &[]),
        ProcedureCall::Orphans(options(None, false)),
        true,
    )
    .await
    .unwrap();
    let orphans: Vec<&Vec<Cell>> = r
        .rows
        .iter()
        .filter(|row| row[0] == Cell::Str("orphan".into()))
        .collect();
    assert!(!orphans.is_empty());
    for row in orphans {
        let (Cell::Str(path), Cell::Str(shown)) = (&row[1], &row[6]) else {
            panic!("not text: {row:?}");
        };
        let modified = std::fs::metadata(path).unwrap().modified().unwrap();
        let utc: chrono::DateTime<chrono::Utc> = modified.into();
        let ny = utc.with_timezone(&chrono_tz::America::New_York);
        assert_eq!(shown, &ny.format("%Y-%m-%d %H:%M:%S").to_string(), "{path}");
        assert_ne!(shown, &utc.format("%Y-%m-%d %H:%M:%S").to_string());
    }
}
