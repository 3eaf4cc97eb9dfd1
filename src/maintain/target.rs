//! The table a maintenance procedure works on, and everything it runs with: storage, where the
//! table lives, how its current metadata is found, the session settings, "now", and the
//! statement's progress reporting and cancellation.
//!
//! **The one way procedures read and commit table metadata**: [`MaintenanceTarget::locate_newest`]
//! and [`MaintenanceTarget::commit`] (or [`MaintenanceTarget::commit_edit`] for edits that delete
//! nothing). Path tables locate and commit through `metadata/` ([`crate::iceberg::commit`]);
//! catalog tables will do both through their catalog behind these same two calls, so no procedure
//! calls [`crate::iceberg::commit::commit`] itself.

use crate::error::{Error, ErrorKind, Result};
use crate::iceberg::commit::{CommitOptions, CommitOutcome, Committed, commit, unconfirmed_error};
use crate::iceberg::guard::{check_single_table_uuid, locate_newest};
use crate::iceberg::locate::{LocatedMetadata, MetadataSettings};
use crate::iceberg::metadata::TableMetadata;
use crate::io::FileIO;
use crate::progress::Progress;
use crate::settings::Settings;

/// A table opened for maintenance.
#[derive(Debug, Clone)]
pub struct MaintenanceTarget {
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
}

impl MaintenanceTarget {
    /// Refuse when our own `metadata/` holds a second `table-uuid` and the table settings do not
    /// pick one (see [`check_single_table_uuid`]); `even_when_chosen` for procedures that delete
    /// by listing. `procedure` names the statement in the error.
    pub async fn check_single_table(&self, procedure: &str, even_when_chosen: bool) -> Result<()> {
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
    /// `Unconfirmed` or `Err`: the outcome is unknown, delete nothing.
    pub async fn commit(
        &self,
        base: &LocatedMetadata,
        new_metadata: TableMetadata,
        options: &CommitOptions,
    ) -> Result<CommitOutcome> {
        commit(&self.io, base, new_metadata, options).await
    }

    /// Locate the newest metadata, let `change` compute the new metadata from it (`None`: nothing
    /// to write, `Ok(None)`) and commit; on a conflict start over, at most
    /// `iceberg_commit_max_attempts` times (then `LIMIT_EXCEEDED`). For commits that delete
    /// nothing (refs, properties, snapshot management). `procedure` names the statement.
    pub async fn commit_edit<F>(&self, procedure: &str, mut change: F) -> Result<Option<Committed>>
    where
        F: FnMut(&TableMetadata) -> Result<Option<TableMetadata>>,
    {
        let max_attempts = self.settings.commit_max_attempts();
        let options = CommitOptions {
            update_metadata_log: true,
            now_ms: Some(self.now_ms),
        };
        let mut last_conflict = String::new();
        for _ in 0..max_attempts {
            let located = self.locate_newest(procedure).await?;
            located.check_writable()?;
            let Some(new_metadata) = change(&located.metadata)? else {
                return Ok(None);
            };
            match self.commit(&located, new_metadata, &options).await? {
                CommitOutcome::Committed(done) => return Ok(Some(*done)),
                CommitOutcome::Conflict { path } => last_conflict = path,
                CommitOutcome::Unconfirmed { path, rival, why } => {
                    return Err(unconfirmed_error(&self.location, &path, &rival, &why));
                }
            }
        }
        Err(Error::new(
            ErrorKind::LimitExceeded,
            format!(
                "{procedure} on {}: {max_attempts} commit attempt(s) conflicted with concurrent \
                 writers (last taken name: {last_conflict})",
                self.table_name
            ),
        ))
    }
}
