//! [`RewriteManifestsMetrics`]: what `rewrite_manifests` replaced and wrote (or, in a dry run,
//! would); the one place that knows its metric names and row order. Pure data.

/// What `rewrite_manifests` did (or, in a dry run, would do).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RewriteManifestsMetrics {
    /// Manifests of the current snapshot replaced by the new ones.
    pub rewritten_manifests_count: i64,
    /// New manifests written.
    pub added_manifests_count: i64,
    pub dry_run: bool,
}

impl RewriteManifestsMetrics {
    /// The metric names, in row order (Spark's `rewritten_manifests_count`,
    /// `added_manifests_count`, then `dry_run` as the ClickHouse procedures end).
    pub const NAMES: [&'static str; 3] = [
        "rewritten_manifests_count",
        "added_manifests_count",
        "dry_run",
    ];

    /// The `(metric_name, metric_value)` rows.
    pub fn named_values(&self) -> [(&'static str, i64); 3] {
        let values = [
            self.rewritten_manifests_count,
            self.added_manifests_count,
            i64::from(self.dry_run),
        ];
        std::array::from_fn(|i| (Self::NAMES[i], values[i]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_in_order() {
        let m = RewriteManifestsMetrics {
            rewritten_manifests_count: 7,
            added_manifests_count: 2,
            dry_run: true,
        };
        assert_eq!(
            m.named_values(),
            [
                ("rewritten_manifests_count", 7),
                ("added_manifests_count", 2),
                ("dry_run", 1)
            ]
        );
    }
}
