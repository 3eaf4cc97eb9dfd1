//! Fixture tables built by real pyiceberg and real ClickHouse (chdb), and the Python oracle.
//!
//! `make_fixture` runs `scripts/fixtures/make_table.py` into a fresh temporary folder (the table is
//! built in place because its metadata holds absolute paths) and returns the facts it printed.
//! `oracle_inspect` and `clickhouse` run `tests/py/oracle.py`. Python is `$ICETRIM_PYTHON`, else
//! `<crate>/.venv/bin/python`; when neither exists the calling test fails with a message saying
//! how to provide it (these tests are never skipped).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use tempfile::TempDir;

/// A fixture table in its own temporary folder, with the facts its builder printed.
pub struct Fixture {
    /// Owns the folder; the table lives in `dir/table`, so tests may put files beside it.
    pub dir: TempDir,
    pub facts: Value,
}

impl Fixture {
    /// The table root (`facts.table_dir`).
    pub fn table_dir(&self) -> PathBuf {
        PathBuf::from(self.fact_str("table_dir"))
    }

    /// The newest metadata file when the fixture was built (`facts.metadata_path`).
    pub fn metadata_path(&self) -> PathBuf {
        PathBuf::from(self.fact_str("metadata_path"))
    }

    /// The snapshot id the builder labelled `label`.
    pub fn snapshot_id(&self, label: &str) -> i64 {
        self.facts["snapshots"][label]
            .as_i64()
            .unwrap_or_else(|| panic!("fixture has no snapshot labelled {label:?}"))
    }

    /// The local path of the data file labelled `label`.
    pub fn data_file(&self, label: &str) -> PathBuf {
        let path = self.facts["data_files"][label]
            .as_str()
            .unwrap_or_else(|| panic!("fixture has no data file labelled {label:?}"));
        PathBuf::from(path)
    }

    /// A string fact, or a panic naming it.
    pub fn fact_str(&self, key: &str) -> &str {
        self.facts[key]
            .as_str()
            .unwrap_or_else(|| panic!("fixture facts lack string field {key:?}: {}", self.facts))
    }
}

/// Milliseconds since the Unix epoch, from the real clock.
pub fn now_ms() -> i64 {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("system clock before 1970");
    i64::try_from(since_epoch.as_millis()).expect("time fits in i64")
}

fn crate_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Python with pyiceberg 0.12, chdb 4.4 and fastavro.
pub fn python() -> PathBuf {
    let (path, origin) = match std::env::var_os("ICETRIM_PYTHON") {
        Some(path) => (PathBuf::from(path), "$ICETRIM_PYTHON"),
        None => (
            crate_root().join(".venv/bin/python"),
            "<crate>/.venv/bin/python",
        ),
    };
    assert!(
        path.exists(),
        "fixture tests need Python with pyiceberg[sql-sqlite,pyarrow]==0.12.0, chdb==4.4.0 and \
         fastavro; none at {} ({origin}). Set ICETRIM_PYTHON to that interpreter or create the \
         virtualenv at <crate>/.venv",
        path.display()
    );
    path
}

/// Runs a Python script with arguments; returns stdout parsed as JSON, panicking with stderr on failure.
pub fn run_python_json(script: &Path, args: &[&str]) -> Value {
    let output = Command::new(python())
        .arg(script)
        .args(args)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("TZ", "UTC")
        .output()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", script.display()));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{} {args:?} failed ({}):\n{stderr}\n{stdout}",
        script.display(),
        output.status
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "{} {args:?} printed no JSON ({e}):\n{stdout}\n{stderr}",
            script.display()
        )
    })
}

/// Builds fixture `scenario` with history relative to `now_ms`; `orphans` adds stray files.
pub fn make_fixture(scenario: &str, now_ms: i64, orphans: bool) -> Fixture {
    let dir = tempfile::Builder::new()
        .prefix(&format!("icetrim-{scenario}-"))
        .tempdir()
        .expect("create a temporary folder");
    let table = dir.path().join("table");
    let table = table.to_str().expect("temporary paths are UTF-8");
    let now = now_ms.to_string();
    let mut args = vec![scenario, table, "--now-ms", now.as_str()];
    if orphans {
        args.push("--orphans");
    }
    let facts = run_python_json(&crate_root().join("scripts/fixtures/make_table.py"), &args);
    Fixture { dir, facts }
}

/// What pyiceberg reads from `metadata_path` (see `tests/py/oracle.py` for the fields).
pub fn oracle_inspect(metadata_path: &Path) -> Value {
    let path = metadata_path.to_str().expect("metadata paths are UTF-8");
    run_python_json(&crate_root().join("tests/py/oracle.py"), &["inspect", path])
}

/// Runs one statement on ClickHouse (chdb) against `table_dir` attached as table `t`.
pub fn clickhouse(table_dir: &Path, sql: &str) -> Result<Vec<Vec<String>>, String> {
    clickhouse_script(table_dir, &[sql])
}

/// Runs statements in order in one chdb process; the rows of the last, or the first error's text
/// (`Code: N. DB::Exception: ...`).
pub fn clickhouse_script(
    table_dir: &Path,
    statements: &[&str],
) -> Result<Vec<Vec<String>>, String> {
    let dir = table_dir.to_str().expect("table paths are UTF-8");
    let mut args = vec!["clickhouse", dir];
    args.extend_from_slice(statements);
    let reply = run_python_json(&crate_root().join("tests/py/oracle.py"), &args);
    clickhouse_reply(&reply)
}

/// The rows of an oracle `clickhouse` reply, or its error text.
pub fn clickhouse_reply(reply: &Value) -> Result<Vec<Vec<String>>, String> {
    if reply["ok"].as_bool() != Some(true) {
        let error = reply["error"]
            .as_str()
            .unwrap_or("ClickHouse failed without a message");
        return Err(error.to_string());
    }
    let rows = reply["rows"]
        .as_array()
        .unwrap_or_else(|| panic!("oracle reply has no rows: {reply}"));
    Ok(rows.iter().map(row_as_strings).collect())
}

fn row_as_strings(row: &Value) -> Vec<String> {
    let cells = row
        .as_array()
        .unwrap_or_else(|| panic!("oracle row is not an array: {row}"));
    cells
        .iter()
        .map(|cell| match cell {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// The string items of a JSON array, sorted.
pub fn sorted_strings(value: &Value) -> Vec<String> {
    let mut items: Vec<String> = value
        .as_array()
        .unwrap_or_else(|| panic!("expected a JSON array, got {value}"))
        .iter()
        .map(|item| {
            item.as_str()
                .unwrap_or_else(|| panic!("expected a string, got {item}"))
                .to_string()
        })
        .collect();
    items.sort();
    items
}
