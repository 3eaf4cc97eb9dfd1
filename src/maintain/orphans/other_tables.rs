//! Other tables under the location (see docs/safety.md, "Other tables under the location"): a table
//! whose metadata lies under ours would have its live files judged orphans, so
//! `remove_orphan_files` looks for them before deleting.
//!
//! **What is found.** Every listed file (the whole location, whatever `location =` narrows the
//! scan to) whose name metadata resolution would take for table metadata: any name ending in a
//! metadata-file suffix (`.metadata.json`, `.gz.metadata.json`, `.gzip.metadata.json`,
//! `.metadata.json.gz`; so `v<N>…`, `v<N>-<uuid>…`, `<N>-<uuid>…` and the temporary
//! `<uuid>.metadata.json` of a commit in flight alike) and `version-hint.text`. Such a file that
//! is not a direct child of our own `<location>/metadata/` belongs to another table, whatever its
//! `table-uuid` (a copied table may share ours; a v1 table may have none).
//!
//! **Its table's location** (the folder protected as a whole): the folder above the one that
//! holds the file. For `<x>/metadata/v3.metadata.json` that is `<x>`, as every writer lays
//! tables out. A file held by a folder of another name (`<x>/meta/v3.metadata.json`, a
//! `write.metadata.path` layout or a copy) is treated alike: the holding folder is taken for that
//! table's metadata folder, so `<x>` is protected, data folders beside it included. When that
//! folder is our own location or above it (a metadata file directly in our root, or in a
//! first-level folder such as `data/`), the other table's location covers ours: it is reported
//! as our own location, nothing of ours can be told apart from it, and nothing is deleted in
//! protect mode. The metadata file's own `location` field is read and reported too; when it
//! names a folder strictly inside our location that is protected as well. Files are grouped
//! into tables by the derived location.
//!
//! **Not looked for**: a table whose location is the parent of ours (we are inside it, not it
//! inside us), and tables living elsewhere that write into our location (`write.data.path`):
//! their metadata is not under our location, so no listing of it sees them.
//!
//! **Default: refuse** (`BAD_ARGUMENTS`, as for `gc.enabled = false`: the remedy is the
//! statement's own argument), naming up to [`NAMED_TABLES`] tables with their locations, before
//! anything is deleted; dry runs refuse alike, EXPLAIN lists them (reason `refused`).
//!
//! **`protect_other_tables = 1`**: every metadata file found for such a table (all of them, not
//! just the newest: an older one may still name snapshots another engine has not expired yet) is
//! read, and everything they reach (their metadata-log, statistics, every snapshot's manifest
//! list, manifests and live entries) joins a second keep set; files under a found table's
//! location are never deleted. A found metadata file that cannot be read or parsed, or a manifest
//! list or manifest of it that cannot be read, refuses the statement (the error names the file):
//! a partial keep set would make live files look orphaned. References outside our location are
//! not our business (we never delete there) and are ignored. An orphan of ours that the keep set
//! or a protected location holds is kept with reason `other_table`.

//!
//! This file is the decision half (pure: names, locations, grouping, what protection keeps);
//! [`super::protect`] searches, reads and refuses.

use crate::iceberg::locate::{file_name, parse_file_name};
use crate::iceberg::metadata::MetadataCompression;
use crate::io::{is_under, path_key};
use crate::maintain::file_graph::paths::relative_path;
use crate::maintain::file_graph::reachable::{Lookup, ReachableFiles};

/// Tables named in the refusal; the rest are counted.
pub const NAMED_TABLES: usize = 10;

/// Whether a file name is one metadata resolution takes for table metadata (module comment).
pub fn is_table_metadata_name(name: &str) -> bool {
    let name = file_name(name);
    name == "version-hint.text" || MetadataCompression::from_file_name(name).is_some()
}

/// Whether the listed file `uri` is table metadata of another table than the one at
/// `location`: a metadata name that is not a direct child of `<location>/metadata/`.
pub fn is_foreign_metadata(location: &str, uri: &str) -> bool {
    if !is_table_metadata_name(uri) {
        return false;
    }
    let key = path_key(uri);
    match relative_path(&path_key(location), &key) {
        Some(rel) => rel
            .strip_prefix("metadata/")
            .is_none_or(|name| name.contains('/')),
        None => false,
    }
}

/// The location of the table a foreign metadata file belongs to: the folder above the folder
/// holding it (module comment). `uri` as listed; the result in the same spelling.
pub fn derived_location(uri: &str) -> String {
    let trimmed = uri.trim_end_matches('/');
    let holder = trimmed.rsplit_once('/').map_or("", |(dir, _)| dir);
    let above = holder.rsplit_once('/').map_or("", |(dir, _)| dir);
    above.to_string()
}

/// One other table found under the location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtherTable {
    /// Its location, derived from where its metadata lies (listing spelling, no trailing slash).
    pub location: String,
    /// The metadata files (and version hints) found for it, sorted.
    pub metadata_files: Vec<String>,
    /// The `location` field of each metadata file read, in `metadata_files` order (`None` for a
    /// version hint, or a file not read).
    pub location_fields: Vec<Option<String>>,
}

impl OtherTable {
    fn json_files(&self) -> impl Iterator<Item = &String> {
        self.metadata_files
            .iter()
            .filter(|f| file_name(f) != "version-hint.text")
    }

    /// The newest metadata file by its name's version, else the last by name.
    pub(super) fn newest(&self) -> Option<&String> {
        self.json_files().max_by_key(|f| {
            let version = parse_file_name(f).and_then(|n| n.version);
            (version, f.as_str())
        })
    }
}

/// Group foreign metadata files (as listed) into tables by derived location; a derived location
/// that is not strictly inside `location` (ours, or above it) is taken as `location` itself.
pub fn group(location: &str, found: Vec<String>) -> Vec<OtherTable> {
    let root = location.trim_end_matches('/');
    let mut by_location: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for uri in found {
        let derived = derived_location(&uri);
        let derived = if is_under(root, &derived) {
            derived
        } else {
            root.to_string()
        };
        by_location.entry(derived).or_default().push(uri);
    }
    by_location
        .into_iter()
        .map(|(location, mut metadata_files)| {
            metadata_files.sort();
            let location_fields = vec![None; metadata_files.len()];
            OtherTable {
                location,
                metadata_files,
                location_fields,
            }
        })
        .collect()
}

/// What protect mode keeps of other tables.
#[derive(Debug)]
pub struct Protection {
    /// The tables found, with the `location` field of every metadata file.
    pub tables: Vec<OtherTable>,
    /// Folders nothing is deleted under (derived locations, and `location` fields inside ours).
    pub folders: Vec<String>,
    /// Everything their metadata files reach, placed relative to our location.
    pub reachable: ReachableFiles,
}

impl Protection {
    /// Whether the listed file `uri` is another table's.
    pub fn keeps(&self, uri: &str) -> bool {
        self.folders.iter().any(|folder| is_under(folder, uri))
            || self.reachable.lookup(&path_key(uri)) != Lookup::Unreachable
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_names() {
        for name in [
            "v1.metadata.json",
            "00001-0f2a0c38-5d0e-4b4b-9a4c-3c4e5b6a7d8e.metadata.json",
            "0f2a0c38-5d0e-4b4b-9a4c-3c4e5b6a7d8e.metadata.json",
            "v2.gz.metadata.json",
            "v2.gzip.metadata.json",
            "v2.metadata.json.gz",
            "version-hint.text",
            "s3://b/t/x/metadata/v9-0f2a0c38-5d0e-4b4b-9a4c-3c4e5b6a7d8e.metadata.json",
        ] {
            assert!(is_table_metadata_name(name), "{name}");
        }
        for name in [
            "x.json",
            "snap-1.avro",
            "metadata.json.bak",
            "version-hint.txt",
        ] {
            assert!(!is_table_metadata_name(name), "{name}");
        }
    }

    #[test]
    fn ours_are_direct_children_of_our_metadata_folder() {
        let foreign = |uri: &str| is_foreign_metadata("s3://b/t", uri);
        assert!(!foreign("s3://b/t/metadata/v1.metadata.json"));
        assert!(!foreign("s3://b/t/metadata/version-hint.text"));
        assert!(!foreign("s3://b/t/data/x.parquet"));
        assert!(foreign("s3://b/t/nested/metadata/v1.metadata.json"));
        assert!(foreign("s3://b/t/metadata/old/v1.metadata.json"));
        assert!(foreign("s3://b/t/v1.metadata.json"));
        assert!(foreign("s3a://b//t/data/b/metadata/version-hint.text"));
        assert!(!foreign("s3://b/t2/metadata/v1.metadata.json"));
        assert!(!is_foreign_metadata(
            "/w/t",
            "/w/t/metadata/v1.metadata.json"
        ));
        assert!(is_foreign_metadata(
            "file:///w/t",
            "/w/t/b/metadata/v1.metadata.json"
        ));
    }

    #[test]
    fn derived_locations() {
        assert_eq!(
            derived_location("s3://b/t/nested/metadata/v1.metadata.json"),
            "s3://b/t/nested"
        );
        assert_eq!(derived_location("/w/t/x/meta/v1.metadata.json"), "/w/t/x");
        assert_eq!(derived_location("/w/t/data/v1.metadata.json"), "/w/t");
        assert_eq!(derived_location("/w/t/v1.metadata.json"), "/w");
    }

    #[test]
    fn grouping_by_location() {
        let tables = group(
            "/w/t",
            vec![
                "/w/t/b/metadata/v2.metadata.json".into(),
                "/w/t/c/metadata/version-hint.text".into(),
                "/w/t/b/metadata/v1.metadata.json".into(),
            ],
        );
        assert_eq!(tables.len(), 2);
        assert_eq!(tables[0].location, "/w/t/b");
        assert_eq!(
            tables[0].newest().map(String::as_str),
            Some("/w/t/b/metadata/v2.metadata.json")
        );
        assert_eq!(tables[1].newest(), None);
        // At our root or above it: the other table covers ours.
        for uri in ["s3://b/v1.metadata.json", "s3://b/data/v1.metadata.json"] {
            let tables = group("s3://b/", vec![uri.into()]);
            assert_eq!(tables[0].location, "s3://b", "{uri}");
        }
        let tables = group("/w/t", vec!["/w/t/v1.metadata.json".into()]);
        assert_eq!(tables[0].location, "/w/t");
    }

    #[test]
    fn protection_covers_folders_above_our_location() {
        let protection = Protection {
            tables: Vec::new(),
            folders: vec!["/w".into(), "/w/t/b".into()],
            reachable: ReachableFiles::new("/w/t"),
        };
        assert!(protection.keeps("/w/t/data/x.parquet"));
        let narrow = Protection {
            folders: vec!["/w/t/b".into()],
            ..protection
        };
        assert!(narrow.keeps("/w/t/b/data/x.parquet"));
        assert!(!narrow.keeps("/w/t/data/x.parquet"));
        assert!(!narrow.keeps("/w/t/b2/x.parquet"));
    }
}
