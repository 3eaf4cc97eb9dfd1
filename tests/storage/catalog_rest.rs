//! Catalog tables through the Iceberg REST catalog (`tests/rest_catalog/server.py`: pyiceberg's
//! SqlCatalog behind HTTP, warehouse on the S3 emulator): both procedures commit through the
//! catalog, pyiceberg (RestCatalog client) and ClickHouse (chdb, DataLakeCatalog) read every table
//! through it afterwards, and every failure path deletes nothing.

use std::path::PathBuf;

use icetrim::engine::{Engine, Session};
use serde_json::Value;

use crate::support::backends::{Backend, Place};
pub(crate) use crate::support::catalog::{metric, rows, run, session};
use crate::support::fixtures::{self, Fixture};
use crate::support::rest_catalog;

/// A fixture copied to S3 and registered in a fresh warehouse of the REST catalog as `ns.t`.
pub(crate) struct RestTable {
    _fixture: Fixture,
    pub(crate) place: Place,
}

impl RestTable {
    pub(crate) async fn new(scenario: &str) -> RestTable {
        let fixture = fixtures::make_fixture(scenario, fixtures::now_ms(), false);
        let original = Place::local(&fixture.table_dir(), fixture.fact_str("location"));
        let place = Place::copy_of(&original, Backend::Rest).await;
        RestTable {
            _fixture: fixture,
            place,
        }
    }

    pub(crate) fn warehouse(&self) -> &str {
        self.place.warehouse.as_deref().expect("a REST copy")
    }

    /// `CREATE DATABASE lake …` on this table's warehouse with `extra` settings.
    pub(crate) fn create(&self, extra: &str) -> String {
        rest_catalog::create_database("lake", self.warehouse(), extra)
    }

    /// The table opened for maintenance through its warehouse (database `lake`, the database's
    /// storage settings, no vended credentials) on `runtime` with `settings`.
    pub(crate) async fn open_target(
        &self,
        runtime: &icetrim::internals::engine::Runtime,
        settings: &icetrim::Settings,
    ) -> icetrim::internals::maintain::target::MaintenanceTarget {
        let endpoint = format!("{}/v1", rest_catalog::uri());
        let rest = [
            ("catalog_type", "rest"),
            ("warehouse", self.warehouse()),
            ("vended_credentials", "0"),
        ];
        let def = crate::support::catalog::catalog_database("lake", &endpoint, &rest);
        crate::support::catalog::open_target(runtime, settings, &def, "ns.t").await
    }

    /// `CREATE DATABASE lake` on this warehouse with no storage settings at all (storage comes
    /// from the catalog: vended or its config), then an expiry that must delete manifest lists.
    async fn expire_without_storage_settings(&self, s: &mut Session) {
        let create = format!(
            "CREATE DATABASE lake ENGINE = DataLakeCatalog('{}/v1') SETTINGS catalog_type = \
             'rest', warehouse = '{}'",
            rest_catalog::uri(),
            self.warehouse()
        );
        run(s, &create).await;
        expire_deleting_lists(s, 1).await;
    }

    /// pyiceberg (every ref) and chdb (current rows) reading through the catalog.
    pub(crate) fn read(&self, credential: Option<&str>) -> Value {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/rest_catalog/read.py");
        let endpoint = crate::support::emulator_var("ICETRIM_S3_ENDPOINT");
        let bucket = crate::support::emulator_var("ICETRIM_S3_BUCKET");
        let uri = rest_catalog::uri();
        let mut args = vec![
            uri.as_str(),
            self.warehouse(),
            "ns",
            "t",
            endpoint.as_str(),
            bucket.as_str(),
        ];
        if let Some(c) = credential {
            args.push(c);
        }
        let out = fixtures::run_python_json(&script, &args);
        assert!(
            out.get("error").is_none(),
            "read through the catalog: {out}"
        );
        out
    }

    pub(crate) async fn files(&self) -> Vec<String> {
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
}

/// `expire_snapshots(retention_period = '0s', retain_last = N)` on `lake.ns.t`, which must delete
/// manifest lists: its rows.
pub(crate) async fn expire_deleting_lists(s: &mut Session, retain_last: u32) -> Vec<String> {
    let sql = format!(
        "ALTER TABLE lake.`ns.t` EXECUTE expire_snapshots(retention_period = '0s', retain_last = \
         {retain_last})"
    );
    let expired = rows(s, &sql).await;
    assert!(
        metric(&expired, "deleted_manifest_lists_count") > 0,
        "{expired:?}"
    );
    expired
}

/// The refs both reads share must have the same rows before and after.
pub(crate) fn same_rows_for_kept_refs(before: &Value, after: &Value) {
    let after_refs = after["pyiceberg"].as_object().expect("refs");
    assert!(after_refs.contains_key("main"), "{after}");
    for (name, rows) in after_refs {
        assert_eq!(&before["pyiceberg"][name], rows, "ref {name} changed");
    }
    assert_eq!(
        before["clickhouse"], after["clickhouse"],
        "ClickHouse rows changed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expire_and_orphans_commit_through_the_catalog_and_every_engine_reads_after() {
    let table = RestTable::new("py_v2_branches_tags").await;
    let before = table.read(None);
    let mut s = session();
    run(&mut s, &table.create("vended_credentials = 0")).await;
    assert_eq!(rows(&mut s, "SHOW TABLES FROM lake").await, ["ns.t"]);
    assert!(
        rows(&mut s, "SHOW DATABASES")
            .await
            .contains(&"lake".to_string())
    );
    let listed = rows(
        &mut s,
        "SELECT snapshot_id FROM system.iceberg_snapshots WHERE database = 'lake' AND table = 'ns.t'",
    )
    .await;
    let explain = rows(
        &mut s,
        "EXPLAIN ALTER TABLE lake.`ns.t` EXECUTE expire_snapshots(retention_period = '0s', retain_last = 1)",
    )
    .await;
    assert!(!explain.is_empty());
    let dry = rows(
        &mut s,
        "ALTER TABLE lake.`ns.t` EXECUTE expire_snapshots(retention_period = '0s', retain_last = 1, dry_run = 1)",
    )
    .await;
    let expired = rows(
        &mut s,
        "ALTER TABLE lake.`ns.t` EXECUTE expire_snapshots(retention_period = '0s', retain_last = 1)",
    )
    .await;
    assert_eq!(
        metric(&dry, "deleted_manifest_lists_count"),
        metric(&expired, "deleted_manifest_lists_count")
    );
    assert!(
        metric(&expired, "deleted_manifest_lists_count") > 0,
        "{expired:?}"
    );
    let after_listed = rows(
        &mut s,
        "SELECT snapshot_id FROM system.iceberg_snapshots WHERE database = 'lake' AND table = 'ns.t'",
    )
    .await;
    assert!(
        after_listed.len() < listed.len(),
        "{after_listed:?} vs {listed:?}"
    );
    // The commit went through the catalog: its requests carry the REST updates.
    let log = rest_catalog::log().await;
    let commit = log
        .iter()
        .rev()
        .find(|e| {
            e["method"] == "POST"
                && e["path"]
                    .as_str()
                    .is_some_and(|p| p.contains(table.warehouse()))
        })
        .expect("a commit request");
    let body: Value = serde_json::from_str(commit["body"].as_str().expect("a body")).expect("JSON");
    assert!(
        body["updates"]
            .as_array()
            .expect("updates")
            .iter()
            .any(|u| u["action"] == "remove-snapshots"),
        "{body}"
    );
    assert!(
        body["requirements"]
            .as_array()
            .expect("requirements")
            .iter()
            .any(|r| r["type"] == "assert-table-uuid"),
        "{body}"
    );
    // Orphans: a stray under data/ goes; nothing the catalog's metadata reaches does.
    let stray = table
        .place
        .write_stray("data/stray-orphan.parquet", b"stray")
        .await;
    let now = chrono_now_text();
    let removed = rows(
        &mut s,
        &format!("ALTER TABLE lake.`ns.t` EXECUTE remove_orphan_files(older_than = '{now}')"),
    )
    .await;
    assert!(!table.place.exists(&stray).await, "{removed:?}");
    let after = table.read(None);
    same_rows_for_kept_refs(&before, &after);
}

/// "Now" as a timestamp argument, two seconds after the last file the test wrote.
pub(crate) fn chrono_now_text() -> String {
    std::thread::sleep(std::time::Duration::from_millis(2100));
    chrono::Utc::now().format("%Y-%m-%d %H:%M:%S").to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrent_append_through_the_catalog_makes_expiry_replan_and_both_commits_stay() {
    let table = RestTable::new("py_v2_linear").await;
    let before = table.read(None);
    let mut s = session();
    run(&mut s, &table.create("vended_credentials = 0")).await;
    rest_catalog::fail_next(table.warehouse(), &["ns"], "t", "append-first").await;
    expire_deleting_lists(&mut s, 2).await;
    // The 409 and the re-planned commit are both in the log.
    let log = rest_catalog::log().await;
    let commits = log
        .iter()
        .filter(|e| {
            e["method"] == "POST"
                && e["path"]
                    .as_str()
                    .is_some_and(|p| p.contains(table.warehouse()))
        })
        .count();
    assert_eq!(commits, 2, "one refused commit and one re-planned commit");
    // Both commits are present: the appended snapshot is main's head, and only two snapshots
    // (the append and its parent) remain.
    let snapshots = rows(
        &mut s,
        "SELECT operation, is_current FROM system.iceberg_snapshots WHERE database = 'lake' AND table = 'ns.t' ORDER BY timestamp",
    )
    .await;
    assert_eq!(snapshots.len(), 2, "{snapshots:?}");
    assert_eq!(snapshots[1], "append\t1");
    let after = table.read(None);
    let rows_before = before["pyiceberg"]["main"][0].as_i64().expect("rows");
    assert_eq!(
        after["pyiceberg"]["main"][0].as_i64(),
        Some(rows_before + 1)
    );
    assert_eq!(after["clickhouse"][0].as_i64(), Some(rows_before + 1));
}

/// An unknown commit outcome ends the statement with an error saying what was and was not done
/// (the rule of every procedure), and deletes nothing.
async fn unknown_outcome_error(s: &mut Session, sql: &str) -> String {
    let e = match s.execute(sql).await {
        Ok(r) => panic!(
            "{sql} succeeded on an unknown outcome: {:?}",
            r.last().map(|r| &r.rows)
        ),
        Err(e) => e,
    };
    assert_eq!(e.code(), 210, "NETWORK_ERROR: {e}");
    let m = e.message().to_string();
    assert!(m.contains("unknown outcome"), "{m}");
    assert!(m.contains("the commit may or may not have landed"), "{m}");
    assert!(
        m.contains("no file was deleted; the next expire_snapshots finishes the deletes"),
        "{m}"
    );
    m
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_500_on_commit_deletes_nothing_and_the_next_run_expires() {
    let table = RestTable::new("py_v2_linear").await;
    let mut s = session();
    run(&mut s, &table.create("vended_credentials = 0")).await;
    let files = table.files().await;
    rest_catalog::fail_next(table.warehouse(), &["ns"], "t", "500").await;
    let sql = "ALTER TABLE lake.`ns.t` EXECUTE expire_snapshots(retention_period = '0s', retain_last = 1)";
    let message = unknown_outcome_error(&mut s, sql).await;
    assert!(message.contains("HTTP 500"), "{message}");
    let now: Vec<String> = table
        .files()
        .await
        .into_iter()
        .filter(|f| !f.starts_with("metadata/.icetrim/"))
        .collect();
    assert_eq!(now, files, "nothing deleted after a 500");
    // The catalog never applied it: the next run drops the journal and expires for real.
    let again = rows(&mut s, sql).await;
    assert!(
        metric(&again, "deleted_manifest_lists_count") > 0,
        "{again:?}"
    );
    let after = table.read(None);
    assert!(after["pyiceberg"]["main"][0].as_i64().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_answer_settles_by_reloading_or_deletes_nothing() {
    // The catalog commits and drops the connection: the reload shows our commit, so it counts.
    let table = RestTable::new("py_v2_linear").await;
    let before = table.read(None);
    let mut s = session();
    run(&mut s, &table.create("vended_credentials = 0")).await;
    rest_catalog::fail_next(table.warehouse(), &["ns"], "t", "commit-then-drop").await;
    let sql = "ALTER TABLE lake.`ns.t` EXECUTE expire_snapshots(retention_period = '0s', retain_last = 1)";
    let expired = rows(&mut s, sql).await;
    assert!(
        metric(&expired, "deleted_manifest_lists_count") > 0,
        "{expired:?}"
    );
    same_rows_for_kept_refs(&before, &table.read(None));

    // Commits, drops the connection, and the reloads fail: the outcome cannot be known, nothing
    // is deleted, the statement fails saying so, and the next run finishes the deletes from the
    // journal.
    let table = RestTable::new("py_v2_linear").await;
    let before = table.read(None);
    let mut s = session();
    run(&mut s, &table.create("vended_credentials = 0")).await;
    let files = table.files().await;
    rest_catalog::fail_next(table.warehouse(), &["ns"], "t", "commit-then-drop-blind").await;
    unknown_outcome_error(&mut s, sql).await;
    let during: Vec<String> = table
        .files()
        .await
        .into_iter()
        .filter(|f| !f.starts_with("metadata/"))
        .collect();
    let data_before: Vec<String> = files
        .iter()
        .filter(|f| !f.starts_with("metadata/"))
        .cloned()
        .collect();
    assert_eq!(
        during, data_before,
        "nothing deleted while the outcome is unknown"
    );
    let lists_before = files.iter().filter(|f| f.contains("/snap-")).count();
    let lists_during = table
        .files()
        .await
        .iter()
        .filter(|f| f.contains("/snap-"))
        .count();
    assert_eq!(lists_before, lists_during, "no manifest list deleted");
    // Next run: the journal finds the commit landed and finishes the deletes.
    let next = run(&mut s, sql).await;
    assert!(
        next.warnings
            .iter()
            .any(|w| w.contains("finished the deletes")),
        "{:?}",
        next.warnings
    );
    let lists_after = table
        .files()
        .await
        .iter()
        .filter(|f| f.contains("/snap-"))
        .count();
    assert!(
        lists_after < lists_before,
        "{lists_after} vs {lists_before}"
    );
    same_rows_for_kept_refs(&before, &table.read(None));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_cannot_parse_several_ids_gets_one_per_update() {
    let table = RestTable::new("py_v2_linear").await;
    let mut s = session();
    run(&mut s, &table.create("vended_credentials = 0")).await;
    rest_catalog::fail_next(table.warehouse(), &["ns"], "t", "400-list").await;
    let expired = rows(
        &mut s,
        "ALTER TABLE lake.`ns.t` EXECUTE expire_snapshots(retention_period = '0s', retain_last = 1)",
    )
    .await;
    assert!(
        metric(&expired, "deleted_manifest_lists_count") > 1,
        "{expired:?}"
    );
    rest_catalog::fail_next(table.warehouse(), &["ns"], "t", "none").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oauth2_client_credentials_and_vended_storage_credentials() {
    let table = RestTable::new("py_v2_linear").await;
    let before = table.read(None);
    rest_catalog::warehouse(
        table.warehouse(),
        serde_json::json!({"client_id": "icetrim", "client_secret": "S3CR3T-CLIENT", "vend": true}),
    )
    .await;
    // No storage settings at all: only the vended credentials reach the S3 emulator.
    let create = format!(
        "CREATE DATABASE lake ENGINE = DataLakeCatalog('{}/v1') SETTINGS catalog_type = 'rest', \
         warehouse = '{}', catalog_credential = 'icetrim:S3CR3T-CLIENT', vended_credentials = 1",
        rest_catalog::uri(),
        table.warehouse()
    );
    let seen_before = rest_catalog::log().await.len();
    let mut s = session();
    run(&mut s, &create).await;
    let shown = rows(&mut s, "SHOW CREATE DATABASE lake").await.join("\n");
    assert!(!shown.contains("S3CR3T-CLIENT"), "{shown}");
    assert!(shown.contains("[HIDDEN]"), "{shown}");
    expire_deleting_lists(&mut s, 1).await;
    let log = rest_catalog::log().await;
    let ours: Vec<&Value> = log[seen_before..]
        .iter()
        .filter(|e| {
            e["path"]
                .as_str()
                .is_some_and(|p| p.contains(table.warehouse()))
        })
        .collect();
    assert!(log.iter().any(|e| e["path"] == "/v1/oauth/tokens"));
    assert!(
        ours.iter()
            .all(|e| e["auth"].as_str().is_some_and(|a| a.starts_with("Bearer ")))
    );
    assert!(
        ours.iter()
            .any(|e| e["delegation"] == "vended-credentials" && e["method"] == "GET"),
        "{ours:?}"
    );
    // Tokens revoked: the next statement gets a 401, fetches a new token once, and goes on.
    rest_catalog::expire_tokens().await;
    let listed = rows(&mut s, "SHOW TABLES FROM lake").await;
    assert_eq!(listed, ["ns.t"]);
    // A wrong secret: a clear error, the secret never shown, nothing created.
    let wrong = create
        .replace("S3CR3T-CLIENT", "WR0NG-SECRET")
        .replace("DATABASE lake", "DATABASE lake2");
    let e = s.execute(&wrong).await.unwrap_err();
    assert_eq!(e.code(), 86, "{e}");
    assert!(
        e.message().contains("refused the client credentials"),
        "{e}"
    );
    assert!(!e.to_string().contains("WR0NG-SECRET"), "{e}");
    assert!(
        !rows(&mut s, "SHOW DATABASES")
            .await
            .contains(&"lake2".to_string())
    );
    same_rows_for_kept_refs(&before, &table.read(Some("icetrim:S3CR3T-CLIENT")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_name_the_catalog_and_the_table_and_change_nothing() {
    let table = RestTable::new("py_v2_linear").await;
    let mut s = session();
    let uri = rest_catalog::uri();
    // Unreachable catalog (a closed port): NETWORK_ERROR naming the endpoint; nothing created.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        listener.local_addr().expect("addr").port()
    };
    let e = s
        .execute(&format!(
            "CREATE DATABASE down ENGINE = DataLakeCatalog('http://127.0.0.1:{closed}/v1') \
             SETTINGS catalog_type = 'rest', warehouse = 'w'"
        ))
        .await
        .unwrap_err();
    assert_eq!(e.code(), 210, "{e}");
    assert!(e.message().contains(&format!("127.0.0.1:{closed}")), "{e}");
    let e = s.execute("SHOW TABLES FROM down").await.unwrap_err();
    assert_eq!(e.code(), 81, "{e}");
    // A bearer token the catalog refuses (401): the token is never shown.
    rest_catalog::warehouse("tokened", serde_json::json!({"token": "G00D-T0KEN"})).await;
    let e = s
        .execute(&format!(
            "CREATE DATABASE refused ENGINE = DataLakeCatalog('{uri}/v1') SETTINGS \
             catalog_type = 'rest', warehouse = 'tokened', auth_header = 'Authorization: Bearer BAD-T0KEN'"
        ))
        .await
        .unwrap_err();
    assert_eq!(e.code(), 86, "{e}");
    assert!(e.message().contains("HTTP 401"), "{e}");
    assert!(!e.to_string().contains("BAD-T0KEN"), "{e}");
    // ClickHouse's gate, then an unknown setting and an unknown catalog type: nothing created.
    run(&mut s, "SET allow_database_iceberg = 0").await;
    let e = s
        .execute(&table.create("vended_credentials = 0"))
        .await
        .unwrap_err();
    assert_eq!(e.code(), 344, "{e}");
    run(&mut s, "SET allow_database_iceberg = 1").await;
    let e = s.execute(&table.create("nope = 1")).await.unwrap_err();
    assert_eq!(e.code(), 115, "{e}");
    let e = s
        .execute(
            &table
                .create("vended_credentials = 0")
                .replace("'rest'", "'bogus'"),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), 36, "{e}");
    assert!(
        !rows(&mut s, "SHOW DATABASES")
            .await
            .contains(&"lake".to_string())
    );
    // Unknown database, unknown namespace, unknown table.
    run(&mut s, &table.create("vended_credentials = 0")).await;
    let e = s
        .execute("ALTER TABLE nope.`ns.t` EXECUTE expire_snapshots()")
        .await
        .unwrap_err();
    assert_eq!(e.code(), 81, "{e}");
    for missing in ["ns.nope", "nons.t"] {
        let e = s
            .execute(&format!(
                "ALTER TABLE lake.`{missing}` EXECUTE expire_snapshots()"
            ))
            .await
            .unwrap_err();
        assert_eq!(e.code(), 60, "{missing}: {e}");
        assert!(e.message().contains(&uri), "{e}");
    }
    let files = table.files().await;
    // A truncated load answer: INCORRECT_DATA naming the catalog and the table.
    rest_catalog::fail_next(table.warehouse(), &["ns"], "t", "truncate-load").await;
    let e = s
        .execute("ALTER TABLE lake.`ns.t` EXECUTE expire_snapshots(retention_period = '0s', retain_last = 1)")
        .await
        .unwrap_err();
    assert_eq!(e.code(), 117, "{e}");
    assert!(
        e.message().contains(&uri) && e.message().contains("ns.t"),
        "{e}"
    );
    // The metadata file the catalog names is gone from storage. pyiceberg's catalog reads it on
    // load and answers 500 (RECEIVED_ERROR_FROM_REMOTE_IO_SERVER); a catalog that does not read
    // it hands us the location and icetrim's own check answers FILE_DOESNT_EXIST. Either way the
    // error names the catalog and the table, and nothing is done.
    let current =
        crate::support::rest_catalog::newest_metadata_name(files.iter().map(String::as_str))
            .expect("a metadata file")
            .to_string();
    let current_uri = table.place.root.uri(&current);
    let saved = table
        .place
        .root
        .io
        .read(&current_uri)
        .await
        .expect("read metadata");
    table
        .place
        .root
        .io
        .delete(&current_uri)
        .await
        .expect("delete metadata");
    let e = s
        .execute("ALTER TABLE lake.`ns.t` EXECUTE expire_snapshots(retention_period = '0s', retain_last = 1)")
        .await
        .unwrap_err();
    assert!([86, 107].contains(&e.code()), "{e}");
    assert!(
        e.message().contains(&uri) && e.message().contains("ns.t"),
        "{e}"
    );
    table
        .place
        .root
        .io
        .write_if_absent(&current_uri, saved)
        .await
        .expect("restore metadata");
    assert_eq!(table.files().await, files, "nothing written or deleted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn databases_persist_with_secrets_masked() {
    let table = RestTable::new("py_v2_linear").await;
    let dir = tempfile::tempdir().expect("data path");
    let create = table.create("vended_credentials = 0, catalog_credential = 'x:PERSISTED-S3CR3T'");
    // The warehouse does not ask for OAuth, but a credential makes icetrim fetch a token: give
    // the warehouse that client so CREATE succeeds.
    rest_catalog::warehouse(
        table.warehouse(),
        serde_json::json!({"client_id": "x", "client_secret": "PERSISTED-S3CR3T"}),
    )
    .await;
    {
        let engine = Engine::builder()
            .data_path(dir.path())
            .build()
            .expect("engine");
        let mut s = engine.session();
        run(&mut s, &create).await;
    }
    let engine = Engine::builder()
        .data_path(dir.path())
        .build()
        .expect("engine");
    let mut s = engine.session();
    assert_eq!(rows(&mut s, "SHOW TABLES FROM lake").await, ["ns.t"]);
    let shown = rows(&mut s, "SHOW CREATE DATABASE lake").await.join("\n");
    assert!(
        !shown.contains("PERSISTED-S3CR3T") && shown.contains("[HIDDEN]"),
        "{shown}"
    );
    let explain = rows(
        &mut s,
        "EXPLAIN ALTER TABLE lake.`ns.t` EXECUTE remove_orphan_files(dry_run = 1)",
    )
    .await
    .join("\n");
    assert!(!explain.contains("PERSISTED-S3CR3T"), "{explain}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let file = dir.path().join("databases/lake.json");
        let mode = std::fs::metadata(&file).expect("file").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    run(&mut s, "USE lake").await;
    run(&mut s, "DROP DATABASE lake").await;
    let e = s.execute("SHOW TABLES FROM lake").await.unwrap_err();
    assert_eq!(e.code(), 81);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vended_credentials_about_to_expire_are_fetched_anew() {
    let table = RestTable::new("py_v2_linear").await;
    rest_catalog::warehouse(
        table.warehouse(),
        serde_json::json!({"vend": true, "expiring": true}),
    )
    .await;
    let seen_before = rest_catalog::log().await.len();
    let mut s = session();
    table.expire_without_storage_settings(&mut s).await;
    let log = rest_catalog::log().await;
    assert!(
        log[seen_before..].iter().any(|e| e["path"]
            .as_str()
            .is_some_and(|p| p.ends_with("/tables/t/credentials"))),
        "no credentials refresh"
    );
}

/// A snapshot icetrim writes (as compaction and rewrites do: manifests, a manifest list, then
/// `add-snapshot` and `set-snapshot-ref` main) commits through the catalog, and pyiceberg and
/// ClickHouse read the new main.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_snapshot_commits_through_the_catalog() {
    use icetrim::internals::engine::Runtime;
    use icetrim::internals::iceberg::commit::{CommitOptions, CommitOutcome};
    use icetrim::internals::iceberg::txn::{
        FileChanges, Operation, PrepareOptions, Summary, prepare_commit_with,
    };

    let table = RestTable::new("py_v2_linear").await;
    let before = table.read(None);
    let target = table
        .open_target(&Runtime::default(), &icetrim::Settings::new())
        .await;
    let local = table._fixture.facts["data_files"]["a1"]
        .as_str()
        .expect("data file a1");
    let removed = table.place.path_of(local);
    let located = target.locate_newest("test").await.expect("load");
    let prepared = prepare_commit_with(
        &target.io,
        &located.metadata,
        Operation::Delete,
        FileChanges {
            added_data: Vec::new(),
            added_deletes: Vec::new(),
            removed: vec![removed],
        },
        Summary::new(),
        &PrepareOptions::default(),
    )
    .await
    .expect("prepare a snapshot");
    let new_id = prepared.snapshot.snapshot_id;
    let outcome = target
        .commit(&located, prepared.metadata, &CommitOptions::default())
        .await
        .expect("commit");
    let CommitOutcome::Committed(done) = outcome else {
        panic!("not committed: {outcome:?}");
    };
    assert_eq!(done.metadata.current_snapshot_id(), Some(new_id));
    let after = table.read(None);
    let rows_before = before["pyiceberg"]["main"][0].as_i64().expect("rows");
    let rows_after = after["pyiceberg"]["main"][0].as_i64().expect("rows");
    assert!(rows_after < rows_before, "{before} -> {after}");
    assert_eq!(after["clickhouse"][0].as_i64(), Some(rows_after));
}

/// What the other procedures commit through `MaintenanceTarget::commit_edit` (refs, properties)
/// reaches pyiceberg's catalog as valid REST updates: a new tag and branch, a moved ref, a property
/// set and one removed; a conflict-free edit commits once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_edit_sends_refs_and_properties_through_the_catalog() {
    use crate::support::catalog::{tag_branch_and_property, untag_and_unset};
    use icetrim::internals::engine::Runtime;

    let table = RestTable::new("py_v2_linear").await;
    let before = table.read(None);
    let target = table
        .open_target(&Runtime::default(), &icetrim::Settings::new())
        .await;
    let committed = target
        .commit_edit("test", |m| {
            tag_branch_and_property(m, m.snapshots()[0].snapshot_id)
        })
        .await
        .expect("commit_edit")
        .expect("a commit");
    assert!(committed.metadata.ref_named("audit_tag").is_some());
    // A second edit: drop the property and the tag, move nothing else.
    target
        .commit_edit("test", untag_and_unset)
        .await
        .expect("second commit_edit");
    let after = table.read(None);
    let refs = after["pyiceberg"].as_object().expect("refs");
    assert!(
        refs.contains_key("dev") && !refs.contains_key("audit_tag"),
        "{after}"
    );
    assert_eq!(after["pyiceberg"]["dev"], before["pyiceberg"]["main"]);
    assert_eq!(after["pyiceberg"]["main"], before["pyiceberg"]["main"]);
    let log = rest_catalog::log().await;
    let bodies: Vec<String> = log
        .iter()
        .filter(|e| {
            e["method"] == "POST"
                && e["path"]
                    .as_str()
                    .is_some_and(|p| p.contains(table.warehouse()))
        })
        .filter_map(|e| e["body"].as_str().map(str::to_string))
        .collect();
    assert_eq!(bodies.len(), 2, "{bodies:?}");
    assert!(bodies[0].contains("set-snapshot-ref") && bodies[0].contains("set-properties"));
    assert!(bodies[1].contains("remove-snapshot-ref") && bodies[1].contains("remove-properties"));
}

/// A catalog that does not answer never holds the shell: cancelling the statement (Ctrl-C) ends
/// it at once with QUERY_WAS_CANCELLED, and nothing is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_catalog_is_cancelled() {
    let table = RestTable::new("py_v2_linear").await;
    let mut s = session();
    run(&mut s, &table.create("vended_credentials = 0")).await;
    let files = table.files().await;
    rest_catalog::warehouse(table.warehouse(), serde_json::json!({"hang_loads": true})).await;
    let token = icetrim::progress::CancelToken::new();
    let canceller = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        canceller.cancel();
    });
    let started = std::time::Instant::now();
    let e = s
        .execute_with(
            "ALTER TABLE lake.`ns.t` EXECUTE expire_snapshots(retention_period = '0s', retain_last = 1)",
            &token,
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), 394, "{e}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    rest_catalog::warehouse(table.warehouse(), serde_json::json!({})).await;
    assert_eq!(table.files().await, files);
}

/// remove_orphan_files on a catalog table keeps a metadata file newer than the one the catalog
/// names (a commit in flight, a failed writer's attempt) instead of deleting or refusing, and
/// deletes a stray data file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orphans_keep_newer_metadata_files_of_a_catalog_table() {
    let table = RestTable::new("py_v2_linear").await;
    let mut s = session();
    run(&mut s, &table.create("vended_credentials = 0")).await;
    let files = table.files().await;
    let current = rest_catalog::newest_metadata_name(files.iter().map(String::as_str))
        .expect("a metadata file")
        .to_string();
    let bytes = table
        .place
        .root
        .io
        .read(&table.place.root.uri(&current))
        .await
        .expect("read");
    let newer = table.place.root.uri(&format!(
        "metadata/00099-{}.metadata.json",
        uuid::Uuid::new_v4()
    ));
    let stray = table.place.root.uri("data/stray.parquet");
    for (uri, content) in [(&newer, bytes), (&stray, bytes::Bytes::from_static(b"x"))] {
        table
            .place
            .root
            .io
            .write_if_absent(uri, content)
            .await
            .expect("write");
    }
    let now = chrono_now_text();
    let removed = rows(
        &mut s,
        &format!("ALTER TABLE lake.`ns.t` EXECUTE remove_orphan_files(older_than = '{now}')"),
    )
    .await;
    assert!(table.place.exists(&newer).await, "{removed:?}");
    assert!(!table.place.exists(&stray).await, "{removed:?}");
}

/// Storage properties in the catalog's `GET /v1/config` defaults reach the table's files when the
/// database has no storage settings and the load answer vends nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn storage_properties_from_the_catalog_config() {
    let table = RestTable::new("py_v2_linear").await;
    rest_catalog::warehouse(
        table.warehouse(),
        serde_json::json!({"config_storage": true}),
    )
    .await;
    let mut s = session();
    table.expire_without_storage_settings(&mut s).await;
}

/// The typed API reaches catalog tables too: `Table::open_catalog` and the same builders.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_api_on_a_catalog_table() {
    let table = RestTable::new("py_v2_linear").await;
    let before = table.read(None);
    let endpoint = crate::support::emulator_var("ICETRIM_S3_ENDPOINT");
    let opened = icetrim::Table::open_catalog(
        &format!("{}/v1", rest_catalog::uri()),
        &[
            ("catalog_type", "rest"),
            ("warehouse", table.warehouse()),
            ("vended_credentials", "0"),
            ("storage_endpoint", &endpoint),
            ("aws_access_key_id", "testing"),
            ("aws_secret_access_key", "testing"),
            ("region", "us-east-1"),
        ],
        "ns.t",
    )
    .await
    .expect("open the catalog table");
    let planned = opened
        .expire_snapshots()
        .retain_last(1)
        .retention_period(std::time::Duration::from_secs(0))
        .dry_run(true)
        .execute()
        .await
        .expect("dry run");
    let expired = opened
        .expire_snapshots()
        .retain_last(1)
        .retention_period(std::time::Duration::from_secs(0))
        .execute()
        .await
        .expect("expire");
    assert!(expired.metrics.deleted_manifest_lists_count > 0);
    assert_eq!(
        expired.metrics.deleted_manifest_lists_count,
        planned.metrics.deleted_manifest_lists_count
    );
    let e = icetrim::Table::open_catalog(
        &format!("{}/v1", rest_catalog::uri()),
        &[
            ("catalog_type", "rest"),
            ("warehouse", table.warehouse()),
            ("nope", "1"),
        ],
        "ns.t",
    )
    .await
    .expect_err("an unknown setting");
    assert_eq!(e.code(), 115);
    same_rows_for_kept_refs(&before, &table.read(None));
}

/// A session opens a catalog database's catalog once: `GET /v1/config` and the OAuth2 token are
/// fetched by `CREATE DATABASE` and kept for every later statement (listing, system tables,
/// EXPLAIN, procedures, ref DDL, OPTIMIZE); a revoked token is fetched again once (401), the
/// configuration is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_fetches_the_catalog_config_and_token_once() {
    let table = RestTable::new("py_v2_linear").await;
    let client = crate::support::unique("client");
    rest_catalog::warehouse(
        table.warehouse(),
        serde_json::json!({"client_id": client, "client_secret": "ONCE-S3CR3T"}),
    )
    .await;
    let counts = || async {
        let log = rest_catalog::log().await;
        let config = log
            .iter()
            .filter(|e| {
                e["path"] == "/v1/config"
                    && e["query"]
                        .as_str()
                        .is_some_and(|q| q.contains(&format!("warehouse={}", table.warehouse())))
            })
            .count();
        let tokens = log
            .iter()
            .filter(|e| {
                e["path"] == "/v1/oauth/tokens"
                    && e["body"]
                        .as_str()
                        .is_some_and(|b| b.contains(&format!("client_id={client}&")))
            })
            .count();
        (config, tokens)
    };
    let mut s = session();
    let credential = format!("vended_credentials = 0, catalog_credential = '{client}:ONCE-S3CR3T'");
    run(&mut s, &table.create(&credential)).await;
    assert_eq!(
        counts().await,
        (1, 1),
        "CREATE DATABASE reaches the catalog"
    );
    for sql in [
        "SHOW TABLES FROM lake",
        "SELECT snapshot_id FROM system.iceberg_snapshots WHERE database = 'lake' AND table = 'ns.t'",
        "EXPLAIN ALTER TABLE lake.`ns.t` EXECUTE expire_snapshots(retain_last = 1)",
        "ALTER TABLE lake.`ns.t` EXECUTE expire_snapshots(retention_period = '0s', retain_last = 2)",
        "ALTER TABLE lake.`ns.t` CREATE TAG once",
        "OPTIMIZE TABLE lake.`ns.t` MANIFEST",
        "USE lake",
        "ALTER TABLE `ns.t` EXECUTE remove_orphan_files(dry_run = 1)",
    ] {
        run(&mut s, sql).await;
    }
    assert_eq!(
        counts().await,
        (1, 1),
        "one config and one token for the whole session"
    );
    rest_catalog::expire_tokens().await;
    assert_eq!(rows(&mut s, "SHOW TABLES FROM lake").await, ["ns.t"]);
    assert_eq!(counts().await, (1, 2), "a 401 fetches one new token");
    // Another session opens its own.
    let mut other = session();
    run(&mut other, &table.create(&credential)).await;
    assert_eq!(counts().await, (2, 3));
}
