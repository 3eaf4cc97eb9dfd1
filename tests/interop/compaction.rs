//! Compaction (`OPTIMIZE TABLE`, `rewrite_data_files`) on real tables: pyiceberg tables of every
//! type (appends and a copy-on-write delete, partitioned and not), ClickHouse tables with position
//! deletes (v2 and v3), equality deletes and a v3 deletion vector committed by us. After the run:
//! every snapshot reads exactly the rows it read before (pyiceberg, ClickHouse where they can; the
//! expected multiset always; floats compared by their bits), the current snapshot is a `replace`
//! with fewer data files and no delete file left, v3 row ids survive; then `expire_snapshots`
//! removes the replaced files and the rows stay. A delete committed while compaction runs fails
//! the group it touches (no row comes back).

use crate::support::fixtures::{python, run_python_json};

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use bytes::Bytes;
use icetrim::engine::{Engine, Metrics};
use icetrim::internals::iceberg::locate::{MetadataSettings, locate};
use icetrim::internals::iceberg::manifest::{DataFile, inherit, read_manifest};
use icetrim::internals::iceberg::manifest_list::read_manifest_list;
use icetrim::internals::iceberg::spec::DataContent;
use icetrim::internals::iceberg::txn::{CommitRequest, FileChanges, Operation, commit_changes};
use icetrim::internals::io::{FaultyStore, FileIO, Op, StoreHook};
use icetrim::internals::maintain::compact::rewrite::deletion_vector_blob;
use icetrim::{CompactMetrics, Table};
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use parquet::arrow::{ArrowWriter, PARQUET_FIELD_ID_META_KEY};
use serde_json::Value;

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/py/compaction_fixture.py")
}

fn fixture(args: &[&str]) -> Value {
    let _ = python();
    run_python_json(&script(), args)
}

fn strings(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = v
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect();
    out.sort();
    out
}

/// Every snapshot's rows as pyiceberg reads them (snapshot id → rows), and the errors.
async fn py_rows(dir: &Path) -> (BTreeMap<String, Vec<String>>, Value) {
    let md = newest_metadata(dir).await;
    let out = fixture(&["rows", &md]);
    let snaps = out["snapshots"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), strings(v)))
        .collect();
    (snaps, out["errors"].clone())
}

async fn newest_metadata(dir: &Path) -> String {
    locate(
        &FileIO::local(),
        dir.to_str().unwrap(),
        &MetadataSettings::default(),
    )
    .await
    .unwrap()
    .path
}

/// Live files of the current snapshot: (data files, delete files), the operation, the snapshot.
async fn current_files(dir: &Path) -> (Vec<DataFile>, Vec<DataFile>, String, i64) {
    let io = FileIO::local();
    let located = locate(&io, dir.to_str().unwrap(), &MetadataSettings::default())
        .await
        .unwrap();
    let snap = located.metadata.current_snapshot().unwrap().clone();
    let list_path = snap.manifest_list.clone().unwrap();
    let list = read_manifest_list(&io.read(&list_path).await.unwrap(), &list_path).unwrap();
    let (mut data, mut deletes) = (Vec::new(), Vec::new());
    for m in &list {
        let mut manifest = read_manifest(&io.read(&m.manifest_path).await.unwrap(), "m").unwrap();
        inherit(&mut manifest.entries, m);
        for e in manifest.entries {
            if !e.status.is_live() {
                continue;
            }
            let mut f = e.data_file;
            // Keep the inherited data sequence number at hand for the lineage check.
            f.extra.push((
                "__seq".into(),
                apache_avro::types::Value::Long(e.sequence_number.unwrap_or(0)),
            ));
            if f.content == DataContent::Data {
                data.push(f);
            } else {
                deletes.push(f);
            }
        }
    }
    let op = snap
        .summary
        .to_map()
        .get("operation")
        .cloned()
        .unwrap_or_default();
    (data, deletes, op, snap.snapshot_id)
}

async fn engine_sql(dir: &Path, statements: &[&str]) -> Vec<icetrim::QueryResult> {
    let engine = Engine::builder().build().unwrap();
    let mut s = engine.session();
    s.execute(&format!(
        "CREATE TABLE t ENGINE = IcebergLocal('{}')",
        dir.display()
    ))
    .await
    .unwrap();
    let mut out = Vec::new();
    for st in statements {
        out.extend(s.execute(st).await.unwrap_or_else(|e| panic!("{st}: {e}")));
    }
    out
}

fn compact_metrics(r: &icetrim::QueryResult) -> CompactMetrics {
    match r.metrics {
        Some(Metrics::Compact(m)) => m,
        ref other => panic!("no compaction metrics: {other:?}"),
    }
}

fn local_path(p: &str) -> String {
    p.strip_prefix("file://").unwrap_or(p).to_string()
}

/// Compact, check every snapshot reads as before and the current one as `expected`, then expire
/// the history and check again. Returns the metrics.
async fn compact_and_check(
    dir: &Path,
    expected: &[String],
    pyiceberg_reads_before: bool,
    clickhouse_before: Option<&Value>,
) -> CompactMetrics {
    let (before, before_errors) = py_rows(dir).await;
    let (data_before, deletes_before, _, start) = current_files(dir).await;
    if pyiceberg_reads_before {
        assert_eq!(before[&start.to_string()], expected, "the fixture's rows");
    }
    let explain = engine_sql(dir, &["EXPLAIN OPTIMIZE TABLE t"]).await;
    assert!(!explain[0].rows.is_empty(), "EXPLAIN lists the file groups");
    let results = engine_sql(dir, &["OPTIMIZE TABLE t"]).await;
    let m = compact_metrics(&results[0]);
    assert!(m.rewritten_data_files_count > 0, "{m:?}");
    let (data_after, deletes_after, op, now) = current_files(dir).await;
    assert_ne!(now, start);
    assert_eq!(op, "replace");
    assert!(
        data_after.len() < data_before.len(),
        "{} -> {}",
        data_before.len(),
        data_after.len()
    );
    assert!(
        deletes_after.is_empty(),
        "delete files left: {deletes_after:?}"
    );
    assert_eq!(m.removed_delete_files_count as usize, deletes_before.len());
    // Every output names field ids and carries complete metrics.
    for f in data_after
        .iter()
        .filter(|f| f.file_path.contains("-compacted-"))
    {
        assert!(f.column_sizes.as_ref().is_some_and(|c| !c.is_empty()));
        assert!(f.value_counts.as_ref().is_some_and(|c| !c.is_empty()));
        assert!(f.null_value_counts.is_some());
        assert!(f.lower_bounds.as_ref().is_some_and(|c| !c.is_empty()));
        assert!(f.upper_bounds.as_ref().is_some_and(|c| !c.is_empty()));
    }
    let (after, after_errors) = py_rows(dir).await;
    for (sid, rows) in &before {
        assert_eq!(&after[sid], rows, "snapshot {sid} reads as before");
    }
    assert_eq!(
        before_errors.as_object().map(|o| o.len()),
        after_errors.as_object().map(|o| o
            .iter()
            .filter(|(k, _)| before.contains_key(*k) || before_errors.get(*k).is_some())
            .count()),
        "pyiceberg fails on the same old snapshots as before: {after_errors}"
    );
    assert_eq!(
        after[&now.to_string()],
        expected,
        "current rows after OPTIMIZE (pyiceberg)"
    );
    // ClickHouse time travel to every old snapshot reads what it read before.
    if let Some(ch_before) = clickhouse_before {
        let old: Vec<String> = before.keys().cloned().collect();
        let ch_after = chrows(dir, &old);
        for sid in &old {
            if let Some(rows) = ch_before["snapshots"].get(sid) {
                assert_eq!(
                    &ch_after["snapshots"][sid], rows,
                    "ClickHouse, snapshot {sid}"
                );
            }
        }
        assert_eq!(
            ch_after["current"], ch_before["current"],
            "ClickHouse, current rows"
        );
        assert!(
            ch_before["snapshots"]
                .as_object()
                .is_some_and(|o| o.len() >= 3),
            "ClickHouse time travel read the old snapshots: {ch_before}"
        );
    }
    // Expire everything but the current snapshot: the replaced files go, the rows stay.
    let replaced: Vec<String> = data_before
        .iter()
        .chain(&deletes_before)
        .map(|f| local_path(&f.file_path))
        .collect();
    engine_sql(
        dir,
        &["ALTER TABLE t EXECUTE expire_snapshots(retain_last = 1, retention_period = '0s')"],
    )
    .await;
    let kept: BTreeSet<String> = data_after
        .iter()
        .map(|f| local_path(&f.file_path))
        .collect();
    for p in &replaced {
        if !kept.contains(p) {
            assert!(!Path::new(p).exists(), "{p} should be expired");
        }
    }
    let (final_rows, _) = py_rows(dir).await;
    assert_eq!(
        final_rows[&now.to_string()],
        expected,
        "rows after expire_snapshots"
    );
    m
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pyiceberg_tables_of_every_type_compact_to_the_same_rows() {
    for partitioned in ["0", "1"] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("t");
        let fx = fixture(&["pyiceberg", dir.to_str().unwrap(), partitioned]);
        let expected = strings(&fx["expected"]);
        let ch_before = fixture(&["chcount", dir.to_str().unwrap()]);
        let m = compact_and_check(&dir, &expected, true, None).await;
        assert_eq!(m.failed_data_files_count, 0);
        // ClickHouse, where it can read the table: the same ids after.
        if ch_before.get("ids").is_some() {
            let ch_after = fixture(&["chcount", dir.to_str().unwrap()]);
            assert_eq!(
                ch_after["ids"], ch_before["ids"],
                "ClickHouse ids ({ch_after})"
            );
        } else {
            eprintln!("ClickHouse cannot read the pyiceberg table: {ch_before}");
        }
        if partitioned == "1" {
            assert_eq!(
                m.rewritten_file_groups_count, 2,
                "one group per partition: {m:?}"
            );
        }
    }
}

fn chrows(dir: &Path, snapshots: &[String]) -> Value {
    let mut args = vec!["chrows", dir.to_str().unwrap()];
    args.extend(snapshots.iter().map(String::as_str));
    fixture(&args)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clickhouse_position_deletes_are_applied_and_history_stays() {
    for version in ["2", "3"] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("t");
        let fx = fixture(&["clickhouse", dir.to_str().unwrap(), version]);
        let expected = strings(&fx["expected"]);
        let (before_py, _) = py_rows(&dir).await;
        let snapshots: Vec<String> = before_py.keys().cloned().collect();
        let ch_before = chrows(&dir, &snapshots);
        let (_, deletes, _, _) = current_files(&dir).await;
        assert!(!deletes.is_empty(), "ClickHouse wrote position deletes");
        let m = compact_and_check_ch(&dir, &expected, &ch_before, version).await;
        assert!(m.removed_delete_files_count >= 2, "v{version}: {m:?}");
    }
}

async fn compact_and_check_ch(
    dir: &Path,
    expected: &[String],
    ch_before: &Value,
    version: &str,
) -> CompactMetrics {
    let lineage_before = if version == "3" {
        Some(row_lineage(dir).await)
    } else {
        None
    };
    let m = compact_and_check(dir, expected, true, Some(ch_before)).await;
    // After the expiry too, ClickHouse reads the current rows.
    let ch_after = chrows(dir, &[]);
    assert_eq!(
        ch_after["current"], ch_before["current"],
        "v{version}: ClickHouse reads the same current rows ({ch_after})"
    );
    if let Some(before) = lineage_before {
        let after = row_lineage(dir).await;
        for (id, lineage) in &after {
            assert_eq!(before.get(id), Some(lineage), "row {id} keeps its _row_id");
        }
        assert_eq!(after.len(), expected.len());
    }
    m
}

/// id → (_row_id, _last_updated_sequence_number) of the live rows of the current snapshot
/// (explicit columns, else inherited from first_row_id + position and the data sequence number).
async fn row_lineage(dir: &Path) -> BTreeMap<i64, (i64, i64)> {
    // Deleted rows are read too (deletes are not applied here): callers compare the live ids.
    let (data, _, _, _) = current_files(dir).await;
    let mut out = BTreeMap::new();
    for f in data {
        let seq = match f.extra.iter().find(|(k, _)| k == "__seq") {
            Some((_, apache_avro::types::Value::Long(s))) => *s,
            _ => 0,
        };
        let bytes = std::fs::read(local_path(&f.file_path)).unwrap();
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
            Bytes::from(bytes),
        )
        .unwrap()
        .build()
        .unwrap();
        let mut pos = 0i64;
        for batch in reader {
            let batch = batch.unwrap();
            let col = |name: &str| batch.column_by_name(name).cloned();
            let ids = arrow_cast::cast(&col("id").unwrap(), &DataType::Int64).unwrap();
            let ids = ids.as_primitive::<Int64Type>();
            let row_ids = col("_row_id");
            let seqs = col("_last_updated_sequence_number");
            for i in 0..batch.num_rows() {
                let explicit = |c: &Option<ArrayRef>| {
                    c.as_ref()
                        .map(|a| a.as_primitive::<Int64Type>())
                        .filter(|a| a.is_valid(i))
                        .map(|a| a.value(i))
                };
                let rid = explicit(&row_ids)
                    .unwrap_or_else(|| f.first_row_id.expect("first_row_id") + pos + i as i64);
                let s = explicit(&seqs).unwrap_or(seq);
                out.insert(ids.value(i), (rid, s));
            }
            pos += batch.num_rows() as i64;
        }
    }
    out
}

fn with_id(name: &str, ty: DataType, id: i32) -> Field {
    Field::new(name, ty, true).with_metadata(HashMap::from([(
        PARQUET_FIELD_ID_META_KEY.to_string(),
        id.to_string(),
    )]))
}

/// Writes an equality delete file on `id` (field 1) deleting `ids`.
fn equality_delete(dir: &Path, name: &str, ids: &[i64]) -> DataFile {
    let schema = Arc::new(Schema::new(vec![with_id("id", DataType::Int64, 1)]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(Int64Array::from(ids.to_vec())) as ArrayRef],
    )
    .unwrap();
    let mut w = ArrowWriter::try_new(Vec::new(), schema, None).unwrap();
    w.write(&batch).unwrap();
    let bytes = w.into_inner().unwrap();
    let path = dir.join("data").join(name);
    std::fs::write(&path, &bytes).unwrap();
    let mut f = DataFile::new(
        DataContent::EqualityDeletes,
        path.to_str().unwrap(),
        ids.len() as i64,
        bytes.len() as i64,
    );
    f.equality_ids = Some(vec![1]);
    f
}

async fn commit_deletes(dir: &Path, files: Vec<DataFile>) {
    let request = CommitRequest::new(
        Operation::Delete,
        FileChanges {
            added_deletes: files,
            ..Default::default()
        },
    );
    commit_changes(
        &FileIO::local(),
        dir.to_str().unwrap(),
        &MetadataSettings::default(),
        3,
        &request,
    )
    .await
    .unwrap();
}

/// A row of a `simple` table as the fixture script prints it (Python's `json.dumps`).
fn simple_row(id: i64) -> String {
    format!("[{id}, \"row-{id}\"]")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn equality_deletes_apply_only_to_older_data() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    fixture(&["simple", dir.to_str().unwrap(), "5"]);
    // Equality delete of ids 1 and 7 (sequence 6), then an append of id 7 again (sequence 7):
    // the new row 7 survives, as the spec says.
    commit_deletes(&dir, vec![equality_delete(&dir, "eq-1.parquet", &[1, 7])]).await;
    fixture(&["simple_append", dir.to_str().unwrap()]);
    let mut expected: Vec<String> = (0..15)
        .filter(|i| *i != 1 && *i != 7)
        .map(simple_row)
        .collect();
    expected.push(simple_row(7));
    expected.sort();
    // pyiceberg cannot read equality deletes: only the expected multiset and, after compaction,
    // pyiceberg itself (no delete file is left).
    let (_, deletes, _, _) = current_files(&dir).await;
    assert_eq!(deletes.len(), 1);
    let results = engine_sql(&dir, &["OPTIMIZE TABLE t"]).await;
    let m = compact_metrics(&results[0]);
    assert_eq!(m.removed_delete_files_count, 1, "{m:?}");
    let (_, deletes, op, now) = current_files(&dir).await;
    assert_eq!(op, "replace");
    assert!(deletes.is_empty());
    let (rows, errors) = py_rows(&dir).await;
    assert_eq!(rows[&now.to_string()], expected, "errors: {errors}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v3_deletion_vector_is_applied() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    let fx = fixture(&["clickhouse", dir.to_str().unwrap(), "3"]);
    let mut expected = strings(&fx["expected"]);
    let (data, _, _, _) = current_files(&dir).await;
    // A DV deleting position 0 of the first data file that still has that row live.
    let target = data
        .iter()
        .find(|f| {
            let first = first_id(&f.file_path);
            expected
                .iter()
                .any(|r| r.starts_with(&format!("[{first},")))
        })
        .expect("a data file with a live first row");
    let victim = first_id(&target.file_path);
    expected.retain(|r| !r.starts_with(&format!("[{victim},")));
    let mut bitmap = roaring::RoaringTreemap::new();
    bitmap.insert(0);
    let blob = deletion_vector_blob(&bitmap);
    let mut puffin = b"PFA1".to_vec();
    puffin.extend_from_slice(&blob);
    let footer = serde_json::json!({"blobs": [{
        "type": "deletion-vector-v1", "fields": [2147483645], "snapshot-id": -1,
        "sequence-number": -1, "offset": 4, "length": blob.len(),
        "properties": {"referenced-data-file": target.file_path, "cardinality": "1"}}]})
    .to_string();
    puffin.extend_from_slice(b"PFA1");
    puffin.extend_from_slice(footer.as_bytes());
    puffin.extend_from_slice(&(footer.len() as i32).to_le_bytes());
    puffin.extend_from_slice(&[0, 0, 0, 0]);
    puffin.extend_from_slice(b"PFA1");
    let path = dir.join("data").join("dv-1.puffin");
    std::fs::write(&path, &puffin).unwrap();
    let mut dv = DataFile::new(
        DataContent::PositionDeletes,
        path.to_str().unwrap(),
        1,
        puffin.len() as i64,
    );
    dv.file_format = "PUFFIN".into();
    dv.referenced_data_file = Some(target.file_path.clone());
    dv.content_offset = Some(4);
    dv.content_size_in_bytes = Some(blob.len() as i64);
    commit_deletes(&dir, vec![dv]).await;
    let results = engine_sql(&dir, &["OPTIMIZE TABLE t"]).await;
    let m = compact_metrics(&results[0]);
    assert!(m.removed_delete_files_count >= 1, "{m:?}");
    let (_, deletes, _, now) = current_files(&dir).await;
    assert!(deletes.is_empty());
    let (rows, errors) = py_rows(&dir).await;
    assert_eq!(rows[&now.to_string()], expected, "errors: {errors}");
}

fn first_id(path: &str) -> i64 {
    let bytes = std::fs::read(local_path(path)).unwrap();
    let mut reader =
        parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(Bytes::from(bytes))
            .unwrap()
            .build()
            .unwrap();
    let batch = reader.next().unwrap().unwrap();
    let ids = arrow_cast::cast(batch.column_by_name("id").unwrap(), &DataType::Int64).unwrap();
    ids.as_primitive::<Int64Type>().value(0)
}

/// Commits an equality delete of id 2 the first time compaction writes an output file.
#[derive(Debug)]
struct ConcurrentDelete {
    dir: PathBuf,
    fired: AtomicBool,
}

#[async_trait::async_trait]
impl StoreHook for ConcurrentDelete {
    async fn before(&self, op: Op, path: Option<&ObjectPath>) -> object_store::Result<()> {
        let output = path.is_some_and(|p| p.as_ref().contains("-compacted-"));
        if matches!(op, Op::Put { .. } | Op::PutMultipart)
            && output
            && !self.fired.swap(true, Ordering::SeqCst)
        {
            // Another writer, on its own thread and runtime, commits while we wait.
            let dir = self.dir.clone();
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                let delete = equality_delete(&dir, "eq-late.parquet", &[2]);
                rt.block_on(commit_deletes(&dir, vec![delete]));
            })
            .join()
            .unwrap();
        }
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_committed_during_compaction_is_not_lost() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    fixture(&["simple", dir.to_str().unwrap(), "6"]);
    let hook = Arc::new(ConcurrentDelete {
        dir: dir.clone(),
        fired: AtomicBool::new(false),
    });
    let store = FaultyStore::hooked(Arc::new(LocalFileSystem::new()), hook.clone());
    let io = FileIO::from_store("/", Arc::new(store)).unwrap();
    let table = Table::with_io(dir.to_str().unwrap(), io);
    let outcome = table
        .rewrite_data_files()
        .optimize()
        .execute()
        .await
        .unwrap();
    assert!(hook.fired.load(Ordering::SeqCst));
    let m = outcome.metrics;
    assert_eq!(m.failed_data_files_count, 6, "{m:?} {:?}", outcome.warnings);
    assert_eq!(m.rewritten_data_files_count, 0);
    // The delete stands: row 2 is gone, everything else is there.
    let (_, deletes, op, _) = current_files(&dir).await;
    assert_eq!(op, "delete");
    assert_eq!(deletes.len(), 1);
    // A second run (no concurrency now) compacts and applies it.
    let results = engine_sql(&dir, &["OPTIMIZE TABLE t"]).await;
    let m = compact_metrics(&results[0]);
    assert_eq!(m.rewritten_data_files_count, 6);
    let (_, _, _, now) = current_files(&dir).await;
    let (rows, _) = py_rows(&dir).await;
    let expected: Vec<String> = (0..18).filter(|i| *i != 2).map(simple_row).collect();
    let mut expected = expected;
    expected.sort();
    assert_eq!(rows[&now.to_string()], expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_explain_and_gate_change_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    fixture(&["simple", dir.to_str().unwrap(), "6"]);
    let before = newest_metadata(&dir).await;
    let r = engine_sql(
        &dir,
        &["ALTER TABLE t EXECUTE rewrite_data_files(dry_run = 1, min_input_files = 2)"],
    )
    .await;
    let m = compact_metrics(&r[0]);
    assert_eq!(m.rewritten_data_files_count, 6);
    assert_eq!(m.added_data_files_count, 1);
    assert!(m.dry_run);
    let r = engine_sql(&dir, &["EXPLAIN OPTIMIZE TABLE t"]).await;
    assert_eq!(r[0].rows.len(), 1);
    assert_eq!(newest_metadata(&dir).await, before, "nothing written");
    let engine = Engine::builder().build().unwrap();
    let mut s = engine.session();
    s.execute(&format!(
        "CREATE TABLE t ENGINE = IcebergLocal('{}')",
        dir.display()
    ))
    .await
    .unwrap();
    let e = s
        .execute("SET allow_experimental_iceberg_compaction = 0; OPTIMIZE TABLE t")
        .await
        .unwrap_err();
    assert_eq!(e.kind(), icetrim::ErrorKind::BadArguments);
    assert_eq!(
        e.message(),
        "Enable 'allow_experimental_iceberg_compaction' setting to call optimize for iceberg tables"
    );
    let e = s
        .execute("SET allow_experimental_iceberg_compaction = 1; ALTER TABLE t EXECUTE rewrite_data_files(where = 'id = 1')")
        .await
        .unwrap_err();
    assert!(e.message().contains("not a partition source column"), "{e}");
    assert_eq!(newest_metadata(&dir).await, before, "nothing written");
}

/// Writes a position delete file deleting `(path, pos)` pairs.
fn position_delete(dir: &Path, name: &str, rows: &[(String, i64)]) -> DataFile {
    let schema = Arc::new(Schema::new(vec![
        with_id("file_path", DataType::Utf8, 2_147_483_546),
        with_id("pos", DataType::Int64, 2_147_483_545),
    ]));
    let paths: Vec<&str> = rows.iter().map(|(p, _)| p.as_str()).collect();
    let pos: Vec<i64> = rows.iter().map(|(_, p)| *p).collect();
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(arrow_array::StringArray::from(paths)) as ArrayRef,
            Arc::new(Int64Array::from(pos)) as ArrayRef,
        ],
    )
    .unwrap();
    let mut w = ArrowWriter::try_new(Vec::new(), schema, None).unwrap();
    w.write(&batch).unwrap();
    let bytes = w.into_inner().unwrap();
    let path = dir.join("data").join(name);
    std::fs::write(&path, &bytes).unwrap();
    DataFile::new(
        DataContent::PositionDeletes,
        path.to_str().unwrap(),
        rows.len() as i64,
        bytes.len() as i64,
    )
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_at_any_write_leaves_the_rows_and_a_rerun_converges() {
    use icetrim::internals::io::{Fault, FaultInjector};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    fixture(&["simple", dir.to_str().unwrap(), "4"]);
    // Position deletes (read by pyiceberg too): position 1 of the first data file.
    let (data, _, _, _) = current_files(&dir).await;
    let first = data.iter().map(|f| f.file_path.clone()).min().unwrap();
    let victim = first_id(&first) + 1;
    commit_deletes(
        &dir,
        vec![position_delete(&dir, "pos-1.parquet", &[(first, 1)])],
    )
    .await;
    let mut expected: Vec<String> = (0..12).filter(|i| *i != victim).map(simple_row).collect();
    expected.sort();
    let backup = tmp.path().join("backup");
    copy_dir(&dir, &backup);
    for fault in [Fault::Crash, Fault::CrashAfterApplying] {
        let mut completed = false;
        for k in 0..40u64 {
            std::fs::remove_dir_all(&dir).unwrap();
            copy_dir(&backup, &dir);
            let injector = FaultInjector::new();
            injector.fail_after(k, fault);
            let store = FaultyStore::new(Arc::new(LocalFileSystem::new()), injector.clone());
            let io = FileIO::from_store("/", Arc::new(store)).unwrap();
            let table = Table::with_io(dir.to_str().unwrap(), io);
            let result = table.rewrite_data_files().optimize().execute().await;
            let crashed = injector.crashed();
            assert_eq!(result.is_err(), crashed, "{fault:?} k={k}: {result:?}");
            // Readable, and the current rows are the expected ones.
            let (rows, errors) = py_rows(&dir).await;
            let (_, _, _, now) = current_files(&dir).await;
            assert_eq!(rows[&now.to_string()], expected, "k={k}: {errors}");
            if !crashed {
                completed = true;
                break;
            }
            // A healthy re-run converges.
            let results = engine_sql(&dir, &["OPTIMIZE TABLE t"]).await;
            let m = compact_metrics(&results[0]);
            let (data, deletes, op, now) = current_files(&dir).await;
            assert_eq!(op, "replace", "k={k}: {m:?}");
            assert_eq!(data.len(), 1);
            assert!(deletes.is_empty());
            let (rows, _) = py_rows(&dir).await;
            assert_eq!(rows[&now.to_string()], expected, "k={k} after the re-run");
        }
        assert!(
            completed,
            "{fault:?}: some run finished without meeting the fault"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sort_order_orders_each_output_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    fixture(&["simple", dir.to_str().unwrap(), "6", "sorted"]);
    let results = engine_sql(&dir, &["OPTIMIZE TABLE t"]).await;
    let m = compact_metrics(&results[0]);
    assert_eq!(
        m.added_data_files_count, 1,
        "{m:?} {:?}",
        results[0].warnings
    );
    let (data, _, _, _) = current_files(&dir).await;
    assert_eq!(data[0].sort_order_id, Some(1));
    let bytes = std::fs::read(local_path(&data[0].file_path)).unwrap();
    let reader =
        parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(Bytes::from(bytes))
            .unwrap()
            .build()
            .unwrap();
    let mut ids = Vec::new();
    for batch in reader {
        let batch = batch.unwrap();
        ids.extend(
            batch
                .column(0)
                .as_primitive::<Int64Type>()
                .values()
                .iter()
                .copied(),
        );
    }
    let mut want: Vec<i64> = (0..18).collect();
    want.reverse();
    assert_eq!(ids, want);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn where_narrows_to_the_partitions_it_may_match() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    let fx = fixture(&["pyiceberg", dir.to_str().unwrap(), "1"]);
    let expected = strings(&fx["expected"]);
    let (data_before, _, _, _) = current_files(&dir).await;
    let in_b: BTreeSet<String> = data_before
        .iter()
        .filter(|f| f.file_path.contains("part=b"))
        .map(|f| f.file_path.clone())
        .collect();
    assert!(in_b.len() > 1);
    let r = engine_sql(
        &dir,
        &["ALTER TABLE t EXECUTE rewrite_data_files(where = 'part = \\'a\\'', min_input_files = 2)"],
    )
    .await;
    let m = compact_metrics(&r[0]);
    assert_eq!(m.rewritten_file_groups_count, 1, "{m:?}");
    let (data_after, _, _, now) = current_files(&dir).await;
    let still_b: BTreeSet<String> = data_after
        .iter()
        .filter(|f| f.file_path.contains("part=b"))
        .map(|f| f.file_path.clone())
        .collect();
    assert_eq!(still_b, in_b, "partition b untouched");
    let (rows, _) = py_rows(&dir).await;
    assert_eq!(rows[&now.to_string()], expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clickhouse_v3_table_of_many_types_reads_the_same() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    fixture(&["clickhouse_types", dir.to_str().unwrap()]);
    let (py_before, py_errors) = py_rows(&dir).await;
    let snapshots: Vec<String> = py_before.keys().cloned().collect();
    let mut args = vec!["chall", dir.to_str().unwrap()];
    args.extend(snapshots.iter().map(String::as_str));
    let ch_before = fixture(&args);
    let lineage = row_lineage(&dir).await;
    let (_, _, _, start) = current_files(&dir).await;
    let results = engine_sql(&dir, &["OPTIMIZE TABLE t"]).await;
    let m = compact_metrics(&results[0]);
    assert!(m.rewritten_data_files_count >= 4, "{m:?}");
    assert!(m.removed_delete_files_count >= 1, "{m:?}");
    let (_, deletes, op, now) = current_files(&dir).await;
    assert_eq!(op, "replace");
    assert!(deletes.is_empty());
    let ch_after = fixture(&args);
    assert_eq!(
        ch_after["current"], ch_before["current"],
        "ClickHouse current rows"
    );
    assert_eq!(ch_before["current"].as_array().unwrap().len(), 10);
    for sid in &snapshots {
        assert_eq!(
            ch_after["snapshots"][sid], ch_before["snapshots"][sid],
            "ClickHouse {sid}"
        );
    }
    let (py_after, _) = py_rows(&dir).await;
    for (sid, rows) in &py_before {
        assert_eq!(&py_after[sid], rows, "pyiceberg {sid} ({py_errors})");
    }
    if let Some(rows) = py_before.get(&start.to_string()) {
        assert_eq!(&py_after[&now.to_string()], rows, "pyiceberg current");
    }
    let after = row_lineage(&dir).await;
    assert_eq!(after.len(), 10);
    for (id, l) in &after {
        assert_eq!(lineage.get(id), Some(l), "row {id} keeps its lineage");
    }
}

/// Counts the reads of each path.
#[derive(Debug, Default)]
struct ReadCounter {
    reads: std::sync::Mutex<HashMap<String, usize>>,
}

#[async_trait::async_trait]
impl StoreHook for ReadCounter {
    async fn before(&self, op: Op, path: Option<&ObjectPath>) -> object_store::Result<()> {
        if let (Op::Get, Some(p)) = (op, path) {
            *self.reads.lock().unwrap().entry(p.to_string()).or_default() += 1;
        }
        Ok(())
    }
}

/// Under a small memory budget (the 32 MiB minimum: inputs above 1 MiB are not read whole), the
/// generator's 1.5 MB files are read by ranges, page by page, with a position delete applied;
/// pyiceberg reads the same rows after. A budget below the minimum is refused and nothing changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_a_small_memory_budget_inputs_stream_by_ranges() {
    use icetrim::internals::generate::{GenerateOptions, Mix, generate};
    use icetrim::internals::iceberg::spec::FormatVersion;

    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    let mut o = GenerateOptions::new(
        dir.to_str().unwrap(),
        FormatVersion::V2,
        2,
        3,
        5,
        1_767_225_600_000,
    );
    o.parquet_data = true;
    o.rows_per_file = Some(20_000);
    o.row_bytes = 100;
    o.mix = Mix::parse("append=1").unwrap();
    generate(&FileIO::local(), &o).await.unwrap();
    let (data, _, _, _) = current_files(&dir).await;
    assert_eq!(data.len(), 6);
    assert!(
        data.iter().all(|f| f.file_size_in_bytes > 1 << 20),
        "files above 1 MiB"
    );
    let first = data.iter().map(|f| f.file_path.clone()).min().unwrap();
    commit_deletes(
        &dir,
        vec![position_delete(&dir, "pos-2.parquet", &[(first, 2)])],
    )
    .await;
    let (before, _) = py_rows(&dir).await;
    let (_, _, _, start) = current_files(&dir).await;
    let expected = before[&start.to_string()].clone();
    assert_eq!(expected.len(), 6 * 20_000 - 1);

    let table = Table::open(dir.to_str().unwrap(), Default::default()).unwrap();
    let metadata = newest_metadata(&dir).await;
    let e = table
        .rewrite_data_files()
        .optimize()
        .setting("iceberg_compaction_max_memory_bytes", "6400")
        .execute()
        .await
        .unwrap_err();
    assert!(e.message().contains("is below"), "{e}");
    assert_eq!(newest_metadata(&dir).await, metadata, "nothing written");

    let counter = Arc::new(ReadCounter::default());
    let store = FaultyStore::hooked(Arc::new(LocalFileSystem::new()), counter.clone());
    let io = FileIO::from_store("/", Arc::new(store)).unwrap();
    let table = Table::with_io(dir.to_str().unwrap(), io);
    let outcome = table
        .rewrite_data_files()
        .optimize()
        .setting(
            "iceberg_compaction_max_memory_bytes",
            &(32u64 << 20).to_string(),
        )
        .execute()
        .await
        .unwrap();
    assert_eq!(outcome.metrics.rewritten_data_files_count, 6);
    assert_eq!(outcome.metrics.removed_delete_files_count, 1);
    assert!(outcome.warnings.is_empty(), "{:?}", outcome.warnings);
    let reads = counter.reads.lock().unwrap().clone();
    for f in &data {
        let key = local_path(&f.file_path).trim_start_matches('/').to_string();
        let n = reads.get(&key).copied().unwrap_or(0);
        assert!(n >= 3, "{key} read {n} time(s): not by ranges ({reads:?})");
    }
    let (rows, _) = py_rows(&dir).await;
    let (_, _, _, now) = current_files(&dir).await;
    assert_eq!(rows[&now.to_string()], expected);
}

/// A v3 data file of (`id` long, `data` string, `tns` timestamp_ns).
fn v3_nanos_file(dir: &Path, name: &str, ids: &[i64]) -> DataFile {
    use arrow_array::{StringArray, TimestampNanosecondArray};
    let schema = Arc::new(Schema::new(vec![
        with_id("id", DataType::Int64, 1),
        with_id("data", DataType::Utf8, 2),
        with_id(
            "tns",
            DataType::Timestamp(arrow_schema::TimeUnit::Nanosecond, None),
            3,
        ),
    ]));
    let tns: Vec<Option<i64>> = ids
        .iter()
        .map(|i| (i % 3 != 0).then_some(1_700_000_000_123_456_789 + i))
        .collect();
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from(ids.to_vec())) as ArrayRef,
            Arc::new(StringArray::from(
                ids.iter().map(|i| format!("row-{i}")).collect::<Vec<_>>(),
            )) as ArrayRef,
            Arc::new(TimestampNanosecondArray::from(tns)) as ArrayRef,
        ],
    )
    .unwrap();
    let mut w = ArrowWriter::try_new(Vec::new(), schema, None).unwrap();
    w.write(&batch).unwrap();
    let bytes = w.into_inner().unwrap();
    std::fs::create_dir_all(dir.join("data")).unwrap();
    let path = dir.join("data").join(name);
    std::fs::write(&path, &bytes).unwrap();
    DataFile::new(
        DataContent::Data,
        path.to_str().unwrap(),
        ids.len() as i64,
        bytes.len() as i64,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v3_timestamp_ns_and_row_lineage_survive() {
    use icetrim::internals::iceberg::metadata::TableMetadata;
    use icetrim::internals::iceberg::spec::FormatVersion;
    use icetrim::internals::iceberg::txn::create::new_table_json;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    let location = dir.to_str().unwrap().to_string();
    let file = format!("{location}/metadata/v1.metadata.json");
    let mut json = new_table_json(&location, FormatVersion::V3, &uuid::Uuid::new_v4(), 1_000);
    json.insert(
        "schemas".into(),
        serde_json::json!([{"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "id", "required": false, "type": "long"},
            {"id": 2, "name": "data", "required": false, "type": "string"},
            {"id": 3, "name": "tns", "required": false, "type": "timestamp_ns"}]}]),
    );
    json.insert("last-column-id".into(), 3.into());
    let md = TableMetadata::from_json(json, &file).unwrap();
    FileIO::local()
        .overwrite(&file, Bytes::from(md.to_json_bytes()))
        .await
        .unwrap();
    let mut all = Vec::new();
    for f in 0..3 {
        let ids: Vec<i64> = (f * 4..f * 4 + 4).collect();
        all.extend(ids.iter().copied());
        let data = v3_nanos_file(&dir, &format!("f{f}.parquet"), &ids);
        let request = CommitRequest::new(
            Operation::Append,
            FileChanges {
                added_data: vec![data],
                ..Default::default()
            },
        );
        commit_changes(
            &FileIO::local(),
            &location,
            &MetadataSettings::default(),
            3,
            &request,
        )
        .await
        .unwrap();
    }
    let before = row_lineage(&dir).await;
    let r = engine_sql(
        &dir,
        &["ALTER TABLE t EXECUTE rewrite_data_files(min_input_files = 2)"],
    )
    .await;
    let m = compact_metrics(&r[0]);
    assert_eq!(m.rewritten_data_files_count, 3, "{m:?}");
    let (data, _, op, _) = current_files(&dir).await;
    assert_eq!(op, "replace");
    assert_eq!(data.len(), 1);
    // Lineage: every row keeps its inherited _row_id and sequence number, now written out.
    assert_eq!(row_lineage(&dir).await, before);
    let out = &data[0];
    let bytes = std::fs::read(local_path(&out.file_path)).unwrap();
    let reader =
        parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(Bytes::from(bytes))
            .unwrap()
            .build()
            .unwrap();
    let mut seen = Vec::new();
    for batch in reader {
        let batch = batch.unwrap();
        let ids = batch
            .column_by_name("id")
            .unwrap()
            .as_primitive::<Int64Type>();
        let tns = batch.column_by_name("tns").unwrap();
        assert_eq!(
            tns.data_type(),
            &DataType::Timestamp(arrow_schema::TimeUnit::Nanosecond, None)
        );
        let tns = tns.as_primitive::<arrow_array::types::TimestampNanosecondType>();
        let rid = batch.column_by_name("_row_id").unwrap();
        assert_eq!(rid.null_count(), 0, "_row_id written explicitly");
        for i in 0..batch.num_rows() {
            let id = ids.value(i);
            let want = (id % 3 != 0).then_some(1_700_000_000_123_456_789 + id);
            assert_eq!(tns.is_valid(i).then(|| tns.value(i)), want, "row {id}");
            seen.push(id);
        }
    }
    seen.sort();
    assert_eq!(seen, all);
    // Bounds of the nanosecond column: 8-byte little-endian nanoseconds.
    let lower = out.lower_bounds.as_ref().unwrap()[&3].clone();
    assert_eq!(
        i64::from_le_bytes(lower.try_into().unwrap()),
        1_700_000_000_123_456_789 + 1
    );
}

/// The generator's partitioned Parquet tables (`--parquet --partitions N`): pyiceberg reads the
/// rows the manifests promise (live records minus the deleted positions); compaction keeps every
/// snapshot's rows and writes each output file in its partition's folder (`data/part=<v>/`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generated_partitioned_table_compacts_into_partition_folders() {
    use icetrim::internals::generate::{GenerateOptions, Mix, generate};
    use icetrim::internals::iceberg::spec::FormatVersion;

    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    let mut o = GenerateOptions::new(
        dir.to_str().unwrap(),
        FormatVersion::V2,
        10,
        30,
        3,
        1_767_225_600_000,
    );
    o.parquet_data = true;
    o.partitions = 5;
    o.mix = Mix::parse("append=80,delete=20").unwrap();
    generate(&FileIO::local(), &o).await.unwrap();

    let (before, errors) = py_rows(&dir).await;
    assert!(errors.as_object().is_none_or(|e| e.is_empty()), "{errors}");
    let (data, deletes, _, start) = current_files(&dir).await;
    let live: BTreeSet<String> = data.iter().map(|f| f.file_path.clone()).collect();
    let mut deleted: BTreeSet<(String, i64)> = BTreeSet::new();
    for d in &deletes {
        let bytes = Bytes::from(std::fs::read(local_path(&d.file_path)).unwrap());
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(bytes)
            .unwrap()
            .build()
            .unwrap();
        for batch in reader {
            let batch = batch.unwrap();
            let paths = batch.column(0).as_string::<i32>();
            let pos = batch.column(1).as_primitive::<Int64Type>();
            for i in 0..batch.num_rows() {
                if live.contains(paths.value(i)) {
                    deleted.insert((paths.value(i).to_string(), pos.value(i)));
                }
            }
        }
    }
    let records: i64 = data.iter().map(|f| f.record_count).sum();
    let expected = before[&start.to_string()].clone();
    assert_eq!(
        expected.len() as i64,
        records - deleted.len() as i64,
        "pyiceberg's row count"
    );
    let partition_of = |f: &DataFile| -> i32 {
        let apache_avro::types::Value::Record(fields) = strip(&f.partition) else {
            panic!("a partition record: {:?}", f.partition)
        };
        match strip(&fields[0].1) {
            apache_avro::types::Value::Int(p) => *p,
            other => panic!("an int: {other:?}"),
        }
    };
    for f in data.iter().chain(&deletes) {
        let p = partition_of(f);
        assert!(
            f.file_path.contains(&format!("/data/part={p}/")),
            "{}",
            f.file_path
        );
    }

    compact_and_check(&dir, &expected, true, None).await;
    let (after, _, _, _) = current_files(&dir).await;
    let mut parts = BTreeSet::new();
    for f in after.iter().filter(|f| f.file_path.contains("-compacted-")) {
        let p = partition_of(f);
        parts.insert(p);
        assert!(
            f.file_path.contains(&format!("/data/part={p}/")),
            "output outside its partition folder: {}",
            f.file_path
        );
    }
    assert_eq!(parts.len(), 5, "every partition compacted: {parts:?}");
}

fn strip(v: &apache_avro::types::Value) -> &apache_avro::types::Value {
    match v {
        apache_avro::types::Value::Union(_, inner) => strip(inner),
        other => other,
    }
}
