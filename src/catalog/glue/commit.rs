//! Committing new metadata to a Glue table: the protocol of Java's and pyiceberg's Glue catalogs,
//! plus a confirmation read before anything may be deleted.
//!
//! 1. The new metadata file is written next to the current one under a fresh name
//!    ([`naming::next_metadata_location`]: `<NNNNN>-<uuid>.metadata.json`), create-if-absent, with
//!    `last-updated-ms` = now (never below the base's + 1) and the base file appended to
//!    `metadata-log`. Nobody else knows the name yet: a crash here leaves an orphan at worst.
//! 2. `UpdateTable`, conditioned on the `VersionId` the base was read with, points the table at
//!    it (`previous_metadata_location` = the base). Glue applies it only when nobody changed the
//!    table since the read.
//!    - `ConcurrentModificationException`: someone committed first. The request was sent once
//!      (no SDK retry), so Glue certainly did not apply it and nobody points at our file: it is
//!      deleted and the outcome is [`GlueCommitOutcome::Conflict`] (re-read, re-plan, retry).
//!    - Any other refusal (unknown table, access denied, a bad request): certainly not applied;
//!      our file is deleted and the error returned.
//!    - No usable answer (timeout, lost connection after sending, HTTP 5xx): unknown; go on to 3.
//! 3. `GetTable` must show our file as `metadata_location`: then the commit is
//!    [`GlueCommitOutcome::Committed`] and the caller may delete what the new metadata no longer
//!    reaches. Anything else — another location (someone committed right after us, or ours never
//!    landed), or no answer — is [`GlueCommitOutcome::Unconfirmed`]: the caller deletes nothing
//!    and says so (an expiry's journal finishes the deletes on its next run). Our file is kept:
//!    a later commit may already build on it.

use bytes::Bytes;

use super::naming::{next_metadata_location, same_location};
use super::{GlueCatalog, GlueTable, UpdateOutcome};
use crate::error::{Error, Result};
use crate::iceberg::metadata::{MetadataCompression, TableMetadata};
use crate::io::{FileIO, WriteOutcome};

/// What [`commit`] did.
#[derive(Debug, Clone)]
pub enum GlueCommitOutcome {
    /// Glue points at `path` (confirmed by `GetTable`); `metadata` is the file's content.
    Committed {
        path: String,
        metadata: Box<TableMetadata>,
    },
    /// Someone changed the table first; our file was removed. Re-read and re-plan.
    Conflict { why: String },
    /// The commit may or may not have landed (`path` was written; `why` says what `GetTable`
    /// showed, when it answered). Delete nothing.
    Unconfirmed { path: String, why: String },
}

/// Commit `new_metadata` as the successor of `loaded` (whose metadata file holds `base`); see the
/// module comment. `now_ms` stamps `last-updated-ms`.
pub async fn commit(
    catalog: &GlueCatalog,
    io: &FileIO,
    loaded: &GlueTable,
    base: &TableMetadata,
    mut new_metadata: TableMetadata,
    now_ms: i64,
) -> Result<GlueCommitOutcome> {
    if let (Some(a), Some(b)) = (base.table_uuid(), new_metadata.table_uuid())
        && a != b
    {
        return Err(Error::logical(format!(
            "Commit to '{}.{}' would change table-uuid from {a} to {b}",
            loaded.database, loaded.name
        )));
    }
    let path = next_metadata_location(
        &loaded.metadata_location,
        &new_metadata,
        uuid::Uuid::new_v4(),
    );
    new_metadata.set_file(&path);
    new_metadata.set_last_updated_ms(now_ms.max(base.last_updated_ms().saturating_add(1)))?;
    let max = new_metadata.previous_versions_max()?;
    new_metadata.append_metadata_log(&loaded.metadata_location, base.last_updated_ms(), max)?;
    let compression =
        MetadataCompression::from_file_name(&path).unwrap_or(MetadataCompression::None);
    let bytes = new_metadata.to_file_bytes(compression)?;
    match io.write_if_absent(&path, Bytes::from(bytes)).await? {
        WriteOutcome::Created => {}
        WriteOutcome::AlreadyExists => {
            return Ok(GlueCommitOutcome::Conflict {
                why: format!("the metadata file name '{path}' is taken"),
            });
        }
    }
    let update = catalog
        .update_metadata_location(loaded, &path, new_metadata.properties())
        .await;
    let why = match update {
        Ok(UpdateOutcome::Applied) => None,
        Ok(UpdateOutcome::Unknown { why }) => Some(why),
        Ok(UpdateOutcome::Rejected { conflict, error }) => {
            // Certainly not applied: nobody points at our file.
            let _ = io.delete(&path).await;
            return if conflict {
                Ok(GlueCommitOutcome::Conflict {
                    why: error.message().to_string(),
                })
            } else {
                Err(error)
            };
        }
        Err(e) => {
            // The request could not be built: it was never sent.
            let _ = io.delete(&path).await;
            return Err(e);
        }
    };
    Ok(confirm(catalog, loaded, path, new_metadata, why).await)
}

/// Step 3: `GetTable` must show `path`.
async fn confirm(
    catalog: &GlueCatalog,
    loaded: &GlueTable,
    path: String,
    metadata: TableMetadata,
    update_failure: Option<String>,
) -> GlueCommitOutcome {
    let shown = catalog.load(&loaded.database, &loaded.name).await;
    match shown {
        Ok(now) if same_location(&now.metadata_location, &path) => GlueCommitOutcome::Committed {
            path,
            metadata: Box::new(metadata),
        },
        Ok(now) => {
            let why = match update_failure {
                Some(failure) => format!(
                    "{failure}; GetTable then showed metadata_location '{}'",
                    now.metadata_location
                ),
                None => format!(
                    "Glue accepted UpdateTable, but GetTable then showed metadata_location '{}' \
                     (another writer committed right after)",
                    now.metadata_location
                ),
            };
            GlueCommitOutcome::Unconfirmed { path, why }
        }
        Err(e) => GlueCommitOutcome::Unconfirmed {
            path,
            why: match update_failure {
                Some(failure) => {
                    format!("{failure}; the confirming GetTable failed: {}", e.message())
                }
                None => format!(
                    "Glue accepted UpdateTable, but the confirming GetTable failed: {}",
                    e.message()
                ),
            },
        },
    }
}
