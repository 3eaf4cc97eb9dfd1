//! [`OrphanMetrics`]: what `remove_orphan_files` deleted (or, in a dry run, would delete),
//! accumulated file by file; the one place that knows its metric names and ClickHouse's row order
//! (nine rows). Pure data.

use crate::maintain::orphans::classify::{OrphanCategory, OrphanVerdict};

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
    /// The metric names, in ClickHouse 26.9's row order.
    pub const NAMES: [&'static str; 9] = [
        "deleted_data_files_count",
        "deleted_position_delete_files_count",
        "deleted_equality_delete_files_count",
        "deleted_manifest_files_count",
        "deleted_manifest_lists_count",
        "deleted_metadata_files_count",
        "deleted_statistics_files_count",
        "skipped_missing_metadata_count",
        "failed_deletions_count",
    ];

    /// The nine `(metric_name, metric_value)` rows, in ClickHouse 26.9's order.
    pub fn named_values(&self) -> [(&'static str, i64); 9] {
        let values = [
            self.deleted_data_files_count,
            self.deleted_position_delete_files_count,
            self.deleted_equality_delete_files_count,
            self.deleted_manifest_files_count,
            self.deleted_manifest_lists_count,
            self.deleted_metadata_files_count,
            self.deleted_statistics_files_count,
            self.skipped_missing_metadata_count,
            self.failed_deletions_count,
        ];
        std::array::from_fn(|i| (Self::NAMES[i], values[i]))
    }

    /// Count a deleted (or, in a dry run, to-be-deleted) orphan.
    pub fn count_deleted(&mut self, category: OrphanCategory) {
        let slot = match category {
            OrphanCategory::Data => &mut self.deleted_data_files_count,
            OrphanCategory::PositionDelete => &mut self.deleted_position_delete_files_count,
            OrphanCategory::EqualityDelete => &mut self.deleted_equality_delete_files_count,
            OrphanCategory::Manifest => &mut self.deleted_manifest_files_count,
            OrphanCategory::ManifestList => &mut self.deleted_manifest_lists_count,
            OrphanCategory::Metadata => &mut self.deleted_metadata_files_count,
            OrphanCategory::Statistics => &mut self.deleted_statistics_files_count,
        };
        *slot = slot.saturating_add(1);
    }

    /// Count a file kept for want of a last-modified time.
    pub fn count_skipped_missing_metadata(&mut self) {
        self.skipped_missing_metadata_count = self.skipped_missing_metadata_count.saturating_add(1);
    }

    /// Count a failed delete.
    pub fn count_failed(&mut self) {
        self.failed_deletions_count = self.failed_deletions_count.saturating_add(1);
    }

    /// A dry run's tally: every orphan counted as deleted, every file without mtime as skipped.
    pub fn record_verdict(&mut self, verdict: OrphanVerdict) {
        match verdict {
            OrphanVerdict::Orphan(category) => self.count_deleted(category),
            OrphanVerdict::NoLastModified => self.count_skipped_missing_metadata(),
            _ => {}
        }
    }
}
