//! The typed options of the two procedures, after binding and validation (SPEC §2–§4).
//!
//! Defaults that depend on settings or table properties are left as `None` here; the maintenance
//! code resolves them (SPEC §3 policy precedence, §4 `older_than` default).

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

/// A bound procedure call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcedureCall {
    Expire(ExpireOptions),
    Orphans(OrphanOptions),
}

impl ProcedureCall {
    /// The procedure's SQL name.
    pub fn procedure_name(&self) -> &'static str {
        match self {
            ProcedureCall::Expire(_) => "expire_snapshots",
            ProcedureCall::Orphans(_) => "remove_orphan_files",
        }
    }

    /// Whether the call only reports what it would do.
    pub fn dry_run(&self) -> bool {
        match self {
            ProcedureCall::Expire(options) => options.dry_run,
            ProcedureCall::Orphans(options) => options.dry_run,
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
