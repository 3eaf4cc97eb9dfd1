//! Checks before maintenance works on "this table":
//!
//! - [`locate_newest`]: maintenance plans on the newest committed metadata only; a table
//!   setting `iceberg_metadata_file_path` pinning another file refuses the statement
//!   ([`pinned_not_newest`], also raised by every commit, see [`crate::iceberg::commit`]).
//! - [`check_single_table_uuid`]: our own `metadata/` must hold one table. Two tables written to
//!   one location leave two `table-uuid`s there, and "this table" could silently be the other
//!   one; every procedure refuses unless `iceberg_metadata_table_uuid` picks one. Only the first
//!   bytes of each versioned metadata file are read ([`crate::iceberg::metadata_peek`]), so a long
//!   history stays cheap (one small range read per file).

use crate::error::{Error, ErrorKind, Result};
use crate::iceberg::locate::{
    LocatedMetadata, MetadataSettings, file_name, locate, metadata_dir, metadata_versions,
    normalize_uuid,
};
use crate::io::FileIO;

/// The error for maintenance asked to work on a pinned file that is not the newest (planning
/// on an older file forks the table and deletes what the newest still needs).
pub fn pinned_not_newest(procedure: &str, table: &str, pinned: &str, newest: &str) -> Error {
    Error::bad_arguments(format!(
        "{procedure} on {table} works only on the newest metadata file, but the table setting \
         iceberg_metadata_file_path pins '{pinned}' and the newest is '{newest}'"
    ))
}

/// [`locate`] for maintenance: the newest committed metadata. When `iceberg_metadata_file_path`
/// pins a file, it must be the newest one (else [`pinned_not_newest`]); `procedure` and `table`
/// name the statement in the error.
pub async fn locate_newest(
    io: &FileIO,
    location: &str,
    settings: &MetadataSettings,
    procedure: &str,
    table: &str,
) -> Result<LocatedMetadata> {
    let located = locate(io, location, settings).await?;
    if settings.metadata_file_path.is_none() {
        return Ok(located);
    }
    let unpinned = MetadataSettings {
        metadata_file_path: None,
        ..settings.clone()
    };
    match locate(io, location, &unpinned).await {
        Ok(newest) if crate::io::path_key(&newest.path) == crate::io::path_key(&located.path) => {
            Ok(located)
        }
        Ok(newest) => Err(pinned_not_newest(
            procedure,
            table,
            &located.path,
            &newest.path,
        )),
        // No versioned metadata file at all: the pinned one is the only candidate.
        Err(e) if e.kind() == ErrorKind::FileDoesntExist => Ok(located),
        Err(e) => Err(e),
    }
}

/// Refuse when the versioned metadata files of our own `metadata/` carry more than one
/// `table-uuid` (two tables written to one location) and `iceberg_metadata_table_uuid` does not
/// pick one: "this table" could silently be the other one. Only the first bytes of each file are
/// read ([`crate::iceberg::metadata_peek`]). A file without `table-uuid` (format v1) sides with
/// either. With `even_when_chosen` (a procedure that deletes by listing, whose listing would
/// take the other table's files for orphans) a second table refuses even when the setting picks
/// one. `procedure` and `table` name the statement in the error.
pub async fn check_single_table_uuid(
    io: &FileIO,
    location: &str,
    settings: &MetadataSettings,
    in_flight: usize,
    (procedure, table): (&str, &str),
    even_when_chosen: bool,
) -> Result<()> {
    let chosen = settings.table_uuid.is_some() || settings.metadata_file_path.is_some();
    if chosen && !even_when_chosen {
        return Ok(());
    }
    let tables = table_uuids(io, location, in_flight).await?;
    if tables.len() < 2 {
        return Ok(());
    }
    Err(two_tables_error(
        procedure, table, location, &tables, chosen,
    ))
}

/// The distinct `table-uuid`s (normalised) of the versioned metadata files of our own
/// `metadata/`, each with its original spelling and up to two example file names.
pub async fn table_uuids(
    io: &FileIO,
    location: &str,
    in_flight: usize,
) -> Result<Vec<(String, String, Vec<String>)>> {
    let location = location.trim_end_matches('/');
    let dir = metadata_dir(location);
    let mut files = metadata_versions(io, location).await?;
    files.sort();
    let paths: Vec<String> = files.iter().map(|(_, n)| format!("{dir}{n}")).collect();
    let heads = crate::iceberg::metadata_peek::read_heads(io, &paths, in_flight).await;
    let mut tables: Vec<(String, String, Vec<String>)> = Vec::new();
    for (path, head) in heads {
        let head = match head {
            Ok(head) => head,
            // A storage failure leaves the question open: refuse rather than guess.
            Err(e) if e.kind().is_storage_failure() => return Err(e),
            // Gone since the listing (a concurrent cleanup), or not metadata at all (a torn
            // write): it names no table.
            Err(_) => continue,
        };
        let Some(uuid) = head.table_uuid else {
            continue;
        };
        let key = normalize_uuid(&uuid);
        let name = file_name(&path).to_string();
        match tables.iter_mut().find(|(k, _, _)| *k == key) {
            Some((_, _, examples)) => {
                if examples.len() < 2 {
                    examples.push(name);
                }
            }
            None => tables.push((key, uuid, vec![name])),
        }
    }
    Ok(tables)
}

fn two_tables_error(
    procedure: &str,
    table: &str,
    location: &str,
    tables: &[(String, String, Vec<String>)],
    chosen: bool,
) -> Error {
    let named: Vec<String> = tables
        .iter()
        .map(|(_, uuid, examples)| format!("table-uuid {uuid} (e.g. {})", examples.join(", ")))
        .collect();
    let folder = metadata_dir(location.trim_end_matches('/'));
    let head = format!(
        "{procedure} on {table}: the metadata folder '{folder}' holds metadata files of {} \
         tables: {}. Two tables were written to one location",
        tables.len(),
        named.join("; ")
    );
    Error::bad_arguments(if chosen {
        format!(
            "{head}; even with iceberg_metadata_table_uuid naming one, {procedure} would take \
             the other table's files for orphans; nothing was deleted"
        )
    } else {
        format!(
            "{head}, so it cannot tell which one it maintains; name the table with the table \
             setting iceberg_metadata_table_uuid"
        )
    })
}
