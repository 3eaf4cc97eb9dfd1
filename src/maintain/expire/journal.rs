//! The expiry journal: what makes an interrupted expiry converge.
//!
//! Deletes follow the commit, so a crash (or a cancelled statement) between the commit and the
//! last delete leaves files that no snapshot names any more. Without a record of them, a second
//! `expire_snapshots` cannot find them (their snapshots are gone from the metadata) and they stay
//! as orphans until `remove_orphan_files` runs. The journal is that record:
//!
//! 1. Before committing, the executor writes `metadata/.icetrim/expiry-<uuid>.json`: the metadata
//!    file the plan was made from (`base_metadata`) and the snapshot ids it expires.
//! 2. After a conflict (definitely not committed) the journal is removed; after the deletes it
//!    is removed. An error of unknown outcome keeps it.
//! 3. The next `expire_snapshots` (not a dry run, not EXPLAIN) reads every journal first
//!    ([`pending`]). When one of its snapshots is still in the current metadata, that commit
//!    never happened: the journal is removed and nothing is deleted. When none is, the commit
//!    stands (or another expiry removed them), and the executor re-plans the deletes from the base
//!    metadata's expired snapshots against the keep set of *every current snapshot* — the same
//!    planner as a normal expiry, so a file any current snapshot lists live is never deleted.
//!
//! The folder starts with `.`, a hidden component: `remove_orphan_files` never counts a pending
//! journal as an orphan (ClickHouse does; then the leftovers stay orphans, as without a journal).
//! Cost: one LIST per expiry, one PUT and one DELETE per committing expiry.

use bytes::Bytes;
use futures::TryStreamExt;
use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind, Result};
use crate::iceberg::spec::SnapshotId;
use crate::io::{FileIO, WriteOutcome};

/// The journal folder below the table location.
pub const JOURNAL_DIR: &str = "metadata/.icetrim";

const FORMAT: &str = "icetrim-expiry-journal/1";

/// One journal's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Journal {
    pub format: String,
    /// The metadata file the expiry was planned on (it still lists the expired snapshots).
    pub base_metadata: String,
    /// The snapshots the expiry removes.
    pub expired_snapshot_ids: Vec<SnapshotId>,
    /// When the expiry ran, in ms since the epoch.
    pub created_ms: i64,
    /// The metadata file the expiry wrote when another file of the same version appeared and
    /// ours could not be taken back (an unconfirmed commit, see [`crate::iceberg::commit`]): the
    /// next run retracts it when it still can ([`super::recover::retract_unconfirmed`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unconfirmed_metadata: Option<String>,
}

/// A journal found in storage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingJournal {
    pub uri: String,
    pub journal: Journal,
}

impl Journal {
    pub fn new(
        base_metadata: &str,
        expired: impl IntoIterator<Item = SnapshotId>,
        now: i64,
    ) -> Self {
        Journal {
            format: FORMAT.to_string(),
            base_metadata: base_metadata.to_string(),
            expired_snapshot_ids: expired.into_iter().collect(),
            created_ms: now,
            unconfirmed_metadata: None,
        }
    }

    fn parse(bytes: &[u8], uri: &str) -> Result<Journal> {
        let journal: Journal = serde_json::from_slice(bytes).map_err(|e| {
            Error::new(
                ErrorKind::IncorrectData,
                format!("Cannot parse expiry journal '{uri}': {e}"),
            )
        })?;
        if journal.format != FORMAT {
            return Err(Error::new(
                ErrorKind::IncorrectData,
                format!(
                    "Expiry journal '{uri}' has format '{}', expected '{FORMAT}'",
                    journal.format
                ),
            ));
        }
        Ok(journal)
    }
}

/// The journal folder of the table at `location`.
pub fn journal_dir(location: &str) -> String {
    format!("{}/{JOURNAL_DIR}", location.trim_end_matches('/'))
}

/// Write `journal` under `location`; returns its URI.
pub async fn write(io: &FileIO, location: &str, journal: &Journal) -> Result<String> {
    let uri = format!(
        "{}/expiry-{}.json",
        journal_dir(location),
        uuid::Uuid::new_v4()
    );
    let bytes = serde_json::to_vec_pretty(journal)
        .map_err(|e| Error::logical(format!("cannot encode the expiry journal: {e}")))?;
    match io.write_if_absent(&uri, Bytes::from(bytes)).await? {
        WriteOutcome::Created => Ok(uri),
        WriteOutcome::AlreadyExists => Err(Error::new(
            ErrorKind::FileAlreadyExists,
            format!("Expiry journal '{uri}' already exists"),
        )),
    }
}

/// Replace the journal at `uri` (to mark or clear an unconfirmed commit).
pub async fn rewrite(io: &FileIO, uri: &str, journal: &Journal) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(journal)
        .map_err(|e| Error::logical(format!("cannot encode the expiry journal: {e}")))?;
    io.overwrite(uri, Bytes::from(bytes)).await
}

/// Remove a journal; a failure only leaves work for the next run, so it becomes a warning.
pub async fn remove(io: &FileIO, uri: &str) -> Option<String> {
    io.delete(uri).await.err().map(|e| {
        format!(
            "the expiry journal '{uri}' could not be removed: {}",
            e.message()
        )
    })
}

/// Every journal under `location`, oldest first. A journal that cannot be parsed is reported
/// as a warning and left alone (never acted on).
pub async fn pending(io: &FileIO, location: &str) -> Result<(Vec<PendingJournal>, Vec<String>)> {
    let dir = journal_dir(location);
    let listed: Vec<_> = match io.list(&dir).try_collect().await {
        Ok(listed) => listed,
        Err(e) if e.kind() == ErrorKind::FileDoesntExist => Vec::new(),
        Err(e) => return Err(e.context("Cannot list the expiry journals")),
    };
    let mut found = Vec::new();
    let mut warnings = Vec::new();
    for file in listed {
        // The folder also holds the maintenance lease (`maintain-lease-*.json`): not a journal.
        let name = file.uri.rsplit('/').next().unwrap_or_default();
        if !name.starts_with("expiry-") || !name.ends_with(".json") {
            continue;
        }
        let bytes = match io.read(&file.uri).await {
            Ok(bytes) => bytes,
            // Removed by a concurrent run between the listing and the read.
            Err(e) if e.kind() == ErrorKind::FileDoesntExist => continue,
            Err(e) => return Err(e),
        };
        match Journal::parse(&bytes, &file.uri) {
            Ok(journal) => found.push(PendingJournal {
                uri: file.uri,
                journal,
            }),
            Err(e) => warnings.push(format!("{}; it is left alone", e.message())),
        }
    }
    found.sort_by(|a, b| (a.journal.created_ms, &a.uri).cmp(&(b.journal.created_ms, &b.uri)));
    Ok((found, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn written_journals_are_found_and_removed() {
        let io = FileIO::memory();
        let location = "memory:///t";
        assert!(pending(&io, location).await.unwrap().0.is_empty());
        let older = Journal::new("memory:///t/metadata/v3.metadata.json", [1, 2], 10);
        let newer = Journal::new("memory:///t/metadata/v4.metadata.json", [3], 20);
        let uri_new = write(&io, location, &newer).await.unwrap();
        let uri_old = write(&io, location, &older).await.unwrap();
        assert!(uri_old.starts_with("memory:///t/metadata/.icetrim/expiry-"));
        let (found, warnings) = pending(&io, location).await.unwrap();
        assert!(warnings.is_empty());
        assert_eq!(
            found,
            vec![
                PendingJournal {
                    uri: uri_old.clone(),
                    journal: older
                },
                PendingJournal {
                    uri: uri_new.clone(),
                    journal: newer
                }
            ]
        );
        assert_eq!(remove(&io, &uri_old).await, None);
        assert_eq!(remove(&io, &uri_old).await, None, "already gone is fine");
        let (found, _) = pending(&io, location).await.unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].uri, uri_new);
    }

    #[tokio::test]
    async fn a_malformed_journal_is_a_warning_and_never_acted_on() {
        let io = FileIO::memory();
        let location = "memory:///t";
        let bad = format!("{}/expiry-bad.json", journal_dir(location));
        io.write_if_absent(&bad, Bytes::from_static(b"{not json"))
            .await
            .unwrap();
        let other = format!("{}/expiry-other.json", journal_dir(location));
        io.write_if_absent(
            &other,
            Bytes::from_static(
                br#"{"format":"x/9","base-metadata":"a","expired-snapshot-ids":[],"created-ms":0}"#,
            ),
        )
        .await
        .unwrap();
        let (found, warnings) = pending(&io, location).await.unwrap();
        assert!(found.is_empty());
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings.iter().any(|w| w.contains("expiry-bad.json")));
        assert!(warnings.iter().any(|w| w.contains("format 'x/9'")));
    }
}
