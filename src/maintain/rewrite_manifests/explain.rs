//! The EXPLAIN plan of `rewrite_manifests` as typed rows (pure): one row per manifest of the
//! current snapshot (`rewrite` or `keep`, with the reason), then one per new manifest (`write`,
//! its entries and estimated bytes). The engine renders them.

use super::decide::{ManifestVerdict, Selection};
use crate::iceberg::manifest_list::ManifestFile;
use crate::iceberg::spec::ManifestContent;
use crate::maintain::report::{Cell, ColumnDef, ExplainRow, column};

/// One row of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RewriteManifestsExplainRow {
    /// `manifest` (of the current snapshot) or `new_manifest`.
    pub kind: String,
    /// The manifest's path; for a new manifest, `new #<n>` (its name is chosen when written).
    pub path: String,
    pub spec_id: i64,
    /// `data` or `deletes`.
    pub content: String,
    /// `rewrite`, `keep` or `write`.
    pub decision: String,
    pub reason: String,
    /// Live entries (for a kept manifest: its live files per the list, when known).
    pub entries: i64,
    /// The manifest's length; for a new manifest, the estimate.
    pub bytes: i64,
}

impl ExplainRow for RewriteManifestsExplainRow {
    const COLUMNS: &'static [ColumnDef] = &[
        column("kind", "String"),
        column("path", "String"),
        column("spec_id", "Int64"),
        column("content", "String"),
        column("decision", "String"),
        column("reason", "String"),
        column("entries", "Int64"),
        column("bytes", "Int64"),
    ];

    fn into_cells(self) -> Vec<Cell> {
        vec![
            Cell::Text(self.kind),
            Cell::Text(self.path),
            Cell::Int(self.spec_id),
            Cell::Text(self.content),
            Cell::Text(self.decision),
            Cell::Text(self.reason),
            Cell::Int(self.entries),
            Cell::Int(self.bytes),
        ]
    }
}

/// A new manifest as planned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedManifest {
    pub spec_id: i32,
    pub content: ManifestContent,
    pub entries: usize,
    pub estimated_bytes: i64,
    /// How many distinct partitions it holds.
    pub partitions: usize,
    /// The manifest's group (index into [`Selection::groups`]).
    pub group: usize,
}

fn content_name(content: ManifestContent) -> &'static str {
    match content {
        ManifestContent::Data => "data",
        ManifestContent::Deletes => "deletes",
    }
}

/// The plan's rows; `target` is the target size in bytes.
pub fn explain_rows(
    list: &[ManifestFile],
    selection: &Selection,
    planned: &[PlannedManifest],
    target: i64,
) -> Vec<RewriteManifestsExplainRow> {
    let mut rows = Vec::new();
    for (m, verdict) in list.iter().zip(&selection.verdicts) {
        let live = i64::from(m.added_files_count.unwrap_or(0))
            + i64::from(m.existing_files_count.unwrap_or(0));
        let (decision, reason) = match verdict {
            ManifestVerdict::Rewrite { group } => {
                let g = &selection.groups[*group];
                (
                    "rewrite",
                    format!(
                        "spec {} {}: {} manifests, {} live bytes need {} at {target} bytes",
                        g.spec_id,
                        content_name(g.content),
                        g.manifests.len(),
                        g.live_bytes,
                        g.target_count
                    ),
                )
            }
            ManifestVerdict::Keep(reason) => ("keep", reason.as_str().to_string()),
        };
        rows.push(RewriteManifestsExplainRow {
            kind: "manifest".into(),
            path: m.manifest_path.clone(),
            spec_id: i64::from(m.partition_spec_id),
            content: content_name(m.content).into(),
            decision: decision.into(),
            reason,
            entries: live,
            bytes: m.manifest_length,
        });
    }
    for (n, p) in planned.iter().enumerate() {
        rows.push(RewriteManifestsExplainRow {
            kind: "new_manifest".into(),
            path: format!("new #{}", n + 1),
            spec_id: i64::from(p.spec_id),
            content: content_name(p.content).into(),
            decision: "write".into(),
            reason: format!("{} partition(s), clustered by partition", p.partitions),
            entries: p.entries as i64,
            bytes: p.estimated_bytes,
        });
    }
    rows
}
