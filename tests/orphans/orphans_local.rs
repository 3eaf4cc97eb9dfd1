//! `EXPLAIN ALTER TABLE t EXECUTE remove_orphan_files()` on a local fixture with strays: each
//! orphan and each kept file with its reason, the totals, each reachable file read once, nothing
//! changed. What the statement deletes and keeps is walked through in the SQL sessions
//! `tests/sessions/orphans_*.test`.

use crate::support::fixtures;
use crate::support::orphans as orphans_support;

use std::collections::BTreeSet;
use std::path::Path;

use fixtures::{make_fixture, now_ms, oracle_inspect};
use orphans_support::*;

#[tokio::test]
async fn explain_lists_orphans_and_kept_files_reads_each_file_once_and_changes_nothing() {
    use icetrim::format::Value as Cell;
    use icetrim::internals::io::{FileIO, RequestCounter};
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
    // The first bytes of each versioned metadata file (their table-uuid: one table in
    // metadata/) and of each orphan metadata file of a lower version (its last-updated-ms), the
    // metadata file once, then each distinct manifest list and manifest once.
    let old_metadata_strays = strays(&fixture.facts)
        .iter()
        .filter(|s| s.category == "metadata" && s.kind == "old")
        .count();
    let heads = versioned_metadata(&dir).len() + old_metadata_strays;
    let reads = u64::try_from(heads + 1 + lists.len() + manifests.len()).unwrap_or(u64::MAX);
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

/// EXPLAIN's `last_modified` is in the session time zone, as ClickHouse prints a
/// `DateTime` (`YYYY-MM-DD hh:mm:ss`).
#[tokio::test]
async fn explain_prints_last_modified_in_the_session_time_zone() {
    use icetrim::Settings;
    use icetrim::format::Value as Cell;
    use icetrim::internals::engine::run_procedure;
    use icetrim::internals::plan::ProcedureCall;
    let now = now_ms();
    let fixture = make_fixture("py_v2_linear", now, true);
    let dir = fixture.table_dir();
    let mut settings = Settings::new();
    settings
        .set(
            "session_timezone",
            &icetrim::internals::sql::ast::Literal::String("America/New_York".into()),
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

// ---- Other tables under the location ----------------------------------------------------------

use icetrim::error::ErrorKind;
use icetrim::internals::plan::OrphanOptions;
use orphans_support::nested::{Nested, all_files};

/// `older_than = now` (the most aggressive run), optionally protecting other tables.
fn aggressive(now: i64, protect: bool, dry_run: bool) -> OrphanOptions {
    OrphanOptions {
        protect_other_tables: protect,
        ..options(Some(now), dry_run)
    }
}

fn assert_refused_naming(e: &icetrim::Error, nested: &Nested, names: &[&str]) {
    assert_eq!(e.kind(), ErrorKind::BadArguments, "{e}");
    assert!(
        e.message().contains("protect_other_tables = 1"),
        "no remedy in: {e}"
    );
    for name in names {
        let location = nested.location(name);
        let location = location.to_str().expect("UTF-8");
        assert!(
            e.message().contains(location),
            "{name} ({location}) not named in: {e}"
        );
    }
}

#[tokio::test]
async fn other_tables_under_the_location_refuse_by_default_and_nothing_is_deleted() {
    let now = now_ms();
    let nested = Nested::build();
    let before = all_files(&nested.root());
    let a = nested.location("a");
    let rt = runtime(now, None);
    let table = local_table(&a, &[]);
    for dry_run in [false, true] {
        let e = run_on(&rt, &table, aggressive(now, false, dry_run), false)
            .await
            .expect_err("a table with other tables under its location must refuse");
        assert_refused_naming(&e, &nested, &["b", "b2", "c"]);
    }
    // EXPLAIN deletes nothing, so it does not refuse: it lists the other tables, each marked as
    // what makes the statement refuse.
    let plan = run_on(&rt, &table, aggressive(now, false, false), true)
        .await
        .expect("EXPLAIN lists the other tables");
    let text = |v: &icetrim::format::Value| match v {
        icetrim::format::Value::Str(s) => s.clone(),
        other => panic!("not text: {other:?}"),
    };
    let mut refused: Vec<String> = plan
        .rows
        .iter()
        .filter(|row| text(&row[0]) == "other_table")
        .map(|row| {
            assert_eq!(text(&row[3]), "refused", "{row:?}");
            text(&row[1])
        })
        .collect();
    refused.sort();
    let mut expected: Vec<String> = ["b", "b2", "c"]
        .iter()
        .map(|t| nested.location(t).to_str().unwrap().to_string())
        .collect();
    expected.sort();
    assert_eq!(refused, expected);
    assert_eq!(all_files(&nested.root()), before, "EXPLAIN deleted nothing");
    // Narrowed to data/: the search still covers the whole location (c's metadata is not
    // under data/, but c's data files are).
    let narrowed = OrphanOptions {
        location: Some("data".into()),
        ..aggressive(now, false, false)
    };
    let e = run_on(&rt, &table, narrowed, false).await.unwrap_err();
    assert_refused_naming(&e, &nested, &["b", "b2", "c"]);
    // D's location is A's parent: everything of A, B, B2, C is another table's.
    let d = local_table(&nested.location("d"), &[]);
    let e = run_on(&rt, &d, aggressive(now, false, false), false)
        .await
        .unwrap_err();
    assert_refused_naming(&e, &nested, &["a"]);
    assert_eq!(
        all_files(&nested.root()),
        before,
        "a refused run deleted files"
    );
    nested.assert_all_readable();
}

#[tokio::test]
async fn protect_other_tables_deletes_only_the_tables_own_orphans() {
    let now = now_ms();
    let nested = Nested::build();
    let before = all_files(&nested.root());
    let rt = runtime(now, None);
    // D (A's parent) first: only D's own stray goes; all of A (strays too: they are under A's
    // location) stays.
    let d = local_table(&nested.location("d"), &[]);
    let r = run_on(&rt, &d, aggressive(now, true, false), false)
        .await
        .unwrap();
    assert_eq!(
        metrics(&r),
        icetrim::OrphanMetrics {
            deleted_data_files_count: 1,
            ..Default::default()
        },
        "{:?}",
        r.warnings
    );
    let mut expected = before.clone();
    expected.remove(&nested.stray("d"));
    assert_eq!(all_files(&nested.root()), expected);
    // A narrowed to data/, dry run: A's data stray only (b2's stray lies under b2's location,
    // c's data files are reachable from c).
    let a = local_table(&nested.location("a"), &[]);
    let narrowed = OrphanOptions {
        location: Some("data".into()),
        ..aggressive(now, true, true)
    };
    let r = run_on(&rt, &a, narrowed, false).await.unwrap();
    assert_eq!(
        metrics(&r),
        icetrim::OrphanMetrics {
            deleted_data_files_count: 1,
            ..Default::default()
        }
    );
    // A, whole table: exactly its two strays go.
    let r = run_on(&rt, &a, aggressive(now, true, false), false)
        .await
        .unwrap();
    assert_eq!(
        metrics(&r),
        icetrim::OrphanMetrics {
            deleted_data_files_count: 1,
            deleted_manifest_lists_count: 1,
            ..Default::default()
        },
        "{:?}",
        r.warnings
    );
    expected.remove(&nested.stray("a_data"));
    expected.remove(&nested.stray("a_list"));
    assert_eq!(all_files(&nested.root()), expected);
    for stray in ["b", "b2", "c"] {
        assert!(nested.stray(stray).exists(), "{stray}'s stray deleted");
    }
    let only_old = nested.facts["b_only_in_old_metadata"].as_str().unwrap();
    assert!(Path::new(only_old).exists(), "{only_old} deleted");
    nested.assert_all_readable();
}

#[tokio::test]
async fn explain_lists_the_other_tables_and_keeps_their_files() {
    use icetrim::format::Value as Cell;
    let now = now_ms();
    let nested = Nested::build();
    let before = all_files(&nested.root());
    let rt = runtime(now, None);
    let a = local_table(&nested.location("a"), &[]);
    let r = run_on(&rt, &a, aggressive(now, true, false), true)
        .await
        .unwrap();
    assert_eq!(all_files(&nested.root()), before, "EXPLAIN changed files");
    let text = |row: &Vec<Cell>, i: usize| match &row[i] {
        Cell::Str(s) => s.clone(),
        other => panic!("column {i} is not text: {other:?}"),
    };
    let mut tables: Vec<String> = r
        .rows
        .iter()
        .filter(|row| text(row, 0) == "other_table")
        .map(|row| text(row, 1))
        .collect();
    tables.sort();
    let mut wanted: Vec<String> = ["b", "b2", "c"]
        .iter()
        .map(|n| nested.location(n).to_string_lossy().into_owned())
        .collect();
    wanted.sort();
    assert_eq!(tables, wanted);
    let orphans: BTreeSet<String> = r
        .rows
        .iter()
        .filter(|row| text(row, 0) == "orphan")
        .map(|row| text(row, 1))
        .collect();
    let own: BTreeSet<String> = ["a_data", "a_list"]
        .iter()
        .map(|n| nested.stray(n).to_string_lossy().into_owned())
        .collect();
    assert_eq!(orphans, own);
    let kept: BTreeSet<(String, String)> = r
        .rows
        .iter()
        .filter(|row| text(row, 0) == "kept")
        .map(|row| (text(row, 1), text(row, 3)))
        .collect();
    for stray in ["b", "b2", "c"] {
        let path = nested.stray(stray).to_string_lossy().into_owned();
        assert!(
            kept.contains(&(path.clone(), "other_table".to_string())),
            "{path} not kept as other_table: {kept:?}"
        );
    }
}

#[tokio::test]
async fn an_unreadable_other_table_refuses_even_when_protected() {
    let now = now_ms();
    let nested = Nested::build();
    let rt = runtime(now, None);
    let a = local_table(&nested.location("a"), &[]);
    // A corrupt metadata file of b.
    let corrupt = nested
        .location("b")
        .join("metadata/00009-0f2a0c38-5d0e-4b4b-9a4c-3c4e5b6a7d8e.metadata.json");
    std::fs::write(&corrupt, b"{ not json").unwrap();
    let before = all_files(&nested.root());
    let e = run_on(&rt, &a, aggressive(now, true, false), false)
        .await
        .expect_err("a corrupt metadata file of another table must refuse");
    assert!(
        e.message().contains(corrupt.to_str().unwrap()),
        "corrupt file not named: {e}"
    );
    assert_eq!(all_files(&nested.root()), before);
    // A manifest list b's newest metadata names is gone: b cannot be read whole.
    std::fs::remove_file(&corrupt).unwrap();
    let newest = nested.facts["tables"]["b"]["metadata_path"]
        .as_str()
        .unwrap();
    let current = current_manifest_list(Path::new(newest));
    std::fs::remove_file(&current).unwrap();
    let before = all_files(&nested.root());
    let e = run_on(&rt, &a, aggressive(now, true, false), false)
        .await
        .expect_err("an unreadable manifest list of another table must refuse");
    assert!(e.message().contains(&current), "{e}");
    assert_eq!(all_files(&nested.root()), before);
}

/// The local path of the current snapshot's manifest list in the metadata file at `path`.
fn current_manifest_list(path: &Path) -> String {
    let metadata: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let current = &metadata["current-snapshot-id"];
    let snapshots = metadata["snapshots"].as_array().unwrap();
    let snapshot = snapshots
        .iter()
        .find(|s| &s["snapshot-id"] == current)
        .unwrap();
    let list = snapshot["manifest-list"].as_str().unwrap();
    list.strip_prefix("file://").unwrap_or(list).to_string()
}

/// Another table's own expiry deletes manifest lists and manifests its older metadata files
/// still name: protecting it reads what is there and passes over what is gone, while what its
/// newest metadata reaches stays required (the test above).
#[tokio::test]
async fn an_other_tables_expired_files_named_by_its_old_metadata_do_not_stop_the_run() {
    use icetrim::internals::engine::run_procedure;
    use icetrim::internals::plan::{ExpireOptions, ProcedureCall};
    let now = now_ms();
    let nested = Nested::build();
    let rt = runtime(now, None);
    // b1's manifest list is named only by b's older metadata files.
    let only_old = nested.facts["b_only_in_old_metadata"].as_str().unwrap();
    std::fs::remove_file(only_old).unwrap();
    // And b's own expiry, keeping one snapshot, deletes more of what they name.
    let b = local_table(&nested.location("b"), &[]);
    let expire = ExpireOptions {
        expire_before_ms: Some(now),
        retain_last: Some(1),
        ..Default::default()
    };
    let settings = icetrim::Settings::new();
    run_procedure(&rt, &settings, &b, ProcedureCall::Expire(expire), false)
        .await
        .expect("b's expiry");
    let before = all_files(&nested.root());
    let a = local_table(&nested.location("a"), &[]);
    let r = run_on(&rt, &a, aggressive(now, true, false), false)
        .await
        .expect("a protected run passes over b's expired files");
    assert_eq!(
        metrics(&r),
        icetrim::OrphanMetrics {
            deleted_data_files_count: 1,
            deleted_manifest_lists_count: 1,
            ..Default::default()
        },
        "{:?}",
        r.warnings
    );
    let mut expected = before;
    expected.remove(&nested.stray("a_data"));
    expected.remove(&nested.stray("a_list"));
    assert_eq!(all_files(&nested.root()), expected);
    nested.assert_all_readable();
}

#[tokio::test]
async fn a_metadata_file_outside_a_metadata_folder_protects_the_folder_above_it() {
    let now = now_ms();
    let nested = Nested::build();
    let a = nested.location("a");
    let rt = runtime(now, None);
    let table = local_table(&a, &[]);
    // A gzip-spelled copy of b's newest metadata parked in a/backup/ (a folder not named
    // metadata): its table is taken to live in the folder above, a itself.
    let newest = nested.facts["tables"]["b"]["metadata_path"]
        .as_str()
        .unwrap();
    let copy = a.join("backup/00003-0f2a0c38-5d0e-4b4b-9a4c-3c4e5b6a7d8e.gz.metadata.json");
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &std::fs::read(newest).unwrap()).unwrap();
    std::fs::write(&copy, gz.finish().unwrap()).unwrap();
    set_mtime(&copy, now - 10 * DAY_MS);
    let before = all_files(&nested.root());
    let e = run_on(&rt, &table, aggressive(now, false, false), false)
        .await
        .unwrap_err();
    let a_text = a.to_str().unwrap();
    let named = format!(
        "'{a_text}' (metadata '{}', its location field 'file://{a_text}/nested_b')",
        copy.display()
    );
    assert!(e.message().contains(&named), "{named} not in: {e}");
    // Protected: the whole location is another table's, so nothing at all is deleted.
    let r = run_on(&rt, &table, aggressive(now, true, false), false)
        .await
        .unwrap();
    assert_eq!(metrics(&r), icetrim::OrphanMetrics::default());
    assert_eq!(all_files(&nested.root()), before);
}

// ---- Symlinks and odd names ----

/// `(item, path, reason)` of every EXPLAIN row that is not a total.
fn explain_items(r: &icetrim::engine::QueryResult) -> Vec<(String, String, String)> {
    use icetrim::format::Value as Cell;
    let text = |cell: &Cell| match cell {
        Cell::Str(s) => s.clone(),
        other => panic!("not text: {other:?}"),
    };
    r.rows
        .iter()
        .filter(|row| text(&row[0]) != "total")
        .map(|row| (text(&row[0]), text(&row[1]), text(&row[3])))
        .collect()
}

/// Old files outside the table, behind the links `links_below_the_table_are_never_followed`
/// makes; returns them.
fn outside_files(outside: &Path, now: i64) -> Vec<std::path::PathBuf> {
    let old = now - 10 * DAY_MS;
    [
        "sub/old-1.parquet",
        "sub/deeper/old-2.parquet",
        "meta/snap-9-9-x.avro",
        "meta/v0.metadata.json",
        "root/old.parquet",
        "single.parquet",
    ]
    .iter()
    .map(|rel| write_stray(outside, rel, old))
    .collect()
}

/// A symlink exists at `path` (it is never deleted).
fn assert_link(path: &Path) {
    let meta = std::fs::symlink_metadata(path)
        .unwrap_or_else(|e| panic!("link {} is gone: {e}", path.display()));
    assert!(
        meta.file_type().is_symlink(),
        "{} is no link",
        path.display()
    );
}

#[tokio::test]
async fn links_below_the_table_are_never_followed_nor_deleted() {
    use icetrim::internals::io::{FileIO, RequestCounter};
    let now = now_ms();
    let fixture = make_fixture("py_v2_linear", now, true);
    let dir = fixture.table_dir();
    let outside = fixture.dir.path().join("outside");
    let behind = outside_files(&outside, now);
    let links = [
        ("data/sub", outside.join("sub")),
        ("metadata/linked", outside.join("meta")),
        ("rootlink", outside.join("root")),
        ("data/file-link.parquet", outside.join("single.parquet")),
        ("data/broken", dir.join("nowhere")),
    ];
    for (rel, target) in &links {
        std::os::unix::fs::symlink(target, dir.join(rel)).expect("make link");
    }
    let link_uris: Vec<String> = links
        .iter()
        .map(|(rel, _)| format!("{}/{rel}", dir.display()))
        .collect();
    // The direct walk (the local store icetrim builds) and object_store's listing (a counting
    // layer turns the direct walk off).
    let direct = runtime(now, None);
    let counted = runtime(
        now,
        Some(FileIO::local().with_request_counter(RequestCounter::new())),
    );
    for (name, rt) in [("direct", &direct), ("object_store", &counted)] {
        let r = run_on(rt, &local_table(&dir, &[]), options(None, false), true)
            .await
            .unwrap_or_else(|e| panic!("{name}: EXPLAIN failed: {e}"));
        let items = explain_items(&r);
        for (item, path, _) in &items {
            assert!(
                !path.starts_with(&outside.display().to_string())
                    && !link_uris.iter().any(|l| path.starts_with(&format!("{l}/"))),
                "{name}: {item} row for a file behind a link: {path}"
            );
        }
        let mut orphans: Vec<&String> = items
            .iter()
            .filter(|(item, _, _)| item == "orphan")
            .map(|(_, path, _)| path)
            .collect();
        orphans.sort();
        let mut old: Vec<String> = strays(&fixture.facts)
            .into_iter()
            .filter(|s| s.kind == "old")
            .map(|s| s.path)
            .collect();
        old.sort();
        assert_eq!(orphans, old.iter().collect::<Vec<_>>(), "{name}");
        let shown: Vec<&String> = items
            .iter()
            .filter(|(item, _, reason)| item == "link" && reason == "symlink")
            .map(|(_, path, _)| path)
            .collect();
        let expected: Vec<&String> = match name {
            // The walk sees every link.
            "direct" => link_uris.iter().collect(),
            // object_store's listing hides broken links and shows only links it listed
            // something through.
            _ => link_uris[..4].iter().collect(),
        };
        for uri in expected {
            assert!(
                shown.contains(&uri),
                "{name}: link {uri} not shown: {items:?}"
            );
        }
        assert_eq!(r.columns.len(), 7, "{name}: the EXPLAIN columns stay");
    }
    let r = run_on(
        &direct,
        &local_table(&dir, &[]),
        options(None, false),
        false,
    )
    .await
    .expect("remove_orphan_files");
    assert_eq!(metrics(&r), expected_old(&fixture.facts, |_| true));
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("symbolic link")
                && w.contains(&format!("{}/data/sub", dir.display()))),
        "{:?}",
        r.warnings
    );
    for file in &behind {
        assert!(
            file.exists(),
            "deleted outside the table: {}",
            file.display()
        );
    }
    for (rel, _) in &links {
        assert_link(&dir.join(rel));
    }
    for stray in strays(&fixture.facts).iter().filter(|s| s.kind == "old") {
        assert!(
            !Path::new(&stray.path).exists(),
            "orphan kept: {}",
            stray.path
        );
    }
    assert_table_files_exist(&fixture.facts);
}

#[tokio::test]
async fn links_through_the_object_store_listing_are_never_deleted() {
    use icetrim::internals::io::{FileIO, RequestCounter};
    let now = now_ms();
    let fixture = make_fixture("py_v2_linear", now, true);
    let dir = fixture.table_dir();
    let outside = fixture.dir.path().join("outside");
    let behind = outside_files(&outside, now);
    std::os::unix::fs::symlink(outside.join("sub"), dir.join("data/sub")).expect("link");
    std::os::unix::fs::symlink(outside.join("meta"), dir.join("metadata/linked")).expect("link");
    std::os::unix::fs::symlink(outside.join("single.parquet"), dir.join("data/f.parquet"))
        .expect("link");
    let io = FileIO::local().with_request_counter(RequestCounter::new());
    let r = run_on(
        &runtime(now, Some(io)),
        &local_table(&dir, &[]),
        options(None, false),
        false,
    )
    .await
    .expect("remove_orphan_files");
    assert_eq!(metrics(&r), expected_old(&fixture.facts, |_| true));
    for file in &behind {
        assert!(
            file.exists(),
            "deleted outside the table: {}",
            file.display()
        );
    }
    for rel in ["data/sub", "metadata/linked", "data/f.parquet"] {
        assert_link(&dir.join(rel));
    }
    assert_table_files_exist(&fixture.facts);
}

#[tokio::test]
async fn a_data_folder_that_is_a_link_to_a_shared_folder_is_left_alone() {
    let now = now_ms();
    let fixture = make_fixture("py_v2_linear", now, true);
    let dir = fixture.table_dir();
    // The table's data/ moves to a shared folder, which also holds another job's old files;
    // data/ becomes a link to it.
    let shared = fixture.dir.path().join("shared");
    std::fs::rename(dir.join("data"), &shared).expect("move data/");
    std::os::unix::fs::symlink(&shared, dir.join("data")).expect("link data/");
    let other = write_stray(&shared, "other-job/old.parquet", now - 30 * DAY_MS);
    let data_uri = format!("{}/data", dir.display());
    let r = run_local(&dir, now, options(None, false))
        .await
        .expect("remove_orphan_files");
    assert!(other.exists(), "a shared file was deleted");
    // Only the strays outside data/ go.
    let expected = expected_old(&fixture.facts, |p| !p.starts_with(&format!("{data_uri}/")));
    assert_eq!(metrics(&r), expected);
    assert_link(&dir.join("data"));
    for stray in strays(&fixture.facts) {
        if stray.path.starts_with(&format!("{data_uri}/")) {
            assert!(
                Path::new(&stray.path).exists(),
                "deleted behind data/: {}",
                stray.path
            );
        }
    }
    let r = run_on(
        &runtime(now, None),
        &local_table(&dir, &[]),
        options(None, false),
        true,
    )
    .await
    .expect("EXPLAIN");
    let items = explain_items(&r);
    assert!(
        items.contains(&("link".into(), data_uri.clone(), "symlink".into())),
        "{items:?}"
    );
    assert!(
        items
            .iter()
            .all(|(_, path, _)| !path.starts_with(&format!("{data_uri}/"))),
        "{items:?}"
    );
    // location = 'data/' names the link: nothing listed, nothing deleted, no error.
    let mut opts = options(None, false);
    opts.location = Some("data/".into());
    let r = run_local(&dir, now, opts)
        .await
        .expect("location = 'data/'");
    assert_eq!(metrics(&r), Default::default());
    assert!(other.exists());
    assert_table_files_exist(&fixture.facts);
}

#[tokio::test]
async fn a_symlink_loop_and_a_non_utf8_name_are_skipped_not_fatal() {
    use std::os::unix::ffi::OsStrExt;
    let now = now_ms();
    let fixture = make_fixture("py_v2_linear", now, true);
    let dir = fixture.table_dir();
    // A link to itself and a link back up: object_store's walk fails on both.
    std::os::unix::fs::symlink(dir.join("data/loop"), dir.join("data/loop")).expect("loop");
    std::os::unix::fs::symlink(dir.join("data"), dir.join("data/up")).expect("cycle");
    let r = run_local(&dir, now, options(None, false))
        .await
        .expect("remove_orphan_files with link loops");
    assert_eq!(metrics(&r), expected_old(&fixture.facts, |_| true));
    for stray in strays(&fixture.facts).iter().filter(|s| s.kind == "old") {
        assert!(
            !Path::new(&stray.path).exists(),
            "orphan kept: {}",
            stray.path
        );
    }
    // A file whose name is not UTF-8 beside an old orphan: the orphan goes, the odd file stays.
    let odd = dir
        .join("data")
        .join(std::ffi::OsStr::from_bytes(b"odd-\xff.parquet"));
    std::fs::write(&odd, b"x").expect("odd name");
    set_mtime(&odd, now - 10 * DAY_MS);
    let beside = write_stray(&dir, "data/beside-odd.parquet", now - 10 * DAY_MS);
    let odd_uri = format!("{}/data/odd-\\xff.parquet", dir.display());
    let r = run_on(
        &runtime(now, None),
        &local_table(&dir, &[]),
        options(None, false),
        true,
    )
    .await
    .expect("EXPLAIN with a loop and an odd name");
    let items = explain_items(&r);
    for rel in ["data/loop", "data/up"] {
        let uri = format!("{}/{rel}", dir.display());
        assert!(
            items.contains(&("link".into(), uri, "symlink".into())),
            "{items:?}"
        );
    }
    assert!(
        items.contains(&("skipped".into(), odd_uri.clone(), "not_utf8_name".into())),
        "{items:?}"
    );
    let r = run_local(&dir, now, options(None, false))
        .await
        .expect("remove_orphan_files with an odd name");
    assert_eq!(metrics(&r).deleted_data_files_count, 1);
    assert!(!beside.exists(), "the orphan beside the odd name was kept");
    assert!(
        r.warnings.iter().any(|w| w.contains(&odd_uri)),
        "{:?}",
        r.warnings
    );
    assert!(odd.exists(), "the odd name was deleted");
    assert_link(&dir.join("data/loop"));
    assert_link(&dir.join("data/up"));
    assert_table_files_exist(&fixture.facts);
}

// ---- Metadata files newer than the plan, two tables in one metadata/ ----

/// `(version, file name)` of the versioned metadata files of the table in `dir`, by version.
fn versioned_metadata(dir: &Path) -> Vec<(u64, String)> {
    let mut out: Vec<(u64, String)> = std::fs::read_dir(dir.join("metadata"))
        .expect("metadata folder")
        .filter_map(|e| {
            let name = e.expect("entry").file_name().to_string_lossy().into_owned();
            let v = icetrim::internals::iceberg::locate::parse_file_name(&name)?.version?;
            Some((v, name))
        })
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn a_higher_version_metadata_file_is_never_deleted_when_planning_by_last_updated_ms() {
    let now = now_ms();
    let fixture = make_fixture("py_v2_linear", now, false);
    let dir = fixture.table_dir();
    let files = versioned_metadata(&dir);
    let (_, newest) = files.last().expect("metadata").clone();
    let (_, previous) = files[files.len() - 2].clone();
    let read = |name: &str| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(dir.join("metadata").join(name)).unwrap()).unwrap()
    };
    // The real newest commit carries a lower last-updated-ms than its predecessor (another
    // writer's clock, or a forked history): selection by last-updated-ms plans on the older.
    let mut doc = read(&newest);
    let lower = read(&previous)["last-updated-ms"].as_i64().unwrap() - 1;
    doc["last-updated-ms"] = serde_json::json!(lower);
    let path = dir.join("metadata").join(&newest);
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    set_mtime(&path, now - 10 * DAY_MS);
    let before: Vec<String> = table_files(&fixture.facts);
    let table = local_table(
        &dir,
        &[("iceberg_recent_metadata_file_by_last_updated_ms_field", "1")],
    );
    let outcome = run_on(&runtime(now, None), &table, options(None, false), false).await;
    assert!(
        path.exists(),
        "the newest metadata file was deleted: {outcome:?}"
    );
    let lost: Vec<&String> = before.iter().filter(|f| !Path::new(f).exists()).collect();
    assert!(lost.is_empty(), "files of the newest commit lost: {lost:?}");
    let e = outcome.expect_err("a newer metadata file than the plan's refuses");
    assert!(e.message().contains(&newest), "{e}");
}

/// Writes a second pyiceberg table (its own `table-uuid`, one append) at the location `dir`.
fn second_pyiceberg_table_at(dir: &Path) {
    let script = r#"
import sys, tempfile
import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField
location = "file://" + sys.argv[1]
catalog = SqlCatalog("other", uri="sqlite:///:memory:", warehouse=location)
catalog.create_namespace("o")
t = catalog.create_table("o.t", schema=Schema(NestedField(1, "id", LongType(), required=False)), location=location)
t.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
print(t.metadata.table_uuid)
"#;
    let output = std::process::Command::new(fixtures::python())
        .args(["-c", script, dir.to_str().unwrap()])
        .output()
        .expect("run python");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test]
async fn two_table_uuids_in_one_metadata_folder_refuse_every_procedure_unless_one_is_chosen() {
    use icetrim::internals::engine::run_procedure;
    use icetrim::internals::plan::{ExpireOptions, ProcedureCall};
    let now = now_ms();
    let fixture = make_fixture("py_v2_linear", now, false);
    let dir = fixture.table_dir();
    let ours = oracle_inspect(&fixture.metadata_path());
    second_pyiceberg_table_at(&dir);
    let our_uuid = serde_json::from_slice::<serde_json::Value>(
        &std::fs::read(fixture.metadata_path()).unwrap(),
    )
    .unwrap()["table-uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let rt = runtime(now + DAY_MS, None);
    let expire = ProcedureCall::Expire(ExpireOptions {
        retain_last: Some(1),
        retention_period_ms: Some(0),
        ..Default::default()
    });
    let settings = icetrim::Settings::new();
    let everything = |dir: &Path| -> std::collections::BTreeSet<String> {
        let mut out = std::collections::BTreeSet::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    out.insert(p.to_string_lossy().into_owned());
                }
            }
        }
        out
    };
    let files_before = everything(&dir);
    let plain = local_table(&dir, &[]);
    for (call, explain) in [
        (ProcedureCall::Orphans(options(None, false)), false),
        (ProcedureCall::Orphans(options(None, true)), false),
        (ProcedureCall::Orphans(options(None, false)), true),
        (expire.clone(), false),
        (expire.clone(), true),
    ] {
        let e = run_procedure(&rt, &settings, &plain, call, explain)
            .await
            .expect_err("two tables in one metadata folder refuse");
        let message = e.message();
        assert!(
            message.contains(&our_uuid) && message.contains("iceberg_metadata_table_uuid"),
            "{message}"
        );
        assert_eq!(everything(&dir), files_before, "nothing changed");
    }
    // With the table chosen, both procedures run on it.
    let chosen = local_table(&dir, &[("iceberg_metadata_table_uuid", our_uuid.as_str())]);
    run_procedure(&rt, &settings, &chosen, expire, false)
        .await
        .expect("expiry on the chosen table");
    let after = oracle_inspect(&std::path::PathBuf::from(
        icetrim::internals::iceberg::locate::locate(
            &icetrim::internals::io::FileIO::local(),
            dir.to_str().unwrap(),
            &icetrim::internals::iceberg::locate::MetadataSettings {
                table_uuid: Some(our_uuid.clone()),
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .path,
    ));
    assert_eq!(after["rows_main"], ours["rows_main"]);
    assert_eq!(after["missing"], serde_json::json!([]));
}
