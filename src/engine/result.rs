//! What a statement returns: columns, rows, warnings, and for the procedures a typed metrics
//! struct (the same numbers as the `metric_name / metric_value` rows).

use crate::format::{Column, OutputFormat, Value};

/// The result of one statement.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct QueryResult {
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<Value>>,
    /// Things the user should know that did not fail the statement (e.g. failed deletions).
    pub warnings: Vec<String>,
    /// Typed metrics, for the maintenance procedures.
    pub metrics: Option<Metrics>,
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

/// The metrics of a maintenance procedure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metrics {
    Expire(ExpireMetrics),
    Orphans(OrphanMetrics),
}

impl Metrics {
    /// `(metric_name, metric_value)` in ClickHouse's row order.
    pub fn named_values(&self) -> Vec<(&'static str, i64)> {
        match self {
            Metrics::Expire(m) => m.named_values().to_vec(),
            Metrics::Orphans(m) => m.named_values().to_vec(),
        }
    }
}

/// What `expire_snapshots` deleted (or, in a dry run, would delete).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExpireMetrics {
    pub deleted_data_files_count: i64,
    pub deleted_position_delete_files_count: i64,
    pub deleted_equality_delete_files_count: i64,
    pub deleted_manifest_files_count: i64,
    pub deleted_manifest_lists_count: i64,
    pub deleted_statistics_files_count: i64,
    pub dry_run: bool,
}

impl ExpireMetrics {
    /// The seven rows, in ClickHouse 26.9's order.
    pub fn named_values(&self) -> [(&'static str, i64); 7] {
        [
            ("deleted_data_files_count", self.deleted_data_files_count),
            (
                "deleted_position_delete_files_count",
                self.deleted_position_delete_files_count,
            ),
            (
                "deleted_equality_delete_files_count",
                self.deleted_equality_delete_files_count,
            ),
            (
                "deleted_manifest_files_count",
                self.deleted_manifest_files_count,
            ),
            (
                "deleted_manifest_lists_count",
                self.deleted_manifest_lists_count,
            ),
            (
                "deleted_statistics_files_count",
                self.deleted_statistics_files_count,
            ),
            ("dry_run", i64::from(self.dry_run)),
        ]
    }
}

/// What `remove_orphan_files` deleted (or, in a dry run, would delete).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OrphanMetrics {
    pub deleted_data_files_count: i64,
    pub deleted_position_delete_files_count: i64,
    pub deleted_equality_delete_files_count: i64,
    pub deleted_manifest_files_count: i64,
    pub deleted_manifest_lists_count: i64,
    pub deleted_metadata_files_count: i64,
    pub deleted_statistics_files_count: i64,
    pub skipped_missing_metadata_count: i64,
    pub failed_deletions_count: i64,
}

impl OrphanMetrics {
    /// The nine rows, in ClickHouse 26.9's order.
    pub fn named_values(&self) -> [(&'static str, i64); 9] {
        [
            ("deleted_data_files_count", self.deleted_data_files_count),
            (
                "deleted_position_delete_files_count",
                self.deleted_position_delete_files_count,
            ),
            (
                "deleted_equality_delete_files_count",
                self.deleted_equality_delete_files_count,
            ),
            (
                "deleted_manifest_files_count",
                self.deleted_manifest_files_count,
            ),
            (
                "deleted_manifest_lists_count",
                self.deleted_manifest_lists_count,
            ),
            (
                "deleted_metadata_files_count",
                self.deleted_metadata_files_count,
            ),
            (
                "deleted_statistics_files_count",
                self.deleted_statistics_files_count,
            ),
            (
                "skipped_missing_metadata_count",
                self.skipped_missing_metadata_count,
            ),
            ("failed_deletions_count", self.failed_deletions_count),
        ]
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
