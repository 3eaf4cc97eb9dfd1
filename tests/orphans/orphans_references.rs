//! `remove_orphan_files` refuses to run when it cannot be sure (gc.enabled=false, references
//! outside the table, a pinned older metadata file). What it keeps (metadata-log files, the version
//! hint, staged snapshots, statistics, delete files) is walked through in the SQL sessions
//! `tests/sessions/orphans_*.test`.

use crate::support::fixtures;
use crate::support::orphans as orphans_support;

use std::path::{Path, PathBuf};

use fixtures::{Fixture, make_fixture, now_ms};
use icetrim::ErrorKind;
use orphans_support::*;
use serde_json::{Map, Value, json};

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

/// The refusal names a relative reference as the metadata wrote it (it once printed
/// `:///../../outside/...`).
#[tokio::test]
async fn outside_refusal_prints_a_relative_reference_as_written() {
    let now = now_ms();
    let fixture = make_fixture("py_v2_linear", now, true);
    let dir = fixture.table_dir();
    edit_newest_metadata(&fixture, |json| {
        let log = json["metadata-log"].as_array_mut().expect("metadata-log");
        log.push(json!({"metadata-file": "../../outside/v0.metadata.json", "timestamp-ms": 1}));
    });
    let e = run_local(&dir, now, options(None, true)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotImplemented);
    assert!(
        e.message().contains(": ../../outside/v0.metadata.json"),
        "{}",
        e.message()
    );
    assert!(!e.message().contains(":///"), "{}", e.message());
}
