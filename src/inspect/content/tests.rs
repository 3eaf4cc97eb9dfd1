//! `iceberg_files` and `iceberg_entries` over generated tables (real manifests in memory).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, AsArray, Int8Array, Int64Array, MapArray, RecordBatch, StringArray, StructArray,
};
use datafusion::arrow::datatypes::Int64Type;

use crate::error::ErrorKind;
use crate::generate::{GenerateOptions, Generated, generate};
use crate::iceberg::locate::{MetadataSettings, locate};
use crate::iceberg::spec::FormatVersion;
use crate::inspect::{InspectedTable, MetadataTable, Scope, collect};
use crate::io::FileIO;

async fn table(location: &str, partitions: usize) -> (InspectedTable, Generated) {
    let io = FileIO::memory();
    let mut o = GenerateOptions::new(location, FormatVersion::V2, 12, 3, 7, 1_000_000_000_000);
    o.partitions = partitions;
    o.branches = 1;
    o.tags = 1;
    o.collect_expected = true;
    o.max_manifests = 4;
    let generated = generate(&io, &o).await.unwrap();
    (open(io, location, "t").await, generated)
}

/// The table at `location` as `db.name`.
async fn open(io: FileIO, location: &str, name: &str) -> InspectedTable {
    let located = locate(&io, location, &MetadataSettings::default())
        .await
        .unwrap();
    InspectedTable {
        database: "db".into(),
        name: name.into(),
        metadata: Arc::new(located.metadata),
        metadata_location: Some(located.path),
        io,
        settings: crate::settings::Settings::new(),
    }
}

fn strings(batch: &RecordBatch, name: &str) -> Vec<Option<String>> {
    let col = batch.column_by_name(name).unwrap();
    let col = col.as_any().downcast_ref::<StringArray>().unwrap();
    col.iter().map(|v| v.map(str::to_string)).collect()
}

fn ints(batch: &RecordBatch, name: &str) -> Vec<Option<i64>> {
    let col = batch.column_by_name(name).unwrap();
    col.as_primitive::<Int64Type>().iter().collect()
}

fn contents(batch: &RecordBatch, col: &Int8Array) -> Vec<i8> {
    let _ = batch;
    col.values().to_vec()
}

/// `(file_path, content)` of every row of `iceberg_files` within `scope`.
async fn files_of(t: &InspectedTable, scope: &Scope) -> Vec<(String, i8)> {
    let batches = collect(MetadataTable::Files, t, scope).await.unwrap();
    let mut out = Vec::new();
    for b in &batches {
        assert!(b.num_rows() <= super::BATCH_ROWS);
        let content = b.column_by_name("content").unwrap();
        let content = content.as_any().downcast_ref::<Int8Array>().unwrap();
        let paths = strings(b, "file_path");
        for (p, c) in paths.into_iter().zip(contents(b, content)) {
            out.push((p.unwrap(), c));
        }
    }
    out
}

fn data_paths(rows: &[(String, i8)]) -> BTreeSet<String> {
    rows.iter()
        .filter(|(_, c)| *c == 0)
        .map(|(p, _)| p.clone())
        .collect()
}

/// The live data files of `main`, of a branch and of a tag are exactly the ones the generator
/// says each ref plans; the `ref` and `snapshot_id` columns say what was read.
#[tokio::test]
async fn files_are_the_live_files_of_the_chosen_snapshot() {
    let (t, g) = table("memory://files", 0).await;
    for r in &g.refs {
        let scope = if r.name == "main" {
            Scope::default()
        } else {
            Scope {
                snapshot_id: None,
                ref_name: Some(r.name.clone()),
            }
        };
        let rows = files_of(&t, &scope).await;
        let expected: BTreeSet<String> = g.expected[&r.name].data.iter().cloned().collect();
        assert_eq!(data_paths(&rows), expected, "ref {}", r.name);
        assert_eq!(
            rows.len(),
            rows.iter().collect::<BTreeSet<_>>().len(),
            "no duplicates"
        );
        let deletes: BTreeSet<String> = rows
            .iter()
            .filter(|(_, c)| *c != 0)
            .map(|(p, _)| p.clone())
            .collect();
        for d in &g.expected[&r.name].deletes {
            assert!(
                deletes.contains(d),
                "ref {}: delete file {d} is live",
                r.name
            );
        }
        let batches = collect(MetadataTable::Files, &t, &scope).await.unwrap();
        for b in &batches {
            assert!(
                strings(b, "ref")
                    .iter()
                    .all(|v| v.as_deref() == Some(r.name.as_str()))
            );
            assert!(
                ints(b, "snapshot_id")
                    .iter()
                    .all(|v| *v == Some(r.snapshot_id))
            );
        }
        // The same snapshot by id: the same files, no ref named.
        let by_id = Scope {
            snapshot_id: Some(r.snapshot_id),
            ref_name: None,
        };
        assert_eq!(files_of(&t, &by_id).await, rows, "ref {}", r.name);
        for b in &collect(MetadataTable::Files, &t, &by_id).await.unwrap() {
            assert!(strings(b, "ref").iter().all(Option::is_none));
        }
    }
}

#[tokio::test]
async fn unknown_snapshots_and_refs_are_clear_errors() {
    let (t, g) = table("memory://unknown", 0).await;
    for table in [MetadataTable::Files, MetadataTable::Entries] {
        let scope = Scope {
            snapshot_id: Some(42),
            ref_name: None,
        };
        let e = collect(table, &t, &scope).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BadArguments);
        assert!(
            e.message().contains("db.t") && e.message().contains("snapshot 42"),
            "{e}"
        );
        let scope = Scope {
            snapshot_id: None,
            ref_name: Some("nope".into()),
        };
        let e = collect(table, &t, &scope).await.unwrap_err();
        assert!(
            e.message().contains("db.t") && e.message().contains("'nope'"),
            "{e}"
        );
    }
    // A snapshot id and a ref naming another snapshot: no rows (the predicates exclude each other).
    let other = g
        .refs
        .iter()
        .find(|r| r.snapshot_id != g.refs[0].snapshot_id)
        .unwrap();
    let scope = Scope {
        snapshot_id: Some(g.refs[0].snapshot_id),
        ref_name: Some(other.name.clone()),
    };
    assert!(files_of(&t, &scope).await.is_empty());
}

#[tokio::test]
async fn a_table_without_snapshots_has_no_files() {
    let (mut t, _) = table("memory://empty", 0).await;
    let mut json = t.metadata.json();
    json.insert("current-snapshot-id".into(), serde_json::json!(-1));
    json.insert("snapshots".into(), serde_json::json!([]));
    json.insert("refs".into(), serde_json::json!({}));
    json.insert("snapshot-log".into(), serde_json::json!([]));
    let m = crate::iceberg::metadata::TableMetadata::from_json(json, "x.metadata.json").unwrap();
    t.metadata = Arc::new(m);
    for table in [MetadataTable::Files, MetadataTable::Entries] {
        assert!(
            collect(table, &t, &Scope::default())
                .await
                .unwrap()
                .is_empty()
        );
    }
}

/// Entries: every entry of the snapshot's manifests, the live ones exactly `iceberg_files`'
/// rows; inherited snapshot ids and sequence numbers are filled for every live entry, and an
/// ADDED entry's data sequence number is its manifest's.
#[tokio::test]
async fn entries_hold_every_entry_with_inherited_fields() {
    let (t, _) = table("memory://entries", 0).await;
    let batches = collect(MetadataTable::Entries, &t, &Scope::default())
        .await
        .unwrap();
    let files: BTreeSet<(String, i8)> = files_of(&t, &Scope::default()).await.into_iter().collect();
    let current = t.metadata.current_snapshot().unwrap().sequence_number;
    let mut live = BTreeSet::new();
    let mut statuses = BTreeMap::<i8, usize>::new();
    for b in &batches {
        let status = b.column_by_name("status").unwrap();
        let status = status.as_any().downcast_ref::<Int8Array>().unwrap();
        let df = b.column_by_name("data_file").unwrap();
        let df = df.as_any().downcast_ref::<StructArray>().unwrap();
        let paths = df
            .column_by_name("file_path")
            .unwrap()
            .as_string::<i32>()
            .clone();
        let content = df.column_by_name("content").unwrap();
        let content = content.as_any().downcast_ref::<Int8Array>().unwrap();
        let snap = ints(b, "snapshot_id");
        let seq = ints(b, "sequence_number");
        let file_seq = ints(b, "file_sequence_number");
        for i in 0..b.num_rows() {
            *statuses.entry(status.value(i)).or_default() += 1;
            assert!(snap[i].is_some(), "snapshot id inherited");
            if status.value(i) != 2 {
                live.insert((paths.value(i).to_string(), content.value(i)));
                let (s, fs) = (seq[i].unwrap(), file_seq[i].unwrap());
                assert!(
                    s >= 1 && s <= current && fs >= 1 && fs <= current,
                    "{s} {fs}"
                );
            }
        }
    }
    assert_eq!(live, files);
    assert!(statuses.contains_key(&1), "ADDED entries: {statuses:?}");
    assert!(statuses.keys().all(|s| (0..=2).contains(s)));
}

/// Partition values and readable bounds are text by type: the generator's identity(part) int
/// partition and the `part` column's one-value bounds agree on every data file.
#[tokio::test]
async fn partitions_and_readable_metrics_are_rendered() {
    let (t, _) = table("memory://parts", 3).await;
    let batches = collect(MetadataTable::Files, &t, &Scope::default())
        .await
        .unwrap();
    let mut seen = 0;
    for b in &batches {
        let content = b.column_by_name("content").unwrap();
        let content = content.as_any().downcast_ref::<Int8Array>().unwrap();
        let partition = b.column_by_name("partition").unwrap();
        let partition = partition.as_any().downcast_ref::<MapArray>().unwrap();
        let metrics = b.column_by_name("readable_metrics").unwrap();
        let metrics = metrics.as_any().downcast_ref::<MapArray>().unwrap();
        for i in 0..b.num_rows() {
            let p = partition.value(i);
            let keys = p.column(0).as_string::<i32>();
            let values = p.column(1).as_string::<i32>();
            assert_eq!(keys.value(0), "part");
            let part = values.value(0).to_string();
            assert!(["0", "1", "2"].contains(&part.as_str()), "{part}");
            let m = metrics.value(i);
            let names: Vec<&str> = m.column(0).as_string::<i32>().iter().flatten().collect();
            assert_eq!(names, ["id", "data", "part"]);
            let per_column = m.column(1).as_any().downcast_ref::<StructArray>().unwrap();
            let lower = per_column
                .column_by_name("lower_bound")
                .unwrap()
                .as_string::<i32>()
                .clone();
            let upper = per_column
                .column_by_name("upper_bound")
                .unwrap()
                .as_string::<i32>()
                .clone();
            let counts = per_column.column_by_name("value_count").unwrap();
            let counts: &Int64Array = counts.as_any().downcast_ref().unwrap();
            let records = ints(b, "record_count")[i];
            assert_eq!(counts.is_valid(0).then(|| counts.value(0)), records);
            if content.value(i) == 0 {
                assert_eq!(
                    (lower.value(2), upper.value(2)),
                    (part.as_str(), part.as_str())
                );
                assert!(lower.is_null(0) && upper.is_null(1));
                seen += 1;
            }
        }
    }
    assert!(seen > 0);
}

#[test]
fn schemas_hold_pyiceberg_columns_in_order() {
    let names = |t: MetadataTable| -> Vec<String> {
        t.schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect()
    };
    assert_eq!(
        names(MetadataTable::Files)[2..],
        [
            "content",
            "file_path",
            "file_format",
            "spec_id",
            "partition",
            "record_count",
            "file_size_in_bytes",
            "column_sizes",
            "value_counts",
            "null_value_counts",
            "nan_value_counts",
            "lower_bounds",
            "upper_bounds",
            "key_metadata",
            "split_offsets",
            "equality_ids",
            "sort_order_id",
            "first_row_id",
            "referenced_data_file",
            "content_offset",
            "content_size_in_bytes",
            "readable_metrics",
            "snapshot_id",
            "ref"
        ]
    );
    assert_eq!(
        names(MetadataTable::Entries)[2..],
        [
            "status",
            "snapshot_id",
            "sequence_number",
            "file_sequence_number",
            "data_file",
            "readable_metrics",
            "read_snapshot_id",
            "ref"
        ]
    );
    assert!(MetadataTable::Files.is_per_snapshot() && MetadataTable::Files.reads_manifests());
    assert!(MetadataTable::Entries.is_per_snapshot() && MetadataTable::Entries.reads_manifests());
    assert!(!MetadataTable::History.reads_manifests());
}

fn total_rows(batches: &[RecordBatch]) -> usize {
    batches.iter().map(RecordBatch::num_rows).sum()
}

/// The distinct manifests of every snapshot and their entry counts, read independently.
async fn every_manifest(t: &InspectedTable) -> (usize, BTreeMap<String, (usize, usize)>) {
    use crate::iceberg::manifest::read_manifest;
    use crate::iceberg::manifest_list::read_manifest_list;
    let mut listed = 0;
    let mut manifests = BTreeMap::new();
    for s in t.metadata.snapshots() {
        let path = s.manifest_list.clone().unwrap();
        let list = read_manifest_list(&t.io.read(&path).await.unwrap(), &path).unwrap();
        listed += list.len();
        for m in list {
            let bytes = t.io.read(&m.manifest_path).await.unwrap();
            let entries = read_manifest(&bytes, "m").unwrap().entries;
            let live = entries.iter().filter(|e| e.status.is_live()).count();
            manifests.insert(m.manifest_path, (entries.len(), live));
        }
    }
    (listed, manifests)
}

/// `iceberg_manifests` is the current manifest list; the `all_` tables cover every snapshot,
/// `all_manifests` one row per (snapshot, manifest), `all_files`/`all_entries` each distinct
/// manifest once.
#[tokio::test]
async fn manifests_and_all_tables_cover_what_the_lists_hold() {
    let (t, _) = table("memory://all", 2).await;
    let current = t.metadata.current_snapshot().unwrap();
    let path = current.manifest_list.clone().unwrap();
    let list =
        crate::iceberg::manifest_list::read_manifest_list(&t.io.read(&path).await.unwrap(), &path)
            .unwrap();
    let batches = collect(MetadataTable::Manifests, &t, &Scope::default())
        .await
        .unwrap();
    let paths: Vec<String> = batches
        .iter()
        .flat_map(|b| strings(b, "path"))
        .flatten()
        .collect();
    let expected: Vec<String> = list.iter().map(|m| m.manifest_path.clone()).collect();
    assert_eq!(paths, expected);
    for b in &batches {
        assert!(
            ints(b, "snapshot_id")
                .iter()
                .all(|v| *v == Some(current.snapshot_id))
        );
        let summaries = b.column_by_name("partition_summaries").unwrap();
        let summaries = summaries.as_list::<i32>();
        assert!(
            (0..b.num_rows()).all(|i| summaries.value(i).len() == 1),
            "one per field"
        );
    }

    let (listed, manifests) = every_manifest(&t).await;
    let all = collect(MetadataTable::AllManifests, &t, &Scope::default())
        .await
        .unwrap();
    assert_eq!(total_rows(&all), listed);
    let refs: BTreeSet<i64> = all
        .iter()
        .flat_map(|b| ints(b, "reference_snapshot_id"))
        .flatten()
        .collect();
    let snapshots: BTreeSet<i64> = t
        .metadata
        .snapshots()
        .iter()
        .map(|s| s.snapshot_id)
        .collect();
    assert_eq!(refs, snapshots);

    let entries = collect(MetadataTable::AllEntries, &t, &Scope::default())
        .await
        .unwrap();
    assert_eq!(
        total_rows(&entries),
        manifests.values().map(|(all, _)| all).sum::<usize>()
    );
    let files = collect(MetadataTable::AllFiles, &t, &Scope::default())
        .await
        .unwrap();
    assert_eq!(
        total_rows(&files),
        manifests.values().map(|(_, live)| live).sum::<usize>()
    );
    assert!(
        manifests.len() < listed,
        "manifests are shared between snapshots: dedup is tested"
    );
    let all_paths: BTreeSet<String> = files
        .iter()
        .flat_map(|b| strings(b, "file_path"))
        .flatten()
        .collect();
    for (p, _) in files_of(&t, &Scope::default()).await {
        assert!(all_paths.contains(&p));
    }
}

/// Partition counts add up to the live files of the snapshot.
#[tokio::test]
async fn partitions_count_the_live_files() {
    let (t, _) = table("memory://partitions", 3).await;
    let files = collect(MetadataTable::Files, &t, &Scope::default())
        .await
        .unwrap();
    let mut data = (0i64, 0i64, 0i64);
    let mut deletes = 0i64;
    for b in &files {
        let content = b.column_by_name("content").unwrap();
        let content = content.as_any().downcast_ref::<Int8Array>().unwrap();
        let records = ints(b, "record_count");
        let sizes = ints(b, "file_size_in_bytes");
        for i in 0..b.num_rows() {
            if content.value(i) == 0 {
                data.0 += 1;
                data.1 += records[i].unwrap();
                data.2 += sizes[i].unwrap();
            } else {
                deletes += 1;
            }
        }
    }
    let parts = collect(MetadataTable::Partitions, &t, &Scope::default())
        .await
        .unwrap();
    let mut got = (0i64, 0i64, 0i64);
    let mut got_deletes = 0i64;
    let mut rows = 0;
    for b in &parts {
        let i32s = |name: &str| -> Vec<i64> {
            b.column_by_name(name)
                .unwrap()
                .as_primitive::<datafusion::arrow::datatypes::Int32Type>()
                .values()
                .iter()
                .map(|v| i64::from(*v))
                .collect()
        };
        got.0 += i32s("file_count").iter().sum::<i64>();
        got.1 += ints(b, "record_count").iter().flatten().sum::<i64>();
        got.2 += ints(b, "total_data_file_size_in_bytes")
            .iter()
            .flatten()
            .sum::<i64>();
        got_deletes += i32s("position_delete_file_count").iter().sum::<i64>()
            + i32s("equality_delete_file_count").iter().sum::<i64>();
        assert!(
            ints(b, "last_updated_snapshot_id")
                .iter()
                .all(Option::is_some)
        );
        rows += b.num_rows();
    }
    assert_eq!(got, data);
    assert_eq!(got_deletes, deletes);
    assert!((1..=3).contains(&rows), "{rows} partitions");
}

/// A manifest larger than a batch is decoded a part at a time (whole Avro blocks, at least a
/// batch's worth), and its parts, inheritance included (v3 row ids carry from part to part), are
/// exactly the whole manifest's entries.
#[tokio::test]
async fn a_large_manifest_comes_in_parts_equal_to_the_whole() {
    use super::{BATCH_ROWS, manifest_entries, manifest_list};
    use crate::iceberg::manifest::{inherit, read_manifest};
    let location = "memory:///large";
    let io = FileIO::memory();
    let o = GenerateOptions::new(location, FormatVersion::V3, 1, 30_000, 3, 1_000_000_000_000);
    generate(&io, &o).await.unwrap();
    let t = open(io, location, "large").await;
    let snapshot = t.metadata.snapshots().last().unwrap().clone();
    let list = manifest_list(&t, &snapshot).await.unwrap();
    assert_eq!(list.len(), 1);
    let bytes = t.io.read(&list[0].manifest_path).await.unwrap();
    let mut whole = read_manifest(&bytes, "m").unwrap().entries;
    inherit(&mut whole, &list[0]);
    assert_eq!(whole.len(), 30_000);
    assert!(
        whole.iter().any(|e| e.data_file.first_row_id.is_some()),
        "v3 row ids are inherited"
    );
    let mut parts = Vec::new();
    let mut entries = manifest_entries(&t, &list);
    while let Some(part) = entries.next().await {
        let (manifest, part) = part.unwrap();
        assert_eq!(manifest.manifest_path, list[0].manifest_path);
        parts.push(part);
    }
    assert!(parts.len() > 1, "{} part(s)", parts.len());
    let (last, full) = parts.split_last().unwrap();
    assert!(full.iter().all(|p| p.len() >= BATCH_ROWS));
    assert!(!last.is_empty());
    assert_eq!(parts.concat(), whole);
}
