//! Compaction on the S3 (moto) and Azure (azurite) emulators: a pyiceberg table with a position
//! delete, copied to each emulator, compacted there through SQL, read back by pyiceberg: the same
//! rows, one data file, no delete file, a `replace` snapshot; every older snapshot reads as before
//! (pyiceberg, and ClickHouse every column, on a local copy of what the emulator holds).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use icetrim::engine::{Engine, Metrics};
use icetrim::internals::iceberg::locate::{MetadataSettings, locate};
use icetrim::internals::iceberg::manifest::DataFile;
use icetrim::internals::iceberg::spec::DataContent;
use icetrim::internals::iceberg::txn::{CommitRequest, FileChanges, Operation};
use icetrim::internals::io::FileIO;
use parquet::arrow::{ArrowWriter, PARQUET_FIELD_ID_META_KEY};
use serde_json::Value;

use crate::support::backends::{Backend, Place};
use crate::support::fixtures::run_python_json;

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/py/compaction_fixture.py")
}

fn rows_of(metadata: &str) -> (Vec<String>, String) {
    let out = run_python_json(&script(), &["rows", metadata]);
    let current = out["current"].to_string();
    let mut rows: Vec<String> = out["snapshots"][&current]
        .as_array()
        .unwrap_or_else(|| panic!("pyiceberg read nothing: {out}"))
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    rows.sort();
    (rows, current)
}

async fn newest(dir: &Path) -> icetrim::internals::iceberg::locate::LocatedMetadata {
    locate(
        &FileIO::local(),
        dir.to_str().unwrap(),
        &MetadataSettings::default(),
    )
    .await
    .unwrap()
}

fn position_delete(dir: &Path, data_path: &str) -> DataFile {
    let id = |name: &str, ty, id: i32| {
        Field::new(name, ty, true).with_metadata(HashMap::from([(
            PARQUET_FIELD_ID_META_KEY.to_string(),
            id.to_string(),
        )]))
    };
    let schema = Arc::new(Schema::new(vec![
        id("file_path", DataType::Utf8, 2_147_483_546),
        id("pos", DataType::Int64, 2_147_483_545),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(StringArray::from(vec![data_path])) as ArrayRef,
            Arc::new(Int64Array::from(vec![0])) as ArrayRef,
        ],
    )
    .unwrap();
    let mut w = ArrowWriter::try_new(Vec::new(), schema, None).unwrap();
    w.write(&batch).unwrap();
    let bytes = w.into_inner().unwrap();
    let path = dir.join("data").join("pos-1.parquet");
    std::fs::write(&path, &bytes).unwrap();
    DataFile::new(
        DataContent::PositionDeletes,
        format!("file://{}", path.display()),
        1,
        bytes.len() as i64,
    )
}

fn first_id(path: &Path) -> i64 {
    use arrow_array::cast::AsArray;
    let bytes = bytes::Bytes::from(std::fs::read(path).unwrap());
    let mut reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(bytes)
        .unwrap()
        .build()
        .unwrap();
    let batch = reader.next().unwrap().unwrap();
    let ids = arrow_cast::cast(batch.column_by_name("id").unwrap(), &DataType::Int64).unwrap();
    ids.as_primitive::<arrow_array::types::Int64Type>().value(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_on_both_emulators() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    let fx: Value = run_python_json(&script(), &["simple", dir.to_str().unwrap(), "5"]);
    let (all_rows, _) = rows_of(&newest(&dir).await.path);
    assert_eq!(all_rows.len(), 15);
    let first_data = std::fs::read_dir(dir.join("data"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
        .min()
        .unwrap();
    let victim = first_id(&first_data);
    let expected: Vec<String> = all_rows
        .into_iter()
        .filter(|r| !r.starts_with(&format!("[{victim},")))
        .collect();
    let location = fx["dir"].as_str().unwrap();
    let original = Place::local(&dir, &format!("file://{location}"));
    for backend in [Backend::S3, Backend::Azure] {
        let place = Place::copy_of(&original, backend).await;
        // A position delete on the first row of one data file, written on the emulator (its
        // rows name the data file as the copy spells it).
        let data_path = place.path_of(first_data.to_str().unwrap());
        let scratch = tmp.path().join(format!("del-{}", backend.name()));
        std::fs::create_dir_all(scratch.join("data")).unwrap();
        let local_delete = position_delete(&scratch, &data_path);
        let bytes = std::fs::read(local_delete.file_path.trim_start_matches("file://")).unwrap();
        let delete_path = format!(
            "{}/data/pos-1.parquet",
            place.location().trim_end_matches('/')
        );
        place
            .root
            .io
            .overwrite(&delete_path, bytes::Bytes::from(bytes))
            .await
            .unwrap();
        let mut delete = local_delete;
        delete.file_path = delete_path;
        let request = CommitRequest::new(
            Operation::Delete,
            FileChanges {
                added_deletes: vec![delete],
                ..Default::default()
            },
        );
        crate::support::commit::commit_request(
            &place.root.io,
            place.location(),
            &MetadataSettings::default(),
            3,
            &request,
        )
        .await
        .unwrap();
        // Every snapshot as read before, from a local copy of what the emulator holds
        // (pyiceberg; ClickHouse every column, by time travel too). The copy relocates metadata
        // paths, not the paths inside the position delete file, so in the copy the delete
        // snapshot reads without its delete: old snapshots are compared copy with copy.
        let view_before = place.local_view(tmp.path()).await;
        let md_before = newest(&view_before).await;
        let snapshots: Vec<String> = md_before
            .metadata
            .snapshots()
            .iter()
            .map(|s| s.snapshot_id.to_string())
            .collect();
        let py_before = run_python_json(&script(), &["rows", &md_before.path]);
        let ch_before = chtyped(&view_before, &md_before.path, &snapshots);
        assert_eq!(
            ch_before["snapshots"], ch_before["py_snapshots"],
            "{backend:?}: ClickHouse and pyiceberg before"
        );
        let engine = Engine::builder().build().unwrap();
        let mut s = engine.session();
        s.execute(&format!("CREATE TABLE t ENGINE = {}", place.engine))
            .await
            .unwrap();
        let r = s.execute("OPTIMIZE TABLE t").await.unwrap();
        let Some(Metrics::Compact(m)) = r[0].metrics else {
            panic!("no metrics");
        };
        assert_eq!(m.rewritten_data_files_count, 5, "{backend:?}: {m:?}");
        assert_eq!(m.added_data_files_count, 1);
        assert_eq!(m.removed_delete_files_count, 1);
        let view = place.local_view(tmp.path()).await;
        let md = newest(&view).await;
        let op = md
            .metadata
            .current_snapshot()
            .unwrap()
            .summary
            .to_map()
            .get("operation")
            .cloned();
        assert_eq!(op.as_deref(), Some("replace"));
        let (rows, _) = rows_of(&md.path);
        assert_eq!(rows, expected, "{backend:?}");
        let py_after = run_python_json(&script(), &["rows", &md.path]);
        for sid in &snapshots {
            assert_eq!(
                py_after["snapshots"][sid], py_before["snapshots"][sid],
                "{backend:?}: pyiceberg, snapshot {sid}"
            );
        }
        let ch_after = chtyped(&view, &md.path, &snapshots);
        assert_eq!(
            strings(&ch_after["current"]),
            expected,
            "{backend:?}: ClickHouse after"
        );
        for sid in &snapshots {
            assert_eq!(
                ch_after["snapshots"][sid], ch_before["snapshots"][sid],
                "{backend:?}: ClickHouse, snapshot {sid}"
            );
        }
        assert!(
            ch_after["errors"].as_object().is_some_and(|e| e.is_empty()),
            "{backend:?}: {}",
            ch_after["errors"]
        );
    }
}

/// Every column as ClickHouse reads the local folder `dir` (current and `snapshots`).
fn chtyped(dir: &Path, metadata: &str, snapshots: &[String]) -> Value {
    let mut args = vec!["chtyped", dir.to_str().unwrap(), metadata];
    args.extend(snapshots.iter().map(String::as_str));
    run_python_json(&script(), &args)
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

/// A compaction that fails while writing (an input file that is not Parquet, read after others
/// were already streaming into an output) leaves nothing behind: the error names the file, the
/// table is unchanged, no `-compacted-` file or local upload staging file (`<name>#<n>`) remains,
/// and on S3 no multipart upload is left open (unseen by listings, billed by the provider).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_compaction_leaves_no_upload_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    let fx: Value = run_python_json(&script(), &["simple", dir.to_str().unwrap(), "5"]);
    // Inputs are read in path order: the last one fails after the others were written out.
    let last_data = std::fs::read_dir(dir.join("data"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
        .max()
        .unwrap();
    let size = std::fs::metadata(&last_data).unwrap().len() as usize;
    let location = fx["dir"].as_str().unwrap();
    let original = Place::local(&dir, &format!("file://{location}"));
    // The local pass runs on the original, after the copies were made.
    for backend in [Backend::S3, Backend::Azure, Backend::Local] {
        let place = match backend {
            Backend::Local => Place::local(&dir, &format!("file://{location}")),
            _ => Place::copy_of(&original, backend).await,
        };
        let victim = place.path_of(last_data.to_str().unwrap());
        place
            .root
            .io
            .overwrite(&victim, bytes::Bytes::from(vec![b'x'; size]))
            .await
            .unwrap();
        let before = table_files(&place).await;
        let engine = Engine::builder().build().unwrap();
        let mut s = engine.session();
        s.execute(&format!("CREATE TABLE t ENGINE = {}", place.engine))
            .await
            .unwrap();
        let err = s
            .execute("OPTIMIZE TABLE t")
            .await
            .expect_err("a compaction over a corrupt input must fail")
            .to_string();
        assert!(
            err.contains(&victim) && !err.contains("could not delete"),
            "{backend:?}: {err}"
        );
        assert_eq!(
            table_files(&place).await,
            before,
            "{backend:?}: files left behind"
        );
        if backend == Backend::S3 {
            let open = open_multipart_uploads(&place).await;
            assert!(open.is_empty(), "multipart uploads left open: {open:?}");
        }
    }
}

/// Every file under the table location, by name (local staging files included: the local store
/// lists them as files).
async fn table_files(place: &Place) -> Vec<String> {
    use futures::TryStreamExt;
    let mut names: Vec<String> = place
        .root
        .io
        .list(place.location())
        .map_ok(|f| f.uri)
        .try_collect()
        .await
        .unwrap();
    if place.backend == Backend::Local {
        let root = place.location().trim_start_matches("file://").to_string();
        names = walk(Path::new(&root));
    }
    names.sort();
    names
}

fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path.display().to_string());
        }
    }
    out
}

/// The keys of the multipart uploads open under the table's prefix on the S3 emulator
/// (`ListMultipartUploads`; moto accepts unsigned requests).
async fn open_multipart_uploads(place: &Place) -> Vec<String> {
    let endpoint = crate::support::emulator_var("ICETRIM_S3_ENDPOINT");
    let bucket = crate::support::emulator_var("ICETRIM_S3_BUCKET");
    let key_prefix = place
        .location()
        .trim_start_matches(&format!("s3://{bucket}/"))
        .to_string();
    let url = format!(
        "{}/{bucket}?uploads&prefix={key_prefix}",
        endpoint.trim_end_matches('/')
    );
    let body = reqwest::get(&url).await.unwrap().text().await.unwrap();
    assert!(body.contains("ListMultipartUploadsResult"), "{body}");
    body.split("<Key>")
        .skip(1)
        .filter_map(|rest| rest.split("</Key>").next())
        .map(str::to_string)
        .collect()
}
