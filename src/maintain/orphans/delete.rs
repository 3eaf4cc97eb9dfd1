//! The delete step of `remove_orphan_files`: the orphans in chunks of [`DELETE_CHUNK`], each one
//! [`FileIO::delete_many_with`] that batches per store (1000 keys a request on S3, 256 on Azure,
//! one file elsewhere) with up to `iceberg_delete_concurrency` requests in flight. Between chunks
//! progress is reported and cancellation checked.
//! Every path is re-checked to lie inside the table location right before; one that does not is
//! never deleted and counts as a failed deletion. A file already gone counts as deleted. On local
//! disk a file is deleted only through folders opened without following links below the table
//! location, and only when it is a regular file (`FileIO::delete_below`): a folder swapped for a
//! link since the listing, or a file swapped for one, is a failed deletion, never a delete
//! elsewhere.

use super::OrphanMetrics;
use super::deletable;
use super::scan::Orphan;
use crate::io::FileIO;
use crate::maintain::orphans::classify::OrphanCategory;
use crate::progress::{Phase, Progress};

/// Failed paths named in the warning.
const FAILED_EXAMPLES: usize = 10;

/// What the deletes did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Deleted {
    /// Deleted files by category, and failures.
    pub tally: OrphanMetrics,
    pub warnings: Vec<String>,
    /// The listed sizes of the files deleted (or already gone).
    pub freed_bytes: u64,
}

/// Delete `orphans` (all under `location`).
pub async fn delete_orphans(
    io: &FileIO,
    location: &str,
    orphans: &[Orphan],
    concurrency: usize,
    progress: &Progress,
) -> Deleted {
    let mut tally = OrphanMetrics::default();
    let mut failed: Vec<String> = Vec::new();
    let mut freed_bytes = 0u64;
    progress.start(Phase::DeletingFiles, Some(orphans.len()));
    for chunk in orphans.chunks(DELETE_CHUNK) {
        if !progress.keep_going() {
            break;
        }
        for (category, size, uri, result) in
            delete_chunk(io, location, chunk, concurrency, progress).await
        {
            match result {
                Ok(()) => {
                    tally.count_deleted(category);
                    freed_bytes = freed_bytes.saturating_add(size);
                }
                Err(reason) => {
                    tally.count_failed();
                    if failed.len() < FAILED_EXAMPLES {
                        failed.push(format!("'{uri}' ({reason})"));
                    }
                }
            }
        }
    }
    let warnings = if tally.failed_deletions_count > 0 {
        vec![format!(
            "remove_orphan_files: {} deletion(s) failed; first: {}",
            tally.failed_deletions_count,
            failed.join(", ")
        )]
    } else {
        Vec::new()
    };
    Deleted {
        tally,
        warnings,
        freed_bytes,
    }
}

/// Paths per `delete_many_with` call: large enough to keep the requests of one call in flight.
pub const DELETE_CHUNK: usize = 8192;

type Outcomes = Vec<(OrphanCategory, u64, String, Result<(), String>)>;

/// One chunk: up to `in_flight` delete requests at once (each of up to 1000 keys on S3).
async fn delete_chunk(
    io: &FileIO,
    location: &str,
    chunk: &[Orphan],
    in_flight: usize,
    progress: &Progress,
) -> Outcomes {
    let mut outcomes: Outcomes = Vec::with_capacity(chunk.len());
    let mut uris = Vec::with_capacity(chunk.len());
    let mut categories = Vec::with_capacity(chunk.len());
    for orphan in chunk {
        if deletable(location, &orphan.uri) {
            uris.push(orphan.uri.clone());
            categories.push((orphan.category, orphan.size));
        } else {
            outcomes.push((
                orphan.category,
                orphan.size,
                orphan.uri.clone(),
                Err(format!("not inside the table location '{location}'")),
            ));
        }
    }
    let answers = io.delete_below(location, &uris, in_flight).await;
    for ((category, size), answer) in categories.into_iter().zip(answers) {
        let result = answer.result.map_err(|e| e.message().to_string());
        outcomes.push((category, size, answer.uri, result));
    }
    progress.advance(chunk.len() as u64, chunk.iter().map(|o| o.size).sum());
    outcomes
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn orphan(uri: &str, category: OrphanCategory) -> Orphan {
        Orphan {
            uri: uri.into(),
            category,
            size: 10,
            last_modified_ms: 0,
            reason: Default::default(),
        }
    }

    #[tokio::test]
    async fn deletes_inside_counts_missing_as_deleted_refuses_outside() {
        let io = FileIO::memory();
        for uri in [
            "memory:///t/data/a",
            "memory:///t/metadata/m.avro",
            "memory:///u/x",
        ] {
            io.overwrite(uri, Bytes::from_static(b"x")).await.unwrap();
        }
        let orphans = [
            orphan("memory:///t/data/a", OrphanCategory::Data),
            orphan("memory:///t/metadata/m.avro", OrphanCategory::Manifest),
            orphan("memory:///t/data/gone", OrphanCategory::Data),
            orphan("memory:///u/x", OrphanCategory::Data),
            orphan("memory:///t/../u/x", OrphanCategory::Data),
        ];
        let out = delete_orphans(&io, "memory:///t", &orphans, 2, &Progress::default()).await;
        assert_eq!(out.tally.deleted_data_files_count, 2);
        assert_eq!(out.tally.deleted_manifest_files_count, 1);
        assert_eq!(out.tally.failed_deletions_count, 2);
        // Deleted and already gone count their listed sizes; the refused ones do not.
        assert_eq!(out.freed_bytes, 30);
        assert!(
            io.head("memory:///u/x").await.is_ok(),
            "outside file deleted"
        );
        assert!(io.head("memory:///t/data/a").await.is_err());
        assert_eq!(out.warnings.len(), 1);
        assert!(
            out.warnings[0].contains("memory:///u/x"),
            "{:?}",
            out.warnings
        );
    }
}
