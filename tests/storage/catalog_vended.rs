//! Vended storage credentials of REST catalog tables, renewed while a statement runs: on S3
//! through `tests/py/expiring_s3_proxy.py` in front of moto (it answers `ExpiredToken` for a
//! session token past its expiry, as AWS does; moto does not check), on Azure against azurite
//! (which checks SAS signatures and expiry) with SAS tokens the test REST catalog signs.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

use crate::catalog_rest::{
    RestTable, chrono_now_text, metric, rows, run, same_rows_for_kept_refs, session,
};
use crate::support::backends::{Backend, Place};
use crate::support::fixtures;
use crate::support::rest_catalog;

/// `tests/py/expiring_s3_proxy.py` in front of moto; stopped when dropped.
struct S3Proxy {
    child: Child,
    url: String,
}

impl S3Proxy {
    fn start() -> S3Proxy {
        let script =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/py/expiring_s3_proxy.py");
        let mut child = Command::new(fixtures::python())
            .arg(script)
            .arg(crate::support::emulator_var("ICETRIM_S3_ENDPOINT"))
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start expiring_s3_proxy.py");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("proxy stdout"))
            .read_line(&mut line)
            .expect("proxy port");
        let port: u16 = line.trim().parse().expect("the proxy prints its port");
        S3Proxy {
            child,
            url: format!("http://127.0.0.1:{port}"),
        }
    }

    async fn call(&self, path: &str, body: Value) -> Value {
        let answer = reqwest::Client::new()
            .post(format!("{}/__proxy__/{path}", self.url))
            .body(body.to_string())
            .send()
            .await
            .expect("proxy admin");
        serde_json::from_str(&answer.text().await.expect("proxy answer")).expect("JSON")
    }

    async fn mode(&self, mode: Value) {
        self.call("mode", mode).await;
    }

    async fn stats(&self) -> Value {
        self.call("stats", json!({})).await
    }
}

impl Drop for S3Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `CREATE DATABASE <db>` on `warehouse` with no storage settings at all: only vended
/// credentials reach storage.
fn create_vended(db: &str, warehouse: &str) -> String {
    format!(
        "CREATE DATABASE {db} ENGINE = DataLakeCatalog('{}/v1') SETTINGS catalog_type = 'rest', \
         warehouse = '{warehouse}'",
        rest_catalog::uri()
    )
}

/// The catalog requests of `warehouse` since log entry `from`: (credentials refreshes, loads).
async fn catalog_calls(warehouse: &str, from: usize) -> (usize, usize) {
    let log = rest_catalog::log().await;
    let ours: Vec<&str> = log[from..]
        .iter()
        .filter_map(|e| e["path"].as_str())
        .filter(|p| p.contains(&format!("/{warehouse}/")))
        .collect();
    let refreshes = ours.iter().filter(|p| p.ends_with("/credentials")).count();
    let loads = ours.iter().filter(|p| p.ends_with("/tables/t")).count();
    (refreshes, loads)
}

const EXPIRE: &str = "EXECUTE expire_snapshots(retention_period = '0s', retain_last = 1)";

/// The metric rows without `dry_run`.
/// Creates database `vended` (credentials vended for an hour, through `proxy`) and returns how
/// long a dry-run expiry through it takes, in ms (at least 400).
async fn dry_run_ms(s: &mut icetrim::engine::Session, table: &RestTable, proxy: &S3Proxy) -> u64 {
    rest_catalog::warehouse(
        table.warehouse(),
        json!({"vend": true, "lifetime_ms": 3_600_000, "s3_endpoint": proxy.url}),
    )
    .await;
    run(s, &create_vended("vended", table.warehouse())).await;
    let started = std::time::Instant::now();
    let sql = format!(
        "ALTER TABLE vended.`ns.t` {}",
        EXPIRE.replace(')', ", dry_run = 1)")
    );
    rows(s, &sql).await;
    let took = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    took.max(400)
}

fn counts(rows: &[String]) -> Vec<String> {
    rows.iter()
        .filter(|r| !r.starts_with("dry_run\t"))
        .cloned()
        .collect()
}

/// Session tokens that really expire mid-statement while the catalog advertises an hour: storage
/// refuses them in the middle of the statement, icetrim fetches new ones and retries, and the
/// statement deletes exactly what the plan (made with the database's own keys) said.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_credentials_that_expire_mid_statement_are_renewed_and_the_statement_completes() {
    let table = RestTable::new("py_v2_branches_tags").await;
    let before = table.read(None);
    let proxy = S3Proxy::start();
    proxy.mode(json!({"delay_ms": 60})).await;
    let mut s = session();
    run(&mut s, &table.create("vended_credentials = 0")).await;
    let planned = rows(
        &mut s,
        &format!(
            "ALTER TABLE lake.`ns.t` {}",
            EXPIRE.replace(')', ", dry_run = 1)")
        ),
    )
    .await;
    assert!(
        metric(&planned, "deleted_manifest_lists_count") > 0,
        "{planned:?}"
    );
    // Tokens live a third of what a dry run through the slowed proxy takes: the statement, which
    // reads what the dry run reads and then writes and deletes, outlives them whatever the machine.
    let lifetime = dry_run_ms(&mut s, &table, &proxy).await / 3;
    rest_catalog::warehouse(
        table.warehouse(),
        json!({"vend": true, "lifetime_ms": lifetime, "advertise_ms": 3_600_000,
               "s3_endpoint": proxy.url}),
    )
    .await;
    let from = rest_catalog::log().await.len();
    let done = rows(&mut s, &format!("ALTER TABLE vended.`ns.t` {EXPIRE}")).await;
    assert_eq!(counts(&done), counts(&planned));
    let stats = proxy.stats().await;
    let (refreshes, _) = catalog_calls(table.warehouse(), from).await;
    assert!(
        stats["expired"].as_u64() > Some(0),
        "no expiry mid-statement: {stats}"
    );
    assert!(stats["deletes"].as_u64() > Some(0), "{stats}");
    assert!(refreshes > 0, "{stats}");
    // Every refused request was renewed and retried (else the statement would have failed).
    assert!(
        refreshes as u64 <= stats["expired"].as_u64().unwrap_or(0),
        "{stats}"
    );
    rest_catalog::warehouse(table.warehouse(), json!({})).await;
    same_rows_for_kept_refs(&before, &table.read(None));
}

/// Credentials that live shorter than the statement (and say so) are renewed ahead of their expiry, while the
/// statement runs: storage never refuses a request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_credentials_are_renewed_before_they_expire() {
    let table = RestTable::new("py_v2_branches_tags").await;
    let proxy = S3Proxy::start();
    proxy.mode(json!({"delay_ms": 120})).await;
    let mut s = session();
    // Credentials live half of what a dry run through the slowed proxy takes, so the statement
    // outlives them whatever the machine's speed.
    let lifetime = dry_run_ms(&mut s, &table, &proxy).await / 2;
    rest_catalog::warehouse(
        table.warehouse(),
        json!({"vend": true, "lifetime_ms": lifetime, "s3_endpoint": proxy.url}),
    )
    .await;
    let from = rest_catalog::log().await.len();
    let started = std::time::Instant::now();
    let done = rows(&mut s, &format!("ALTER TABLE vended.`ns.t` {EXPIRE}")).await;
    let took = started.elapsed();
    assert!(
        metric(&done, "deleted_manifest_lists_count") > 0,
        "{done:?}"
    );
    let stats = proxy.stats().await;
    let (refreshes, loads) = catalog_calls(table.warehouse(), from).await;
    assert_eq!(stats["expired"], 0, "{stats}");
    assert!(
        took.as_millis() > u128::from(lifetime),
        "the statement outlived no credential ({took:?}, lifetime {lifetime} ms)"
    );
    // Each load renews its short-lived credentials at once; more renewals happened mid-way.
    assert!(
        refreshes > loads,
        "{refreshes} refreshes, {loads} loads, {stats}"
    );
}

/// A storage that keeps refusing the credentials as expired: one renewal, one retry, then a
/// clear error that shows no token; nothing is deleted and the table still reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_storage_that_keeps_refusing_fails_after_one_renewal_and_deletes_nothing() {
    let table = RestTable::new("py_v2_linear").await;
    let before = table.read(None);
    let files = table.files().await;
    let proxy = S3Proxy::start();
    proxy.mode(json!({"expire_all": true})).await;
    rest_catalog::warehouse(
        table.warehouse(),
        json!({"vend": true, "lifetime_ms": 3_600_000, "s3_endpoint": proxy.url}),
    )
    .await;
    let mut s = session();
    run(&mut s, &create_vended("vended", table.warehouse())).await;
    let from = rest_catalog::log().await.len();
    let e = s
        .execute(&format!("ALTER TABLE vended.`ns.t` {EXPIRE}"))
        .await
        .expect_err("storage refuses every request");
    let text = e.to_string();
    assert!(text.starts_with("Code: "), "{text}");
    // The first request is a HEAD: its 400 carries no code.
    assert!(
        text.contains("as expired (HTTP 400/403 without an error code)"),
        "{text}"
    );
    assert!(
        text.contains("again after they were fetched anew once"),
        "{text}"
    );
    assert!(
        text.contains("ns.t") && text.contains(&rest_catalog::uri()),
        "{text}"
    );
    assert!(
        !text.contains("vended.") && !text.contains("Token-0"),
        "{text}"
    );
    let (refreshes, _) = catalog_calls(table.warehouse(), from).await;
    assert_eq!(refreshes, 1, "{text}");
    let stats = proxy.stats().await;
    assert_eq!(stats["forwarded"], 0, "{stats}");
    assert_eq!(
        stats["expired"], 2,
        "one request and its one retry: {stats}"
    );
    assert_eq!(table.files().await, files);
    rest_catalog::warehouse(table.warehouse(), json!({})).await;
    same_rows_for_kept_refs(&before, &table.read(None));
}

/// A copy of `scenario` on azurite, registered in a fresh warehouse of the REST catalog as
/// `ns.t` whose tables the catalog reaches with the account key and icetrim with SAS tokens.
struct AzureTable {
    _fixture: fixtures::Fixture,
    place: Place,
    warehouse: String,
    azure: Value,
}

impl AzureTable {
    async fn new(scenario: &str) -> AzureTable {
        let fixture = fixtures::make_fixture(scenario, fixtures::now_ms(), false);
        let original = Place::local(&fixture.table_dir(), fixture.fact_str("location"));
        let place = Place::copy_of(&original, Backend::Azure).await;
        let warehouse = crate::support::unique("vended-azure");
        let azure = json!({
            "endpoint": crate::support::emulator_var("ICETRIM_AZURE_ENDPOINT"),
            "key": icetrim::internals::io::AZURE_EMULATOR_KEY,
            "container": crate::support::emulator_var("ICETRIM_AZURE_CONTAINER"),
        });
        rest_catalog::warehouse(&warehouse, json!({"azure": azure})).await;
        let files = place.root.files().await;
        let newest = rest_catalog::newest_metadata_name(
            files
                .iter()
                .map(|(rel, _, _)| rel.as_str())
                .filter(|rel| rel.starts_with("metadata/") && !rel[9..].contains('/')),
        )
        .expect("a metadata file")
        .to_string();
        rest_catalog::register(&warehouse, &["ns"], "t", &place.root.uri(&newest)).await;
        AzureTable {
            _fixture: fixture,
            place,
            warehouse,
            azure,
        }
    }

    async fn vend(&self, extra: Value) {
        let mut behaviour = json!({"vend": true, "azure": self.azure});
        if let (Some(b), Some(e)) = (behaviour.as_object_mut(), extra.as_object()) {
            b.extend(e.clone());
        }
        rest_catalog::warehouse(&self.warehouse, behaviour).await;
    }

    async fn files(&self) -> Vec<String> {
        let mut files: Vec<String> = self
            .place
            .root
            .files()
            .await
            .into_iter()
            .map(|(rel, _, _)| rel)
            .collect();
        files.sort();
        files
    }

    /// pyiceberg through the catalog (the account key, not vended): every ref's rows.
    async fn read(&self) -> Value {
        rest_catalog::warehouse(&self.warehouse, json!({"azure": self.azure})).await;
        let script =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/rest_catalog/read_azure.py");
        let azure = self.azure.to_string();
        let out = fixtures::run_python_json(
            &script,
            &[&rest_catalog::uri(), &self.warehouse, "ns", "t", &azure],
        );
        assert!(
            out.get("error").is_none(),
            "read through the catalog: {out}"
        );
        out
    }
}

/// A table on azurite reached only with vended SAS tokens (no account key in icetrim's
/// settings): the first tokens had expired, azurite refuses them, icetrim renews once and goes
/// on; expiry and orphan removal delete with the SAS, and pyiceberg reads every ref after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azure_sas_tokens_are_renewed_when_refused_and_delete_with_the_sas() {
    let table = AzureTable::new("py_v2_branches_tags").await;
    let before = table.read().await;
    // The load's token and the one fetched at once for it (it had expired) are refused.
    table.vend(json!({"expired_vends": 2})).await;
    let mut s = session();
    run(&mut s, &create_vended("vended", &table.warehouse)).await;
    let from = rest_catalog::log().await.len();
    let done = rows(&mut s, &format!("ALTER TABLE vended.`ns.t` {EXPIRE}")).await;
    assert!(
        metric(&done, "deleted_manifest_lists_count") > 0,
        "{done:?}"
    );
    let (refreshes, _) = catalog_calls(&table.warehouse, from).await;
    assert_eq!(refreshes, 2, "one at load, one after azurite refused");
    // An orphan, older than the cut-off, goes with the SAS.
    let stray = table.place.write_stray("data/stray.parquet", b"x").await;
    let now = chrono_now_text();
    let removed = rows(
        &mut s,
        &format!("ALTER TABLE vended.`ns.t` EXECUTE remove_orphan_files(older_than = '{now}')"),
    )
    .await;
    assert_eq!(
        metric(&removed, "deleted_data_files_count"),
        1,
        "{removed:?}"
    );
    assert!(!table.place.exists(&stray).await);
    let after = table.read().await;
    let after_refs = after["refs"].as_object().expect("refs");
    assert!(after_refs.contains_key("main"), "{after}");
    for (name, rows) in after_refs {
        assert_eq!(&before["refs"][name], rows, "ref {name} changed");
    }
}

/// Azurite refusing every token as expired: one renewal, then a clear error; nothing deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azure_sas_tokens_that_keep_failing_end_after_one_renewal() {
    let table = AzureTable::new("py_v2_linear").await;
    let files = table.files().await;
    table.vend(json!({"expired_vends": 1000})).await;
    let mut s = session();
    run(&mut s, &create_vended("vended", &table.warehouse)).await;
    let from = rest_catalog::log().await.len();
    let e = s
        .execute(&format!("ALTER TABLE vended.`ns.t` {EXPIRE}"))
        .await
        .expect_err("azurite refuses every token");
    let text = e.to_string();
    // The first request is a HEAD: azurite's 403 carries no code, the token's `se` has passed.
    assert!(
        text.contains("as expired (HTTP 403 without an error code)"),
        "{text}"
    );
    assert!(
        text.contains("again after they were fetched anew once"),
        "{text}"
    );
    assert!(!text.contains("sig="), "{text}");
    let (refreshes, _) = catalog_calls(&table.warehouse, from).await;
    assert_eq!(
        refreshes, 2,
        "one at load (expired), one after azurite refused: {text}"
    );
    assert_eq!(table.files().await, files);
    table.read().await;
}

/// Held across a pause longer than their life, a table's SAS tokens (2 s, azurite enforces the
/// expiry) are replaced for the next request (due by their expiry, so renewed before it is sent;
/// this test cannot tell that from a renewal after azurite's refusal): azurite answers it, and
/// exactly one renewal happened after the load's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azure_sas_tokens_are_renewed_before_a_request_once_they_run_out() {
    use icetrim::internals::engine::{DatabaseDef, Runtime, open_catalog_table};

    let table = AzureTable::new("py_v2_linear").await;
    table.vend(json!({"lifetime_ms": 2000})).await;
    let def = DatabaseDef {
        name: "vended".into(),
        engine: "DataLakeCatalog".into(),
        args: vec![format!("{}/v1", rest_catalog::uri())],
        settings: [("catalog_type", "rest"), ("warehouse", &table.warehouse)]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        setting_order: Vec::new(),
    };
    let target = open_catalog_table(&Runtime::default(), &icetrim::Settings::new(), &def, "ns.t")
        .await
        .expect("open the catalog table");
    let from = rest_catalog::log().await.len();
    let files = table.files().await;
    let metadata = rest_catalog::newest_metadata_name(files.iter().map(String::as_str))
        .expect("a metadata file")
        .to_string();
    let uri = table.place.root.uri(&metadata);
    target
        .io
        .read(&uri)
        .await
        .expect("read with the load's token");
    tokio::time::sleep(std::time::Duration::from_millis(2600)).await;
    target
        .io
        .read(&uri)
        .await
        .expect("read after the token ran out");
    let (refreshes, _) = catalog_calls(&table.warehouse, from).await;
    assert_eq!(refreshes, 1);
}
