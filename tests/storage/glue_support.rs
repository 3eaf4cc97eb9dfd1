//! Helpers of the Glue catalog tests (`catalog_glue`, `catalog_glue_failures`): a pyiceberg-built
//! table in a fresh Glue database on moto (`tests/py/glue_fixture.py`), the Glue proxy
//! (`tests/py/glue_proxy.py`), and session shorthands.

use std::path::PathBuf;

use futures::TryStreamExt;
use icetrim::engine::Session;
use icetrim::internals::io::FileIO;
use serde_json::Value;

pub use crate::support::catalog::{metric, rows, session, warnings};
use crate::support::fixtures::{self, run_python_json};
use crate::support::{emulator_var, s3_emulator_options, unique};

pub const SECRET: &str = "testing-secret-never-shown";

pub fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/py")
        .join(name)
}

pub fn moto() -> String {
    emulator_var("ICETRIM_S3_ENDPOINT")
}

/// A pyiceberg-built table in a fresh Glue database on moto.
pub struct GlueFixture {
    pub database: String,
    pub table: String,
    pub location: String,
    pub facts: Value,
}

impl GlueFixture {
    pub fn build() -> GlueFixture {
        let database = unique("gdb").replace('-', "_");
        let table = "events".to_string();
        let prefix = unique("glue");
        let endpoint = moto();
        let bucket = emulator_var("ICETRIM_S3_BUCKET");
        let now = fixtures::now_ms().to_string();
        let facts = run_python_json(
            &script("glue_fixture.py"),
            &[
                "build", &endpoint, &endpoint, &bucket, &prefix, &database, &table, &now,
            ],
        );
        let location = facts["location"].as_str().expect("location").to_string();
        GlueFixture {
            database,
            table,
            location,
            facts,
        }
    }

    /// `` glue.`<database>.events` ``.
    pub fn sql_name(&self) -> String {
        format!("glue.`{}.{}`", self.database, self.table)
    }

    /// pyiceberg's `GlueCatalog` (straight on moto) reading every ref.
    pub fn read(&self) -> Value {
        let endpoint = moto();
        run_python_json(
            &script("glue_fixture.py"),
            &["read", &endpoint, &endpoint, &self.database, &self.table],
        )
    }

    /// ClickHouse (chdb) reading every ref through its own Glue `DataLakeCatalog` database.
    pub fn clickhouse(&self) -> Value {
        let endpoint = moto();
        run_python_json(
            &script("glue_fixture.py"),
            &[
                "clickhouse",
                &endpoint,
                &endpoint,
                &self.database,
                &self.table,
            ],
        )
    }

    pub fn snapshot(&self, label: &str) -> i64 {
        self.facts["snapshots_by_label"][label]
            .as_i64()
            .unwrap_or_else(|| panic!("no snapshot {label}"))
    }

    /// Every object under the table location (relative names), sorted.
    pub async fn files(&self) -> Vec<String> {
        let io = FileIO::new(s3_emulator_options());
        let mut names: Vec<String> = io
            .list(&self.location)
            .map_ok(|f| f.uri)
            .try_collect::<Vec<_>>()
            .await
            .expect("list the table")
            .into_iter()
            .map(|uri| {
                uri.strip_prefix(&format!("{}/", self.location))
                    .unwrap_or(&uri)
                    .to_string()
            })
            .collect();
        names.sort();
        names
    }
}

/// `CREATE DATABASE glue` on `endpoint` (moto, or a proxy in front of it) with `key` as access key.
pub fn create_database(endpoint: &str, key: &str) -> String {
    format!(
        "CREATE DATABASE glue ENGINE = DataLakeCatalog('{endpoint}') SETTINGS catalog_type = \
         'glue', region = 'us-east-1', aws_access_key_id = '{key}', aws_secret_access_key = \
         '{SECRET}', storage_endpoint = '{}'",
        moto()
    )
}

pub use crate::support::glue_catalog::Proxy;

pub const EXPIRE: &str = "EXECUTE expire_snapshots(retention_period = '5d')";

/// Every ref the fixture built still has its rows.
pub fn same_rows(before: &Value, after: &Value) {
    for name in ["main", "audit", "t_a2"] {
        assert_eq!(
            before["rows"][name], after["rows"][name],
            "ref {name} changed"
        );
    }
}

/// A fresh fixture, `tests/py/glue_proxy.py` in front of moto's Glue in `mode`, and a session
/// whose database `glue` reaches Glue through the proxy.
pub async fn behind_proxy(mode: Value) -> (GlueFixture, Proxy, Session) {
    let fx = GlueFixture::build();
    let proxy = Proxy::start();
    proxy.mode(mode).await;
    let mut s = session();
    rows(&mut s, &create_database(&proxy.url, "testing")).await;
    (fx, proxy, s)
}

/// `EXPIRE` on the fixture when the commit's outcome cannot be known: the statement fails
/// (`NETWORK_ERROR`) saying the commit may or may not have landed and no file was deleted; the
/// error's message.
pub async fn expire_of_unknown_outcome(s: &mut Session, fx: &GlueFixture) -> String {
    let e = error_of(s, &format!("ALTER TABLE {} {EXPIRE}", fx.sql_name())).await;
    assert_eq!(e.code(), 210, "NETWORK_ERROR: {e}");
    let m = e.message().to_string();
    assert!(m.contains("unknown outcome"), "{m}");
    assert!(m.contains("the commit may or may not have landed"), "{m}");
    assert!(m.contains("no file was deleted"), "{m}");
    m
}

pub async fn error_of(session: &mut Session, sql: &str) -> icetrim::error::Error {
    match session.execute(sql).await {
        Ok(r) => panic!("{sql} succeeded: {:?}", r.last().map(|r| &r.rows)),
        Err(e) => e,
    }
}
