//! Manifest lists and manifests decoded off the async task, projected to what the file graph
//! needs, with their paths in one buffer per file ([`Arena`]). Arenas are recycled through a small
//! pool: the async task hands each back after interning it, so a statement that decodes a thousand
//! lists reuses a handful of warm buffers instead of growing a fresh one per file (those growths
//! were most of the bytes allocated, and page faults, in a 1,000-snapshot expiry).

use std::cell::RefCell;

use super::model::{EntryCounts, ListedManifest};
use super::paths::{Fingerprint, FingerprintSet};
use crate::error::Result;
use crate::iceberg::manifest::for_each_projected;
use crate::iceberg::manifest_list::for_each_list_entry;
use crate::iceberg::spec::{DataContent, EntryStatus, ManifestContent};
use crate::pool::Pool;

/// Paths in one buffer, each item with the end of its path.
#[derive(Debug)]
pub(super) struct Arena<T> {
    text: String,
    /// Each item with the end of its path in `text` (paths are contiguous).
    items: Vec<(usize, T)>,
}

impl<T> Default for Arena<T> {
    fn default() -> Self {
        Arena {
            text: String::new(),
            items: Vec::new(),
        }
    }
}

impl<T> Arena<T> {
    pub(super) fn len(&self) -> usize {
        self.items.len()
    }

    fn push(&mut self, path: &str, item: T) {
        self.text.push_str(path);
        self.items.push((self.text.len(), item));
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (&str, &T)> {
        let mut start = 0;
        self.items.iter().map(move |(end, item)| {
            let path = self.text.get(start..*end).unwrap_or_default();
            start = *end;
            (path, item)
        })
    }
}

/// Cleared arenas waiting for the next file.
struct ArenaPool<T>(Pool<Arena<T>>);

/// Arenas kept per pool: enough for the files decoding and waiting to be interned at once.
const POOLED_ARENAS: usize = 16;
/// An arena larger than this is dropped rather than pooled (one huge manifest must not pin memory).
const POOLED_ARENA_BYTES: usize = 8 << 20;

impl<T> ArenaPool<T> {
    const fn new() -> Self {
        ArenaPool(Pool::new(POOLED_ARENAS))
    }

    fn take(&self) -> Arena<T> {
        self.0.take().unwrap_or_default()
    }

    fn give_back(&self, mut arena: Arena<T>) {
        let bytes = arena.text.capacity() + arena.items.capacity() * size_of::<(usize, T)>();
        if bytes <= POOLED_ARENA_BYTES {
            arena.text.clear();
            arena.items.clear();
            self.0.give_back(arena);
        }
    }
}

static LIST_ARENAS: ArenaPool<ListItem> = ArenaPool::new();
static MANIFEST_ARENAS: ArenaPool<RawEntry> = ArenaPool::new();

/// One manifest-list entry, projected.
#[derive(Debug)]
pub(super) struct ListItem {
    pub length: i64,
    pub content: ManifestContent,
    pub listed: ListedManifest,
}

/// A decoded manifest list and its file size. Hand it to [`DecodedList::recycle`] when done.
#[derive(Debug)]
pub(super) struct DecodedList {
    items: Arena<ListItem>,
    pub file_size: i64,
}

impl DecodedList {
    pub(super) fn iter(&self) -> impl Iterator<Item = (&str, &ListItem)> {
        self.items.iter()
    }

    pub(super) fn len(&self) -> usize {
        self.items.len()
    }

    pub(super) fn recycle(self) {
        LIST_ARENAS.give_back(self.items);
    }
}

/// One manifest entry, projected.
#[derive(Debug, Clone)]
pub(super) struct RawEntry {
    pub content: DataContent,
    pub status: EntryStatus,
    pub file_size: i64,
}

/// A decoded manifest. Hand it to [`DecodedManifest::recycle`] when done.
#[derive(Debug)]
pub(super) struct DecodedManifest {
    entries: Arena<RawEntry>,
}

impl DecodedManifest {
    pub(super) fn iter(&self) -> impl Iterator<Item = (&str, &RawEntry)> {
        self.entries.iter()
    }

    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(super) fn recycle(self) {
        MANIFEST_ARENAS.give_back(self.entries);
    }
}

/// The projected entries of one manifest list.
pub(super) fn decode_list(bytes: &[u8], uri: &str) -> Result<DecodedList> {
    let mut items = LIST_ARENAS.take();
    let decoded = for_each_list_entry(bytes, uri, |e| {
        items.push(
            e.manifest_path,
            ListItem {
                length: e.manifest_length,
                content: e.content,
                listed: ListedManifest {
                    added_snapshot_id: e.added_snapshot_id,
                    counts: match (
                        e.added_files_count,
                        e.existing_files_count,
                        e.deleted_files_count,
                    ) {
                        (Some(added), Some(existing), Some(deleted)) => Some(EntryCounts {
                            added,
                            existing,
                            deleted,
                        }),
                        _ => None,
                    },
                },
            },
        );
    });
    if let Err(e) = decoded {
        LIST_ARENAS.give_back(items);
        return Err(e);
    }
    Ok(DecodedList {
        items,
        file_size: i64::try_from(bytes.len()).unwrap_or(i64::MAX),
    })
}

thread_local! {
    /// Each decoding thread's scratch buffer for identity keys.
    static KEY: RefCell<String> = const { RefCell::new(String::new()) };
    /// Each decoding thread's batch of candidate entries (see [`decode_unkept`]).
    static CANDIDATE_BATCH: RefCell<CandidateBatch> = RefCell::new(CandidateBatch::default());
}

/// Candidate entries decoded, their slots in the kept set prefetched, not yet probed.
#[derive(Default)]
struct CandidateBatch {
    entries: Arena<RawEntry>,
    fingerprints: Vec<Fingerprint>,
}

/// Entries per batch: the probes of a batch find their cache lines loaded (a batch's lines stay
/// within L1/L2), and the batch stays small however long the manifest.
const CANDIDATE_BATCH_ENTRIES: usize = 256;

impl CandidateBatch {
    fn clear(&mut self) {
        self.entries.text.clear();
        self.entries.items.clear();
        self.fingerprints.clear();
    }

    /// Move the entries `kept` does not hold into `out`; empty the batch.
    fn flush(&mut self, kept: &FingerprintSet, out: &mut Arena<RawEntry>) {
        for ((path, entry), fingerprint) in self.entries.iter().zip(&self.fingerprints) {
            if !kept.contains(fingerprint) {
                out.push(path, entry.clone());
            }
        }
        self.clear();
    }
}

/// The fingerprints of a manifest's live (ADDED/EXISTING) entries: what a retained manifest
/// protects.
pub(super) fn decode_live_fingerprints(bytes: &[u8], uri: &str) -> Result<Vec<Fingerprint>> {
    let mut out = Vec::new();
    for_each_live_path(bytes, uri, |path, key| {
        out.push(Fingerprint::of_uri(path, key));
    })?;
    Ok(out)
}

/// Calls `each` with the path of every live (ADDED/EXISTING) entry of a manifest and the decoding
/// thread's scratch buffer for identity keys (reused across entries and files).
pub(super) fn for_each_live_path(
    bytes: &[u8],
    uri: &str,
    mut each: impl FnMut(&str, &mut String),
) -> Result<()> {
    KEY.with_borrow_mut(|key| {
        for_each_projected(bytes, uri, |e| {
            if e.status.is_live() {
                each(e.file_path, key);
            }
        })
    })
}

/// The projected entries of a candidate manifest whose files `kept` does not hold: the only ones
/// that can be deleted (or hold a manifest back when their delete fails). Each entry's slot in
/// `kept` is prefetched as the entry is decoded and probed once the manifest is done, so the
/// probes' cache misses overlap instead of stalling one entry at a time.
pub(super) fn decode_unkept(
    bytes: &[u8],
    uri: &str,
    kept: &FingerprintSet,
) -> Result<DecodedManifest> {
    let mut unkept = MANIFEST_ARENAS.take();
    let decoded = KEY.with_borrow_mut(|key| {
        CANDIDATE_BATCH.with_borrow_mut(|batch| {
            batch.clear();
            for_each_projected(bytes, uri, |e| {
                let fingerprint = Fingerprint::of_uri(e.file_path, key);
                kept.prefetch(&fingerprint);
                batch.fingerprints.push(fingerprint);
                batch.entries.push(
                    e.file_path,
                    RawEntry {
                        content: e.content,
                        status: e.status,
                        file_size: e.file_size_in_bytes,
                    },
                );
                if batch.fingerprints.len() == CANDIDATE_BATCH_ENTRIES {
                    batch.flush(kept, &mut unkept);
                }
            })?;
            batch.flush(kept, &mut unkept);
            Ok(())
        })
    });
    if let Err(e) = decoded {
        MANIFEST_ARENAS.give_back(unkept);
        return Err(e);
    }
    Ok(DecodedManifest { entries: unkept })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recycled_arenas_come_back_empty() {
        let pool: ArenaPool<u8> = ArenaPool::new();
        let mut a = pool.take();
        a.push("s3://b/x", 1);
        a.push("s3://b/yy", 2);
        let got: Vec<_> = a.iter().map(|(p, i)| (p.to_string(), *i)).collect();
        assert_eq!(got, [("s3://b/x".into(), 1), ("s3://b/yy".into(), 2)]);
        let capacity = a.text.capacity();
        pool.give_back(a);
        let b = pool.take();
        assert_eq!(b.len(), 0);
        assert_eq!(b.iter().count(), 0);
        assert_eq!(b.text.capacity(), capacity, "the buffer is reused");
    }

    #[test]
    fn a_huge_arena_is_not_pooled() {
        let pool: ArenaPool<u8> = ArenaPool::new();
        let mut a = pool.take();
        a.push(&"x".repeat(POOLED_ARENA_BYTES + 1), 0);
        pool.give_back(a);
        assert_eq!(pool.take().text.capacity(), 0);
    }
}
