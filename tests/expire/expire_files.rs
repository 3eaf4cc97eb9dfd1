//! `expire_snapshots` end to end, what SQL sessions cannot show: EXPLAIN's rows, the refusals
//! (files outside the location, unreadable retained metadata), and how many reads a run makes.
//! Which files go (deleted and rewritten files, delete files by content, statistics, shared
//! manifest lists, dry run) is walked through in `tests/sessions/expire_*.test`.

use crate::support::expire as support;

use std::path::Path;

use icetrim::ErrorKind;
use icetrim::format::Value as Cell;
use icetrim::internals::maintain::expire::format_ts;
use icetrim::internals::plan::ExpireOptions;
use serde_json::Value;
use support::*;

fn edit_json(path: &Path, edit: impl FnOnce(&mut Value)) {
    let mut json: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    edit(&mut json);
    std::fs::write(path, serde_json::to_vec_pretty(&json).unwrap()).unwrap();
}

fn snapshot_mut(json: &mut Value, id: i64) -> &mut Value {
    json["snapshots"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|s| s["snapshot-id"].as_i64() == Some(id))
        .unwrap()
}

fn cell(row: &[Cell], i: usize) -> String {
    match &row[i] {
        Cell::Str(s) => s.clone(),
        other => format!("{other:?}"),
    }
}

#[tokio::test]
async fn explain_shows_the_decision_and_changes_nothing() {
    let fx = make_fixture("py_v2_linear", NOW, false);
    let dir = fx.table_dir();
    let before = files_on_disk(&dir);
    let r = expire_at(&dir, NOW, policy(Some(1), Some(0)), true, None)
        .await
        .unwrap();
    assert_eq!(files_on_disk(&dir), before);
    let names: Vec<&str> = r.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        ["kind", "id", "decision", "reason", "detail", "bytes"]
    );
    let rows_of = |kind: &str| -> Vec<&Vec<Cell>> {
        r.rows.iter().filter(|row| cell(row, 0) == kind).collect()
    };
    let snapshots = rows_of("snapshot");
    assert_eq!(snapshots.len(), 6);
    for row in &snapshots {
        let id: i64 = cell(row, 1).parse().unwrap();
        let label = if id == fx.snapshot_id("a6") { "a6" } else { "" };
        let expected = if label == "a6" { "keep" } else { "expire" };
        assert_eq!(cell(row, 2), expected);
        let ts = fx.facts["snapshot_ts"]
            .as_object()
            .unwrap()
            .iter()
            .find(|(l, _)| fx.snapshot_id(l) == id)
            .unwrap()
            .1
            .as_i64()
            .unwrap();
        let zone = icetrim::Settings::new().session_time_zone();
        assert!(cell(row, 4).starts_with(&zone.format_ms(ts)), "{:?}", row);
    }
    let a6 = snapshots
        .iter()
        .find(|row| cell(row, 1) == fx.snapshot_id("a6").to_string())
        .unwrap();
    assert!(cell(a6, 3).contains("current snapshot"));
    assert_eq!(rows_of("branch").len(), 1);
    let files = rows_of("file");
    assert_eq!(files.len(), 5);
    assert!(files.iter().all(|row| cell(row, 3) == "manifest_list"));
    let total = rows_of("total")
        .into_iter()
        .find(|row| cell(row, 1) == "all")
        .unwrap();
    assert_eq!(cell(total, 3), "5 file(s)");
    assert!(matches!(total[5], Cell::Int(n) if n > 0));
}

#[tokio::test]
async fn candidate_outside_the_location_refuses() {
    let fx = make_fixture("py_v2_linear", NOW, false);
    let a1 = fx.snapshot_id("a1");
    let outside = fx.dir.path().join("elsewhere/snap-a1.avro");
    std::fs::create_dir_all(outside.parent().unwrap()).unwrap();
    edit_json(&fx.metadata_path(), |json| {
        let list = snapshot_mut(json, a1)["manifest-list"]
            .as_str()
            .unwrap()
            .to_string();
        let list = list.trim_start_matches("file://");
        std::fs::copy(list, &outside).unwrap();
        snapshot_mut(json, a1)["manifest-list"] = outside.to_str().unwrap().into();
    });
    let before = files_on_disk(fx.dir.path());
    for (opts, explain) in [
        (policy(Some(1), Some(0)), false),
        (dry(policy(Some(1), Some(0))), false),
        (policy(Some(1), Some(0)), true),
    ] {
        let err = expire_at(&fx.table_dir(), NOW, opts, explain, None)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotImplemented);
        assert!(err.message().contains("elsewhere/snap-a1.avro"), "{err}");
    }
    assert_eq!(
        files_on_disk(fx.dir.path()),
        before,
        "nothing written or deleted"
    );
}

#[tokio::test]
async fn missing_expired_list_is_skipped_missing_retained_list_fails() {
    let fx = make_fixture("py_v2_linear", NOW, false);
    let dir = fx.table_dir();
    let report = inspect(&dir).await;
    let list_of = |label: &str| -> String {
        let id = fx.snapshot_id(label);
        report["snapshots"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"].as_i64() == Some(id))
            .unwrap()["manifest_list"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let a6_list = list_of("a6");
    let saved = std::fs::read(&a6_list).unwrap();
    std::fs::remove_file(&a6_list).unwrap();
    let before = files_on_disk(&dir);
    let err = expire_at(&dir, NOW, ExpireOptions::default(), false, None)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::FileDoesntExist, "{err}");
    assert_eq!(
        files_on_disk(&dir),
        before,
        "nothing written on an incomplete keep set"
    );
    std::fs::write(&a6_list, saved).unwrap();
    std::fs::remove_file(list_of("a1")).unwrap();
    let r = expire(&dir, ExpireOptions::default()).await;
    assert_eq!(counts(&r), [0, 0, 0, 0, 1, 0, 0]);
    assert!(
        r.warnings.iter().any(|w| w.contains("no longer exists")),
        "{:?}",
        r.warnings
    );
    assert!(!snapshot_ids(&inspect(&dir).await).contains(&fx.snapshot_id("a1")));
}

#[tokio::test]
async fn each_manifest_list_is_read_once() {
    // 60 fast appends: every retained list names every older manifest, so no manifest is a
    // candidate and none needs reading; each list is read once, each expired list deleted once.
    let fx = make_fixture("py_v2_many", NOW, false);
    let before = inspect(&fx.table_dir()).await;
    let counter = icetrim::internals::io::RequestCounter::new();
    let io = icetrim::internals::io::FileIO::local().with_request_counter(counter.clone());
    let started = std::time::Instant::now();
    let r = expire_at(
        &fx.table_dir(),
        NOW,
        policy(Some(10), Some(0)),
        false,
        Some(io),
    )
    .await
    .unwrap();
    let elapsed = started.elapsed();
    let requests = counter.snapshot();
    eprintln!("py_v2_many, 50 of 60 snapshots expired in {elapsed:?}: {requests}");
    assert_eq!(counts(&r), [0, 0, 0, 0, 50, 0, 0]);
    // The first bytes of the 61 metadata files (one table-uuid in metadata/), the metadata
    // file (read by locate) and 60 manifest lists.
    assert_eq!(requests.get, 61 + 61, "{requests}");
    // 50 manifest lists, then the expiry journal; the journal and the metadata file are written.
    assert_eq!(requests.deleted_keys, 51, "{requests}");
    assert_eq!(
        requests.put, 2,
        "the journal and one metadata file: {requests}"
    );
    assert_eq!(
        requests.list, 5,
        "the metadata folder (table-uuids, locate, before and after the commit) and the \
         journal folder: {requests}"
    );
    assert_whole(&before, &inspect(&fx.table_dir()).await);
}

#[tokio::test]
async fn explain_names_removed_refs_and_why() {
    let fx = make_fixture("py_v2_branches_tags", NOW, false);
    let before = files_on_disk(&fx.table_dir());
    let r = expire_at(&fx.table_dir(), NOW, ExpireOptions::default(), true, None)
        .await
        .unwrap();
    assert_eq!(files_on_disk(&fx.table_dir()), before);
    let find = |kind: &str, id: &str| {
        r.rows
            .iter()
            .find(|row| cell(row, 0) == kind && cell(row, 1) == id)
            .unwrap_or_else(|| panic!("no {kind} row {id}"))
    };
    for (kind, name) in [("branch", "stale"), ("tag", "t_short")] {
        let row = find(kind, name);
        assert_eq!(cell(row, 2), "remove");
        assert!(cell(row, 3).contains("max-ref-age-ms 86400000"), "{row:?}");
    }
    assert_eq!(cell(find("tag", "t_old"), 2), "keep");
    let m2 = find("snapshot", &fx.snapshot_id("m2").to_string());
    assert_eq!(cell(m2, 2), "keep");
    assert!(cell(m2, 3).contains("tag 't_old'"), "{m2:?}");
    let b1 = find("snapshot", &fx.snapshot_id("b1").to_string());
    assert_eq!(cell(b1, 2), "expire");
    // Each verdict names its rule, its number and where the number comes from.
    assert_eq!(
        cell(find("tag", "t_old"), 3),
        "no max-ref-age-ms limits it (default of setting iceberg_expire_default_max_ref_age_ms: \
         refs are kept forever)"
    );
    assert!(cell(find("tag", "t_short"), 3).ends_with("(ref 't_short')"));
    let b3 = find("snapshot", &fx.snapshot_id("b3").to_string());
    assert!(
        cell(b3, 3).contains("within min-snapshots-to-keep 2 of branch 'audit' (ref 'audit')"),
        "{b3:?}"
    );
    let policy = find("policy", "max-snapshot-age-ms");
    assert_eq!(cell(policy, 2), "432000000 ms (5days)");
    assert_eq!(
        cell(policy, 3),
        "default of setting iceberg_expire_default_max_snapshot_age_ms"
    );
    // The summary says what the deletes free, in the bytes column and in words.
    let all = find("total", "all");
    let Cell::Int(bytes) = all[5] else {
        panic!("no byte count: {all:?}");
    };
    assert!(bytes > 0, "{all:?}");
    assert!(cell(all, 4).starts_with("frees "), "{all:?}");
}

/// EXPLAIN's snapshot times are in the session time zone.
#[tokio::test]
async fn explain_prints_snapshot_times_in_the_session_time_zone() {
    let fx = make_fixture("py_v2_linear", NOW, false);
    let mut settings = icetrim::Settings::new();
    settings
        .set(
            "session_timezone",
            &icetrim::internals::sql::ast::Literal::String("America/New_York".into()),
        )
        .unwrap();
    let r = expire_with(
        &fx.table_dir(),
        NOW,
        policy(Some(1), Some(0)),
        true,
        None,
        &settings,
    )
    .await
    .unwrap();
    let ny = icetrim::internals::sql::SessionTimeZone::Named(chrono_tz::America::New_York);
    let a1 = fx.snapshot_id("a1");
    let row = r
        .rows
        .iter()
        .find(|row| cell(row, 0) == "snapshot" && cell(row, 1) == a1.to_string())
        .unwrap();
    let ts = fx.facts["snapshot_ts"]["a1"].as_i64().unwrap();
    assert!(cell(row, 4).starts_with(&ny.format_ms(ts)), "{row:?}");
    assert!(!cell(row, 4).starts_with(&format_ts(ts)), "{row:?}");
}

/// A refusal names a relative path as the metadata wrote it, not as its identity key
/// (it once printed `:///../..`).
#[tokio::test]
async fn outside_refusal_prints_a_relative_path_as_written() {
    let fx = make_fixture("py_v2_linear", NOW, false);
    let a1 = fx.snapshot_id("a1");
    // a1's statistics file, written relative: a candidate once a1 expires (never read).
    edit_json(&fx.metadata_path(), |json| {
        json["statistics"] = serde_json::json!([{
            "snapshot-id": a1,
            "statistics-path": "../../outside/snap-a1.puffin",
            "file-size-in-bytes": 10,
            "file-footer-size-in-bytes": 4,
            "blob-metadata": []
        }]);
    });
    let err = expire_at(&fx.table_dir(), NOW, policy(Some(1), Some(0)), false, None)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotImplemented, "{err}");
    assert!(
        err.message().contains(": ../../outside/snap-a1.puffin"),
        "{err}"
    );
    assert!(!err.message().contains(":///"), "{err}");
}
