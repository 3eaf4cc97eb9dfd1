//! Committing a new metadata file: optimistic, create-if-absent, never overwriting a metadata file.
//!
//! [`commit`] writes the next file of the current file's naming scheme — `v<N+1>.metadata.json`,
//! `v<N+1>-<uuid>.metadata.json`, or `<N+1>-<uuid>.metadata.json` zero-padded to 5 digits as
//! pyiceberg does — with the current file's compression marker, through
//! [`FileIO::write_if_absent`]. A taken name is a [`CommitOutcome::Conflict`]: the caller re-reads
//! and recomputes. Every statement and every test does that through the one loop of [`protocol`] (which
//! fails with `LIMIT_EXCEEDED` after the last attempt): a path table is [`protocol::PathTable`], a
//! metadata edit that writes no other file is [`protocol::Edit`].
//!
//! Before writing, `last-updated-ms` becomes now (never below the previous file's value + 1, so
//! selection by `last-updated-ms` also finds the new file) and, unless asked not to, the previous
//! file joins `metadata-log` (trimmed to `write.metadata.previous-versions-max`, Java's rule).
//! `metadata/version-hint.text` is overwritten when it exists or the table asks for it
//! (`iceberg_use_version_hint`), keeping the style of the existing hint (`N` or a file name); a new
//! hint is `N` for a plain `vN.metadata.json` (what Java's Hadoop tables and ClickHouse read), the
//! file name otherwise. A hint that already names a higher version is left alone (ClickHouse's rule).
//!
//! An `Err` from [`commit`] means the outcome is unknown (a store may apply a write and still report
//! failure): callers must delete nothing and re-read before trying again. [`protocol::run`]
//! retries conflicts only, never storage errors.
//!
//! **One file per version, in any naming scheme.** Names with a random uuid (`<N>-<uuid>`,
//! `v<N>-<uuid>`) never collide, and neither do `v<N>.metadata.json` and `v<N>.gz.metadata.json`,
//! so create-if-absent alone does not stop two writers from both committing version `N` (a fork:
//! readers take either). [`commit`] therefore lists `metadata/` before writing (a file of version
//! `N` or higher: [`CommitOutcome::Conflict`]) and again after writing:
//! - another file of version `N` and nothing higher: ours is removed and the commit is a
//!   `Conflict` (the caller re-plans on the newest and retries, after a short random pause so
//!   two icetrim writers do not meet again);
//! - another file of version `N` and ours cannot be removed, or a higher version already builds on
//!   one of the two: [`CommitOutcome::Unconfirmed`]. Readers may take either file; the caller must
//!   delete nothing (expire_snapshots keeps its journal, and its next run retracts our file).
//!
//! A commit on a pinned file (`iceberg_metadata_file_path`) that is not the newest is refused
//! (planning on an older file forks the table), whatever procedure asks. The version hint is never
//! the basis of a commit: a hint naming a higher version is respected only when that version
//! exists.

use bytes::Bytes;

use crate::error::{Error, ErrorKind, Result};
use crate::iceberg::guard::pinned_not_newest;
use crate::iceberg::locate::{
    LocatedMetadata, NamingScheme, file_name, hinted_file_name, metadata_versions, parse_file_name,
    same_place, version_hint_path,
};

pub mod protocol;
use crate::iceberg::metadata::{MetadataCompression, TableMetadata};
use crate::io::{FileIO, WriteOutcome};

/// Choices of a commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommitOptions {
    /// Append the previous file to `metadata-log` (default true).
    pub update_metadata_log: bool,
    /// "Now" in milliseconds; `None` takes the system clock.
    pub now_ms: Option<i64>,
}

impl Default for CommitOptions {
    fn default() -> Self {
        CommitOptions {
            update_metadata_log: true,
            now_ms: None,
        }
    }
}

/// A written metadata file.
#[derive(Debug, Clone)]
pub struct Committed {
    pub path: String,
    pub version: u64,
    /// The metadata as written (with `last-updated-ms` and `metadata-log` updated).
    pub metadata: TableMetadata,
    /// Whether `version-hint.text` was written.
    pub version_hint_written: bool,
}

/// What [`commit`] did.
#[derive(Debug, Clone)]
pub enum CommitOutcome {
    Committed(Box<Committed>),
    /// Another writer committed first; re-read and recompute. `taken` says what it took: on a
    /// path table the metadata file of our version, on a catalog table the catalog's reason.
    Conflict {
        taken: String,
    },
    /// Our file `path` was written, but `rival` carries the same version and ours could not be
    /// taken back: readers may take either. Delete nothing.
    Unconfirmed {
        path: String,
        rival: String,
        why: String,
    },
    /// A catalog commit whose outcome cannot be known (a 5xx, a timeout or a lost connection
    /// after sending, and a reload that does not settle it): delete nothing now; the expiry
    /// journal finishes the deletes on the next run if the commit landed.
    Unknown {
        why: String,
    },
}

impl CommitOutcome {
    /// The message of an unconfirmed commit.
    pub fn unconfirmed_message(path: &str, rival: &str, why: &str) -> String {
        format!(
            "the commit of '{path}' is unconfirmed: another writer committed '{rival}' with the \
             same version ({why}), so readers may take either file"
        )
    }
}

/// The name (not path) and version of the file that follows `located`.
pub fn next_file_name(located: &LocatedMetadata) -> Result<(String, u64)> {
    located.check_writable()?;
    let current = located.version.unwrap_or(0);
    let next = current.checked_add(1).ok_or_else(|| {
        Error::new(
            ErrorKind::LimitExceeded,
            format!(
                "Metadata version {current} of '{}' cannot grow",
                located.path
            ),
        )
    })?;
    let suffix = located.compression.file_suffix();
    let name = match located.naming {
        NamingScheme::Versioned => format!("v{next}{suffix}"),
        NamingScheme::VersionedUuid => format!("v{next}-{}{suffix}", uuid::Uuid::new_v4()),
        NamingScheme::Sequenced { width } => {
            let width = width.max(5);
            format!("{next:0width$}-{}{suffix}", uuid::Uuid::new_v4())
        }
        NamingScheme::Unversioned => {
            return Err(Error::not_implemented(format!(
                "Cannot derive the next metadata file name from '{}'",
                located.path
            )));
        }
    };
    Ok((name, next))
}

/// Write `new_metadata` as the file after `located`; see the module comment.
pub async fn commit(
    io: &FileIO,
    located: &LocatedMetadata,
    mut new_metadata: TableMetadata,
    options: &CommitOptions,
) -> Result<CommitOutcome> {
    let (name, version) = next_file_name(located)?;
    check_same_table(located, &new_metadata)?;
    let path = format!("{}{name}", located.metadata_dir());
    new_metadata.set_file(&path);
    let previous = &located.metadata;
    let now = options.now_ms.unwrap_or_else(now_ms);
    new_metadata.set_last_updated_ms(now.max(previous.last_updated_ms().saturating_add(1)))?;
    if options.update_metadata_log {
        let max = new_metadata.previous_versions_max()?;
        let logged = logged_path(located);
        new_metadata.append_metadata_log(&logged, previous.last_updated_ms(), max)?;
    }
    let bytes = new_metadata.to_file_bytes(located.compression)?;
    let listed = metadata_versions(io, &located.location).await?;
    if located.pinned
        && let Some((_, newer)) = listed
            .iter()
            .filter(|(v, _)| Some(*v) > located.version)
            .max()
    {
        return Err(pinned_not_newest(
            "A commit",
            &located.location,
            &located.path,
            &format!("{}{newer}", located.metadata_dir()),
        ));
    }
    if let Some((_, taken)) = listed.iter().find(|(v, _)| *v >= version) {
        return Ok(CommitOutcome::Conflict {
            taken: format!("{}{taken}", located.metadata_dir()),
        });
    }
    match io.write_if_absent(&path, Bytes::from(bytes)).await? {
        WriteOutcome::AlreadyExists => return Ok(CommitOutcome::Conflict { taken: path }),
        WriteOutcome::Created => {}
    }
    let listed = metadata_versions(io, &located.location).await?;
    if let Some(outcome) = after_write_check(io, located, &path, &name, version, &listed).await {
        return Ok(outcome);
    }
    let version_hint_written = advance_version_hint(io, located, &name, version, &listed).await?;
    Ok(CommitOutcome::Committed(Box::new(Committed {
        path,
        version,
        metadata: new_metadata,
        version_hint_written,
    })))
}

/// The check after writing `name` (version `version`): another file of the same version makes
/// the commit a conflict (ours removed) or, when ours cannot be removed or a higher version exists
/// already, unconfirmed. `None`: ours is the only file of its version.
async fn after_write_check(
    io: &FileIO,
    located: &LocatedMetadata,
    path: &str,
    name: &str,
    version: u64,
    listed: &[(u64, String)],
) -> Option<CommitOutcome> {
    let rival = listed
        .iter()
        .find(|(v, n)| *v == version && n != name)
        .map(|(_, n)| format!("{}{n}", located.metadata_dir()))?;
    if let Some((_, higher)) = listed.iter().find(|(v, _)| *v > version) {
        return Some(CommitOutcome::Unconfirmed {
            path: path.to_string(),
            rival,
            why: format!("and '{higher}' already follows one of them"),
        });
    }
    match io.delete(path).await {
        Ok(()) => {
            // Two icetrim writers that saw each other both retry: do not meet again.
            let pause = 20 + (uuid::Uuid::new_v4().as_u128() % 200) as u64;
            tokio::time::sleep(std::time::Duration::from_millis(pause)).await;
            Some(CommitOutcome::Conflict { taken: rival })
        }
        Err(e) => Some(CommitOutcome::Unconfirmed {
            path: path.to_string(),
            rival,
            why: format!("and ours could not be removed: {}", e.message()),
        }),
    }
}

/// The previous file as `metadata-log` should name it: in the form of the metadata's own `location`
/// (`file:///t` for pyiceberg) when that is the table's location, else as it was found.
fn logged_path(located: &LocatedMetadata) -> String {
    let own = located.metadata.location().trim_end_matches('/');
    if same_place(own, &located.location) {
        format!("{}/metadata/{}", own, file_name(&located.path))
    } else {
        located.path.clone()
    }
}

fn check_same_table(located: &LocatedMetadata, new_metadata: &TableMetadata) -> Result<()> {
    match (located.metadata.table_uuid(), new_metadata.table_uuid()) {
        (Some(a), Some(b)) if a != b => Err(Error::logical(format!(
            "Commit to '{}' would change table-uuid from {a} to {b}",
            located.location
        ))),
        _ => Ok(()),
    }
}

async fn advance_version_hint(
    io: &FileIO,
    located: &LocatedMetadata,
    new_name: &str,
    version: u64,
    listed: &[(u64, String)],
) -> Result<bool> {
    if located.version_hint.is_none() && !located.use_version_hint {
        return Ok(false);
    }
    let hint_path = version_hint_path(&located.location);
    let existing = match io.read(&hint_path).await {
        Ok(bytes) => Some(String::from_utf8_lossy(&bytes).trim().to_string()),
        Err(e) if e.kind() == ErrorKind::FileDoesntExist => None,
        Err(e) => return Err(e),
    };
    // Like ClickHouse, never move a hint backwards (a faster writer may have advanced it), but
    // a hint naming a version that does not exist is no reason to stay (it is never the basis
    // of a commit).
    let hinted_version = existing
        .as_deref()
        .and_then(|h| parse_file_name(&hinted_file_name(h)))
        .and_then(|n| n.version);
    if hinted_version.is_some_and(|v| v > version && listed.iter().any(|(l, _)| *l == v)) {
        return Ok(false);
    }
    let content = hint_content(existing.as_deref(), new_name, version);
    io.overwrite(&hint_path, Bytes::from(content)).await?;
    Ok(true)
}

/// The new hint's text: digits when the old hint was digits (or there was none and the file is a
/// plain `vN.metadata.json`), the file name otherwise.
fn hint_content(existing: Option<&str>, new_name: &str, version: u64) -> String {
    let plain = new_name == format!("v{version}{}", MetadataCompression::None.file_suffix());
    let digits_style = match existing {
        Some(old) if !old.is_empty() => old.bytes().all(|b| b.is_ascii_digit()),
        _ => plain,
    };
    if digits_style {
        version.to_string()
    } else {
        file_name(new_name).to_string()
    }
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hint_style_follows_existing_hint() {
        assert_eq!(hint_content(None, "v4.metadata.json", 4), "4");
        assert_eq!(
            hint_content(None, "v4.gz.metadata.json", 4),
            "v4.gz.metadata.json"
        );
        assert_eq!(hint_content(Some("3"), "v4.gz.metadata.json", 4), "4");
        assert_eq!(
            hint_content(Some("v3.metadata.json"), "v4.metadata.json", 4),
            "v4.metadata.json"
        );
    }
}
