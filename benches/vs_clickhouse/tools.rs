//! The three programs the benchmark drives, each as a measured child process: the table generator
//! (`icetrim-generate`), icetrim itself (a script on stdin: attach the folder, run one statement)
//! and ClickHouse (chdb in Python, `scripts/bench_clickhouse.py`, which times the statement alone).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use icetrim::internals::io::RequestCounts;
use serde_json::Value;

use crate::measure::{Measured, run};

/// A statement's result rows, as `(metric, value)` text.
pub type Rows = Vec<(String, String)>;

/// Where the programs are, and where scratch files go.
pub struct Tools {
    pub icetrim: PathBuf,
    pub generate: PathBuf,
    pub python: PathBuf,
    pub ch_script: PathBuf,
    /// The runner for a table on the S3 emulator, through a request-counting proxy.
    pub ch_s3_script: PathBuf,
    pub scratch: PathBuf,
    pub ch_timeout: Duration,
}

/// One ClickHouse run.
pub struct ChRun {
    /// The statement alone (inside the session), or the process time when killed at the timeout.
    pub seconds: f64,
    /// Killed at the timeout: `seconds` is a lower bound.
    pub timed_out: bool,
    pub process: Measured,
    pub rows: Rows,
}

impl Tools {
    pub fn new(ch_timeout: Duration, scratch: PathBuf) -> Tools {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let python = std::env::var_os("ICETRIM_PYTHON")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join(".venv/bin/python"));
        Tools {
            icetrim: PathBuf::from(env!("CARGO_BIN_EXE_icetrim")),
            generate: PathBuf::from(env!("CARGO_BIN_EXE_icetrim-generate")),
            python,
            ch_script: root.join("scripts/bench_clickhouse.py"),
            ch_s3_script: root.join("scripts/bench_clickhouse_s3.py"),
            scratch,
            ch_timeout,
        }
    }

    /// Generate a table into `dir` (which must not exist yet) with generator flags `args`.
    pub fn generate(&self, dir: &Path, args: &[String]) -> Result<(Measured, Value), String> {
        let mut cmd = Command::new(&self.generate);
        cmd.arg("--location").arg(dir).args(args);
        let m = run(&mut cmd, None, &self.scratch, None)?.check("icetrim-generate")?;
        let summary = serde_json::from_str(m.stdout.trim())
            .map_err(|e| format!("generator summary: {e}: {}", m.stdout))?;
        Ok((m, summary))
    }

    /// Run `statement` with icetrim on the table folder `dir` (attached as `t`).
    pub fn icetrim(&self, dir: &Path, statement: &str) -> Result<(Measured, Rows), String> {
        let script = self.scratch.join("statement.sql");
        let text = format!(
            "CREATE TABLE t ENGINE = IcebergLocal('{}');\n{statement};\n",
            dir.display()
        );
        std::fs::write(&script, text).map_err(|e| format!("{}: {e}", script.display()))?;
        let mut cmd = Command::new(&self.icetrim);
        cmd.args(["--format", "TSV"]);
        let m = run(&mut cmd, Some(&script), &self.scratch, None)?.check("icetrim")?;
        let rows = m
            .stdout
            .lines()
            .filter_map(|l| l.split_once('\t'))
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        Ok((m, rows))
    }

    /// Run `statement` on ClickHouse (chdb) on the table folder `dir`, killed at the timeout.
    pub fn clickhouse(&self, dir: &Path, statement: &str) -> Result<ChRun, String> {
        let mut cmd = Command::new(&self.python);
        cmd.arg(&self.ch_script).arg(dir).arg(statement);
        let m = run(&mut cmd, None, &self.scratch, Some(self.ch_timeout))?;
        if m.timed_out {
            return Ok(ChRun {
                seconds: m.seconds,
                timed_out: true,
                process: m,
                rows: Vec::new(),
            });
        }
        let reply = reply_of(&m, "ClickHouse")?;
        let m = m.check("ClickHouse")?;
        let rows = rows_of(&reply);
        Ok(ChRun {
            seconds: reply["seconds"].as_f64().unwrap_or(f64::NAN),
            timed_out: false,
            process: m,
            rows,
        })
    }
}

/// One ClickHouse run on the S3 emulator: the statement's time, its rows and its requests.
pub struct ChS3Run {
    pub seconds: f64,
    pub rows: Rows,
    pub requests: RequestCounts,
}

impl Tools {
    /// Run `statement` on ClickHouse on the `IcebergS3` table at `prefix` of `bucket` on the
    /// emulator at `endpoint`, counting its requests (see `scripts/bench_clickhouse_s3.py`).
    pub fn clickhouse_s3(
        &self,
        endpoint: &str,
        bucket: &str,
        prefix: &str,
        statement: &str,
    ) -> Result<ChS3Run, String> {
        let mut cmd = Command::new(&self.python);
        cmd.arg(&self.ch_s3_script)
            .args([endpoint, bucket, prefix, statement]);
        let m = run(&mut cmd, None, &self.scratch, Some(self.ch_timeout))?;
        if m.timed_out {
            return Err(format!(
                "ClickHouse on the S3 emulator: stopped after {:.0} s",
                m.seconds
            ));
        }
        let reply = reply_of(&m, "ClickHouse on the S3 emulator")?;
        m.check("ClickHouse")?;
        let count = |kind: &str| reply["requests"][kind].as_u64().unwrap_or(0);
        let requests = RequestCounts {
            get: count("GET"),
            head: count("HEAD"),
            put: count("PUT"),
            delete: count("DELETE"),
            deleted_keys: reply["deleted_keys"].as_u64().unwrap_or(0),
            list: count("LIST"),
        };
        let other = count("POST");
        if other > 0 {
            return Err(format!(
                "ClickHouse on the S3 emulator made {other} requests of another kind"
            ));
        }
        Ok(ChS3Run {
            seconds: reply["seconds"].as_f64().unwrap_or(f64::NAN),
            rows: rows_of(&reply),
            requests,
        })
    }
}

/// A ClickHouse runner's one JSON line; its `{"error": …}` as an error naming `who`.
fn reply_of(m: &Measured, who: &str) -> Result<Value, String> {
    let reply: Value = serde_json::from_str(m.stdout.trim()).map_err(|e| {
        format!(
            "{who} runner: {e}: {}\n{}",
            m.stdout.trim(),
            m.stderr.trim()
        )
    })?;
    match reply.get("error") {
        Some(error) => Err(format!("{who}: {error}")),
        None => Ok(reply),
    }
}

fn rows_of(reply: &Value) -> Rows {
    reply["rows"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .map(|r| (text(&r[0]), text(&r[1])))
                .collect::<Rows>()
        })
        .unwrap_or_default()
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
