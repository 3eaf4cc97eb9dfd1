//! Procedure outcomes as statement results, through one function: a [`Report`] (the outcome in
//! terms that know no output format, `maintain::report`) becomes the EXPLAIN plan's columns and
//! rows, the `metric_name / metric_value` table of a run or dry run, or no table. Maintenance
//! returns typed outcomes; only the engine knows columns and values.

use super::result::QueryResult;
use crate::format::{Column, Value};
use crate::maintain::report::{Cell, Report, ReportBody, Reported};

/// The statement result of a procedure's `outcome`.
pub fn render(outcome: impl Reported) -> QueryResult {
    let Report {
        body,
        warnings,
        failed_deletions,
        freed_bytes,
    } = outcome.into_report();
    let mut result = match body {
        ReportBody::Explain { columns, rows } => QueryResult::table(
            columns
                .iter()
                .map(|c| Column::new(c.name, c.type_name))
                .collect(),
            rows.into_iter()
                .map(|row| row.into_iter().map(value).collect())
                .collect(),
        ),
        ReportBody::Metrics(metrics) => QueryResult::from_metrics(metrics),
        ReportBody::Nothing => QueryResult::empty(),
    };
    result.warnings = warnings;
    result.failed_deletions = failed_deletions;
    result.freed_bytes = freed_bytes;
    result
}

fn value(cell: Cell) -> Value {
    match cell {
        Cell::Text(text) => Value::Str(text),
        Cell::Int(n) => Value::Int(n),
        Cell::Null => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::result::Metrics;
    use crate::maintain::{ExpireOutcome, OrphanOutcome, SnapshotMetrics, SnapshotOutcome};

    #[test]
    fn orphan_metrics_and_warnings_reach_the_result() {
        let metrics = crate::maintain::OrphanMetrics {
            deleted_data_files_count: 2,
            deleted_metadata_files_count: 1,
            failed_deletions_count: 3,
            ..Default::default()
        };
        let result = render(OrphanOutcome {
            metrics,
            explain: None,
            warnings: vec!["w".into()],
            freed_bytes: Some(4096),
        });
        assert_eq!(result.freed_bytes, Some(4096));
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
        let orphans = render(OrphanOutcome {
            explain: Some(Vec::new()),
            ..OrphanOutcome::default()
        });
        assert_eq!(orphans.columns.len(), 7);
        assert!(orphans.metrics.is_none());
        let expire = render(ExpireOutcome {
            explain: Some(vec![Default::default()]),
            ..ExpireOutcome::default()
        });
        assert_eq!(expire.columns.len(), 6);
        assert_eq!(expire.columns[5].type_name, "Nullable(Int64)");
        assert_eq!(expire.rows[0][5], Value::Null);
        assert!(expire.metrics.is_none());
    }

    #[test]
    fn ref_statements_answer_no_table_and_procedures_two_rows() {
        let ddl = render(SnapshotOutcome::default());
        assert!(ddl.is_empty_set());
        let rollback = render(SnapshotOutcome {
            metrics: Some(SnapshotMetrics {
                previous_snapshot_id: Some(1),
                current_snapshot_id: Some(2),
            }),
            ..SnapshotOutcome::default()
        });
        assert_eq!(rollback.rows.len(), 2);
    }
}
