//! A DataFusion host's object store serves icetrim's S3 tables: the table is registered with a
//! bare `s3://bucket/path` (no endpoint, no credentials: icetrim's own client would go to AWS),
//! the host registers a store for the bucket in its `RuntimeEnv` (the emulator's, counted), and
//! icetrim's expiry and metadata tables read through it. Also: the host's context reads the
//! maintenance log live.

use std::sync::Arc;

use icetrim::datafusion::arrow::array::{Array, AsArray};
use icetrim::datafusion::arrow::datatypes::Int64Type;
use icetrim::datafusion::prelude::SessionContext;
use icetrim::engine::Engine;
use icetrim::internals::generate::{GenerateOptions, generate};
use icetrim::internals::iceberg::spec::FormatVersion;
use icetrim::internals::io::{CountingStore, FileIO, RequestCounter};
use object_store::ObjectStore;
use object_store::aws::AmazonS3Builder;

use crate::support::{emulator_var, s3_emulator_options, unique};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hosts_registered_store_serves_icetrims_s3_tables() {
    let bucket = emulator_var("ICETRIM_S3_BUCKET");
    let folder = unique("host-store");
    let location = format!("s3://{bucket}/{folder}");
    let now_ms = icetrim::Clock::now_ms(&icetrim::SystemClock);
    let mut opts = GenerateOptions::new(&location, FormatVersion::V2, 6, 2, 11, now_ms);
    opts.write_data_files = false;
    generate(&FileIO::new(s3_emulator_options()), &opts)
        .await
        .expect("generate on the emulator");

    let emulator = AmazonS3Builder::new()
        .with_bucket_name(&bucket)
        .with_endpoint(emulator_var("ICETRIM_S3_ENDPOINT"))
        .with_region("us-east-1")
        .with_access_key_id("testing")
        .with_secret_access_key("testing")
        .with_allow_http(true)
        .build()
        .expect("the host's S3 store");
    let counter = RequestCounter::new();
    let store: Arc<dyn ObjectStore> = Arc::new(CountingStore::new(
        Arc::new(emulator),
        Arc::clone(&counter),
        1000,
    ));
    let ctx = SessionContext::new();
    let url = url::Url::parse(&format!("s3://{bucket}")).expect("bucket url");
    ctx.register_object_store(&url, store);
    let engine = Engine::builder().build().expect("engine");
    icetrim::host::install(&ctx, &engine).expect("installs");

    let frames = icetrim::host::sql(
        &ctx,
        &format!(
            "CREATE TABLE t ENGINE = IcebergS3('{location}/');
             ALTER TABLE t EXECUTE expire_snapshots(retain_last = 2, retention_period = '0s', dry_run = 1);
             SELECT count(*) AS snapshots FROM icetrim.system.iceberg_snapshots WHERE \"table\" = 't'"
        ),
    )
    .await
    .expect("icetrim runs through the host's store");
    let metrics = frames[1].clone().collect().await.expect("metric rows");
    let names = metrics[0].column(0).as_string::<i32>();
    let values = metrics[0].column(1).as_primitive::<Int64Type>();
    let lists = (0..names.len())
        .find(|&i| names.value(i) == "deleted_manifest_lists_count")
        .map(|i| values.value(i));
    assert_eq!(lists, Some(4), "six snapshots, two kept");
    let snapshots = frames[2].clone().collect().await.expect("metadata table");
    let snapshots = snapshots[0].column(0).as_primitive::<Int64Type>();
    assert_eq!(snapshots.value(0), 6);
    let requests = counter.snapshot();
    assert!(
        requests.get >= 7,
        "the lists and metadata came through the host: {requests:?}"
    );
}

/// A host's context reads the maintenance log as it is when each query runs: a `SYSTEM MAINTAIN`
/// sent through `host::sql` after `install` shows in `icetrim.system.iceberg_maintenance_log`,
/// its metrics in `icetrim.system.iceberg_maintenance_metrics`, its rows typed in
/// `Engine::maintenance_log`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_reads_the_maintenance_log_live() {
    let dir = tempfile::tempdir().expect("temp dir");
    let location = dir.path().join("t").display().to_string();
    let now_ms = icetrim::Clock::now_ms(&icetrim::SystemClock);
    let mut opts = GenerateOptions::new(&location, FormatVersion::V2, 6, 1, 3, now_ms);
    opts.parquet_data = true;
    generate(&FileIO::local(), &opts)
        .await
        .expect("generate a local table");
    let ctx = SessionContext::new();
    let engine = Engine::builder().build().expect("engine");
    icetrim::host::install(&ctx, &engine).expect("installs");
    let count = "SELECT count(*) FROM icetrim.system.iceberg_maintenance_log \
                 WHERE procedure = 'rewrite_data_files' AND status = 'ok'";
    let before = ctx.sql(count).await.expect("plans").collect().await;
    let before = before.expect("runs")[0]
        .column(0)
        .as_primitive::<Int64Type>()
        .value(0);
    assert_eq!(before, 0);
    icetrim::host::sql(
        &ctx,
        &format!(
            "CREATE TABLE t ENGINE = IcebergLocal('{location}');
             SYSTEM MAINTAIN TABLE t;"
        ),
    )
    .await
    .expect("maintains through the host");
    let after = ctx.sql(count).await.expect("plans").collect().await;
    let after = after.expect("runs")[0]
        .column(0)
        .as_primitive::<Int64Type>()
        .value(0);
    assert_eq!(after, 1);
    let runs = ctx
        .sql(
            "SELECT value FROM icetrim.system.iceberg_maintenance_metrics \
             WHERE name = 'icetrim_maintain_runs'",
        )
        .await
        .expect("plans")
        .collect()
        .await
        .expect("runs");
    let value = runs[0]
        .column(0)
        .as_primitive::<icetrim::datafusion::arrow::datatypes::Float64Type>()
        .value(0);
    assert_eq!(value, 1.0);
    // The same rows, typed, from the engine.
    let logged = engine.maintenance_log();
    let compaction = logged
        .iter()
        .find(|e| e.procedure == "rewrite_data_files")
        .expect("the compaction's row");
    assert_eq!(compaction.status, "ok");
    assert!(!compaction.dry_run);
    let rewritten = compaction
        .metrics
        .iter()
        .find(|(name, _)| name == "rewritten_data_files_count");
    let rewritten = rewritten.map(|(_, n)| *n).expect("files rewritten");
    assert!(rewritten >= 2, "{compaction:?}");
    let reason = format!("rewritten_data_files_count={rewritten}");
    assert!(compaction.reason.contains(&reason), "{compaction:?}");
    assert!(logged.iter().all(|e| e.run_id == compaction.run_id));
}
