//! What a statement returns: columns, rows, warnings, and for the procedures a typed metrics
//! struct (the same numbers as the `metric_name / metric_value` rows). The metrics structs are
//! defined by their procedures (each procedure's `metrics.rs`, gathered in
//! `maintain::report::Metrics`), which alone know the metric names and their order.

use crate::format::{Column, OutputFormat, Value};
pub use crate::maintain::report::Metrics;
#[cfg(test)]
use crate::maintain::{ExpireMetrics, OrphanMetrics};

/// The result of one statement.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct QueryResult {
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<Value>>,
    /// Things the user should know that did not fail the statement (e.g. failed deletions).
    pub warnings: Vec<String>,
    /// Typed metrics, for the maintenance procedures.
    pub metrics: Option<Metrics>,
    /// How many of the procedure's planned deletes failed (`failed_deletions_count` of
    /// `remove_orphan_files`; failed deletes of `expire_snapshots`, which ClickHouse's rows do
    /// not count); 0 otherwise.
    pub failed_deletions: i64,
    /// The table a procedure ran on (its location), so that Pretty formats can show paths
    /// relative to it.
    pub location: Option<String>,
    /// A `FORMAT` clause on the statement, if any.
    pub format: Option<OutputFormat>,
}

impl QueryResult {
    /// A result with no columns (statements like `SET`, `USE`, `CREATE TABLE`).
    pub fn empty() -> Self {
        QueryResult::default()
    }

    /// A result of `columns` and `rows`.
    pub fn table(columns: Vec<Column>, rows: Vec<Vec<Value>>) -> Self {
        QueryResult {
            columns,
            rows,
            ..Default::default()
        }
    }

    /// True when the statement returns no table to print.
    pub fn is_empty_set(&self) -> bool {
        self.columns.is_empty()
    }

    /// The `metric_name / metric_value` result of a procedure.
    pub fn from_metrics(metrics: Metrics) -> Self {
        let rows = metrics
            .named_values()
            .into_iter()
            .map(|(name, value)| vec![Value::Str(name.to_string()), Value::Int(value)])
            .collect();
        QueryResult {
            columns: vec![
                Column::new("metric_name", "String"),
                Column::new("metric_value", "Int64"),
            ],
            rows,
            metrics: Some(metrics),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expire_rows_in_clickhouse_order() {
        let m = ExpireMetrics {
            deleted_data_files_count: 3,
            dry_run: true,
            ..Default::default()
        };
        let r = QueryResult::from_metrics(Metrics::Expire(m));
        assert_eq!(r.rows.len(), 7);
        assert_eq!(
            r.rows[0],
            vec![Value::Str("deleted_data_files_count".into()), Value::Int(3)]
        );
        assert_eq!(r.rows[6], vec![Value::Str("dry_run".into()), Value::Int(1)]);
        assert_eq!(r.columns[1].type_name, "Int64");
    }

    #[test]
    fn orphan_rows_in_clickhouse_order() {
        let m = OrphanMetrics {
            failed_deletions_count: 2,
            ..Default::default()
        };
        let r = QueryResult::from_metrics(Metrics::Orphans(m));
        assert_eq!(r.rows.len(), 9);
        assert_eq!(
            r.rows[5][0],
            Value::Str("deleted_metadata_files_count".into())
        );
        assert_eq!(
            r.rows[8],
            vec![Value::Str("failed_deletions_count".into()), Value::Int(2)]
        );
    }
}
