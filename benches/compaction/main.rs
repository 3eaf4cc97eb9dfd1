//! Compaction throughput: icetrim's `OPTIMIZE TABLE` against the floor of decoding and encoding
//! the same Parquet with the same crates, and against ClickHouse's (chdb 4.4) `OPTIMIZE TABLE`
//! with `allow_experimental_iceberg_compaction = 1` on an identical copy, row counts compared.
//!
//! ```text
//! cargo bench --bench compaction -- [--files N] [--per-snapshot K] [--partitions P]
//!     [--rows-per-file R] [--row-bytes B] [--wide] [--dir DIR] [--keep]
//! ```
//!
//! `--wide` adds the columns `amount` (double), `ts` (timestamptz) and `flag` (boolean).
//!
//! `--rows-per-file R --row-bytes B`: every data file holds R rows whose `data` is padded to B
//! bytes of incompressible text (large real files instead of the default 1 to 1,000 short rows).
//!
//! `--partitions P` partitions the table by `identity(part)` with the files spread evenly
//! (`--files 10000 --partitions 100`: 100 partitions × 100 files).
//!
//! The table is made by icetrim's generator in Parquet mode (`icetrim-generate --parquet`):
//! `N / K` commits, mostly fast appends of `K` small data files each (1 to 1,000 rows of `id`,
//! `data`) and some deletes (position delete files or removed files), in one partition unless
//! `--partitions` says otherwise (default 10,000 files). It is generated twice with the same seed, one copy per
//! tool. Throughput is input MB (the data files' bytes) per second of wall time.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use bytes::Bytes;
use icetrim::internals::generate::{GenerateOptions, Mix, generate};
use icetrim::internals::iceberg::locate::{MetadataSettings, locate};
use icetrim::internals::iceberg::manifest::{inherit, read_manifest};
use icetrim::internals::iceberg::manifest_list::read_manifest_list;
use icetrim::internals::iceberg::spec::{DataContent, FormatVersion};
use icetrim::internals::io::FileIO;
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

struct Args {
    files: usize,
    per_snapshot: usize,
    partitions: usize,
    rows_per_file: Option<i64>,
    row_bytes: usize,
    wide: bool,
    dir: PathBuf,
    keep: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        files: 10_000,
        per_snapshot: 100,
        partitions: 0,
        rows_per_file: None,
        row_bytes: 0,
        wide: false,
        dir: std::env::temp_dir().join("icetrim-bench-compaction"),
        keep: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--files" => args.files = value()?.parse().map_err(|e| format!("--files: {e}"))?,
            "--per-snapshot" => {
                args.per_snapshot = value()?
                    .parse()
                    .map_err(|e| format!("--per-snapshot: {e}"))?
            }
            "--partitions" => {
                args.partitions = value()?.parse().map_err(|e| format!("--partitions: {e}"))?
            }
            "--rows-per-file" => {
                args.rows_per_file = Some(
                    value()?
                        .parse()
                        .map_err(|e| format!("--rows-per-file: {e}"))?,
                )
            }
            "--row-bytes" => {
                args.row_bytes = value()?.parse().map_err(|e| format!("--row-bytes: {e}"))?
            }
            "--dir" => args.dir = PathBuf::from(value()?),
            "--keep" => args.keep = true,
            "--wide" => args.wide = true,
            "--bench" => {}
            other => return Err(format!("unknown flag {other}")),
        }
    }
    args.per_snapshot = args.per_snapshot.clamp(1, args.files.max(1));
    Ok(args)
}

fn options(location: &str, args: &Args) -> GenerateOptions {
    let now = chrono::Utc::now().timestamp_millis();
    let snapshots = args.files.div_ceil(args.per_snapshot);
    let mut o = GenerateOptions::new(
        location,
        FormatVersion::V2,
        snapshots,
        args.per_snapshot,
        7,
        now,
    );
    // Mostly appends; some deletes (half of them position delete files), so that ClickHouse's
    // OPTIMIZE, which merges position deletes into data files, has work to do too.
    o.mix = Mix::parse("append=90,delete=10").expect("a mix");
    o.parquet_data = true;
    o.partitions = args.partitions;
    o.rows_per_file = args.rows_per_file;
    o.row_bytes = args.row_bytes;
    o.wide_columns = args.wide;
    o
}

/// The live data files of the current snapshot: (path, bytes, rows).
async fn live_data(io: &FileIO, location: &str) -> Vec<(String, i64, i64)> {
    let located = locate(io, location, &MetadataSettings::default())
        .await
        .expect("locate");
    let Some(snap) = located.metadata.current_snapshot() else {
        return Vec::new();
    };
    let list_path = snap.manifest_list.clone().expect("a manifest list");
    let list =
        read_manifest_list(&io.read(&list_path).await.expect("list"), &list_path).expect("list");
    let mut out = Vec::new();
    for m in &list {
        let mut manifest =
            read_manifest(&io.read(&m.manifest_path).await.expect("manifest"), "m").expect("m");
        inherit(&mut manifest.entries, m);
        for e in manifest.entries {
            if e.status.is_live() && e.data_file.content == DataContent::Data {
                out.push((
                    e.data_file.file_path,
                    e.data_file.file_size_in_bytes,
                    e.data_file.record_count,
                ));
            }
        }
    }
    out
}

/// Decode every file and encode all rows into one zstd Parquet file, in memory: the floor.
fn floor(files: &[(String, Bytes)]) -> (f64, usize) {
    let started = Instant::now();
    let mut writer: Option<ArrowWriter<Vec<u8>>> = None;
    let mut rows = 0;
    for (_, bytes) in files {
        let reader = ParquetRecordBatchReaderBuilder::try_new(bytes.clone())
            .expect("parquet")
            .build()
            .expect("reader");
        for batch in reader {
            let batch = batch.expect("batch");
            rows += batch.num_rows();
            let w = writer.get_or_insert_with(|| {
                let props = WriterProperties::builder()
                    .set_compression(Compression::ZSTD(ZstdLevel::try_new(3).expect("level")))
                    .build();
                ArrowWriter::try_new(Vec::new(), batch.schema(), Some(props)).expect("writer")
            });
            w.write(&batch).expect("write");
        }
    }
    if let Some(w) = writer {
        w.close().expect("close");
    }
    (started.elapsed().as_secs_f64(), rows)
}

/// ClickHouse is stopped after this long (its OPTIMIZE can take far longer than ours).
const CH_TIMEOUT_S: u64 = 120;

fn clickhouse(python: &Path, dir: &Path, sql: &str) -> Result<(f64, String), String> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/bench_clickhouse.py");
    let mut child = Command::new(python)
        .arg(script)
        .arg(dir)
        .arg(sql)
        .env("TZ", "UTC")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(_) => break,
            None if started.elapsed().as_secs() > CH_TIMEOUT_S => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("stopped after {CH_TIMEOUT_S} s (a lower bound)"));
            }
            None => std::thread::sleep(std::time::Duration::from_millis(50)),
        }
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let v: serde_json::Value = serde_json::from_str(text.trim())
        .map_err(|_| format!("{text}{}", String::from_utf8_lossy(&out.stderr)))?;
    if let Some(e) = v.get("error") {
        return Err(e.to_string());
    }
    Ok((v["seconds"].as_f64().unwrap_or(0.0), v["rows"].to_string()))
}

/// Parquet files under `<dir>/data`, partition folders included (ClickHouse's rewrite shows here).
fn data_files_on_disk(dir: &Path) -> usize {
    fn count(dir: &Path) -> usize {
        std::fs::read_dir(dir)
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| {
                        let p = e.path();
                        if p.is_dir() {
                            count(&p)
                        } else {
                            usize::from(p.extension().is_some_and(|x| x == "parquet"))
                        }
                    })
                    .sum()
            })
            .unwrap_or(0)
    }
    count(&dir.join("data"))
}

fn mb(bytes: i64) -> f64 {
    bytes as f64 / 1_000_000.0
}

#[tokio::main]
async fn main() {
    // `cargo bench` passes `--bench`; `cargo test --all-targets` runs bench targets without it
    // (whatever `test = false` says): the benchmark takes minutes and runs ClickHouse, so only
    // run it when asked for.
    if !std::env::args().any(|a| a == "--bench") {
        println!("compaction: built; run it with cargo bench --bench compaction");
        return;
    }
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let _ = std::fs::remove_dir_all(&args.dir);
    let ours = args.dir.join("icetrim");
    let theirs = args.dir.join("clickhouse");
    let io = FileIO::local();
    for dir in [&ours, &theirs] {
        let location = dir.to_str().expect("UTF-8 paths");
        generate(&io, &options(location, &args))
            .await
            .expect("generate");
    }
    let location = ours.to_str().expect("UTF-8 paths");
    let inputs = live_data(&io, location).await;
    let input_bytes: i64 = inputs.iter().map(|f| f.1).sum();
    let input_rows: i64 = inputs.iter().map(|f| f.2).sum();
    println!(
        "table: {} data files, {:.1} MB, {} rows, {} partition(s)",
        inputs.len(),
        mb(input_bytes),
        input_rows,
        args.partitions.max(1)
    );

    // The floor: decode + encode with the same crates, files already in memory.
    let mut loaded = Vec::new();
    for (path, _, _) in &inputs {
        loaded.push((path.clone(), io.read(path).await.expect("read")));
    }
    let (floor_s, floor_rows) = floor(&loaded);
    drop(loaded);
    println!(
        "floor (decode + encode, one thread, in memory): {floor_s:.2} s, {:.1} MB/s, {floor_rows} rows",
        mb(input_bytes) / floor_s
    );

    // icetrim.
    let table = icetrim::Table::open(location, Default::default()).expect("open");
    let started = Instant::now();
    let outcome = table
        .rewrite_data_files()
        .optimize()
        .execute()
        .await
        .expect("OPTIMIZE");
    let ours_s = started.elapsed().as_secs_f64();
    let after = live_data(&io, location).await;
    let after_rows: i64 = after.iter().map(|f| f.2).sum();
    let m = outcome.metrics;
    println!(
        "icetrim OPTIMIZE TABLE: {ours_s:.2} s, {:.1} MB/s; {} files -> {} ({} groups, {} delete \
         files removed); records {input_rows} -> {after_rows} live rows",
        mb(m.rewritten_bytes_count) / ours_s,
        m.rewritten_data_files_count,
        m.added_data_files_count,
        m.rewritten_file_groups_count,
        m.removed_delete_files_count
    );
    // (Input rows count every data file's records; position deletes make the live rows fewer.)

    // ClickHouse, where it runs.
    let python = std::env::var_os("ICETRIM_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python"));
    if python.exists() {
        let files_before = data_files_on_disk(&theirs);
        let count = "SELECT count() FROM t";
        let before = clickhouse(&python, &theirs, count);
        let run = clickhouse(&python, &theirs, "OPTIMIZE TABLE t");
        let after = clickhouse(&python, &theirs, count);
        match (before, run, after) {
            (Ok((_, b)), Ok((secs, _)), Ok((_, a))) => println!(
                "ClickHouse OPTIMIZE TABLE: {secs:.2} s, {:.1} MB/s; count() {b} -> {a}; \
                 Parquet files under data/: {files_before} -> {}",
                mb(input_bytes) / secs,
                data_files_on_disk(&theirs)
            ),
            (b, r, a) => println!(
                "ClickHouse OPTIMIZE TABLE did not run: count before {b:?}; OPTIMIZE {r:?}; after {a:?}"
            ),
        }
    } else {
        println!(
            "ClickHouse skipped: no Python with chdb at {}",
            python.display()
        );
    }
    if !args.keep {
        let _ = std::fs::remove_dir_all(&args.dir);
    }
}
