//! The EXPLAIN plan of a compaction as typed rows (pure): one row per file group, rewritten or
//! left, with its partition, inputs, the deletes applied and the expected outputs.

use super::model::LiveFile;
use super::plan::Plan;
use crate::maintain::report::{Cell, ColumnDef, ExplainRow, column};

/// One file group of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CompactExplainRow {
    /// `rewrite` or `skip`.
    pub decision: String,
    pub spec_id: i64,
    /// `name=value/...`; empty when unpartitioned.
    pub partition: String,
    pub input_files: i64,
    pub input_bytes: i64,
    pub input_records: i64,
    pub position_delete_files: i64,
    pub equality_delete_files: i64,
    pub expected_output_files: i64,
    pub reason: String,
}

impl ExplainRow for CompactExplainRow {
    const COLUMNS: &'static [ColumnDef] = &[
        column("decision", "String"),
        column("spec_id", "Int64"),
        column("partition", "String"),
        column("input_files", "Int64"),
        column("input_bytes", "Int64"),
        column("input_records", "Int64"),
        column("position_delete_files", "Int64"),
        column("equality_delete_files", "Int64"),
        column("expected_output_files", "Int64"),
        column("reason", "String"),
    ];

    fn into_cells(self) -> Vec<Cell> {
        vec![
            Cell::Text(self.decision),
            Cell::Int(self.spec_id),
            Cell::Text(self.partition),
            Cell::Int(self.input_files),
            Cell::Int(self.input_bytes),
            Cell::Int(self.input_records),
            Cell::Int(self.position_delete_files),
            Cell::Int(self.equality_delete_files),
            Cell::Int(self.expected_output_files),
            Cell::Text(self.reason),
        ]
    }
}

/// The rows of `plan` over `data` and `deletes`.
pub fn explain_rows(plan: &Plan, deletes: &[LiveFile]) -> Vec<CompactExplainRow> {
    plan.groups
        .iter()
        .map(|g| {
            let count = |eq: bool| {
                g.deletes
                    .iter()
                    .filter(|i| {
                        (deletes[**i].content()
                            == crate::iceberg::spec::DataContent::EqualityDeletes)
                            == eq
                    })
                    .count() as i64
            };
            CompactExplainRow {
                decision: if g.rewrite { "rewrite" } else { "skip" }.into(),
                spec_id: i64::from(g.spec_id),
                partition: g.partition.clone(),
                input_files: g.inputs.len() as i64,
                input_bytes: g.input_bytes as i64,
                input_records: g.input_records as i64,
                position_delete_files: count(false),
                equality_delete_files: count(true),
                expected_output_files: if g.rewrite {
                    g.expected_outputs as i64
                } else {
                    0
                },
                reason: g.reason.clone(),
            }
        })
        .collect()
}
