//! Other engines read what icetrim commits: pyiceberg (`StaticTable.from_metadata`) opens a v1 and
//! a v2 table after an expiry-style commit, and ClickHouse (chdb) reads and appends to a v3 table
//! after one. Needs the project's Python (`ICETRIM_PYTHON`, else `<crate>/.venv/bin/python`); the
//! tests fail, not skip, when it is missing.

use std::collections::HashSet;
use std::process::Command;

use icetrim::internals::iceberg::commit::{CommitOptions, CommitOutcome, commit};
use icetrim::internals::iceberg::locate::{LocatedMetadata, MetadataSettings, locate};
use icetrim::internals::io::FileIO;
use serde_json::Value;

use crate::support::fixtures::python;

/// Run a Python snippet with `args`; its last stdout line is JSON.
fn run_python(script: &str, args: &[&str]) -> Value {
    let out = Command::new(python())
        .current_dir("/") // chdb only opens paths under its working directory
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "python failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("bad JSON {last:?}: {e}"))
}

const PYICEBERG_CREATE: &str = r#"
import sys, json, pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
warehouse, version = sys.argv[1], sys.argv[2]
cat = SqlCatalog("t", uri=f"sqlite:///{warehouse}/cat.db", warehouse=f"file://{warehouse}")
cat.create_namespace("db")
t = cat.create_table("db.t", schema=pa.schema([("id", pa.int64())]), properties={"format-version": version})
for i in range(3):
    t.append(pa.table({"id": list(range(i * 10, i * 10 + 10))}))
first = t.snapshots()[0].snapshot_id
t.manage_snapshots().create_tag(first, "first").commit()
print(json.dumps({"location": t.location(), "first": first}))
"#;

const PYICEBERG_READ: &str = r#"
import sys, json
from pyiceberg.table import StaticTable
t = StaticTable.from_metadata(sys.argv[1])
m = t.metadata
print(json.dumps({
    "snapshots": [s.snapshot_id for s in m.snapshots],
    "refs": sorted(m.refs.keys()),
    "rows": t.scan().to_arrow().num_rows,
    "metadata_log": [e.metadata_file for e in m.metadata_log],
}))
"#;

/// Expire the first snapshot the way expiry will: snapshots, refs, snapshot-log, statistics.
async fn expire_first_and_commit(io: &FileIO, located: &LocatedMetadata) -> (String, i64) {
    let current = &located.metadata;
    let first = current
        .snapshots()
        .first()
        .map(|s| s.snapshot_id)
        .expect("has snapshots");
    let keep: HashSet<i64> = current
        .snapshots()
        .iter()
        .map(|s| s.snapshot_id)
        .filter(|&id| id != first)
        .collect();
    let doomed: Vec<String> = current
        .refs()
        .iter()
        .filter(|r| r.snapshot_id == first)
        .map(|r| r.name.clone())
        .collect();
    let mut next = current.clone();
    next.retain_snapshots(&keep).expect("retain");
    next.remove_refs(&doomed).expect("refs");
    next.trim_snapshot_log_after_expired(&HashSet::from([first]))
        .expect("log");
    next.retain_statistics(&keep).expect("stats");
    match commit(io, located, next, &CommitOptions::default())
        .await
        .expect("commit")
    {
        CommitOutcome::Committed(done) => (done.path, first),
        CommitOutcome::Conflict { taken } => panic!("conflict on {taken}"),
        other => panic!("unexpected outcome {other:?}"),
    }
}

#[tokio::test]
async fn pyiceberg_reads_tables_after_our_commit() {
    for version in ["1", "2"] {
        let dir = tempfile::tempdir().expect("tempdir");
        let warehouse = dir.path().to_string_lossy().into_owned();
        let created = run_python(PYICEBERG_CREATE, &[&warehouse, version]);
        let location = created["location"].as_str().expect("location").to_string();
        let io = FileIO::local();
        let located = locate(&io, &location, &MetadataSettings::default())
            .await
            .expect("located");
        assert_eq!(located.metadata.snapshots().len(), 3);
        let (path, first) = expire_first_and_commit(&io, &located).await;
        assert_eq!(Some(first), created["first"].as_i64());

        let read = run_python(PYICEBERG_READ, &[&path]);
        let snapshots: Vec<i64> = read["snapshots"]
            .as_array()
            .expect("array")
            .iter()
            .filter_map(Value::as_i64)
            .collect();
        assert_eq!(snapshots.len(), 2, "v{version}: {read}");
        assert!(!snapshots.contains(&first));
        assert_eq!(read["refs"], serde_json::json!(["main"]), "v{version}");
        assert_eq!(read["rows"], 30, "v{version}");
        let log = read["metadata_log"].as_array().expect("array");
        assert_eq!(
            log.last().and_then(Value::as_str),
            Some(located.path.as_str())
        );
    }
}

const CHDB_SCRIPT: &str = r#"
import sys, json
import chdb.session as chs
path, step = sys.argv[1], sys.argv[2]
s = chs.Session()
if step == "create":
    s.query(f"CREATE TABLE t (id Int64, name Nullable(String)) ENGINE = IcebergLocal('{path}') "
            "SETTINGS iceberg_format_version = 3")
else:
    s.query(f"CREATE TABLE t ENGINE = IcebergLocal('{path}')")
ins = "INSERT INTO t SETTINGS allow_insert_into_iceberg = 1 VALUES"
if step == "create":
    for i in range(3):
        s.query(f"{ins} ({i}, 'r{i}')")
else:
    s.query(f"{ins} (99, 'after')")
rows = int(str(s.query("SELECT count() FROM t", "CSV")).strip())
s.close()
print(json.dumps({"rows": rows}))
"#;

#[tokio::test]
async fn clickhouse_reads_and_appends_after_our_commit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = format!("{}/", dir.path().join("ch").display());
    let created = run_python(CHDB_SCRIPT, &[&path, "create"]);
    assert_eq!(created["rows"], 3);
    let io = FileIO::local();
    let located = locate(&io, &path, &MetadataSettings::default())
        .await
        .expect("located");
    let (ours, first) = expire_first_and_commit(&io, &located).await;

    // ClickHouse opens the table on our file, reads it and commits on top of it.
    let after = run_python(CHDB_SCRIPT, &[&path, "append"]);
    assert_eq!(after["rows"], 4);
    let theirs = locate(&io, &path, &MetadataSettings::default())
        .await
        .expect("located");
    assert_ne!(theirs.path, ours);
    assert_eq!(theirs.version, located.version.map(|v| v + 2));
    assert!(
        theirs.metadata.snapshot(first).is_none(),
        "ClickHouse built on our metadata"
    );
    assert_eq!(theirs.metadata.snapshots().len(), 3);
}
