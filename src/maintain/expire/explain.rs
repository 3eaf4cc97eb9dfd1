//! `EXPLAIN ALTER TABLE t EXECUTE expire_snapshots(...)`: the plan as typed rows, nothing changed.
//! Pure (the plan in, rows out); the engine renders the rows (`engine::render`).
//!
//! Columns: `kind String, id String, decision String, reason String, detail String,
//! bytes Nullable(Int64)`. Rows, in this order:
//! - `policy` (policy mode) — id: `min-snapshots-to-keep`, `max-snapshot-age-ms`,
//!   `max-ref-age-ms`; decision: the table-level value; reason: where it comes from (a table
//!   property, an argument, a setting's default); detail: what it does.
//! - `snapshot` — id: snapshot id; decision `keep`/`expire`; reason: why, naming the rule, its
//!   number and its source (several joined by `; `, worded in `reasons.rs`);
//!   detail: `<timestamp 'YYYY-MM-DD hh:mm:ss.mmm' in the session time zone> parent <id|none>`;
//!   bytes NULL.
//! - `branch` / `tag` — id: ref name; decision `keep`/`remove`; reason; detail: `snapshot <id>`.
//! - `file` — id: the URI to delete; decision `delete`; reason: the category (`data`,
//!   `position_delete`, `equality_delete`, `manifest`, `manifest_list`, `statistics`); detail
//!   empty; bytes: size when known. In deletion order.
//! - `total` — id: a category, then `all`; decision `delete`; reason `<n> file(s)`; detail names
//!   how many sizes are unknown, if any (for `all`: what the deletes free, `frees 1.5 MiB`);
//!   bytes: the known sizes summed.
//! - `cleanup` (only when something expires) — id `incremental` or `full`; reason: what the
//!   incremental cleanup read, or why the full keep set decided ([`super::incremental`]).
//! - `warning` — one per warning (e.g. a skipped missing manifest), in reason.

use super::cleanup::MetadataCleanup;
use super::keepset::{FileCategory, FileDecision};
use super::plan::ExpiryPlan;
use super::policy::{RefFate, SnapshotFate};
use super::reasons::{expire_reason, keep_reason, policy_rows, ref_kept, ref_removed, size_text};
use crate::iceberg::spec::{MAIN_BRANCH, RefKind, SnapshotId};
use crate::maintain::report::{Cell, ColumnDef, ExplainRow, column};
use crate::time_zone::SessionTimeZone;

/// One row of the EXPLAIN plan (the columns above, in order); the engine renders it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExpireExplainRow {
    pub kind: String,
    pub id: String,
    pub decision: String,
    pub reason: String,
    pub detail: String,
    pub bytes: Option<i64>,
}

impl ExplainRow for ExpireExplainRow {
    const COLUMNS: &'static [ColumnDef] = &[
        column("kind", "String"),
        column("id", "String"),
        column("decision", "String"),
        column("reason", "String"),
        column("detail", "String"),
        column("bytes", "Nullable(Int64)"),
    ];

    fn into_cells(self) -> Vec<Cell> {
        vec![
            Cell::Text(self.kind),
            Cell::Text(self.id),
            Cell::Text(self.decision),
            Cell::Text(self.reason),
            Cell::Text(self.detail),
            Cell::int_or_null(self.bytes),
        ]
    }
}

/// The EXPLAIN rows of `plan`. `parent_of` gives each snapshot's parent; times print in `zone`.
pub fn explain_rows(
    plan: &ExpiryPlan,
    parent_of: impl Fn(SnapshotId) -> Option<SnapshotId>,
    warnings: &[String],
    zone: &SessionTimeZone,
) -> Vec<ExpireExplainRow> {
    let mut rows = Vec::new();
    let retention = plan.retention.as_ref();
    for (id, value, source, meaning) in retention.map(policy_rows).unwrap_or_default() {
        rows.push(row("policy", id, &value, &source, meaning, None));
    }
    for v in &plan.decision.snapshots {
        let (decision, reason) = match &v.fate {
            SnapshotFate::Kept(reasons) => (
                "keep",
                reasons
                    .iter()
                    .map(|r| keep_reason(r, retention))
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
            SnapshotFate::Expired(r) => ("expire", expire_reason(*r, retention)),
        };
        let parent = parent_of(v.snapshot_id).map_or("none".to_string(), |p| p.to_string());
        let detail = format!("{} parent {parent}", zone.format_ms(v.timestamp_ms));
        rows.push(row(
            "snapshot",
            &v.snapshot_id.to_string(),
            decision,
            &reason,
            &detail,
            None,
        ));
    }
    for r in &plan.decision.refs {
        let kind = match r.kind {
            RefKind::Branch => "branch",
            RefKind::Tag => "tag",
        };
        let (decision, reason) = match r.fate {
            RefFate::Kept if r.name == MAIN_BRANCH => ("keep", "main is never removed".into()),
            RefFate::Kept => {
                let head_ms = plan.decision.verdict(r.snapshot_id).map(|v| v.timestamp_ms);
                ("keep", ref_kept(&r.name, head_ms, retention))
            }
            RefFate::Removed(removal) => (
                "remove",
                ref_removed(&r.name, removal, r.snapshot_id, retention),
            ),
        };
        let detail = format!("snapshot {}", r.snapshot_id);
        rows.push(row(kind, &r.name, decision, &reason, &detail, None));
    }
    for (category, f) in plan.delete.deletion_order() {
        let uri = plan.uri(f.path).unwrap_or("<unknown path>");
        rows.push(row(
            "file",
            uri,
            "delete",
            category_name(category),
            "",
            f.size,
        ));
    }
    totals(&plan.delete, &mut rows);
    if let Some(cleanup) = &plan.cleanup {
        rows.push(row(
            "cleanup",
            cleanup.name(),
            "",
            cleanup.reason(),
            "",
            None,
        ));
    }
    for w in warnings {
        rows.push(row("warning", "", "", w, "", None));
    }
    rows
}

fn totals(delete: &FileDecision, rows: &mut Vec<ExpireExplainRow>) {
    for category in FileDecision::DELETION_ORDER {
        let files = delete.files(category);
        let known: i64 = files
            .iter()
            .filter_map(|f| f.size)
            .fold(0i64, |a, b| a.saturating_add(b.max(0)));
        let unknown = files.iter().filter(|f| f.size.is_none()).count();
        rows.push(row(
            "total",
            category_name(category),
            "delete",
            &format!("{} file(s)", files.len()),
            &unknown_note(unknown),
            Some(known),
        ));
    }
    let (bytes, unknown) = delete.total_bytes();
    let frees = match unknown {
        0 => format!("frees {}", size_text(bytes)),
        _ => format!("frees {} and {}", size_text(bytes), unknown_note(unknown)),
    };
    rows.push(row(
        "total",
        "all",
        "delete",
        &format!("{} file(s)", delete.len()),
        &frees,
        Some(bytes),
    ));
}

fn unknown_note(unknown: usize) -> String {
    if unknown == 0 {
        String::new()
    } else {
        format!("{unknown} size(s) unknown")
    }
}

fn row(
    kind: &str,
    id: &str,
    decision: &str,
    reason: &str,
    detail: &str,
    bytes: Option<i64>,
) -> ExpireExplainRow {
    ExpireExplainRow {
        kind: kind.into(),
        id: id.into(),
        decision: decision.into(),
        reason: reason.into(),
        detail: detail.into(),
        bytes,
    }
}

/// EXPLAIN rows of `clean_expired_metadata`: each schema and spec it removes.
pub fn cleanup_rows(cleanup: Option<&MetadataCleanup>) -> Vec<ExpireExplainRow> {
    let Some(c) = cleanup else {
        return Vec::new();
    };
    let row = |kind: &str, id: i32| ExpireExplainRow {
        kind: kind.to_string(),
        id: id.to_string(),
        decision: "remove".to_string(),
        reason: "no retained snapshot uses it (clean_expired_metadata)".to_string(),
        detail: String::new(),
        bytes: None,
    };
    c.schemas
        .iter()
        .map(|id| row("schema", *id))
        .chain(
            c.partition_specs
                .iter()
                .map(|id| row("partition_spec", *id)),
        )
        .collect()
}

/// The category as EXPLAIN names it.
pub fn category_name(category: FileCategory) -> &'static str {
    match category {
        FileCategory::DataFile => "data",
        FileCategory::PositionDeleteFile => "position_delete",
        FileCategory::EqualityDeleteFile => "equality_delete",
        FileCategory::Manifest => "manifest",
        FileCategory::ManifestList => "manifest_list",
        FileCategory::StatisticsFile => "statistics",
    }
}

/// `YYYY-MM-DD hh:mm:ss.mmm` in UTC (EXPLAIN itself prints in the session time zone,
/// [`SessionTimeZone::format_ms`]).
pub fn format_ts(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).map_or_else(
        || format!("{ms} ms"),
        |t| t.format("%Y-%m-%d %H:%M:%S%.3f").to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_utc_with_millis() {
        assert_eq!(format_ts(1_750_000_000_123), "2025-06-15 15:06:40.123");
        assert_eq!(format_ts(0), "1970-01-01 00:00:00.000");
    }
}
