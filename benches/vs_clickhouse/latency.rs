//! Scenarios 6 and 7: icetrim over a simulated remote store (`LatencyStore`: 30 ms to the first
//! byte, 100 MB/s a stream, 1 GB/s in all, 1000 objects a listing page) wrapped around an
//! in-memory store holding a generated table, in this process. Each run prints its time next to
//! its latency floor `⌈R ÷ N⌉ × 30 ms + B ÷ min(N × 100 MB/s, 1 GB/s)`, where R and B are the
//! requests and body bytes the layer charged and N is `iceberg_metadata_read_concurrency`, for
//! several N (the default is chosen from these).
//! 6. expire (dry run) on the 10,000 [1,000]-snapshot mixed history of scenario 2;
//! 7. remove_orphan_files (dry run) on about 100,000 [10,000] files, 10% orphans (scenario 4).

use std::sync::Arc;
use std::time::Instant;

use icetrim::Clock;
use icetrim::Settings;
use icetrim::internals::generate::{GenerateOptions, Mix, generate};
use icetrim::internals::iceberg::spec::FormatVersion;
use icetrim::internals::io::{FileIO, Latency, LatencyProfile, RequestCounter, RequestCounts};
use icetrim::internals::maintain::shape::{self, Expire, RemoveOrphans};
use icetrim::internals::maintain::target::MaintenanceTarget;
use icetrim::internals::plan::{ExpireOptions, OrphanOptions};
use icetrim::internals::sql::Literal;

/// One run over the latency layer.
pub struct LatencyRun {
    pub scenario: String,
    pub concurrency: usize,
    pub seconds: f64,
    pub floor_seconds: f64,
    /// Requests charged the first-byte latency (listing pages one each) and body bytes.
    pub requests: u64,
    pub bytes: u64,
    /// What the counting layer saw (LIST: one per listing on the memory store).
    pub counts: RequestCounts,
}

impl LatencyRun {
    pub fn line(&self) -> String {
        format!(
            "| {} | {} | {:.2} s | {:.2} s | {:.2}× | {} | {:.1} MB | {} |",
            self.scenario,
            self.concurrency,
            self.seconds,
            self.floor_seconds,
            self.seconds / self.floor_seconds,
            self.requests,
            self.bytes as f64 / 1e6,
            self.counts
        )
    }
}

/// The header of [`LatencyRun::line`].
pub const HEADER: &str = "| scenario | N | icetrim | latency floor | icetrim / floor | R | B | \
                          requests (counting layer) |\n|---|---|---|---|---|---|---|---|";

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))
}

fn settings(concurrency: usize) -> Result<Settings, String> {
    let mut s = Settings::new();
    s.set(
        "iceberg_metadata_read_concurrency",
        &Literal::Number(concurrency.to_string()),
    )
    .map_err(|e| e.to_string())?;
    Ok(s)
}

fn target(io: FileIO, location: &str, settings: Settings, now_ms: i64) -> MaintenanceTarget {
    MaintenanceTarget {
        source: Default::default(),
        io,
        location: location.to_string(),
        metadata_settings: Default::default(),
        table_name: "default.t".into(),
        settings,
        now_ms,
        progress: Default::default(),
        before_commit: None,
    }
}

/// What a procedure is run as.
enum Procedure {
    Expire(ExpireOptions),
    Orphans,
}

/// Generate `opts` into a fresh memory store, then run `procedure` (dry run) once for each
/// concurrency in `concurrencies` over the latency layer.
pub fn run(
    scenario: &str,
    mut opts: GenerateOptions,
    expire: Option<ExpireOptions>,
    concurrencies: &[usize],
) -> Result<Vec<LatencyRun>, String> {
    let procedure = match expire {
        Some(options) => Procedure::Expire(ExpireOptions {
            dry_run: true,
            ..options
        }),
        None => Procedure::Orphans,
    };
    opts.location = "memory:///bench/t".into();
    let io = FileIO::memory();
    let rt = runtime()?;
    rt.block_on(async {
        let started = Instant::now();
        generate(&io, &opts).await.map_err(|e| e.to_string())?;
        eprintln!(
            "  {scenario}: generated in memory in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        let mut runs = Vec::new();
        for &n in concurrencies {
            let profile = LatencyProfile::nearby_s3();
            let latency = Latency::new(profile);
            let counter = RequestCounter::new();
            let slow = io
                .with_request_counter(Arc::clone(&counter))
                .with_latency(Arc::clone(&latency));
            // Every file written before "now" is older than `older_than` (listings give whole
            // seconds on some stores: wait past the second).
            tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
            let now_ms = icetrim::SystemClock.now_ms();
            let t = target(slow, &opts.location, settings(n)?, now_ms);
            let started = Instant::now();
            let rows = match &procedure {
                Procedure::Expire(options) => shape::run::<Expire>(&t, options, false)
                    .await
                    .map(icetrim::internals::engine::render),
                Procedure::Orphans => {
                    let options = OrphanOptions {
                        older_than_ms: Some(now_ms),
                        dry_run: true,
                        ..Default::default()
                    };
                    shape::run::<RemoveOrphans>(&t, &options, false)
                        .await
                        .map(icetrim::internals::engine::render)
                }
            }
            .map_err(|e| e.to_string())?;
            let seconds = started.elapsed().as_secs_f64();
            let stats = latency.stats();
            let floor = profile.floor(stats.requests(), stats.bytes(), n);
            let run = LatencyRun {
                scenario: scenario.to_string(),
                concurrency: n,
                seconds,
                floor_seconds: floor.as_secs_f64(),
                requests: stats.requests(),
                bytes: stats.bytes(),
                counts: counter.snapshot(),
            };
            eprintln!("  {}", run.line());
            let cells: Vec<String> = rows
                .rows
                .iter()
                .map(|r| {
                    r.iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join("=")
                })
                .collect();
            eprintln!("    rows: {}", cells.join(", "));
            runs.push(run);
        }
        Ok(runs)
    })
}

/// Scenario 6's table: scenario 2's shape (10 files a snapshot, 4 branches, 10 tags), metadata
/// only.
pub fn mixed(snapshots: usize, now_ms: i64) -> GenerateOptions {
    let mut opts = GenerateOptions::new("", FormatVersion::V2, snapshots, 10, 7, now_ms);
    opts.mix = Mix::default();
    opts.branches = 4;
    opts.tags = 10;
    opts.write_data_files = false;
    opts
}

/// Scenario 7's table: scenario 4's shape (10 files a snapshot, data files written, 10% orphans).
pub fn orphans(snapshots: usize, now_ms: i64) -> GenerateOptions {
    let mut opts = GenerateOptions::new("", FormatVersion::V2, snapshots, 10, 7, now_ms);
    opts.orphans = snapshots + snapshots / 9;
    opts
}
