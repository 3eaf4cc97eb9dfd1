//! A REST catalog over a local warehouse (`file://` tables, pyiceberg's SqlCatalog behind the
//! test REST catalog): served when the database names the allowed root, `SETTINGS
//! storage_local_root = '/abs/path'`; refused without it (the message names the setting) and for
//! a table outside it. Expiry, orphan removal and compaction commit through the catalog, and
//! pyiceberg reads the table after each (every referenced file present, the rows unchanged).

use std::path::Path;

use crate::support::catalog::{metric, rows, run, session};
use crate::support::fixtures::{self, Fixture};
use crate::support::{relocate, rest_catalog, unique};

/// A pyiceberg table on local disk registered as `ns.t` in a fresh warehouse of the REST catalog.
async fn local_catalog_table(scenario: &str) -> (Fixture, String) {
    let fixture = fixtures::make_fixture(scenario, fixtures::now_ms(), false);
    let warehouse = unique("localfiles");
    rest_catalog::warehouse(&warehouse, serde_json::json!({})).await;
    let metadata = format!("file://{}", fixture.metadata_path().display());
    rest_catalog::register(&warehouse, &["ns"], "t", &metadata).await;
    (fixture, warehouse)
}

fn create_database(warehouse: &str, extra: &str) -> String {
    format!(
        "CREATE DATABASE lake ENGINE = DataLakeCatalog('{}/v1') SETTINGS catalog_type = 'rest', \
         warehouse = '{warehouse}'{extra}",
        rest_catalog::uri()
    )
}

/// The metadata file the catalog names now (its load answer), read by pyiceberg
/// (`tests/py/oracle.py`): no referenced file is missing.
async fn pyiceberg_reads(warehouse: &str) -> serde_json::Value {
    let url = format!(
        "{}/v1/{warehouse}/namespaces/ns/tables/t",
        rest_catalog::uri()
    );
    let text = reqwest::get(&url)
        .await
        .expect("the catalog answers")
        .text()
        .await
        .expect("a load answer");
    let answer: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let location = answer["metadata-location"]
        .as_str()
        .expect("a metadata location");
    let report = fixtures::oracle_inspect(Path::new(location.trim_start_matches("file://")));
    let missing = report["missing"].as_array().map_or(usize::MAX, Vec::len);
    assert_eq!(missing, 0, "files missing: {report}");
    report
}

#[tokio::test]
async fn a_local_warehouse_is_maintained_through_the_catalog_under_its_root() {
    let (fixture, warehouse) = local_catalog_table("py_v2_linear").await;
    let root = fixture.table_dir();
    let root = root.parent().expect("the fixture folder");
    let mut s = session();

    // Without the setting: refused, and the message names it.
    run(&mut s, &create_database(&warehouse, "")).await;
    let refused = s
        .execute("ALTER TABLE lake.`ns.t` EXECUTE expire_snapshots(dry_run = 1)")
        .await
        .expect_err("a local table without storage_local_root");
    assert!(
        refused
            .message()
            .contains("Add SETTINGS storage_local_root = '/abs/path'"),
        "{refused}"
    );
    run(&mut s, "DROP DATABASE lake").await;

    let extra = format!(", storage_local_root = '{}'", root.display());
    run(&mut s, &create_database(&warehouse, &extra)).await;
    let before = pyiceberg_reads(&warehouse).await;

    let expired = rows(
        &mut s,
        "ALTER TABLE lake.`ns.t` EXECUTE expire_snapshots(retention_period = '0s', retain_last = 1)",
    )
    .await;
    assert!(
        metric(&expired, "deleted_manifest_lists_count") > 0,
        "{expired:?}"
    );
    pyiceberg_reads(&warehouse).await;

    let stray = fixture.table_dir().join("data/stray.parquet");
    std::fs::write(&stray, b"not a table file").expect("a stray file");
    relocate::set_mtime(&stray, fixtures::now_ms() - 3 * 86_400_000);
    let removed = rows(
        &mut s,
        "ALTER TABLE lake.`ns.t` EXECUTE remove_orphan_files(older_than = '2000-01-01 00:00:00')",
    )
    .await;
    assert_eq!(
        metric(&removed, "deleted_data_files_count"),
        0,
        "{removed:?}"
    );
    let now = chrono::Utc::now().format("%Y-%m-%d %H:%M:%S").to_string();
    let removed = rows(
        &mut s,
        &format!("ALTER TABLE lake.`ns.t` EXECUTE remove_orphan_files(older_than = '{now}')"),
    )
    .await;
    assert_eq!(
        metric(&removed, "deleted_data_files_count"),
        1,
        "{removed:?}"
    );
    assert!(!stray.exists());

    let compacted = rows(
        &mut s,
        "ALTER TABLE lake.`ns.t` EXECUTE rewrite_data_files(rewrite_all = 1)",
    )
    .await;
    assert!(
        metric(&compacted, "rewritten_data_files_count") > 1,
        "{compacted:?}"
    );
    let after = pyiceberg_reads(&warehouse).await;
    assert!(
        before["rows_main"].as_i64().is_some_and(|n| n > 0),
        "{before}"
    );
    assert_eq!(
        before["rows_main"], after["rows_main"],
        "{before} / {after}"
    );
}

#[tokio::test]
async fn a_table_outside_the_root_is_refused() {
    let (fixture, warehouse) = local_catalog_table("py_v2_linear").await;
    let elsewhere = tempfile::tempdir().expect("another folder");
    let mut s = session();
    let extra = format!(", storage_local_root = '{}'", elsewhere.path().display());
    run(&mut s, &create_database(&warehouse, &extra)).await;
    let refused = s
        .execute("ALTER TABLE lake.`ns.t` EXECUTE expire_snapshots(dry_run = 1)")
        .await
        .expect_err("a table outside the root");
    assert!(
        refused.message().contains(&format!(
            "lies outside storage_local_root '{}'",
            elsewhere.path().display()
        )),
        "{refused}"
    );
    assert!(fixture.metadata_path().exists());
}
