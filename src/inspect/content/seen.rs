//! The manifest paths an `all_*` scan has already read, held compactly: every path's text back
//! to back in one buffer and one table from hash to position, so that 100,000s of paths are a
//! few large allocations instead of one small allocation each. Small allocations made throughout
//! a long scan, each kept to its end, are spread over the heap among the scan's short-lived
//! buffers and keep their pages resident: the peak of a whole-history scan grew with its length.

use std::collections::HashMap;
use std::hash::BuildHasher;

/// No further path with the same hash.
const END: u32 = u32::MAX;

/// A set of strings, insert-only.
#[derive(Default)]
pub(crate) struct SeenPaths {
    text: String,
    /// `(start, end)` of each path in `text`, in insertion order.
    spans: Vec<(usize, usize)>,
    /// Per path: the next path with the same hash (a chain; almost always [`END`]).
    next_same_hash: Vec<u32>,
    /// Hash → the first path with it.
    first: HashMap<u64, u32>,
    hasher: foldhash::fast::RandomState,
}

impl SeenPaths {
    /// Adds `path`; whether it was new.
    pub(crate) fn insert(&mut self, path: &str) -> bool {
        let hash = self.hasher.hash_one(path);
        let mut at = self.first.get(&hash).copied().unwrap_or(END);
        let mut last = END;
        while at != END {
            if self.get(at) == path {
                return false;
            }
            last = at;
            at = self.next_same_hash[at as usize];
        }
        let Ok(index) = u32::try_from(self.spans.len()) else {
            // More than 4 billion manifests: never reached; counted as new rather than lost.
            return true;
        };
        let start = self.text.len();
        self.text.push_str(path);
        self.spans.push((start, self.text.len()));
        self.next_same_hash.push(END);
        match last {
            END => {
                self.first.insert(hash, index);
            }
            last => self.next_same_hash[last as usize] = index,
        }
        true
    }

    fn get(&self, index: u32) -> &str {
        let (start, end) = self.spans[index as usize];
        &self.text[start..end]
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// The same answers as a `HashSet<String>`, for any sequence of short paths (repeats
        /// likely).
        #[test]
        fn answers_as_a_hash_set_does(paths in proptest::collection::vec("[ab/]{0,6}", 0..200)) {
            let mut seen = SeenPaths::default();
            let mut set = HashSet::new();
            for p in &paths {
                prop_assert_eq!(seen.insert(p), set.insert(p.clone()), "{}", p);
            }
        }
    }

    /// Paths whose hashes collide are still told apart (a fixed hasher maps everything to one
    /// chain when the table is bypassed: forced here by inserting into the chain directly).
    #[test]
    fn a_chain_of_equal_hashes_is_searched_to_its_end() {
        let mut seen = SeenPaths::default();
        assert!(seen.insert("a"));
        // Link "b" behind "a" as if their hashes were equal.
        seen.text.push('b');
        seen.spans.push((1, 2));
        seen.next_same_hash.push(END);
        seen.next_same_hash[0] = 1;
        let hash_a = seen.hasher.hash_one("a");
        let hash_b = seen.hasher.hash_one("b");
        seen.first.insert(hash_b, 0);
        assert_eq!(seen.first.get(&hash_a), Some(&0));
        assert!(!seen.insert("b"), "found at the end of the chain");
        assert!(!seen.insert("a"));
        assert!(seen.insert("c"));
    }
}
