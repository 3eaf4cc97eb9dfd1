//! The files a table's newest committed metadata reaches, for `remove_orphan_files` (SPEC §4).
//!
//! Reachable = the metadata file itself, every `metadata-log` file, `metadata/version-hint.text`
//! (whether or not it exists, so it is never an orphan, even stale), every `statistics` and
//! `partition-statistics` file, and for every snapshot (every ref's, staged and rolled-back ones
//! too: all of `snapshots`) its manifest list (or a v1 snapshot's inline `manifests`), those
//! manifests, and their live (ADDED or EXISTING) entries. A file named only by a DELETED entry is
//! not reachable (as in Java's `DeleteOrphanFiles`, which reads live entries only).
//!
//! Reading: each distinct manifest list, then each distinct manifest, is read once, up to
//! `concurrency` at a time (`iceberg_metadata_read_concurrency`). Any read or decode failure
//! fails the whole collection: a partial reachable set would make live files look orphaned.
//!
//! Storage: the set holds each reachable file's path *relative to the table location* (its
//! [`path_key`] with the location's `family://authority/path` prefix removed), so the memory is
//! about the reachable files' relative names; the set is sized up front from the manifest lists'
//! file counts. A referenced file that is not under the table location (by [`is_under`]) is not
//! stored but counted in [`ReachableFiles::outside`], and the caller refuses to run.
//!
//! Lookup of a listed file (by path key) answers [`Lookup::PrefixMismatch`] when its path below
//! the location matches a reachable file but its scheme family or authority differ (Java's
//! `PrefixMismatchMode.ERROR`): such a file is neither provably reachable nor provably orphaned.

use std::collections::{HashMap, HashSet};

use futures::{StreamExt, TryStreamExt};

use crate::error::Result;
use crate::iceberg::locate::version_hint_path;
use crate::iceberg::manifest::for_each_projected;
use crate::iceberg::manifest_list::{ManifestFile, read_manifest_list};
use crate::iceberg::metadata::TableMetadata;
use crate::io::{FileIO, is_under, path_key};

/// How many outside-location references are kept for the message.
pub const OUTSIDE_EXAMPLES: usize = 10;

/// What a listed file is, as far as the reachable set can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    Reachable,
    Unreachable,
    /// Same path below the location as a reachable file, different scheme family or authority.
    PrefixMismatch,
}

/// The reachable files of one table, by path relative to its location.
#[derive(Debug, Clone)]
pub struct ReachableFiles {
    location: String,
    /// `family://authority` of the location's key.
    root_prefix: String,
    /// The location's canonical path (no leading or trailing slash).
    root_path: String,
    relative: HashSet<Box<str>>,
    outside_count: usize,
    outside_examples: Vec<String>,
}

/// Split a path key into `family://authority` and the path after it (no leading slash).
fn split_key(key: &str) -> (&str, &str) {
    let Some(scheme_end) = key.find("://") else {
        return ("", key);
    };
    let after = scheme_end + 3;
    match key.get(after..).and_then(|rest| rest.find('/')) {
        Some(slash) => {
            let cut = after + slash;
            (&key[..cut], key[cut..].trim_start_matches('/'))
        }
        None => (key, ""),
    }
}

/// `path` below `root_path` (both canonical, no surrounding slashes), if strictly below.
fn below<'a>(root_path: &str, path: &'a str) -> Option<&'a str> {
    if root_path.is_empty() {
        return (!path.is_empty()).then_some(path);
    }
    path.strip_prefix(root_path)?
        .strip_prefix('/')
        .filter(|rest| !rest.is_empty())
}

impl ReachableFiles {
    /// An empty set for the table at `location`.
    pub fn new(location: &str) -> Self {
        let root_key = path_key(location);
        let (prefix, path) = split_key(&root_key);
        ReachableFiles {
            location: location.to_string(),
            root_prefix: prefix.to_string(),
            root_path: path.trim_end_matches('/').to_string(),
            relative: HashSet::new(),
            outside_count: 0,
            outside_examples: Vec::new(),
        }
    }

    /// Make room for `additional` more files.
    pub fn reserve(&mut self, additional: usize) {
        self.relative.reserve(additional);
    }

    /// Record a referenced file (any URI spelling).
    pub fn insert(&mut self, uri: &str) {
        if !is_under(&self.location, uri) {
            self.outside_count += 1;
            if self.outside_examples.len() < OUTSIDE_EXAMPLES {
                self.outside_examples.push(uri.to_string());
            }
            return;
        }
        let key = path_key(uri);
        let (_, path) = split_key(&key);
        if let Some(rel) = below(&self.root_path, path) {
            if !self.relative.contains(rel) {
                self.relative.insert(rel.into());
            }
        }
    }

    /// Whether the listed file with path key `key` is reachable.
    pub fn lookup(&self, key: &str) -> Lookup {
        let (prefix, path) = split_key(key);
        let Some(rel) = below(&self.root_path, path) else {
            return Lookup::Unreachable;
        };
        match (self.relative.contains(rel), prefix == self.root_prefix) {
            (false, _) => Lookup::Unreachable,
            (true, true) => Lookup::Reachable,
            (true, false) => Lookup::PrefixMismatch,
        }
    }

    /// Reachable files under the location.
    pub fn len(&self) -> usize {
        self.relative.len()
    }

    /// Whether no file is reachable.
    pub fn is_empty(&self) -> bool {
        self.relative.is_empty()
    }

    /// References outside the table location: how many, and the first [`OUTSIDE_EXAMPLES`].
    pub fn outside(&self) -> (usize, &[String]) {
        (self.outside_count, &self.outside_examples)
    }
}

/// Read everything `metadata` (read from `metadata_path`) reaches, for the table at `location`.
pub async fn collect_reachable(
    io: &FileIO,
    metadata: &TableMetadata,
    metadata_path: &str,
    location: &str,
    concurrency: usize,
) -> Result<ReachableFiles> {
    let mut reachable = ReachableFiles::new(location);
    reachable.insert(metadata_path);
    reachable.insert(&version_hint_path(location));
    for entry in metadata.metadata_log() {
        reachable.insert(&entry.metadata_file);
    }
    for stats in metadata.statistics() {
        reachable.insert(&stats.path);
    }
    let mut lists: HashMap<String, &str> = HashMap::new();
    let mut manifests: HashMap<String, ManifestToRead> = HashMap::new();
    for snapshot in metadata.snapshots() {
        match &snapshot.manifest_list {
            Some(list) => {
                lists.entry(path_key(list)).or_insert(list.as_str());
            }
            None => {
                for manifest in &snapshot.manifests {
                    manifests
                        .entry(path_key(manifest))
                        .or_insert_with(|| ManifestToRead::inline(manifest));
                }
            }
        }
    }
    let read_lists: Vec<(&str, Vec<ManifestFile>)> = futures::stream::iter(lists.into_values())
        .map(|list| async move {
            let bytes = io.read(list).await?;
            let files = read_manifest_list(&bytes, list)?;
            Ok::<_, crate::error::Error>((list, files))
        })
        .buffer_unordered(concurrency.max(1))
        .try_collect()
        .await?;
    for (list, files) in read_lists {
        reachable.insert(list);
        for file in files {
            let expected = ManifestToRead::expected_live(&file);
            manifests
                .entry(path_key(&file.manifest_path))
                .or_insert_with(|| ManifestToRead {
                    path: file.manifest_path,
                    expected_live: expected,
                });
        }
    }
    let expected: usize = manifests
        .values()
        .map(|m| m.expected_live.saturating_add(1))
        .fold(0, usize::saturating_add);
    reachable.reserve(expected);
    let mut live_paths = futures::stream::iter(manifests.into_values())
        .map(|manifest| async move {
            let bytes = io.read(&manifest.path).await?;
            let mut live = Vec::with_capacity(manifest.expected_live);
            for_each_projected(&bytes, &manifest.path, |entry| {
                if entry.status.is_live() {
                    live.push(entry.file_path.to_string());
                }
            })?;
            Ok::<_, crate::error::Error>((manifest.path, live))
        })
        .buffer_unordered(concurrency.max(1));
    while let Some((manifest, live)) = live_paths.try_next().await? {
        reachable.insert(&manifest);
        for path in live {
            reachable.insert(&path);
        }
    }
    Ok(reachable)
}

/// A manifest to read and how many live entries its list entry announces.
struct ManifestToRead {
    path: String,
    expected_live: usize,
}

impl ManifestToRead {
    fn inline(path: &str) -> Self {
        ManifestToRead {
            path: path.to_string(),
            expected_live: 0,
        }
    }

    fn expected_live(file: &ManifestFile) -> usize {
        let count = |c: Option<i32>| c.and_then(|c| usize::try_from(c).ok()).unwrap_or(0);
        count(file.added_files_count).saturating_add(count(file.existing_files_count))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_split_into_prefix_and_path() {
        assert_eq!(split_key("s3://b/t/x"), ("s3://b", "t/x"));
        assert_eq!(split_key("file:///w/t"), ("file://", "w/t"));
        assert_eq!(split_key("s3://b"), ("s3://b", ""));
        assert_eq!(split_key("plain/text"), ("", "plain/text"));
    }

    #[test]
    fn relative_storage_and_lookup() {
        let mut r = ReachableFiles::new("s3://b/wh/t/");
        r.insert("s3a://b/wh/t/data/a.parquet");
        r.insert("s3://b//wh/t/metadata/v1.metadata.json");
        r.insert("s3://b/wh/t/data/a.parquet");
        assert_eq!(r.len(), 2);
        assert_eq!(
            r.lookup(&path_key("s3://b/wh/t/data/a.parquet")),
            Lookup::Reachable
        );
        assert_eq!(
            r.lookup(&path_key("s3n://b/wh/t/data/a.parquet")),
            Lookup::Reachable
        );
        assert_eq!(
            r.lookup(&path_key("s3://b/wh/t/data/b.parquet")),
            Lookup::Unreachable
        );
        assert_eq!(
            r.lookup(&path_key("s3://other/wh/t/data/a.parquet")),
            Lookup::PrefixMismatch
        );
        assert_eq!(
            r.lookup(&path_key("gs://b/wh/t/data/a.parquet")),
            Lookup::PrefixMismatch
        );
        assert_eq!(
            r.lookup(&path_key("s3://b/wh/t2/data/a.parquet")),
            Lookup::Unreachable
        );
        assert_eq!(r.outside().0, 0);
    }

    #[test]
    fn local_spellings_agree() {
        let mut r = ReachableFiles::new("/w/t");
        r.insert("file:///w/t/data/a.parquet");
        assert_eq!(
            r.lookup(&path_key("/w/t/data/a.parquet")),
            Lookup::Reachable
        );
        assert_eq!(
            r.lookup(&path_key("/w/t/data/a%2Eparquet")),
            Lookup::Reachable
        );
    }

    #[test]
    fn outside_references_are_counted_not_stored() {
        let mut r = ReachableFiles::new("s3://b/t");
        r.insert("s3://b/t2/x.parquet");
        r.insert("s3://b/t/../u/x.parquet");
        r.insert("s3://c/t/x.parquet");
        for i in 0..20 {
            r.insert(&format!("s3://b/elsewhere/{i}.parquet"));
        }
        let (count, examples) = r.outside();
        assert_eq!(count, 23);
        assert_eq!(examples.len(), OUTSIDE_EXAMPLES);
        assert_eq!(examples[0], "s3://b/t2/x.parquet");
        assert!(r.is_empty());
    }

    #[test]
    fn bucket_root_location() {
        let mut r = ReachableFiles::new("s3://b");
        r.insert("s3://b/data/x");
        assert_eq!(r.lookup(&path_key("s3://b/data/x")), Lookup::Reachable);
        assert_eq!(r.lookup(&path_key("s3://b/data/y")), Lookup::Unreachable);
    }
}
