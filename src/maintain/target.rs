//! The table a maintenance procedure works on, and everything it runs with: storage, where the
//! table lives, how its current metadata is found, the session settings, "now", and the
//! statement's progress reporting and cancellation.
//!
//! **The one way procedures read and commit table metadata**: [`MaintenanceTarget::locate_newest`]
//! and [`MaintenanceTarget::commit`], driven by the commit protocol's one loop
//! ([`crate::iceberg::commit::protocol::run`], for which this target is the [`CommitTarget`];
//! [`MaintenanceTarget::commit_edit`] runs it for edits that delete nothing). Path tables ([`TableSource::Path`]) locate and commit through `metadata/`
//! ([`crate::iceberg::commit`]); catalog tables ([`TableSource::Catalog`]) load from and commit
//! through their catalog ([`crate::catalog`]) behind these same calls, so no procedure calls
//! [`crate::iceberg::commit::commit`] itself.
//!
//! A catalog commit answers [`CommitOutcome::Committed`] with the metadata the catalog returned
//! (its `metadata-location` as the path), [`CommitOutcome::Conflict`] when a requirement failed
//! (HTTP 409), and [`CommitOutcome::Unknown`] when the outcome cannot be known (delete nothing).
//! Procedures that delete after a commit ask [`MaintenanceTarget::foreign_commit`] whether the
//! returned metadata is exactly their commit on their base; when it is not (another writer
//! committed in between and the catalog merged), they delete nothing now.

use super::old_metadata;
use crate::catalog::{CatalogCommit, CatalogTable};
use crate::error::Result;
use crate::iceberg::commit::protocol::{self, CommitTarget};
use crate::iceberg::commit::{CommitOptions, CommitOutcome, Committed, commit};
use crate::iceberg::guard::{check_single_table_uuid, locate_newest};
use crate::iceberg::locate::{LocatedMetadata, MetadataSettings, parse_file_name};
use crate::iceberg::metadata::TableMetadata;
use std::sync::Arc;

use super::shape::Intent;
use crate::io::{Family, FileIO, Location, ReadCache};
use crate::progress::Progress;
use crate::settings::Settings;

/// Code run right before every commit attempt of a statement, after the statement planned: the
/// seam through which tests put another writer's commit between a plan and its commit (no
/// sleeps). Not for production use; `None` everywhere outside tests.
#[derive(Clone)]
pub struct BeforeCommit(pub Arc<dyn Fn() -> futures::future::BoxFuture<'static, ()> + Send + Sync>);

impl std::fmt::Debug for BeforeCommit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BeforeCommit(..)")
    }
}

/// Where a table's current metadata pointer lives.
#[derive(Debug, Clone, Default)]
pub enum TableSource {
    /// The table's own `metadata/` folder (`metadata_settings` steer the choice).
    #[default]
    Path,
    /// A catalog: loads and commits go through it.
    Catalog(CatalogTable),
}

/// A table opened for maintenance.
#[derive(Debug, Clone)]
pub struct MaintenanceTarget {
    /// Where the current metadata pointer lives (path or catalog).
    pub source: TableSource,
    /// Storage serving the table's URIs.
    pub io: FileIO,
    /// The table location (root URI), as configured.
    pub location: String,
    /// How the current metadata file is found (table settings).
    pub metadata_settings: MetadataSettings,
    /// `db.table`, for messages.
    pub table_name: String,
    /// The session's settings (defaults, concurrency, gates).
    pub settings: Settings,
    /// "Now", in milliseconds since the epoch, fixed for the whole statement.
    pub now_ms: i64,
    /// Where the statement reports progress and learns it was cancelled (see [`crate::progress`]):
    /// the one way progress reaches maintenance; executors pass it on to what they call.
    pub progress: Progress,
    /// Run before every commit attempt ([`BeforeCommit`]; tests only).
    pub before_commit: Option<BeforeCommit>,
}

impl MaintenanceTarget {
    /// This target for one statement that asks `intent`. Only a run on an object-store table
    /// (S3, Azure, GCS) reads manifest lists and manifests through a fresh [`ReadCache`], so
    /// that every re-plan after a commit conflict (a taken version, a catalog's 409 or
    /// concurrent modification) reads only the files the first plan did not:
    /// - EXPLAIN and a dry run never commit, so they never re-plan: no cache (it would only add
    ///   the files read to the statement's peak memory);
    /// - local files are re-read from the operating system's page cache at memory speed: no
    ///   cache either;
    /// - the cache and the statement's working set share one bound,
    ///   `iceberg_statement_cache_max_bytes` (none when 0): the expiry's live-file set reserves
    ///   its size as it grows and the cache keeps files only in what is left
    ///   ([`ReadCache::reserve`]).
    ///
    /// The engine gives every procedure its statement target this way (`engine::procedures`).
    /// A target that reads through a cache already ([`MaintenanceTarget::with_table_cache`])
    /// keeps it.
    pub fn for_statement(&self, intent: Intent) -> MaintenanceTarget {
        match intent {
            Intent::Run if self.io.read_cache().is_none() => self.with_table_cache(),
            _ => self.clone(),
        }
    }

    /// This target reading manifest lists and manifests through one fresh [`ReadCache`] when it
    /// lives on an object store (within `iceberg_statement_cache_max_bytes`; none when 0): a
    /// statement's run, and a `SYSTEM MAINTAIN` run of one table, whose decisions (dry runs)
    /// and runs then read each immutable file once.
    pub fn with_table_cache(&self) -> MaintenanceTarget {
        let budget = self.settings.statement_cache_max_bytes();
        let mut target = self.clone();
        if budget > 0 && self.on_object_store() {
            target.io = self.io.with_read_cache(Arc::new(ReadCache::new(budget)));
        }
        target
    }

    /// Whether the table lives on an object store (S3, Azure, GCS), where every read is a
    /// request worth saving; not local disk or the in-process memory store.
    fn on_object_store(&self) -> bool {
        Location::parse(&self.location)
            .is_ok_and(|l| matches!(l.store.family, Family::S3 | Family::Azure | Family::Gcs))
    }

    /// Refuse when our own `metadata/` holds a second `table-uuid` and the table settings do not
    /// pick one (see [`check_single_table_uuid`]); `even_when_chosen` for procedures that delete
    /// by listing. `procedure` names the statement in the error.
    pub async fn check_single_table(&self, procedure: &str, even_when_chosen: bool) -> Result<()> {
        // A catalog names the current file; only procedures that delete by listing care about
        // another table's files in our metadata folder.
        if matches!(self.source, TableSource::Catalog(_)) && !even_when_chosen {
            return Ok(());
        }
        check_single_table_uuid(
            &self.io,
            &self.location,
            &self.metadata_settings,
            self.settings.metadata_read_concurrency(),
            (procedure, &self.table_name),
            even_when_chosen,
        )
        .await
    }

    /// The newest committed metadata ([`locate_newest`]): a pinned file that is not the newest
    /// refuses `procedure`.
    pub async fn locate_newest(&self, procedure: &str) -> Result<LocatedMetadata> {
        if let TableSource::Catalog(table) = &self.source {
            let loaded = table.catalog.load_table(&table.ident).await?;
            return Ok(LocatedMetadata::from_catalog(
                &loaded.metadata_location,
                loaded.metadata,
            ));
        }
        locate_newest(
            &self.io,
            &self.location,
            &self.metadata_settings,
            procedure,
            &self.table_name,
        )
        .await
    }

    /// Commit `new_metadata` as the metadata that follows `base` (located by
    /// [`Self::locate_newest`]). `Conflict`: someone committed first, re-locate and re-plan;
    /// `Unconfirmed` or `Err`: the outcome is unknown, delete nothing. A confirmed path-table
    /// commit then deletes the metadata files that left `metadata-log` when the table sets
    /// `write.metadata.delete-after-commit.enabled` ([`super::old_metadata`], Java's rule).
    pub async fn commit(
        &self,
        base: &LocatedMetadata,
        new_metadata: TableMetadata,
        options: &CommitOptions,
    ) -> Result<CommitOutcome> {
        if let Some(hook) = &self.before_commit {
            (hook.0)().await;
        }
        let TableSource::Catalog(table) = &self.source else {
            // Path tables: `write.metadata.delete-after-commit.enabled` after a confirmed commit
            // (never on catalog tables: the catalog owns their metadata files).
            let outcome = commit(&self.io, base, new_metadata, options).await?;
            if let CommitOutcome::Committed(done) = &outcome {
                let (old, new) = (&base.metadata, &done.metadata);
                old_metadata::delete_removed_metadata(self, old, &base.path, new, &done.path).await;
            }
            return Ok(outcome);
        };
        let answer = table
            .catalog
            .commit(&table.ident, &base.path, &base.metadata, &new_metadata)
            .await?;
        Ok(match answer {
            CatalogCommit::Committed {
                metadata_location,
                metadata,
            } => CommitOutcome::Committed(Box::new(Committed {
                version: parse_file_name(&metadata_location)
                    .and_then(|n| n.version)
                    .unwrap_or(0),
                path: metadata_location,
                metadata: *metadata,
                version_hint_written: false,
            })),
            CatalogCommit::Conflict { reason } => CommitOutcome::Conflict { taken: reason },
            CatalogCommit::Unknown { reason } => CommitOutcome::Unknown {
                why: format!(
                    "the commit to {} through the catalog at '{}' has an unknown outcome: {reason}",
                    self.table_name,
                    table.catalog.endpoint()
                ),
            },
        })
    }

    /// For a catalog table: why `done` (what the catalog returned for our commit of `planned`
    /// on `base`) is not exactly our commit on our base — another writer committed in between
    /// (its `metadata-log` names another base) or the snapshots and refs differ from ours. `None`
    /// for path tables (their commit writes exactly `planned`) and when it is ours.
    pub fn foreign_commit(
        &self,
        base: &LocatedMetadata,
        planned: &TableMetadata,
        done: &Committed,
    ) -> Option<String> {
        let TableSource::Catalog(table) = &self.source else {
            return None;
        };
        if crate::catalog::landed(&base.path, planned, &done.metadata) {
            return None;
        }
        Some(format!(
            "the catalog at '{}' returned metadata for {} that is not our commit alone on '{}' \
             (another writer committed in between); no file was deleted now: the next \
             expire_snapshots re-plans the deletes against every current snapshot",
            table.catalog.endpoint(),
            self.table_name,
            base.path
        ))
    }

    /// Locate the newest metadata, let `change` compute the new metadata from it (`None`: nothing
    /// to write, `Ok(None)`) and commit, through the one loop ([`protocol::run`]): on a conflict
    /// start over, at most `iceberg_commit_max_attempts` times (then `LIMIT_EXCEEDED`). For
    /// commits that delete nothing (refs, properties, snapshot management). `procedure` names the
    /// statement.
    pub async fn commit_edit<F>(&self, procedure: &str, change: F) -> Result<Option<Committed>>
    where
        F: FnMut(&TableMetadata) -> Result<Option<TableMetadata>>,
    {
        let mut edit = protocol::Edit {
            name: procedure,
            options: self.commit_options(),
            change,
        };
        protocol::run(self, &mut edit, self.settings.commit_max_attempts(), None).await
    }

    /// The options of this statement's commits: `metadata-log` kept, "now" the statement's.
    pub fn commit_options(&self) -> CommitOptions {
        CommitOptions {
            update_metadata_log: true,
            now_ms: Some(self.now_ms),
        }
    }

    /// Deletes `paths`, files this statement wrote that no commit references (never one outside
    /// the table location). Returns those not deleted, each with the reason.
    pub async fn delete_uncommitted(&self, paths: &[String]) -> Vec<String> {
        protocol::delete_uncommitted(&self.io, &self.location, paths).await
    }
}

/// A statement's commits: the path or catalog commit above, picked by [`TableSource`].
impl CommitTarget for MaintenanceTarget {
    async fn load_newest(&self, procedure: &str) -> Result<LocatedMetadata> {
        self.locate_newest(procedure).await
    }

    async fn commit_on(
        &self,
        base: &LocatedMetadata,
        new_metadata: TableMetadata,
        options: &CommitOptions,
    ) -> Result<CommitOutcome> {
        self.commit(base, new_metadata, options).await
    }

    fn io(&self) -> &FileIO {
        &self.io
    }

    fn location(&self) -> &str {
        &self.location
    }

    fn subject(&self, procedure: &str) -> String {
        format!("{procedure} on {}", self.table_name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(location: &str, cache_bytes: Option<&str>) -> MaintenanceTarget {
        let mut settings = Settings::new();
        if let Some(bytes) = cache_bytes {
            settings
                .set(
                    "iceberg_statement_cache_max_bytes",
                    &crate::literal::Literal::Number(bytes.into()),
                )
                .unwrap();
        }
        MaintenanceTarget {
            source: TableSource::Path,
            io: FileIO::memory(),
            location: location.into(),
            metadata_settings: MetadataSettings::default(),
            table_name: "db.t".into(),
            settings,
            now_ms: 0,
            progress: Progress::default(),
            before_commit: None,
        }
    }

    fn cached(t: &MaintenanceTarget, intent: Intent) -> bool {
        t.for_statement(intent).io.read_cache().is_some()
    }

    #[test]
    fn a_table_cache_serves_every_statement_of_the_table() {
        let t = target("s3://b/t", None).with_table_cache();
        let table_cache = t.io.read_cache().expect("a cache on S3");
        for intent in [Intent::DryRun, Intent::Run] {
            let statement = t.for_statement(intent);
            let cache = statement.io.read_cache().expect("the table's cache");
            assert!(Arc::ptr_eq(table_cache, cache), "{intent:?}");
        }
        let local = target("/tmp/t", None).with_table_cache();
        assert!(local.io.read_cache().is_none(), "local files: no cache");
    }

    #[test]
    fn only_a_run_on_an_object_store_gets_a_statement_cache() {
        for location in ["s3://b/t", "abfss://c@a.dfs.core.windows.net/t", "gs://b/t"] {
            let t = target(location, None);
            assert!(cached(&t, Intent::Run), "{location}");
            assert!(
                !cached(&t, Intent::DryRun),
                "{location}: a dry run never re-plans"
            );
            assert!(
                !cached(&t, Intent::Explain),
                "{location}: EXPLAIN never re-plans"
            );
            let off = target(location, Some("0"));
            assert!(!cached(&off, Intent::Run), "{location}: 0 turns it off");
        }
        for location in ["/data/t", "file:///data/t", "memory:///t"] {
            let t = target(location, None);
            for intent in [Intent::Run, Intent::DryRun, Intent::Explain] {
                assert!(
                    !cached(&t, intent),
                    "{location} {intent:?}: read again locally"
                );
            }
        }
    }
}
