//! The result rows of the snapshot-management procedures: `previous_snapshot_id`,
//! `current_snapshot_id` (Int64), in that order. For `fast_forward` they are the moved branch's
//! heads; for the others `main`'s. A side without a snapshot is `-1` (Iceberg's "none").

/// What a procedure did to the snapshot ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SnapshotMetrics {
    pub previous_snapshot_id: Option<i64>,
    pub current_snapshot_id: Option<i64>,
}

impl SnapshotMetrics {
    /// `(metric_name, metric_value)` in row order.
    pub fn named_values(&self) -> [(&'static str, i64); 2] {
        [
            (
                "previous_snapshot_id",
                self.previous_snapshot_id.unwrap_or(-1),
            ),
            (
                "current_snapshot_id",
                self.current_snapshot_id.unwrap_or(-1),
            ),
        ]
    }
}
