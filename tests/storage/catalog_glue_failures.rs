//! Glue commits when things go wrong, through `tests/py/glue_proxy.py` in front of moto's Glue
//! (what moto lacks: VersionId enforcement, a concurrent writer between icetrim's `GetTable` and
//! `UpdateTable`, lost answers, refused credentials), and the errors of unknown, foreign and broken
//! tables and unreachable endpoints.

use icetrim::error::ErrorKind;
use serde_json::json;

use crate::glue_support::*;
use crate::support::fixtures::run_python_json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrent_commit_between_get_table_and_update_table_is_a_conflict_and_both_stay() {
    let (fx, proxy, mut s) = behind_proxy(json!({"conflicts": 1})).await;
    let before = fx.read();
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
    // Someone edits the Glue table before each of our UpdateTables: VersionId moves every time.
    let (fx, proxy, mut s) = behind_proxy(json!({"bumps": 5})).await;
    rows(&mut s, "SET iceberg_commit_max_attempts = 2").await;
    let files_before = fx.files().await;
    let e = error_of(&mut s, &format!("ALTER TABLE {} {EXPIRE}", fx.sql_name())).await;
    assert_eq!(e.kind(), ErrorKind::LimitExceeded, "{e}");
    let stats = proxy.stats().await;
    assert_eq!(stats["ops"]["UpdateTable"], 2, "{stats}");
    assert_eq!(stats["bumps_injected"], 2, "{stats}");
    // Nothing was deleted and neither refused attempt left its metadata file behind.
    assert_eq!(fx.files().await, files_before);
    let after = fx.read();
    assert_eq!(after["metadata_location"], fx.facts["metadata_location"]);
    assert_eq!(after["glue_parameters"]["bumped_by_proxy"], "2");
    same_rows(&fx.facts, &after);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_update_answer_is_settled_by_get_table() {
    let (fx, proxy, mut s) = behind_proxy(json!({"drop_update_response": 1})).await;
    let before = fx.read();
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
    // The update is lost on the way, and Glue then fails every confirming GetTable.
    let (fx, proxy, mut s) =
        behind_proxy(json!({"swallow_update": 1, "fail_get_table_after_loss": 20})).await;
    let before = fx.read();
    let files_before = fx.files().await;
    let text = expire_of_unknown_outcome(&mut s, &fx).await;
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
    // The update lands, its answer is lost, and the confirming GetTables fail.
    let (fx, proxy, mut s) =
        behind_proxy(json!({"drop_update_response": 1, "fail_get_table_after_loss": 20})).await;
    let before = fx.read();
    let files_before = fx.files().await;
    expire_of_unknown_outcome(&mut s, &fx).await;
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

/// The `(procedure, decision, reason)` of each row of a `SYSTEM MAINTAIN` EXPLAIN.
fn decisions(rows: &[String]) -> Vec<(String, String, String)> {
    rows.iter()
        .map(|r| {
            let c: Vec<&str> = r.split('\t').collect();
            (c[2].to_string(), c[3].to_string(), c[4].to_string())
        })
        .collect()
}

/// A Glue table whose compaction and retention optimizers are on: `SYSTEM MAINTAIN` leaves
/// compaction and expiry to Glue (skipped, naming the optimizer) unless forced; an optimizer that
/// is off, and a Glue that cannot say (moto has no `BatchGetTableOptimizer`), leave them to
/// icetrim.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn glue_table_optimizers_that_are_on_take_their_procedures() {
    let (fx, proxy, mut s) = behind_proxy(json!({})).await;
    let key = format!("{}.{}", fx.database, fx.table);
    let optimizers = json!({"compaction": true, "retention": true, "orphan_file_deletion": false});
    proxy.mode(json!({"optimizers": {key: optimizers}})).await;
    let explain = format!(
        "EXPLAIN SYSTEM MAINTAIN TABLE {} SETTINGS iceberg_maintain_orphans_enabled = 1",
        fx.sql_name()
    );
    let by_glue = decisions(&rows(&mut s, &explain).await);
    let skipped = |procedure: &str, by: &str| {
        (
            procedure.to_string(),
            "skipped".to_string(),
            format!("maintained by {by} (set iceberg_maintain_force = 1 to maintain it anyway)"),
        )
    };
    assert!(
        by_glue.contains(&skipped(
            "rewrite_data_files",
            "the Glue compaction optimizer"
        )),
        "{by_glue:#?}"
    );
    assert!(
        by_glue.contains(&skipped(
            "expire_snapshots",
            "the Glue snapshot retention optimizer"
        )),
        "{by_glue:#?}"
    );
    for (procedure, decision, _) in &by_glue {
        if procedure == "rewrite_manifests" || procedure == "remove_orphan_files" {
            assert_ne!(decision, "skipped", "{by_glue:#?}");
        }
    }
    let stats = proxy.stats().await;
    assert_eq!(stats["ops"]["BatchGetTableOptimizer"], 1, "{stats}");
    // Forced: icetrim plans them all.
    let forced = decisions(&rows(&mut s, &format!("{explain}, iceberg_maintain_force = 1")).await);
    assert!(forced.iter().all(|(_, d, _)| d != "skipped"), "{forced:#?}");
    // Straight on moto, which cannot answer: icetrim maintains the table.
    let mut direct = session();
    rows(&mut direct, &create_database(&moto(), "testing")).await;
    let unknown = decisions(&rows(&mut direct, &explain).await);
    assert_eq!(unknown.len(), 4, "{unknown:#?}");
    assert!(
        unknown.iter().all(|(_, d, _)| d != "skipped"),
        "{unknown:#?}"
    );
    assert_eq!(unknown, forced);
}
