//! Procedure outcomes as statement results: the `metric_name / metric_value` table of a run or
//! dry run, or the EXPLAIN plan's columns and rows. Maintenance returns typed outcomes; only the
//! engine knows rows and columns.

use super::result::{Metrics, QueryResult};
use crate::format::{Column, Value};
use crate::maintain::SnapshotOutcome;
use crate::maintain::compact::{CompactExplainRow, CompactOutcome};
use crate::maintain::expire::{ExpireExplainRow, ExpireOutcome};
use crate::maintain::manage_snapshots::SnapshotExplainRow;
use crate::maintain::orphans::{OrphanExplainRow, OrphanOutcome};
use crate::maintain::rewrite_manifests::{RewriteManifestsExplainRow, RewriteManifestsOutcome};

/// The result of `expire_snapshots`: its EXPLAIN plan, or its metrics.
pub fn expire_result(outcome: ExpireOutcome) -> QueryResult {
    let ExpireOutcome {
        metrics,
        explain,
        warnings,
    } = outcome;
    let mut result = match explain {
        Some(rows) => {
            QueryResult::table(expire_columns(), rows.into_iter().map(expire_row).collect())
        }
        None => QueryResult::from_metrics(Metrics::Expire(metrics)),
    };
    result.warnings = warnings;
    result
}

/// The result of `remove_orphan_files`: its EXPLAIN plan, or its metrics.
pub fn orphan_result(outcome: OrphanOutcome) -> QueryResult {
    let OrphanOutcome {
        metrics,
        explain,
        warnings,
    } = outcome;
    let mut result = match explain {
        Some(rows) => {
            QueryResult::table(orphan_columns(), rows.into_iter().map(orphan_row).collect())
        }
        None => QueryResult::from_metrics(Metrics::Orphans(metrics)),
    };
    result.warnings = warnings;
    result
}

/// The result of a snapshot-management procedure: its EXPLAIN plan, or its two metric rows.
pub fn snapshot_result(outcome: SnapshotOutcome) -> QueryResult {
    let SnapshotOutcome {
        metrics,
        explain,
        warnings,
        ..
    } = outcome;
    let mut result = match (explain, metrics) {
        (Some(rows), _) => snapshot_explain(rows),
        (None, Some(metrics)) => QueryResult::from_metrics(Metrics::Snapshots(metrics)),
        (None, None) => QueryResult::empty(),
    };
    result.warnings = warnings;
    result
}

/// The result of a ref or property DDL statement: no rows ("Ok."), or its EXPLAIN plan.
pub fn change_result(outcome: SnapshotOutcome) -> QueryResult {
    let mut result = match outcome.explain {
        Some(rows) => snapshot_explain(rows),
        None => QueryResult::empty(),
    };
    result.warnings = outcome.warnings;
    result
}

/// The columns and rows of EXPLAIN of snapshot management (`maintain::manage_snapshots::explain`).
fn snapshot_explain(rows: Vec<SnapshotExplainRow>) -> QueryResult {
    let columns = vec![
        Column::new("kind", "String"),
        Column::new("name", "String"),
        Column::new("before", "Nullable(String)"),
        Column::new("after", "Nullable(String)"),
        Column::new("detail", "String"),
    ];
    let text = |v: Option<String>| v.map_or(Value::Null, Value::Str);
    let rows = rows
        .into_iter()
        .map(|r| {
            vec![
                Value::Str(r.kind),
                Value::Str(r.name),
                text(r.before),
                text(r.after),
                Value::Str(r.detail),
            ]
        })
        .collect();
    QueryResult::table(columns, rows)
}

/// The result of `rewrite_data_files` / `OPTIMIZE TABLE`: its EXPLAIN plan, or its metrics.
pub fn compact_result(outcome: CompactOutcome) -> QueryResult {
    let CompactOutcome {
        metrics,
        explain,
        warnings,
    } = outcome;
    let mut result = match explain {
        Some(rows) => QueryResult::table(
            compact_columns(),
            rows.into_iter().map(compact_row).collect(),
        ),
        None => QueryResult::from_metrics(Metrics::Compact(metrics)),
    };
    result.warnings = warnings;
    result
}

/// The columns of `EXPLAIN OPTIMIZE TABLE` (`maintain::compact::explain`): one row per file group.
fn compact_columns() -> Vec<Column> {
    vec![
        Column::new("decision", "String"),
        Column::new("spec_id", "Int64"),
        Column::new("partition", "String"),
        Column::new("input_files", "Int64"),
        Column::new("input_bytes", "Int64"),
        Column::new("input_records", "Int64"),
        Column::new("position_delete_files", "Int64"),
        Column::new("equality_delete_files", "Int64"),
        Column::new("expected_output_files", "Int64"),
        Column::new("reason", "String"),
    ]
}

fn compact_row(row: CompactExplainRow) -> Vec<Value> {
    vec![
        Value::Str(row.decision),
        Value::Int(row.spec_id),
        Value::Str(row.partition),
        Value::Int(row.input_files),
        Value::Int(row.input_bytes),
        Value::Int(row.input_records),
        Value::Int(row.position_delete_files),
        Value::Int(row.equality_delete_files),
        Value::Int(row.expected_output_files),
        Value::Str(row.reason),
    ]
}

/// The columns of `EXPLAIN ... expire_snapshots(...)` (`maintain::expire::explain`).
fn expire_columns() -> Vec<Column> {
    vec![
        Column::new("kind", "String"),
        Column::new("id", "String"),
        Column::new("decision", "String"),
        Column::new("reason", "String"),
        Column::new("detail", "String"),
        Column::new("bytes", "Nullable(Int64)"),
    ]
}

fn expire_row(row: ExpireExplainRow) -> Vec<Value> {
    vec![
        Value::Str(row.kind),
        Value::Str(row.id),
        Value::Str(row.decision),
        Value::Str(row.reason),
        Value::Str(row.detail),
        row.bytes.map_or(Value::Null, Value::Int),
    ]
}

/// The columns of `EXPLAIN ... remove_orphan_files(...)` (`maintain::orphans`).
fn orphan_columns() -> Vec<Column> {
    vec![
        Column::new("item", "String"),
        Column::new("path", "String"),
        Column::new("category", "String"),
        Column::new("reason", "String"),
        Column::new("files", "Int64"),
        Column::new("size_bytes", "Int64"),
        Column::new("last_modified", "String"),
    ]
}

fn orphan_row(row: OrphanExplainRow) -> Vec<Value> {
    vec![
        Value::Str(row.item),
        Value::Str(row.path),
        Value::Str(row.category),
        Value::Str(row.reason),
        Value::Int(row.files),
        Value::Int(row.size_bytes),
        Value::Str(row.last_modified),
    ]
}

/// The result of `rewrite_manifests`: its EXPLAIN plan, or its metrics.
pub fn rewrite_manifests_result(outcome: RewriteManifestsOutcome) -> QueryResult {
    let RewriteManifestsOutcome {
        metrics,
        explain,
        warnings,
        ..
    } = outcome;
    let mut result = match explain {
        Some(rows) => QueryResult::table(
            manifest_columns(),
            rows.into_iter().map(manifest_row).collect(),
        ),
        None => QueryResult::from_metrics(Metrics::RewriteManifests(metrics)),
    };
    result.warnings = warnings;
    result
}

/// The columns of `EXPLAIN ... rewrite_manifests(...)` (`maintain::rewrite_manifests::explain`).
fn manifest_columns() -> Vec<Column> {
    vec![
        Column::new("kind", "String"),
        Column::new("path", "String"),
        Column::new("spec_id", "Int64"),
        Column::new("content", "String"),
        Column::new("decision", "String"),
        Column::new("reason", "String"),
        Column::new("entries", "Int64"),
        Column::new("bytes", "Int64"),
    ]
}

fn manifest_row(row: RewriteManifestsExplainRow) -> Vec<Value> {
    vec![
        Value::Str(row.kind),
        Value::Str(row.path),
        Value::Int(row.spec_id),
        Value::Str(row.content),
        Value::Str(row.decision),
        Value::Str(row.reason),
        Value::Int(row.entries),
        Value::Int(row.bytes),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orphan_metrics_and_warnings_reach_the_result() {
        let metrics = crate::maintain::OrphanMetrics {
            deleted_data_files_count: 2,
            deleted_metadata_files_count: 1,
            failed_deletions_count: 3,
            ..Default::default()
        };
        let result = orphan_result(OrphanOutcome {
            metrics,
            explain: None,
            warnings: vec!["w".into()],
        });
        let Some(Metrics::Orphans(m)) = result.metrics else {
            panic!("no orphan metrics");
        };
        assert_eq!(m.deleted_data_files_count, 2);
        assert_eq!(m.deleted_metadata_files_count, 1);
        assert_eq!(m.failed_deletions_count, 3);
        assert_eq!(result.warnings, ["w"]);
        assert_eq!(result.rows.len(), 9);
    }

    #[test]
    fn explain_plans_have_their_columns_and_no_metrics() {
        let orphans = orphan_result(OrphanOutcome {
            explain: Some(Vec::new()),
            ..OrphanOutcome::default()
        });
        assert_eq!(orphans.columns.len(), 7);
        assert!(orphans.metrics.is_none());
        let expire = expire_result(ExpireOutcome {
            explain: Some(Vec::new()),
            ..ExpireOutcome::default()
        });
        assert_eq!(expire.columns.len(), 6);
        assert_eq!(expire.columns[5].type_name, "Nullable(Int64)");
        assert!(expire.metrics.is_none());
    }
}
