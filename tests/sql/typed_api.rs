//! The typed Rust API (`icetrim::Table` and its builders) on real pyiceberg tables, without SQL:
//! the same metrics as the SQL statements give on an identical twin, and a table pyiceberg still
//! reads afterwards.

use std::sync::Arc;
use std::time::Duration;

use icetrim::FixedClock;
use icetrim::engine::{Engine, Metrics, QueryResult};
use icetrim::{ErrorKind, ExpireMetrics, OrphanMetrics, StorageOptions, Table};

use crate::support::expire::{DAY, NOW, files_on_disk, inspect, make_fixture, snapshot_ids};

/// `NOW - 1 day` as SQL text in UTC (`NOW` is 2025-06-15 15:06:40 UTC).
const DAY_BEFORE_NOW: &str = "2025-06-14 15:06:40";

fn sql_expire(result: &QueryResult) -> ExpireMetrics {
    match result.metrics {
        Some(Metrics::Expire(m)) => m,
        ref other => panic!("not an expire result: {other:?}"),
    }
}

fn sql_orphans(result: &QueryResult) -> OrphanMetrics {
    match result.metrics {
        Some(Metrics::Orphans(m)) => m,
        ref other => panic!("not an orphan result: {other:?}"),
    }
}

#[tokio::test]
async fn builders_match_sql_on_a_pyiceberg_twin_and_pyiceberg_still_reads() {
    let by_api = make_fixture("py_v2_deletes", NOW, true);
    let by_sql = make_fixture("py_v2_deletes", NOW, true);
    let api_dir = by_api.table_dir();
    let before = inspect(&api_dir).await;
    let files_before = files_on_disk(&api_dir);
    let old_orphans: Vec<String> = by_api.facts["orphans"]
        .as_array()
        .expect("the fixture lists its orphans")
        .iter()
        .filter(|o| o["kind"] == "old")
        .map(|o| o["path"].as_str().expect("orphan path").to_string())
        .collect();
    assert!(!old_orphans.is_empty(), "{}", by_api.facts);
    assert!(
        old_orphans
            .iter()
            .all(|path| std::path::Path::new(path).exists())
    );

    // The SQL path, on the twin.
    let engine = Engine::builder()
        .clock(FixedClock::new(NOW))
        .build()
        .unwrap();
    let mut session = engine.session();
    let sql = format!(
        "SET session_timezone = 'UTC';
         CREATE TABLE t ENGINE = IcebergLocal('{}');
         ALTER TABLE t EXECUTE expire_snapshots(retention_period = '1d', retain_last = 1);
         ALTER TABLE t EXECUTE remove_orphan_files(older_than = '{DAY_BEFORE_NOW}')",
        by_sql.table_dir().display()
    );
    let results = session.execute(&sql).await.unwrap();
    let (sql_expired, sql_removed) = (sql_expire(&results[2]), sql_orphans(&results[3]));

    // The typed API, on the other twin.
    let table = Table::open(api_dir.to_str().unwrap(), StorageOptions::default())
        .unwrap()
        .clock(FixedClock::new(NOW));
    let planned = table
        .expire_snapshots()
        .retention_period(Duration::from_millis(DAY as u64))
        .retain_last(1)
        .dry_run(true)
        .execute()
        .await
        .unwrap();
    assert!(planned.metrics.dry_run);
    assert_eq!(
        files_on_disk(&api_dir),
        files_before,
        "a dry run deletes nothing"
    );
    assert_eq!(
        snapshot_ids(&inspect(&api_dir).await),
        snapshot_ids(&before),
        "a dry run changes nothing"
    );
    let expired = table
        .expire_snapshots()
        .retention_period(Duration::from_millis(DAY as u64))
        .retain_last(1)
        .execute()
        .await
        .unwrap();
    assert_eq!(expired.metrics, sql_expired);
    assert_eq!(
        expired.metrics,
        ExpireMetrics {
            dry_run: false,
            ..planned.metrics
        }
    );
    assert!(
        expired.metrics.deleted_manifest_lists_count > 0,
        "{:?}",
        expired.metrics
    );
    let events = Arc::new(std::sync::Mutex::new(0usize));
    let seen = events.clone();
    let removed = table
        .remove_orphan_files()
        .older_than(DAY_BEFORE_NOW)
        .time_zone("UTC")
        .progress(Arc::new(move |_: &icetrim::progress::ProgressEvent| {
            *seen.lock().unwrap() += 1
        }))
        .execute()
        .await
        .unwrap();
    assert_eq!(removed.metrics, sql_removed);
    let deleted: i64 = removed.metrics.named_values()[..7]
        .iter()
        .map(|(_, n)| n)
        .sum();
    assert_eq!(deleted, old_orphans.len() as i64, "{:?}", removed.metrics);
    assert!(*events.lock().unwrap() > 0, "progress reached the sink");
    assert!(
        old_orphans
            .iter()
            .all(|path| !std::path::Path::new(path).exists()),
        "old orphans are gone"
    );

    // pyiceberg reads what is left: fewer snapshots, the same current one.
    let after = inspect(&api_dir).await;
    assert_eq!(after["current_snapshot_id"], before["current_snapshot_id"]);
    assert!(snapshot_ids(&after).len() < snapshot_ids(&before).len());
    assert!(snapshot_ids(&after).is_subset(&snapshot_ids(&before)));
    assert_eq!(
        snapshot_ids(&after).len(),
        snapshot_ids(&inspect(&by_sql.table_dir()).await).len(),
        "both twins keep as many snapshots"
    );
}

fn kind<T>(result: icetrim::Result<T>) -> ErrorKind {
    match result {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.kind(),
    }
}

#[tokio::test]
async fn builders_refuse_what_sql_refuses_before_touching_the_table() {
    let fx = make_fixture("py_v2_linear", NOW, false);
    let dir = fx.table_dir();
    let on_disk = files_on_disk(&dir);
    let table = Table::open(dir.to_str().unwrap(), StorageOptions::default())
        .unwrap()
        .clock(FixedClock::new(NOW));
    let refused = table.expire_snapshots().retain_last(0).execute().await;
    assert_eq!(kind(refused), ErrorKind::BadArguments);
    let refused = table
        .expire_snapshots()
        .snapshot_ids([1])
        .retain_last(2)
        .execute()
        .await;
    assert_eq!(kind(refused), ErrorKind::BadArguments);
    let refused = table
        .remove_orphan_files()
        .older_than("2999-01-01 00:00:00")
        .execute()
        .await;
    assert_eq!(kind(refused), ErrorKind::BadArguments);
    let refused = table
        .remove_orphan_files()
        .location("../other")
        .execute()
        .await;
    assert_eq!(kind(refused), ErrorKind::BadArguments);
    let refused = table
        .remove_orphan_files()
        .time_zone("Nowhere/Zone")
        .execute()
        .await;
    assert!(refused.is_err());
    // A cancelled token stops the run before it writes: nothing changes.
    let token = icetrim::progress::CancelToken::new();
    token.cancel();
    let cancelled = table
        .expire_snapshots()
        .retain_last(1)
        .retention_period(Duration::ZERO)
        .cancel_token(&token)
        .execute()
        .await;
    assert_eq!(cancelled.unwrap_err().code(), 394);
    // EXPLAIN plans and changes nothing.
    let plan = table
        .remove_orphan_files()
        .location("./data/")
        .explain()
        .await
        .unwrap();
    assert!(plan.explain.is_some());
    assert_eq!(files_on_disk(&dir), on_disk);
    assert!(Table::open("relative/path", StorageOptions::default()).is_err());
}

/// `Table::open` on object-store URIs with the storage options the SQL engines build: the demo
/// table on the S3 and Azure emulators, expired through the builder.
#[tokio::test]
async fn builders_open_object_store_tables() {
    use crate::support::{
        azure_emulator, azure_emulator_options, s3_emulator, s3_emulator_options,
    };
    use icetrim::internals::generate::demo_table;

    let now = crate::support::fixtures::now_ms();
    for ((io, location), options) in [
        (s3_emulator("typed-api"), s3_emulator_options()),
        (azure_emulator("typed-api"), azure_emulator_options()),
    ] {
        demo_table(&io, &location, now).await.unwrap();
        let table = Table::open(&location, options).unwrap();
        let expire = || {
            table
                .expire_snapshots()
                .retention_period(Duration::from_millis(DAY as u64))
                .retain_last(1)
                .concurrency(4)
                .commit_attempts(2)
        };
        let expired = expire().execute().await.unwrap();
        assert!(
            expired.metrics.deleted_manifest_lists_count > 0,
            "{location}: {:?}",
            expired.metrics
        );
        let again = expire().dry_run(true).execute().await.unwrap();
        assert_eq!(again.metrics.deleted_manifest_lists_count, 0, "{location}");
    }
}

/// `Table::rewrite_manifests` gives what `ALTER TABLE … EXECUTE rewrite_manifests(…)` gives on a
/// twin, and `Table::expire_snapshots().clean_expired_metadata(true)` the nine rows.
#[tokio::test]
async fn rewrite_manifests_builder_matches_sql() {
    let by_api = make_fixture("py_v2_linear", NOW, false);
    let by_sql = make_fixture("py_v2_linear", NOW, false);
    let table = Table::open(
        by_api.table_dir().to_string_lossy(),
        StorageOptions::default(),
    )
    .unwrap()
    .clock(FixedClock::new(NOW));
    let planned = table.rewrite_manifests().explain().await.unwrap();
    let rows = planned.explain.expect("EXPLAIN rows");
    assert_eq!(rows.iter().filter(|r| r.kind == "manifest").count(), 6);
    assert_eq!(rows.iter().filter(|r| r.kind == "new_manifest").count(), 1);
    let bad = table.rewrite_manifests().target_manifest_size_bytes(0);
    assert_eq!(
        bad.execute().await.unwrap_err().kind(),
        ErrorKind::BadArguments
    );
    let dry = table
        .rewrite_manifests()
        .dry_run(true)
        .execute()
        .await
        .unwrap();
    let done = table
        .rewrite_manifests()
        .spec_id(0)
        .execute()
        .await
        .unwrap();
    assert_eq!(done.metrics.rewritten_manifests_count, 6);
    assert_eq!(done.metrics.added_manifests_count, 1);
    assert_eq!(dry.metrics.rewritten_manifests_count, 6);
    assert!(done.snapshot_id.is_some());

    let engine = Engine::builder()
        .clock(FixedClock::new(NOW))
        .build()
        .unwrap();
    let mut session = engine.session();
    let sql = format!(
        "CREATE TABLE t ENGINE = IcebergLocal('{}'); \
         ALTER TABLE t EXECUTE rewrite_manifests(spec_id = 0)",
        by_sql.table_dir().display()
    );
    let results = session.execute(&sql).await.unwrap();
    match results.last().unwrap().metrics {
        Some(Metrics::RewriteManifests(m)) => assert_eq!(m, done.metrics),
        ref other => panic!("{other:?}"),
    }

    let cleaned = table
        .expire_snapshots()
        .clean_expired_metadata(true)
        .dry_run(true)
        .execute()
        .await
        .unwrap();
    assert_eq!(cleaned.metrics.removed_schemas_count, Some(0));
    assert_eq!(cleaned.metrics.rows().len(), 9);
}

/// `Session::maintain_table` builds the `SYSTEM MAINTAIN` statement SQL parses and runs it through
/// the same path: its EXPLAIN and run rows are SQL's rows on a twin, typed; a bad setting is
/// refused as SQL refuses it.
#[tokio::test]
async fn maintain_builder_matches_sql() {
    let by_api = make_fixture("py_v2_linear", NOW, false);
    let by_sql = make_fixture("py_v2_linear", NOW, false);
    let engine = Engine::builder()
        .clock(FixedClock::new(NOW))
        .build()
        .unwrap();
    let mut api = engine.session();
    let create = |dir: &std::path::Path| {
        format!("CREATE TABLE t ENGINE = IcebergLocal('{}')", dir.display())
    };
    api.execute(&create(&by_api.table_dir())).await.unwrap();
    let cells = |rows: &[icetrim::engine::MaintainRow]| -> Vec<String> {
        rows.iter()
            .map(|r| {
                [
                    r.database.as_str(),
                    &r.table,
                    &r.procedure,
                    &r.status,
                    &r.reason,
                    &r.detail,
                ]
                .join("\t")
            })
            .collect()
    };
    let builder = api
        .maintain_table("t")
        .setting("iceberg_maintain_compact_min_input_files", "6");
    assert_eq!(
        builder.sql(),
        "SYSTEM MAINTAIN TABLE t SETTINGS iceberg_maintain_compact_min_input_files = '6'"
    );
    let explained = builder.explain().await.unwrap();
    let done = api.maintain_table("t").run().await.unwrap();
    let bad = api
        .maintain_table("t")
        .setting("retain_last", "1")
        .run()
        .await;
    assert_eq!(bad.unwrap_err().kind(), ErrorKind::UnknownSetting);

    let sql_engine = Engine::builder()
        .clock(FixedClock::new(NOW))
        .build()
        .unwrap();
    let mut sql = sql_engine.session();
    sql.execute(&create(&by_sql.table_dir())).await.unwrap();
    let lines = |result: &QueryResult| -> Vec<String> {
        result
            .rows
            .iter()
            .map(|r| {
                r.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("\t")
            })
            .collect()
    };
    let sql_explained = sql
        .execute(
            "EXPLAIN SYSTEM MAINTAIN TABLE t SETTINGS iceberg_maintain_compact_min_input_files = 6",
        )
        .await
        .unwrap();
    let sql_done = sql.execute("SYSTEM MAINTAIN TABLE t").await.unwrap();
    assert_eq!(cells(&explained), lines(&sql_explained[0]));
    assert_eq!(cells(&done), lines(&sql_done[0]));
    let compacted = done
        .iter()
        .find(|r| r.procedure == "rewrite_data_files")
        .unwrap();
    assert_eq!(compacted.status, "ok", "{done:#?}");
}

/// Cancelling a `SYSTEM MAINTAIN` run stops it between procedures: the token is cancelled at the
/// compaction's commit; expiry (the next due procedure) never runs, the table stays readable, and
/// the statement answers QUERY_WAS_CANCELLED.
#[tokio::test]
async fn maintain_run_stops_between_procedures_when_cancelled() {
    use icetrim::internals::maintain::target::BeforeCommit;
    use icetrim::progress::CancelToken;
    let fixture = make_fixture("py_v2_linear", NOW, false);
    let token = CancelToken::new();
    let at_commit = token.clone();
    let hook = BeforeCommit(Arc::new(move || {
        at_commit.cancel();
        Box::pin(async {})
    }));
    let engine = Engine::builder()
        .clock(FixedClock::new(NOW))
        .before_commit(hook)
        .build()
        .unwrap();
    let mut session = engine.session();
    let create = format!(
        "CREATE TABLE t ENGINE = IcebergLocal('{}')",
        fixture.table_dir().display()
    );
    session.execute(&create).await.unwrap();
    let before = snapshot_ids(&inspect(&fixture.table_dir()).await);
    let error = session
        .execute_with("SYSTEM MAINTAIN TABLE t", &token)
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::QueryWasCancelled, "{error}");
    // pyiceberg reads the table (inspect fails otherwise) and every snapshot is still there.
    let after = snapshot_ids(&inspect(&fixture.table_dir()).await);
    for id in &before {
        assert!(after.contains(id), "snapshot {id} expired after the cancel");
    }
    // The compaction's commit, made when the cancel came, stands.
    assert_eq!(after.len(), before.len() + 1, "{after:?}");
}
