//! Scenario 8: keeping a catalog lean. `SYSTEM MAINTAIN DATABASE` over N tables of the test REST
//! catalog on the S3 emulator, every request through the latency layer (30 ms to the first byte,
//! 100 MB/s a stream, 1 GB/s in all), against the same procedures run one statement at a time
//! (`ALTER TABLE … EXECUTE …`, table after table, as a cron loop around single statements does)
//! on an identical second set of N tables. Both sets are generated with the same seeds: fast
//! appends and some deletes, overwrites and merges over 10 days, small real Parquet files
//! (compaction and expiry due). Needs the emulators and the test REST catalog
//! (`scripts/emulators.sh start; set -a; source target/emulators.env; set +a`), else it is skipped.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use icetrim::engine::{Engine, Session};
use icetrim::internals::generate::{GenerateOptions, generate};
use icetrim::internals::iceberg::spec::FormatVersion;
use icetrim::internals::io::{FileIO, Latency, LatencyProfile, RequestCounter};

/// One fleet size measured both ways.
pub struct FleetRun {
    pub tables: usize,
    pub parallel: u64,
    pub maintain_seconds: f64,
    /// A table's time in the run (first decision to last procedure's end): median, 95th percentile.
    pub per_table_p50: f64,
    pub per_table_p95: f64,
    pub one_by_one_seconds: f64,
    pub statements: usize,
    /// Requests the latency layer charged, each way.
    pub maintain_requests: u64,
    pub one_by_one_requests: u64,
    /// Tables whose procedures did not report the same metrics both ways.
    pub differing: usize,
}

impl FleetRun {
    pub fn line(&self) -> String {
        format!(
            "| {} | {} | {:.1} s ({:.2} s a table) | {:.2} s / {:.2} s | {:.1} s ({:.2} s a table, {} statements) | {:.2}× | {} / {} | {} |",
            self.tables,
            self.parallel,
            self.maintain_seconds,
            self.maintain_seconds / self.tables as f64,
            self.per_table_p50,
            self.per_table_p95,
            self.one_by_one_seconds,
            self.one_by_one_seconds / self.tables as f64,
            self.statements,
            self.one_by_one_seconds / self.maintain_seconds,
            self.maintain_requests,
            self.one_by_one_requests,
            self.differing,
        )
    }
}

/// The header of [`FleetRun::line`].
pub const HEADER: &str = "| tables | parallel | SYSTEM MAINTAIN DATABASE | a table's time (p50 / p95) \
                          | one statement at a time | ratio | requests (maintain / one by one) | \
                          tables differing |\n|---|---|---|---|---|---|---|---|";

/// The emulators' settings: S3 endpoint, bucket, REST catalog URL.
pub fn emulators() -> Option<(String, String, String)> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    Some((
        var("ICETRIM_S3_ENDPOINT")?,
        var("ICETRIM_S3_BUCKET")?,
        var("ICETRIM_REST_URI")?,
    ))
}

/// Table `i` of a set: 12 commits of 2 small Parquet files over 10 days.
fn table_options(location: String, i: usize, now_ms: i64) -> GenerateOptions {
    let mut opts = GenerateOptions::new(
        &location,
        FormatVersion::V2,
        12,
        2,
        1_000 + i as u64,
        now_ms,
    );
    opts.parquet_data = true;
    opts.rows_per_file = Some(100);
    opts.span_ms = 10 * 86_400_000;
    opts
}

/// The test REST catalog's admin hook `path` with `body`.
async fn admin(
    client: &reqwest::Client,
    rest: &str,
    path: &str,
    body: serde_json::Value,
) -> Result<(), String> {
    let answer = client
        .post(format!("{rest}/admin/{path}"))
        .header("Content-Type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| format!("REST catalog admin {path}: {e}"))?;
    if !answer.status().is_success() {
        return Err(format!("REST catalog admin {path}: {}", answer.status()));
    }
    Ok(())
}

/// Generate `n` tables under `base` and register them as `ns.t0001…` of a new warehouse; its
/// name.
async fn build_set(
    io: &FileIO,
    rest: &str,
    base: &str,
    n: usize,
    now_ms: i64,
) -> Result<String, String> {
    let generated: Vec<Result<(String, String), String>> = futures::stream::iter(0..n)
        .map(|i| async move {
            let name = format!("t{i:04}");
            let opts = table_options(format!("{base}/{name}"), i, now_ms);
            let table = generate(io, &opts).await.map_err(|e| e.to_string())?;
            Ok((name, table.metadata_path))
        })
        .buffer_unordered(8)
        .collect()
        .await;
    let warehouse = format!("fleet-{}", uuid::Uuid::new_v4().simple());
    let client = reqwest::Client::new();
    admin(
        &client,
        rest,
        "warehouse",
        serde_json::json!({"name": warehouse}),
    )
    .await?;
    for table in generated {
        let (name, metadata) = table?;
        let body = serde_json::json!({"warehouse": warehouse, "namespace": ["ns"],
                                      "name": name, "metadata_location": metadata});
        admin(&client, rest, "register", body).await?;
    }
    Ok(warehouse)
}

/// A session whose every table request goes through `io`, with database `db` on `warehouse`
/// (and its engine, which keeps the maintenance log).
async fn session(
    io: FileIO,
    rest: &str,
    endpoint: &str,
    warehouse: &str,
    db: &str,
) -> Result<(Engine, Session), String> {
    let engine = Engine::builder()
        .setting("session_timezone", "UTC")
        .io_override(io)
        .build()
        .map_err(|e| e.to_string())?;
    let mut s = engine.session();
    let create = format!(
        "CREATE DATABASE {db} ENGINE = DataLakeCatalog('{rest}/v1') SETTINGS catalog_type = 'rest', \
         warehouse = '{warehouse}', storage_endpoint = '{endpoint}', aws_access_key_id = 'testing', \
         aws_secret_access_key = 'testing', region = 'us-east-1', vended_credentials = 0"
    );
    s.execute(&create).await.map_err(|e| e.to_string())?;
    Ok((engine, s))
}

/// The statement that runs `procedure` as the policy did.
fn statement(db: &str, table: &str, procedure: &str) -> Option<String> {
    let call = match procedure {
        "rewrite_data_files" => "rewrite_data_files(min_input_files = 5)",
        "rewrite_manifests" => "rewrite_manifests()",
        "expire_snapshots" => "expire_snapshots()",
        _ => return None,
    };
    Some(format!("ALTER TABLE {db}.`{table}` EXECUTE {call}"))
}

/// A statement's metrics as `name=value, …` (its non-zero ones, as `SYSTEM MAINTAIN` shows them).
fn nonzero(result: &icetrim::engine::QueryResult) -> String {
    result
        .rows
        .iter()
        .filter(|r| r.len() == 2 && r[0].to_string() != "dry_run" && r[1].to_string() != "0")
        .map(|r| format!("{}={}", r[0], r[1]))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Measure `n` tables both ways.
pub async fn run(n: usize, now_ms: i64) -> Result<Option<FleetRun>, String> {
    let Some((endpoint, bucket, rest)) = emulators() else {
        return Ok(None);
    };
    let io = crate::inproc::emulator_io(&endpoint);
    let root = format!("s3://{bucket}/fleet-{}", uuid::Uuid::new_v4().simple());
    let started = Instant::now();
    let set_a = build_set(&io, &rest, &format!("{root}/a"), n, now_ms).await?;
    let set_b = build_set(&io, &rest, &format!("{root}/b"), n, now_ms).await?;
    eprintln!(
        "  8. {n} tables × 2 generated and registered in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let slow = |latency: &Arc<Latency>| {
        io.with_request_counter(RequestCounter::new())
            .with_latency(Arc::clone(latency))
    };

    // One statement for the whole database.
    let latency_a = Latency::new(LatencyProfile::nearby_s3());
    let (engine_a, mut a) = session(slow(&latency_a), &rest, &endpoint, &set_a, "fleet").await?;
    let started = Instant::now();
    let results = a
        .execute("SYSTEM MAINTAIN DATABASE fleet")
        .await
        .map_err(|e| e.to_string())?;
    let maintain_seconds = started.elapsed().as_secs_f64();
    let answer = results.last().ok_or("no answer")?;
    let mut done: BTreeMap<(String, String), String> = BTreeMap::new();
    for row in &answer.rows {
        if row[3].to_string() == "ok" {
            done.insert((row[1].to_string(), row[2].to_string()), row[4].to_string());
        }
    }
    let mut spans: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    for e in engine_a.maintenance_log() {
        let span = spans
            .entry(e.table.clone())
            .or_insert((e.start_time_ms, e.end_time_ms));
        span.0 = span.0.min(e.start_time_ms);
        span.1 = span.1.max(e.end_time_ms);
    }
    let mut per_table: Vec<f64> = spans
        .values()
        .map(|(s, e)| (e - s) as f64 / 1000.0)
        .collect();
    per_table.sort_by(f64::total_cmp);
    let pick = |q: f64| {
        per_table
            .get(((per_table.len() as f64 - 1.0) * q).round() as usize)
            .copied()
            .unwrap_or(0.0)
    };

    // The same procedures, one statement at a time, on the second set.
    let latency_b = Latency::new(LatencyProfile::nearby_s3());
    let (_engine_b, mut b) = session(slow(&latency_b), &rest, &endpoint, &set_b, "fleet").await?;
    let mut differing = std::collections::BTreeSet::new();
    let mut statements = 0;
    let started = Instant::now();
    for ((table, procedure), metrics) in &done {
        let Some(sql) = statement("fleet", table, procedure) else {
            continue;
        };
        let results = b.execute(&sql).await.map_err(|e| format!("{sql}: {e}"))?;
        statements += 1;
        let result = results.last().ok_or("no answer")?;
        if nonzero(result) != *metrics {
            differing.insert(table.clone());
            eprintln!(
                "  {table} {procedure}: maintain {metrics}, statement {}",
                nonzero(result)
            );
        }
    }
    let one_by_one_seconds = started.elapsed().as_secs_f64();
    let parallel = icetrim::Settings::new().maintain_max_parallel_tables();
    Ok(Some(FleetRun {
        tables: n,
        parallel,
        maintain_seconds,
        per_table_p50: pick(0.5),
        per_table_p95: pick(0.95),
        one_by_one_seconds,
        statements,
        maintain_requests: latency_a.stats().requests(),
        one_by_one_requests: latency_b.stats().requests(),
        differing: differing.len(),
    }))
}
