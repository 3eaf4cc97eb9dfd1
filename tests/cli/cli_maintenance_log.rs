//! The maintenance log and metrics across `icetrim` processes: with `--path`, a run's rows are
//! still in `system.iceberg_maintenance_log` in the next process; `--metrics-file` holds valid
//! Prometheus exposition text matching the log (the same text `SELECT * FROM
//! system.iceberg_maintenance_metrics FORMAT Prometheus` prints), written atomically (no `.tmp`
//! left); `--maintenance-log-file` gets one JSON line per row.

use std::path::Path;
use std::process::{Command, Output};

use super::compaction_memory::generate;

const BIN: &str = env!("CARGO_BIN_EXE_icetrim");

fn icetrim(args: &[&str], sql: &str) -> Output {
    Command::new(BIN)
        .args(args)
        .args(["--format", "TabSeparated", "-q", sql])
        .output()
        .expect("icetrim runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn ok(out: &Output) -> String {
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

fn sorted_lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines.sort();
    lines
}

/// Checks `text` is Prometheus text exposition (comments, blank lines and `name{k="v",…} value`
/// samples); returns the samples as `(name{labels}, value)`.
fn parse_exposition(text: &str) -> Vec<(String, f64)> {
    let is_name = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
            && !s.starts_with(|c: char| c.is_ascii_digit())
    };
    let mut samples = Vec::new();
    for line in text.lines() {
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix("# ") {
            let mut words = comment.splitn(3, ' ');
            let (kind, name) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
            assert!(kind == "HELP" || kind == "TYPE", "{line}");
            assert!(is_name(name), "{line}");
            if kind == "TYPE" {
                assert_eq!(words.next(), Some("gauge"), "{line}");
            }
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("a sample: series and value");
        let name = series.split('{').next().unwrap_or("");
        assert!(is_name(name), "{line}");
        if let Some(labels) = series.strip_prefix(name).filter(|l| !l.is_empty()) {
            let inner = labels
                .strip_prefix('{')
                .and_then(|l| l.strip_suffix('}'))
                .unwrap_or_else(|| panic!("labels in braces: {line}"));
            for pair in inner.split("\",") {
                let (key, value) = pair.split_once("=\"").expect("key=\"value\"");
                assert!(is_name(key), "{line}");
                assert!(!value.contains('\n'), "{line}");
            }
        }
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("a number: {line}"));
        samples.push((series.to_string(), value));
    }
    samples
}

fn value_of(samples: &[(String, f64)], series: &str) -> Option<f64> {
    samples.iter().find(|(s, _)| s == series).map(|(_, v)| *v)
}

#[test]
fn the_log_persists_across_processes_and_the_metrics_file_matches_it() {
    let root = tempfile::tempdir().expect("temp dir");
    let table = root.path().join("t");
    generate(&table, 6, 10);
    let data = root.path().join("data");
    let metrics = root.path().join("icetrim.prom");
    let shipped = root.path().join("maintenance.jsonl");
    let flags = [
        "--path",
        data.to_str().expect("UTF-8"),
        "--metrics-file",
        metrics.to_str().expect("UTF-8"),
        "--maintenance-log-file",
        shipped.to_str().expect("UTF-8"),
    ];
    let create = format!(
        "CREATE TABLE t ENGINE = IcebergLocal('{}')",
        table.display()
    );
    ok(&icetrim(&flags, &create));
    assert!(!metrics.exists(), "no run yet, no metrics file");

    // First process: a dry run.
    let dry = ok(&icetrim(
        &flags,
        "SYSTEM MAINTAIN TABLE t SETTINGS dry_run = 1",
    ));
    assert!(dry.contains("rewrite_data_files\tdue"), "{dry}");
    let first = std::fs::read_to_string(&metrics).expect("the metrics file is written");
    let samples = parse_exposition(&first);
    let dry_runs = "icetrim_maintain_runs{dry_run=\"1\",status=\"ok\"}";
    assert_eq!(value_of(&samples, dry_runs), Some(1.0), "{first}");

    // Second process: a real run.
    let done = ok(&icetrim(&flags, "SYSTEM MAINTAIN TABLE t"));
    assert!(done.contains("rewrite_data_files\tok"), "{done}");
    assert!(!root.path().join("icetrim.prom.tmp").exists());

    // Third process: both runs are in the log, the real one exactly as the statement answered.
    let logged = ok(&icetrim(
        &["--path", data.to_str().expect("UTF-8")],
        "SELECT database, table, procedure, status, reason, error FROM \
         system.iceberg_maintenance_log WHERE dry_run = 0",
    ));
    assert_eq!(sorted_lines(&logged), sorted_lines(&done));
    let dry_logged = ok(&icetrim(
        &["--path", data.to_str().expect("UTF-8")],
        "SELECT database, table, procedure, status, reason, error FROM \
         system.iceberg_maintenance_log WHERE dry_run = 1",
    ));
    assert_eq!(sorted_lines(&dry_logged), sorted_lines(&dry));

    // The metrics file is the metrics table in FORMAT Prometheus, and counts both runs.
    let file = std::fs::read_to_string(&metrics).expect("metrics file");
    let selected = ok(&icetrim(
        &["--path", data.to_str().expect("UTF-8")],
        "SELECT * FROM system.iceberg_maintenance_metrics FORMAT Prometheus",
    ));
    assert_eq!(file, selected);
    let samples = parse_exposition(&file);
    assert_eq!(value_of(&samples, dry_runs), Some(1.0), "{file}");
    let runs = "icetrim_maintain_runs{dry_run=\"0\",status=\"ok\"}";
    assert_eq!(value_of(&samples, runs), Some(1.0), "{file}");
    let compacted = "icetrim_maintain_procedures{database=\"default\",\
                     procedure=\"rewrite_data_files\",status=\"ok\",table=\"t\"}";
    assert_eq!(value_of(&samples, compacted), Some(1.0), "{file}");
    let success =
        "icetrim_maintain_last_success_timestamp_seconds{database=\"default\",table=\"t\"}";
    let now = chrono::Utc::now().timestamp() as f64;
    let at = value_of(&samples, success).expect("a last success");
    assert!(at <= now + 1.0 && at > now - 600.0, "{at} vs {now}");

    // The shipper file: one JSON line per row of both runs, the same rows.
    let lines = std::fs::read_to_string(&shipped).expect("shipper file");
    let rows: Vec<serde_json::Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object a line"))
        .collect();
    assert_eq!(rows.len(), dry.lines().count() + done.lines().count());
    let run_ids: std::collections::BTreeSet<&str> =
        rows.iter().filter_map(|r| r["run_id"].as_str()).collect();
    assert_eq!(run_ids.len(), 2, "{lines}");
    let compact = rows
        .iter()
        .find(|r| r["dry_run"] == false && r["procedure"] == "rewrite_data_files")
        .expect("the real compaction");
    assert_eq!(compact["status"], "ok");
    assert_eq!(
        compact["metrics"]["rewritten_data_files_count"], 6,
        "{compact}"
    );
    assert_persisted_privately(&data);
}

#[cfg(unix)]
fn assert_persisted_privately(data: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let log = data.join(icetrim::engine::LOG_FILE);
    let mode = std::fs::metadata(&log)
        .expect("the log under --path")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[cfg(not(unix))]
fn assert_persisted_privately(data: &Path) {
    assert!(data.join(icetrim::engine::LOG_FILE).exists());
}

#[test]
fn prometheus_is_no_default_format_and_needs_name_and_value() {
    let out = Command::new(BIN)
        .args(["--format", "Prometheus", "-q", "SELECT 1"])
        .output()
        .expect("icetrim runs");
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).starts_with(
            "Code: 36. DB::Exception: Column 'name' is required for output format 'Prometheus'"
        ),
        "{}",
        text(&out.stderr)
    );
    let out = icetrim(&[], "SELECT 'm' AS name, 'x' AS value FORMAT Prometheus");
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("Illegal type 'String' of column 'value'"),
        "{}",
        text(&out.stderr)
    );
    let out = icetrim(
        &[],
        "SELECT name, value FROM (VALUES ('b', 2.5), ('a', 1.0)) AS v(name, value) FORMAT Prometheus",
    );
    assert_eq!(ok(&out), "b 2.5\n\na 1\n\n");
}
