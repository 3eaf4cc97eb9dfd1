//! Compaction and partition specs, sort orders with transforms, and equality deletes on struct
//! fields, on tables pyiceberg writes:
//! - a table whose spec evolved (pyiceberg's `update_spec`) compacts into the default spec: every
//!   output file carries the default spec's id and the tuple pyiceberg's own transforms give each
//!   of its rows (bucket, truncate, day, month, year), pyiceberg's filtered scans (partition pruning)
//!   return the rows a full scan filters to, every snapshot reads as before, ClickHouse reads the
//!   current rows;
//! - the default sort order (bucket, truncate desc nulls last, day) orders each output file, as
//!   pyiceberg's transforms say;
//! - equality deletes naming fields of a struct (a null parent makes them null) are applied.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray, StructArray};
use arrow_schema::{DataType, Fields, Schema};
use icetrim::internals::iceberg::manifest::DataFile;
use icetrim::internals::iceberg::spec::DataContent;
use parquet::arrow::ArrowWriter;
use serde_json::Value;

use crate::compaction::{
    commit_deletes, compact_metrics, current_files, engine_sql, fixture, newest_metadata, py_rows,
    strings, with_id,
};

/// pyiceberg's check of the live data files: spec ids, paths, rows whose partition (computed by
/// pyiceberg's transforms) differs from their file's tuple.
async fn check_partitions(dir: &Path) -> Value {
    let md = newest_metadata(dir).await;
    fixture(&["check_partitions", &md])
}

/// The ids of a canonical row list (`[id, ...]` JSON arrays).
fn ids(rows: &[String]) -> Vec<Value> {
    let mut out: Vec<Value> = rows
        .iter()
        .map(|r| serde_json::from_str::<Value>(r).unwrap()[0].clone())
        .collect();
    out.sort_by_key(|v| v.as_i64().map_or(i64::MIN, |i| i));
    out
}

/// Compacts the evolved table with `rewrite_all`, checks rows, specs, tuples, pruning and
/// ClickHouse; returns the live data files after.
async fn repartition_and_check(dir: &Path, fx: &Value) -> Vec<DataFile> {
    let expected = strings(&fx["expected"]);
    let default_spec = fx["default_spec"].as_i64().unwrap();
    let (before, _) = py_rows(dir).await;
    let (data_before, _, _, start) = current_files(dir).await;
    assert_eq!(before[&start.to_string()], expected, "the fixture's rows");
    let specs_before = check_partitions(dir).await;
    let spec_set: BTreeSet<i64> = specs_before["spec_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    assert_eq!(spec_set.len(), 2, "files under two specs: {specs_before}");
    let results = engine_sql(
        dir,
        &["ALTER TABLE t EXECUTE rewrite_data_files(rewrite_all = 1)"],
    )
    .await;
    let m = compact_metrics(&results[0]);
    assert_eq!(
        m.rewritten_data_files_count as usize,
        data_before.len(),
        "{m:?}"
    );
    assert_eq!(m.failed_data_files_count, 0);
    let (data_after, deletes_after, op, now) = current_files(dir).await;
    assert_eq!(op, "replace");
    assert!(deletes_after.is_empty());
    // Every snapshot reads as before; the current one the expected multiset.
    let (after, errors) = py_rows(dir).await;
    for (sid, rows) in &before {
        assert_eq!(&after[sid], rows, "snapshot {sid} reads as before");
    }
    assert_eq!(after[&now.to_string()], expected, "errors: {errors}");
    // Every output: the default spec, each row's own partition (pyiceberg's transforms).
    let check = check_partitions(dir).await;
    assert!(check["bad"].as_array().unwrap().is_empty(), "{check}");
    assert_eq!(check["rows"].as_u64().unwrap() as usize, expected.len());
    for spec in check["spec_ids"].as_array().unwrap() {
        assert_eq!(spec.as_i64(), Some(default_spec), "{check}");
    }
    for f in &data_after {
        assert!(f.file_path.contains("-compacted-"), "{}", f.file_path);
    }
    // Partition pruning: filtered scans return what the full scan filters to, and prune.
    let md = newest_metadata(dir).await;
    let pruned = fixture(&["pruned", &md]);
    assert!(
        pruned["mismatches"].as_array().unwrap().is_empty(),
        "{pruned}"
    );
    let total = pruned["total_files"].as_u64().unwrap();
    assert!(
        pruned["planned"]
            .as_object()
            .unwrap()
            .values()
            .any(|n| n.as_u64().unwrap() < total),
        "some filter prunes files by the new partitions: {pruned}"
    );
    // ClickHouse reads the current rows.
    let ch = fixture(&["chcount", dir.to_str().unwrap()]);
    // ClickHouse prints ids as text, null as `\\N`.
    let mut ch_ids: Vec<Value> = ch["ids"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|v| match v.as_str() {
            Some("\\N") => Value::Null,
            Some(t) => t
                .parse::<i64>()
                .map_or(Value::String(t.into()), Value::from),
            None => v.clone(),
        })
        .collect();
    ch_ids.sort_by_key(|v| v.as_i64().map_or(i64::MIN, |i| i));
    assert_eq!(ch_ids, ids(&expected), "ClickHouse: {ch}");
    data_after
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_of_an_old_spec_are_split_by_the_default_specs_bucket_truncate_and_day() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    let fx = fixture(&["evolved", dir.to_str().unwrap(), "split"]);
    // EXPLAIN: the files of spec 0 (identity(cat)) cannot be placed without their rows.
    let explain = engine_sql(
        &dir,
        &["EXPLAIN ALTER TABLE t EXECUTE rewrite_data_files(rewrite_all = 1)"],
    )
    .await;
    let text = format!("{:?}", explain[0].rows);
    assert!(
        text.contains("re-partitioned onto the default spec 1"),
        "{text}"
    );
    assert!(text.contains("Str(\"*\")"), "a split group: {text}");
    let data = repartition_and_check(&dir, &fx).await;
    for f in &data {
        assert!(
            f.file_path.contains("/id_bucket=") && f.file_path.contains("/name_trunc="),
            "{} is in a folder of the default spec",
            f.file_path
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_whose_old_tuple_decides_the_month_join_that_partition() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    let fx = fixture(&["evolved", dir.to_str().unwrap(), "derive"]);
    let explain = engine_sql(
        &dir,
        &["EXPLAIN ALTER TABLE t EXECUTE rewrite_data_files(rewrite_all = 1)"],
    )
    .await;
    let text = format!("{:?}", explain[0].rows);
    assert!(!text.contains("Str(\"*\")"), "no split group: {text}");
    assert!(text.contains("rows of spec 0 re-partitioned"), "{text}");
    let data = repartition_and_check(&dir, &fx).await;
    // identity(cat), day(ts) -> identity(cat), month(ts): old files joined the groups of their
    // month, so each (cat, month) partition has exactly one output file.
    let partitions: BTreeSet<(String, String)> = strings(&fx["expected"])
        .iter()
        .map(|r| {
            let row: Value = serde_json::from_str(r).unwrap();
            let month = row[2]
                .as_str()
                .map_or("null".into(), |t| t[..7].to_string());
            (row[3].as_str().unwrap().to_string(), month)
        })
        .collect();
    assert_eq!(data.len(), partitions.len(), "{partitions:?}");
    for f in &data {
        assert!(f.file_path.contains("/ts_month="), "{}", f.file_path);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_of_an_hourly_spec_are_split_by_year_and_bucket() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    let fx = fixture(&["evolved", dir.to_str().unwrap(), "hour"]);
    let data = repartition_and_check(&dir, &fx).await;
    for f in &data {
        assert!(
            f.file_path.contains("/ts_year=") && f.file_path.contains("/id_bucket="),
            "{}",
            f.file_path
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sort_order_of_bucket_truncate_and_day_orders_each_output() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    let fx = fixture(&["sorted_transforms", dir.to_str().unwrap()]);
    let md = newest_metadata(&dir).await;
    let before = fixture(&["check_sorted", &md]);
    assert!(
        !before["unsorted"].as_array().unwrap().is_empty(),
        "the appends are not sorted: {before}"
    );
    let results = engine_sql(&dir, &["OPTIMIZE TABLE t"]).await;
    assert!(
        results[0]
            .warnings
            .iter()
            .all(|w| !w.contains("sort order")),
        "{:?}",
        results[0].warnings
    );
    let m = compact_metrics(&results[0]);
    assert_eq!(m.added_data_files_count, 1, "{m:?}");
    let md = newest_metadata(&dir).await;
    let after = fixture(&["check_sorted", &md]);
    assert!(after["unsorted"].as_array().unwrap().is_empty(), "{after}");
    assert_eq!(after["rows"].as_u64(), Some(60));
    let order_id = fx["order_id"].as_i64().unwrap();
    assert_eq!(after["sort_order_ids"], serde_json::json!([order_id]));
    let (rows, _) = py_rows(&dir).await;
    let (_, _, _, now) = current_files(&dir).await;
    assert_eq!(rows[&now.to_string()], strings(&fx["expected"]));
}

/// An equality delete file on struct fields: `s` (field 2) holding only the fields `ids` of
/// `x` (3, long) and `y` (4, string), plus `id` (1) when given.
fn nested_equality_delete(
    dir: &Path,
    name: &str,
    id: Option<Vec<Option<i64>>>,
    x: Option<Vec<Option<i64>>>,
    y: Option<Vec<Option<&str>>>,
) -> DataFile {
    let mut children = Vec::new();
    let mut arrays: Vec<ArrayRef> = Vec::new();
    let mut eq_ids = Vec::new();
    let mut len = 0;
    if let Some(x) = x {
        len = x.len();
        children.push(with_id("x", DataType::Int64, 3));
        arrays.push(Arc::new(Int64Array::from(x)));
        eq_ids.push(3);
    }
    if let Some(y) = y {
        len = y.len();
        children.push(with_id("y", DataType::Utf8, 4));
        arrays.push(Arc::new(StringArray::from(y)));
        eq_ids.push(4);
    }
    let s = StructArray::try_new(Fields::from(children.clone()), arrays, None).unwrap();
    let mut fields = vec![with_id("s", DataType::Struct(Fields::from(children)), 2)];
    let mut columns: Vec<ArrayRef> = vec![Arc::new(s)];
    if let Some(id) = id {
        fields.insert(0, with_id("id", DataType::Int64, 1));
        columns.insert(0, Arc::new(Int64Array::from(id)));
        eq_ids.insert(0, 1);
    }
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(schema.clone(), columns).unwrap();
    let mut w = ArrowWriter::try_new(Vec::new(), schema, None).unwrap();
    w.write(&batch).unwrap();
    let bytes = w.into_inner().unwrap();
    let path = dir.join("data").join(name);
    std::fs::write(&path, &bytes).unwrap();
    let mut f = DataFile::new(
        DataContent::EqualityDeletes,
        path.to_str().unwrap(),
        len as i64,
        bytes.len() as i64,
    );
    f.equality_ids = Some(eq_ids);
    f
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn equality_deletes_on_struct_fields_are_applied() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    let fx = fixture(&["nested", dir.to_str().unwrap()]);
    // s.x = 5 or s.x null (rows whose s is null have a null s.x too); and (id, s.y) = (1, "y1")
    // or (2, "nope").
    let by_x = nested_equality_delete(&dir, "eq-x.parquet", None, Some(vec![Some(5), None]), None);
    let by_id_y = nested_equality_delete(
        &dir,
        "eq-id-y.parquet",
        Some(vec![Some(1), Some(2)]),
        None,
        Some(vec![Some("y1"), Some("nope")]),
    );
    commit_deletes(&dir, vec![by_x, by_id_y]).await;
    let rows = fx["rows"].as_array().unwrap();
    let mut expected: Vec<String> = rows
        .iter()
        .filter(|r| {
            let x = r["x"].as_i64();
            let deleted_x = x.is_none() || x == Some(5);
            let deleted_id_y = r["id"].as_i64() == Some(1) && r["y"].as_str() == Some("y1");
            !deleted_x && !deleted_id_y
        })
        .map(|r| r["canon"].as_str().unwrap().to_string())
        .collect();
    expected.sort();
    assert!(expected.len() < rows.len() - 5, "the deletes remove rows");
    assert!(
        rows.iter()
            .any(|r| r["canon"].as_str().unwrap().ends_with("null]")),
        "some rows have a null struct"
    );
    let results = engine_sql(&dir, &["OPTIMIZE TABLE t"]).await;
    let m = compact_metrics(&results[0]);
    assert_eq!(m.removed_delete_files_count, 2, "{m:?}");
    let (_, deletes, op, now) = current_files(&dir).await;
    assert_eq!(op, "replace");
    assert!(deletes.is_empty());
    let (after, errors) = py_rows(&dir).await;
    assert_eq!(after[&now.to_string()], expected, "errors: {errors}");
}
