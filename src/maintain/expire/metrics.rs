//! [`ExpireMetrics`]: what `expire_snapshots` deleted (or, in a dry run, would delete); the one
//! place that knows its metric names and ClickHouse's row order. Pure data.

use super::keepset::ExpiryFileCounts;

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
    /// `clean_expired_metadata = 1` only: schemas removed (rows 8 and 9 exist only then).
    pub removed_schemas_count: Option<i64>,
    /// `clean_expired_metadata = 1` only: partition specs removed.
    pub removed_partition_specs_count: Option<i64>,
}

impl ExpireMetrics {
    /// The metric names, in ClickHouse 26.9's row order.
    pub const NAMES: [&'static str; 7] = [
        "deleted_data_files_count",
        "deleted_position_delete_files_count",
        "deleted_equality_delete_files_count",
        "deleted_manifest_files_count",
        "deleted_manifest_lists_count",
        "deleted_statistics_files_count",
        "dry_run",
    ];

    /// The metrics of `counts` files deleted (or, with `dry_run`, to be deleted).
    pub fn new(counts: ExpiryFileCounts, dry_run: bool) -> Self {
        ExpireMetrics {
            deleted_data_files_count: counts.data_files,
            deleted_position_delete_files_count: counts.position_delete_files,
            deleted_equality_delete_files_count: counts.equality_delete_files,
            deleted_manifest_files_count: counts.manifest_files,
            deleted_manifest_lists_count: counts.manifest_lists,
            deleted_statistics_files_count: counts.statistics_files,
            dry_run,
            removed_schemas_count: None,
            removed_partition_specs_count: None,
        }
    }

    /// The seven rows, then `removed_schemas_count` and `removed_partition_specs_count` when
    /// `clean_expired_metadata` was given.
    pub fn rows(&self) -> Vec<(&'static str, i64)> {
        let mut rows = self.named_values().to_vec();
        if let (Some(schemas), Some(specs)) = (
            self.removed_schemas_count,
            self.removed_partition_specs_count,
        ) {
            rows.push(("removed_schemas_count", schemas));
            rows.push(("removed_partition_specs_count", specs));
        }
        rows
    }

    /// The seven `(metric_name, metric_value)` rows, in ClickHouse 26.9's order.
    pub fn named_values(&self) -> [(&'static str, i64); 7] {
        let values = [
            self.deleted_data_files_count,
            self.deleted_position_delete_files_count,
            self.deleted_equality_delete_files_count,
            self.deleted_manifest_files_count,
            self.deleted_manifest_lists_count,
            self.deleted_statistics_files_count,
            i64::from(self.dry_run),
        ];
        std::array::from_fn(|i| (Self::NAMES[i], values[i]))
    }
}
