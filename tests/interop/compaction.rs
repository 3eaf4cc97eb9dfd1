//! Compaction (`OPTIMIZE TABLE`, `rewrite_data_files`) on real tables: pyiceberg tables of every
//! type (appends and a copy-on-write delete, partitioned and not), ClickHouse tables with position
//! deletes (v2 and v3), equality deletes and a v3 deletion vector committed by us. After the run:
//! every snapshot reads exactly the rows it read before (pyiceberg, ClickHouse where they can; the
//! expected multiset always; floats compared by their bits), the current snapshot is a `replace`
//! with fewer data files and no delete file left, v3 row ids survive; then `expire_snapshots`
//! removes the replaced files and the rows stay. A delete committed while compaction runs fails
//! the group it touches (no row comes back).

use crate::support::copy_dir;
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
use icetrim::internals::iceberg::manifest::{
    DataFile, PartitionTuple, PartitionValue, inherit, read_manifest,
};
use icetrim::internals::iceberg::manifest_list::read_manifest_list;
use icetrim::internals::iceberg::spec::DataContent;
use icetrim::internals::iceberg::txn::{CommitRequest, FileChanges, Operation};
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

pub(crate) fn fixture(args: &[&str]) -> Value {
    let _ = python();
    run_python_json(&script(), args)
}

pub(crate) fn strings(v: &Value) -> Vec<String> {
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
pub(crate) async fn py_rows(dir: &Path) -> (BTreeMap<String, Vec<String>>, Value) {
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

pub(crate) async fn newest_metadata(dir: &Path) -> String {
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
pub(crate) async fn current_files(dir: &Path) -> (Vec<DataFile>, Vec<DataFile>, String, i64) {
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

pub(crate) async fn engine_sql(
    dir: &Path,
    statements: &[&str],
) -> Vec<icetrim::engine::QueryResult> {
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

pub(crate) fn compact_metrics(r: &icetrim::engine::QueryResult) -> CompactMetrics {
    match r.metrics {
        Some(Metrics::Compact(m)) => m,
        ref other => panic!("no compaction metrics: {other:?}"),
    }
}

pub(crate) fn local_path(p: &str) -> String {
    p.strip_prefix("file://").unwrap_or(p).to_string()
}

/// Compact, check every snapshot reads as before and the current one as `expected`, then expire
/// the history and check again. Returns the metrics.
/// Every column of the current snapshot and of `snapshots` as ClickHouse reads it, beside
/// pyiceberg's rows in ClickHouse's form (`current`, `py_current`, `snapshots`, `py_snapshots`,
/// `errors`).
async fn chtyped(dir: &Path, snapshots: &[String]) -> Value {
    let md = newest_metadata(dir).await;
    let mut args = vec!["chtyped", dir.to_str().unwrap(), md.as_str()];
    args.extend(snapshots.iter().map(String::as_str));
    fixture(&args)
}

/// Checks one `chtyped` reading: no errors, ClickHouse reads every snapshot as pyiceberg does
/// (in ClickHouse's form), the current rows are `expected`.
fn check_typed(ch: &Value, expected: &[String], when: &str) {
    assert!(
        ch["errors"].as_object().is_some_and(|e| e.is_empty()),
        "{when}: ClickHouse errors: {}",
        ch["errors"]
    );
    assert_eq!(
        strings(&ch["current"]),
        expected,
        "{when}: ClickHouse current rows = the expected rows"
    );
    // pyiceberg, where it can read the snapshot (it cannot read equality deletes).
    let py_errors = ch.get("py_errors").cloned().unwrap_or_default();
    if py_errors.get("current").is_none() {
        assert_eq!(
            ch["current"], ch["py_current"],
            "{when}: ClickHouse and pyiceberg, current"
        );
    }
    for (sid, rows) in ch["snapshots"].as_object().unwrap() {
        if py_errors.get(sid).is_none() {
            assert_eq!(
                rows, &ch["py_snapshots"][sid],
                "{when}: ClickHouse and pyiceberg, snapshot {sid}"
            );
        }
    }
}

/// The data files `now` (a compaction from `start`) added carry an explicit data sequence number
/// equal to `start`'s in the manifest itself (Java's `RewriteFiles` with a data sequence number),
/// and an inherited file sequence number (`now`'s).
async fn assert_explicit_sequence_numbers(dir: &Path, start: i64, now: i64, added: i64) {
    let io = FileIO::local();
    let located = locate(&io, dir.to_str().unwrap(), &MetadataSettings::default())
        .await
        .unwrap();
    let seq_of = |sid: i64| {
        located
            .metadata
            .snapshots()
            .iter()
            .find(|s| s.snapshot_id == sid)
            .map(|s| s.sequence_number)
            .unwrap()
    };
    let (start_seq, now_seq) = (seq_of(start), seq_of(now));
    assert!(start_seq < now_seq, "{start_seq} < {now_seq}");
    let snap = located.metadata.current_snapshot().unwrap();
    assert_eq!(snap.snapshot_id, now);
    let list_path = snap.manifest_list.clone().unwrap();
    let list = read_manifest_list(&io.read(&list_path).await.unwrap(), &list_path).unwrap();
    let mut seen = 0i64;
    for m in list.iter().filter(|m| m.added_snapshot_id == now) {
        let manifest = read_manifest(&io.read(&m.manifest_path).await.unwrap(), "m").unwrap();
        for e in manifest.entries.iter().filter(|e| {
            e.status == icetrim::internals::iceberg::spec::EntryStatus::Added
                && e.data_file.content == DataContent::Data
        }) {
            assert_eq!(
                e.sequence_number,
                Some(start_seq),
                "explicit data sequence number of {}",
                e.data_file.file_path
            );
            assert_eq!(
                e.file_sequence_number, None,
                "file sequence number inherited"
            );
            seen += 1;
        }
        assert_eq!(m.sequence_number, now_seq);
    }
    assert_eq!(seen, added, "every added data file checked");
}

/// Data and delete files live in any snapshot of the newest metadata.
async fn files_of_every_snapshot(dir: &Path) -> BTreeSet<String> {
    let io = FileIO::local();
    let located = locate(&io, dir.to_str().unwrap(), &MetadataSettings::default())
        .await
        .unwrap();
    let mut out = BTreeSet::new();
    for snap in located.metadata.snapshots() {
        let Some(list_path) = snap.manifest_list.clone() else {
            continue;
        };
        let list = read_manifest_list(&io.read(&list_path).await.unwrap(), &list_path).unwrap();
        for m in &list {
            let manifest = read_manifest(&io.read(&m.manifest_path).await.unwrap(), "m").unwrap();
            for e in manifest.entries {
                if e.status.is_live() {
                    out.insert(local_path(&e.data_file.file_path));
                }
            }
        }
    }
    out
}

async fn compact_and_check(
    dir: &Path,
    expected: &[String],
    pyiceberg_reads_before: bool,
    clickhouse_expected: &[String],
) -> CompactMetrics {
    let (before, before_errors) = py_rows(dir).await;
    let (data_before, deletes_before, _, start) = current_files(dir).await;
    if pyiceberg_reads_before {
        assert_eq!(before[&start.to_string()], expected, "the fixture's rows");
    }
    let old: Vec<String> = before.keys().cloned().collect();
    // ClickHouse reads every column of every snapshot (`chtyped`), in its own form: before
    // compaction what pyiceberg reads (current = `clickhouse_expected`), after it the same as
    // before, and after expire_snapshots the current rows.
    let ch_before = chtyped(dir, &old).await;
    check_typed(&ch_before, clickhouse_expected, "before OPTIMIZE");
    assert_eq!(ch_before["snapshots"].as_object().unwrap().len(), old.len());
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
    assert_explicit_sequence_numbers(dir, start, now, m.added_data_files_count).await;
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
    // ClickHouse reads every column of the current snapshot and, by time travel, of every old one
    // exactly as it read them before.
    let ch_after = chtyped(dir, &old).await;
    check_typed(&ch_after, clickhouse_expected, "after OPTIMIZE");
    for sid in &old {
        assert_eq!(
            ch_after["snapshots"][sid], ch_before["snapshots"][sid],
            "ClickHouse, snapshot {sid}"
        );
    }
    assert_eq!(
        ch_after["current"], ch_before["current"],
        "ClickHouse, current rows"
    );
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
    // Files a retained snapshot (the current one, a tag, a branch) still lists stay.
    let kept = files_of_every_snapshot(dir).await;
    let mut expired = 0;
    for p in &replaced {
        if kept.contains(p) {
            assert!(Path::new(p).exists(), "{p} is still listed");
        } else {
            assert!(!Path::new(p).exists(), "{p} should be expired");
            expired += 1;
        }
    }
    assert!(expired > 0, "expire_snapshots removed replaced files");
    let (final_rows, _) = py_rows(dir).await;
    assert_eq!(
        final_rows[&now.to_string()],
        expected,
        "rows after expire_snapshots"
    );
    let ch = chtyped(dir, &[]).await;
    check_typed(&ch, clickhouse_expected, "after expire_snapshots");
    m
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pyiceberg_tables_of_every_type_compact_to_the_same_rows() {
    for partitioned in ["0", "1"] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("t");
        // With a tag on an old snapshot and a branch that has a row of its own: every ref reads
        // the same, by pyiceberg and by ClickHouse, every column.
        let fx = fixture(&["pyiceberg", dir.to_str().unwrap(), partitioned, "refs"]);
        let expected = strings(&fx["expected"]);
        let expected_ch = strings(&fx["expected_clickhouse"]);
        let refs_before = refs_of(&dir).await;
        assert_eq!(
            refs_before.len(),
            3,
            "main, a tag, a branch: {refs_before:?}"
        );
        let m = compact_and_check(&dir, &expected, true, &expected_ch).await;
        assert_eq!(m.failed_data_files_count, 0);
        let refs_after = refs_of(&dir).await;
        for (name, sid) in &refs_before {
            if name != "main" {
                assert_eq!(refs_after.get(name), Some(sid), "ref {name} unchanged");
            }
        }
        if partitioned == "1" {
            assert_eq!(
                m.rewritten_file_groups_count, 2,
                "one group per partition: {m:?}"
            );
        }
    }
}

/// Ref name → snapshot id of the newest metadata.
async fn refs_of(dir: &Path) -> BTreeMap<String, i64> {
    let located = locate(
        &FileIO::local(),
        dir.to_str().unwrap(),
        &MetadataSettings::default(),
    )
    .await
    .unwrap();
    located
        .metadata
        .refs()
        .iter()
        .map(|r| (r.name.clone(), r.snapshot_id))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clickhouse_position_deletes_are_applied_and_history_stays() {
    for version in ["2", "3"] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("t");
        let fx = fixture(&["clickhouse", dir.to_str().unwrap(), version]);
        let expected = strings(&fx["expected"]);
        let (_, deletes, _, _) = current_files(&dir).await;
        assert!(!deletes.is_empty(), "ClickHouse wrote position deletes");
        // ClickHouse's delete files name no referenced_data_file: they are partition-scoped (the
        // table is unpartitioned), and the second one names rows of two data files.
        assert!(deletes.iter().all(|d| d.referenced_data_file.is_none()));
        let lineage_before = if version == "3" {
            Some(row_lineage(&dir).await)
        } else {
            None
        };
        // (long, string, double): ClickHouse's form is the rows themselves.
        let m = compact_and_check(&dir, &expected, true, &expected).await;
        assert!(m.removed_delete_files_count >= 2, "v{version}: {m:?}");
        if let Some(before) = lineage_before {
            assert_lineage_written(&dir).await;
            let after = row_lineage(&dir).await;
            for (id, lineage) in &after {
                assert_eq!(before.get(id), Some(lineage), "row {id} keeps its _row_id");
            }
            assert_eq!(after.len(), expected.len());
        }
    }
}

/// Every compaction output of the current snapshot writes the v3 lineage columns explicitly:
/// `_row_id` (field id 2147483540) and `_last_updated_sequence_number` (2147483539), never null.
async fn assert_lineage_written(dir: &Path) {
    let (data, _, _, _) = current_files(dir).await;
    let outputs: Vec<&DataFile> = data
        .iter()
        .filter(|f| f.file_path.contains("-compacted-"))
        .collect();
    assert!(!outputs.is_empty());
    for f in outputs {
        let bytes = std::fs::read(local_path(&f.file_path)).unwrap();
        let builder = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
            Bytes::from(bytes),
        )
        .unwrap();
        let schema = builder.schema().clone();
        for (name, id) in [
            ("_row_id", "2147483540"),
            ("_last_updated_sequence_number", "2147483539"),
        ] {
            let field = schema
                .field_with_name(name)
                .unwrap_or_else(|_| panic!("{name} in {}", f.file_path));
            assert_eq!(
                field
                    .metadata()
                    .get(PARQUET_FIELD_ID_META_KEY)
                    .map(String::as_str),
                Some(id),
                "{name}'s field id"
            );
        }
        for batch in builder.build().unwrap() {
            let batch = batch.unwrap();
            for name in ["_row_id", "_last_updated_sequence_number"] {
                let col = batch.column_by_name(name).unwrap();
                assert_eq!(col.null_count(), 0, "{name} null in {}", f.file_path);
            }
        }
    }
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

pub(crate) fn with_id(name: &str, ty: DataType, id: i32) -> Field {
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

pub(crate) async fn commit_deletes(dir: &Path, files: Vec<DataFile>) {
    let request = CommitRequest::new(
        Operation::Delete,
        FileChanges {
            added_deletes: files,
            ..Default::default()
        },
    );
    crate::support::commit::commit_request(
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
    let (_, deletes, _, start) = current_files(&dir).await;
    assert_eq!(deletes.len(), 1);
    // ClickHouse applies equality deletes: it reads the expected rows before compaction.
    let ch_before = chtyped(&dir, &[]).await;
    assert_eq!(
        ch_before["current"],
        serde_json::json!(expected),
        "ClickHouse before: {ch_before}"
    );
    let results = engine_sql(&dir, &["OPTIMIZE TABLE t"]).await;
    let m = compact_metrics(&results[0]);
    assert_eq!(m.removed_delete_files_count, 1, "{m:?}");
    let (_, deletes, op, now) = current_files(&dir).await;
    assert_eq!(op, "replace");
    assert!(deletes.is_empty());
    assert_explicit_sequence_numbers(&dir, start, now, m.added_data_files_count).await;
    let (rows, errors) = py_rows(&dir).await;
    assert_eq!(rows[&now.to_string()], expected, "errors: {errors}");
    let ch_after = chtyped(&dir, &[]).await;
    check_typed(&ch_after, &expected, "after OPTIMIZE");
}

/// A delete file that a remaining data file still needs stays; one no remaining file needs goes.
/// Files A, B, C (ids 0..9), equality delete E1 (id 0), file D (id 7 again), equality delete E2
/// (ids 1 and 7: it applies to A..C and to D). With `delete_file_threshold = 2` only A..C (two
/// deletes each) are rewritten: E1 goes, E2 stays for D, and D's row 7 stays deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_file_still_needed_stays() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    fixture(&["simple", dir.to_str().unwrap(), "3"]);
    commit_deletes(&dir, vec![equality_delete(&dir, "eq-1.parquet", &[0])]).await;
    fixture(&["simple_append", dir.to_str().unwrap()]);
    commit_deletes(&dir, vec![equality_delete(&dir, "eq-2.parquet", &[1, 7])]).await;
    let mut expected: Vec<String> = [2, 3, 4, 5, 6, 8].into_iter().map(simple_row).collect();
    expected.sort();
    let (data_before, _, _, start) = current_files(&dir).await;
    assert_eq!(data_before.len(), 4);
    let ch_before = chtyped(&dir, &[]).await;
    assert_eq!(
        ch_before["current"],
        serde_json::json!(expected),
        "ClickHouse before: {ch_before}"
    );
    let r = engine_sql(
        &dir,
        &[
            "ALTER TABLE t EXECUTE rewrite_data_files(delete_file_threshold = 2, \
           min_file_size_bytes = 0, min_input_files = 1)",
        ],
    )
    .await;
    let m = compact_metrics(&r[0]);
    assert_eq!(m.rewritten_data_files_count, 3, "{m:?}");
    assert_eq!(m.removed_delete_files_count, 1, "{m:?}");
    let (data, deletes, op, now) = current_files(&dir).await;
    assert_eq!(op, "replace");
    assert_eq!(data.len(), 2);
    let kept: Vec<&str> = deletes.iter().map(|d| d.file_path.as_str()).collect();
    assert_eq!(kept.len(), 1);
    assert!(kept[0].ends_with("eq-2.parquet"), "{kept:?}");
    assert_explicit_sequence_numbers(&dir, start, now, m.added_data_files_count).await;
    // ClickHouse applies the delete left to D (and not to the new file).
    let ch_after = chtyped(&dir, &[]).await;
    assert_eq!(
        ch_after["current"],
        serde_json::json!(expected),
        "ClickHouse after: {ch_after}"
    );
    // The new file holds exactly the rewritten rows, D still holds its row 7.
    let new = data
        .iter()
        .find(|f| f.file_path.contains("-compacted-"))
        .unwrap();
    let out = fixture(&["parquet_rows", &local_path(&new.file_path), "id", "name"]);
    assert_eq!(strings(&out["rows"]), expected);
    // A plain OPTIMIZE then applies E2 to D: no delete file, rows equal (pyiceberg reads it now).
    let r = engine_sql(&dir, &["OPTIMIZE TABLE t"]).await;
    let m = compact_metrics(&r[0]);
    assert_eq!(m.removed_delete_files_count, 1, "{m:?}");
    let (_, deletes, _, now) = current_files(&dir).await;
    assert!(deletes.is_empty());
    let (rows, errors) = py_rows(&dir).await;
    assert_eq!(rows[&now.to_string()], expected, "errors: {errors}");
    check_typed(
        &chtyped(&dir, &[]).await,
        &expected,
        "after the second OPTIMIZE",
    );
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
    let dv = write_deletion_vector(&dir, "dv-1.puffin", &target.file_path, &[0]);
    commit_deletes(&dir, vec![dv]).await;
    let (_, _, _, start) = current_files(&dir).await;
    let (py_before, _) = py_rows(&dir).await;
    let snapshots: Vec<String> = py_before.keys().cloned().collect();
    let ch_before = chtyped(&dir, &snapshots).await;
    // ClickHouse 26.9 cannot read a table with a deletion vector (the snapshots before it it reads);
    // should it learn to, it must read the expected rows.
    match ch_before["errors"].get("current") {
        Some(e) => assert!(
            e.as_str()
                .unwrap()
                .contains("Position deletes are supported only for parquet format"),
            "{e}"
        ),
        None => assert_eq!(strings(&ch_before["current"]), expected),
    }
    let results = engine_sql(&dir, &["OPTIMIZE TABLE t"]).await;
    let m = compact_metrics(&results[0]);
    assert!(m.removed_delete_files_count >= 1, "{m:?}");
    let (_, deletes, _, now) = current_files(&dir).await;
    assert!(deletes.is_empty());
    assert_explicit_sequence_numbers(&dir, start, now, m.added_data_files_count).await;
    let (rows, errors) = py_rows(&dir).await;
    assert_eq!(rows[&now.to_string()], expected, "errors: {errors}");
    // Every old snapshot reads as before (pyiceberg; ClickHouse, the snapshots it could read).
    for (sid, r) in &py_before {
        assert_eq!(&rows[sid], r, "pyiceberg, snapshot {sid}");
    }
    let ch_after = chtyped(&dir, &snapshots).await;
    assert_eq!(
        strings(&ch_after["current"]),
        expected,
        "ClickHouse after: {ch_after}"
    );
    for sid in &snapshots {
        if ch_before["errors"].get(sid).is_none() {
            assert_eq!(
                ch_after["snapshots"][sid], ch_before["snapshots"][sid],
                "ClickHouse {sid}"
            );
        }
    }
}

/// A v3 deletion vector (a Puffin file under `dir/data` holding one `deletion-vector-v1` blob)
/// deleting `positions` of `data_file`, and its content-file entry, not committed.
pub(crate) fn write_deletion_vector(
    dir: &Path,
    name: &str,
    data_file: &str,
    positions: &[u64],
) -> DataFile {
    let mut bitmap = roaring::RoaringTreemap::new();
    bitmap.extend(positions.iter().copied());
    let blob = deletion_vector_blob(&bitmap);
    let mut puffin = b"PFA1".to_vec();
    puffin.extend_from_slice(&blob);
    let footer = serde_json::json!({"blobs": [{
        "type": "deletion-vector-v1", "fields": [2147483645], "snapshot-id": -1,
        "sequence-number": -1, "offset": 4, "length": blob.len(),
        "properties": {"referenced-data-file": data_file, "cardinality": bitmap.len().to_string()}}]})
    .to_string();
    puffin.extend_from_slice(b"PFA1");
    puffin.extend_from_slice(footer.as_bytes());
    puffin.extend_from_slice(&(footer.len() as i32).to_le_bytes());
    puffin.extend_from_slice(&[0, 0, 0, 0]);
    puffin.extend_from_slice(b"PFA1");
    let path = dir.join("data").join(name);
    std::fs::write(&path, &puffin).unwrap();
    let mut dv = DataFile::new(
        DataContent::PositionDeletes,
        path.to_str().unwrap(),
        bitmap.len() as i64,
        puffin.len() as i64,
    );
    dv.file_format = "PUFFIN".into();
    dv.referenced_data_file = Some(data_file.to_string());
    dv.content_offset = Some(4);
    dv.content_size_in_bytes = Some(blob.len() as i64);
    dv
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

/// Commits an equality delete of `ids` (in `partition`, else unpartitioned) the first time
/// compaction writes an output file.
#[derive(Debug)]
struct ConcurrentDelete {
    dir: PathBuf,
    fired: AtomicBool,
    ids: Vec<i64>,
    partition: Option<PartitionTuple>,
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
            let (ids, partition) = (self.ids.clone(), self.partition.clone());
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                let mut delete = equality_delete(&dir, "eq-late.parquet", &ids);
                if let Some(p) = partition {
                    delete.partition = p;
                }
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
        ids: vec![2],
        partition: None,
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

/// A delete committed during compaction that touches one partition fails that partition's group
/// only: the other group commits, the deleted row stays deleted (ClickHouse reads the rows: the
/// delete is an equality delete, which pyiceberg cannot read), and a re-run compacts the rest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrent_delete_fails_only_the_group_it_touches() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    let fx = fixture(&["pyiceberg", dir.to_str().unwrap(), "1"]);
    // Partition b holds the odd ids; the concurrent delete removes id 3 there.
    let expected_ch: Vec<String> = strings(&fx["expected_clickhouse"])
        .into_iter()
        .filter(|r| !r.starts_with("[3,"))
        .collect();
    let expected: Vec<String> = strings(&fx["expected"])
        .into_iter()
        .filter(|r| !r.starts_with("[3,"))
        .collect();
    let (data, _, _, _) = current_files(&dir).await;
    let in_b: Vec<&DataFile> = data
        .iter()
        .filter(|f| f.file_path.contains("part=b"))
        .collect();
    let in_a = data.len() - in_b.len();
    assert!(in_a > 1 && in_b.len() > 1);
    let hook = Arc::new(ConcurrentDelete {
        dir: dir.clone(),
        fired: AtomicBool::new(false),
        ids: vec![3],
        partition: Some(in_b[0].partition.clone()),
    });
    let store = FaultyStore::hooked(Arc::new(LocalFileSystem::new()), hook.clone());
    let io = FileIO::from_store("/", Arc::new(store)).unwrap();
    let table = Table::with_io(dir.to_str().unwrap(), io);
    let outcome = table
        .rewrite_data_files()
        .optimize()
        .min_input_files(2)
        .execute()
        .await
        .unwrap();
    assert!(hook.fired.load(Ordering::SeqCst));
    let m = outcome.metrics;
    assert_eq!(
        m.failed_data_files_count as usize,
        in_b.len(),
        "{m:?} {:?}",
        outcome.warnings
    );
    assert_eq!(m.rewritten_data_files_count as usize, in_a, "{m:?}");
    let (after, deletes, op, _) = current_files(&dir).await;
    assert_eq!(op, "replace");
    assert_eq!(deletes.len(), 1, "the concurrent delete stands");
    for f in &in_b {
        assert!(
            after.iter().any(|g| g.file_path == f.file_path),
            "{} left as it was",
            f.file_path
        );
    }
    let ch = chtyped(&dir, &[]).await;
    check_typed(&ch, &expected_ch, "after the partial compaction");
    // A re-run compacts partition b with the delete applied; pyiceberg reads it again.
    let r = engine_sql(&dir, &["OPTIMIZE TABLE t"]).await;
    let m = compact_metrics(&r[0]);
    assert_eq!(m.removed_delete_files_count, 1, "{m:?}");
    let (_, deletes, _, now) = current_files(&dir).await;
    assert!(deletes.is_empty());
    let (rows, errors) = py_rows(&dir).await;
    assert_eq!(rows[&now.to_string()], expected, "{errors}");
    check_typed(&chtyped(&dir, &[]).await, &expected_ch, "after the re-run");
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
pub(crate) fn position_delete(dir: &Path, name: &str, rows: &[(String, i64)]) -> DataFile {
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

/// v2 position deletes both ways: a file-scoped one (its `file_path` bounds name one data file,
/// as Java writes them in v2; the v2 manifest schema has no `referenced_data_file`, a v3 field)
/// and a partition-scoped one naming rows of two data files. pyiceberg and ClickHouse read them
/// before; after compaction every snapshot reads as before, by both, every column.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_and_partition_scoped_position_deletes_are_applied() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    fixture(&["simple", dir.to_str().unwrap(), "5"]);
    let (data, _, _, _) = current_files(&dir).await;
    let mut paths: Vec<String> = data.iter().map(|f| f.file_path.clone()).collect();
    paths.sort();
    let first: Vec<i64> = paths.iter().map(|p| first_id(p)).collect();
    // File-scoped: row 1 of the first file.
    let mut scoped = position_delete(&dir, "pos-file.parquet", &[(paths[0].clone(), 1)]);
    let bound = BTreeMap::from([(2_147_483_546, paths[0].as_bytes().to_vec())]);
    scoped.lower_bounds = Some(bound.clone().into_iter().collect());
    scoped.upper_bounds = Some(bound.into_iter().collect());
    // Partition-scoped: row 0 of the second file and row 2 of the third.
    let wide = position_delete(
        &dir,
        "pos-part.parquet",
        &[(paths[1].clone(), 0), (paths[2].clone(), 2)],
    );
    commit_deletes(&dir, vec![scoped]).await;
    commit_deletes(&dir, vec![wide]).await;
    let gone = [first[0] + 1, first[1], first[2] + 2];
    let mut expected: Vec<String> = (0..15)
        .filter(|i| !gone.contains(i))
        .map(simple_row)
        .collect();
    expected.sort();
    let (_, deletes, _, _) = current_files(&dir).await;
    let file_scoped = deletes.iter().filter(|d| {
        let (Some(lo), Some(hi)) = (&d.lower_bounds, &d.upper_bounds) else {
            return false;
        };
        let key = 2_147_483_546;
        lo.get(&key).is_some_and(|l| Some(l) == hi.get(&key))
    });
    assert_eq!(file_scoped.count(), 1, "{deletes:?}");
    let m = compact_and_check(&dir, &expected, true, &expected).await;
    assert_eq!(m.removed_delete_files_count, 2, "{m:?}");
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
    for fault in [Fault::Crash, Fault::CrashAfterApplying, Fault::FailOnce] {
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
            let crashed = injector.crashed() || injector.failures() > 0;
            if fault == Fault::FailOnce {
                // One write fails and the process lives on: a clear error (or a retry that
                // succeeds); either way the checks below hold.
                if let Err(e) = &result {
                    assert!(e.to_string().starts_with("Code: "), "k={k}: {e}");
                }
            } else {
                assert_eq!(result.is_err(), crashed, "{fault:?} k={k}: {result:?}");
            }
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
    // Every column, by ClickHouse (its own table) and pyiceberg in ClickHouse's form.
    let ch_before = chtyped(&dir, &snapshots).await;
    let ch_rows = strings(&ch_before["py_current"]);
    check_typed(&ch_before, &ch_rows, "before OPTIMIZE");
    assert_eq!(ch_rows.len(), 10);
    let lineage = row_lineage(&dir).await;
    let (_, _, _, start) = current_files(&dir).await;
    let results = engine_sql(&dir, &["OPTIMIZE TABLE t"]).await;
    let m = compact_metrics(&results[0]);
    assert!(m.rewritten_data_files_count >= 4, "{m:?}");
    assert!(m.removed_delete_files_count >= 1, "{m:?}");
    let (_, deletes, op, now) = current_files(&dir).await;
    assert_eq!(op, "replace");
    assert!(deletes.is_empty());
    let ch_after = chtyped(&dir, &snapshots).await;
    check_typed(&ch_after, &ch_rows, "after OPTIMIZE");
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
    assert_lineage_written(&dir).await;
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

/// Writes `v1.metadata.json` of an empty v3 table at `location` with `schemas`.
async fn new_v3_table(location: &str, schemas: serde_json::Value, last_column_id: i32) {
    use icetrim::internals::iceberg::metadata::TableMetadata;
    use icetrim::internals::iceberg::spec::FormatVersion;
    use icetrim::internals::iceberg::txn::create::new_table_json;
    let file = format!("{location}/metadata/v1.metadata.json");
    let mut json = new_table_json(location, FormatVersion::V3, &uuid::Uuid::new_v4(), 1_000);
    json.insert("schemas".into(), schemas);
    json.insert("last-column-id".into(), last_column_id.into());
    let md = TableMetadata::from_json(json, &file).unwrap();
    FileIO::local()
        .overwrite(&file, Bytes::from(md.to_json_bytes()))
        .await
        .unwrap();
}

/// Commits an append of `data` to the table at `location`.
async fn append_file(location: &str, data: DataFile) {
    let request = CommitRequest::new(
        Operation::Append,
        FileChanges {
            added_data: vec![data],
            ..Default::default()
        },
    );
    crate::support::commit::commit_request(
        &FileIO::local(),
        location,
        &MetadataSettings::default(),
        3,
        &request,
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v3_timestamp_ns_and_row_lineage_survive() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    let location = dir.to_str().unwrap().to_string();
    new_v3_table(
        &location,
        serde_json::json!([{"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "id", "required": false, "type": "long"},
            {"id": 2, "name": "data", "required": false, "type": "string"},
            {"id": 3, "name": "tns", "required": false, "type": "timestamp_ns"}]}]),
        3,
    )
    .await;
    let mut all = Vec::new();
    for f in 0..3 {
        let ids: Vec<i64> = (f * 4..f * 4 + 4).collect();
        all.extend(ids.iter().copied());
        let data = v3_nanos_file(&dir, &format!("f{f}.parquet"), &ids);
        append_file(&location, data).await;
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
        match f.partition.fields.as_slice() {
            [(_, PartitionValue::Int(p))] => *p,
            other => panic!("one int: {other:?}"),
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

    compact_and_check(&dir, &expected, true, &expected).await;
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

/// timestamp_ns and timestamptz_ns (v3) written by another implementation: pyiceberg 0.12's own
/// Parquet writer (`write_file` with v3 table metadata in memory; pyiceberg cannot write v3
/// metadata, so the files are committed here). pyiceberg reads
/// the table before and after compaction to the nanosecond, pyarrow alone reads the output file
/// (TIMESTAMP(NANOS) with field ids), and ClickHouse (chdb) reads it as it did before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v3_nanosecond_timestamps_written_by_pyiceberg_survive() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    let location = dir.to_str().unwrap().to_string();
    new_v3_table(
        &location,
        serde_json::json!([{"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "id", "required": false, "type": "long"},
            {"id": 2, "name": "tns", "required": false, "type": "timestamp_ns"},
            {"id": 3, "name": "tstzns", "required": false, "type": "timestamptz_ns"},
            {"id": 4, "name": "s", "required": false, "type": "string"}]}]),
        4,
    )
    .await;
    let mut expected = Vec::new();
    for f in 0..3i64 {
        let first = (f * 5).to_string();
        let task = f.to_string();
        let out = fixture(&["nanos", &location, &first, "5", &task]);
        expected.extend(strings(&out["rows"]));
        let data = DataFile::new(
            DataContent::Data,
            out["path"].as_str().unwrap(),
            out["record_count"].as_i64().unwrap(),
            out["size"].as_i64().unwrap(),
        );
        append_file(&location, data).await;
    }
    expected.sort();
    assert_eq!(expected.len(), 15);
    assert!(
        expected
            .iter()
            .any(|r| r.contains("\"ns:1700000000123456789\"")),
        "nanoseconds microseconds cannot hold: {expected:?}"
    );
    let (before, errors) = py_rows(&dir).await;
    let (_, _, _, start) = current_files(&dir).await;
    assert_eq!(before[&start.to_string()], expected, "pyiceberg: {errors}");
    let snapshots: Vec<String> = before.keys().cloned().collect();
    // ClickHouse reads both nanosecond columns to the nanosecond (DateTime64(9)).
    let ch_before = chtyped(&dir, &snapshots).await;
    check_typed(&ch_before, &expected, "ClickHouse before OPTIMIZE");

    let r = engine_sql(
        &dir,
        &["ALTER TABLE t EXECUTE rewrite_data_files(min_input_files = 2)"],
    )
    .await;
    let m = compact_metrics(&r[0]);
    assert_eq!(m.rewritten_data_files_count, 3, "{m:?}");
    let (data, _, op, now) = current_files(&dir).await;
    assert_eq!(op, "replace");
    assert_eq!(data.len(), 1);
    let (after, errors) = py_rows(&dir).await;
    for (sid, rows) in &before {
        assert_eq!(&after[sid], rows, "pyiceberg, snapshot {sid}");
    }
    assert_eq!(after[&now.to_string()], expected, "pyiceberg: {errors}");
    // pyarrow alone on the output file: the same rows, nanosecond units, the zone flag, field ids.
    let out = fixture(&[
        "parquet_rows",
        &local_path(&data[0].file_path),
        "id",
        "tns",
        "tstzns",
        "s",
    ]);
    assert_eq!(strings(&out["rows"]), expected);
    let schema = out["schema"].as_str().unwrap();
    assert!(
        schema.contains("field_id=2 tns (Timestamp(isAdjustedToUTC=false, timeUnit=nanoseconds"),
        "{schema}"
    );
    assert!(
        schema.contains("field_id=3 tstzns (Timestamp(isAdjustedToUTC=true, timeUnit=nanoseconds"),
        "{schema}"
    );
    let ch_after = chtyped(&dir, &snapshots).await;
    check_typed(&ch_after, &expected, "ClickHouse after OPTIMIZE");
    for sid in &snapshots {
        assert_eq!(
            ch_after["snapshots"][sid], ch_before["snapshots"][sid],
            "ClickHouse {sid}"
        );
    }
}

/// A v3 table with a column of a type compaction cannot rewrite (`variant`, `geometry`,
/// `geography`, also nested in a struct) is refused with NOT_IMPLEMENTED, before anything is
/// written: the metadata and the data files stay as they were.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn variant_geometry_geography_are_refused() {
    let cases = [
        serde_json::json!("variant"),
        serde_json::json!("geometry"),
        serde_json::json!("geography"),
        serde_json::json!({"type": "struct", "fields": [
            {"id": 3, "name": "inner", "required": false, "type": "variant"}]}),
    ];
    for ty in cases {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("t");
        let location = dir.to_str().unwrap().to_string();
        new_v3_table(
            &location,
            serde_json::json!([{"type": "struct", "schema-id": 0, "fields": [
                {"id": 1, "name": "id", "required": false, "type": "long"},
                {"id": 2, "name": "x", "required": false, "type": ty}]}]),
            3,
        )
        .await;
        // Two small data files holding `id` only (the other column is missing, i.e. null).
        for f in 0..2 {
            let schema = Arc::new(Schema::new(vec![with_id("id", DataType::Int64, 1)]));
            let batch = RecordBatch::try_new(
                schema.clone(),
                vec![Arc::new(Int64Array::from(vec![f, f + 10])) as ArrayRef],
            )
            .unwrap();
            let mut w = ArrowWriter::try_new(Vec::new(), schema, None).unwrap();
            w.write(&batch).unwrap();
            let bytes = w.into_inner().unwrap();
            std::fs::create_dir_all(dir.join("data")).unwrap();
            let path = dir.join("data").join(format!("f{f}.parquet"));
            std::fs::write(&path, &bytes).unwrap();
            let data = DataFile::new(
                DataContent::Data,
                path.to_str().unwrap(),
                2,
                bytes.len() as i64,
            );
            append_file(&location, data).await;
        }
        let before = newest_metadata(&dir).await;
        let files_before: Vec<_> = std::fs::read_dir(dir.join("data"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        let engine = Engine::builder().build().unwrap();
        let mut s = engine.session();
        s.execute(&format!(
            "CREATE TABLE t ENGINE = IcebergLocal('{}')",
            dir.display()
        ))
        .await
        .unwrap();
        for statement in [
            "OPTIMIZE TABLE t",
            "ALTER TABLE t EXECUTE rewrite_data_files(rewrite_all = 1)",
        ] {
            let e = s.execute(statement).await.unwrap_err();
            assert_eq!(e.kind(), icetrim::ErrorKind::NotImplemented, "{ty}: {e}");
            assert!(e.to_string().contains("NOT_IMPLEMENTED"), "{e}");
            assert!(e.message().contains("cannot rewrite"), "{ty}: {e}");
        }
        assert_eq!(
            newest_metadata(&dir).await,
            before,
            "{ty}: nothing committed"
        );
        let files_after: Vec<_> = std::fs::read_dir(dir.join("data"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(files_after, files_before, "{ty}: nothing written");
    }
}
