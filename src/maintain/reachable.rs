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
//! file counts. A referenced file that is not under the table location (by [`crate::io::is_under`]) is not
//! stored but counted in [`ReachableFiles::outside`], and the caller refuses to run.
//!
//! Lookup of a listed file (by path key) answers [`Lookup::PrefixMismatch`] when its path below
//! the location matches a reachable file but its scheme family or authority differ (Java's
//! `PrefixMismatchMode.ERROR`): such a file is neither provably reachable nor provably orphaned.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};

use super::off_task;
use crate::engine::progress::{Phase, Progress};
use crate::error::{Error, Result};
use crate::iceberg::locate::version_hint_path;
use crate::iceberg::manifest::for_each_projected;
use crate::iceberg::manifest_list::{ListEntryRef, for_each_list_entry};
use crate::iceberg::metadata::TableMetadata;
use crate::io::{FileIO, path_key};

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
    root: Arc<Root>,
    relative: HashSet<Box<str>>,
    outside_count: usize,
    outside_examples: Vec<String>,
}

/// The table location, split like a path key.
#[derive(Debug)]
struct Root {
    /// `family://authority` of the location's key.
    prefix: String,
    /// The location's canonical path (no leading or trailing slash).
    path: String,
}

/// A referenced file: its path below the root, or the URI when it lies outside.
enum Reference {
    Inside(Box<str>),
    Outside(String),
}

impl Root {
    fn new(location: &str) -> Self {
        let key = path_key(location);
        let (prefix, path) = split_key(&key);
        Root {
            prefix: prefix.to_string(),
            path: path.trim_end_matches('/').to_string(),
        }
    }

    /// Where `uri` lies; the same answer as [`crate::io::is_under`] (same family and authority, strictly
    /// below the location, no `..` segment), computed on one path key.
    fn reference(&self, uri: &str) -> Reference {
        let key = path_key(uri);
        let (prefix, path) = split_key(&key);
        let dotted = path.split('/').any(|segment| segment == "..");
        let inside = (prefix == self.prefix && !dotted)
            .then(|| below(&self.path, path))
            .flatten();
        match inside {
            Some(rel) => Reference::Inside(rel.into()),
            None => Reference::Outside(uri.to_string()),
        }
    }
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
        ReachableFiles {
            root: Arc::new(Root::new(location)),
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
        let reference = self.root.reference(uri);
        self.add(reference);
    }

    fn add(&mut self, reference: Reference) {
        match reference {
            Reference::Inside(rel) => {
                self.relative.insert(rel);
            }
            Reference::Outside(uri) => {
                self.outside_count += 1;
                if self.outside_examples.len() < OUTSIDE_EXAMPLES {
                    self.outside_examples.push(uri);
                }
            }
        }
    }

    /// Whether the listed file with path key `key` is reachable.
    pub fn lookup(&self, key: &str) -> Lookup {
        let (prefix, path) = split_key(key);
        let Some(rel) = below(&self.root.path, path) else {
            return Lookup::Unreachable;
        };
        match (self.relative.contains(rel), prefix == self.root.prefix) {
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
    Progress::current().phase(Phase::ReadingManifestLists, Some(lists.len()))?;
    let read_lists: Vec<(&str, Vec<ManifestToRead>)> = futures::stream::iter(lists.into_values())
        .map(|list| async move {
            let bytes = io.read(list).await?;
            Progress::current().file_done(bytes.len());
            let name = list.to_string();
            let files = off_task(move || list_manifests(&bytes, &name)).await?;
            Ok::<_, Error>((list, files))
        })
        .buffer_unordered(concurrency.max(1))
        .try_collect()
        .await?;
    for (list, files) in read_lists {
        reachable.insert(list);
        for file in files {
            manifests.entry(path_key(&file.path)).or_insert(file);
        }
    }
    let expected: usize = manifests
        .values()
        .map(|m| m.expected_live.saturating_add(1))
        .fold(0, usize::saturating_add);
    reachable.reserve(expected);
    let root = Arc::clone(&reachable.root);
    Progress::current().phase(Phase::ReadingManifests, Some(manifests.len()))?;
    let mut live_references = futures::stream::iter(manifests.into_values())
        .map(|manifest| {
            let root = Arc::clone(&root);
            async move {
                let bytes = io.read(&manifest.path).await?;
                Progress::current().file_done(bytes.len());
                off_task(move || live_references(&bytes, &manifest, &root)).await
            }
        })
        .buffer_unordered(concurrency.max(1));
    while let Some(references) = live_references.try_next().await? {
        for reference in references {
            reachable.add(reference);
        }
    }
    Ok(reachable)
}

/// The manifest itself and its live entries, placed relative to the root.
fn live_references(bytes: &[u8], manifest: &ManifestToRead, root: &Root) -> Result<Vec<Reference>> {
    let mut references = Vec::with_capacity(manifest.expected_live.saturating_add(1));
    references.push(root.reference(&manifest.path));
    for_each_projected(bytes, &manifest.path, |entry| {
        if entry.status.is_live() {
            references.push(root.reference(entry.file_path));
        }
    })?;
    Ok(references)
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

    fn expected_live(entry: &ListEntryRef<'_>) -> usize {
        let count = |c: Option<i64>| c.and_then(|c| usize::try_from(c).ok()).unwrap_or(0);
        count(entry.added_files_count).saturating_add(count(entry.existing_files_count))
    }
}

/// The manifests one manifest list names (projected decode).
fn list_manifests(bytes: &[u8], name: &str) -> Result<Vec<ManifestToRead>> {
    let mut out = Vec::new();
    for_each_list_entry(bytes, name, |e| {
        out.push(ManifestToRead {
            path: e.manifest_path.to_string(),
            expected_live: ManifestToRead::expected_live(&e),
        });
    })?;
    Ok(out)
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
    fn placement_agrees_with_is_under() {
        let locations = [
            "s3://b/t",
            "s3a://b/t/",
            "/w/t",
            "file:///w/t",
            "s3://b",
            "memory:///t",
        ];
        let files = [
            "s3://b/t/x",
            "s3n://b//t/d/x",
            "s3://b/t2/x",
            "s3://b/t",
            "s3://b/t/../u",
            "s3://b/t/%2E%2E/u",
            "s3://c/t/x",
            "/w/t/x",
            "file:/w/t/a/b",
            "/w/tt/x",
            "file://localhost/w/t/x",
            "memory:///t/x",
            "memory://t/y",
            "gs://b/t/x",
            "s3://b/x",
        ];
        for location in locations {
            let root = Root::new(location);
            for file in files {
                let inside = matches!(root.reference(file), Reference::Inside(_));
                assert_eq!(
                    inside,
                    crate::io::is_under(location, file),
                    "{location} {file}"
                );
            }
        }
    }

    #[test]
    fn bucket_root_location() {
        let mut r = ReachableFiles::new("s3://b");
        r.insert("s3://b/data/x");
        assert_eq!(r.lookup(&path_key("s3://b/data/x")), Lookup::Reachable);
        assert_eq!(r.lookup(&path_key("s3://b/data/y")), Lookup::Unreachable);
    }
}

#[cfg(test)]
#[path = "reachable_tests.rs"]
mod read_tests;
