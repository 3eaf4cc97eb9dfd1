//! The EXPLAIN plan of `remove_orphan_files` as typed rows (columns and rows documented in the
//! parent module). Pure (the scan's outcome in, rows out); the engine renders the rows.

use super::metrics::OrphanMetrics;
use super::scan::ScanOutcome;
use crate::maintain::orphans::classify::OrphanCategory;
use crate::maintain::report::{Cell, ColumnDef, ExplainRow, column};
use crate::time_zone::SessionTimeZone;

/// One row of the EXPLAIN plan (the columns of the parent module, in order).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OrphanExplainRow {
    pub item: String,
    pub path: String,
    pub category: String,
    pub reason: String,
    pub files: i64,
    pub size_bytes: i64,
    pub last_modified: String,
}

impl ExplainRow for OrphanExplainRow {
    const COLUMNS: &'static [ColumnDef] = &[
        column("item", "String"),
        column("path", "String"),
        column("category", "String"),
        column("reason", "String"),
        column("files", "Int64"),
        column("size_bytes", "Int64"),
        column("last_modified", "String"),
    ];

    fn into_cells(self) -> Vec<Cell> {
        vec![
            Cell::Text(self.item),
            Cell::Text(self.path),
            Cell::Text(self.category),
            Cell::Text(self.reason),
            Cell::Int(self.files),
            Cell::Int(self.size_bytes),
            Cell::Text(self.last_modified),
        ]
    }
}

/// The category's EXPLAIN spelling.
pub fn category_name(category: OrphanCategory) -> &'static str {
    match category {
        OrphanCategory::Data => "data",
        OrphanCategory::PositionDelete => "position_delete",
        OrphanCategory::EqualityDelete => "equality_delete",
        OrphanCategory::Manifest => "manifest",
        OrphanCategory::ManifestList => "manifest_list",
        OrphanCategory::Metadata => "metadata",
        OrphanCategory::Statistics => "statistics",
    }
}

/// `YYYY-MM-DD hh:mm:ss` in the session time zone, as ClickHouse prints a `DateTime`.
fn timestamp(ms: Option<i64>, zone: &SessionTimeZone) -> String {
    ms.map(|ms| zone.format_seconds(ms)).unwrap_or_default()
}

fn bytes(size: u64) -> i64 {
    i64::try_from(size).unwrap_or(i64::MAX)
}

pub(super) fn row(
    item: &str,
    path: &str,
    category: &str,
    reason: &str,
    files: i64,
    size: i64,
    last_modified: String,
) -> OrphanExplainRow {
    OrphanExplainRow {
        item: item.to_string(),
        path: path.to_string(),
        category: category.to_string(),
        reason: reason.to_string(),
        files,
        size_bytes: size,
        last_modified,
    }
}

/// The plan: orphans, kept unreachable files, totals; times in `zone`.
pub fn explain_rows(
    outcome: &ScanOutcome,
    reachable_files: usize,
    zone: &SessionTimeZone,
) -> Vec<OrphanExplainRow> {
    let mut rows = Vec::new();
    for o in &outcome.orphans {
        let category = category_name(o.category);
        let ms = Some(o.last_modified_ms);
        rows.push(row(
            "orphan",
            &o.uri,
            category,
            o.reason.as_str(),
            1,
            bytes(o.size),
            timestamp(ms, zone),
        ));
    }
    for k in &outcome.kept {
        let reason = k.reason.as_str();
        rows.push(row(
            "kept",
            &k.uri,
            "",
            reason,
            1,
            bytes(k.size),
            timestamp(k.last_modified_ms, zone),
        ));
    }
    let mut links: Vec<&String> = outcome.links.iter().collect();
    links.sort_unstable();
    for link in links {
        rows.push(row("link", link, "", "symlink", 0, 0, String::new()));
    }
    let mut skipped: Vec<&(String, super::SkipReason)> = outcome.skipped.iter().collect();
    skipped.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    for (uri, reason) in skipped {
        rows.push(row(
            "skipped",
            uri,
            "",
            reason.as_str(),
            0,
            0,
            String::new(),
        ));
    }
    let tally = outcome.dry_run_tally();
    let bytes_of = |category: Option<OrphanCategory>| -> i64 {
        outcome
            .orphans
            .iter()
            .filter(|o| category.is_none_or(|c| o.category == c))
            .map(|o| bytes(o.size))
            .fold(0, i64::saturating_add)
    };
    let kept_bytes = |reason: super::KeepReason| -> i64 {
        outcome
            .kept
            .iter()
            .filter(|k| k.reason == reason)
            .map(|k| bytes(k.size))
            .fold(0, i64::saturating_add)
    };
    let categories = [
        OrphanCategory::Data,
        OrphanCategory::PositionDelete,
        OrphanCategory::EqualityDelete,
        OrphanCategory::Manifest,
        OrphanCategory::ManifestList,
        OrphanCategory::Metadata,
        OrphanCategory::Statistics,
    ];
    let metrics = tally.named_values();
    for ((name, value), category) in metrics.iter().zip(categories) {
        rows.push(row(
            "total",
            name,
            "",
            "",
            *value,
            bytes_of(Some(category)),
            String::new(),
        ));
    }
    use super::KeepReason::{Hidden, NoLastModified, TooYoung};
    let extra = [
        (
            OrphanMetrics::NAMES[7],
            outcome.skipped_missing_metadata,
            kept_bytes(NoLastModified),
        ),
        (OrphanMetrics::NAMES[8], 0, 0),
        (
            "kept_too_young_count",
            outcome.too_young,
            kept_bytes(TooYoung),
        ),
        ("kept_hidden_count", outcome.hidden, kept_bytes(Hidden)),
        ("reachable_listed_count", outcome.reachable_listed, 0),
        (
            "reachable_files_count",
            i64::try_from(reachable_files).unwrap_or(i64::MAX),
            0,
        ),
    ];
    for (name, files, size) in extra {
        rows.push(row("total", name, "", "", files, size, String::new()));
    }
    rows
}

/// The rows of other tables found under the location: before the plan, one `other_table` row per
/// table (reason `protected` with `protect_other_tables = 1`, else `refused`: the statement itself
/// would refuse) and one `other_table_metadata` row per metadata file found for it; after the
/// totals, `kept_other_table_count` (orphans kept because they are another table's).
pub fn add_other_tables(
    plan: &mut Vec<OrphanExplainRow>,
    protection: &super::other_tables::Protection,
    outcome: &ScanOutcome,
    kept: i64,
    protected: bool,
) {
    let mut rows = Vec::new();
    for table in &protection.tables {
        let files = i64::try_from(table.metadata_files.len()).unwrap_or(i64::MAX);
        rows.push(row(
            "other_table",
            &table.location,
            "",
            if protected { "protected" } else { "refused" },
            files,
            0,
            String::new(),
        ));
        for (file, field) in table.metadata_files.iter().zip(&table.location_fields) {
            let category = match field {
                Some(_) => "metadata",
                None => "version_hint",
            };
            let field = field.as_deref().unwrap_or("");
            rows.push(row(
                "other_table_metadata",
                file,
                category,
                field,
                1,
                0,
                String::new(),
            ));
        }
    }
    plan.splice(0..0, rows);
    let size = outcome
        .kept
        .iter()
        .filter(|k| k.reason == super::KeepReason::OtherTable)
        .map(|k| bytes(k.size))
        .fold(0, i64::saturating_add);
    plan.push(row(
        "total",
        "kept_other_table_count",
        "",
        "",
        kept,
        size,
        String::new(),
    ));
}

#[cfg(test)]
mod tests {
    use super::super::scan::{KeepReason, Kept, Orphan, OrphanReason};
    use super::*;

    /// An unfinished upload is an orphan row that says so; it counts in its category.
    #[test]
    fn an_unfinished_upload_says_so() {
        let outcome = ScanOutcome {
            orphans: vec![Orphan {
                uri: "/t/data/00000-0-compacted-00001.parquet#1".into(),
                category: OrphanCategory::Data,
                size: 4096,
                last_modified_ms: 0,
                reason: OrphanReason::UnfinishedUpload,
            }],
            ..Default::default()
        };
        let utc = SessionTimeZone::Named(chrono_tz::UTC);
        let r = explain_rows(&outcome, 1, &utc);
        assert_eq!(
            (
                r[0].item.as_str(),
                r[0].category.as_str(),
                r[0].reason.as_str()
            ),
            ("orphan", "data", "unfinished_upload")
        );
        assert_eq!(
            (r[1].path.as_str(), r[1].files),
            ("deleted_data_files_count", 1)
        );
    }

    #[test]
    fn rows_and_totals() {
        let outcome = ScanOutcome {
            orphans: vec![Orphan {
                uri: "s3://b/t/data/x.parquet".into(),
                category: OrphanCategory::Data,
                size: 10,
                last_modified_ms: 0,
                reason: OrphanReason::Unreachable,
            }],
            kept: vec![Kept {
                uri: "s3://b/t/_tmp/y".into(),
                reason: KeepReason::Hidden,
                size: 5,
                last_modified_ms: None,
            }],
            listed: 3,
            reachable_listed: 1,
            hidden: 1,
            ..Default::default()
        };
        let utc = SessionTimeZone::Named(chrono_tz::UTC);
        let r = explain_rows(&outcome, 7, &utc);
        assert_eq!(r.len(), 2 + 7 + 6);
        assert_eq!(
            r[0],
            row(
                "orphan",
                "s3://b/t/data/x.parquet",
                "data",
                "unreachable",
                1,
                10,
                "1970-01-01 00:00:00".into()
            )
        );
        assert_eq!(r[0].last_modified, "1970-01-01 00:00:00");
        assert_eq!(r[1].reason, "hidden");
        assert_eq!(r[1].last_modified, "");
        assert_eq!(
            r[2],
            row(
                "total",
                "deleted_data_files_count",
                "",
                "",
                1,
                10,
                String::new()
            )
        );
        let names: Vec<&str> = r[2..].iter().map(|row| row.path.as_str()).collect();
        assert_eq!(names.len(), 13);
        assert_eq!(names[7], "skipped_missing_metadata_count");
        assert_eq!(names[8], "failed_deletions_count");
        let hidden = &r[2 + 10];
        assert_eq!(
            (hidden.path.as_str(), hidden.files, hidden.size_bytes),
            ("kept_hidden_count", 1, 5)
        );
        assert_eq!(r.last().map(|row| row.files), Some(7));
    }

    #[test]
    fn other_table_rows_lead_and_their_total_closes() {
        use super::super::other_tables::{OtherTable, Protection};
        use crate::maintain::file_graph::reachable::ReachableFiles;
        let outcome = ScanOutcome {
            kept: vec![Kept {
                uri: "s3://b/t/n/data/x.parquet".into(),
                reason: KeepReason::OtherTable,
                size: 9,
                last_modified_ms: Some(0),
            }],
            ..Default::default()
        };
        let protection = Protection {
            tables: vec![OtherTable {
                location: "s3://b/t/n".into(),
                metadata_files: vec![
                    "s3://b/t/n/metadata/v1.metadata.json".into(),
                    "s3://b/t/n/metadata/version-hint.text".into(),
                ],
                location_fields: vec![Some("s3://b/t/n".into()), None],
            }],
            folders: vec!["s3://b/t/n".into()],
            reachable: ReachableFiles::new("s3://b/t"),
        };
        let mut r = explain_rows(&outcome, 0, &SessionTimeZone::Named(chrono_tz::UTC));
        let plain = r.len();
        add_other_tables(&mut r, &protection, &outcome, 1, true);
        assert_eq!(r.len(), plain + 4);
        assert_eq!(
            r[0],
            row(
                "other_table",
                "s3://b/t/n",
                "",
                "protected",
                2,
                0,
                String::new()
            )
        );
        assert_eq!(
            r[1],
            row(
                "other_table_metadata",
                "s3://b/t/n/metadata/v1.metadata.json",
                "metadata",
                "s3://b/t/n",
                1,
                0,
                String::new()
            )
        );
        assert_eq!(r[2].category, "version_hint");
        assert_eq!(r[3].reason, "other_table");
        assert_eq!(
            r.last(),
            Some(&row(
                "total",
                "kept_other_table_count",
                "",
                "",
                1,
                9,
                String::new()
            ))
        );
    }

    #[test]
    fn links_and_skipped_entries_get_rows_but_no_totals() {
        let outcome = ScanOutcome {
            links: vec!["/t/data/sub".into(), "/t/a-link".into()],
            skipped: vec![(
                "/t/data/\\xff.parquet".into(),
                super::super::SkipReason::NotUtf8Name,
            )],
            ..Default::default()
        };
        let r = explain_rows(&outcome, 0, &SessionTimeZone::Named(chrono_tz::UTC));
        assert_eq!(r.len(), 3 + 13, "the totals stay thirteen rows");
        assert_eq!(
            r[0],
            row("link", "/t/a-link", "", "symlink", 0, 0, String::new())
        );
        assert_eq!(
            r[1],
            row("link", "/t/data/sub", "", "symlink", 0, 0, String::new())
        );
        assert_eq!(
            r[2],
            row(
                "skipped",
                "/t/data/\\xff.parquet",
                "",
                "not_utf8_name",
                0,
                0,
                String::new()
            )
        );
        let empty = explain_rows(
            &ScanOutcome::default(),
            0,
            &SessionTimeZone::Named(chrono_tz::UTC),
        );
        assert_eq!(
            r[3..],
            empty[..],
            "no total counts links or skipped entries"
        );
    }
}
