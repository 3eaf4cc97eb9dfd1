//! How `remove_orphan_files` judges a listed file.
//!
//! A listed file is an **orphan** when all hold:
//! 1. it is not reachable (the caller builds the reachable set of path keys from the newest
//!    metadata: itself, its `metadata-log`, `version-hint.text`, statistics, every snapshot's
//!    manifest list, manifests and live entries);
//! 2. it lies below the table root;
//! 3. it is not hidden: no path component below the table root starts with `_` or `.`, except a
//!    directory `<partition field>=<value>` whose field is one of the table's partition field names
//!    (e.g. `data/_c=1/`), as Java's `DeleteOrphanFiles` filters (`PartitionAwareHiddenPathFilter`);
//!    the exception is for directories only, never for the file name;
//! 4. it has a last-modified time (a file without one is kept and counted in
//!    `skipped_missing_metadata_count`, as ClickHouse does);
//! 5. it is older than `older_than` at **second precision**: `floor(mtime/1000) <
//!    floor(older_than/1000)`. ClickHouse compares whole seconds (`time_t`), object stores list
//!    whole seconds, and the argument has second precision, so the same file is judged alike
//!    everywhere; a file modified within the `older_than` second is too young.
//!
//! The checks run in that order, so a verdict names the first rule that keeps the file.
//!
//! **Category by name** (ClickHouse's `inspectFileCategory`, for the counts only; it never decides
//! what is deleted). "Under metadata/" means the path relative to the table root starts with
//! `metadata/` or contains `/metadata/`; it conditions only the first three rows. icetrim applies
//! the rule to the path *relative to the table root* (ClickHouse to the whole key; they differ only
//! when the table root itself contains a `/metadata/` directory).
//!
//! | where (relative to the root)        | name                                      | category        |
//! |--------------------------------------|-------------------------------------------|-----------------|
//! | under `metadata/`                    | contains `.metadata.json`                 | metadata        |
//! | under `metadata/`                    | ends `.avro` and contains `snap-`         | manifest list   |
//! | under `metadata/`                    | ends `.avro`                              | manifest        |
//! | under `metadata/`                    | ends `.puffin` or `.stats`                | statistics      |
//! | anywhere (rows above checked first)  | contains `eq-del`                         | equality delete |
//! | anywhere (rows above checked first)  | contains `-deletes.parquet` or `-delete-` | position delete |
//! | anywhere (rows above checked first)  | anything else                             | data            |
//!
//! So `metadata/notes.txt` is data, `data/x.avro` is data, `data/v1.metadata.json` is data, and
//! `data/00000-eq-delete-1.parquet` is an equality delete (`eq-del` is checked before `-delete-`).

pub use crate::maintain::file_graph::paths::relative_path;

/// What an orphan is counted as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OrphanCategory {
    Data,
    PositionDelete,
    EqualityDelete,
    Manifest,
    ManifestList,
    Metadata,
    Statistics,
}

/// Whether a path relative to the table root is hidden (rule 3).
pub fn is_hidden<S: AsRef<str>>(rel_path: &str, partition_field_names: &[S]) -> bool {
    let components: Vec<&str> = rel_path.split('/').filter(|c| !c.is_empty()).collect();
    let Some((file_name, dirs)) = components.split_last() else {
        return false;
    };
    starts_hidden(file_name)
        || dirs
            .iter()
            .any(|d| starts_hidden(d) && !is_partition_dir(d, partition_field_names))
}

fn starts_hidden(name: &str) -> bool {
    name.starts_with('_') || name.starts_with('.')
}

fn is_partition_dir<S: AsRef<str>>(dir: &str, partition_field_names: &[S]) -> bool {
    dir.split_once('=')
        .is_some_and(|(field, _)| partition_field_names.iter().any(|p| p.as_ref() == field))
}

/// ClickHouse's category by file name (see the table above); `rel_path` is relative to the root.
pub fn category_by_name(rel_path: &str) -> OrphanCategory {
    let under_metadata = rel_path.starts_with("metadata/") || rel_path.contains("/metadata/");
    if under_metadata {
        if rel_path.contains(".metadata.json") {
            return OrphanCategory::Metadata;
        }
        if rel_path.ends_with(".avro") {
            return if rel_path.contains("snap-") {
                OrphanCategory::ManifestList
            } else {
                OrphanCategory::Manifest
            };
        }
        if rel_path.ends_with(".puffin") || rel_path.ends_with(".stats") {
            return OrphanCategory::Statistics;
        }
    }
    if rel_path.contains("eq-del") {
        OrphanCategory::EqualityDelete
    } else if rel_path.contains("-deletes.parquet") || rel_path.contains("-delete-") {
        OrphanCategory::PositionDelete
    } else {
        OrphanCategory::Data
    }
}

/// A file as the listing gave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListedFile<'a> {
    /// The path key, normalised like the reachable set's keys.
    pub key: &'a str,
    pub size: Option<u64>,
    pub last_modified_ms: Option<i64>,
}

/// The table-wide inputs of the orphan rules.
#[derive(Debug, Clone, Copy)]
pub struct OrphanRules<'a, S: AsRef<str>> {
    pub table_root_key: &'a str,
    /// Partition field names of every partition spec of the table.
    pub partition_field_names: &'a [S],
    pub older_than_ms: i64,
}

/// The verdict on one listed file; every variant but `Orphan` keeps the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OrphanVerdict {
    Reachable,
    OutsideTableRoot,
    Hidden,
    NoLastModified,
    TooYoung,
    Orphan(OrphanCategory),
}

/// Whether a file modified at `mtime_ms` is older than `older_than_ms`, in whole seconds.
pub fn older_than_at_second_precision(mtime_ms: i64, older_than_ms: i64) -> bool {
    mtime_ms.div_euclid(1000) < older_than_ms.div_euclid(1000)
}

/// Judge one listed file (rules 1–5, in order).
pub fn classify<S: AsRef<str>>(
    file: &ListedFile<'_>,
    is_reachable: &dyn Fn(&str) -> bool,
    rules: &OrphanRules<'_, S>,
) -> OrphanVerdict {
    if is_reachable(file.key) {
        return OrphanVerdict::Reachable;
    }
    let Some(rel) = relative_path(rules.table_root_key, file.key) else {
        return OrphanVerdict::OutsideTableRoot;
    };
    if is_hidden(rel, rules.partition_field_names) {
        return OrphanVerdict::Hidden;
    }
    let Some(mtime_ms) = file.last_modified_ms else {
        return OrphanVerdict::NoLastModified;
    };
    if !older_than_at_second_precision(mtime_ms, rules.older_than_ms) {
        return OrphanVerdict::TooYoung;
    }
    OrphanVerdict::Orphan(category_by_name(rel))
}

/// The metadata file a `remove_orphan_files` run planned on: its version (from the name) and
/// `last-updated-ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlannedMetadata {
    pub version: Option<u64>,
    pub last_updated_ms: i64,
}

/// What the metadata-file rule says about an orphan candidate (without it, a scan planned on a
/// file chosen by `last-updated-ms` would delete a higher-version file, the real newest commit).
///
/// A candidate whose name is a metadata file (`*.metadata.json`, any gzip spelling) is never
/// deleted when its version number, or its `last-updated-ms`, is at least that of the planned
/// file: it may be the commit readers take. The version comes free from the name; the
/// `last-updated-ms` costs a read, so only candidates the name does not settle need it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetadataFileCheck {
    /// Not a metadata file name: the rule does not apply.
    NotMetadata,
    /// A versioned name at least as new as the planned file: keep.
    NewerVersion,
    /// Read the file's `last-updated-ms` and ask [`metadata_file_at_least_as_new`].
    NeedsLastUpdated,
}

/// The metadata-file rule on the file name `name` (see [`MetadataFileCheck`]).
pub fn metadata_file_check(name: &str, planned: &PlannedMetadata) -> MetadataFileCheck {
    use crate::iceberg::metadata::MetadataCompression;
    let name = name.rsplit('/').next().unwrap_or(name);
    if MetadataCompression::from_file_name(name).is_none() {
        return MetadataFileCheck::NotMetadata;
    }
    let version = crate::iceberg::locate::parse_file_name(name).and_then(|n| n.version);
    match (version, planned.version) {
        (Some(v), Some(p)) if v >= p => MetadataFileCheck::NewerVersion,
        _ => MetadataFileCheck::NeedsLastUpdated,
    }
}

/// Whether a metadata file with `last_updated_ms` (`None`: unreadable) is at least as new as the
/// planned one. An unreadable file cannot be vouched for, so it counts as new (kept).
pub fn metadata_file_at_least_as_new(
    last_updated_ms: Option<i64>,
    planned: &PlannedMetadata,
) -> bool {
    last_updated_ms.is_none_or(|ms| ms >= planned.last_updated_ms)
}

#[cfg(test)]
#[path = "classify_tests.rs"]
mod tests;
