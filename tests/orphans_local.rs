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

// ---- Symlinks and odd names (issue #15 §2, §4) ----

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
    use icetrim::io::{FileIO, RequestCounter};
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
    use icetrim::io::{FileIO, RequestCounter};
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
