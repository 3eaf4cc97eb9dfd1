//! The embedding example (`examples/embed.rs`) runs against a generated table: maintenance goes to
//! icetrim, the rest stays with the host.

#[path = "../../examples/embed.rs"]
#[allow(dead_code)]
mod embed;

use embed::Routed;
use icetrim::internals::generate::{GenerateOptions, generate};
use icetrim::internals::iceberg::spec::FormatVersion;
use icetrim::internals::io::FileIO;

#[tokio::test]
async fn host_routes_maintenance_to_icetrim() {
    let dir = tempfile::tempdir().expect("tempdir");
    let location = dir.path().join("events").display().to_string();
    let now = chrono::Utc::now().timestamp_millis();
    generate(
        &FileIO::local(),
        &GenerateOptions::new(&location, FormatVersion::V2, 8, 1, 3, now),
    )
    .await
    .expect("generate");
    let script = format!(
        "CREATE TABLE events ENGINE = IcebergLocal('{location}');\n\
         SELECT 1;\n\
         ALTER TABLE events EXECUTE expire_snapshots(retain_last = 2, retention_period = '0s', dry_run = 1);"
    );
    let routed = embed::run_script(&script).await.expect("script runs");
    assert_eq!(routed.len(), 3);
    assert_eq!(routed[0], Routed::Icetrim(String::new()));
    assert_eq!(routed[1], Routed::Host("host runs SELECT".into()));
    let Routed::Icetrim(rows) = &routed[2] else {
        panic!("maintenance went to the host: {routed:?}")
    };
    assert_eq!(rows.lines().count(), 7, "{rows}");
    assert!(
        rows.lines().last().is_some_and(|l| l == "dry_run\t1"),
        "{rows}"
    );
    assert!(rows.starts_with("deleted_data_files_count\t"), "{rows}");
    let lists = rows
        .lines()
        .find(|l| l.starts_with("deleted_manifest_lists_count"))
        .unwrap_or("");
    assert_eq!(
        lists, "deleted_manifest_lists_count\t6",
        "8 snapshots, keep 2: {rows}"
    );
}

#[tokio::test]
async fn host_reports_its_own_parse_errors() {
    let err = embed::run_script("SELEKT 1").await.unwrap_err();
    assert!(err.contains("Expected"), "{err}");
}
