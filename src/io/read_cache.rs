//! A statement's cache of immutable files: manifest lists and manifests never change once
//! written (Iceberg names each by a fresh path), so a statement that re-plans after a commit
//! conflict (a path table's taken version, a REST catalog's 409, a Glue concurrent modification)
//! reads again only the files it has not seen: the new metadata's new lists and manifests.
//!
//! Keyed by a file's identity ([`super::path_key`]: `s3`/`s3a`/`s3n` and doubled slashes fold
//! together) and checked against the length when the caller knows it (a manifest list names each
//! manifest's `manifest_length`): a cached file of another length is read again and replaces the
//! entry. A failed read or decode is never cached. One cache lives for one statement
//! ([`super::FileIO::with_read_cache`]); it is dropped with it.
//!
//! **One memory bound, shared with the working set.** `budget` bounds the cache *and* the
//! statement's working set that registers itself ([`ReadCache::reserve`]: the expiry's set of
//! live-file fingerprints as it grows): the cache holds at most what the working set leaves of
//! the bound. Once full, further files are read but not kept (no eviction: the first attempt's
//! files are the ones a retry wants again); when the working set grows into what the cache
//! holds, the cache drops entries until both fit again (the working set is needed, a cached file
//! only saves a re-read).

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;

/// Files kept for one statement, by identity key.
#[derive(Debug, Default)]
pub struct ReadCache {
    budget: u64,
    /// Bytes of the bound the statement's working set takes ([`ReadCache::reserve`]).
    reserved: AtomicU64,
    files: Mutex<Files>,
    hits: AtomicU64,
    misses: AtomicU64,
}

#[derive(Debug, Default)]
struct Files {
    by_key: HashMap<String, Bytes>,
    held: u64,
}

/// What a cache did so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadCacheStats {
    /// Reads answered from the cache.
    pub hits: u64,
    /// Reads that went to storage.
    pub misses: u64,
    /// Files held.
    pub files: usize,
    /// Bytes held.
    pub bytes: u64,
}

impl ReadCache {
    /// A cache holding at most `budget` bytes (0: holds nothing).
    pub fn new(budget: u64) -> ReadCache {
        ReadCache {
            budget,
            ..ReadCache::default()
        }
    }

    /// The file with identity `key`, when held and (if `length` is known) of that length.
    pub fn get(&self, key: &str, length: Option<u64>) -> Option<Bytes> {
        let found = self.files.lock().ok().and_then(|files| {
            files
                .by_key
                .get(key)
                .filter(|b| length.is_none_or(|n| b.len() as u64 == n))
                .cloned()
        });
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Keep `bytes` as the file with identity `key`, unless its length contradicts `length` or
    /// the budget is spent. Replaces an entry of another length.
    pub fn insert(&self, key: &str, length: Option<u64>, bytes: &Bytes) {
        let size = bytes.len() as u64;
        if length.is_some_and(|n| n != size) {
            return;
        }
        let Ok(mut files) = self.files.lock() else {
            return;
        };
        let replaced = files.by_key.get(key).map_or(0, |b| b.len() as u64);
        if files.held - replaced + size > self.room() {
            return;
        }
        files.held = files.held - replaced + size;
        files.by_key.insert(key.to_string(), bytes.clone());
    }

    /// What the working set leaves of the bound for cached files.
    fn room(&self) -> u64 {
        self.budget
            .saturating_sub(self.reserved.load(Ordering::Relaxed))
    }

    /// The statement's working set now takes `bytes` of the shared bound (replacing what it
    /// reserved before): the cache keeps files only in what is left, and drops entries it holds
    /// beyond that at once.
    pub fn reserve(&self, bytes: u64) {
        self.reserved.store(bytes, Ordering::Relaxed);
        let room = self.room();
        let Ok(mut files) = self.files.lock() else {
            return;
        };
        if files.held <= room {
            return;
        }
        let mut dropped = 0;
        let over = files.held - room;
        files.by_key.retain(|_, b| {
            if dropped >= over {
                return true;
            }
            dropped += b.len() as u64;
            false
        });
        files.held -= dropped;
    }

    /// Hits, misses and what is held.
    pub fn stats(&self) -> ReadCacheStats {
        let (files, bytes) = self
            .files
            .lock()
            .map(|f| (f.by_key.len(), f.held))
            .unwrap_or_default();
        ReadCacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            files,
            bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(n: usize) -> Bytes {
        Bytes::from(vec![7u8; n])
    }

    #[test]
    fn hits_by_key_and_checks_a_known_length() {
        let cache = ReadCache::new(1 << 20);
        assert_eq!(cache.get("s3://b/m.avro", None), None);
        cache.insert("s3://b/m.avro", Some(10), &bytes(10));
        assert_eq!(cache.get("s3://b/m.avro", None).map(|b| b.len()), Some(10));
        assert_eq!(
            cache.get("s3://b/m.avro", Some(10)).map(|b| b.len()),
            Some(10)
        );
        // Another length: not this file (read again).
        assert_eq!(cache.get("s3://b/m.avro", Some(11)), None);
        assert_eq!(
            cache.stats(),
            ReadCacheStats {
                hits: 2,
                misses: 2,
                files: 1,
                bytes: 10
            }
        );
    }

    #[test]
    fn a_contradicting_length_is_not_kept_and_a_new_length_replaces() {
        let cache = ReadCache::new(1 << 20);
        cache.insert("k", Some(5), &bytes(4));
        assert_eq!(cache.stats().files, 0);
        cache.insert("k", None, &bytes(4));
        cache.insert("k", Some(6), &bytes(6));
        assert_eq!(cache.get("k", None).map(|b| b.len()), Some(6));
        assert_eq!(cache.stats().bytes, 6);
    }

    #[test]
    fn the_budget_bounds_what_is_held() {
        let cache = ReadCache::new(10);
        cache.insert("a", None, &bytes(6));
        cache.insert("b", None, &bytes(6));
        cache.insert("c", None, &bytes(4));
        assert!(cache.get("a", None).is_some());
        assert!(cache.get("b", None).is_none(), "over the budget");
        assert!(cache.get("c", None).is_some());
        assert_eq!(cache.stats().bytes, 10);
        let off = ReadCache::new(0);
        off.insert("a", None, &bytes(1));
        assert!(off.get("a", None).is_none());
    }

    #[test]
    fn the_working_set_takes_its_share_of_the_bound_first() {
        let cache = ReadCache::new(100);
        cache.insert("a", None, &bytes(40));
        cache.insert("b", None, &bytes(40));
        assert_eq!(cache.stats().bytes, 80);
        // The working set grows to 50: the cache keeps at most 50, dropping what no longer fits.
        cache.reserve(50);
        let held = cache.stats();
        assert!(held.bytes <= 50, "{held:?}");
        assert_eq!(held.files, 1);
        cache.insert("c", None, &bytes(20));
        assert!(
            cache.get("c", None).is_none(),
            "no room left beside the working set"
        );
        cache.insert("d", None, &bytes(10));
        assert!(cache.get("d", None).is_some());
        // A working set as large as the bound leaves nothing to the cache.
        cache.reserve(100);
        assert_eq!(cache.stats().bytes, 0);
        assert_eq!(cache.stats().files, 0);
        cache.insert("e", None, &bytes(1));
        assert!(cache.get("e", None).is_none());
        // It shrinks again: room comes back.
        cache.reserve(0);
        cache.insert("e", None, &bytes(100));
        assert!(cache.get("e", None).is_some());
    }

    #[tokio::test]
    async fn a_file_io_with_a_cache_reads_each_immutable_file_once() {
        use std::sync::Arc;

        use crate::io::{FileIO, RequestCounter};

        let io = FileIO::memory();
        io.overwrite("memory:///t/metadata/m1.avro", bytes(3))
            .await
            .unwrap();
        let counter = RequestCounter::new();
        let cache = Arc::new(ReadCache::new(1 << 20));
        let cached = io
            .with_request_counter(Arc::clone(&counter))
            .with_read_cache(Arc::clone(&cache));
        let len = |b: &[u8]| Ok(b.len());
        for spelling in [
            "memory:///t/metadata/m1.avro",
            "memory:///t//metadata/m1.avro",
        ] {
            let (size, n) = cached
                .read_immutable_and(spelling, Some(3), len)
                .await
                .unwrap();
            assert_eq!((size, n), (3, 3));
        }
        assert_eq!(
            cached
                .read_immutable("memory:///t/metadata/m1.avro", None)
                .await
                .unwrap()
                .len(),
            3
        );
        assert_eq!(counter.snapshot().get, 1, "one GET for three reads");
        // A length the file does not have: read again (and not kept).
        cached
            .read_immutable("memory:///t/metadata/m1.avro", Some(9))
            .await
            .unwrap();
        assert_eq!(counter.snapshot().get, 2);
        // Without a cache every read goes to storage; a gone file is an error, never cached.
        let plain = io.with_request_counter(Arc::clone(&counter));
        plain
            .read_immutable("memory:///t/metadata/m1.avro", None)
            .await
            .unwrap();
        assert_eq!(counter.snapshot().get, 3);
        assert!(
            cached
                .read_immutable("memory:///t/gone.avro", None)
                .await
                .is_err()
        );
        assert!(
            cache
                .get(&crate::io::path_key("memory:///t/gone.avro"), None)
                .is_none()
        );
    }
}
