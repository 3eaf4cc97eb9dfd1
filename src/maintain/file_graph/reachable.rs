//! The files a table's newest committed metadata reaches, for `remove_orphan_files`: whatever is
//! not in this set (and old enough, and not hidden) is an orphan.
//!
//! Reachable = the metadata file itself, every `metadata-log` file, `metadata/version-hint.text`
//! (whether or not it exists, so it is never an orphan, even stale), every `statistics` and
//! `partition-statistics` file, and for every snapshot (every ref's, staged and rolled-back ones
//! too: all of `snapshots`) its manifest list (or a v1 snapshot's inline `manifests`), those
//! manifests, and their live (ADDED or EXISTING) entries. A file named only by a DELETED entry is
//! not reachable (as in Java's `DeleteOrphanFiles`, which reads live entries only).
//!
//! Reading: each distinct manifest list, then each distinct manifest, is read once, up to
//! `concurrency` at a time (`iceberg_metadata_read_concurrency`), and decoded on the decoding
//! threads (`pipeline::read_decoded`, as the expiry reads). Any read or decode failure fails the whole
//! collection: a partial reachable set would make live files look orphaned. Manifests are told
//! apart by their full identity key (never by fingerprint: two manifests folded into one would
//! leave one unread).
//!
//! Storage: the set holds a [`Fingerprint`] (XXH3-128; the set compares its low 64 bits) of each
//! reachable file's path *relative to the table location* (its [`path_key`] with the location's
//! `family://authority/path` prefix removed), computed on the decoding threads as each manifest is
//! decoded; the statement's thread only folds fingerprints into the set. Memory grows with distinct
//! reachable files (8 to 16 bytes each), not with their names nor with manifest entries. A
//! collision (about n / 2^64 a lookup) can only
//! make an unreferenced file look reachable (kept) or ambiguous (the statement fails): a
//! referenced file's own fingerprint is always in the set. A referenced file that is not under the table location (by
//! [`crate::io::is_under`]) is not stored but counted in [`ReachableFiles::outside`], and the
//! caller refuses to run.
//!
//! Lookup of a listed file (by path key) answers [`Lookup::PrefixMismatch`] when its path below
//! the location matches a reachable file but its scheme family or authority differ (Java's
//! `PrefixMismatchMode.ERROR`): such a file is neither provably reachable nor provably orphaned.
//! Every stored file has the location's own family and authority (anything else is outside), so
//! a relative fingerprint and the listed file's prefix are all a lookup needs.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use futures::TryStreamExt;

use super::decoded::{decode_list, for_each_live_path};
use super::paths::{Fingerprint, FingerprintSet};
use super::pipeline::{ReadJob, read_decoded};
use crate::error::{Error, Result};
use crate::iceberg::locate::version_hint_path;
use crate::iceberg::metadata::TableMetadata;
use crate::io::{FileIO, path_key, path_key_into};
use crate::progress::{Phase, Progress};

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

/// The reachable files of one table, by fingerprint of their path relative to its location.
#[derive(Debug, Clone)]
pub struct ReachableFiles {
    root: Arc<Root>,
    relative: FingerprintSet,
    outside: Outside,
    /// Scratch buffer for identity keys of references added on the statement's thread.
    key: String,
}

/// References outside the location: how many, and the first [`OUTSIDE_EXAMPLES`].
#[derive(Debug, Clone, Default)]
struct Outside {
    count: usize,
    examples: Vec<String>,
}

impl Outside {
    fn add(&mut self, uri: &str) {
        self.count = self.count.saturating_add(1);
        if self.examples.len() < OUTSIDE_EXAMPLES {
            self.examples.push(uri.to_string());
        }
    }

    /// Fold in `other`'s references, as if added after ours in their order.
    fn merge(&mut self, other: Outside) {
        self.count = self.count.saturating_add(other.count);
        let room = OUTSIDE_EXAMPLES.saturating_sub(self.examples.len());
        self.examples.extend(other.examples.into_iter().take(room));
    }
}

/// The table location, split like a path key.
#[derive(Debug)]
struct Root {
    /// `family://authority` of the location's key.
    prefix: String,
    /// The location's canonical path (no leading or trailing slash).
    path: String,
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

    /// The fingerprint of `uri`'s path below the location, or `None` when it lies outside; the
    /// same placement as [`crate::io::is_under`] (same family and authority, strictly below the
    /// location, no `..` segment), computed on one path key. `key` is scratch space.
    fn fingerprint(&self, uri: &str, key: &mut String) -> Option<Fingerprint> {
        path_key_into(uri, key);
        let (prefix, path) = split_key(key);
        if prefix != self.prefix || has_dot_dot(path) {
            return None;
        }
        below(&self.path, path).map(Fingerprint::of_key)
    }

    /// Place `uri`: its fingerprint into `inside`, or counted in `outside`.
    fn place(
        &self,
        uri: &str,
        key: &mut String,
        inside: &mut Vec<Fingerprint>,
        outside: &mut Outside,
    ) {
        match self.fingerprint(uri, key) {
            Some(fingerprint) => inside.push(fingerprint),
            None => outside.add(uri),
        }
    }
}

/// Whether a key's path has a `..` segment.
fn has_dot_dot(path: &str) -> bool {
    path.contains("..") && path.split('/').any(|segment| segment == "..")
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
            relative: FingerprintSet::default(),
            outside: Outside::default(),
            key: String::new(),
        }
    }

    /// Make room for `additional` more files.
    pub fn reserve(&mut self, additional: usize) {
        self.relative.reserve(additional);
    }

    /// Record a referenced file (any URI spelling).
    pub fn insert(&mut self, uri: &str) {
        match self.root.fingerprint(uri, &mut self.key) {
            Some(fingerprint) => {
                self.relative.insert(fingerprint);
            }
            None => self.outside.add(uri),
        }
    }

    /// Fold in the references one manifest placed (on a decoding thread).
    fn add_placed(&mut self, placed: Placed) {
        self.relative.extend(placed.inside);
        self.outside.merge(placed.outside);
    }

    /// Whether the listed file with path key `key` is reachable.
    pub fn lookup(&self, key: &str) -> Lookup {
        let (prefix, path) = split_key(key);
        let Some(rel) = below(&self.root.path, path) else {
            return Lookup::Unreachable;
        };
        match (
            self.relative.contains(&Fingerprint::of_key(rel)),
            prefix == self.root.prefix,
        ) {
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
        (self.outside.count, &self.outside.examples)
    }
}

/// The references of one manifest (itself and its live entries), placed on a decoding thread.
#[derive(Debug, Default)]
struct Placed {
    inside: Vec<Fingerprint>,
    outside: Outside,
}

/// Decode a manifest into its placed references: the manifest itself, then its live entries.
fn place_manifest(bytes: &[u8], uri: &str, root: &Root) -> Result<Placed> {
    let mut placed = Placed::default();
    let Placed { inside, outside } = &mut placed;
    root.place(uri, &mut String::new(), inside, outside);
    for_each_live_path(bytes, uri, |path, key| {
        root.place(path, key, inside, outside)
    })?;
    Ok(placed)
}

/// Read everything `metadata` (read from `metadata_path`) reaches, for the table at `location`,
/// reporting to nobody (see [`collect_reachable_reporting`]).
pub async fn collect_reachable(
    io: &FileIO,
    metadata: &TableMetadata,
    metadata_path: &str,
    location: &str,
    concurrency: usize,
) -> Result<ReachableFiles> {
    let silent = Progress::default();
    collect_reachable_reporting(io, metadata, metadata_path, location, concurrency, &silent).await
}

/// [`collect_reachable`], reporting the reads to (and cancelled by) `progress`.
pub async fn collect_reachable_reporting(
    io: &FileIO,
    metadata: &TableMetadata,
    metadata_path: &str,
    location: &str,
    concurrency: usize,
    progress: &Progress,
) -> Result<ReachableFiles> {
    let mut references = References::default();
    references.add_metadata(metadata, metadata_path, location);
    references
        .read_into(io, ReachableFiles::new(location), concurrency, progress)
        .await
}

/// What one or more metadata files name, gathered before any manifest list or manifest is read;
/// [`References::read_into`] then reads each distinct list and manifest once. The metadata files
/// may belong to several tables (other tables found under a location, all their metadata files):
/// their references are placed relative to the set's own location.
///
/// What a metadata file added with [`Reach::IfPresent`] names is read when it is there and passed
/// over when it is gone: an older metadata file of another table names manifest lists that
/// table's own expiry deleted. What a [`Reach::Required`] one names must be read.
#[derive(Default)]
pub struct References {
    /// Files named directly (metadata files, metadata-log, version hints, statistics), in order.
    singles: Vec<String>,
    /// Manifest lists by identity key, each with the first spelling seen and whether it must be
    /// read (a list named by any required metadata file is required).
    lists: HashMap<String, (String, bool)>,
    /// Manifests named inline (v1) by metadata files that are not required.
    inline_if_present: Vec<String>,
    manifests: Manifests,
}

/// Whether what a metadata file names must be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Every list and manifest it reaches must be read; one that is gone fails the read.
    Required,
    /// Read what is there; a list or manifest that is gone (and not named by a required
    /// metadata file) is passed over.
    IfPresent,
}

impl References {
    /// Gather what `metadata` (the file at `metadata_path` of the table at `table_location`)
    /// names: itself, its table's version hint, its metadata-log, statistics, and every
    /// snapshot's manifest list (or a v1 snapshot's inline manifests).
    pub fn add_metadata(
        &mut self,
        metadata: &TableMetadata,
        metadata_path: &str,
        table_location: &str,
    ) {
        self.add_metadata_reaching(metadata, metadata_path, table_location, Reach::Required);
    }

    /// [`References::add_metadata`], saying whether what it names must be read.
    pub fn add_metadata_reaching(
        &mut self,
        metadata: &TableMetadata,
        metadata_path: &str,
        table_location: &str,
        reach: Reach,
    ) {
        let required = reach == Reach::Required;
        self.singles.push(metadata_path.to_string());
        self.singles.push(version_hint_path(table_location));
        for entry in metadata.metadata_log() {
            self.singles.push(entry.metadata_file.clone());
        }
        for stats in metadata.statistics() {
            self.singles.push(stats.path.clone());
        }
        for snapshot in metadata.snapshots() {
            match &snapshot.manifest_list {
                Some(list) => {
                    let entry = self
                        .lists
                        .entry(path_key(list))
                        .or_insert_with(|| (list.clone(), required));
                    entry.1 |= required;
                }
                None if required => {
                    for manifest in &snapshot.manifests {
                        self.manifests.add(manifest);
                    }
                }
                None => self
                    .inline_if_present
                    .extend(snapshot.manifests.iter().cloned()),
            }
        }
    }

    /// Name one more file directly (e.g. a version hint found by a listing).
    pub fn add_file(&mut self, uri: &str) {
        self.singles.push(uri.to_string());
    }

    /// Read every gathered manifest list and manifest into `reachable`: the required lists
    /// first, so that every manifest they name is required, then the others.
    pub async fn read_into(
        self,
        io: &FileIO,
        mut reachable: ReachableFiles,
        concurrency: usize,
        progress: &Progress,
    ) -> Result<ReachableFiles> {
        let References {
            singles,
            lists,
            inline_if_present,
            mut manifests,
        } = self;
        for uri in &singles {
            reachable.insert(uri);
        }
        drop(singles);
        progress.phase(Phase::ReadingManifestLists, Some(lists.len()))?;
        let (required, if_present): (Vec<_>, Vec<_>) =
            lists.into_values().partition(|(_, required)| *required);
        for (lists, required) in [(required, true), (if_present, false)] {
            let lists = lists.into_iter().map(|(list, _)| list).collect();
            read_lists(
                io,
                lists,
                required,
                concurrency,
                progress,
                &mut reachable,
                &mut manifests,
            )
            .await?;
            if required {
                manifests.required = manifests.uris.len();
            }
        }
        for manifest in &inline_if_present {
            manifests.add(manifest);
        }
        drop(inline_if_present);
        let root = Arc::clone(&reachable.root);
        let Manifests {
            uris,
            lengths,
            required,
            ..
        } = manifests;
        let jobs: Vec<ReadJob<usize>> = uris
            .iter()
            .enumerate()
            .map(|(index, uri)| ReadJob {
                id: index,
                required: index < required,
                uri: uri.clone(),
                length: lengths.get(index).copied().flatten(),
            })
            .collect();
        progress.phase(Phase::ReadingManifests, Some(jobs.len()))?;
        let place = Arc::new(move |bytes: &[u8], uri: &str| place_manifest(bytes, uri, &root));
        let mut decoded = read_decoded(io, jobs, concurrency, place, progress);
        while let Some((index, placed)) = decoded.try_next().await? {
            match placed {
                Some(placed) => reachable.add_placed(placed),
                None if index < required => {
                    let uri = uris.get(index).map_or("", String::as_str);
                    return Err(unread("manifest", uri));
                }
                // Gone, and named only by what need not be read.
                None => {}
            }
        }
        Ok(reachable)
    }
}

/// Read `lists` into `reachable`, adding every manifest they name. A list that is not
/// `required` and is gone is passed over.
async fn read_lists(
    io: &FileIO,
    lists: Vec<String>,
    required: bool,
    concurrency: usize,
    progress: &Progress,
    reachable: &mut ReachableFiles,
    manifests: &mut Manifests,
) -> Result<()> {
    let jobs = lists
        .into_iter()
        .map(|list| ReadJob {
            id: list.clone(),
            required,
            uri: list,
            length: None,
        })
        .collect();
    let mut decoded = read_decoded(io, jobs, concurrency, Arc::new(decode_list), progress);
    while let Some((list, decoded_list)) = decoded.try_next().await? {
        let Some(decoded_list) = decoded_list else {
            if required {
                return Err(unread("manifest list", &list));
            }
            continue;
        };
        reachable.insert(&list);
        for (manifest, item) in decoded_list.iter() {
            manifests.add_listed(manifest, item.length);
        }
        decoded_list.recycle();
    }
    Ok(())
}

/// A required file never comes back unread (a gone one fails the read); if one did, the set
/// would be partial, and a partial reachable set makes live files look orphaned.
fn unread(what: &str, uri: &str) -> Error {
    Error::logical(format!("{what} '{uri}' was not read"))
}

/// The distinct manifests to read, by identity key, each with the first spelling seen.
#[derive(Default)]
struct Manifests {
    /// Spellings already placed: a manifest is named by every later list, and its identity key
    /// is computed once per spelling rather than once per naming.
    spellings: HashSet<Box<str>, foldhash::fast::RandomState>,
    keys: HashSet<String, foldhash::fast::RandomState>,
    uris: Vec<String>,
    /// Each of `uris`' `manifest_length` as the first list naming it gives it (v1 inline
    /// manifests: unknown).
    lengths: Vec<Option<u64>>,
    /// `uris[..required]` must be read (named by required lists or metadata files).
    required: usize,
}

impl Manifests {
    fn add(&mut self, uri: &str) {
        self.add_listed(uri, 0);
    }

    /// A manifest a list names with `length` (0 or less: unknown).
    fn add_listed(&mut self, uri: &str, length: i64) {
        if self.spellings.contains(uri) {
            return;
        }
        self.spellings.insert(uri.into());
        if self.keys.insert(path_key(uri)) {
            self.uris.push(uri.to_string());
            self.lengths
                .push(u64::try_from(length).ok().filter(|n| *n > 0));
        }
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
            let mut key = String::new();
            for file in files {
                let inside = root.fingerprint(file, &mut key).is_some();
                assert_eq!(
                    inside,
                    crate::io::is_under(location, file),
                    "{location} {file}"
                );
            }
        }
    }

    #[test]
    fn outside_examples_merge_in_order_up_to_the_limit() {
        let mut a = Outside::default();
        for i in 0..4 {
            a.add(&format!("a{i}"));
        }
        let mut b = Outside::default();
        for i in 0..9 {
            b.add(&format!("b{i}"));
        }
        a.merge(b);
        assert_eq!(a.count, 13);
        assert_eq!(a.examples.len(), OUTSIDE_EXAMPLES);
        assert_eq!(a.examples[3..5], ["a3".to_string(), "b0".to_string()]);
        assert_eq!(a.examples[9], "b5");
    }

    #[test]
    fn a_prefix_mismatch_needs_the_same_relative_path() {
        let mut r = ReachableFiles::new("s3://b/t");
        r.insert("s3://b/t/data/x.parquet");
        let look = |uri: &str| r.lookup(&path_key(uri));
        assert_eq!(look("s3://c/t/data/x.parquet"), Lookup::PrefixMismatch);
        assert_eq!(look("s3://c/t/data/y.parquet"), Lookup::Unreachable);
        assert_eq!(look("s3://b/t/data/../data/x.parquet"), Lookup::Unreachable);
        assert_eq!(look("s3://b/t"), Lookup::Unreachable);
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
