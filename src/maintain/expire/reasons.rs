//! The words of expiry's verdicts: why a snapshot is kept or expires and why a ref stays or
//! goes, naming the rule, its number and where the number comes from (a ref's own field, a table
//! property, an argument, a setting's default); the policy rows that open EXPLAIN; and the
//! warning for a `retain_last` that the age limit overrode. Pure.

use super::plan::ExpiryPlan;
use super::policy::{ExpireReason, KeepReason, RefRemoval, SnapshotFate};
use super::retention::{Retention, age_limit_text};

/// Why a snapshot is kept, in words (numbers and sources when the policy is known).
pub fn keep_reason(r: &KeepReason, retention: Option<&Retention>) -> String {
    match (r, retention) {
        (KeepReason::Current, _) => "current snapshot".into(),
        (KeepReason::RefHead(name), _) => format!("head of ref '{name}'"),
        (KeepReason::BranchMinKeep(name), Some(p)) => {
            let (n, from) = p.min_snapshots_to_keep(name);
            format!("within min-snapshots-to-keep {n} of branch '{name}' ({from})")
        }
        (KeepReason::BranchMinKeep(name), None) => {
            format!("within min-snapshots-to-keep of branch '{name}'")
        }
        (KeepReason::BranchYoung(name), Some(p)) => {
            let (ms, from) = p.max_snapshot_age_ms(name);
            let limit = age_limit_text(ms);
            format!("within max-snapshot-age-ms {limit} of branch '{name}' ({from})")
        }
        (KeepReason::BranchYoung(name), None) => {
            format!("within max-snapshot-age-ms of branch '{name}'")
        }
        (KeepReason::Tag(name), _) => format!("snapshot of tag '{name}'"),
        (KeepReason::UnreferencedYoung, Some(p)) => format!(
            "on no branch or tag, but within the table's max-snapshot-age-ms {} ({})",
            age_limit_text(p.policy.max_snapshot_age_ms),
            p.sources.max_snapshot_age_ms
        ),
        (KeepReason::UnreferencedYoung, None) => {
            "on no branch or tag, but within the table's max snapshot age".into()
        }
        (KeepReason::ProtectedByExpireBefore, _) => "timestamp >= expire_before".into(),
        (KeepReason::NotNamed, _) => "not named in snapshot_ids".into(),
    }
}

/// Why a snapshot expires, in words.
pub fn expire_reason(r: ExpireReason, retention: Option<&Retention>) -> String {
    match (r, retention) {
        (ExpireReason::Aged, _) => {
            "older than its branch retention (min-snapshots-to-keep, max-snapshot-age-ms)".into()
        }
        (ExpireReason::UnreferencedAged, Some(p)) => format!(
            "on no branch or tag, and older than the table's max-snapshot-age-ms {} ({})",
            age_limit_text(p.policy.max_snapshot_age_ms),
            p.sources.max_snapshot_age_ms
        ),
        (ExpireReason::UnreferencedAged, None) => {
            "on no branch or tag, and older than the table's max snapshot age".into()
        }
        (ExpireReason::NamedInIds, _) => "named in snapshot_ids".into(),
    }
}

/// Why ref `name` (not `main`), whose head was taken at `head_ms`, stays.
pub fn ref_kept(name: &str, head_ms: Option<i64>, retention: Option<&Retention>) -> String {
    let Some(p) = retention else {
        return "its head is within its max-ref-age-ms".into();
    };
    let (limit, from) = p.max_ref_age_ms(name);
    match head_ms {
        _ if limit == i64::MAX => {
            format!("no max-ref-age-ms limits it ({from}: refs are kept forever)")
        }
        Some(ms) => format!(
            "its head is {} ms old, within max-ref-age-ms {} ({from})",
            p.now_ms.saturating_sub(ms),
            age_limit_text(limit)
        ),
        None => format!("within max-ref-age-ms {} ({from})", age_limit_text(limit)),
    }
}

/// Why ref `name` goes.
pub fn ref_removed(
    name: &str,
    removal: RefRemoval,
    snapshot_id: i64,
    retention: Option<&Retention>,
) -> String {
    match removal {
        RefRemoval::Dangling => format!("its snapshot {snapshot_id} does not exist"),
        RefRemoval::AgedOut {
            age_ms,
            max_ref_age_ms,
        } => {
            let from = retention.map_or(String::new(), |p| {
                format!(" ({})", p.max_ref_age_ms(name).1)
            });
            format!("its head is {age_ms} ms old, over max-ref-age-ms {max_ref_age_ms}{from}")
        }
    }
}

/// The policy rows of EXPLAIN: `(id, value, source, meaning)` of each table-level value.
pub fn policy_rows(retention: &Retention) -> Vec<(&'static str, String, String, &'static str)> {
    let p = &retention.policy;
    let s = &retention.sources;
    vec![
        (
            "min-snapshots-to-keep",
            p.min_snapshots_to_keep.to_string(),
            s.min_snapshots_to_keep.to_string(),
            "each branch without its own value keeps at least this many snapshots",
        ),
        (
            "max-snapshot-age-ms",
            age_limit_text(p.max_snapshot_age_ms),
            s.max_snapshot_age_ms.to_string(),
            "snapshots younger than this are kept (on a branch without its own value, or on none)",
        ),
        (
            "max-ref-age-ms",
            age_limit_text(p.max_ref_age_ms),
            s.max_ref_age_ms.to_string(),
            "a branch or tag (never main) whose head is older than this is removed",
        ),
    ]
}

/// When the call gave `retain_last` without `retention_period` and the age limit kept snapshots
/// that `retain_last` alone would have let go: a warning saying so and what to add.
pub fn age_kept_warning(plan: &ExpiryPlan) -> Option<String> {
    let retention = plan.retention.as_ref()?;
    let retain_last = retention.retain_last_alone?;
    let by_age_only = plan
        .decision
        .snapshots
        .iter()
        .filter(|v| match &v.fate {
            SnapshotFate::Kept(reasons) => reasons.iter().all(|r| {
                matches!(
                    r,
                    KeepReason::BranchYoung(_) | KeepReason::UnreferencedYoung
                )
            }),
            SnapshotFate::Expired(_) => false,
        })
        .count();
    if by_age_only == 0 {
        return None;
    }
    Some(format!(
        "{by_age_only} snapshot(s) beyond retain_last = {retain_last} are kept because they are \
         younger than max-snapshot-age-ms {} ({}); add retention_period (e.g. \
         retention_period = '0s') to let retain_last alone decide",
        age_limit_text(retention.policy.max_snapshot_age_ms),
        retention.sources.max_snapshot_age_ms
    ))
}

/// `bytes` as people read a size: `512 B`, `1.5 KiB`, `3.2 GiB`.
pub fn size_text(bytes: i64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64;
    let mut unit = "B";
    for u in UNITS {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = u;
    }
    format!("{value:.1} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::maintain::expire::retention::{PolicySources, TablePolicy};

    fn retention(retain_last_alone: Option<i32>) -> Retention {
        Retention {
            policy: TablePolicy {
                min_snapshots_to_keep: 3,
                ..TablePolicy::default()
            },
            sources: PolicySources::default(),
            refs: Vec::new(),
            now_ms: 1_000_000,
            retain_last_alone,
        }
    }

    #[test]
    fn reasons_name_the_number_and_its_source() {
        let p = retention(None);
        assert_eq!(
            keep_reason(&KeepReason::BranchYoung("main".into()), Some(&p)),
            "within max-snapshot-age-ms 432000000 ms (5days) of branch 'main' (default of \
             setting iceberg_expire_default_max_snapshot_age_ms)"
        );
        assert_eq!(
            keep_reason(&KeepReason::BranchMinKeep("main".into()), Some(&p)),
            "within min-snapshots-to-keep 3 of branch 'main' (default of setting \
             iceberg_expire_default_min_snapshots_to_keep)"
        );
        assert_eq!(
            ref_kept("t1", Some(0), Some(&p)),
            "no max-ref-age-ms limits it (default of setting iceberg_expire_default_max_ref_age_ms: \
             refs are kept forever)"
        );
        let mut limited = p.clone();
        limited.policy.max_ref_age_ms = 2_000_000;
        assert_eq!(
            ref_kept("t1", Some(400_000), Some(&limited)),
            "its head is 600000 ms old, within max-ref-age-ms 2000000 ms (33m 20s) (default of \
             setting iceberg_expire_default_max_ref_age_ms)"
        );
    }

    #[test]
    fn sizes_read_as_people_read_them() {
        assert_eq!(size_text(0), "0 B");
        assert_eq!(size_text(1023), "1023 B");
        assert_eq!(size_text(1536), "1.5 KiB");
        assert_eq!(size_text(5 * 1024 * 1024 * 1024), "5.0 GiB");
        assert_eq!(size_text(i64::MAX), "8192.0 PiB");
    }
}
