//! The typed forms of snapshot and ref management: the six procedures
//! (`rollback_to_snapshot`, `rollback_to_timestamp`, `set_current_snapshot`, `fast_forward`,
//! `cherrypick_snapshot`, `publish_changes`) and the DDL statements (`CREATE/REPLACE/DROP
//! BRANCH|TAG`, `SET/UNSET TBLPROPERTIES`), after binding. No I/O here.

use crate::error::{Error, Result};

/// One of the snapshot-management procedures, bound.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SnapshotProcedure {
    /// `rollback_to_snapshot(snapshot_id)`: `main` back to an ancestor of the current snapshot.
    RollbackToSnapshot { snapshot_id: i64 },
    /// `rollback_to_timestamp(timestamp)`: `main` back to the latest ancestor strictly older than
    /// `timestamp_ms`.
    RollbackToTimestamp { timestamp_ms: i64 },
    /// `set_current_snapshot(snapshot_id = N | ref = 'name')`: `main` to any snapshot.
    SetCurrentSnapshot(SnapshotSelector),
    /// `fast_forward(branch, to)`: `branch` to the head of ref `to`, which must descend from it.
    FastForward { branch: String, to: String },
    /// `cherrypick_snapshot(snapshot_id)`: re-apply a snapshot's changes on `main`.
    Cherrypick { snapshot_id: i64 },
    /// `publish_changes(wap_id)`: cherry-pick the snapshot staged with summary `wap.id = wap_id`.
    PublishChanges { wap_id: String },
}

impl SnapshotProcedure {
    /// The procedure's SQL name.
    pub fn procedure_name(&self) -> &'static str {
        match self {
            SnapshotProcedure::RollbackToSnapshot { .. } => ROLLBACK_TO_SNAPSHOT,
            SnapshotProcedure::RollbackToTimestamp { .. } => ROLLBACK_TO_TIMESTAMP,
            SnapshotProcedure::SetCurrentSnapshot(_) => SET_CURRENT_SNAPSHOT,
            SnapshotProcedure::FastForward { .. } => FAST_FORWARD,
            SnapshotProcedure::Cherrypick { .. } => CHERRYPICK_SNAPSHOT,
            SnapshotProcedure::PublishChanges { .. } => PUBLISH_CHANGES,
        }
    }

    /// The checks on the whole call shared by the SQL binder and the typed API: names not empty.
    pub fn validate(&self) -> Result<()> {
        let name = self.procedure_name();
        let empty = |what: &str| {
            Err(Error::bad_arguments(format!(
                "{name}: '{what}' cannot be empty"
            )))
        };
        match self {
            SnapshotProcedure::SetCurrentSnapshot(SnapshotSelector::Ref(r)) if r.is_empty() => {
                empty("ref")
            }
            SnapshotProcedure::FastForward { branch, .. } if branch.is_empty() => empty("branch"),
            SnapshotProcedure::FastForward { to, .. } if to.is_empty() => empty("to"),
            SnapshotProcedure::PublishChanges { wap_id } if wap_id.is_empty() => empty("wap_id"),
            _ => Ok(()),
        }
    }
}

pub const ROLLBACK_TO_SNAPSHOT: &str = "rollback_to_snapshot";
pub const ROLLBACK_TO_TIMESTAMP: &str = "rollback_to_timestamp";
pub const SET_CURRENT_SNAPSHOT: &str = "set_current_snapshot";
pub const FAST_FORWARD: &str = "fast_forward";
pub const CHERRYPICK_SNAPSHOT: &str = "cherrypick_snapshot";
pub const PUBLISH_CHANGES: &str = "publish_changes";

/// Which snapshot `set_current_snapshot` makes current.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SnapshotSelector {
    Id(i64),
    /// The head of this branch or tag.
    Ref(String),
}

/// A branch's or tag's kind, as the DDL names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RefType {
    Branch,
    Tag,
}

impl RefType {
    /// `BRANCH` or `TAG`.
    pub fn keyword(self) -> &'static str {
        match self {
            RefType::Branch => "BRANCH",
            RefType::Tag => "TAG",
        }
    }
}

/// How a `CREATE`/`REPLACE` of a ref treats an existing one (Spark's three forms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CreateMode {
    /// `CREATE`: the name must be free.
    Create,
    /// `CREATE ... IF NOT EXISTS`: an existing ref is left as it is.
    CreateIfNotExists,
    /// `REPLACE`: the ref must exist.
    Replace,
    /// `CREATE OR REPLACE`: created when missing, replaced otherwise.
    CreateOrReplace,
}

/// The retention clauses of `CREATE/REPLACE BRANCH|TAG` (all optional: absent keeps what a
/// replaced ref had, or leaves a new one to the table's defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RefRetention {
    /// `RETAIN n unit`: `max-ref-age-ms`.
    pub max_ref_age_ms: Option<i64>,
    /// `WITH SNAPSHOT RETENTION n SNAPSHOTS`: `min-snapshots-to-keep` (branches only).
    pub min_snapshots_to_keep: Option<i32>,
    /// `WITH SNAPSHOT RETENTION n unit`: `max-snapshot-age-ms` (branches only).
    pub max_snapshot_age_ms: Option<i64>,
}

/// One DDL statement on a table's refs or properties, bound.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TableChange {
    /// `CREATE [OR REPLACE] BRANCH|TAG [IF NOT EXISTS] name`, `REPLACE BRANCH|TAG name`.
    PutRef {
        kind: RefType,
        mode: CreateMode,
        name: String,
        /// `AS OF VERSION n`; `None`: the current snapshot.
        snapshot_id: Option<i64>,
        retention: RefRetention,
    },
    /// `DROP BRANCH|TAG [IF EXISTS] name`.
    DropRef {
        kind: RefType,
        name: String,
        if_exists: bool,
    },
    /// `SET TBLPROPERTIES ('k' = 'v', ...)`.
    SetProperties(Vec<(String, String)>),
    /// `UNSET TBLPROPERTIES [IF EXISTS] ('k', ...)`.
    UnsetProperties { keys: Vec<String>, if_exists: bool },
}

impl TableChange {
    /// What the statement is called in messages (`CREATE BRANCH`, `SET TBLPROPERTIES`, ...).
    pub fn statement_name(&self) -> String {
        match self {
            TableChange::PutRef { kind, mode, .. } => {
                let verb = match mode {
                    CreateMode::Create | CreateMode::CreateIfNotExists => "CREATE",
                    CreateMode::Replace => "REPLACE",
                    CreateMode::CreateOrReplace => "CREATE OR REPLACE",
                };
                format!("{verb} {}", kind.keyword())
            }
            TableChange::DropRef { kind, .. } => format!("DROP {}", kind.keyword()),
            TableChange::SetProperties(_) => "SET TBLPROPERTIES".into(),
            TableChange::UnsetProperties { .. } => "UNSET TBLPROPERTIES".into(),
        }
    }

    /// Checks on the statement alone (shared by the binder and the typed API): names not empty,
    /// tags carry no snapshot retention, retention values not negative (counts at least 1),
    /// property lists not empty and without repeated keys.
    pub fn validate(&self) -> Result<()> {
        let statement = self.statement_name();
        match self {
            TableChange::PutRef {
                kind,
                name,
                retention,
                ..
            } => {
                check_ref_name(&statement, name)?;
                if *kind == RefType::Tag
                    && (retention.min_snapshots_to_keep.is_some()
                        || retention.max_snapshot_age_ms.is_some())
                {
                    return Err(Error::bad_arguments(format!(
                        "{statement} {name}: a tag has no snapshot retention (only RETAIN)"
                    )));
                }
                if retention.min_snapshots_to_keep.is_some_and(|n| n < 1) {
                    return Err(Error::bad_arguments(format!(
                        "{statement} {name}: the number of snapshots to keep must be at least 1"
                    )));
                }
                let negative = |v: Option<i64>| v.is_some_and(|v| v < 0);
                if negative(retention.max_ref_age_ms) || negative(retention.max_snapshot_age_ms) {
                    return Err(Error::bad_arguments(format!(
                        "{statement} {name}: a retention age cannot be negative"
                    )));
                }
                Ok(())
            }
            TableChange::DropRef { name, .. } => check_ref_name(&statement, name),
            TableChange::SetProperties(pairs) => {
                check_keys(&statement, pairs.iter().map(|(k, _)| k.as_str()))
            }
            TableChange::UnsetProperties { keys, .. } => {
                check_keys(&statement, keys.iter().map(String::as_str))
            }
        }
    }
}

fn check_ref_name(statement: &str, name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::bad_arguments(format!(
            "{statement}: the name cannot be empty"
        )));
    }
    Ok(())
}

fn check_keys<'a>(statement: &str, keys: impl Iterator<Item = &'a str>) -> Result<()> {
    let mut seen = std::collections::BTreeSet::new();
    for key in keys {
        if key.is_empty() {
            return Err(Error::bad_arguments(format!(
                "{statement}: a property key cannot be empty"
            )));
        }
        if !seen.insert(key) {
            return Err(Error::bad_arguments(format!(
                "{statement}: property '{key}' is given twice"
            )));
        }
    }
    if seen.is_empty() {
        return Err(Error::bad_arguments(format!(
            "{statement}: no properties given"
        )));
    }
    Ok(())
}

/// A `RETAIN`/`WITH SNAPSHOT RETENTION` amount in milliseconds: `n` of `DAYS`, `HOURS` or
/// `MINUTES`; overflow is `BAD_ARGUMENTS`.
pub fn retention_ms(amount: u64, unit: TimeUnit) -> Result<i64> {
    let per = match unit {
        TimeUnit::Days => 86_400_000,
        TimeUnit::Hours => 3_600_000,
        TimeUnit::Minutes => 60_000,
    };
    i64::try_from(amount)
        .ok()
        .and_then(|n| n.checked_mul(per))
        .ok_or_else(|| Error::bad_arguments(format!("Retention of {amount} {unit:?} is too large")))
}

/// The units of `RETAIN n unit` (Spark's `timeUnit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    Days,
    Hours,
    Minutes,
}

impl TimeUnit {
    pub fn keyword(self) -> &'static str {
        match self {
            TimeUnit::Days => "DAYS",
            TimeUnit::Hours => "HOURS",
            TimeUnit::Minutes => "MINUTES",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retention_units_and_overflow() {
        assert_eq!(retention_ms(3, TimeUnit::Days), Ok(259_200_000));
        assert_eq!(retention_ms(2, TimeUnit::Hours), Ok(7_200_000));
        assert_eq!(retention_ms(5, TimeUnit::Minutes), Ok(300_000));
        assert!(retention_ms(u64::MAX, TimeUnit::Minutes).is_err());
        assert!(retention_ms(i64::MAX as u64, TimeUnit::Days).is_err());
    }

    #[test]
    fn change_checks() {
        let tag = TableChange::PutRef {
            kind: RefType::Tag,
            mode: CreateMode::Create,
            name: "v1".into(),
            snapshot_id: None,
            retention: RefRetention {
                min_snapshots_to_keep: Some(2),
                ..Default::default()
            },
        };
        assert!(
            tag.validate()
                .unwrap_err()
                .message()
                .contains("no snapshot retention")
        );
        let unset = TableChange::UnsetProperties {
            keys: vec!["a".into(), "a".into()],
            if_exists: false,
        };
        assert!(unset.validate().unwrap_err().message().contains("twice"));
        assert!(TableChange::SetProperties(vec![]).validate().is_err());
        let drop = TableChange::DropRef {
            kind: RefType::Branch,
            name: String::new(),
            if_exists: true,
        };
        assert!(drop.validate().is_err());
        assert!(
            SnapshotProcedure::PublishChanges { wap_id: "".into() }
                .validate()
                .is_err()
        );
    }
}
