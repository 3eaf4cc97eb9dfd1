//! Reading a table's file graph from storage, for the maintenance executors.
//!
//! [`TableFiles::read`] reads every distinct manifest list of a [`TableMetadata`] once, with at
//! most `concurrency` reads in flight, and builds the [`FileGraph`] that [`crate::maintain::expire::keepset`] decides
//! on: per snapshot its manifest list (v1 snapshots with inline `manifests` have none) and the
//! manifests it names, plus every `statistics` / `partition-statistics` entry.
//! Manifests are then read in two streams, each manifest once, concurrently:
//! [`TableFiles::read_live_fingerprints`] folds the retained ones into the fingerprints of the
//! files they keep live, and [`TableFiles::read_candidate_manifests`] reads the candidates,
//! projected (path, content, status, size), keeping only entries that set does not protect.
//! Memory grows with distinct files, not with entries.
//!
//! Paths are interned by identity key ([`crate::io::path_key`]) into a [`PathInterner`]; the first URI seen
//! for each key is kept ([`TableFiles::uri`]) so deletes use the spelling the metadata wrote.
//!
//! Missing files: which side a list or manifest is on is the caller's decision (`required`). A
//! required file that cannot be read fails the whole read — a keep set built without it would
//! miss files still in use. A file that is not required and is gone (`FILE_DOESNT_EXIST`) is
//! treated as empty and noted in [`TableFiles::warnings`] (its files are left to orphan removal);
//! any other error on it still fails (it may be transient, and nothing is gained by guessing).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use futures::TryStreamExt;

use crate::error::{Error, Result};
use crate::iceberg::metadata::TableMetadata;
use crate::iceberg::spec::{ManifestContent, SnapshotId};
use crate::io::{FileIO, path_key_into};
use crate::maintain::file_graph::model::{
    EntryRef, FileGraph, ManifestContents, ManifestEntries, ManifestRef, SnapshotFiles,
    StatisticsRef, unique,
};
use crate::progress::{Phase, Progress};

use super::decoded::{DecodedList, decode_list, decode_live_fingerprints, decode_unkept};
use super::paths::{Fingerprint, FingerprintSet, PathId, PathInterner};
use super::pipeline::{ReadJob, read_decoded};

/// A table's file graph as read from storage, with the interned paths and their URIs.
#[derive(Debug, Clone, Default)]
pub struct TableFiles {
    pub paths: PathInterner,
    pub graph: FileGraph,
    /// The URI each path id was first seen as (index = `PathId::index`).
    uris: Vec<String>,
    /// Files that were gone but not required (one line each).
    pub warnings: Vec<String>,
    /// Reused for each entry's identity key (interning runs once per manifest entry).
    key: String,
    /// Manifest URIs exactly as lists spell them → id: a manifest is named by every later list
    /// (500,000 times over 1,000 fast appends), so the identity key is computed once per spelling.
    /// Manifests only: content files are too many to hold twice.
    manifest_spellings: HashMap<Box<str>, PathId, foldhash::fast::RandomState>,
    /// Each manifest's `manifest_length` as its list names it (a cached read is checked
    /// against it).
    manifest_lengths: HashMap<PathId, u64>,
}

impl TableFiles {
    /// Read every snapshot's manifest list. `required(snapshot_id)` says whether that snapshot's
    /// list must be readable (a retained snapshot); a list shared by several snapshots is required
    /// when any of them requires it.
    pub async fn read(
        io: &FileIO,
        metadata: &TableMetadata,
        concurrency: usize,
        progress: &Progress,
        required: impl Fn(SnapshotId) -> bool,
    ) -> Result<TableFiles> {
        let mut files = TableFiles::default();
        let mut lists: Vec<(PathId, bool)> = Vec::new();
        let mut list_index: HashMap<PathId, usize> = HashMap::new();
        for s in metadata.snapshots() {
            let Some(uri) = &s.manifest_list else {
                continue;
            };
            let id = files.intern(uri)?;
            let needed = required(s.snapshot_id);
            match list_index.get(&id).and_then(|i| lists.get_mut(*i)) {
                Some(entry) => entry.1 |= needed,
                None => {
                    list_index.insert(id, lists.len());
                    lists.push((id, needed));
                }
            }
        }
        let by_list = files.read_lists(io, &lists, concurrency, progress).await?;
        let mut by_list: HashMap<PathId, (Vec<ManifestRef>, Option<i64>)> = by_list;
        // How many snapshots still need each list: the last one takes it, earlier ones clone.
        let mut uses: HashMap<PathId, usize> = HashMap::new();
        for s in metadata.snapshots() {
            if let Some(uri) = &s.manifest_list {
                *uses.entry(files.intern(uri)?).or_default() += 1;
            }
        }
        for s in metadata.snapshots() {
            let snapshot = match &s.manifest_list {
                Some(uri) => {
                    let id = files.intern(uri)?;
                    let remaining = uses.get_mut(&id).map(|n| {
                        *n -= 1;
                        *n
                    });
                    let taken = match remaining {
                        Some(0) => by_list.remove(&id),
                        _ => by_list.get(&id).cloned(),
                    };
                    let (manifests, size) = taken.ok_or_else(|| {
                        Error::logical(format!("manifest list '{uri}' was not read"))
                    })?;
                    SnapshotFiles {
                        snapshot_id: s.snapshot_id,
                        manifest_list: Some(id),
                        manifest_list_size: size,
                        manifests,
                    }
                }
                None => SnapshotFiles {
                    snapshot_id: s.snapshot_id,
                    manifest_list: None,
                    manifest_list_size: None,
                    manifests: files.inline_manifests(&s.manifests)?,
                },
            };
            files.graph.snapshots.push(snapshot);
        }
        for st in metadata.statistics() {
            let path = files.intern(&st.path)?;
            files.graph.statistics.push(StatisticsRef {
                snapshot_id: st.snapshot_id,
                path,
                size: st.file_size_in_bytes,
            });
        }
        Ok(files)
    }

    /// Read and decode (projected, on the blocking pool) every list in `lists`, `concurrency` at
    /// once, interning each as it arrives (so decoded lists do not pile up); a gone list that is
    /// not required comes back empty with a warning.
    async fn read_lists(
        &mut self,
        io: &FileIO,
        lists: &[(PathId, bool)],
        concurrency: usize,
        progress: &Progress,
    ) -> Result<HashMap<PathId, (Vec<ManifestRef>, Option<i64>)>> {
        let jobs = self.jobs(lists)?;
        progress.phase(Phase::ReadingManifestLists, Some(jobs.len()))?;
        let mut decoded = read_decoded(io, jobs, concurrency, Arc::new(decode_list), progress);
        let mut out = HashMap::with_capacity(lists.len());
        while let Some((id, list)) = decoded.try_next().await? {
            if list.is_none() {
                self.note_missing(id, "manifest list");
            }
            out.insert(id, self.intern_list(list)?);
        }
        Ok(out)
    }

    /// Intern a decoded list: its manifests and the list file's size.
    fn intern_list(
        &mut self,
        list: Option<DecodedList>,
    ) -> Result<(Vec<ManifestRef>, Option<i64>)> {
        let Some(list) = list else {
            return Ok((Vec::new(), None));
        };
        let mut refs = Vec::with_capacity(list.len());
        for (path, item) in list.iter() {
            let id = self.intern_manifest(path)?;
            self.graph.note_listed(id, item.listed);
            if let Ok(length) = u64::try_from(item.length)
                && length > 0
            {
                self.manifest_lengths.insert(id, length);
            }
            refs.push(ManifestRef {
                path: id,
                length: item.length,
                content: item.content,
            });
        }
        let size = list.file_size;
        list.recycle();
        Ok((refs, Some(size)))
    }

    /// v1 inline `manifests`: data manifests of unknown length.
    fn inline_manifests(&mut self, uris: &[String]) -> Result<Vec<ManifestRef>> {
        uris.iter()
            .map(|uri| {
                Ok(ManifestRef {
                    path: self.intern(uri)?,
                    length: 0,
                    content: ManifestContent::Data,
                })
            })
            .collect()
    }

    /// Whether path `id` is among `live` (fingerprints of live files, as
    /// [`TableFiles::read_live_fingerprints`] folds them).
    pub fn is_live(&self, live: &FingerprintSet, id: PathId) -> bool {
        self.paths
            .resolve(id)
            .is_some_and(|key| live.contains(&Fingerprint::of_key(key)))
    }

    /// Read the retained `manifests` (each must be readable) and fold the fingerprints of their
    /// live entries into one set: what protects content files. Fingerprints are computed on the
    /// decoding threads; only the set grows (with distinct live files, not with entries). The
    /// set reserves its size of the statement's memory bound from the read cache, if any
    /// ([`crate::io::ReadCache::reserve`]).
    pub async fn read_live_fingerprints(
        &self,
        io: &FileIO,
        manifests: &[PathId],
        concurrency: usize,
        progress: &Progress,
    ) -> Result<FingerprintSet> {
        let unique: Vec<(PathId, bool)> = unique(manifests.iter().copied())
            .into_iter()
            .map(|id| (id, true))
            .collect();
        let jobs = self.jobs(&unique)?;
        let mut decoded = read_decoded(
            io,
            jobs,
            concurrency,
            Arc::new(decode_live_fingerprints),
            progress,
        );
        let mut live = FingerprintSet::default();
        let mut reserved = 0;
        while let Some((_, fingerprints)) = decoded.try_next().await? {
            live.insert_batch(&fingerprints.unwrap_or_default());
            // The set and the statement's read cache share one bound: the set comes first.
            if let Some(cache) = io.read_cache()
                && live.memory_bytes() != reserved
            {
                reserved = live.memory_bytes();
                cache.reserve(reserved);
            }
        }
        Ok(live)
    }

    /// Read the candidate `manifests` (a gone one comes back with no entries and a warning),
    /// keeping only the entries whose files `kept` does not hold — checked on the decoding
    /// threads, so only entries that may be deleted are interned and held.
    pub async fn read_candidate_manifests(
        &mut self,
        io: &FileIO,
        manifests: &[PathId],
        kept: Arc<FingerprintSet>,
        concurrency: usize,
        progress: &Progress,
    ) -> Result<ManifestContents> {
        let unique: Vec<(PathId, bool)> = unique(manifests.iter().copied())
            .into_iter()
            .map(|id| (id, false))
            .collect();
        self.read_entries(io, &unique, kept, concurrency, progress)
            .await
    }

    /// [`Self::read_candidate_manifests`] for manifests each with whether it must be readable
    /// (a required one that is gone fails the read).
    pub async fn read_entries(
        &mut self,
        io: &FileIO,
        unique: &[(PathId, bool)],
        kept: Arc<FingerprintSet>,
        concurrency: usize,
        progress: &Progress,
    ) -> Result<ManifestContents> {
        let jobs = self.jobs(unique)?;
        let decode = Arc::new(move |bytes: &[u8], uri: &str| decode_unkept(bytes, uri, &kept));
        let mut decoded = read_decoded(io, jobs, concurrency, decode, progress);
        let mut contents = ManifestContents::with_capacity(unique.len());
        while let Some((id, raw)) = decoded.try_next().await? {
            let Some(raw) = raw else {
                self.note_missing(id, "manifest");
                contents.insert(id, ManifestEntries::default());
                continue;
            };
            let mut entries = Vec::with_capacity(raw.len());
            for (path, e) in raw.iter() {
                entries.push(EntryRef {
                    path: self.intern(path)?,
                    content: e.content,
                    status: e.status,
                    file_size: e.file_size,
                });
            }
            raw.recycle();
            contents.insert(id, ManifestEntries { entries });
        }
        Ok(contents)
    }

    /// A [`ReadJob`] for each file; an id this graph did not intern is a logic error
    /// (never silently skipped: a required file must not go unread).
    fn jobs(&self, files: &[(PathId, bool)]) -> Result<Vec<ReadJob<PathId>>> {
        files
            .iter()
            .map(|(id, needed)| match self.uri(*id) {
                Some(uri) => Ok(ReadJob {
                    id: *id,
                    required: *needed,
                    uri: uri.to_string(),
                    length: self.manifest_lengths.get(id).copied(),
                }),
                None => Err(Error::logical(format!(
                    "path #{} was not interned by this file graph",
                    id.index()
                ))),
            })
            .collect()
    }

    fn note_missing(&mut self, id: PathId, what: &str) {
        let uri = self.uri(id).unwrap_or("<unknown>").to_string();
        self.warnings
            .push(format!("{what} '{uri}' no longer exists; skipped"));
    }

    /// Intern `uri` by its identity key, remembering the first spelling.
    pub fn intern(&mut self, uri: &str) -> Result<PathId> {
        path_key_into(uri, &mut self.key);
        let id = self.paths.intern(&self.key)?;
        if id.index() == self.uris.len() {
            self.uris.push(uri.to_string());
        }
        Ok(id)
    }

    /// [`Self::intern`] for a manifest path, remembering the spelling.
    fn intern_manifest(&mut self, uri: &str) -> Result<PathId> {
        if let Some(id) = self.manifest_spellings.get(uri) {
            return Ok(*id);
        }
        let id = self.intern(uri)?;
        self.manifest_spellings.insert(uri.into(), id);
        Ok(id)
    }

    /// The URI `id` was first seen as.
    pub fn uri(&self, id: PathId) -> Option<&str> {
        self.uris.get(id.index()).map(String::as_str)
    }

    /// The manifest ids of every snapshot in `snapshots` (deduplicated, first-seen order).
    pub fn manifests_of(&self, snapshots: &BTreeSet<SnapshotId>) -> Vec<PathId> {
        let mut seen = std::collections::HashSet::new();
        self.graph
            .snapshots
            .iter()
            .filter(|s| snapshots.contains(&s.snapshot_id))
            .flat_map(|s| s.manifests.iter().map(|m| m.path))
            .filter(|p| seen.insert(*p))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn intern_keeps_first_spelling_and_folds_identity() {
        let mut files = TableFiles::default();
        let a = files.intern("s3a://b/t/data/x.parquet").unwrap();
        let b = files.intern("s3://b//t/data/x.parquet").unwrap();
        assert_eq!(a, b);
        assert_eq!(files.uri(a), Some("s3a://b/t/data/x.parquet"));
        let c = files.intern("s3://b/t/data/y.parquet").unwrap();
        assert_ne!(a, c);
        assert_eq!(files.uri(c), Some("s3://b/t/data/y.parquet"));
    }

    #[tokio::test]
    async fn missing_required_list_fails_and_optional_one_is_skipped() {
        let io = FileIO::memory();
        let silent = Progress::default();
        let mut files = TableFiles::default();
        let id = files.intern("memory:///t/metadata/snap-1.avro").unwrap();
        let err = files
            .read_lists(&io, &[(id, true)], 2, &silent)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::FileDoesntExist);
        let read = files
            .read_lists(&io, &[(id, false)], 2, &silent)
            .await
            .unwrap();
        assert_eq!(read.len(), 1);
        assert_eq!(read[&id], (Vec::new(), None));
        assert_eq!(files.warnings.len(), 1);
        let kept = Arc::new(FingerprintSet::default());
        let contents = files
            .read_candidate_manifests(&io, &[id], kept, 2, &silent)
            .await
            .unwrap();
        assert!(contents[&id].entries.is_empty());
        let err = files
            .read_live_fingerprints(&io, &[id], 2, &silent)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::FileDoesntExist);
    }
}
