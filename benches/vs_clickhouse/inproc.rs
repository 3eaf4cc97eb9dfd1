//! Measurements that run inside the benchmark process, through icetrim's library:
//! - the **floor** of an expiry: which files the algorithm must read (the metadata file, every
//!   manifest list, the manifests phase A asks for), then the time just to read those bytes, with
//!   the same number of reads in flight as icetrim uses, and the time to read and decode them
//!   (JSON parse, inflate, projected Avro decode: what any reader of these files must do);
//! - **request counts** of an expiry on an object store (the S3 emulator), via a counting `FileIO`.

use std::sync::Arc;
use std::time::Instant;

use futures::{StreamExt, TryStreamExt};
use icetrim::Clock;
use icetrim::Settings;
use icetrim::internals::generate::{GenerateOptions, generate};
use icetrim::internals::iceberg::locate::{MetadataSettings, locate};
use icetrim::internals::iceberg::manifest::for_each_projected;
use icetrim::internals::iceberg::manifest_list::for_each_list_entry;
use icetrim::internals::iceberg::metadata::TableMetadata;
use icetrim::internals::io::{FileIO, RequestCounter, RequestCounts, S3Options, StorageOptions};
use icetrim::internals::maintain::expire::keepset::plan_manifest_reads;
use icetrim::internals::maintain::expire::plan_expiry;
use icetrim::internals::maintain::shape::{self, Expire};
use icetrim::internals::maintain::target::MaintenanceTarget;
use icetrim::internals::plan::ExpireOptions;

/// What an expiry must read, and how long reading just that takes.
pub struct Floor {
    pub files: usize,
    pub bytes: u64,
    /// Best of three reads of every file.
    pub seconds: f64,
    /// Best of three reads that also parse the metadata JSON and inflate and decode the projected
    /// fields of every list and manifest (no interning, no sets): the decode floor.
    pub decode_seconds: f64,
    /// Every file under the table's `metadata/` folder: how many, and the best of three reads of
    /// them all (same reads in flight), whatever the expiry needs.
    pub metadata_files: usize,
    pub metadata_seconds: f64,
}

/// How a file is decoded for the decode floor.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Metadata,
    List,
    Manifest,
}

fn target(io: FileIO, location: &str, now_ms: i64) -> MaintenanceTarget {
    MaintenanceTarget {
        source: Default::default(),
        io,
        location: location.trim_end_matches('/').to_string(),
        metadata_settings: MetadataSettings::default(),
        table_name: "default.t".into(),
        settings: Settings::new(),
        now_ms,
        progress: Default::default(),
        before_commit: None,
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))
}

/// The flag that makes the benchmark binary a floor-measuring child.
const FLOOR_FLAG: &str = "--floor-child";

/// [`floor`] in a child process (this binary again), so the benchmark process stays small: a
/// child's `ru_maxrss` starts from its parent's peak (the kernel carries the high-water mark
/// across fork and exec), and a 100,000-snapshot floor run in-process made the next icetrim
/// run report 3 GB.
pub fn floor_in_child(
    location: &str,
    options: &ExpireOptions,
    now_ms: i64,
) -> Result<Floor, String> {
    let exe = std::env::current_exe().map_err(|e| format!("benchmark binary: {e}"))?;
    let number = |v: Option<i64>| v.map_or("-".to_string(), |v| v.to_string());
    let out = std::process::Command::new(exe)
        .args([
            FLOOR_FLAG,
            location,
            &now_ms.to_string(),
            &number(options.expire_before_ms),
            &number(options.retention_period_ms),
        ])
        .output()
        .map_err(|e| format!("floor child: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let fields: Vec<&str> = text.split_whitespace().collect();
    let parsed = match fields.as_slice() {
        [
            files,
            bytes,
            seconds,
            decode,
            metadata_files,
            metadata_seconds,
        ] => (|| {
            Some(Floor {
                files: files.parse().ok()?,
                bytes: bytes.parse().ok()?,
                seconds: seconds.parse().ok()?,
                decode_seconds: decode.parse().ok()?,
                metadata_files: metadata_files.parse().ok()?,
                metadata_seconds: metadata_seconds.parse().ok()?,
            })
        })(),
        _ => None,
    };
    parsed.ok_or_else(|| {
        format!(
            "floor child failed: {}{}",
            text.trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        )
    })
}

/// When this process was started by [`floor_in_child`]: measure, print, and give the exit code.
pub fn floor_child_main() -> Option<std::process::ExitCode> {
    let args: Vec<String> = std::env::args().collect();
    let [_, flag, location, now, before, retention] = args.as_slice() else {
        return None;
    };
    if flag != FLOOR_FLAG {
        return None;
    }
    let number = |v: &str| v.parse::<i64>().ok();
    let options = ExpireOptions {
        expire_before_ms: number(before),
        retention_period_ms: number(retention),
        ..Default::default()
    };
    let measured = now
        .parse::<i64>()
        .map_err(|e| e.to_string())
        .and_then(|now| floor(location, &options, now));
    Some(match measured {
        Ok(f) => {
            println!(
                "{} {} {} {} {} {}",
                f.files, f.bytes, f.seconds, f.decode_seconds, f.metadata_files, f.metadata_seconds
            );
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::ExitCode::FAILURE
        }
    })
}

/// The floor of expiring the local table at `location` with `options` (planned, never run).
pub fn floor(location: &str, options: &ExpireOptions, now_ms: i64) -> Result<Floor, String> {
    let rt = runtime()?;
    rt.block_on(async {
        let t = target(FileIO::local(), location, now_ms);
        let located = locate(&t.io, &t.location, &t.metadata_settings)
            .await
            .map_err(|e| e.to_string())?;
        let plan = plan_expiry(&t, &located.metadata, options)
            .await
            .map_err(|e| e.to_string())?;
        let mut files = vec![(located.path.clone(), Kind::Metadata)];
        let graph = &plan.files.graph;
        let mut seen = std::collections::HashSet::new();
        let lists = graph.snapshots.iter().filter_map(|s| s.manifest_list);
        let reads = plan_manifest_reads(graph, &plan.decision.expired);
        let tagged = lists
            .map(|id| (id, Kind::List))
            .chain(reads.manifests_to_read().map(|id| (id, Kind::Manifest)));
        for (id, kind) in tagged {
            if seen.insert(id) {
                files.extend(plan.files.uri(id).map(|u| (u.to_string(), kind)));
            }
        }
        let concurrency = t.settings.metadata_read_concurrency().max(1);
        let everything = metadata_folder(location)?;
        let mut best_everything = f64::INFINITY;
        let (mut best, mut best_decode, mut bytes) = (f64::INFINITY, f64::INFINITY, 0);
        for _ in 0..3 {
            let started = Instant::now();
            read_all(&everything, concurrency, false).await?;
            best_everything = best_everything.min(started.elapsed().as_secs_f64());
            let started = Instant::now();
            bytes = read_all(&files, concurrency, false).await?;
            best = best.min(started.elapsed().as_secs_f64());
            let started = Instant::now();
            read_all(&files, concurrency, true).await?;
            best_decode = best_decode.min(started.elapsed().as_secs_f64());
        }
        Ok(Floor {
            files: files.len(),
            bytes,
            seconds: best,
            decode_seconds: best_decode,
            metadata_files: everything.len(),
            metadata_seconds: best_everything,
        })
    })
}

/// Every file under `<location>/metadata/` (a local folder), to be read without decoding.
fn metadata_folder(location: &str) -> Result<Vec<(String, Kind)>, String> {
    let dir =
        std::path::Path::new(location.strip_prefix("file://").unwrap_or(location)).join("metadata");
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        if path.is_file() {
            files.push((path.to_string_lossy().into_owned(), Kind::Metadata));
        }
    }
    Ok(files)
}

/// Read every file (local paths or `file://` URIs), `concurrency` at once, and with `decode` also
/// decode it on the blocking pool; total bytes.
async fn read_all(
    files: &[(String, Kind)],
    concurrency: usize,
    decode: bool,
) -> Result<u64, String> {
    let sizes: Vec<u64> = futures::stream::iter(files.iter())
        .map(|(uri, kind)| async move {
            let path = uri.strip_prefix("file://").unwrap_or(uri);
            let bytes = tokio::fs::read(path)
                .await
                .map_err(|e| format!("{path}: {e}"))?;
            let len = bytes.len() as u64;
            if decode {
                let (kind, name) = (*kind, uri.clone());
                tokio::task::spawn_blocking(move || decode_file(&bytes, &name, kind))
                    .await
                    .map_err(|e| e.to_string())??;
            }
            Ok::<_, String>(len)
        })
        .buffer_unordered(concurrency)
        .try_collect()
        .await?;
    Ok(sizes.iter().sum())
}

fn decode_file(bytes: &[u8], name: &str, kind: Kind) -> Result<(), String> {
    let mut n = 0usize;
    match kind {
        Kind::Metadata => TableMetadata::parse(bytes, name).map(drop),
        Kind::List => for_each_list_entry(bytes, name, |e| n += e.manifest_path.len()),
        Kind::Manifest => for_each_projected(bytes, name, |e| n += e.file_path.len()),
    }
    .map_err(|e| e.to_string())?;
    std::hint::black_box(n);
    Ok(())
}

/// One expiry on the S3 emulator.
pub struct S3Run {
    pub snapshots: usize,
    pub manifests: u64,
    pub generate_seconds: f64,
    pub seconds: f64,
    pub requests: RequestCounts,
    pub rows: Vec<(String, String)>,
    /// The key prefix of ClickHouse's copy of the same table (same generator options), in the
    /// same bucket.
    pub clickhouse_prefix: String,
    /// ClickHouse's run of the same statement on its copy (filled in by the scenario).
    pub clickhouse: Option<crate::tools::ChS3Run>,
}

/// The emulator's endpoint and bucket from `target/emulators.env` variables, when running.
pub fn s3_emulator() -> Option<(String, String)> {
    let endpoint = std::env::var("ICETRIM_S3_ENDPOINT").ok()?;
    let bucket = std::env::var("ICETRIM_S3_BUCKET").ok()?;
    Some((endpoint, bucket))
}

/// A `FileIO` on the S3 emulator at `endpoint` (moto's keys).
pub fn emulator_io(endpoint: &str) -> FileIO {
    FileIO::new(StorageOptions {
        s3: S3Options {
            access_key_id: Some("testing".into()),
            secret_access_key: Some("testing".into()),
            region: Some("us-east-1".into()),
            endpoint: Some(endpoint.to_string()),
            allow_http: true,
            ..Default::default()
        },
        ..Default::default()
    })
}

/// Generate `opts` (its location is replaced) on the emulator twice, at two prefixes, and expire
/// the first copy with `options`, counting every request of the expiry; the second copy is left
/// for ClickHouse.
pub fn s3_expiry(
    endpoint: &str,
    bucket: &str,
    mut opts: GenerateOptions,
    options: &ExpireOptions,
) -> Result<S3Run, String> {
    let io = emulator_io(endpoint);
    let prefix = format!("bench-{}-{}", opts.snapshots, uuid::Uuid::new_v4().simple());
    let clickhouse_prefix = format!("{prefix}-clickhouse");
    let rt = runtime()?;
    rt.block_on(async {
        let mut theirs = opts.clone();
        theirs.location = format!("s3://{bucket}/{clickhouse_prefix}");
        generate(&io, &theirs).await.map_err(|e| e.to_string())?;
        opts.location = format!("s3://{bucket}/{prefix}");
        let started = Instant::now();
        let generated = generate(&io, &opts).await.map_err(|e| e.to_string())?;
        let generate_seconds = started.elapsed().as_secs_f64();
        let counter = RequestCounter::new();
        let counted = io.with_request_counter(Arc::clone(&counter));
        let now = icetrim::SystemClock.now_ms();
        let t = target(counted, &opts.location, now);
        let started = Instant::now();
        let result = shape::run::<Expire>(&t, options, false)
            .await
            .map(icetrim::internals::engine::render)
            .map_err(|e| e.to_string())?;
        let seconds = started.elapsed().as_secs_f64();
        let rows = result
            .rows
            .iter()
            .map(|r| {
                let cell = |i: usize| r.get(i).map(|v| v.to_string()).unwrap_or_default();
                (cell(0), cell(1))
            })
            .collect();
        Ok(S3Run {
            snapshots: opts.snapshots,
            manifests: generated.written.manifests,
            generate_seconds,
            seconds,
            requests: counter.snapshot(),
            rows,
            clickhouse_prefix,
            clickhouse: None,
        })
    })
}
