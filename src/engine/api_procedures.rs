//! The typed builders of the four procedures on a table's files: [`ExpireSnapshots`],
//! [`RemoveOrphanFiles`], [`RewriteManifests`] and [`RewriteDataFiles`], made by the methods of
//! [`Table`] named as the procedures (see `api.rs` for what every builder shares).

use std::time::Duration;

use super::api::{Run, Table, Timestamp, run_options};
use super::procedures::run;
use crate::error::{Error, Result};
use crate::literal::Literal;
use crate::maintain::shape;
use crate::maintain::{CompactOutcome, ExpireOutcome, OrphanOutcome, RewriteManifestsOutcome};
use crate::plan::{
    CompactOptions, ExpireOptions, OrphanOptions, RewriteManifestsOptions, normalize_location,
    retain_last_count,
};
use crate::progress::{CancelToken, ProgressSink};
use crate::sql::parse_where;

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
    pub(super) fn new(table: &Table) -> ExpireSnapshots<'_> {
        ExpireSnapshots {
            run: Run::new(table),
            retention_period: None,
            retain_last: None,
            older_than: None,
            snapshot_ids: None,
            dry_run: false,
            clean_expired_metadata: false,
        }
    }

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
        let mut outcome = run::<shape::Expire>(&target, &options, explain).await?;
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
    pub(super) fn new(table: &Table) -> RemoveOrphanFiles<'_> {
        RemoveOrphanFiles {
            run: Run::new(table),
            older_than: None,
            location: None,
            protect_other_tables: false,
            dry_run: false,
        }
    }

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
        let mut outcome = run::<shape::RemoveOrphans>(&target, &options, explain).await?;
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
    pub(super) fn new(table: &Table) -> RewriteManifests<'_> {
        RewriteManifests {
            run: Run::new(table),
            options: RewriteManifestsOptions::default(),
        }
    }

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
        run::<shape::RewriteManifests>(&target, &self.options()?, false).await
    }

    /// The plan, as `EXPLAIN ALTER TABLE … EXECUTE rewrite_manifests(…)` gives it; nothing
    /// changes.
    pub async fn explain(self) -> Result<RewriteManifestsOutcome> {
        let target = self.run.target()?;
        run::<shape::RewriteManifests>(&target, &self.options()?, true).await
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
    pub(super) fn new(table: &Table) -> RewriteDataFiles<'_> {
        RewriteDataFiles {
            run: Run::new(table),
            options: CompactOptions::default(),
            filter: None,
        }
    }

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
        run::<shape::Compact>(&target, &options, explain).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FixedClock;
    use crate::io::{FileIO, StorageOptions};

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
