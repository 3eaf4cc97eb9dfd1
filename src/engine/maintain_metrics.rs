//! The maintenance metrics: aggregates of the maintenance log's entries
//! ([`super::maintain_log`]) as rows of `system.iceberg_maintenance_metrics` (`name`, `type`,
//! `help`, `labels`, `value`, `timestamp`), the shape `FORMAT Prometheus` prints, and that text
//! ([`exposition`]) for `--metrics-file`. Pure: entries in, rows out.
//!
//! Every metric is a gauge over the entries the log holds (the newest `LOG_CAPACITY`): a count
//! falls when old entries leave the log, which a Prometheus counter must never do. Dry runs count
//! only in `icetrim_maintain_runs` (label `dry_run="1"`). `timestamp` is NULL: node_exporter's
//! textfile collector refuses samples with one.

use std::collections::BTreeMap;

use super::maintain_log::LogEntry;
use crate::format::{Column, OutputFormat, Value};

/// One sample of one metric.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricRow {
    pub name: &'static str,
    pub kind: &'static str,
    pub help: &'static str,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

const RUNS: (&str, &str) = (
    "icetrim_maintain_runs",
    "SYSTEM MAINTAIN runs in the log, by outcome (failed: some table failed; cancelled: stopped between procedures) and dry_run.",
);
const PROCEDURES: (&str, &str) = (
    "icetrim_maintain_procedures",
    "Procedures of runs in the log (dry runs left out), by table, procedure and status.",
);
const LAST_SUCCESS: (&str, &str) = (
    "icetrim_maintain_last_success_timestamp_seconds",
    "End of the newest run in the log in which no procedure of the table failed (dry runs left out).",
);
const FILES_DELETED: (&str, &str) = (
    "icetrim_maintain_files_deleted",
    "Files deleted (the deleted_*_count metrics) by runs in the log, by table and procedure.",
);
const BYTES_FREED: (&str, &str) = (
    "icetrim_maintain_bytes_freed",
    "Bytes the deletes of runs in the log freed (as far as known: sizes the metadata records, listed sizes), by table and procedure.",
);
const DURATION: (&str, &str) = (
    "icetrim_maintain_duration_seconds",
    "Time spent in runs in the log (dry runs left out), by table and procedure.",
);

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The metrics of `entries` (oldest first), grouped by name, each name's samples in label order.
pub fn metric_rows(entries: &[LogEntry]) -> Vec<MetricRow> {
    // Per run: dry, some table failed, some procedure cancelled.
    let mut runs: BTreeMap<&str, (bool, bool, bool)> = BTreeMap::new();
    let mut procedures: BTreeMap<[&str; 4], f64> = BTreeMap::new();
    let mut table_runs: BTreeMap<([&str; 2], &str), (bool, i64)> = BTreeMap::new();
    let mut deleted: BTreeMap<[&str; 3], f64> = BTreeMap::new();
    let mut freed: BTreeMap<[&str; 3], f64> = BTreeMap::new();
    let mut duration: BTreeMap<[&str; 3], f64> = BTreeMap::new();
    for e in entries {
        let run = runs.entry(&e.run_id).or_insert((e.dry_run, false, false));
        run.1 |= e.failed();
        run.2 |= e.status == super::maintain::CANCELLED;
        if e.dry_run {
            continue;
        }
        let (db, table, procedure) = (e.database.as_str(), e.table.as_str(), e.procedure.as_str());
        *procedures
            .entry([db, table, procedure, &e.status])
            .or_default() += 1.0;
        let table_run = table_runs
            .entry(([db, table], &e.run_id))
            .or_insert((false, e.end_time_ms));
        table_run.0 |= e.failed();
        table_run.1 = table_run.1.max(e.end_time_ms);
        if !e.failed() {
            let files: i64 = e
                .metrics
                .iter()
                .filter(|(name, _)| name.starts_with("deleted_") && name.ends_with("_count"))
                .map(|(_, n)| *n)
                .sum();
            *deleted.entry([db, table, procedure]).or_default() += files as f64;
        }
        if let Some(bytes) = e.bytes_freed {
            *freed.entry([db, table, procedure]).or_default() += bytes as f64;
        }
        *duration.entry([db, table, procedure]).or_default() += e.duration_ms() as f64 / 1000.0;
    }
    let mut rows = Vec::new();
    let mut push = |(name, help): (&'static str, &'static str), labels, value| {
        rows.push(MetricRow {
            name,
            kind: "gauge",
            help,
            labels,
            value,
        })
    };
    let mut run_counts: BTreeMap<(&str, &str), f64> = BTreeMap::new();
    for (dry, failed, cancelled) in runs.values() {
        let status = match (failed, cancelled) {
            (true, _) => "failed",
            (false, true) => "cancelled",
            (false, false) => "ok",
        };
        let key = (if *dry { "1" } else { "0" }, status);
        *run_counts.entry(key).or_default() += 1.0;
    }
    for ((dry, status), n) in run_counts {
        push(RUNS, labels(&[("dry_run", dry), ("status", status)]), n);
    }
    for ([db, table, procedure, status], n) in procedures {
        let l = [("database", db), ("table", table), ("procedure", procedure)];
        push(
            PROCEDURES,
            labels(&[l[0], l[1], l[2], ("status", status)]),
            n,
        );
    }
    let mut last_success: BTreeMap<[&str; 2], i64> = BTreeMap::new();
    for ((table, _), (failed, end)) in table_runs {
        if !failed {
            let newest = last_success.entry(table).or_insert(end);
            *newest = (*newest).max(end);
        }
    }
    for ([db, table], end_ms) in last_success {
        let l = labels(&[("database", db), ("table", table)]);
        push(LAST_SUCCESS, l, end_ms as f64 / 1000.0);
    }
    let sums = [
        (FILES_DELETED, deleted),
        (BYTES_FREED, freed),
        (DURATION, duration),
    ];
    for (metric, sums) in sums {
        for ([db, table, procedure], value) in sums {
            let l = [("database", db), ("table", table), ("procedure", procedure)];
            push(metric, labels(&l), value);
        }
    }
    rows
}

/// The columns of `system.iceberg_maintenance_metrics`, as `FORMAT Prometheus` reads them.
pub fn columns() -> Vec<Column> {
    vec![
        Column::new("name", "String"),
        Column::new("type", "String"),
        Column::new("help", "String"),
        Column::new("labels", "Map(String, String)"),
        Column::new("value", "Float64"),
        Column::new("timestamp", "Nullable(Int64)"),
    ]
}

/// `rows` as the query layer prints them (labels as a `Map(String, String)` cell).
pub fn values(rows: &[MetricRow]) -> Vec<Vec<Value>> {
    let quote = |s: &str| format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"));
    rows.iter()
        .map(|r| {
            let pairs: Vec<String> = r
                .labels
                .iter()
                .map(|(k, v)| format!("{}:{}", quote(k), quote(v)))
                .collect();
            vec![
                Value::Str(r.name.to_string()),
                Value::Str(r.kind.to_string()),
                Value::Str(r.help.to_string()),
                Value::Str(format!("{{{}}}", pairs.join(","))),
                Value::Float(r.value),
                Value::Null,
            ]
        })
        .collect()
}

/// The metrics of `entries` as Prometheus exposition text: what
/// `SELECT * FROM system.iceberg_maintenance_metrics FORMAT Prometheus` prints.
pub fn exposition(entries: &[LogEntry]) -> String {
    let rows = metric_rows(entries);
    OutputFormat::Prometheus.render(&columns(), &values(&rows), 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn entry(run: &str, table: &str, procedure: &str, status: &str) -> LogEntry {
        LogEntry {
            event_time_ms: 10_000,
            run_id: run.into(),
            dry_run: false,
            database: "db".into(),
            table: table.into(),
            procedure: procedure.into(),
            status: status.into(),
            reason: String::new(),
            start_time_ms: 1_000,
            end_time_ms: 3_500,
            metrics: Vec::new(),
            bytes_freed: None,
            error_code: (status == "failed").then(|| "CANNOT_OPEN_FILE".to_string()),
            error: String::new(),
        }
    }

    fn value(rows: &[MetricRow], name: &str, pairs: &[(&str, &str)]) -> Option<f64> {
        rows.iter()
            .find(|r| r.name == name && r.labels == labels(pairs))
            .map(|r| r.value)
    }

    #[test]
    fn runs_procedures_files_durations_and_last_success_from_the_log() {
        let mut expired = entry("r1", "a", "expire_snapshots", "ok");
        expired.metrics = vec![
            ("deleted_data_files_count".into(), 3),
            ("deleted_manifest_lists_count".into(), 2),
            ("rewritten_bytes_count".into(), 999),
        ];
        expired.bytes_freed = Some(4_000);
        let mut later = entry("r2", "a", "expire_snapshots", "ok");
        later.bytes_freed = Some(96);
        later.end_time_ms = 20_000;
        later.metrics = vec![("deleted_data_files_count".into(), 1)];
        let mut dry = entry("r3", "a", "expire_snapshots", "due");
        dry.dry_run = true;
        dry.metrics = vec![("deleted_data_files_count".into(), 50)];
        dry.end_time_ms = 90_000;
        let entries = vec![
            expired,
            entry("r1", "b", "rewrite_data_files", "failed"),
            entry("r1", "b", "expire_snapshots", "skipped"),
            later,
            dry,
            entry("r4", "c", "expire_snapshots", "cancelled"),
        ];
        let rows = metric_rows(&entries);
        let runs = "icetrim_maintain_runs";
        assert_eq!(
            value(&rows, runs, &[("dry_run", "0"), ("status", "failed")]),
            Some(1.0)
        );
        assert_eq!(
            value(&rows, runs, &[("dry_run", "0"), ("status", "ok")]),
            Some(1.0)
        );
        assert_eq!(
            value(&rows, runs, &[("dry_run", "1"), ("status", "ok")]),
            Some(1.0)
        );
        assert_eq!(
            value(&rows, runs, &[("dry_run", "0"), ("status", "cancelled")]),
            Some(1.0)
        );
        let a_expire = [
            ("database", "db"),
            ("procedure", "expire_snapshots"),
            ("table", "a"),
        ];
        let mut ok = a_expire.to_vec();
        ok.push(("status", "ok"));
        assert_eq!(value(&rows, "icetrim_maintain_procedures", &ok), Some(2.0));
        assert_eq!(
            value(&rows, "icetrim_maintain_files_deleted", &a_expire),
            Some(6.0)
        );
        assert_eq!(
            value(&rows, "icetrim_maintain_bytes_freed", &a_expire),
            Some(4_096.0)
        );
        let b_compact = [
            ("database", "db"),
            ("procedure", "rewrite_data_files"),
            ("table", "b"),
        ];
        assert_eq!(
            value(&rows, "icetrim_maintain_bytes_freed", &b_compact),
            None,
            "nothing known freed"
        );
        assert_eq!(
            value(&rows, "icetrim_maintain_duration_seconds", &a_expire),
            Some(21.5)
        );
        let last = "icetrim_maintain_last_success_timestamp_seconds";
        assert_eq!(
            value(&rows, last, &[("database", "db"), ("table", "a")]),
            Some(20.0)
        );
        assert_eq!(
            value(&rows, last, &[("database", "db"), ("table", "b")]),
            None,
            "b failed"
        );
        // Grouped by name: each name's rows are consecutive.
        let mut seen: Vec<&str> = rows.iter().map(|r| r.name).collect();
        seen.dedup();
        let mut unique = seen.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(seen.len(), unique.len(), "{seen:?}");
    }

    fn arbitrary_entry() -> impl Strategy<Value = LogEntry> {
        let statuses = prop::sample::select(vec!["ok", "failed", "not due", "skipped", "due"]);
        (
            0..4usize,
            0..3usize,
            0..3usize,
            statuses,
            0..5i64,
            0..1_000i64,
            0..1_000i64,
        )
            .prop_map(|(run, table, procedure, status, deleted, start, took)| {
                let mut e = entry(
                    &format!("r{run}"),
                    &format!("t{table}"),
                    [
                        "rewrite_data_files",
                        "expire_snapshots",
                        "remove_orphan_files",
                    ][procedure],
                    status,
                );
                // Odd runs are dry runs (a run is dry or not as a whole).
                e.dry_run = run % 2 == 1;
                e.metrics = vec![("deleted_data_files_count".into(), deleted)];
                e.start_time_ms = start;
                e.end_time_ms = start + took;
                e
            })
    }

    fn total(rows: &[MetricRow], name: &str) -> f64 {
        rows.iter()
            .filter(|r| r.name == name)
            .map(|r| r.value)
            .sum()
    }

    proptest! {
        /// Whatever the log holds: one run counted per run id, one procedure per real row, the
        /// files and durations of the real rows, each name's rows together and the exposition
        /// one sample line per row.
        #[test]
        fn aggregates_add_up(entries in prop::collection::vec(arbitrary_entry(), 0..40)) {
            let rows = metric_rows(&entries);
            let runs: std::collections::BTreeSet<&str> =
                entries.iter().map(|e| e.run_id.as_str()).collect();
            prop_assert_eq!(total(&rows, RUNS.0), runs.len() as f64);
            let real: Vec<&LogEntry> = entries.iter().filter(|e| !e.dry_run).collect();
            prop_assert_eq!(total(&rows, PROCEDURES.0), real.len() as f64);
            let deleted: i64 = real
                .iter()
                .filter(|e| !e.failed())
                .map(|e| e.metrics[0].1)
                .sum();
            prop_assert_eq!(total(&rows, FILES_DELETED.0), deleted as f64);
            let took: i64 = real.iter().map(|e| e.duration_ms()).sum();
            prop_assert!((total(&rows, DURATION.0) - took as f64 / 1000.0).abs() < 1e-6);
            let mut names: Vec<&str> = rows.iter().map(|r| r.name).collect();
            names.dedup();
            let distinct: std::collections::BTreeSet<&str> = names.iter().copied().collect();
            prop_assert_eq!(names.len(), distinct.len());
            let text = exposition(&entries);
            let samples = text.lines().filter(|l| !l.is_empty() && !l.starts_with('#')).count();
            prop_assert_eq!(samples, rows.len());
        }
    }

    #[test]
    fn the_exposition_is_the_renderer_over_the_rows() {
        let text = exposition(&[entry("r1", "it's \"q\"", "expire_snapshots", "ok")]);
        assert!(
            text.starts_with(
                "# HELP icetrim_maintain_runs SYSTEM MAINTAIN runs in the log, by outcome (failed: \
             some table failed; cancelled: stopped between procedures) and dry_run.\n# TYPE icetrim_maintain_runs gauge\n\
             icetrim_maintain_runs{dry_run=\"0\",status=\"ok\"} 1\n\n"
            ),
            "{text}"
        );
        assert!(text.contains(
            "icetrim_maintain_last_success_timestamp_seconds{database=\"db\",table=\"it's \\\"q\\\"\"} 3.5\n"
        ), "{text}");
        assert_eq!(exposition(&[]), "");
    }
}
