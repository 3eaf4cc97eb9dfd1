//! Catalog tables in AWS Glue (cargo feature `glue`): moto's Glue and S3 (one server, started by
//! `scripts/emulators.sh`), tables built and read back by pyiceberg's own `GlueCatalog`
//! (`tests/py/glue_fixture.py`), and `tests/py/glue_proxy.py` in front of moto's Glue where a test
//! needs what moto lacks: VersionId enforcement, a concurrent writer between icetrim's `GetTable`
//! and `UpdateTable`, lost answers, refused credentials.
//!
//! Every test builds its own Glue database (a unique name) and S3 prefix, so they run in parallel.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use futures::TryStreamExt;
use icetrim::engine::{Engine, Session};
use icetrim::error::ErrorKind;
use icetrim::format::OutputFormat;
use icetrim::internals::io::FileIO;
use serde_json::{Value, json};

use crate::support::fixtures::{self, run_python_json};
use crate::support::{emulator_var, s3_emulator_options, unique};

const SECRET: &str = "testing-secret-never-shown";

fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/py")
        .join(name)
}

fn moto() -> String {
    emulator_var("ICETRIM_S3_ENDPOINT")
}

/// A pyiceberg-built table in a fresh Glue database on moto.
struct GlueFixture {
    database: String,
    table: String,
    location: String,
    facts: Value,
}

impl GlueFixture {
    fn build() -> GlueFixture {
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
    fn sql_name(&self) -> String {
        format!("glue.`{}.{}`", self.database, self.table)
    }

    /// pyiceberg's `GlueCatalog` (straight on moto) reading every ref.
    fn read(&self) -> Value {
        let endpoint = moto();
        run_python_json(
            &script("glue_fixture.py"),
            &["read", &endpoint, &endpoint, &self.database, &self.table],
        )
    }

    /// ClickHouse (chdb) reading every ref through its own Glue `DataLakeCatalog` database.
    fn clickhouse(&self) -> Value {
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

    fn snapshot(&self, label: &str) -> i64 {
        self.facts["snapshots_by_label"][label]
            .as_i64()
            .unwrap_or_else(|| panic!("no snapshot {label}"))
    }

    /// Every object under the table location (relative names), sorted.
    async fn files(&self) -> Vec<String> {
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
fn create_database(endpoint: &str, key: &str) -> String {
    format!(
        "CREATE DATABASE glue ENGINE = DataLakeCatalog('{endpoint}') SETTINGS catalog_type = \
         'glue', region = 'us-east-1', aws_access_key_id = '{key}', aws_secret_access_key = \
         '{SECRET}', storage_endpoint = '{}'",
        moto()
    )
}

fn session() -> Session {
    Engine::builder()
        .setting("session_timezone", "UTC")
        .build()
        .expect("engine")
        .session()
}

async fn rows(session: &mut Session, sql: &str) -> Vec<String> {
    let results = session
        .execute(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let last = results.last().expect("a result");
    OutputFormat::TabSeparated
        .render(&last.columns, &last.rows, 0.0)
        .lines()
        .map(str::to_string)
        .collect()
}

async fn warnings(session: &mut Session, sql: &str) -> (Vec<String>, Vec<String>) {
    let results = session
        .execute(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let last = results.last().expect("a result");
    let lines = OutputFormat::TabSeparated
        .render(&last.columns, &last.rows, 0.0)
        .lines()
        .map(str::to_string)
        .collect();
    (lines, last.warnings.clone())
}

fn metric(rows: &[String], name: &str) -> i64 {
    rows.iter()
        .find_map(|r| r.strip_prefix(&format!("{name}\t")))
        .unwrap_or_else(|| panic!("no {name} in {rows:?}"))
        .parse()
        .expect("a count")
}

/// `tests/py/glue_proxy.py` in front of moto's Glue; stopped when dropped.
struct Proxy {
    child: Child,
    url: String,
}

impl Proxy {
    fn start() -> Proxy {
        let mut child = Command::new(fixtures::python())
            .arg(script("glue_proxy.py"))
            .arg(moto())
            .arg(moto())
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start glue_proxy.py");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("proxy stdout"))
            .read_line(&mut line)
            .expect("proxy port");
        let port: u16 = line.trim().parse().expect("the proxy prints its port");
        Proxy {
            child,
            url: format!("http://127.0.0.1:{port}"),
        }
    }

    async fn mode(&self, mode: Value) {
        let answer = reqwest::Client::new()
            .post(format!("{}/__proxy__/mode", self.url))
            .body(mode.to_string())
            .send()
            .await
            .expect("proxy mode");
        assert!(answer.status().is_success());
    }

    async fn stats(&self) -> Value {
        let text = reqwest::get(format!("{}/__proxy__/stats", self.url))
            .await
            .expect("proxy stats")
            .text()
            .await
            .expect("stats body");
        serde_json::from_str(&text).expect("stats JSON")
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const EXPIRE: &str = "EXECUTE expire_snapshots(retention_period = '5d')";

/// Every ref the fixture built still has its rows.
fn same_rows(before: &Value, after: &Value) {
    for name in ["main", "audit", "t_a2"] {
        assert_eq!(
            before["rows"][name], after["rows"][name],
            "ref {name} changed"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expiry_and_orphans_commit_through_glue_and_pyiceberg_and_clickhouse_read_every_ref() {
    let fx = GlueFixture::build();
    let before = fx.read();
    let clickhouse_before = fx.clickhouse();
    assert_eq!(
        clickhouse_before["rows"], before["rows"],
        "chdb and pyiceberg agree"
    );
    let mut s = session();
    rows(&mut s, &create_database(&moto(), "testing")).await;
    let tables = rows(&mut s, "SHOW TABLES FROM glue").await;
    assert!(
        tables.contains(&format!("{}.{}", fx.database, fx.table)),
        "{tables:?}"
    );
    let shown = rows(&mut s, "SHOW CREATE DATABASE glue").await.join("\n");
    assert!(!shown.contains(SECRET), "{shown}");
    assert!(shown.contains("[HIDDEN]"), "{shown}");
    // ClickHouse's `namespaces` filter: only the named Glue databases are shown and reachable.
    let filtered = create_database(&moto(), "testing").replacen(
        "CREATE DATABASE glue",
        "CREATE DATABASE only_ours",
        1,
    ) + &format!(", namespaces = '{}'", fx.database);
    rows(&mut s, &filtered).await;
    assert_eq!(
        rows(&mut s, "SHOW TABLES FROM only_ours").await,
        [format!("{}.{}", fx.database, fx.table)]
    );
    let history = rows(
        &mut s,
        &format!(
            "SELECT snapshot_id FROM system.iceberg_history WHERE database = 'only_ours' AND \
             table = '{}.{}'",
            fx.database, fx.table
        ),
    )
    .await;
    assert_eq!(history.len(), 8, "{history:?}");
    let refs = rows(
        &mut s,
        &format!(
            "SELECT name, snapshot_id FROM system.iceberg_refs WHERE database = 'glue' AND \
             table = '{}.{}' ORDER BY name",
            fx.database, fx.table
        ),
    )
    .await;
    assert_eq!(
        refs,
        [
            format!("audit\t{}", before["refs"]["audit"]),
            format!("main\t{}", before["refs"]["main"]),
            format!("t_a2\t{}", before["refs"]["t_a2"]),
        ]
    );
    let explain = rows(
        &mut s,
        &format!("EXPLAIN ALTER TABLE {} {EXPIRE}", fx.sql_name()),
    )
    .await;
    let expired_in_plan = explain
        .iter()
        .filter(|r| r.starts_with("snapshot\t") && r.contains("\texpire\t"))
        .count();
    assert_eq!(expired_in_plan, 5, "{explain:?}");
    let files_before = fx.files().await;
    let dry = rows(
        &mut s,
        &format!(
            "ALTER TABLE {} EXECUTE expire_snapshots(retention_period = '5d', dry_run = 1)",
            fx.sql_name()
        ),
    )
    .await;
    assert_eq!(fx.files().await, files_before, "a dry run changes nothing");
    assert_eq!(fx.read()["metadata_location"], before["metadata_location"]);
    let expired = rows(&mut s, &format!("ALTER TABLE {} {EXPIRE}", fx.sql_name())).await;
    for name in ["deleted_data_files_count", "deleted_manifest_lists_count"] {
        assert_eq!(metric(&dry, name), metric(&expired, name), "{name}");
    }
    // x1's file is live in no retained snapshot; a1's stays live through t_a2 and audit.
    assert_eq!(
        metric(&expired, "deleted_data_files_count"),
        1,
        "{expired:?}"
    );
    assert_eq!(
        metric(&expired, "deleted_manifest_lists_count"),
        5,
        "{expired:?}"
    );
    let after = fx.read();
    same_rows(&before, &after);
    let gone: Vec<i64> = ["a1", "a3", "x1", "del_x1", "del_a1"]
        .iter()
        .map(|l| fx.snapshot(l))
        .collect();
    let kept: Vec<i64> = serde_json::from_value(after["snapshot_ids"].clone()).expect("ids");
    assert!(gone.iter().all(|id| !kept.contains(id)), "{kept:?}");
    assert_eq!(kept.len(), 3, "{kept:?}");
    // Glue points at the next file of pyiceberg's naming, and the log links the two.
    let old = before["metadata_location"].as_str().expect("location");
    let new = after["metadata_location"].as_str().expect("location");
    let version = |l: &str| -> u64 {
        l.rsplit('/').next().unwrap()[..5]
            .parse()
            .expect("NNNNN-<uuid>.metadata.json")
    };
    assert_eq!(version(new), version(old) + 1, "{old} -> {new}");
    assert_eq!(
        after["metadata_log"].as_array().unwrap().last().unwrap(),
        old
    );
    // The system tables read through Glue after the commit.
    let snapshots = rows(
        &mut s,
        &format!(
            "SELECT snapshot_id FROM system.iceberg_snapshots WHERE database = 'glue' AND table \
             = '{}.{}'",
            fx.database, fx.table
        ),
    )
    .await;
    assert_eq!(snapshots.len(), 3, "{snapshots:?}");

    // Orphans: strays under data/ and metadata/ go, nothing Glue's metadata reaches does.
    let io = FileIO::new(s3_emulator_options());
    for stray in ["data/stray-1.parquet", "metadata/stray-m0.avro"] {
        io.write_if_absent(
            &format!("{}/{stray}", fx.location),
            bytes::Bytes::from_static(b"x"),
        )
        .await
        .expect("write a stray");
    }
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let now = chrono::Utc::now().format("%Y-%m-%d %H:%M:%S").to_string();
    let plan = rows(
        &mut s,
        &format!(
            "EXPLAIN ALTER TABLE {} EXECUTE remove_orphan_files(older_than = '{now}')",
            fx.sql_name()
        ),
    )
    .await;
    assert!(
        plan.iter().filter(|r| r.contains("stray")).count() == 2,
        "{plan:?}"
    );
    assert_eq!(
        fx.files()
            .await
            .iter()
            .filter(|f| f.contains("stray"))
            .count(),
        2
    );
    let orphans = rows(
        &mut s,
        &format!(
            "ALTER TABLE {} EXECUTE remove_orphan_files(older_than = '{now}')",
            fx.sql_name()
        ),
    )
    .await;
    let removed: i64 = orphans
        .iter()
        .filter(|r| r.starts_with("deleted_") && r.contains("_count\t"))
        .map(|r| r.rsplit('\t').next().unwrap().parse::<i64>().unwrap())
        .sum();
    assert_eq!(removed, 2, "{orphans:?}");
    let files = fx.files().await;
    assert!(!files.iter().any(|f| f.contains("stray")), "{files:?}");
    same_rows(&before, &fx.read());
    // ClickHouse reads every ref through Glue afterwards, with the same rows.
    let clickhouse_after = fx.clickhouse();
    same_rows(&clickhouse_before, &clickhouse_after);
    assert_eq!(clickhouse_after["current"], before["rows"]["main"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrent_commit_between_get_table_and_update_table_is_a_conflict_and_both_stay() {
    let fx = GlueFixture::build();
    let before = fx.read();
    let proxy = Proxy::start();
    proxy.mode(json!({"conflicts": 1})).await;
    let mut s = session();
    rows(&mut s, &create_database(&proxy.url, "testing")).await;
    let expired = rows(&mut s, &format!("ALTER TABLE {} {EXPIRE}", fx.sql_name())).await;
    assert_eq!(
        metric(&expired, "deleted_data_files_count"),
        1,
        "{expired:?}"
    );
    let stats = proxy.stats().await;
    assert_eq!(stats["conflicts_injected"], 1, "{stats}");
    assert_eq!(
        stats["ops"]["UpdateTable"], 2,
        "the conflict was retried once: {stats}"
    );
    let writer = stats["writer_snapshots"][0]
        .as_i64()
        .expect("the writer's snapshot");
    let after = fx.read();
    // Both commits: the writer's snapshot is main's head, its row is there, and ours expired.
    assert_eq!(after["refs"]["main"], writer, "{after}");
    let mut main: Vec<i64> = serde_json::from_value(before["rows"]["main"].clone()).unwrap();
    main.push(1000);
    assert_eq!(after["rows"]["main"], json!(main));
    for name in ["audit", "t_a2"] {
        assert_eq!(before["rows"][name], after["rows"][name], "ref {name}");
    }
    assert!(
        !after["snapshot_ids"]
            .as_array()
            .unwrap()
            .contains(&json!(fx.snapshot("x1")))
    );
    // The refused attempt's metadata file was removed: one new file per commit.
    let metadata_files = |files: &[String]| {
        files
            .iter()
            .filter(|f| f.ends_with(".metadata.json"))
            .count()
    };
    let files = fx.files().await;
    let log = after["metadata_log"].as_array().unwrap().len();
    assert_eq!(metadata_files(&files), log + 1, "{files:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conflicts_on_every_attempt_stop_at_iceberg_commit_max_attempts_with_nothing_deleted() {
    let fx = GlueFixture::build();
    let proxy = Proxy::start();
    proxy.mode(json!({"conflicts": 5})).await;
    let mut s = session();
    rows(&mut s, &create_database(&proxy.url, "testing")).await;
    rows(&mut s, "SET iceberg_commit_max_attempts = 2").await;
    let files_before = fx.files().await;
    let e = error_of(&mut s, &format!("ALTER TABLE {} {EXPIRE}", fx.sql_name())).await;
    assert_eq!(e.kind(), ErrorKind::LimitExceeded, "{e}");
    let stats = proxy.stats().await;
    assert_eq!(stats["ops"]["UpdateTable"], 2, "{stats}");
    assert_eq!(stats["conflicts_injected"], 2, "{stats}");
    // Nothing of the table was deleted; the only new files are the two writers' commits, and
    // neither refused attempt left its metadata file behind.
    let files_after = fx.files().await;
    for f in &files_before {
        assert!(files_after.contains(f), "{f} was deleted");
    }
    let after = fx.read();
    let metadata_files = files_after
        .iter()
        .filter(|f| f.ends_with(".metadata.json"))
        .count();
    assert_eq!(
        metadata_files,
        after["metadata_log"].as_array().unwrap().len() + 1,
        "{files_after:?}"
    );
    let mut main: Vec<i64> = serde_json::from_value(fx.facts["rows"]["main"].clone()).unwrap();
    main.extend([1000, 1001]);
    assert_eq!(after["rows"]["main"], json!(main));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_update_answer_is_settled_by_get_table() {
    let fx = GlueFixture::build();
    let before = fx.read();
    let proxy = Proxy::start();
    proxy.mode(json!({"drop_update_response": 1})).await;
    let mut s = session();
    rows(&mut s, &create_database(&proxy.url, "testing")).await;
    let (expired, warned) =
        warnings(&mut s, &format!("ALTER TABLE {} {EXPIRE}", fx.sql_name())).await;
    assert_eq!(proxy.stats().await["updates_dropped"], 1);
    // GetTable showed our file: the commit is confirmed and the deletes ran.
    assert_eq!(
        metric(&expired, "deleted_data_files_count"),
        1,
        "{expired:?} {warned:?}"
    );
    same_rows(&before, &fx.read());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_outcome_deletes_nothing_and_the_next_run_finishes() {
    let fx = GlueFixture::build();
    let before = fx.read();
    let proxy = Proxy::start();
    // The update is lost on the way, and Glue then fails every confirming GetTable.
    proxy
        .mode(json!({"swallow_update": 1, "fail_get_table_after_loss": 20}))
        .await;
    let mut s = session();
    rows(&mut s, &create_database(&proxy.url, "testing")).await;
    let files_before = fx.files().await;
    let (expired, warned) =
        warnings(&mut s, &format!("ALTER TABLE {} {EXPIRE}", fx.sql_name())).await;
    assert_eq!(
        metric(&expired, "deleted_data_files_count"),
        0,
        "{expired:?}"
    );
    assert_eq!(metric(&expired, "deleted_manifest_lists_count"), 0);
    let text = warned.join("\n");
    assert!(text.contains("no file was deleted"), "{text}");
    assert!(text.contains("unknown outcome"), "{text}");
    assert!(!text.contains(SECRET), "{text}");
    let files_after = fx.files().await;
    for f in &files_before {
        assert!(files_after.contains(f), "{f} was deleted");
    }
    assert_eq!(fx.read()["metadata_location"], before["metadata_location"]);
    // Glue answers again: the next run plans afresh and expires.
    proxy.mode(json!({"fail_get_table": 0})).await;
    let again = rows(&mut s, &format!("ALTER TABLE {} {EXPIRE}", fx.sql_name())).await;
    assert_eq!(metric(&again, "deleted_data_files_count"), 1, "{again:?}");
    same_rows(&before, &fx.read());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_that_landed_unseen_is_finished_by_the_next_run_from_the_journal() {
    let fx = GlueFixture::build();
    let before = fx.read();
    let proxy = Proxy::start();
    // The update lands, its answer is lost, and the confirming GetTables fail.
    proxy
        .mode(json!({"drop_update_response": 1, "fail_get_table_after_loss": 20}))
        .await;
    let mut s = session();
    rows(&mut s, &create_database(&proxy.url, "testing")).await;
    let files_before = fx.files().await;
    let (expired, warned) =
        warnings(&mut s, &format!("ALTER TABLE {} {EXPIRE}", fx.sql_name())).await;
    assert_eq!(
        metric(&expired, "deleted_data_files_count"),
        0,
        "{expired:?}"
    );
    assert!(warned.join("\n").contains("unknown outcome"), "{warned:?}");
    let files_during = fx.files().await;
    for f in &files_before {
        assert!(files_during.contains(f), "{f} was deleted");
    }
    // It did land: Glue names our file, and x1 is gone from the metadata.
    let landed = fx.read();
    assert_ne!(landed["metadata_location"], before["metadata_location"]);
    assert!(
        !landed["snapshot_ids"]
            .as_array()
            .unwrap()
            .contains(&json!(fx.snapshot("x1")))
    );
    // Glue answers again: the next run finds the journal's commit landed and finishes the deletes.
    proxy.mode(json!({"fail_get_table": 0})).await;
    let (_, next) = warnings(&mut s, &format!("ALTER TABLE {} {EXPIRE}", fx.sql_name())).await;
    assert!(
        next.iter().any(|w| w.contains("finished the deletes")),
        "{next:?}"
    );
    let files_after = fx.files().await;
    let lists = |files: &[String]| files.iter().filter(|f| f.contains("/snap-")).count();
    assert_eq!(
        lists(&files_after) + 5,
        lists(&files_before),
        "{files_after:?}"
    );
    let data = |files: &[String]| files.iter().filter(|f| f.starts_with("data/")).count();
    assert_eq!(data(&files_after) + 1, data(&files_before));
    same_rows(&before, &fx.read());
}

async fn error_of(session: &mut Session, sql: &str) -> icetrim::error::Error {
    match session.execute(sql).await {
        Ok(r) => panic!("{sql} succeeded: {:?}", r.last().map(|r| &r.rows)),
        Err(e) => e,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn glue_failures_are_clickhouse_errors_that_name_the_endpoint_and_the_table() {
    let fx = GlueFixture::build();
    let endpoint = moto();
    let mut s = session();
    rows(&mut s, &create_database(&endpoint, "testing")).await;

    let e = error_of(
        &mut s,
        &format!("ALTER TABLE glue.`{}.nope` {EXPIRE}", fx.database),
    )
    .await;
    assert_eq!(e.kind(), ErrorKind::UnknownTable, "{e}");
    assert!(e.message().contains(&endpoint), "{e}");
    assert!(
        e.message().contains(&format!("{}.nope", fx.database)),
        "{e}"
    );

    let e = error_of(&mut s, &format!("ALTER TABLE glue.`no_such_db.t` {EXPIRE}")).await;
    assert_eq!(e.kind(), ErrorKind::UnknownTable, "{e}");

    run_python_json(
        &script("glue_fixture.py"),
        &["hive", &endpoint, &fx.database, "plain_hive"],
    );
    let tables = rows(&mut s, "SHOW TABLES FROM glue").await;
    assert!(
        !tables.iter().any(|t| t.ends_with("plain_hive")),
        "only Iceberg tables are listed: {tables:?}"
    );
    let e = error_of(
        &mut s,
        &format!("ALTER TABLE glue.`{}.plain_hive` {EXPIRE}", fx.database),
    )
    .await;
    assert_eq!(e.kind(), ErrorKind::NotImplemented, "{e}");
    assert!(e.message().contains("not an Iceberg table"), "{e}");

    run_python_json(
        &script("glue_fixture.py"),
        &[
            "dangling",
            &endpoint,
            &fx.database,
            "dangling",
            &fx.location,
        ],
    );
    let e = error_of(
        &mut s,
        &format!("ALTER TABLE glue.`{}.dangling` {EXPIRE}", fx.database),
    )
    .await;
    assert_eq!(e.kind(), ErrorKind::FileDoesntExist, "{e}");
    assert!(e.message().contains("storage has no such file"), "{e}");

    // Refused credentials: the proxy accepts one access key only, as AWS does.
    let proxy = Proxy::start();
    proxy.mode(json!({"require_key": "testing"})).await;
    let mut bad = session();
    let e = error_of(&mut bad, &create_database(&proxy.url, "wrong-key")).await;
    assert_eq!(e.kind(), ErrorKind::ReceivedErrorFromRemoteIoServer, "{e}");
    assert!(e.message().contains("UnrecognizedClientException"), "{e}");
    assert!(e.message().contains(&proxy.url), "{e}");
    assert!(!e.to_string().contains(SECRET), "{e}");

    // ClickHouse's gate (on by default, as icetrim's other gates).
    let mut gated = session();
    rows(&mut gated, "SET allow_database_glue_catalog = 0").await;
    let e = error_of(&mut gated, &create_database(&endpoint, "testing")).await;
    assert_eq!(e.kind(), ErrorKind::SupportIsDisabled, "{e}");
    assert!(e.message().contains("allow_database_glue_catalog"), "{e}");

    // Nothing listens: NETWORK_ERROR naming the endpoint, quickly.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        format!("http://{}", listener.local_addr().expect("addr"))
    };
    let started = std::time::Instant::now();
    let mut down = session();
    let e = error_of(&mut down, &create_database(&closed, "testing")).await;
    assert_eq!(e.kind(), ErrorKind::NetworkError, "{e}");
    assert!(e.message().contains(&closed), "{e}");
    assert!(!e.to_string().contains(SECRET), "{e}");
    assert!(started.elapsed().as_secs() < 30, "{:?}", started.elapsed());

    // None of this touched the table.
    let after = fx.read();
    assert_eq!(after["metadata_location"], fx.facts["metadata_location"]);
}

/// `sql-examples/catalog_glue.sql`, run as a user would (`icetrim < script`), on a Glue table.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_glue_sql_example_runs() {
    let fx = GlueFixture::build();
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("sql-examples/catalog_glue.sql");
    let script = std::fs::read_to_string(&path)
        .expect("the example")
        .replace("http://127.0.0.1:5000", &moto())
        .replace("sales.events", &format!("{}.{}", fx.database, fx.table))
        .replace("'test-key'", "'testing'")
        .replace("'test-secret'", &format!("'{SECRET}'"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_icetrim"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start icetrim");
    std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), script.as_bytes())
        .expect("write the script");
    let out = child.wait_with_output().expect("icetrim finishes");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}\n{stdout}");
    assert!(!stdout.contains(SECRET) && !stderr.contains(SECRET));
    assert!(stdout.contains("[HIDDEN]"), "{stdout}");
    let blocks: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("deleted_data_files_count\t"))
        .collect();
    // The dry run and the expiry report the same counts; the orphan dry run finds nothing.
    assert_eq!(
        blocks,
        [
            "deleted_data_files_count\t1",
            "deleted_data_files_count\t1",
            "deleted_data_files_count\t0"
        ]
    );
    same_rows(&fx.facts, &fx.read());
}

/// A Glue database survives the engine with a data path (`--path`): its definition file is 0600,
/// the next engine reaches the same table, and nothing shows the secret.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_glue_database_persists_with_its_secret_hidden() {
    let fx = GlueFixture::build();
    let dir = tempfile::tempdir().expect("data path");
    {
        let engine = Engine::builder()
            .data_path(dir.path())
            .build()
            .expect("engine");
        let mut s = engine.session();
        rows(&mut s, &create_database(&moto(), "testing")).await;
    }
    let engine = Engine::builder()
        .data_path(dir.path())
        .build()
        .expect("engine");
    let mut s = engine.session();
    let tables = rows(&mut s, "SHOW TABLES FROM glue").await;
    assert!(
        tables.contains(&format!("{}.{}", fx.database, fx.table)),
        "{tables:?}"
    );
    let shown = rows(&mut s, "SHOW CREATE DATABASE glue").await.join("\n");
    assert!(
        !shown.contains(SECRET) && shown.contains("[HIDDEN]"),
        "{shown}"
    );
    let plan = rows(
        &mut s,
        &format!("EXPLAIN ALTER TABLE {} {EXPIRE}", fx.sql_name()),
    )
    .await
    .join("\n");
    assert!(
        plan.contains("\texpire\t") && !plan.contains(SECRET),
        "{plan}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let file = dir.path().join("databases/glue.json");
        let mode = std::fs::metadata(&file)
            .expect("the definition file")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{}", file.display());
    }
}

/// What the other procedures commit through `MaintenanceTarget::commit_edit` (refs, properties)
/// goes through Glue the same way: a new tag and branch and a property, then the tag and the
/// property removed; pyiceberg reads the refs, Glue's parameters mirror the properties and the
/// pointer moved twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_edit_of_refs_and_properties_goes_through_glue() {
    use icetrim::internals::engine::{DatabaseDef, Runtime, open_catalog_table};
    use icetrim::internals::iceberg::spec::{RefKind, SnapshotRef};

    let fx = GlueFixture::build();
    let before = fx.read();
    let endpoint = moto();
    let def = DatabaseDef {
        name: "glue".into(),
        engine: "DataLakeCatalog".into(),
        args: vec![endpoint.clone()],
        settings: [
            ("catalog_type", "glue"),
            ("storage_endpoint", endpoint.as_str()),
            ("aws_access_key_id", "testing"),
            ("aws_secret_access_key", "testing"),
            ("region", "us-east-1"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect(),
    };
    let name = format!("{}.{}", fx.database, fx.table);
    let target = open_catalog_table(&Runtime::default(), &icetrim::Settings::new(), &def, &name)
        .await
        .expect("open the Glue table");
    let a2 = fx.snapshot("a2");
    target
        .commit_edit("test", |m| {
            let mut next = m.clone();
            let head = m.current_snapshot_id().expect("a current snapshot");
            next.set_ref(&SnapshotRef {
                name: "audit_tag".into(),
                kind: RefKind::Tag,
                snapshot_id: a2,
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
        })
        .await
        .expect("commit_edit")
        .expect("a commit");
    let middle = fx.read();
    assert_eq!(middle["rows"]["audit_tag"], before["rows"]["t_a2"]);
    assert_eq!(middle["rows"]["dev"], before["rows"]["main"]);
    assert_eq!(middle["properties"]["icetrim.test"], "yes");
    assert_eq!(middle["glue_parameters"]["icetrim.test"], "yes");
    assert_eq!(
        middle["glue_parameters"]["previous_metadata_location"],
        before["metadata_location"]
    );
    target
        .commit_edit("test", |m| {
            let mut next = m.clone();
            next.remove_property("icetrim.test")?;
            next.remove_refs(&["audit_tag"])?;
            Ok(Some(next))
        })
        .await
        .expect("second commit_edit");
    let after = fx.read();
    let refs = after["refs"].as_object().expect("refs");
    assert!(
        refs.contains_key("dev") && !refs.contains_key("audit_tag"),
        "{after}"
    );
    assert!(after["properties"].get("icetrim.test").is_none(), "{after}");
    same_rows(&before, &after);
    assert_eq!(
        after["glue_parameters"]["previous_metadata_location"],
        middle["metadata_location"]
    );
}

/// ClickHouse's own Glue commit and icetrim's follow each other: chdb expires what is older than
/// 9.5 days through Glue (it writes `v<N>.metadata.json`), icetrim then expires the rest on top of
/// it and names its file `<N+1>-<uuid>`; pyiceberg reads every ref unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn icetrim_commits_on_top_of_clickhouses_glue_commit() {
    let fx = GlueFixture::build();
    let before = fx.read();
    let endpoint = moto();
    let cutoff = chrono::Utc::now() - chrono::Duration::hours(9 * 24 + 12);
    let cutoff = cutoff.format("%Y-%m-%d %H:%M:%S").to_string();
    let by_clickhouse = run_python_json(
        &script("glue_fixture.py"),
        &[
            "clickhouse_expire",
            &endpoint,
            &endpoint,
            &fx.database,
            &fx.table,
            &cutoff,
        ],
    );
    let theirs = by_clickhouse["read"]["metadata_location"]
        .as_str()
        .expect("a location")
        .to_string();
    let name = theirs.rsplit('/').next().expect("a file name");
    assert!(
        name.starts_with('v') && name.ends_with(".metadata.json"),
        "ClickHouse's name: {theirs}"
    );
    let version: u64 = name[1..name.len() - ".metadata.json".len()]
        .parse()
        .expect("vN");
    same_rows(&before, &by_clickhouse["read"]);
    let mut s = session();
    rows(&mut s, &create_database(&endpoint, "testing")).await;
    let expired = rows(&mut s, &format!("ALTER TABLE {} {EXPIRE}", fx.sql_name())).await;
    assert_eq!(
        metric(&expired, "deleted_data_files_count"),
        1,
        "{expired:?}"
    );
    let after = fx.read();
    same_rows(&before, &after);
    let ours = after["metadata_location"].as_str().expect("a location");
    let ours_name = ours.rsplit('/').next().expect("a file name");
    assert!(
        ours_name.starts_with(&format!("{:05}-", version + 1)),
        "{theirs} -> {ours}"
    );
    assert_eq!(
        after["glue_parameters"]["previous_metadata_location"],
        theirs
    );
    assert_eq!(
        after["snapshot_ids"].as_array().unwrap().len(),
        3,
        "{after}"
    );
}
