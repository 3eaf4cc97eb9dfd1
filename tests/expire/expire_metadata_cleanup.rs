//! Metadata that nothing uses: `expire_snapshots(clean_expired_metadata = 1)`
//! removes the schemas and partition specs no retained snapshot uses, and path-table commits honour
//! `write.metadata.delete-after-commit.enabled` / `write.metadata.previous-versions-max` as Java's
//! `deleteRemovedMetadataFiles` does (each "never" of `src/maintain/old_metadata.rs` tested).

use std::path::Path;
use std::sync::Arc;

use icetrim::internals::io::{Fault, FaultInjector, FaultyStore, FileIO};
use icetrim::internals::plan::{ExpireOptions, RewriteManifestsOptions};
use object_store::local::LocalFileSystem;
use serde_json::Value;

use crate::rewrite_manifests::{build, build_with, ch_rows, pyread, rewrite, rewrite_with};
use crate::rewrite_manifests_faults::reset;
use crate::support::copy_dir;
use crate::support::expire::{current_metadata, expire_at};
use crate::support::fixtures;

fn metadata_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn ids(doc: &Value, member: &str, key: &str) -> Vec<i64> {
    doc[member]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o[key].as_i64().unwrap())
        .collect()
}

fn cleaning(dry_run: bool) -> ExpireOptions {
    ExpireOptions {
        retain_last: Some(1),
        retention_period_ms: Some(0),
        clean_expired_metadata: true,
        dry_run,
        ..Default::default()
    }
}

fn rows(r: &icetrim::engine::QueryResult) -> Vec<(String, String)> {
    r.rows
        .iter()
        .map(|row| (row[0].to_string(), row[1].to_string()))
        .collect()
}

/// Schema 0 and spec 0 are used only by expired snapshots once the table was rewritten under the
/// new ones: `clean_expired_metadata` removes them; readers see the same rows on every ref.
#[tokio::test]
async fn clean_expired_metadata_removes_unused_schemas_and_specs() {
    let (_tmp, dir) = build_with(2, 6, &["overwrite"]);
    let before_md = metadata_json(&current_metadata(&dir).await);
    assert_eq!(ids(&before_md, "schemas", "schema-id"), [0, 1]);
    assert_eq!(ids(&before_md, "partition-specs", "spec-id"), [0, 1]);
    let before = pyread(&dir).await;
    let ch_before = ch_rows(&dir);

    // EXPLAIN and the dry run say what the run does, and change nothing.
    let plan = expire_at(&dir, fixtures::now_ms(), cleaning(false), true, None)
        .await
        .unwrap();
    let removals: Vec<String> = plan
        .rows
        .iter()
        .filter(|r| r[2].to_string() == "remove")
        .map(|r| format!("{} {}", r[0], r[1]))
        .collect();
    assert_eq!(removals, ["schema 0", "partition_spec 0"]);
    let dry = expire_at(&dir, fixtures::now_ms(), cleaning(true), false, None)
        .await
        .unwrap();
    assert_eq!(metadata_json(&current_metadata(&dir).await), before_md);

    let run = expire_at(&dir, fixtures::now_ms(), cleaning(false), false, None)
        .await
        .unwrap();
    let names: Vec<String> = rows(&run).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names.len(), 9);
    assert_eq!(
        names[7..],
        ["removed_schemas_count", "removed_partition_specs_count"]
    );
    assert_eq!(rows(&run)[7..], rows(&dry)[7..]);
    assert_eq!(rows(&run)[7].1, "1");
    assert_eq!(rows(&run)[8].1, "1");
    let after_md = metadata_json(&current_metadata(&dir).await);
    assert_eq!(ids(&after_md, "schemas", "schema-id"), [1]);
    assert_eq!(ids(&after_md, "partition-specs", "spec-id"), [1]);
    assert_eq!(after_md["current-schema-id"], 1);
    assert_eq!(after_md["default-spec-id"], 1);
    let after = pyread(&dir).await;
    assert_eq!(before["refs"], after["refs"]);
    assert_eq!(ch_before, ch_rows(&dir));

    // Again: nothing left to remove, still nine rows; without the option, seven.
    let again = expire_at(&dir, fixtures::now_ms(), cleaning(false), false, None)
        .await
        .unwrap();
    assert_eq!(
        rows(&again)[7..],
        [
            ("removed_schemas_count".to_string(), "0".to_string()),
            ("removed_partition_specs_count".to_string(), "0".to_string())
        ]
    );
    let plain = ExpireOptions::default();
    assert_eq!(
        expire_at(&dir, fixtures::now_ms(), plain, false, None)
            .await
            .unwrap()
            .rows
            .len(),
        7
    );
}

/// `SYSTEM MAINTAIN` cleans unused schemas and specs with its expiry only when the policy says
/// so (`icetrim.maintain.expire.clean-expired-metadata`, off by default as in Java); EXPLAIN
/// shows the knob and its source, and the cleanup alone makes expiry due.
#[tokio::test]
async fn system_maintain_cleans_unused_metadata_when_its_policy_says() {
    use crate::support::catalog::{rows, run, session};
    let (_tmp, dir) = build_with(2, 6, &["overwrite"]);
    let mut s = session();
    let create = format!("CREATE TABLE t ENGINE = IcebergLocal('{}')", dir.display());
    run(&mut s, &create).await;
    // Retention: every snapshot but the current one may go (the session's defaults).
    run(&mut s, "SET iceberg_expire_default_max_snapshot_age_ms = 0").await;
    let expire_row = |rows: Vec<String>| -> Vec<String> {
        let row = rows
            .into_iter()
            .find(|r| r.contains("\texpire_snapshots\t"))
            .expect("an expiry row");
        row.split('\t').map(str::to_string).collect()
    };
    let only_expiry = "iceberg_maintain_compact_min_input_files = 1000";
    let plain = expire_row(
        rows(
            &mut s,
            &format!("EXPLAIN SYSTEM MAINTAIN TABLE t SETTINGS {only_expiry}"),
        )
        .await,
    );
    assert!(!plain[4].contains("removed_"), "{plain:?}");
    assert!(
        plain[5].ends_with("iceberg_maintain_expire_clean_expired_metadata=0 (default)"),
        "{plain:?}"
    );
    let before = pyread(&dir).await;
    let on = format!("{only_expiry}, iceberg_maintain_expire_clean_expired_metadata = 1");
    let explained = expire_row(
        rows(
            &mut s,
            &format!("EXPLAIN SYSTEM MAINTAIN TABLE t SETTINGS {on}"),
        )
        .await,
    );
    assert!(
        explained[4].ends_with("removed_schemas_count=1, removed_partition_specs_count=1"),
        "{explained:?}"
    );
    let done = expire_row(rows(&mut s, &format!("SYSTEM MAINTAIN TABLE t SETTINGS {on}")).await);
    assert_eq!(done[3], "ok", "{done:?}");
    let after_md = metadata_json(&current_metadata(&dir).await);
    assert_eq!(ids(&after_md, "schemas", "schema-id"), [1]);
    assert_eq!(ids(&after_md, "partition-specs", "spec-id"), [1]);
    assert_eq!(pyread(&dir).await["refs"], before["refs"]);
    // Nothing left to clean or expire: not due.
    let again = expire_row(rows(&mut s, &format!("SYSTEM MAINTAIN TABLE t SETTINGS {on}")).await);
    assert_eq!(again[3], "not due", "{again:?}");
}

/// A retained snapshot without `schema-id` could have been written with any schema: every schema
/// stays (specs are still cleaned). The current schema and default spec always stay.
#[tokio::test]
async fn a_snapshot_without_schema_id_keeps_every_schema() {
    let (_tmp, dir) = build_with(2, 6, &["overwrite"]);
    let path = current_metadata(&dir).await;
    let mut doc = metadata_json(&path);
    let current = doc["current-snapshot-id"].clone();
    for s in doc["snapshots"].as_array_mut().unwrap() {
        if s["snapshot-id"] == current {
            s.as_object_mut().unwrap().remove("schema-id");
        }
    }
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    let run = expire_at(&dir, fixtures::now_ms(), cleaning(false), false, None)
        .await
        .unwrap();
    assert_eq!(rows(&run)[7].1, "0", "{:?}", rows(&run));
    assert_eq!(rows(&run)[8].1, "1");
    let after = metadata_json(&current_metadata(&dir).await);
    assert_eq!(ids(&after, "schemas", "schema-id"), [0, 1]);
}

/// `write.metadata.delete-after-commit.enabled`: a confirmed commit deletes
/// exactly the metadata files that left `metadata-log`, never the current or a journaled one.
#[tokio::test]
async fn delete_after_commit_removes_exactly_what_left_the_log() {
    let (_tmp, dir) = build(2, 6);
    let newest = current_metadata(&dir).await;
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&newest).unwrap()).unwrap();
    doc["properties"]["write.metadata.delete-after-commit.enabled"] = "true".into();
    doc["properties"]["write.metadata.previous-versions-max"] = "2".into();
    std::fs::write(&newest, serde_json::to_vec(&doc).unwrap()).unwrap();
    let logged: Vec<String> = doc["metadata-log"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            e["metadata-file"]
                .as_str()
                .unwrap()
                .trim_start_matches("file://")
                .to_string()
        })
        .collect();
    assert!(logged.len() > 4);
    // A pending expiry journal names the second-oldest file: it stays.
    let journaled = logged[1].clone();
    let journal_dir = dir.join("metadata/.icetrim");
    std::fs::create_dir_all(&journal_dir).unwrap();
    let journal = serde_json::json!({"format": "icetrim-expiry-journal/1",
        "base-metadata": journaled, "expired-snapshot-ids": [1], "created-ms": 1});
    std::fs::write(journal_dir.join("expiry-x.json"), journal.to_string()).unwrap();
    rewrite(&dir).await;
    let after = current_metadata(&dir).await;
    let log_after: Vec<String> = serde_json::from_slice::<Value>(&std::fs::read(&after).unwrap())
        .unwrap()["metadata-log"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            e["metadata-file"]
                .as_str()
                .unwrap()
                .trim_start_matches("file://")
                .to_string()
        })
        .collect();
    assert_eq!(log_after.len(), 2);
    for f in &logged {
        let kept = log_after.contains(f) || *f == journaled;
        assert_eq!(Path::new(f).exists(), kept, "{f}");
    }
    assert!(
        after.exists() && newest.exists(),
        "current and base files stay"
    );
    assert_eq!(ch_rows(&dir)[0][0], "14");
    // Without the property nothing is deleted.
    let (_tmp2, dir2) = build(2, 6);
    let before = std::fs::read_dir(dir2.join("metadata")).unwrap().count();
    rewrite(&dir2).await;
    let count = std::fs::read_dir(dir2.join("metadata")).unwrap().count();
    assert!(count > before, "nothing deleted without the property");
}

/// The table of [`delete_after_commit_removes_exactly_what_left_the_log`] with the property set:
/// returns the files its `metadata-log` names (local paths).
async fn with_delete_after_commit(dir: &Path) -> Vec<String> {
    let newest = current_metadata(dir).await;
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&newest).unwrap()).unwrap();
    doc["properties"]["write.metadata.delete-after-commit.enabled"] = "true".into();
    doc["properties"]["write.metadata.previous-versions-max"] = "1".into();
    std::fs::write(&newest, serde_json::to_vec(&doc).unwrap()).unwrap();
    doc["metadata-log"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let f = e["metadata-file"].as_str().unwrap();
            f.trim_start_matches("file://").to_string()
        })
        .collect()
}

/// Never on an unknown outcome: a commit whose write fails or whose answer is lost (the file may
/// be there) deletes no metadata file; never a metadata file the log does not name (no listing).
#[tokio::test]
async fn delete_after_commit_never_on_an_unknown_outcome_nor_by_listing() {
    let (_tmp, dir) = build(2, 6);
    let logged = with_delete_after_commit(&dir).await;
    let stray = dir.join("metadata/v0-stray.metadata.json");
    std::fs::write(&stray, b"{}").unwrap();
    let backup = dir.with_file_name("backup");
    copy_dir(&dir, &backup);
    let mut failed_commits = 0;
    for k in 0..12u64 {
        reset(&dir, &backup);
        let injector = FaultInjector::new();
        injector.fail_after(k, Fault::CrashAfterApplying);
        let store = FaultyStore::new(Arc::new(LocalFileSystem::new()), Arc::clone(&injector));
        let io = FileIO::from_store("/", Arc::new(store)).unwrap();
        let result = rewrite_with(&dir, RewriteManifestsOptions::default(), false, Some(io)).await;
        if result.is_err() {
            failed_commits += 1;
            for f in &logged {
                assert!(
                    Path::new(f).exists(),
                    "k={k}: {f} deleted on an unknown outcome"
                );
            }
        }
        assert!(
            stray.exists(),
            "k={k}: a file the log does not name is never deleted"
        );
    }
    assert!(
        failed_commits > 3,
        "the faults hit the writes and the commit"
    );
    // A healthy run deletes what left the log, and still not the stray.
    reset(&dir, &backup);
    rewrite(&dir).await;
    assert!(logged.iter().all(|f| !Path::new(f).exists()));
    assert!(stray.exists());
}
