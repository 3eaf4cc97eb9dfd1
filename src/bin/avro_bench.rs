//! Benchmark: decode a 100,000-entry deflate manifest with our projection, our full decode, and
//! apache-avro's generic `Reader` into `Value`s; prints entries per second for each.
//!
//! Run: `cargo run --release --bin avro_bench [entries]`.

use std::collections::BTreeMap;
use std::time::Instant;

use icetrim::internals::iceberg::avro::Codec;
use icetrim::internals::iceberg::manifest::{
    DataFile, ManifestEntry, ManifestWriter, NewManifest, PartitionTuple, PartitionValue,
    for_each_projected, read_manifest,
};
use icetrim::internals::iceberg::spec::{DataContent, EntryStatus, FormatVersion, ManifestContent};

const SCHEMA: &str = r#"{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":true,"type":"long"},{"id":2,"name":"name","required":false,"type":"string"},{"id":3,"name":"ts","required":false,"type":"timestamptz"},{"id":4,"name":"amount","required":false,"type":"double"},{"id":5,"name":"city","required":false,"type":"string"}]}"#;
const SPEC: &str = r#"{"spec-id":0,"fields":[{"source-id":3,"field-id":1000,"name":"ts_day","transform":"day"},{"source-id":5,"field-id":1001,"name":"city","transform":"identity"}]}"#;

fn entry(i: i64) -> ManifestEntry {
    let path = format!(
        "s3://warehouse/db/events/data/ts_day=2024-01-{:02}/city=c{}/00000-{i}-0a1b2c3d-4e5f-6789-abcd-ef0123456789.parquet",
        i % 28 + 1,
        i % 50
    );
    let mut df = DataFile::new(DataContent::Data, path, 10_000 + i, 1_000_000 + i);
    df.partition = PartitionTuple::new(vec![
        (
            "ts_day".into(),
            PartitionValue::Int(19_700 + (i % 28) as i32),
        ),
        (
            "city".into(),
            PartitionValue::String(format!("c{}", i % 50)),
        ),
    ]);
    let cols = 1..=5;
    df.column_sizes = Some(cols.clone().map(|c| (c, 1000 * i64::from(c) + i)).collect());
    df.value_counts = Some(cols.clone().map(|c| (c, 10_000 + i)).collect());
    df.null_value_counts = Some(cols.clone().map(|c| (c, i % 7)).collect());
    df.nan_value_counts = Some(BTreeMap::from([(4, 0)]));
    df.lower_bounds = Some(
        cols.clone()
            .map(|c| (c, (i * i64::from(c)).to_le_bytes().to_vec()))
            .collect(),
    );
    df.upper_bounds = Some(
        cols.map(|c| (c, (i * i64::from(c) + 999).to_le_bytes().to_vec()))
            .collect(),
    );
    df.split_offsets = Some(vec![4]);
    df.sort_order_id = Some(0);
    ManifestEntry {
        status: if i % 10 == 0 {
            EntryStatus::Added
        } else {
            EntryStatus::Existing
        },
        snapshot_id: Some(1234567890123 + i % 3),
        sequence_number: Some(i % 100),
        file_sequence_number: Some(i % 100),
        data_file: df,
        extra: Vec::new(),
    }
}

/// Nanoseconds this thread has run on a CPU (Linux `schedstat`), so a busy machine does not inflate
/// the figures; `None` elsewhere.
fn thread_cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// Runs `f` `runs` times; prints the best wall time and the best on-CPU time per entry; returns the
/// on-CPU seconds per entry (wall time when unavailable).
fn time<T>(label: &str, entries: usize, runs: usize, mut f: impl FnMut() -> T) -> f64 {
    let (mut wall, mut cpu) = (f64::MAX, f64::MAX);
    for _ in 0..runs {
        let (start, cpu_start) = (Instant::now(), thread_cpu_ns());
        std::hint::black_box(f());
        wall = wall.min(start.elapsed().as_secs_f64());
        if let (Some(a), Some(b)) = (cpu_start, thread_cpu_ns()) {
            cpu = cpu.min(b.saturating_sub(a) as f64 / 1e9);
        }
    }
    let per_cpu = if cpu == f64::MAX { wall } else { cpu } / entries as f64;
    println!(
        "{label:<28} {:>10.0} entries/s (cpu)  {:>7.3} µs/entry cpu  {:>7.3} µs/entry wall",
        1.0 / per_cpu,
        per_cpu * 1e6,
        wall / entries as f64 * 1e6
    );
    per_cpu
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args().nth(1).map_or(Ok(100_000), |a| a.parse())?;
    let entries: Vec<ManifestEntry> = (0..n as i64).map(entry).collect();
    let write = |codec: Codec| -> Result<Vec<u8>, icetrim::Error> {
        let opts = NewManifest {
            format_version: FormatVersion::V2,
            content: ManifestContent::Data,
            table_schema_json: SCHEMA,
            partition_spec_json: SPEC,
            partition_spec_id: 0,
            codec,
        };
        let mut w = ManifestWriter::new(&opts)?;
        entries.iter().try_for_each(|e| w.add(e))?;
        Ok(w.finish()?.bytes)
    };
    let bytes = write(Codec::Deflate)?;
    let plain = write(Codec::Null)?;
    println!(
        "{n} entries: {} bytes deflate, {} bytes uncompressed",
        bytes.len(),
        plain.len()
    );

    time("write (ours, deflate)", n, 1, || {
        write(Codec::Deflate).map(|b| b.len())
    });
    let projected = time("projection (ours)", n, 5, || {
        let mut rows = 0i64;
        for_each_projected(&bytes, "bench.avro", |e| rows += e.record_count).map(|_| rows)
    });
    time("projection, null codec", n, 5, || {
        let mut rows = 0i64;
        for_each_projected(&plain, "bench.avro", |e| rows += e.record_count).map(|_| rows)
    });
    let full = time("full decode (ours)", n, 3, || {
        read_manifest(&bytes, "bench.avro").map(|m| m.entries.len())
    });
    let generic = time("apache-avro Reader -> Value", n, 3, || {
        apache_avro::Reader::new(&bytes[..]).map(|r| r.filter(Result::is_ok).count())
    });
    println!(
        "apache-avro / projection = {:.1}x, apache-avro / full = {:.1}x",
        generic / projected,
        generic / full
    );
    Ok(())
}
