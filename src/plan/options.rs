//! The typed options of `expire_snapshots`, `remove_orphan_files` and `rewrite_manifests`, and
//! the [`ProcedureCall`] of every procedure, after binding and validation.
//!
//! Defaults that depend on settings or table properties are left as `None` here; the maintenance
//! code resolves them (expiry's policy precedence: settings < table properties < arguments;
//! `older_than`'s default from `iceberg_orphan_files_older_than_seconds`).

use crate::error::{Error, Result};

/// `expire_snapshots(...)`, validated.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExpireOptions {
    /// The fuse: snapshots with `timestamp-ms >= expire_before_ms` are kept.
    pub expire_before_ms: Option<i64>,
    /// `retention_period`: overrides the table-level max snapshot age (ms, non-negative).
    pub retention_period_ms: Option<i64>,
    /// `retain_last`: overrides the table-level min snapshots to keep (1..=i32::MAX).
    pub retain_last: Option<i32>,
    /// `snapshot_ids`: id mode (never combined with `retention_period` or `retain_last`).
    pub snapshot_ids: Option<Vec<i64>>,
    pub dry_run: bool,
    /// `clean_expired_metadata` (Apache Iceberg 1.10): also remove the partition specs and
    /// schemas no retained snapshot uses (never the current schema or the default spec).
    pub clean_expired_metadata: bool,
}

/// `remove_orphan_files(...)`, validated.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OrphanOptions {
    /// Files must be strictly older than this (Unix ms, not in the future). `None`: now minus the
    /// setting `iceberg_orphan_files_older_than_seconds`.
    pub older_than_ms: Option<i64>,
    /// Scan path relative to the table root: components joined by `/`, no leading or trailing `/`,
    /// no `.` components; `None` (or an empty string never occurs) means the whole table.
    pub location: Option<String>,
    pub dry_run: bool,
    /// `protect_other_tables`: when other tables' metadata lies under the location, keep their
    /// files (everything under their locations, everything any of their metadata files reaches)
    /// instead of refusing the statement.
    pub protect_other_tables: bool,
}

/// `rewrite_manifests(...)` and `OPTIMIZE TABLE t MANIFEST`, validated.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RewriteManifestsOptions {
    /// `spec_id`: only the manifests of this partition spec are rewritten.
    pub spec_id: Option<i32>,
    /// `target_manifest_size_bytes` (positive); `None`: the table property
    /// `commit.manifest.target-size-bytes`, else 8 MiB.
    pub target_manifest_size_bytes: Option<i64>,
    pub dry_run: bool,
    /// `OPTIMIZE TABLE t MANIFEST`: act only when the current snapshot has more manifests than
    /// this (the setting `iceberg_manifest_min_count_to_compact`); `None` for `rewrite_manifests`.
    pub min_manifest_count: Option<u64>,
}

impl RewriteManifestsOptions {
    /// The checks shared by the SQL binder and the typed API: a positive target size.
    pub fn validate(&self) -> Result<()> {
        if self.target_manifest_size_bytes.is_some_and(|b| b <= 0) {
            return Err(Error::bad_arguments(
                "rewrite_manifests expects 'target_manifest_size_bytes' to be positive",
            ));
        }
        if self.spec_id.is_some_and(|id| id < 0) {
            return Err(Error::bad_arguments(
                "rewrite_manifests expects 'spec_id' to be a non-negative integer",
            ));
        }
        Ok(())
    }
}

/// A bound procedure call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcedureCall {
    Expire(ExpireOptions),
    Orphans(OrphanOptions),
    /// One of the snapshot-management procedures (`rollback_to_snapshot`, ...).
    Snapshots(super::snapshots::SnapshotProcedure),
    RewriteManifests(RewriteManifestsOptions),
    /// `rewrite_data_files(...)` and `OPTIMIZE TABLE`.
    Compact(crate::plan::CompactOptions),
}

impl ProcedureCall {
    /// The procedure's SQL name.
    pub fn procedure_name(&self) -> &'static str {
        match self {
            ProcedureCall::Expire(_) => "expire_snapshots",
            ProcedureCall::Orphans(_) => "remove_orphan_files",
            ProcedureCall::Snapshots(call) => call.procedure_name(),
            ProcedureCall::RewriteManifests(_) => "rewrite_manifests",
            ProcedureCall::Compact(_) => "rewrite_data_files",
        }
    }

    /// Whether the call only reports what it would do.
    pub fn dry_run(&self) -> bool {
        match self {
            ProcedureCall::Expire(options) => options.dry_run,
            ProcedureCall::Orphans(options) => options.dry_run,
            ProcedureCall::Snapshots(_) => false,
            ProcedureCall::RewriteManifests(options) => options.dry_run,
            ProcedureCall::Compact(options) => options.dry_run,
        }
    }
}

/// A scan location relative to the table root: `..` anywhere or a leading `/` is refused; empty and
/// `.` components (so `./`) are dropped; `None` when nothing remains (the whole table).
pub fn normalize_location(location: &str) -> Result<Option<String>> {
    let components: Vec<&str> = location.split('/').collect();
    if location.starts_with('/') || components.contains(&"..") {
        return Err(Error::bad_arguments(format!(
            "location must be a relative path under the table root, got '{location}'"
        )));
    }
    let kept: Vec<&str> = components
        .into_iter()
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    Ok((!kept.is_empty()).then(|| kept.join("/")))
}

/// `retain_last` as a count of snapshots: at least 1, at most `i32::MAX` (ClickHouse's range).
pub fn retain_last_count(count: i128) -> Result<i32> {
    if count <= 0 {
        return Err(Error::bad_arguments(
            "expire_snapshots expects 'retain_last' to be positive",
        ));
    }
    i32::try_from(count).map_err(|_| {
        Error::bad_arguments(format!(
            "expire_snapshots 'retain_last' is too large: {count}"
        ))
    })
}

/// `older_than` (Unix ms) must not be after `now_ms`: a future value would bypass the
/// in-progress-write safety window.
pub fn check_older_than(older_than_ms: i64, now_ms: i64) -> Result<()> {
    if older_than_ms > now_ms {
        return Err(Error::bad_arguments(
            "older_than must not be in the future; a future value would bypass the \
             in-progress-write safety window",
        ));
    }
    Ok(())
}

impl ExpireOptions {
    /// The checks on the whole call, shared by every way of building the options (the SQL binder,
    /// the typed API): `retain_last` in range, `retention_period` non-negative, and `snapshot_ids`
    /// never combined with `retention_period` or `retain_last`.
    pub fn validate(&self) -> Result<()> {
        if let Some(count) = self.retain_last {
            retain_last_count(count.into())?;
        }
        if self.retention_period_ms.is_some_and(|ms| ms < 0) {
            return Err(Error::bad_arguments(
                "expire_snapshots expects 'retention_period' to be non-negative",
            ));
        }
        if self.snapshot_ids.is_some()
            && (self.retention_period_ms.is_some() || self.retain_last.is_some())
        {
            return Err(Error::bad_arguments(
                "expire_snapshots argument 'snapshot_ids' cannot be combined with \
                 'retention_period' or 'retain_last'",
            ));
        }
        Ok(())
    }
}

impl OrphanOptions {
    /// The checks on the whole call, shared by every way of building the options: `older_than`
    /// not after `now_ms` (a future value would bypass the in-progress-write safety window), and
    /// `location` already in [`normalize_location`]'s form.
    pub fn validate(&self, now_ms: i64) -> Result<()> {
        if let Some(ms) = self.older_than_ms {
            check_older_than(ms, now_ms)?;
        }
        if let Some(location) = &self.location
            && normalize_location(location)?.as_deref() != Some(location.as_str())
        {
            return Err(Error::bad_arguments(format!(
                "location must be a normalised relative path under the table root, got \
                 '{location}'"
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expire_checks() {
        assert!(retain_last_count(0).is_err());
        assert!(retain_last_count(i128::from(i32::MAX) + 1).is_err());
        assert_eq!(retain_last_count(3), Ok(3));
        let bad = |o: ExpireOptions| o.validate().unwrap_err().message().to_string();
        assert!(
            bad(ExpireOptions {
                retain_last: Some(0),
                ..Default::default()
            })
            .contains("positive")
        );
        assert!(
            bad(ExpireOptions {
                retention_period_ms: Some(-1),
                ..Default::default()
            })
            .contains("non-negative")
        );
        assert!(
            bad(ExpireOptions {
                snapshot_ids: Some(vec![1]),
                retain_last: Some(1),
                ..Default::default()
            })
            .contains("cannot be combined")
        );
        assert_eq!(ExpireOptions::default().validate(), Ok(()));
    }

    #[test]
    fn orphan_checks() {
        let at = |ms| OrphanOptions {
            older_than_ms: Some(ms),
            ..Default::default()
        };
        assert_eq!(at(1000).validate(1000), Ok(()));
        assert!(at(1001).validate(1000).is_err());
        let located = |l: &str| OrphanOptions {
            location: Some(l.into()),
            ..Default::default()
        };
        assert_eq!(located("data/x").validate(0), Ok(()));
        assert!(located("./data/").validate(0).is_err());
        assert!(located("../x").validate(0).is_err());
    }
}
