//! [`CompactMetrics`]: what a compaction rewrote (or, in a dry run, would rewrite); the one place
//! that knows its metric names and row order. Pure data.

/// What `rewrite_data_files` / `OPTIMIZE TABLE` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CompactMetrics {
    pub rewritten_data_files_count: i64,
    pub added_data_files_count: i64,
    pub rewritten_bytes_count: i64,
    pub added_bytes_count: i64,
    pub removed_delete_files_count: i64,
    pub rewritten_file_groups_count: i64,
    pub failed_data_files_count: i64,
    pub dry_run: bool,
}

impl CompactMetrics {
    /// The metric names, in row order.
    pub const NAMES: [&'static str; 8] = [
        "rewritten_data_files_count",
        "added_data_files_count",
        "rewritten_bytes_count",
        "added_bytes_count",
        "removed_delete_files_count",
        "rewritten_file_groups_count",
        "failed_data_files_count",
        "dry_run",
    ];

    /// The eight `(metric_name, metric_value)` rows.
    pub fn named_values(&self) -> [(&'static str, i64); 8] {
        let values = [
            self.rewritten_data_files_count,
            self.added_data_files_count,
            self.rewritten_bytes_count,
            self.added_bytes_count,
            self.removed_delete_files_count,
            self.rewritten_file_groups_count,
            self.failed_data_files_count,
            i64::from(self.dry_run),
        ];
        std::array::from_fn(|i| (Self::NAMES[i], values[i]))
    }
}
