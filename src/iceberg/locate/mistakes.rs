//! Errors that say what the user got wrong when a table's metadata is not where it was looked
//! for: a warehouse root given instead of a table (the tables found below it), a copied or moved
//! table (its manifests point at another root).

use super::*;

/// How many folders [`tables_below`] lists at most, and how many tables it names.
const FOLDERS_LISTED: usize = 64;
const TABLES_NAMED: usize = 10;

/// The tables one or two folder levels below `location` (a folder holding a `metadata/` folder),
/// for a location that is a warehouse or a namespace rather than a table. Bounded: at most
/// [`FOLDERS_LISTED`] folder listings, [`TABLES_NAMED`] tables, in name order.
pub(super) async fn tables_below(io: &FileIO, location: &str) -> Vec<String> {
    let mut tables = Vec::new();
    let mut listings = 1;
    let mut pending: Vec<(String, usize)> = io
        .folder_names(location, FOLDERS_LISTED)
        .await
        .into_iter()
        .rev()
        .map(|name| (format!("{location}/{name}"), 1))
        .collect();
    while let Some((folder, depth)) = pending.pop() {
        if tables.len() >= TABLES_NAMED || listings >= FOLDERS_LISTED {
            break;
        }
        listings += 1;
        let children = io.folder_names(&folder, FOLDERS_LISTED).await;
        if children.iter().any(|c| c == "metadata") {
            tables.push(folder);
        } else if depth < 2 {
            pending.extend(
                children
                    .into_iter()
                    .rev()
                    .map(|name| (format!("{folder}/{name}"), depth + 1)),
            );
        }
    }
    tables
}

/// What to say when `location` has no `metadata/` folder, given the tables found below it.
pub(super) fn warehouse_hint(location: &str, below: &[String]) -> String {
    match below {
        [] => String::new(),
        [first, ..] => format!(
            ". There is no metadata/ folder in '{location}'; tables below it: {}{}. Give the \
             table's own folder, e.g. '{first}'",
            below
                .iter()
                .map(|t| format!("'{t}'"))
                .collect::<Vec<_>>()
                .join(", "),
            if below.len() >= TABLES_NAMED {
                ", ..."
            } else {
                ""
            }
        ),
    }
}

/// For a table whose metadata names files outside its `location`: when every one of `outside`
/// lies in one other table folder (the part before its `/metadata/` or `/data/`), the question
/// that explains it, as a sentence to append to the refusal; otherwise nothing.
pub fn copied_or_moved_hint<S: AsRef<str>>(location: &str, outside: &[S]) -> String {
    let root_of = |uri: &str| {
        ["/metadata/", "/data/"]
            .iter()
            .filter_map(|marker| uri.rfind(marker).map(|at| uri[..at].to_string()))
            .min_by_key(String::len)
    };
    let mut roots = outside.iter().map(|uri| root_of(uri.as_ref()));
    let Some(Some(first)) = roots.next() else {
        return String::new();
    };
    if roots.any(|root| root.as_deref() != Some(first.as_str())) || same_place(&first, location) {
        return String::new();
    }
    format!(
        ". Its manifests point at '{first}': was the table copied or moved? Its metadata still \
         names the files where they were written; maintain the table there (register \
         '{first}'), or rewrite its paths for the new place first"
    )
}

pub(super) fn no_metadata(location: &str, uuid: Option<&String>) -> Error {
    let message = match uuid {
        Some(uuid) => format!(
            "The metadata file for Iceberg table with path {location} and table UUID {uuid} doesn't exist"
        ),
        None => format!("The metadata file for Iceberg table with path {location} doesn't exist"),
    };
    Error::new(ErrorKind::FileDoesntExist, message)
}
