//! `rewrite_manifests` / `OPTIMIZE TABLE t MANIFEST` on real tables: pyiceberg
//! tables with many fast appends, schema and partition evolution (two specs), a delete, a branch
//! and a tag, in format v1 and v2, and ClickHouse's v3 table with a position-delete file. After a
//! rewrite pyiceberg and ClickHouse read the same rows for every ref, every live entry keeps every
//! field (compared field by field), no snapshot is deleted, and there is one manifest per spec and
//! content at the default target size. Also: ClickHouse's own `OPTIMIZE TABLE t MANIFEST` on a
//! twin, the `OPTIMIZE` threshold and gate. Failures: `rewrite_manifests_faults.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use icetrim::FixedClock;
use icetrim::Settings;
use icetrim::engine::{Metrics, QueryResult};
use icetrim::internals::engine::Runtime;
use icetrim::internals::engine::run_procedure;
use icetrim::internals::iceberg::manifest::{inherit, read_manifest};
use icetrim::internals::iceberg::manifest_list::{ManifestFile, read_manifest_list};
use icetrim::internals::iceberg::metadata::TableMetadata;
use icetrim::internals::io::FileIO;
use icetrim::internals::maintain::rewrite_manifests::{RewriteManifestsMetrics, decide};
use icetrim::internals::plan::{ProcedureCall, RewriteManifestsOptions};
use serde_json::Value;

use crate::support::expire::{NOW, current_metadata, table_def};
use crate::support::fixtures::{self, make_fixture, run_python_json};

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/py/manifest_tables.py")
}

/// A pyiceberg table (see `tests/py/manifest_tables.py build`) in a fresh folder.
pub(crate) fn build(format_version: u8, appends: u32) -> (tempfile::TempDir, PathBuf) {
    build_with(format_version, appends, &[])
}

/// [`build`] with the script's extra arguments (`overwrite`).
pub(crate) fn build_with(
    format_version: u8,
    appends: u32,
    extra: &[&str],
) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("table");
    let v = format_version.to_string();
    let n = appends.to_string();
    let mut args = vec!["build", dir.to_str().unwrap(), &v, &n];
    args.extend_from_slice(extra);
    run_python_json(&script(), &args);
    (tmp, dir)
}

/// pyiceberg's view of the newest metadata: rows per ref, manifests, live entries.
pub(crate) async fn pyread(dir: &Path) -> Value {
    let md = current_metadata(dir).await;
    run_python_json(&script(), &["read", md.to_str().unwrap()])
}

/// ClickHouse's `count(), sum(id)` of the table.
pub(crate) fn ch_rows(dir: &Path) -> Vec<Vec<String>> {
    fixtures::clickhouse(dir, "SELECT count(), sum(id) FROM t").expect("ClickHouse reads")
}

pub(crate) async fn rewrite_with(
    dir: &Path,
    options: RewriteManifestsOptions,
    explain: bool,
    io: Option<FileIO>,
) -> icetrim::Result<QueryResult> {
    let runtime = Runtime {
        clock: FixedClock::new(NOW),
        io_override: io,
        before_commit: None,
        host_stores: Default::default(),
    };
    run_procedure(
        &runtime,
        &Settings::new(),
        &table_def(dir),
        ProcedureCall::RewriteManifests(options),
        explain,
    )
    .await
}

pub(crate) async fn rewrite(dir: &Path) -> RewriteManifestsMetrics {
    let r = rewrite_with(dir, RewriteManifestsOptions::default(), false, None)
        .await
        .unwrap_or_else(|e| panic!("rewrite_manifests failed: {e}"));
    metrics(&r)
}

pub(crate) fn metrics(r: &QueryResult) -> RewriteManifestsMetrics {
    match r.metrics {
        Some(Metrics::RewriteManifests(m)) => m,
        ref other => panic!("not a rewrite_manifests result: {other:?}"),
    }
}

/// The current snapshot's manifest list.
async fn own_list(dir: &Path) -> Vec<ManifestFile> {
    let md_path = current_metadata(dir).await;
    let bytes = std::fs::read(&md_path).unwrap();
    let md = TableMetadata::parse(&bytes, md_path.to_str().unwrap()).unwrap();
    let list_path = md
        .current_snapshot()
        .unwrap()
        .manifest_list
        .clone()
        .unwrap();
    let local = list_path
        .strip_prefix("file://")
        .unwrap_or(&list_path)
        .to_string();
    read_manifest_list(&std::fs::read(local).unwrap(), &list_path).unwrap()
}

/// The current snapshot's manifests as (spec, content, live entries) and every live entry with
/// its inherited fields made explicit: (snapshot id, sequence number, file sequence number, first
/// row id, the whole data file).
pub(crate) async fn own_view(dir: &Path) -> (Vec<(i32, String, usize)>, BTreeMap<String, String>) {
    let md_path = current_metadata(dir).await;
    let bytes = std::fs::read(&md_path).unwrap();
    let md = TableMetadata::parse(&bytes, md_path.to_str().unwrap()).unwrap();
    let list_path = md
        .current_snapshot()
        .unwrap()
        .manifest_list
        .clone()
        .unwrap();
    let local = |p: &str| p.strip_prefix("file://").unwrap_or(p).to_string();
    let list = read_manifest_list(&std::fs::read(local(&list_path)).unwrap(), &list_path).unwrap();
    let mut manifests = Vec::new();
    let mut entries = BTreeMap::new();
    for m in &list {
        let mut manifest = read_manifest(
            &std::fs::read(local(&m.manifest_path)).unwrap(),
            &m.manifest_path,
        )
        .unwrap();
        inherit(&mut manifest.entries, m);
        let live: Vec<_> = manifest
            .entries
            .iter()
            .filter(|e| e.status.is_live())
            .collect();
        manifests.push((m.partition_spec_id, format!("{:?}", m.content), live.len()));
        for e in live {
            let mut df = e.data_file.clone();
            df.extra.clear();
            // v1 manifests may omit block_size_in_bytes' default; compare what readers use.
            let key = df.file_path.clone();
            entries.insert(
                key,
                format!(
                    "{:?} {:?} {:?} {:?}",
                    e.snapshot_id, e.sequence_number, e.file_sequence_number, df
                ),
            );
        }
    }
    (manifests, entries)
}

pub(crate) fn groups(manifests: &[(i32, String, usize)]) -> BTreeSet<(i32, String)> {
    manifests.iter().map(|(s, c, _)| (*s, c.clone())).collect()
}

async fn check_round_trip(format_version: u8) {
    let (_tmp, dir) = build(format_version, 12);
    let before = pyread(&dir).await;
    let (old_manifests, old_entries) = own_view(&dir).await;
    let ch_before = ch_rows(&dir);
    assert!(old_manifests.len() >= 10, "{old_manifests:?}");
    assert!(
        groups(&old_manifests).len() >= 2,
        "two partition specs: {old_manifests:?}"
    );

    let m = rewrite(&dir).await;
    assert_eq!(m.rewritten_manifests_count, old_manifests.len() as i64);
    assert_eq!(m.added_manifests_count, groups(&old_manifests).len() as i64);
    assert!(!m.dry_run);

    let after = pyread(&dir).await;
    let (new_manifests, new_entries) = own_view(&dir).await;
    // Same rows on every ref, read by pyiceberg and by ClickHouse.
    assert_eq!(
        before["refs"], after["refs"],
        "v{format_version}: rows per ref"
    );
    assert_eq!(ch_before, ch_rows(&dir));
    // Every live entry with every field (metrics, bounds, split offsets, key metadata, numbers).
    assert_eq!(before["entries"], after["entries"], "pyiceberg's entries");
    assert_eq!(old_entries, new_entries, "every field of every live entry");
    // No published snapshot deleted; one new (replace) snapshot.
    let old: BTreeSet<i64> = serde_json::from_value(before["snapshots"].clone()).unwrap();
    let new: BTreeSet<i64> = serde_json::from_value(after["snapshots"].clone()).unwrap();
    assert!(old.is_subset(&new) && new.len() == old.len() + 1);
    // One manifest per (spec, content) at 8 MiB; inspect.manifests agrees with our list.
    assert_eq!(new_manifests.len(), groups(&old_manifests).len());
    assert_eq!(
        after["manifests"].as_array().unwrap().len(),
        new_manifests.len()
    );
    for m in after["manifests"].as_array().unwrap() {
        assert_eq!(m["added_data_files_count"], 0, "{m}");
        assert!(m["existing_data_files_count"].as_i64().unwrap() > 0, "{m}");
        let summaries = m["partition_summaries"].as_array().unwrap();
        assert!(summaries.iter().all(|s| !s["lower_bound"].is_null()), "{m}");
    }
    // A second run has nothing to do.
    assert_eq!(rewrite(&dir).await.rewritten_manifests_count, 0);
}

#[tokio::test]
async fn rewrite_keeps_rows_entries_and_snapshots_v2() {
    check_round_trip(2).await;
}

#[tokio::test]
async fn rewrite_keeps_rows_entries_and_snapshots_v1() {
    check_round_trip(1).await;
}

#[tokio::test]
async fn small_target_size_gives_more_clustered_manifests_and_spec_id_limits() {
    let (_tmp, dir) = build(2, 12);
    let (old_manifests, old_entries) = own_view(&dir).await;
    let spec0 = old_manifests.iter().filter(|m| m.0 == 0).count() as i64;
    let only_spec0 = RewriteManifestsOptions {
        spec_id: Some(0),
        ..Default::default()
    };
    let r = rewrite_with(&dir, only_spec0, false, None).await.unwrap();
    assert_eq!(metrics(&r).rewritten_manifests_count, spec0);
    let (manifests, entries) = own_view(&dir).await;
    assert_eq!(entries, old_entries);
    assert_eq!(manifests.iter().filter(|m| m.0 == 0).count(), 1);
    assert_eq!(
        manifests.iter().filter(|m| m.0 == 1).count(),
        old_manifests.iter().filter(|m| m.0 == 1).count()
    );
    // An unknown spec is refused before anything is read.
    let bad = RewriteManifestsOptions {
        spec_id: Some(9),
        ..Default::default()
    };
    let e = rewrite_with(&dir, bad, false, None).await.unwrap_err();
    assert!(e.message().contains("no partition spec with id 9"), "{e}");
    // A target of half spec 1's live bytes requires two manifests for it.
    let list = own_list(&dir).await;
    let spec1: Vec<_> = list.iter().filter(|m| m.partition_spec_id == 1).collect();
    assert!(spec1.len() > 2, "{spec1:?}");
    let live_bytes: i64 = spec1.iter().map(|m| decide::estimated_live_bytes(m)).sum();
    let target = live_bytes / 2 + 1;
    let small = RewriteManifestsOptions {
        target_manifest_size_bytes: Some(target),
        spec_id: Some(1),
        dry_run: true,
        ..Default::default()
    };
    let plan = rewrite_with(&dir, small.clone(), true, None).await.unwrap();
    let new_rows: Vec<_> = plan
        .rows
        .iter()
        .filter(|r| r[0].to_string() == "new_manifest")
        .collect();
    assert_eq!(
        new_rows.len(),
        decide::required_count(live_bytes, target),
        "as many manifests as the target size implies"
    );
    assert_eq!(new_rows.len(), 2);
    let dry = rewrite_with(&dir, small.clone(), false, None)
        .await
        .unwrap();
    assert_eq!(metrics(&dry).added_manifests_count, 2);
    assert_eq!(metrics(&dry).rewritten_manifests_count, spec1.len() as i64);
    assert!(metrics(&dry).dry_run);
    assert_eq!(
        own_view(&dir).await.0,
        manifests,
        "a dry run writes nothing"
    );
    // The real run: two manifests of spec 1, clustered (the first's partitions all sort before
    // the second's: its `cat` upper bound is at most the second's lower bound).
    let real = RewriteManifestsOptions {
        dry_run: false,
        ..small
    };
    let done = rewrite_with(&dir, real, false, None).await.unwrap();
    assert_eq!(metrics(&done).added_manifests_count, 2);
    let (_, entries) = own_view(&dir).await;
    assert_eq!(entries, old_entries);
    let new_spec1: Vec<_> = own_list(&dir)
        .await
        .into_iter()
        .filter(|m| m.partition_spec_id == 1)
        .collect();
    assert_eq!(new_spec1.len(), 2);
    let bound = |m: &ManifestFile, upper: bool| {
        let p = &m.partitions.as_ref().expect("partition summaries")[0];
        if upper {
            p.upper_bound.clone()
        } else {
            p.lower_bound.clone()
        }
    };
    assert!(
        bound(&new_spec1[0], true) <= bound(&new_spec1[1], false),
        "clustered by partition: {new_spec1:?}"
    );
}

#[tokio::test]
async fn clickhouse_v3_table_with_delete_files() {
    let fx = make_fixture("ch_v3", NOW, false);
    let dir = fx.table_dir();
    let ch_before = ch_rows(&dir);
    let py_before = pyread(&dir).await;
    let (old_manifests, old_entries) = own_view(&dir).await;
    let r = rewrite_with(&dir, RewriteManifestsOptions::default(), false, None)
        .await
        .unwrap();
    let m = metrics(&r);
    let (new_manifests, new_entries) = own_view(&dir).await;
    assert_eq!(
        old_entries, new_entries,
        "first_row_id and sequence numbers kept"
    );
    assert_eq!(ch_before, ch_rows(&dir));
    let py_after = pyread(&dir).await;
    assert_eq!(
        py_before["refs"], py_after["refs"],
        "pyiceberg reads the v3 table the same"
    );
    assert_eq!(py_before["entries"], py_after["entries"]);
    assert!(
        m.rewritten_manifests_count > 0,
        "the data manifests are rewritten"
    );
    // Data and delete manifests never share a manifest.
    assert_eq!(groups(&new_manifests), groups(&old_manifests));
    assert_eq!(new_manifests.len(), groups(&old_manifests).len());
    assert_eq!(
        m.rewritten_manifests_count as usize + groups(&old_manifests).len(),
        old_manifests.len() + m.added_manifests_count as usize
    );
}

#[tokio::test]
async fn same_rows_as_clickhouse_optimize_manifest_and_no_more_manifests() {
    // Twins built alike: one partition spec, then two (ClickHouse 26.9 merges a multi-spec table
    // only partly, and a small one not at all).
    for extra in [&["one_spec"][..], &[][..]] {
        let (_a, ours) = build_with(2, 12, extra);
        let (_b, theirs) = build_with(2, 12, extra);
        let (before, _) = own_view(&theirs).await;
        let optimize = [
            "SET allow_experimental_iceberg_compaction = 1",
            "SET iceberg_manifest_min_count_to_compact = 1",
            "OPTIMIZE TABLE t MANIFEST",
            "SELECT 1",
        ];
        fixtures::clickhouse_script(&theirs, &optimize)
            .expect("ClickHouse's OPTIMIZE TABLE t MANIFEST");
        let (their_manifests, _) = own_view(&theirs).await;
        if extra.is_empty() {
            assert!(groups(&before).len() > 1);
        } else {
            assert!(
                their_manifests.len() < before.len(),
                "ClickHouse rewrote: {their_manifests:?}"
            );
        }
        // OPTIMIZE through our SQL session, with ClickHouse's setting.
        let engine = icetrim::engine::Engine::builder()
            .clock(FixedClock::new(NOW))
            .build()
            .unwrap();
        let mut session = engine.session();
        let sql = format!(
            "CREATE TABLE t ENGINE = IcebergLocal('{}'); \
             SET iceberg_manifest_min_count_to_compact = 1; OPTIMIZE TABLE t MANIFEST",
            ours.display()
        );
        let results = session.execute(&sql).await.unwrap();
        assert!(
            results.last().unwrap().rows.is_empty(),
            "OPTIMIZE returns no rows"
        );
        // Same rows read by both engines on both tables, every ref.
        assert_eq!(ch_rows(&ours), ch_rows(&theirs), "{extra:?}");
        let (a, b) = (pyread(&ours).await, pyread(&theirs).await);
        assert_eq!(a["refs"], b["refs"], "{extra:?}");
        // No more manifests than the target requires per spec and content: one each here.
        let (our_manifests, _) = own_view(&ours).await;
        assert!(
            our_manifests.len() <= their_manifests.len(),
            "ours {our_manifests:?}, ClickHouse's {their_manifests:?}"
        );
        assert_eq!(our_manifests.len(), groups(&before).len());
    }
}

#[tokio::test]
async fn optimize_manifest_acts_only_above_the_threshold() {
    let (_tmp, dir) = build(2, 6);
    let (before, _) = own_view(&dir).await;
    let engine = icetrim::engine::Engine::builder()
        .clock(FixedClock::new(NOW))
        .build()
        .unwrap();
    let mut session = engine.session();
    let create = format!("CREATE TABLE t ENGINE = IcebergLocal('{}')", dir.display());
    session.execute(&create).await.unwrap();
    let at = format!(
        "SET iceberg_manifest_min_count_to_compact = {}",
        before.len()
    );
    session.execute(&at).await.unwrap();
    let plan = session
        .execute("EXPLAIN OPTIMIZE TABLE t MANIFEST")
        .await
        .unwrap();
    let rows = &plan.last().unwrap().rows;
    assert_eq!(
        rows.len(),
        before.len(),
        "one row per manifest, no new manifest"
    );
    assert!(rows.iter().all(|r| {
        r[4].to_string() == "keep"
            && r[5]
                .to_string()
                .contains("iceberg_manifest_min_count_to_compact")
    }));
    session.execute("OPTIMIZE TABLE t MANIFEST").await.unwrap();
    assert_eq!(own_view(&dir).await.0, before, "at the threshold: nothing");
    session
        .execute("SET allow_experimental_iceberg_compaction = 0")
        .await
        .unwrap();
    let e = session
        .execute("OPTIMIZE TABLE t MANIFEST")
        .await
        .unwrap_err();
    assert_eq!(e.kind(), icetrim::ErrorKind::BadArguments);
    assert!(
        e.message()
            .contains("allow_experimental_iceberg_compaction"),
        "{e}"
    );
    session
        .execute("SET allow_experimental_iceberg_compaction = 1, iceberg_manifest_min_count_to_compact = 1")
        .await
        .unwrap();
    session.execute("OPTIMIZE TABLE t MANIFEST").await.unwrap();
    assert!(own_view(&dir).await.0.len() < before.len());
}
