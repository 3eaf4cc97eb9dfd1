//! The EXPLAIN result of `remove_orphan_files` (columns and rows documented in the parent module).

use super::scan::ScanOutcome;
use crate::engine::QueryResult;
use crate::format::{Column, Value};
use crate::maintain::orphans::OrphanCategory;

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

fn timestamp(ms: Option<i64>) -> String {
    ms.and_then(chrono::DateTime::from_timestamp_millis)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
        .unwrap_or_default()
}

fn bytes(size: u64) -> i64 {
    i64::try_from(size).unwrap_or(i64::MAX)
}

fn row(
    item: &str,
    path: &str,
    category: &str,
    reason: &str,
    files: i64,
    size: i64,
    ms: Option<i64>,
) -> Vec<Value> {
    vec![
        Value::Str(item.to_string()),
        Value::Str(path.to_string()),
        Value::Str(category.to_string()),
        Value::Str(reason.to_string()),
        Value::Int(files),
        Value::Int(size),
        Value::Str(timestamp(ms)),
    ]
}

/// The plan: orphans, kept unreachable files, totals.
pub fn result(outcome: &ScanOutcome, reachable_files: usize) -> QueryResult {
    let columns = vec![
        Column::new("item", "String"),
        Column::new("path", "String"),
        Column::new("category", "String"),
        Column::new("reason", "String"),
        Column::new("files", "Int64"),
        Column::new("size_bytes", "Int64"),
        Column::new("last_modified", "String"),
    ];
    let mut rows = Vec::new();
    for o in &outcome.orphans {
        let category = category_name(o.category);
        let ms = Some(o.last_modified_ms);
        rows.push(row(
            "orphan",
            &o.uri,
            category,
            "unreachable",
            1,
            bytes(o.size),
            ms,
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
            k.last_modified_ms,
        ));
    }
    let mut links: Vec<&String> = outcome.links.iter().collect();
    links.sort_unstable();
    for link in links {
        rows.push(row("link", link, "", "symlink", 0, 0, None));
    }
    let mut skipped: Vec<&(String, super::SkipReason)> = outcome.skipped.iter().collect();
    skipped.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    for (uri, reason) in skipped {
        rows.push(row("skipped", uri, "", reason.as_str(), 0, 0, None));
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
    let metrics = tally.metrics();
    for ((name, value), category) in metrics.iter().zip(categories) {
        rows.push(row(
            "total",
            name,
            "",
            "",
            *value,
            bytes_of(Some(category)),
            None,
        ));
    }
    use super::KeepReason::{Hidden, NoLastModified, TooYoung};
    let extra = [
        (
            "skipped_missing_metadata_count",
            outcome.skipped_missing_metadata,
            kept_bytes(NoLastModified),
        ),
        ("failed_deletions_count", 0, 0),
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
        rows.push(row("total", name, "", "", files, size, None));
    }
    QueryResult::table(columns, rows)
}

#[cfg(test)]
mod tests {
    use super::super::scan::{KeepReason, Kept, Orphan};
    use super::*;

    #[test]
    fn rows_and_totals() {
        let outcome = ScanOutcome {
            orphans: vec![Orphan {
                uri: "s3://b/t/data/x.parquet".into(),
                category: OrphanCategory::Data,
                size: 10,
                last_modified_ms: 0,
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
        let r = result(&outcome, 7);
        assert_eq!(r.columns.len(), 7);
        assert_eq!(r.rows.len(), 2 + 7 + 6);
        assert_eq!(
            r.rows[0],
            row(
                "orphan",
                "s3://b/t/data/x.parquet",
                "data",
                "unreachable",
                1,
                10,
                Some(0)
            )
        );
        assert_eq!(r.rows[0][6], Value::Str("1970-01-01 00:00:00".into()));
        assert_eq!(r.rows[1][3], Value::Str("hidden".into()));
        assert_eq!(r.rows[1][6], Value::Str(String::new()));
        assert_eq!(
            r.rows[2],
            row("total", "deleted_data_files_count", "", "", 1, 10, None)
        );
        let names: Vec<&Value> = r.rows[2..].iter().map(|row| &row[1]).collect();
        assert_eq!(names.len(), 13);
        assert_eq!(
            names[7],
            &Value::Str("skipped_missing_metadata_count".into())
        );
        assert_eq!(names[8], &Value::Str("failed_deletions_count".into()));
        let hidden = &r.rows[2 + 10];
        assert_eq!(
            (&hidden[1], &hidden[4], &hidden[5]),
            (
                &Value::Str("kept_hidden_count".into()),
                &Value::Int(1),
                &Value::Int(5)
            )
        );
        assert_eq!(r.rows.last().map(|row| &row[4]), Some(&Value::Int(7)));
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
        let r = result(&outcome, 0);
        assert_eq!(r.columns.len(), 7);
        assert_eq!(r.rows.len(), 3 + 13, "the totals stay thirteen rows");
        assert_eq!(
            r.rows[0],
            row("link", "/t/a-link", "", "symlink", 0, 0, None)
        );
        assert_eq!(
            r.rows[1],
            row("link", "/t/data/sub", "", "symlink", 0, 0, None)
        );
        assert_eq!(
            r.rows[2],
            row(
                "skipped",
                "/t/data/\\xff.parquet",
                "",
                "not_utf8_name",
                0,
                0,
                None
            )
        );
        let empty = result(&ScanOutcome::default(), 0);
        assert_eq!(
            r.rows[3..],
            empty.rows[..],
            "no total counts links or skipped entries"
        );
    }
}
