//! Commits from tests on a path table, each through the one commit loop of
//! `iceberg::commit::protocol` (the loop every statement uses): a metadata edit
//! ([`protocol::Edit`]) or a prepared change set ([`ChangesCommit`]).

use icetrim::Result;
use icetrim::internals::iceberg::commit::protocol::{self, Edit, PathTable};
use icetrim::internals::iceberg::commit::{CommitOptions, Committed};
use icetrim::internals::iceberg::locate::MetadataSettings;
use icetrim::internals::iceberg::metadata::TableMetadata;
use icetrim::internals::iceberg::txn::{ChangesCommit, CommitRequest};
use icetrim::internals::io::FileIO;

/// Locate the newest metadata at `location`, let `change` compute the next (`None`: nothing to
/// write, `Ok(None)`) and commit it; a conflict starts over, at most `max_attempts` times.
pub async fn edit_path_table<F>(
    io: &FileIO,
    location: &str,
    settings: &MetadataSettings,
    max_attempts: u32,
    options: &CommitOptions,
    change: F,
) -> Result<Option<Committed>>
where
    F: FnMut(&TableMetadata) -> Result<Option<TableMetadata>>,
{
    let table = PathTable {
        io,
        location,
        settings,
    };
    let mut edit = Edit {
        name: "commit",
        options: *options,
        change,
    };
    protocol::run(&table, &mut edit, max_attempts, None).await
}

/// Prepare `request` on the newest metadata at `location` and commit it; a conflict deletes the
/// attempt's files and starts over, at most `max_attempts` times.
pub async fn commit_request(
    io: &FileIO,
    location: &str,
    settings: &MetadataSettings,
    max_attempts: u32,
    request: &CommitRequest,
) -> Result<Committed> {
    let table = PathTable {
        io,
        location,
        settings,
    };
    protocol::run(
        &table,
        &mut ChangesCommit::new(io, request),
        max_attempts,
        None,
    )
    .await
}
