//! A long-lived `tests/py/session_server.py` for one test: fixture builds, oracle reports and
//! ClickHouse statements without paying Python's imports each time (seconds per call otherwise).
//! The answers are those of `fixtures::make_fixture`, `fixtures::oracle_inspect` and
//! `fixtures::clickhouse_script`. The process ends when the server is dropped.
//!
//! A module of `tests/support/` (`crate::support::pyserver`), beside `tests/support/fixtures.rs`.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

use crate::support::fixtures::{self, Fixture};

pub struct PyServer {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl PyServer {
    pub fn start() -> PyServer {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/py/session_server.py");
        let mut child = Command::new(fixtures::python())
            .arg(&script)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("TZ", "UTC")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", script.display()));
        let input = child.stdin.take().expect("server stdin");
        let output = BufReader::new(child.stdout.take().expect("server stdout"));
        PyServer {
            child,
            input,
            output,
        }
    }

    fn ask(&mut self, request: Value) -> Value {
        let line = serde_json::to_string(&request).expect("encode request");
        writeln!(self.input, "{line}")
            .and_then(|()| self.input.flush())
            .unwrap_or_else(|e| panic!("session server gone ({e}) for {line}"));
        let mut answer = String::new();
        let read = self.output.read_line(&mut answer).expect("read answer");
        assert!(read > 0, "session server exited on {line}");
        let answer: Value = serde_json::from_str(&answer).expect("answer is JSON");
        if answer["ok"].as_bool() != Some(true) {
            panic!(
                "session server failed on {line}:\n{}",
                answer["error"].as_str().unwrap_or("")
            );
        }
        answer["result"].clone()
    }

    /// `fixtures::make_fixture`, in this server.
    pub fn make_fixture(&mut self, scenario: &str, now_ms: i64, orphans: bool) -> Fixture {
        let dir = tempfile::Builder::new()
            .prefix(&format!("icetrim-{scenario}-"))
            .tempdir()
            .expect("create a temporary folder");
        let table = dir.path().join("table");
        let mut argv = vec![
            json!(scenario),
            json!(table.to_str().expect("UTF-8 paths")),
            json!("--now-ms"),
            json!(now_ms.to_string()),
        ];
        if orphans {
            argv.push(json!("--orphans"));
        }
        let facts = self.ask(json!({"op": "build", "argv": argv}));
        Fixture { dir, facts }
    }

    /// `fixtures::oracle_inspect`, in this server.
    pub fn inspect(&mut self, metadata_path: &Path) -> Value {
        let path = metadata_path.to_str().expect("UTF-8 paths");
        self.ask(json!({"op": "inspect", "path": path}))
    }

    /// pyiceberg loads `namespace.table` through a catalog (`catalog`: `{"type": "rest", "uri",
    /// "warehouse"}` or `{"type": "glue"}`) and scans every ref: `{"refs": {ref: [snapshot id,
    /// rows]}, "current": id}`.
    pub fn catalog_read(&mut self, catalog: Value, namespace: &str, table: &str) -> Value {
        let s3 = crate::support::emulator_var("ICETRIM_S3_ENDPOINT");
        self.ask(json!({"op": "catalog_read", "catalog": catalog, "s3": s3,
                        "namespace": namespace, "table": table}))
    }

    /// pyiceberg's and ClickHouse's reading of `snapshots` of `table` (see
    /// `tests/py/snapshot_digests.py` for `table`'s forms and the answer): by snapshot id, `py`
    /// `[rows, digest]` and `ch` `[rows, "sum of cityHash64(*)"]`, or `py_error` / `ch_error`.
    pub fn snapshot_digests(&mut self, table: Value, snapshots: &[i64]) -> Value {
        let s3 = std::env::var("ICETRIM_S3_ENDPOINT").unwrap_or_default();
        let bucket = std::env::var("ICETRIM_S3_BUCKET").unwrap_or_default();
        self.ask(json!({"op": "snapshot_digests", "table": table, "s3": s3,
                        "bucket": bucket, "snapshots": snapshots}))
    }

    /// `fixtures::clickhouse_script`, in this server.
    pub fn clickhouse(
        &mut self,
        table_dir: &Path,
        statements: &[&str],
    ) -> Result<Vec<Vec<String>>, String> {
        let dir = table_dir.to_str().expect("UTF-8 paths");
        let reply = self.ask(json!({"op": "clickhouse", "dir": dir, "statements": statements}));
        fixtures::clickhouse_reply(&reply)
    }
}

impl Drop for PyServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
