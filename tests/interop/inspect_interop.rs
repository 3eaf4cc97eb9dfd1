//! icetrim's metadata tables (`iceberg_files`, `iceberg_entries`, `iceberg_all_files`,
//! `iceberg_manifests`, `iceberg_all_manifests`, `iceberg_partitions`,
//! `iceberg_metadata_log_entries`, `iceberg_properties`) equal pyiceberg's `table.inspect.*()`
//! row by row on the fixture tables (v1, v2 with deletes, branches and tags, partitioned, evolved
//! specs), after the normalisation `tests/py/inspect_tables.py` states: timestamps in ms, maps as
//! sorted pairs, binary as hex, partition values and readable bounds as text per type.
//!
//! icetrim's side is read through the inspect layer directly (`internals::inspect::collect`) and
//! its Arrow rows turned into the same JSON; the columns pyiceberg lacks (`database`, `table`, the
//! scope's `snapshot_id` / `read_snapshot_id` and `ref`) are dropped, and a file's partition map is
//! widened to every partition field of the table (pyiceberg's union struct, nulls for fields
//! another spec has). `iceberg_all_files` is compared as a multiset (pyiceberg reads the distinct
//! manifests from a set, in no fixed order); `iceberg_partitions` as a multiset with null
//! partition values dropped (pyiceberg's struct unions only the snapshot's specs).

use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{
    DataType, Int8Type, Int32Type, Int64Type, TimestampMillisecondType,
};
use icetrim::internals::iceberg::manifest::DataFile;
use icetrim::internals::iceberg::metadata::TableMetadata;
use icetrim::internals::inspect::{InspectedTable, MetadataTable, Scope, collect};
use icetrim::internals::io::FileIO;
use serde_json::{Map, Value, json};

use crate::compaction::{
    commit_deletes, current_files, fixture, newest_metadata, write_deletion_vector,
};
use crate::support::fixtures::{make_fixture, now_ms, run_python_json};

/// One cell as JSON: numbers, text, hex for binary, maps as `[key, value]` pairs, lists, structs
/// as objects, timestamps as milliseconds.
fn cell(array: &dyn Array, i: usize) -> Value {
    if array.is_null(i) {
        return Value::Null;
    }
    match array.data_type() {
        DataType::Int8 => json!(array.as_primitive::<Int8Type>().value(i)),
        DataType::Int32 => json!(array.as_primitive::<Int32Type>().value(i)),
        DataType::Int64 => json!(array.as_primitive::<Int64Type>().value(i)),
        DataType::Boolean => json!(array.as_boolean().value(i)),
        DataType::Utf8 => json!(array.as_string::<i32>().value(i)),
        DataType::Binary => json!(hex(array.as_binary::<i32>().value(i))),
        DataType::Timestamp(_, _) => {
            json!(array.as_primitive::<TimestampMillisecondType>().value(i))
        }
        DataType::List(_) => {
            let items = array.as_list::<i32>().value(i);
            Value::Array((0..items.len()).map(|j| cell(items.as_ref(), j)).collect())
        }
        DataType::Map(_, _) => {
            let entries = array.as_map().value(i);
            let (k, v) = (entries.column(0), entries.column(1));
            Value::Array(
                (0..entries.len())
                    .map(|j| json!([cell(k.as_ref(), j), cell(v.as_ref(), j)]))
                    .collect(),
            )
        }
        DataType::Struct(fields) => {
            let s = array.as_struct();
            let mut m = Map::new();
            for (f, c) in fields.iter().zip(s.columns()) {
                m.insert(f.name().clone(), cell(c.as_ref(), i));
            }
            Value::Object(m)
        }
        other => panic!("no JSON form for {other}"),
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The rows of `batches` as JSON objects without the columns pyiceberg lacks.
fn rows(batches: &[RecordBatch], drop: &[&str]) -> Vec<Value> {
    let mut out = Vec::new();
    for b in batches {
        for i in 0..b.num_rows() {
            let mut row = Map::new();
            for (f, c) in b.schema().fields().iter().zip(b.columns()) {
                let name = f.name().as_str();
                if !["database", "table"].contains(&name) && !drop.contains(&name) {
                    row.insert(name.to_string(), cell(c.as_ref(), i));
                }
            }
            drop_v3_nulls(&mut row);
            if let Some(Value::Object(file)) = row.get_mut("data_file") {
                drop_v3_nulls(file);
            }
            out.push(Value::Object(row));
        }
    }
    out
}

/// The v3 content-file columns pyiceberg 0.12's `inspect` does not have: row lineage's
/// `first_row_id` (dropped; checked against the manifests in the v3 test) and the deletion-vector
/// columns (dropped where null, as on every file but a vector, so that a value there still fails
/// the comparison).
const V3_FILE_COLUMNS: [&str; 4] = [
    "first_row_id",
    "referenced_data_file",
    "content_offset",
    "content_size_in_bytes",
];

fn drop_v3_nulls(row: &mut Map<String, Value>) {
    row.remove("first_row_id");
    for name in V3_FILE_COLUMNS {
        if row.get(name) == Some(&Value::Null) {
            row.remove(name);
        }
    }
}

/// Every partition field name of the table, by field id (pyiceberg's union struct).
fn partition_names(m: &TableMetadata) -> Vec<String> {
    let mut by_id = std::collections::BTreeMap::new();
    for spec in m.partition_specs() {
        for f in &spec.fields {
            by_id.insert(f.field_id, f.name.clone());
        }
    }
    by_id.into_values().collect()
}

fn widen(partition: &mut Value, names: &[String]) {
    let pairs: Vec<(String, Value)> = partition
        .as_array()
        .expect("a partition map")
        .iter()
        .map(|p| (p[0].as_str().expect("a name").to_string(), p[1].clone()))
        .collect();
    *partition = Value::Array(
        names
            .iter()
            .map(|n| {
                let v = pairs
                    .iter()
                    .find(|(k, _)| k == n)
                    .map_or(Value::Null, |(_, v)| v.clone());
                json!([n, v])
            })
            .collect(),
    );
}

fn drop_null_partitions(row: &mut Value) {
    if let Some(p) = row.get_mut("partition").and_then(Value::as_array_mut) {
        p.retain(|pair| !pair[1].is_null());
    }
}

fn sorted(mut v: Vec<Value>) -> Vec<Value> {
    v.sort_by_key(|r| r.to_string());
    v
}

async fn icetrim_side(metadata_path: &Path) -> (TableMetadata, InspectedTable) {
    let path = metadata_path.to_str().expect("utf-8 path");
    let bytes = std::fs::read(path).expect("metadata file");
    let m = TableMetadata::parse(&bytes, path).expect("metadata parses");
    let t = InspectedTable {
        database: "db".into(),
        name: "t".into(),
        metadata: Arc::new(m.clone()),
        metadata_location: Some(path.to_string()),
        io: FileIO::local(),
        settings: icetrim::Settings::new(),
    };
    (m, t)
}

async fn compare(scenario: &str) {
    let fx = make_fixture(scenario, now_ms(), false);
    compare_at(scenario, &fx.metadata_path()).await;
}

/// The deletion vector `dv` as a row of a content-file table shows it: its v3 columns equal what
/// was written, and they are then removed (pyiceberg 0.12 has no such columns).
fn check_and_strip_dv(file: &mut Value, dv: &DataFile) -> bool {
    if file["file_path"] != json!(dv.file_path) {
        return false;
    }
    let expected = json!({
        "content": 1,
        "file_format": "PUFFIN",
        "record_count": dv.record_count,
        "file_size_in_bytes": dv.file_size_in_bytes,
        "referenced_data_file": dv.referenced_data_file,
        "content_offset": dv.content_offset,
        "content_size_in_bytes": dv.content_size_in_bytes,
    });
    let o = file.as_object_mut().expect("a row is an object");
    for (name, value) in expected.as_object().expect("an object") {
        assert_eq!(o.get(name), Some(value), "deletion vector column {name}");
    }
    for name in V3_FILE_COLUMNS {
        o.remove(name);
    }
    true
}

/// `first_row_id` by `file_path`, as `iceberg_files` shows them.
fn ids_by_path(batches: &[RecordBatch]) -> std::collections::HashMap<String, Option<i64>> {
    let mut ids = std::collections::HashMap::new();
    for b in batches {
        let paths = b
            .column_by_name("file_path")
            .expect("file_path")
            .as_string::<i32>();
        let first = b.column_by_name("first_row_id").expect("first_row_id");
        let first = first.as_primitive::<Int64Type>();
        for i in 0..b.num_rows() {
            let id = (!first.is_null(i)).then(|| first.value(i));
            ids.insert(paths.value(i).to_string(), id);
        }
    }
    ids
}

/// `rows` (files, or entries with a `data_file`) without the row of `dv`, which must be there
/// once and show what was written.
fn without_dv(mut rows: Vec<Value>, dv: &DataFile) -> Vec<Value> {
    let before = rows.len();
    rows.retain_mut(|row| {
        let file = match row.get("data_file") {
            Some(_) => &mut row["data_file"],
            None => row,
        };
        !check_and_strip_dv(file, dv)
    });
    assert_eq!(rows.len() + 1, before, "one row of the deletion vector");
    rows
}

async fn compare_at(scenario: &str, metadata_path: &Path) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/inspect_tables.py");
    let py = run_python_json(&script, &[metadata_path.to_str().expect("utf-8 path")]);
    let (m, t) = icetrim_side(metadata_path).await;
    let names = partition_names(&m);
    let get = |kind: MetadataTable| {
        let t = &t;
        async move {
            collect(kind, t, &Scope::default())
                .await
                .unwrap_or_else(|e| panic!("{scenario}: {}: {e}", kind.name()))
        }
    };
    let py_rows = |key: &str| -> Vec<Value> {
        py[key]
            .as_array()
            .unwrap_or_else(|| panic!("{key}: {}", py))
            .clone()
    };

    let mut files = rows(&get(MetadataTable::Files).await, &["snapshot_id", "ref"]);
    files
        .iter_mut()
        .for_each(|r| widen(&mut r["partition"], &names));
    assert_eq!(files, py_rows("files"), "{scenario}: iceberg_files");

    let mut entries = rows(
        &get(MetadataTable::Entries).await,
        &["read_snapshot_id", "ref"],
    );
    for entry in entries.iter_mut() {
        widen(&mut entry["data_file"]["partition"], &names);
        // pyiceberg's `inspect.entries` turns absent count maps into empty ones (`or {}`; its
        // `inspect.files` keeps them null, as icetrim and Java do): ClickHouse writes none.
        for map in ["value_counts", "null_value_counts", "nan_value_counts"] {
            if entry["data_file"][map].is_null() {
                entry["data_file"][map] = json!([]);
            }
        }
    }
    assert_eq!(entries, py_rows("entries"), "{scenario}: iceberg_entries");

    let mut all_files = rows(&get(MetadataTable::AllFiles).await, &[]);
    all_files
        .iter_mut()
        .for_each(|r| widen(&mut r["partition"], &names));
    assert_eq!(
        sorted(all_files),
        sorted(py_rows("all_files")),
        "{scenario}: iceberg_all_files"
    );

    let manifests = rows(
        &get(MetadataTable::Manifests).await,
        &["snapshot_id", "ref"],
    );
    assert_eq!(
        manifests,
        py_rows("manifests"),
        "{scenario}: iceberg_manifests"
    );
    let all_manifests = rows(&get(MetadataTable::AllManifests).await, &[]);
    assert_eq!(
        all_manifests,
        py_rows("all_manifests"),
        "{scenario}: iceberg_all_manifests"
    );

    let mut partitions = rows(
        &get(MetadataTable::Partitions).await,
        &["snapshot_id", "ref"],
    );
    let mut py_partitions = py_rows("partitions");
    for r in partitions.iter_mut().chain(py_partitions.iter_mut()) {
        drop_null_partitions(r);
        if let Some(o) = r.as_object_mut() {
            // pyiceberg has no spec_id column on unpartitioned tables.
            if names.is_empty() {
                o.remove("spec_id");
            }
        }
    }
    assert_eq!(
        sorted(partitions),
        sorted(py_partitions),
        "{scenario}: iceberg_partitions"
    );

    let log = rows(&get(MetadataTable::MetadataLogEntries).await, &[]);
    assert_eq!(
        log,
        py_rows("metadata_log_entries"),
        "{scenario}: iceberg_metadata_log_entries"
    );
    let props: Vec<Value> = rows(&get(MetadataTable::Properties).await, &[])
        .into_iter()
        .map(|r| json!([r["key"], r["value"]]))
        .collect();
    assert_eq!(
        props,
        py_rows("properties"),
        "{scenario}: iceberg_properties"
    );
    assert!(
        !py_rows("files").is_empty() && !py_rows("all_manifests").is_empty(),
        "{scenario}: the fixture has files, so the comparison compared something"
    );
}

#[tokio::test]
async fn metadata_tables_match_pyiceberg_v1() {
    compare("py_v1_linear").await;
}

#[tokio::test]
async fn metadata_tables_match_pyiceberg_v2_deletes() {
    compare("py_v2_deletes").await;
}

#[tokio::test]
async fn metadata_tables_match_pyiceberg_v2_branches_tags() {
    compare("py_v2_branches_tags").await;
}

#[tokio::test]
async fn metadata_tables_match_pyiceberg_v2_partitioned() {
    compare("py_v2_partitioned").await;
}

#[tokio::test]
async fn metadata_tables_match_pyiceberg_evolved_specs() {
    compare("py_v2_refs_specs").await;
}

#[tokio::test]
async fn metadata_tables_match_pyiceberg_delete_files() {
    compare("py_v2_delete_files").await;
}

/// A v3 table written by ClickHouse (its position deletes included) equals pyiceberg's view; then
/// a deletion vector is committed. pyiceberg 0.12 cannot list it (its `inspect.entries` fails on a
/// content file without column sizes, as deletion vectors are written), so the vector's row is
/// compared with the content-file entry the test wrote, and every other row with the rows before
/// it; the partition counts grow by one position-delete file of two rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_tables_match_pyiceberg_v3_and_the_deletion_vector_written() {
    let tmp = tempfile::tempdir().expect("temporary folder");
    let dir = tmp.path().join("t");
    fixture(&["clickhouse", dir.to_str().expect("utf-8 path"), "3"]);
    let before = newest_metadata(&dir).await;
    compare_at("clickhouse_v3", Path::new(&before)).await;
    let (data, _, _, _) = current_files(&dir).await;
    let target = &data.first().expect("ClickHouse wrote data files").file_path;
    // Row lineage: each data file's first row id as the manifests give it (after inheritance).
    let (_, t) = icetrim_side(Path::new(&before)).await;
    let batches = collect(MetadataTable::Files, &t, &Scope::default())
        .await
        .expect("iceberg_files");
    let ids = ids_by_path(&batches);
    for file in &data {
        assert!(file.first_row_id.is_some(), "{}", file.file_path);
        assert_eq!(
            ids.get(&file.file_path),
            Some(&file.first_row_id),
            "{}",
            file.file_path
        );
    }
    let dv = write_deletion_vector(&dir, "dv-inspect.puffin", target, &[0, 2]);
    commit_deletes(&dir, vec![dv.clone()]).await;
    let after = newest_metadata(&dir).await;
    let read = |path: String, kind: MetadataTable, drop: &'static [&'static str]| async move {
        let (_, t) = icetrim_side(Path::new(&path)).await;
        let batches = collect(kind, &t, &Scope::default())
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", kind.name()));
        rows(&batches, drop)
    };
    let scoped: &[&str] = &["snapshot_id", "ref", "read_snapshot_id"];
    // The vector's commit leaves every earlier file and entry as it was.
    for kind in [MetadataTable::Files, MetadataTable::Entries] {
        let old = read(before.clone(), kind, scoped).await;
        let new = without_dv(read(after.clone(), kind, scoped).await, &dv);
        assert_eq!(sorted(new), sorted(old), "{}", kind.name());
    }
    let count = |rows: &[Value], column: &str| -> i64 {
        rows.iter().map(|r| r[column].as_i64().unwrap_or(0)).sum()
    };
    let old = read(before.clone(), MetadataTable::Partitions, scoped).await;
    let new = read(after.clone(), MetadataTable::Partitions, scoped).await;
    assert_eq!(
        count(&new, "position_delete_file_count"),
        count(&old, "position_delete_file_count") + 1
    );
    assert_eq!(
        count(&new, "position_delete_record_count"),
        count(&old, "position_delete_record_count") + 2
    );
}

/// A table from icetrim's own generator: a mixed history (appends, deletes with delete files,
/// overwrites, compactions, merges) over two partitions, with branches, tags and a staged snapshot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_tables_match_pyiceberg_generated_mixed_history() {
    use icetrim::internals::generate::{GenerateOptions, generate};
    use icetrim::internals::iceberg::spec::FormatVersion;
    let tmp = tempfile::tempdir().expect("temporary folder");
    let location = tmp.path().join("t").to_string_lossy().into_owned();
    let mut opts = GenerateOptions::new(&location, FormatVersion::V2, 40, 3, 17, now_ms());
    opts.branches = 2;
    opts.tags = 2;
    opts.staged = 1;
    opts.partitions = 2;
    opts.write_data_files = false;
    let generated = generate(&FileIO::local(), &opts).await.expect("generate");
    compare_at("generated_mixed", Path::new(&generated.metadata_path)).await;
}
