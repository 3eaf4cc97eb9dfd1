//! EXPLAIN of snapshot management: what would change, as typed rows (pure; the engine renders).
//!
//! Columns: `kind String, name String, before Nullable(String), after Nullable(String),
//! detail String`. Rows:
//! - `ref` — a branch or tag: `before`/`after` as `branch <id>` or `tag <id>` followed by its
//!   retention fields (`min-snapshots-to-keep=2`, ...); NULL when it does not exist on that side.
//! - `property` — a table property: the value before and after (NULL: not set).
//! - `snapshot` — the new snapshot a cherry-pick writes: `after` is `new <operation> snapshot`,
//!   `detail` its summary entries and the number of files it adds and removes.
//! - `nothing` — one row when the statement changes nothing.

use crate::iceberg::spec::SnapshotRef;
use crate::maintain::report::{Cell, ColumnDef, ExplainRow, column};

/// One EXPLAIN row (the columns above).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SnapshotExplainRow {
    pub kind: String,
    pub name: String,
    pub before: Option<String>,
    pub after: Option<String>,
    pub detail: String,
}

impl ExplainRow for SnapshotExplainRow {
    const COLUMNS: &'static [ColumnDef] = &[
        column("kind", "String"),
        column("name", "String"),
        column("before", "Nullable(String)"),
        column("after", "Nullable(String)"),
        column("detail", "String"),
    ];

    fn into_cells(self) -> Vec<Cell> {
        vec![
            Cell::Text(self.kind),
            Cell::Text(self.name),
            Cell::text_or_null(self.before),
            Cell::text_or_null(self.after),
            Cell::Text(self.detail),
        ]
    }
}

/// `branch 123 min-snapshots-to-keep=2 max-snapshot-age-ms=... max-ref-age-ms=...`.
pub fn ref_text(r: &SnapshotRef) -> String {
    let mut text = format!("{} {}", r.kind.as_str(), r.snapshot_id);
    if let Some(n) = r.min_snapshots_to_keep {
        text.push_str(&format!(" min-snapshots-to-keep={n}"));
    }
    if let Some(ms) = r.max_snapshot_age_ms {
        text.push_str(&format!(" max-snapshot-age-ms={ms}"));
    }
    if let Some(ms) = r.max_ref_age_ms {
        text.push_str(&format!(" max-ref-age-ms={ms}"));
    }
    text
}

/// The row saying nothing changes.
pub fn nothing_row(detail: impl Into<String>) -> SnapshotExplainRow {
    SnapshotExplainRow {
        kind: "nothing".into(),
        name: String::new(),
        before: None,
        after: None,
        detail: detail.into(),
    }
}
