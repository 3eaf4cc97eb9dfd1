//! The typed Rust API beside SQL: open a [`Table`] from a location and [`StorageOptions`], then
//! run a procedure through its builder ([`Table::expire_snapshots`],
//! [`Table::remove_orphan_files`], [`Table::rewrite_data_files`], [`Table::rewrite_manifests`];
//! the snapshot procedures and the branch, tag and property statements are in
//! [`super::api_snapshots`]).
//!
//! A builder fills exactly the typed options the SQL binder fills ([`ExpireOptions`],
//! [`OrphanOptions`], [`CompactOptions`], [`RewriteManifestsOptions`]), validates them with the
//! same checks ([`ExpireOptions::validate`], [`OrphanOptions::validate`], [`normalize_location`],
//! …) and runs the same path as `ALTER TABLE … EXECUTE` does (`super::procedures::run` of the
//! procedure's shape: the single-table check, then its plan and its explain, count or execute,
//! within the progress scope).
//! The ClickHouse gate settings (`allow_experimental_expire_snapshots`, …) are SQL session
//! switches and do not apply here: calling the method is the opt-in. Privileges: a table opened
//! through a session ([`super::Session::table`]) carries the session's user, and every run checks
//! the privilege its statement would need (`ALTER EXECUTE`, `ALTER SETTINGS` for properties, any
//! privilege to read metadata) with the check statements go through; a `Table` opened directly
//! ([`Table::open`], [`Table::with_io`], [`Table::open_catalog`]) has no user: it is the embedder
//! acting as itself.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use super::access::{Authorizer, GrantObject, Need, Privilege};
use super::api_procedures::{
    ExpireSnapshots, RemoveOrphanFiles, RewriteDataFiles, RewriteManifests,
};
use super::table::{local_storage, remote_storage};
use crate::clock::{Clock, SystemClock};
use crate::error::{Error, Result};
use crate::iceberg::locate::MetadataSettings;
use crate::io::{FileIO, StorageOptions, refuse_url_credentials};
use crate::literal::Literal;
use crate::maintain::target::{BeforeCommit, MaintenanceTarget, TableSource};
use crate::progress::{CancelToken, Progress, ProgressSink};
use crate::settings::Settings;
use crate::sql::timestamp::parse_timestamp_noted;

/// An Iceberg table opened for maintenance: where it lives and the storage serving it.
///
/// Opening does no I/O; each procedure run finds the current metadata afresh.
#[derive(Debug, Clone)]
pub struct Table {
    io: FileIO,
    location: String,
    name: String,
    metadata_settings: MetadataSettings,
    settings: Settings,
    clock: Arc<dyn Clock>,
    /// A path table, or a catalog table ([`Table::open_catalog`]).
    source: TableSource,
    before_commit: Option<BeforeCommit>,
    /// The session user whose privileges each run checks (a table from `Session::table`);
    /// `None`: the embedder acting as itself.
    guard: Option<TableGuard>,
}

/// A session user's privileges on one table, checked by every run of a [`Table`] that
/// `Session::table` opened, with the check SQL statements go through.
#[derive(Clone)]
pub(super) struct TableGuard {
    pub(super) authorizer: Arc<dyn Authorizer>,
    pub(super) user: String,
    pub(super) object: GrantObject,
}

impl std::fmt::Debug for TableGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableGuard")
            .field("user", &self.user)
            .field("object", &self.object)
            .finish_non_exhaustive()
    }
}

impl TableGuard {
    /// `privilege` on the table, as the statement doing the same would need it.
    fn needs(&self, privilege: Privilege) -> Result<()> {
        let need = Need::Grant(privilege, self.object.clone());
        super::access::check(self.authorizer.as_ref(), &self.user, &[need])
    }

    /// Any privilege on the table: what reading its metadata needs.
    fn sees(&self) -> Result<()> {
        let need = Need::See(Privilege::ShowTables, self.object.clone());
        super::access::check(self.authorizer.as_ref(), &self.user, &[need])
    }
}

impl Table {
    /// A table of a catalog, named as SQL names it: the `DataLakeCatalog` URL, the database
    /// settings as `(name, value)` pairs (`catalog_type`, `warehouse`, `catalog_credential`,
    /// `vended_credentials`, `storage_endpoint`, … — checked as `CREATE DATABASE` checks them) and
    /// the table as `namespace.table`. Loads the table once (its storage and location); every run
    /// then loads from and commits through the catalog, as `ALTER TABLE lake.\`ns.t\` EXECUTE` does.
    ///
    /// ```no_run
    /// # async fn demo() -> icetrim::Result<()> {
    /// let table = icetrim::Table::open_catalog(
    ///     "http://127.0.0.1:8181/v1",
    ///     &[("catalog_type", "rest"), ("warehouse", "wh")],
    ///     "ns.events",
    /// )
    /// .await?;
    /// let expired = table.expire_snapshots().retain_last(10).execute().await?;
    /// # let _ = expired;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn open_catalog(url: &str, settings: &[(&str, &str)], table: &str) -> Result<Table> {
        let mut normalized = std::collections::BTreeMap::new();
        for (name, value) in settings {
            normalized.insert(
                name.to_string(),
                crate::catalog::normalize_setting(name, value)?,
            );
        }
        let def = super::registry::DatabaseDef {
            name: "catalog".into(),
            engine: crate::catalog::ENGINE.into(),
            args: vec![url.to_string()],
            setting_order: settings.iter().map(|(k, _)| k.to_string()).collect(),
            settings: normalized,
        };
        let target = super::catalog_db::open_table(
            &super::runtime::Runtime::default(),
            &Settings::new(),
            &def,
            table,
        )
        .await?;
        Ok(Table {
            io: target.io,
            location: target.location,
            name: table.to_string(),
            metadata_settings: MetadataSettings::default(),
            settings: Settings::new(),
            clock: Arc::new(SystemClock),
            source: target.source,
            before_commit: None,
            guard: None,
        })
    }

    /// The table at `location`: an absolute local path or `file://` URI (served by the local file
    /// system), or an object-store URI (`s3://`, `abfss://`, `az://`, `gs://`, …) reached with
    /// `options` (the option set the `IcebergS3` / `IcebergAzure` engines build: an S3 server
    /// other than AWS is `options.s3.endpoint`). A local path is normalised as `IcebergLocal`
    /// normalises it (`..` and relative paths are refused); credentials inside a URI are refused,
    /// as the SQL engines refuse them.
    pub fn open(location: impl AsRef<str>, options: StorageOptions) -> Result<Table> {
        let location = location.as_ref();
        let lower = location.to_ascii_lowercase();
        let (location, io) = if location.starts_with('/') || lower.starts_with("file:") {
            local_storage(location, None)?
        } else if location.contains("://") {
            refuse_url_credentials("Table::open", location)?;
            remote_storage(location.to_string(), options, None, None)
        } else {
            return Err(Error::bad_arguments(format!(
                "the table location '{location}' must be an absolute path or a URI"
            )));
        };
        Ok(Table::with_io(location, io))
    }

    /// The table at `location` served by `io` (an embedder's own object store, wrapped with
    /// [`FileIO`]); `location` is taken as `io`'s URI, unchanged.
    pub fn with_io(location: impl Into<String>, io: FileIO) -> Table {
        let location = location.into();
        Table {
            io,
            name: location.clone(),
            location,
            metadata_settings: MetadataSettings::default(),
            settings: Settings::new(),
            clock: Arc::new(SystemClock),
            source: TableSource::Path,
            before_commit: None,
            guard: None,
        }
    }

    /// A table a session opened ([`super::Session::table`]): its target's storage and location,
    /// the session's settings and clock, and `guard`, the session user's privileges.
    pub(super) fn bound(
        target: MaintenanceTarget,
        clock: Arc<dyn Clock>,
        guard: TableGuard,
    ) -> Table {
        Table {
            io: target.io,
            location: target.location,
            name: target.table_name,
            metadata_settings: target.metadata_settings,
            settings: target.settings,
            clock,
            source: target.source,
            before_commit: target.before_commit,
            guard: Some(guard),
        }
    }

    /// The name messages give the table (default: its location).
    pub fn name(mut self, name: impl Into<String>) -> Table {
        self.name = name.into();
        self
    }

    /// How the current metadata file is found (the table settings `iceberg_metadata_file_path`,
    /// `iceberg_metadata_table_uuid`, … of the SQL engines).
    pub fn metadata_settings(mut self, metadata_settings: MetadataSettings) -> Table {
        self.metadata_settings = metadata_settings;
        self
    }

    /// The session settings every run starts from (defaults: [`Settings::new`]).
    pub fn settings(mut self, settings: Settings) -> Table {
        self.settings = settings;
        self
    }

    /// The clock "now" is read from (default: the system clock).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Table {
        self.clock = clock;
        self
    }

    /// Code run right before every commit attempt of every procedure run on this table: tests put
    /// another writer's commit between a plan and its commit with it. Not part of the API.
    #[doc(hidden)]
    pub fn before_commit(mut self, hook: BeforeCommit) -> Table {
        self.before_commit = Some(hook);
        self
    }

    /// The table location, as opened (a normalised path, or the URI).
    pub fn location(&self) -> &str {
        &self.location
    }

    /// `expire_snapshots`: configure, then [`ExpireSnapshots::execute`].
    pub fn expire_snapshots(&self) -> ExpireSnapshots<'_> {
        ExpireSnapshots::new(self)
    }

    /// `rewrite_manifests`: configure, then [`RewriteManifests::execute`].
    pub fn rewrite_manifests(&self) -> RewriteManifests<'_> {
        RewriteManifests::new(self)
    }

    /// `rewrite_data_files` (compaction): configure, then [`RewriteDataFiles::execute`].
    /// [`RewriteDataFiles::optimize`] gives `OPTIMIZE TABLE`'s options.
    pub fn rewrite_data_files(&self) -> RewriteDataFiles<'_> {
        RewriteDataFiles::new(self)
    }

    /// `remove_orphan_files`: configure, then [`RemoveOrphanFiles::execute`].
    pub fn remove_orphan_files(&self) -> RemoveOrphanFiles<'_> {
        RemoveOrphanFiles::new(self)
    }

    /// The table's name in messages (its location unless [`Table::name`] set one).
    #[cfg(feature = "datafusion")]
    pub(super) fn table_name(&self) -> &str {
        &self.name
    }

    /// The target a read of this table's metadata uses: the table's settings, no progress sink.
    #[cfg(feature = "datafusion")]
    pub(super) fn read_target(&self) -> Result<MaintenanceTarget> {
        if let Some(guard) = &self.guard {
            guard.sees()?;
        }
        Run::new(self).unchecked_target()
    }
}

/// A point in time given to a builder: Unix milliseconds, a [`SystemTime`], or text read as SQL
/// reads it (`'2024-06-01 12:00:00'`, in the run's time zone: [`ExpireSnapshots::time_zone`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Timestamp {
    /// Milliseconds since the Unix epoch.
    Millis(i64),
    /// Text, parsed as the SQL arguments are.
    Text(String),
}

impl From<SystemTime> for Timestamp {
    fn from(time: SystemTime) -> Self {
        let ms = match time.duration_since(UNIX_EPOCH) {
            Ok(after) => i64::try_from(after.as_millis()).unwrap_or(i64::MAX),
            Err(before) => i64::try_from(before.duration().as_millis()).map_or(i64::MIN, |ms| -ms),
        };
        Timestamp::Millis(ms)
    }
}

impl From<&str> for Timestamp {
    fn from(text: &str) -> Self {
        Timestamp::Text(text.to_string())
    }
}

impl From<String> for Timestamp {
    fn from(text: String) -> Self {
        Timestamp::Text(text)
    }
}

/// What every run carries: the table, its settings for this run, progress and cancellation.
#[derive(Clone)]
pub(super) struct Run<'t> {
    table: &'t Table,
    settings: Settings,
    /// The first bad setting, reported by `execute`.
    setting_error: Option<Error>,
    pub(super) sink: Option<ProgressSink>,
    pub(super) cancel: Option<CancelToken>,
}

impl<'t> Run<'t> {
    pub(super) fn new(table: &'t Table) -> Self {
        Run {
            table,
            settings: table.settings.clone(),
            setting_error: None,
            sink: None,
            cancel: None,
        }
    }

    pub(super) fn set(&mut self, name: &str, value: Literal) {
        if let Err(e) = self.settings.set(name, &value)
            && self.setting_error.is_none()
        {
            self.setting_error = Some(e);
        }
    }

    /// The target of a run that changes the table (`ALTER EXECUTE`'s privilege when the table
    /// is a session's), with "now" read once for the whole run (as a statement reads it).
    pub(super) fn target(&self) -> Result<MaintenanceTarget> {
        self.target_needing(Privilege::AlterExecute)
    }

    /// [`Self::target`], for a run that needs `privilege` (as its statement would).
    pub(super) fn target_needing(&self, privilege: Privilege) -> Result<MaintenanceTarget> {
        if let Some(guard) = &self.table.guard {
            guard.needs(privilege)?;
        }
        self.unchecked_target()
    }

    fn unchecked_target(&self) -> Result<MaintenanceTarget> {
        if let Some(e) = &self.setting_error {
            return Err(e.clone());
        }
        let table = self.table;
        Ok(MaintenanceTarget {
            source: table.source.clone(),
            io: table.io.clone(),
            location: table.location.clone(),
            metadata_settings: table.metadata_settings.clone(),
            table_name: table.name.clone(),
            settings: self.settings.clone(),
            now_ms: table.clock.now_ms(),
            progress: Progress::new(self.sink.clone(), self.cancel.clone()),
            before_commit: table.before_commit.clone(),
        })
    }

    /// `at` in Unix ms; a text timestamp's DST note goes to `notes`, named as SQL names it.
    pub(super) fn millis(
        &self,
        name: &str,
        at: &Timestamp,
        notes: &mut Vec<String>,
    ) -> Result<i64> {
        match at {
            Timestamp::Millis(ms) => Ok(*ms),
            Timestamp::Text(text) => {
                let (ms, note) = parse_timestamp_noted(text, &self.settings.session_time_zone())?;
                notes.extend(note.map(|note| format!("{name} {note}")));
                Ok(ms)
            }
        }
    }
}

/// The options every builder shares (progress, cancellation, settings).
macro_rules! run_options {
    () => {
        /// Report progress events to `sink` while running.
        pub fn progress(mut self, sink: ProgressSink) -> Self {
            self.run.sink = Some(sink);
            self
        }

        /// Stop when `token` is cancelled: before the procedure writes, the run returns
        /// `QUERY_WAS_CANCELLED` and changes nothing; after, deletes stop early (as in SQL).
        pub fn cancel_token(mut self, token: &CancelToken) -> Self {
            self.run.cancel = Some(token.clone());
            self
        }

        /// How many metadata files and manifests are read at once
        /// (`iceberg_metadata_read_concurrency`) and files deleted at once
        /// (`iceberg_delete_concurrency`); at least 1.
        pub fn concurrency(mut self, n: u64) -> Self {
            let n = Literal::Number(n.max(1).to_string());
            self.run.set("iceberg_metadata_read_concurrency", n.clone());
            self.run.set("iceberg_delete_concurrency", n);
            self
        }

        /// How often a commit that lost a race is retried (`iceberg_commit_max_attempts`).
        pub fn commit_attempts(mut self, n: u64) -> Self {
            self.run.set(
                "iceberg_commit_max_attempts",
                Literal::Number(n.to_string()),
            );
            self
        }

        /// The time zone text timestamps are read in and EXPLAIN prints in
        /// (`session_timezone`; an unknown zone fails the run).
        pub fn time_zone(mut self, zone: &str) -> Self {
            self.run
                .set("session_timezone", Literal::String(zone.to_string()));
            self
        }

        /// Set any session setting by name, as `SET name = value` would: an integer value is
        /// given as digits (`"4"`), any other value bare, without SQL quotes (`"UTC"`). Unknown
        /// names and bad values fail the run.
        pub fn setting(mut self, name: &str, value: &str) -> Self {
            let literal = if value.parse::<i128>().is_ok() {
                Literal::Number(value.to_string())
            } else {
                Literal::String(value.to_string())
            };
            self.run.set(name, literal);
            self
        }
    };
}
pub(super) use run_options;
