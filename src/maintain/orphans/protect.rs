//! The reading half of the other-tables rule (see [`super::other_tables`] for what is found and
//! why): search the whole location for other tables' metadata, name them in the refusal, and in
//! protect mode read every metadata file found and everything it reaches. Reads storage, never
//! writes.

use futures::{StreamExt, TryStreamExt};

use super::other_tables::{NAMED_TABLES, OtherTable, Protection, is_foreign_metadata};
use crate::error::{Error, ErrorKind, Result};
use crate::iceberg::locate::{file_name, parse_file_name, read_metadata};
use crate::io::{FileIO, is_under};
use crate::maintain::file_graph::reachable::{Reach, ReachableFiles, References};
use crate::progress::Progress;

/// Search the whole `location` for foreign metadata (when the scan itself was narrowed).
pub async fn search(io: &FileIO, location: &str, concurrency: usize) -> Result<Vec<String>> {
    let root = location.trim_end_matches('/');
    let mut listing = io.list_concurrent(root, concurrency);
    let mut found = Vec::new();
    loop {
        match listing.try_next().await {
            Ok(Some(file)) => {
                if is_foreign_metadata(location, &file.uri) {
                    found.push(file.uri);
                }
            }
            Ok(None) => break,
            Err(e) if e.kind() == ErrorKind::FileDoesntExist => break,
            Err(e) => {
                return Err(e.context(
                    "remove_orphan_files: listing the table location for other tables' metadata",
                ));
            }
        }
    }
    Ok(found)
}

/// The refusal when other tables are found and not protected. Reads the newest metadata file of
/// each named table for its `location` field (an unreadable one is said to be so).
pub async fn refusal(
    io: &FileIO,
    table_name: &str,
    location: &str,
    others: &[OtherTable],
) -> Error {
    let mut named = Vec::new();
    for other in others.iter().take(NAMED_TABLES) {
        let detail = match other.newest() {
            Some(file) => match read_metadata(io, file).await {
                Ok(m) => format!("metadata '{file}', its location field '{}'", m.location()),
                Err(e) => format!("metadata '{file}', unreadable: {}", e.message()),
            },
            None => format!("version hint '{}'", other.metadata_files.join("', '")),
        };
        named.push(format!("'{}' ({detail})", other.location));
    }
    let more = others.len().saturating_sub(NAMED_TABLES);
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    Error::bad_arguments(format!(
        "remove_orphan_files on {table_name} refuses to run: {} other Iceberg table(s) keep \
         metadata under the table location '{location}', and their files would look orphaned: \
         {}{more}. Nothing was deleted. Move those tables out of the location, or run with \
         protect_other_tables = 1 to keep everything under their locations and every file any of \
         their metadata files reaches",
        others.len(),
        named.join(", ")
    ))
}

/// Read every metadata file of every table in `others` and gather what they reach. What the
/// newest metadata file of each table reaches must be read; an older one's manifest lists and
/// manifests are protected when they are there (that table's own expiry deleted some of them).
pub async fn protect(
    io: &FileIO,
    table_name: &str,
    location: &str,
    mut others: Vec<OtherTable>,
    concurrency: usize,
    progress: &Progress,
) -> Result<Protection> {
    let mut references = References::default();
    let mut folders: Vec<String> = others.iter().map(|o| o.location.clone()).collect();
    // Every metadata file of every table, read `concurrency` at a time, folded in order.
    let jobs: Vec<(usize, usize, String)> = others
        .iter()
        .enumerate()
        .flat_map(|(t, other)| {
            other
                .metadata_files
                .iter()
                .enumerate()
                .map(move |(f, file)| (t, f, file.clone()))
        })
        .collect();
    let mut read = futures::stream::iter(jobs)
        .map(|(t, f, file)| async move {
            if file_name(&file) == "version-hint.text" {
                return Ok((t, f, file, None));
            }
            match read_metadata(io, &file).await {
                Ok(metadata) => Ok((t, f, file, Some(metadata))),
                Err(e) => Err((e, t, file)),
            }
        })
        .buffered(concurrency.max(1))
        .boxed();
    while let Some(next) = read.next().await {
        let (t, f, file, metadata) = next.map_err(|(e, t, file)| {
            let other = others.get(t).map_or("", |o| o.location.as_str());
            unreadable(e, table_name, other, &file)
        })?;
        let Some(other) = others.get_mut(t) else {
            continue;
        };
        let Some(metadata) = metadata else {
            references.add_file(&file);
            continue;
        };
        let reach = reach_of(other, &file);
        references.add_metadata_reaching(&metadata, &file, &other.location, reach);
        let field = metadata.location().trim_end_matches('/').to_string();
        if is_under(location, &field) && !folders.contains(&field) {
            folders.push(field.clone());
        }
        if let Some(slot) = other.location_fields.get_mut(f) {
            *slot = Some(field);
        }
    }
    drop(read);
    let reachable = references
        .read_into(io, ReachableFiles::new(location), concurrency, progress)
        .await
        .map_err(|e| {
            e.context(format!(
                "remove_orphan_files on {table_name}: cannot read the files of the other tables \
                 found under the table location, so their files cannot be told from orphans; \
                 nothing was deleted"
            ))
        })?;
    Ok(Protection {
        tables: others,
        folders,
        reachable,
    })
}

/// Whether what `file` (a metadata file of `other`) names must be read: it is `other`'s newest,
/// or its version cannot be told from its name (so it might be the newest).
fn reach_of(other: &OtherTable, file: &str) -> Reach {
    let versioned = parse_file_name(file).and_then(|n| n.version).is_some();
    if !versioned || other.newest().map(String::as_str) == Some(file) {
        Reach::Required
    } else {
        Reach::IfPresent
    }
}

fn unreadable(e: Error, table_name: &str, other: &str, file: &str) -> Error {
    e.context(format!(
        "remove_orphan_files on {table_name}: cannot read metadata file '{file}' of the other \
         table at '{other}' found under the table location, so its files cannot be told from \
         orphans; nothing was deleted"
    ))
}
