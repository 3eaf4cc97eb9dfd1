//! The typed Rust API beside SQL: open a [`Table`] from a location and [`StorageOptions`], then
//! run a procedure through its builder ([`Table::expire_snapshots`],
//! [`Table::remove_orphan_files`], [`Table::rewrite_data_files`], [`Table::rewrite_manifests`];
//! the snapshot procedures and the branch, tag and property statements are in
//! [`super::api_snapshots`]).
//!
//! A builder fills exactly the typed options the SQL binder fills ([`ExpireOptions`],
//! [`OrphanOptions`], [`CompactOptions`], [`RewriteManifestsOptions`]), validates them with the
//! same checks ([`ExpireOptions::validate`], [`OrphanOptions::validate`], [`normalize_location`],
//! …) and runs the same executor as `ALTER TABLE … EXECUTE` does (`super::procedures::run_expire`,
//! `run_orphans`, `run_compact`, `run_rewrite_manifests`: the single-table check, then the
//! procedure's `execute`, within the progress scope).
//! The ClickHouse gate settings (`allow_experimental_expire_snapshots`, …) are SQL session
//! switches and do not apply here: calling the method is the opt-in.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::procedures::{run_compact, run_expire, run_orphans, run_rewrite_manifests};
use super::table::{local_storage, remote_storage};
use crate::clock::{Clock, SystemClock};
use crate::error::{Error, Result};
use crate::iceberg::locate::MetadataSettings;
use crate::io::{FileIO, StorageOptions, refuse_url_credentials};
use crate::literal::Literal;
use crate::maintain::target::{BeforeCommit, MaintenanceTarget, TableSource};
use crate::maintain::{CompactOutcome, ExpireOutcome, OrphanOutcome, RewriteManifestsOutcome};
use crate::plan::{
    CompactOptions, ExpireOptions, OrphanOptions, RewriteManifestsOptions, normalize_location,
    retain_last_count,
};
use crate::progress::{CancelToken, Progress, ProgressSink};
use crate::settings::Settings;
use crate::sql::parse_where;
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
            remote_storage(location.to_string(), options, None)
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
        ExpireSnapshots {
            run: Run::new(self),
            retention_period: None,
            retain_last: None,
            older_than: None,
            snapshot_ids: None,
            dry_run: false,
            clean_expired_metadata: false,
        }
    }

    /// `rewrite_manifests`: configure, then [`RewriteManifests::execute`].
    pub fn rewrite_manifests(&self) -> RewriteManifests<'_> {
        RewriteManifests {
            run: Run::new(self),
            options: RewriteManifestsOptions::default(),
        }
    }

    /// `rewrite_data_files` (compaction): configure, then [`RewriteDataFiles::execute`].
    /// [`RewriteDataFiles::optimize`] gives `OPTIMIZE TABLE`'s options.
    pub fn rewrite_data_files(&self) -> RewriteDataFiles<'_> {
        RewriteDataFiles {
            run: Run::new(self),
            options: CompactOptions::default(),
            filter: None,
        }
    }

    /// `remove_orphan_files`: configure, then [`RemoveOrphanFiles::execute`].
    pub fn remove_orphan_files(&self) -> RemoveOrphanFiles<'_> {
        RemoveOrphanFiles {
            run: Run::new(self),
            older_than: None,
            location: None,
            protect_other_tables: false,
            dry_run: false,
        }
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

    /// The target, with "now" read once for the whole run (as a statement reads it).
    pub(super) fn target(&self) -> Result<MaintenanceTarget> {
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

/// `expire_snapshots` on a [`Table`]: drops old snapshots from the metadata, then deletes
/// the files only they reached.
#[derive(Clone)]
#[must_use = "a builder does nothing until `execute` or `explain` is awaited"]
pub struct ExpireSnapshots<'t> {
    run: Run<'t>,
    retention_period: Option<Duration>,
    retain_last: Option<i128>,
    older_than: Option<Timestamp>,
    snapshot_ids: Option<Vec<i64>>,
    dry_run: bool,
    clean_expired_metadata: bool,
}

impl ExpireSnapshots<'_> {
    run_options!();

    /// Keep snapshots younger than this (overrides the table's `history.expire.max-snapshot-age-ms`).
    pub fn retention_period(mut self, period: Duration) -> Self {
        self.retention_period = Some(period);
        self
    }

    /// Keep at least this many snapshots of each branch (overrides
    /// `history.expire.min-snapshots-to-keep`); at least 1.
    pub fn retain_last(mut self, count: u32) -> Self {
        self.retain_last = Some(count.into());
        self
    }

    /// The fuse (`expire_before` in SQL): snapshots at or after this instant are kept.
    pub fn older_than(mut self, at: impl Into<Timestamp>) -> Self {
        self.older_than = Some(at.into());
        self
    }

    /// Expire exactly these snapshots (never combined with `retention_period` / `retain_last`).
    pub fn snapshot_ids(mut self, ids: impl IntoIterator<Item = i64>) -> Self {
        self.snapshot_ids = Some(ids.into_iter().collect());
        self
    }

    /// Only report what would be expired and deleted.
    pub fn dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }

    /// Also remove the partition specs and schemas no retained snapshot uses
    /// (`clean_expired_metadata` in SQL, Apache Iceberg 1.10); never the current schema or the
    /// default spec.
    pub fn clean_expired_metadata(mut self, clean: bool) -> Self {
        self.clean_expired_metadata = clean;
        self
    }

    /// The typed options this builder stands for, validated as the SQL binder validates them,
    /// and the notes on its arguments (a text timestamp in a DST gap or fold).
    pub fn options(&self) -> Result<(ExpireOptions, Vec<String>)> {
        let mut notes = Vec::new();
        let expire_before_ms = self
            .older_than
            .as_ref()
            .map(|at| self.run.millis("expire_before", at, &mut notes))
            .transpose()?;
        let retention_period_ms = self
            .retention_period
            .map(|period| {
                i64::try_from(period.as_millis()).map_err(|_| {
                    Error::bad_arguments(format!(
                        "expire_snapshots 'retention_period' is too large: {period:?}"
                    ))
                })
            })
            .transpose()?;
        let retain_last = self.retain_last.map(retain_last_count).transpose()?;
        let options = ExpireOptions {
            expire_before_ms,
            retention_period_ms,
            retain_last,
            snapshot_ids: self.snapshot_ids.clone(),
            dry_run: self.dry_run,
            clean_expired_metadata: self.clean_expired_metadata,
        };
        options.validate()?;
        Ok((options, notes))
    }

    /// Run it (or, with [`dry_run`](Self::dry_run), report what it would do).
    pub async fn execute(self) -> Result<ExpireOutcome> {
        self.run_it(false).await
    }

    /// The plan, as `EXPLAIN ALTER TABLE … EXECUTE expire_snapshots(…)` gives it
    /// ([`ExpireOutcome::explain`]); nothing changes.
    pub async fn explain(self) -> Result<ExpireOutcome> {
        self.run_it(true).await
    }

    async fn run_it(self, explain: bool) -> Result<ExpireOutcome> {
        let target = self.run.target()?;
        let (options, notes) = self.options()?;
        let mut outcome = run_expire(&target, &options, explain).await?;
        outcome.warnings.splice(0..0, notes);
        Ok(outcome)
    }
}

/// `remove_orphan_files` on a [`Table`]: deletes files under the table that no snapshot,
/// statistics entry or metadata file reaches.
#[derive(Clone)]
#[must_use = "a builder does nothing until `execute` or `explain` is awaited"]
pub struct RemoveOrphanFiles<'t> {
    run: Run<'t>,
    older_than: Option<Timestamp>,
    location: Option<String>,
    protect_other_tables: bool,
    dry_run: bool,
}

impl RemoveOrphanFiles<'_> {
    run_options!();

    /// Only files strictly older than this are removed; not in the future (default: now minus the
    /// setting `iceberg_orphan_files_older_than_seconds`, three days).
    pub fn older_than(mut self, at: impl Into<Timestamp>) -> Self {
        self.older_than = Some(at.into());
        self
    }

    /// Scan only this path, relative to the table root (`"data/"`); normalised as SQL normalises
    /// it, `..` and absolute paths refused.
    pub fn location(mut self, location: impl Into<String>) -> Self {
        self.location = Some(location.into());
        self
    }

    /// When other tables' metadata lies under the scanned location, keep their files instead of
    /// refusing the run.
    pub fn protect_other_tables(mut self, protect: bool) -> Self {
        self.protect_other_tables = protect;
        self
    }

    /// Only report what would be deleted.
    pub fn dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }

    /// The typed options this builder stands for, validated as the SQL binder validates them
    /// against `now_ms`, and the notes on its arguments.
    pub fn options(&self, now_ms: i64) -> Result<(OrphanOptions, Vec<String>)> {
        let mut notes = Vec::new();
        let older_than_ms = self
            .older_than
            .as_ref()
            .map(|at| self.run.millis("older_than", at, &mut notes))
            .transpose()?;
        let location = self
            .location
            .as_deref()
            .map(normalize_location)
            .transpose()?
            .flatten();
        let options = OrphanOptions {
            older_than_ms,
            location,
            dry_run: self.dry_run,
            protect_other_tables: self.protect_other_tables,
        };
        options.validate(now_ms)?;
        Ok((options, notes))
    }

    /// Run it (or, with [`dry_run`](Self::dry_run), report what it would do).
    pub async fn execute(self) -> Result<OrphanOutcome> {
        self.run_it(false).await
    }

    /// The plan, as `EXPLAIN ALTER TABLE … EXECUTE remove_orphan_files(…)` gives it
    /// ([`OrphanOutcome::explain`]); nothing changes.
    pub async fn explain(self) -> Result<OrphanOutcome> {
        self.run_it(true).await
    }

    async fn run_it(self, explain: bool) -> Result<OrphanOutcome> {
        let target = self.run.target()?;
        let (options, notes) = self.options(target.now_ms)?;
        let mut outcome = run_orphans(&target, &options, explain).await?;
        outcome.warnings.splice(0..0, notes);
        Ok(outcome)
    }
}

/// `rewrite_manifests` on a [`Table`]: rewrites the current snapshot's manifests into
/// fewer, partition-clustered ones as a `replace` snapshot with identical data.
#[derive(Clone)]
#[must_use = "a builder does nothing until `execute` or `explain` is awaited"]
pub struct RewriteManifests<'t> {
    run: Run<'t>,
    options: RewriteManifestsOptions,
}

impl RewriteManifests<'_> {
    run_options!();

    /// Only the manifests of this partition spec.
    pub fn spec_id(mut self, spec_id: i32) -> Self {
        self.options.spec_id = Some(spec_id);
        self
    }

    /// The size new manifests aim at (overrides `commit.manifest.target-size-bytes`, 8 MiB).
    pub fn target_manifest_size_bytes(mut self, bytes: i64) -> Self {
        self.options.target_manifest_size_bytes = Some(bytes);
        self
    }

    /// Only report what would be rewritten.
    pub fn dry_run(mut self, dry_run: bool) -> Self {
        self.options.dry_run = dry_run;
        self
    }

    /// The typed options, validated as the SQL binder validates them.
    pub fn options(&self) -> Result<RewriteManifestsOptions> {
        self.options.validate()?;
        Ok(self.options.clone())
    }

    /// Run it (or, with [`dry_run`](Self::dry_run), report what it would do).
    pub async fn execute(self) -> Result<RewriteManifestsOutcome> {
        let target = self.run.target()?;
        run_rewrite_manifests(&target, &self.options()?, false).await
    }

    /// The plan, as `EXPLAIN ALTER TABLE … EXECUTE rewrite_manifests(…)` gives it; nothing
    /// changes.
    pub async fn explain(self) -> Result<RewriteManifestsOutcome> {
        let target = self.run.target()?;
        run_rewrite_manifests(&target, &self.options()?, true).await
    }
}

/// `rewrite_data_files` / `OPTIMIZE TABLE` on a [`Table`]: compacts small files and
/// applies delete files in a new `replace` snapshot.
#[derive(Clone)]
#[must_use = "a builder does nothing until `execute` or `explain` is awaited"]
pub struct RewriteDataFiles<'t> {
    run: Run<'t>,
    options: CompactOptions,
    filter: Option<String>,
}

impl RewriteDataFiles<'_> {
    run_options!();

    /// `OPTIMIZE TABLE`'s options: `delete_file_threshold = 1`, the rest default.
    pub fn optimize(mut self) -> Self {
        self.options = CompactOptions {
            dry_run: self.options.dry_run,
            ..CompactOptions::optimize()
        };
        self
    }

    /// Output file size (default: the table's `write.target-file-size-bytes`, else 512 MiB).
    pub fn target_file_size_bytes(mut self, bytes: u64) -> Self {
        self.options.target_file_size_bytes = Some(bytes);
        self
    }

    /// Files smaller are rewritten (default 0.75 × target).
    pub fn min_file_size_bytes(mut self, bytes: u64) -> Self {
        self.options.min_file_size_bytes = Some(bytes);
        self
    }

    /// Files larger are rewritten (default 1.8 × target).
    pub fn max_file_size_bytes(mut self, bytes: u64) -> Self {
        self.options.max_file_size_bytes = Some(bytes);
        self
    }

    /// Smallest group worth rewriting (default 5).
    pub fn min_input_files(mut self, count: u64) -> Self {
        self.options.min_input_files = Some(count);
        self
    }

    /// A file with this many delete files is rewritten (default unlimited).
    pub fn delete_file_threshold(mut self, count: u64) -> Self {
        self.options.delete_file_threshold = Some(count);
        self
    }

    /// Rewrite every file the filter selects.
    pub fn rewrite_all(mut self, all: bool) -> Self {
        self.options.rewrite_all = all;
        self
    }

    /// Largest group, in input bytes (default 100 GiB).
    pub fn max_file_group_size_bytes(mut self, bytes: u64) -> Self {
        self.options.max_file_group_size_bytes = Some(bytes);
        self
    }

    /// Groups rewritten at once (default 5).
    pub fn max_concurrent_file_group_rewrites(mut self, count: u64) -> Self {
        self.options.max_concurrent_file_group_rewrites = Some(count);
        self
    }

    /// Only files whose partition may match this predicate (SQL text, as `where = '...'`).
    pub fn filter(mut self, predicate: impl Into<String>) -> Self {
        self.filter = Some(predicate.into());
        self
    }

    /// Only report what would be rewritten.
    pub fn dry_run(mut self, dry_run: bool) -> Self {
        self.options.dry_run = dry_run;
        self
    }

    /// The typed options this builder stands for, validated as the SQL binder validates them.
    pub fn options(&self) -> Result<CompactOptions> {
        let mut options = self.options.clone();
        options.filter = self.filter.as_deref().map(parse_where).transpose()?;
        options.validate()?;
        Ok(options)
    }

    /// Run it (or, with [`dry_run`](Self::dry_run), report what it would do).
    pub async fn execute(self) -> Result<CompactOutcome> {
        self.run_it(false).await
    }

    /// The plan, as `EXPLAIN OPTIMIZE TABLE` gives it ([`CompactOutcome::explain`]).
    pub async fn explain(self) -> Result<CompactOutcome> {
        self.run_it(true).await
    }

    async fn run_it(self, explain: bool) -> Result<CompactOutcome> {
        let target = self.run.target()?;
        let options = self.options()?;
        run_compact(&target, &options, explain).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FixedClock;

    fn table() -> Table {
        Table::with_io("memory:///t", FileIO::memory()).clock(FixedClock::new(86_400_000))
    }

    #[test]
    fn builders_fill_the_options_sql_fills() {
        let t = table();
        let (options, notes) = t
            .expire_snapshots()
            .retention_period(Duration::from_secs(3_600))
            .retain_last(2)
            .older_than("1970-01-01 12:00:00")
            .time_zone("UTC")
            .dry_run(true)
            .options()
            .unwrap();
        assert_eq!(
            options,
            ExpireOptions {
                expire_before_ms: Some(43_200_000),
                retention_period_ms: Some(3_600_000),
                retain_last: Some(2),
                snapshot_ids: None,
                dry_run: true,
                clean_expired_metadata: false,
            }
        );
        assert!(notes.is_empty());
        let (options, _) = t
            .remove_orphan_files()
            .location("./data//x/")
            .older_than(Timestamp::Millis(1_000))
            .protect_other_tables(true)
            .options(86_400_000)
            .unwrap();
        assert_eq!(options.location.as_deref(), Some("data/x"));
        assert_eq!(options.older_than_ms, Some(1_000));
        assert!(options.protect_other_tables);
        let whole = t.remove_orphan_files().location("./").options(0).unwrap();
        assert_eq!(whole.0.location, None);
    }

    #[test]
    fn bad_settings_fail_the_run_with_the_settings_error() {
        let t = table();
        let run = t.expire_snapshots().setting("no_such_setting", "1");
        let e = run.run.target().unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::UnknownSetting);
        let run = t
            .remove_orphan_files()
            .setting("iceberg_delete_concurrency", "x");
        assert!(run.run.target().is_err());
        let run = t
            .remove_orphan_files()
            .concurrency(3)
            .commit_attempts(5)
            .setting("allow_insert_into_iceberg", "false");
        let target = run.run.target().unwrap();
        assert_eq!(target.settings.delete_concurrency(), 3);
        assert_eq!(target.settings.metadata_read_concurrency(), 3);
        assert_eq!(target.settings.commit_max_attempts(), 5);
        assert_eq!(target.now_ms, 86_400_000);
    }

    #[test]
    fn open_tells_local_paths_from_uris() {
        let local = Table::open("/data/./t/", StorageOptions::default()).unwrap();
        assert_eq!(local.location(), "/data/t");
        let s3 = Table::open("s3://bucket/wh/t/", StorageOptions::default()).unwrap();
        assert_eq!(s3.location(), "s3://bucket/wh/t/");
        for bad in ["relative/t", "/data/../t", "s3://key:secret@bucket/t"] {
            assert!(
                Table::open(bad, StorageOptions::default()).is_err(),
                "{bad}"
            );
        }
    }
}
