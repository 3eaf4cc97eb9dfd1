//! Benchmark: decode a 100,000-entry deflate manifest with our projection, our full decode, and
//! apache-avro's generic `Reader` into `Value`s; prints entries per second for each.
//!
//! Run: `cargo run --release --bin avro_bench [entries]`.

use std::collections::BTreeMap;
use std::time::Instant;

use apache_avro::types::Value;
use icetrim::iceberg::avro::Codec;
use icetrim::iceberg::manifest::{
    DataFile, ManifestEntry, ManifestWriter, NewManifest, for_each_projected, read_manifest,
};
use icetrim::iceberg::spec::{DataContent, EntryStatus, FormatVersion, ManifestContent};

const SCHEMA: &str = r#"{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":true,"type":"long"},{"id":2,"name":"name","required":false,"type":"string"},{"id":3,"name":"ts","required":false,"type":"timestamptz"},{"id":4,"name":"amount","required":false,"type":"double"},{"id":5,"name":"city","required":false,"type":"string"}]}"#;
const SPEC: &str = r#"{"spec-id":0,"fields":[{"source-id":3,"field-id":1000,"name":"ts_day","transform":"day"},{"source-id":5,"field-id":1001,"name":"city","transform":"identity"}]}"#;

fn entry(i: i64) -> ManifestEntry {
    let path = format!(
        "s3://warehouse/db/events/data/ts_day=2024-01-{:02}/city=c{}/00000-{i}-0a1b2c3d-4e5f-6789-abcd-ef0123456789.parquet",
        i % 28 + 1,
        i % 50
    );
    let mut df = DataFile::new(DataContent::Data, path, 10_000 + i, 1_000_000 + i);
    df.partition = Value::Record(vec![
        ("ts_day".into(), Value::Int(19_700 + (i % 28) as i32)),
        ("city".into(), Value::String(format!("c{}", i % 50))),
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

fn time<T>(label: &str, entries: usize, runs: usize, mut f: impl FnMut() -> T) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..runs {
        let start = Instant::now();
        std::hint::black_box(f());
        best = best.min(start.elapsed().as_secs_f64());
    }
    let per = best / entries as f64;
    println!(
        "{label:<28} {:>12.0} entries/s  {:>8.3} µs/entry",
        1.0 / per,
        per * 1e6
    );
    per
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args().nth(1).map_or(Ok(100_000), |a| a.parse())?;
    let opts = NewManifest {
        format_version: FormatVersion::V2,
        content: ManifestContent::Data,
        table_schema_json: SCHEMA,
        partition_spec_json: SPEC,
        partition_spec_id: 0,
        codec: Codec::Deflate,
    };
    let mut w = ManifestWriter::new(&opts)?;
    let start = Instant::now();
    for i in 0..n as i64 {
        w.add(&entry(i))?;
    }
    let bytes = w.finish()?.bytes;
    println!(
        "wrote {n} entries, {} bytes (deflate) in {:.2?}",
        bytes.len(),
        start.elapsed()
    );

    let projected = time("projection (ours)", n, 5, || {
        let mut rows = 0i64;
        for_each_projected(&bytes, "bench.avro", |e| rows += e.record_count).map(|_| rows)
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
