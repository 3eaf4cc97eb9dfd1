//! Catalog tables in tests (REST and Glue alike): a session and its rows, a catalog database
//! defined as `CREATE DATABASE … ENGINE = DataLakeCatalog(…)` registers it (with the S3
//! emulator's storage settings), one of its tables opened for maintenance, and the ref and
//! property edit the `commit_edit` tests send through either catalog.
#![allow(dead_code)]

use icetrim::engine::{Engine, QueryResult, Session};
use icetrim::format::OutputFormat;
use icetrim::internals::engine::{DatabaseDef, Runtime, open_catalog_table};
use icetrim::internals::iceberg::metadata::TableMetadata;
use icetrim::internals::iceberg::spec::{RefKind, SnapshotRef};
use icetrim::internals::maintain::target::MaintenanceTarget;

use crate::support::emulator_var;

/// A session in UTC on a fresh in-memory engine.
pub fn session() -> Session {
    Engine::builder()
        .setting("session_timezone", "UTC")
        .build()
        .expect("engine")
        .session()
}

/// Run `sql`, expecting success: the last result.
pub async fn run(session: &mut Session, sql: &str) -> QueryResult {
    session
        .execute(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .pop()
        .expect("a result")
}

/// The last result's rows of `sql` as TabSeparated lines, and its warnings.
pub async fn warnings(session: &mut Session, sql: &str) -> (Vec<String>, Vec<String>) {
    let last = run(session, sql).await;
    let lines = OutputFormat::TabSeparated
        .render(&last.columns, &last.rows, 0.0)
        .lines()
        .map(str::to_string)
        .collect();
    (lines, last.warnings)
}

/// The last result's rows of `sql` as TabSeparated lines.
pub async fn rows(session: &mut Session, sql: &str) -> Vec<String> {
    warnings(session, sql).await.0
}

/// The value of metric `name` in a procedure's rows.
pub fn metric(rows: &[String], name: &str) -> i64 {
    rows.iter()
        .find_map(|r| r.strip_prefix(&format!("{name}\t")))
        .unwrap_or_else(|| panic!("no {name} in {rows:?}"))
        .parse()
        .expect("a count")
}

/// The catalog database `name` at `endpoint` with `settings` (`catalog_type` and what that
/// catalog needs) and the S3 emulator's storage settings, as `CREATE DATABASE` registers it.
pub fn catalog_database(name: &str, endpoint: &str, settings: &[(&str, &str)]) -> DatabaseDef {
    let storage = emulator_var("ICETRIM_S3_ENDPOINT");
    let storage_settings = [
        ("storage_endpoint", storage.as_str()),
        ("aws_access_key_id", "testing"),
        ("aws_secret_access_key", "testing"),
        ("region", "us-east-1"),
    ];
    DatabaseDef {
        name: name.into(),
        engine: "DataLakeCatalog".into(),
        args: vec![endpoint.to_string()],
        settings: settings
            .iter()
            .chain(&storage_settings)
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        setting_order: Vec::new(),
    }
}

/// The table `table` (`namespace.table`) of the catalog database `def`, loaded for maintenance on
/// `runtime` with `settings`.
pub async fn open_target(
    runtime: &Runtime,
    settings: &icetrim::Settings,
    def: &DatabaseDef,
    table: &str,
) -> MaintenanceTarget {
    open_catalog_table(runtime, settings, def, table)
        .await
        .unwrap_or_else(|e| panic!("open the catalog table {table}: {e}"))
}

/// The `commit_edit` change the catalog tests send: tag `audit_tag` on `tag_snapshot` (a day's
/// max ref age), branch `dev` at the current snapshot (keeping 3), property `icetrim.test = yes`.
pub fn tag_branch_and_property(
    m: &TableMetadata,
    tag_snapshot: i64,
) -> icetrim::Result<Option<TableMetadata>> {
    let mut next = m.clone();
    let head = m.current_snapshot_id().expect("a current snapshot");
    next.set_ref(&SnapshotRef {
        name: "audit_tag".into(),
        kind: RefKind::Tag,
        snapshot_id: tag_snapshot,
        min_snapshots_to_keep: None,
        max_snapshot_age_ms: None,
        max_ref_age_ms: Some(86_400_000),
    })?;
    next.set_ref(&SnapshotRef {
        name: "dev".into(),
        kind: RefKind::Branch,
        snapshot_id: head,
        min_snapshots_to_keep: Some(3),
        max_snapshot_age_ms: None,
        max_ref_age_ms: None,
    })?;
    next.set_property("icetrim.test", "yes")?;
    Ok(Some(next))
}

/// The second `commit_edit` of those tests: the property and the tag removed again.
pub fn untag_and_unset(m: &TableMetadata) -> icetrim::Result<Option<TableMetadata>> {
    let mut next = m.clone();
    next.remove_property("icetrim.test")?;
    next.remove_refs(&["audit_tag"])?;
    Ok(Some(next))
}
