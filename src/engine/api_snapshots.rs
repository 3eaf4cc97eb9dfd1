//! The typed API of snapshot and ref management, beside [`super::api`]: each
//! method of [`Table`] builds exactly the typed form the SQL binder builds
//! ([`SnapshotProcedure`], [`TableChange`]), validated by the same checks, and runs it through the
//! same executor (`super::procedures::run` of `ManageSnapshots` / `ChangeTable`).
//!
//! ```no_run
//! # async fn demo(table: &icetrim::Table) -> icetrim::Result<()> {
//! use std::time::Duration;
//! table.create_branch("audit").retain(Duration::from_secs(7 * 86_400)).execute().await?;
//! table.fast_forward("main", "audit").execute().await?;
//! let rolled = table.rollback_to_snapshot(42).execute().await?;
//! println!("{:?}", rolled.metrics);
//! table.set_properties([("history.expire.min-snapshots-to-keep", "5")]).execute().await?;
//! # Ok(())
//! # }
//! ```

use std::time::Duration;

use super::access::Privilege;
use super::api::{Run, Table, Timestamp};
use super::procedures::run;
use crate::error::{Error, Result};
use crate::maintain::SnapshotOutcome;
use crate::maintain::shape;
use crate::plan::{
    CreateMode, RefRetention, RefType, SnapshotProcedure, SnapshotSelector, TableChange,
};

/// The procedure a [`ManageSnapshots`] builder runs, before its timestamp is read.
#[derive(Debug, Clone)]
enum Pending {
    Ready(SnapshotProcedure),
    RollbackToTimestamp(Timestamp),
}

/// A snapshot-management procedure, configured: [`execute`](Self::execute) or
/// [`explain`](Self::explain).
#[derive(Clone)]
#[must_use = "a builder does nothing until `execute` or `explain` is awaited"]
pub struct ManageSnapshots<'t> {
    run: Run<'t>,
    pending: Pending,
}

impl ManageSnapshots<'_> {
    /// The bound procedure (a timestamp given as text is read in the builder's time zone), with
    /// notes about it (a DST gap or fold).
    pub fn procedure(&self) -> Result<(SnapshotProcedure, Vec<String>)> {
        let mut notes = Vec::new();
        let call = match &self.pending {
            Pending::Ready(call) => call.clone(),
            Pending::RollbackToTimestamp(at) => SnapshotProcedure::RollbackToTimestamp {
                timestamp_ms: self.run.millis("timestamp", at, &mut notes)?,
            },
        };
        call.validate()?;
        Ok((call, notes))
    }

    /// Report progress to `sink`.
    pub fn progress(mut self, sink: crate::progress::ProgressSink) -> Self {
        self.run.sink = Some(sink);
        self
    }

    /// Cancel with `token`: before the commit, the statement fails with `QUERY_WAS_CANCELLED`
    /// having written nothing (a cherry-pick's manifests are removed); after it, the commit stands.
    pub fn cancel_token(mut self, token: &crate::progress::CancelToken) -> Self {
        self.run.cancel = Some(token.clone());
        self
    }

    /// At most `n` commit attempts (setting `iceberg_commit_max_attempts`).
    pub fn commit_attempts(mut self, n: u64) -> Self {
        self.run.set(
            "iceberg_commit_max_attempts",
            crate::literal::Literal::Number(n.to_string()),
        );
        self
    }

    /// The zone a timestamp given as text is read in (setting `session_timezone`).
    pub fn time_zone(mut self, zone: &str) -> Self {
        self.run.set(
            "session_timezone",
            crate::literal::Literal::String(zone.to_string()),
        );
        self
    }

    /// Run it: `metrics` holds `previous_snapshot_id` / `current_snapshot_id`.
    pub async fn execute(self) -> Result<SnapshotOutcome> {
        self.run_it(false).await
    }

    /// What it would change (`explain` rows); nothing is written.
    pub async fn explain(self) -> Result<SnapshotOutcome> {
        self.run_it(true).await
    }

    async fn run_it(self, explain: bool) -> Result<SnapshotOutcome> {
        let target = self.run.target()?;
        let (call, notes) = self.procedure()?;
        let mut outcome = run::<shape::ManageSnapshots>(&target, &call, explain).await?;
        outcome.warnings.splice(0..0, notes);
        Ok(outcome)
    }
}

/// A ref or property statement, configured: [`execute`](Self::execute) or
/// [`explain`](Self::explain). Options that do not apply to the statement (a snapshot retention
/// on a tag, `if_exists` on `CREATE`) make it fail with `BAD_ARGUMENTS`.
#[derive(Clone)]
#[must_use = "a builder does nothing until `execute` or `explain` is awaited"]
pub struct AlterRefs<'t> {
    run: Run<'t>,
    change: TableChange,
    misuse: Option<String>,
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl AlterRefs<'_> {
    fn misuse(&mut self, what: &str) {
        if self.misuse.is_none() {
            self.misuse = Some(format!(
                "{what} does not apply to {}",
                self.change.statement_name()
            ));
        }
    }

    fn retention(&mut self, what: &str, f: impl FnOnce(&mut RefRetention)) {
        match &mut self.change {
            TableChange::PutRef { retention, .. } => f(retention),
            _ => self.misuse(what),
        }
    }

    /// Cancel with `token` (see [`ManageSnapshots::cancel_token`]).
    pub fn cancel_token(mut self, token: &crate::progress::CancelToken) -> Self {
        self.run.cancel = Some(token.clone());
        self
    }

    /// `AS OF VERSION snapshot_id` (default: the current snapshot).
    pub fn as_of_version(mut self, snapshot_id: i64) -> Self {
        match &mut self.change {
            TableChange::PutRef {
                snapshot_id: at, ..
            } => *at = Some(snapshot_id),
            _ => self.misuse("as_of_version"),
        }
        self
    }

    /// `RETAIN`: the ref's `max-ref-age-ms`.
    pub fn retain(mut self, age: Duration) -> Self {
        self.retention("retain", |r| r.max_ref_age_ms = Some(millis(age)));
        self
    }

    /// `WITH SNAPSHOT RETENTION n SNAPSHOTS` (branches).
    pub fn min_snapshots_to_keep(mut self, n: u32) -> Self {
        let n = i32::try_from(n).unwrap_or(i32::MAX);
        self.retention("min_snapshots_to_keep", |r| {
            r.min_snapshots_to_keep = Some(n)
        });
        self
    }

    /// `WITH SNAPSHOT RETENTION ... n unit` (branches).
    pub fn max_snapshot_age(mut self, age: Duration) -> Self {
        self.retention("max_snapshot_age", |r| {
            r.max_snapshot_age_ms = Some(millis(age))
        });
        self
    }

    /// `CREATE ... IF NOT EXISTS`.
    pub fn if_not_exists(mut self) -> Self {
        match &mut self.change {
            TableChange::PutRef { mode, .. } if *mode == CreateMode::Create => {
                *mode = CreateMode::CreateIfNotExists
            }
            _ => self.misuse("if_not_exists"),
        }
        self
    }

    /// `CREATE OR REPLACE`.
    pub fn or_replace(mut self) -> Self {
        match &mut self.change {
            TableChange::PutRef { mode, .. } if *mode == CreateMode::Create => {
                *mode = CreateMode::CreateOrReplace
            }
            _ => self.misuse("or_replace"),
        }
        self
    }

    /// `DROP ... IF EXISTS`, `UNSET TBLPROPERTIES IF EXISTS`.
    pub fn if_exists(mut self) -> Self {
        match &mut self.change {
            TableChange::DropRef { if_exists, .. }
            | TableChange::UnsetProperties { if_exists, .. } => *if_exists = true,
            _ => self.misuse("if_exists"),
        }
        self
    }

    /// The statement, validated as the SQL binder validates it.
    pub fn change(&self) -> Result<TableChange> {
        if let Some(misuse) = &self.misuse {
            return Err(Error::bad_arguments(misuse.clone()));
        }
        self.change.validate()?;
        Ok(self.change.clone())
    }

    /// Run it.
    pub async fn execute(self) -> Result<SnapshotOutcome> {
        let target = self.run.target_needing(self.privilege())?;
        run::<shape::ChangeTable>(&target, &self.change()?, false).await
    }

    /// What it would change; nothing is written.
    pub async fn explain(self) -> Result<SnapshotOutcome> {
        let target = self.run.target_needing(self.privilege())?;
        run::<shape::ChangeTable>(&target, &self.change()?, true).await
    }

    /// What the statement would need: `ALTER SETTINGS` for properties, `ALTER EXECUTE` for refs.
    fn privilege(&self) -> Privilege {
        match self.change {
            TableChange::SetProperties(_) | TableChange::UnsetProperties { .. } => {
                Privilege::AlterSettings
            }
            _ => Privilege::AlterExecute,
        }
    }
}

impl Table {
    fn manage(&self, call: SnapshotProcedure) -> ManageSnapshots<'_> {
        ManageSnapshots {
            run: Run::new(self),
            pending: Pending::Ready(call),
        }
    }

    fn alter(&self, change: TableChange) -> AlterRefs<'_> {
        AlterRefs {
            run: Run::new(self),
            change,
            misuse: None,
        }
    }

    /// `rollback_to_snapshot(snapshot_id)`.
    pub fn rollback_to_snapshot(&self, snapshot_id: i64) -> ManageSnapshots<'_> {
        self.manage(SnapshotProcedure::RollbackToSnapshot { snapshot_id })
    }

    /// `rollback_to_timestamp(at)`: the latest ancestor of the current snapshot older than `at`.
    pub fn rollback_to_timestamp(&self, at: impl Into<Timestamp>) -> ManageSnapshots<'_> {
        ManageSnapshots {
            run: Run::new(self),
            pending: Pending::RollbackToTimestamp(at.into()),
        }
    }

    /// `set_current_snapshot(snapshot_id = N)`.
    pub fn set_current_snapshot(&self, snapshot_id: i64) -> ManageSnapshots<'_> {
        self.manage(SnapshotProcedure::SetCurrentSnapshot(SnapshotSelector::Id(
            snapshot_id,
        )))
    }

    /// `set_current_snapshot(ref = 'name')`.
    pub fn set_current_snapshot_to_ref(&self, name: impl Into<String>) -> ManageSnapshots<'_> {
        self.manage(SnapshotProcedure::SetCurrentSnapshot(
            SnapshotSelector::Ref(name.into()),
        ))
    }

    /// `fast_forward(branch, to)`.
    pub fn fast_forward(
        &self,
        branch: impl Into<String>,
        to: impl Into<String>,
    ) -> ManageSnapshots<'_> {
        self.manage(SnapshotProcedure::FastForward {
            branch: branch.into(),
            to: to.into(),
        })
    }

    /// `cherrypick_snapshot(snapshot_id)`.
    pub fn cherrypick_snapshot(&self, snapshot_id: i64) -> ManageSnapshots<'_> {
        self.manage(SnapshotProcedure::Cherrypick { snapshot_id })
    }

    /// `publish_changes(wap_id)`.
    pub fn publish_changes(&self, wap_id: impl Into<String>) -> ManageSnapshots<'_> {
        self.manage(SnapshotProcedure::PublishChanges {
            wap_id: wap_id.into(),
        })
    }

    fn put_ref(&self, kind: RefType, mode: CreateMode, name: String) -> AlterRefs<'_> {
        self.alter(TableChange::PutRef {
            kind,
            mode,
            name,
            snapshot_id: None,
            retention: RefRetention::default(),
        })
    }

    /// `CREATE BRANCH name` (`.or_replace()`, `.if_not_exists()`, `.as_of_version(id)`,
    /// retention).
    pub fn create_branch(&self, name: impl Into<String>) -> AlterRefs<'_> {
        self.put_ref(RefType::Branch, CreateMode::Create, name.into())
    }

    /// `CREATE TAG name`.
    pub fn create_tag(&self, name: impl Into<String>) -> AlterRefs<'_> {
        self.put_ref(RefType::Tag, CreateMode::Create, name.into())
    }

    /// `REPLACE BRANCH name`.
    pub fn replace_branch(&self, name: impl Into<String>) -> AlterRefs<'_> {
        self.put_ref(RefType::Branch, CreateMode::Replace, name.into())
    }

    /// `REPLACE TAG name`.
    pub fn replace_tag(&self, name: impl Into<String>) -> AlterRefs<'_> {
        self.put_ref(RefType::Tag, CreateMode::Replace, name.into())
    }

    /// `DROP BRANCH name` (`.if_exists()`).
    pub fn drop_branch(&self, name: impl Into<String>) -> AlterRefs<'_> {
        self.alter(TableChange::DropRef {
            kind: RefType::Branch,
            name: name.into(),
            if_exists: false,
        })
    }

    /// `DROP TAG name` (`.if_exists()`).
    pub fn drop_tag(&self, name: impl Into<String>) -> AlterRefs<'_> {
        self.alter(TableChange::DropRef {
            kind: RefType::Tag,
            name: name.into(),
            if_exists: false,
        })
    }

    /// `SET TBLPROPERTIES (...)`.
    pub fn set_properties<K: Into<String>, V: Into<String>>(
        &self,
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> AlterRefs<'_> {
        self.alter(TableChange::SetProperties(
            pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        ))
    }

    /// `UNSET TBLPROPERTIES (...)` (`.if_exists()`).
    pub fn unset_properties<K: Into<String>>(
        &self,
        keys: impl IntoIterator<Item = K>,
    ) -> AlterRefs<'_> {
        self.alter(TableChange::UnsetProperties {
            keys: keys.into_iter().map(Into::into).collect(),
            if_exists: false,
        })
    }
}
