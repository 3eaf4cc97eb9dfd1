//! The generator: same seed → same bytes; pyiceberg reads generated v1/v2/v3 tables and plans, for
//! every ref, exactly the files the generator expects; the demo table has what the README shows.

use crate::support::fixtures;

use std::collections::BTreeMap;

use futures::TryStreamExt;
use icetrim::internals::generate::{GenerateOptions, Generated, demo_table, generate};
use icetrim::internals::iceberg::spec::FormatVersion;
use icetrim::internals::io::FileIO;
use serde_json::Value;

const NOW: i64 = 1_767_225_600_000; // 2026-01-01 00:00:00 UTC

fn options(location: &str, version: FormatVersion, seed: u64) -> GenerateOptions {
    let mut o = GenerateOptions::new(location, version, 60, 3, seed, NOW);
    o.branches = 2;
    o.tags = 2;
    o.staged = 2;
    o.statistics = 2;
    o.orphans = 3;
    o.max_manifests = 6;
    o.target_manifest_entries = 25;
    o.collect_expected = true;
    o
}

async fn all_files(io: &FileIO, location: &str) -> BTreeMap<String, Vec<u8>> {
    let listed: Vec<String> = io
        .list(location)
        .map_ok(|f| f.uri)
        .try_collect()
        .await
        .unwrap();
    let mut out = BTreeMap::new();
    for uri in listed {
        let bytes = io.read(&uri).await.unwrap();
        out.insert(uri, bytes.to_vec());
    }
    out
}

#[tokio::test]
async fn same_seed_same_bytes() {
    let loc = "memory://gen/t";
    let (a, b, c) = (FileIO::memory(), FileIO::memory(), FileIO::memory());
    generate(&a, &options(loc, FormatVersion::V2, 5))
        .await
        .unwrap();
    generate(&b, &options(loc, FormatVersion::V2, 5))
        .await
        .unwrap();
    generate(&c, &options(loc, FormatVersion::V2, 6))
        .await
        .unwrap();
    let (fa, fb, fc) = (
        all_files(&a, loc).await,
        all_files(&b, loc).await,
        all_files(&c, loc).await,
    );
    assert!(fa.len() > 100, "{} files", fa.len());
    assert!(fa == fb, "same seed, different files");
    assert_ne!(
        fa.keys().collect::<Vec<_>>(),
        fc.keys().collect::<Vec<_>>(),
        "another seed, other names"
    );
    let err = generate(&a, &options(loc, FormatVersion::V2, 5))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("exists"), "{err}");
}

fn sorted(v: &Value) -> Vec<String> {
    fixtures::sorted_strings(v)
}

fn check_with_pyiceberg(g: &Generated) -> Value {
    let report = fixtures::oracle_inspect(std::path::Path::new(&g.metadata_path));
    let errors = report.get("errors").cloned().unwrap_or(Value::Null);
    for key in [
        "ref_files",
        "snapshot_files",
        "entries_count",
        "manifests_count",
    ] {
        assert!(
            errors.get(key).is_none(),
            "pyiceberg failed on {key}: {errors}"
        );
    }
    assert_eq!(
        report["missing"],
        serde_json::json!([]),
        "referenced files missing"
    );
    assert_eq!(report["snapshots"].as_array().unwrap().len(), g.snapshots);
    assert_eq!(
        report["current_snapshot_id"].as_i64(),
        g.current_snapshot_id
    );
    let refs = report["refs"].as_object().unwrap();
    assert_eq!(refs.len(), g.refs.len());
    for r in &g.refs {
        let seen = &refs[&r.name];
        assert_eq!(seen["type"], r.kind.as_str(), "{}", r.name);
        assert_eq!(seen["snapshot"].as_i64(), Some(r.snapshot_id), "{}", r.name);
        assert_eq!(
            seen["min_snapshots_to_keep"].as_i64(),
            r.min_snapshots_to_keep.map(i64::from)
        );
        assert_eq!(seen["max_snapshot_age_ms"].as_i64(), r.max_snapshot_age_ms);
        assert_eq!(seen["max_ref_age_ms"].as_i64(), r.max_ref_age_ms);
        let planned = &report["ref_files"][&r.name];
        let expected = &g.expected[&r.name];
        assert_eq!(
            sorted(&planned["data"]),
            expected.data,
            "data files planned on {}",
            r.name
        );
        assert_eq!(
            sorted(&planned["deletes"]),
            expected.deletes,
            "delete files planned on {}",
            r.name
        );
        assert_eq!(expected.data.len(), r.live_data_files);
    }
    let stats: Vec<String> = report["statistics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["path"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(stats, g.statistics_files);
    report
}

async fn generated_table_reads(version: FormatVersion) {
    let dir = tempfile::tempdir().unwrap();
    let loc = dir.path().join("t");
    let g = generate(
        &FileIO::local(),
        &options(loc.to_str().unwrap(), version, 11),
    )
    .await
    .unwrap();
    assert_eq!(g.snapshots, 60);
    check_with_pyiceberg(&g);
    if version == FormatVersion::V2 {
        let rows = fixtures::clickhouse(
            &loc,
            "SELECT count(), sum(is_current_ancestor) FROM system.iceberg_history WHERE table = 't'",
        )
        .unwrap();
        let main = 60 - 2 * 2 - 2; // minus branch commits and staged snapshots
        assert_eq!(rows, vec![vec!["60".to_string(), main.to_string()]]);
    }
}

#[tokio::test]
async fn pyiceberg_reads_generated_v1() {
    generated_table_reads(FormatVersion::V1).await;
}

#[tokio::test]
async fn pyiceberg_reads_generated_v2() {
    generated_table_reads(FormatVersion::V2).await;
}

#[tokio::test]
async fn pyiceberg_reads_generated_v3() {
    generated_table_reads(FormatVersion::V3).await;
}

#[tokio::test]
async fn demo_table_has_every_feature() {
    let dir = tempfile::tempdir().unwrap();
    let loc = dir.path().join("demo");
    let facts = demo_table(&FileIO::local(), loc.to_str().unwrap(), NOW)
        .await
        .unwrap();
    let g = &facts.generated;
    assert_eq!(g.snapshots, 20);
    let report = check_with_pyiceberg(g);
    let ops: Vec<&str> = report["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["operation"].as_str())
        .collect();
    for op in ["append", "delete", "overwrite", "replace"] {
        assert!(ops.contains(&op), "no {op} in {ops:?}");
    }
    let branch = &report["refs"][&facts.branch];
    assert_eq!(branch["type"], "branch");
    assert_eq!(branch["min_snapshots_to_keep"], 2);
    assert_eq!(report["refs"][&facts.tag]["type"], "tag");
    assert_eq!(facts.staged.len(), 1);
    let on_refs: Vec<i64> = report["refs"]
        .as_object()
        .unwrap()
        .values()
        .map(|r| r["snapshot"].as_i64().unwrap())
        .collect();
    assert!(
        !on_refs.contains(&facts.staged[0]),
        "the staged snapshot is on no ref"
    );
    assert_eq!(facts.statistics_files.len(), 1);
    let first_ts = report["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["ts"].as_i64().unwrap())
        .min()
        .unwrap();
    assert!((NOW - 10 * 86_400_000..NOW - 9 * 86_400_000).contains(&first_ts));
    assert_eq!(facts.orphans.len(), 4);
    for orphan in &facts.orphans {
        let modified = std::fs::metadata(orphan).unwrap().modified().unwrap();
        let ms = modified
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        assert!(ms < first_ts, "{orphan} is older than the history");
    }
}
