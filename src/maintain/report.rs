//! What a procedure's outcome says, in terms that know no output format: an EXPLAIN table (its
//! columns, ClickHouse type names and cells) or the procedure's metrics, plus the warnings. Every
//! procedure's EXPLAIN row type implements [`ExplainRow`] (its columns live beside the row, in its
//! `explain.rs`) and every outcome implements [`Reported`]; the engine turns any [`Report`] into a
//! statement result in one function, with no code per procedure.

use super::{
    CompactMetrics, ExpireMetrics, OrphanMetrics, RewriteManifestsMetrics, SnapshotMetrics,
};

/// One cell of an EXPLAIN row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cell {
    Text(String),
    Int(i64),
    Null,
}

impl Cell {
    /// `Null` for `None`.
    pub fn text_or_null(value: Option<String>) -> Cell {
        value.map_or(Cell::Null, Cell::Text)
    }

    /// `Null` for `None`.
    pub fn int_or_null(value: Option<i64>) -> Cell {
        value.map_or(Cell::Null, Cell::Int)
    }
}

/// An EXPLAIN column: its name and its ClickHouse type name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColumnDef {
    pub name: &'static str,
    pub type_name: &'static str,
}

/// A column named `name` of ClickHouse type `type_name`.
pub const fn column(name: &'static str, type_name: &'static str) -> ColumnDef {
    ColumnDef { name, type_name }
}

/// A row of a procedure's EXPLAIN plan.
pub trait ExplainRow {
    /// The plan's columns, in order.
    const COLUMNS: &'static [ColumnDef];
    /// This row's cells, one per column.
    fn into_cells(self) -> Vec<Cell>;
}

/// The metrics of a maintenance procedure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Metrics {
    Expire(ExpireMetrics),
    Orphans(OrphanMetrics),
    /// The snapshot-management procedures (`rollback_to_snapshot`, ...).
    Snapshots(SnapshotMetrics),
    RewriteManifests(RewriteManifestsMetrics),
    Compact(CompactMetrics),
}

impl Metrics {
    /// `(metric_name, metric_value)` in ClickHouse's row order.
    pub fn named_values(&self) -> Vec<(&'static str, i64)> {
        match self {
            Metrics::Expire(m) => m.rows(),
            Metrics::Orphans(m) => m.named_values().to_vec(),
            Metrics::Snapshots(m) => m.named_values().to_vec(),
            Metrics::RewriteManifests(m) => m.named_values().to_vec(),
            Metrics::Compact(m) => m.named_values().to_vec(),
        }
    }
}

/// What a statement answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReportBody {
    /// The EXPLAIN plan.
    Explain {
        columns: &'static [ColumnDef],
        rows: Vec<Vec<Cell>>,
    },
    /// The `metric_name / metric_value` rows.
    Metrics(Metrics),
    /// Nothing to print (the ref and property statements: "Ok.").
    Nothing,
}

/// A procedure's outcome, as the engine renders it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub body: ReportBody,
    /// Things the user should know that did not fail the statement.
    pub warnings: Vec<String>,
    /// Planned deletes that failed (the shell fails a script on them).
    pub failed_deletions: i64,
    /// The bytes a run's deletes freed, as far as known (see the procedure's outcome); `None`
    /// for a dry run, EXPLAIN and procedures that delete nothing.
    pub freed_bytes: Option<i64>,
}

impl Report {
    /// The EXPLAIN plan of `rows` when given, else `otherwise`.
    pub fn explain_or<R: ExplainRow>(
        rows: Option<Vec<R>>,
        otherwise: ReportBody,
        warnings: Vec<String>,
    ) -> Report {
        let body = match rows {
            Some(rows) => ReportBody::Explain {
                columns: R::COLUMNS,
                rows: rows.into_iter().map(R::into_cells).collect(),
            },
            None => otherwise,
        };
        Report {
            body,
            warnings,
            failed_deletions: 0,
            freed_bytes: None,
        }
    }
}

/// A procedure outcome the engine can render.
pub trait Reported {
    fn into_report(self) -> Report;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::maintain::compact::CompactExplainRow;
    use crate::maintain::expire::ExpireExplainRow;
    use crate::maintain::manage_snapshots::SnapshotExplainRow;
    use crate::maintain::orphans::OrphanExplainRow;
    use crate::maintain::rewrite_manifests::RewriteManifestsExplainRow;

    fn widths<R: ExplainRow + Default>() -> (usize, usize) {
        (R::COLUMNS.len(), R::default().into_cells().len())
    }

    #[test]
    fn every_explain_row_has_one_cell_per_column() {
        for (columns, cells) in [
            widths::<ExpireExplainRow>(),
            widths::<OrphanExplainRow>(),
            widths::<CompactExplainRow>(),
            widths::<RewriteManifestsExplainRow>(),
            widths::<SnapshotExplainRow>(),
        ] {
            assert_eq!(columns, cells);
        }
    }

    #[test]
    fn explain_rows_win_over_metrics() {
        let metrics = ReportBody::Metrics(Metrics::Orphans(OrphanMetrics::default()));
        let plan = Report::explain_or(Some(vec![OrphanExplainRow::default()]), metrics, vec![]);
        let ReportBody::Explain { columns, rows } = plan.body else {
            panic!("not a plan");
        };
        assert_eq!(columns[0].name, "item");
        assert_eq!(rows.len(), 1);
        let none: Option<Vec<OrphanExplainRow>> = None;
        let metrics = ReportBody::Metrics(Metrics::Orphans(OrphanMetrics::default()));
        let run = Report::explain_or(none, metrics, vec!["w".into()]);
        assert!(matches!(run.body, ReportBody::Metrics(Metrics::Orphans(_))));
        assert_eq!(run.warnings, ["w"]);
    }
}
