//! What a statement returns: columns, rows, warnings, and for the procedures a typed metrics
//! struct (the same numbers as the `metric_name / metric_value` rows). The metrics structs are
//! defined by their procedures (each procedure's `metrics.rs`, gathered in
//! `maintain::report::Metrics`), which alone know the metric names and their order.

use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, RecordBatchOptions,
    StringArray, UInt64Array,
};
use arrow_schema::{Field, Schema};
use futures::StreamExt;
use futures::stream::BoxStream;

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
    /// The bytes a procedure's deletes freed, as far as known (`expire_snapshots`: the sizes
    /// the metadata records; `remove_orphan_files`: the listed sizes); `None` otherwise.
    pub freed_bytes: Option<i64>,
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

impl QueryResult {
    /// The rows as one Arrow record batch, column names as printed. Column types follow the
    /// ClickHouse type names: `Int*` as Int64, `UInt*` as UInt64, `Float*` as Float64, `Bool` as
    /// Boolean, anything else as text (as the TabSeparated format prints it); `Nullable(…)` or a
    /// null cell makes the field nullable. A statement without a result set gives a batch with
    /// no columns and no rows.
    pub fn to_record_batch(&self) -> crate::error::Result<RecordBatch> {
        let mut fields = Vec::with_capacity(self.columns.len());
        let mut arrays = Vec::with_capacity(self.columns.len());
        for (index, column) in self.columns.iter().enumerate() {
            let cells: Vec<&Value> = self.rows.iter().filter_map(|r| r.get(index)).collect();
            let array = arrow_column(&column.type_name, &cells);
            let nullable = column.type_name.starts_with("Nullable(") || array.null_count() > 0;
            fields.push(Field::new(
                &column.name,
                array.data_type().clone(),
                nullable,
            ));
            arrays.push(array);
        }
        let options = RecordBatchOptions::new().with_row_count(Some(self.rows.len()));
        RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), arrays, &options)
            .map_err(|e| crate::error::Error::logical(format!("result as a record batch: {e}")))
    }
}

/// One result column as an Arrow array of the type its ClickHouse type name maps to.
fn arrow_column(type_name: &str, cells: &[&Value]) -> ArrayRef {
    let inner = type_name
        .strip_prefix("Nullable(")
        .and_then(|t| t.strip_suffix(')'))
        .unwrap_or(type_name);
    let numeric = |prefix: &str| {
        inner
            .strip_prefix(prefix)
            .is_some_and(|bits| !bits.is_empty() && bits.bytes().all(|b| b.is_ascii_digit()))
    };
    if numeric("Int") {
        Arc::new(Int64Array::from_iter(cells.iter().map(|v| match v {
            Value::Int(i) => Some(*i),
            Value::UInt(u) => i64::try_from(*u).ok(),
            _ => None,
        })))
    } else if numeric("UInt") {
        Arc::new(UInt64Array::from_iter(cells.iter().map(|v| match v {
            Value::UInt(u) => Some(*u),
            Value::Int(i) => u64::try_from(*i).ok(),
            Value::Bool(b) => Some(u64::from(*b)),
            _ => None,
        })))
    } else if numeric("Float") {
        Arc::new(Float64Array::from_iter(cells.iter().map(|v| match v {
            Value::Float(f) => Some(*f),
            Value::Int(i) => Some(*i as f64),
            Value::UInt(u) => Some(*u as f64),
            _ => None,
        })))
    } else if inner == "Bool" {
        Arc::new(BooleanArray::from_iter(cells.iter().map(|v| match v {
            Value::Bool(b) => Some(*b),
            _ => None,
        })))
    } else {
        Arc::new(StringArray::from_iter(cells.iter().map(|v| match v {
            Value::Null => None,
            other => Some(other.plain()),
        })))
    }
}

/// What one statement produced: a finished result, or the rows of a `SELECT` still being read.
#[non_exhaustive]
pub enum StatementOutput {
    Done(QueryResult),
    Rows(SelectRows),
}

/// The rows of a `SELECT`, a chunk (one record batch) at a time, read as they are asked for: a
/// result larger than memory is printed while it streams.
pub struct SelectRows {
    pub columns: Vec<Column>,
    /// A `FORMAT` clause on the statement, if any.
    pub format: Option<OutputFormat>,
    pub(crate) chunks: BoxStream<'static, crate::error::Result<Vec<Vec<Value>>>>,
}

impl SelectRows {
    /// The next chunk of rows, `None` at the end.
    pub async fn next_chunk(&mut self) -> Option<crate::error::Result<Vec<Vec<Value>>>> {
        self.chunks.next().await
    }

    /// Every remaining row, as one result.
    pub async fn into_result(mut self) -> crate::error::Result<QueryResult> {
        let mut rows = Vec::new();
        while let Some(chunk) = self.next_chunk().await {
            rows.extend(chunk?);
        }
        Ok(QueryResult {
            columns: self.columns,
            rows,
            format: self.format,
            ..QueryResult::default()
        })
    }
}

impl std::fmt::Debug for SelectRows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SelectRows")
            .field("columns", &self.columns)
            .field("format", &self.format)
            .finish_non_exhaustive()
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
