//! Interned path keys: [`PathInterner`] maps each distinct key (already normalised for identity by
//! `io::path_key`) to a dense [`PathId`], storing the key once; [`PathSet`] is a bitset of ids, so
//! the keep-set arithmetic of [`crate::maintain::expire::keepset`] is index operations, not string hashing.
//!
//! [`Fingerprint`]s are for the paths too many to intern: the live content files of retained
//! manifests (millions of entries at 100,000 snapshots). Decoding threads fingerprint each key in
//! parallel and fold them into a [`FingerprintSet`]; candidate entries are then checked against that
//! set on the decoding threads too, so only the entries that may be deleted reach the interner.
//! A collision (the set compares 64 bits: about n / 2^64 a probe) can only make a file look kept:
//! a file is deleted only when its own spelling's fingerprint is absent from the set, so a
//! collision never deletes a live file.
//! `remove_orphan_files` keeps its reachable set the same way, fingerprinting each path below the
//! table location (see [`super::reachable`]).

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::{Error, ErrorKind, Result};

/// An interned path key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PathId(u32);

impl PathId {
    /// The id's index in its interner.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Path keys ↔ [`PathId`]s; one allocation per distinct key, shared by both directions. Hashed
/// with foldhash: interning runs once per manifest entry, and SipHash was 12% of a 1,000-snapshot
/// expiry (keys come from the table's own metadata, so flooding resistance buys nothing here).
#[derive(Debug, Default, Clone)]
pub struct PathInterner {
    ids: HashMap<Arc<str>, PathId, foldhash::fast::RandomState>,
    keys: Vec<Arc<str>>,
}

impl PathInterner {
    pub fn new() -> Self {
        Self::default()
    }

    /// The id of `key`, adding it if new. Fails only past 2^32 distinct keys.
    pub fn intern(&mut self, key: &str) -> Result<PathId> {
        if let Some(id) = self.ids.get(key) {
            return Ok(*id);
        }
        let id = u32::try_from(self.keys.len()).map_err(|_| {
            Error::new(
                ErrorKind::LimitExceeded,
                "more than 2^32 distinct file paths",
            )
        })?;
        let key: Arc<str> = Arc::from(key);
        self.keys.push(Arc::clone(&key));
        self.ids.insert(key, PathId(id));
        Ok(PathId(id))
    }

    /// The id of `key`, if interned.
    pub fn get(&self, key: &str) -> Option<PathId> {
        self.ids.get(key).copied()
    }

    /// The key of `id`; `None` for an id from another interner.
    pub fn resolve(&self, id: PathId) -> Option<&str> {
        self.keys.get(id.index()).map(|k| &**k)
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// A set of [`PathId`]s as a bitset: ids are dense, so membership is an index, not a hash.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathSet {
    words: Vec<u64>,
    len: usize,
}

impl PathSet {
    /// Add `id`; true when it was not there yet.
    pub fn insert(&mut self, id: PathId) -> bool {
        let (word, bit) = (id.index() / 64, 1u64 << (id.index() % 64));
        if word >= self.words.len() {
            self.words.resize(word + 1, 0);
        }
        match self.words.get_mut(word) {
            Some(w) if *w & bit == 0 => {
                *w |= bit;
                self.len += 1;
                true
            }
            _ => false,
        }
    }

    pub fn contains(&self, id: &PathId) -> bool {
        self.words
            .get(id.index() / 64)
            .is_some_and(|w| w & (1u64 << (id.index() % 64)) != 0)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Extend<PathId> for PathSet {
    fn extend<I: IntoIterator<Item = PathId>>(&mut self, ids: I) {
        for id in ids {
            self.insert(id);
        }
    }
}

impl FromIterator<PathId> for PathSet {
    fn from_iter<I: IntoIterator<Item = PathId>>(ids: I) -> Self {
        let mut set = PathSet::default();
        set.extend(ids);
        set
    }
}

/// A 128-bit hash (XXH3) of a path key: the identity of a content file in the keep set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fingerprint(u128);

impl Fingerprint {
    /// The fingerprint of an identity key (`io::path_key`).
    pub fn of_key(key: &str) -> Fingerprint {
        Fingerprint(xxhash_rust::xxh3::xxh3_128(key.as_bytes()))
    }

    /// The hash itself.
    pub fn bits(self) -> u128 {
        self.0
    }

    /// A fingerprint with the given bits (tests and tables).
    pub fn from_bits(bits: u128) -> Fingerprint {
        Fingerprint(bits)
    }

    /// The fingerprint of a URI's identity key, with `key` as scratch space (reused per entry).
    pub fn of_uri(uri: &str, key: &mut String) -> Fingerprint {
        crate::io::path_key_into(uri, key);
        Fingerprint::of_key(key)
    }
}

/// The path of `file_key` below `table_root_key` (no leading slash), or `None` when the file is
/// not strictly below the root. Both are path keys normalised alike; a trailing slash on the root
/// is optional.
pub fn relative_path<'a>(table_root_key: &str, file_key: &'a str) -> Option<&'a str> {
    let root = table_root_key.trim_end_matches('/');
    let rest = file_key.strip_prefix(root)?;
    if !root.is_empty() && !rest.starts_with('/') {
        return None; // `…/table2/x` is not below `…/table`
    }
    let rel = rest.trim_start_matches('/');
    (!rel.is_empty()).then_some(rel)
}

/// The components of `file_key` below `table_root_key` (empty components dropped).
pub fn relative_components<'a>(table_root_key: &str, file_key: &'a str) -> Option<Vec<&'a str>> {
    relative_path(table_root_key, file_key)
        .map(|rel| rel.split('/').filter(|c| !c.is_empty()).collect())
}

pub use super::fingerprint_set::FingerprintSet;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_follow_identity_keys() {
        let mut key = String::new();
        let a = Fingerprint::of_uri("s3a://b/t/data/x.parquet", &mut key);
        let b = Fingerprint::of_uri("s3://b//t/data/x.parquet", &mut key);
        let c = Fingerprint::of_uri("s3://b/t/data/y.parquet", &mut key);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(
            a,
            Fingerprint::of_key(&crate::io::path_key("s3://b/t/data/x.parquet"))
        );
        let mut set = FingerprintSet::default();
        assert!(set.insert(a) && !set.insert(b) && set.insert(c));
        assert!(set.contains(&Fingerprint::of_uri("s3n://b/t/data/y.parquet", &mut key)));
    }

    #[test]
    fn the_interner_gives_one_id_per_distinct_key() {
        let mut p = PathInterner::new();
        let a = p.intern("s3://b/t/a").unwrap();
        let b = p.intern("s3://b/t/b").unwrap();
        assert_eq!(p.intern("s3://b/t/a").unwrap(), a);
        assert_ne!(a, b);
        assert_eq!(p.len(), 2);
        assert_eq!(p.resolve(b), Some("s3://b/t/b"));
        assert_eq!(p.get("s3://b/t/a"), Some(a));
        assert_eq!(p.get("s3://b/t/c"), None);
        assert_eq!(PathInterner::new().resolve(a), None);
    }

    #[test]
    fn the_path_set_is_a_set() {
        let mut p = PathInterner::new();
        let ids: Vec<PathId> = (0..200)
            .map(|i| p.intern(&format!("k{i}")).unwrap())
            .collect();
        let mut set = PathSet::default();
        assert!(set.is_empty());
        assert!(set.insert(ids[130]));
        assert!(!set.insert(ids[130]));
        assert!(set.insert(ids[0]));
        assert!(set.insert(ids[63]));
        assert!(set.insert(ids[64]));
        assert_eq!(set.len(), 4);
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(set.contains(id), [0, 63, 64, 130].contains(&i), "{i}");
        }
        let collected: PathSet = [ids[5], ids[5], ids[199]].into_iter().collect();
        assert_eq!(collected.len(), 2);
        assert!(collected.contains(&ids[199]) && !collected.contains(&ids[198]));
    }
}
