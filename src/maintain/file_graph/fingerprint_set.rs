//! [`FingerprintSet`]: the live content files of retained manifests, as an open-addressing table
//! of [`Fingerprint`]s that can be probed in batches.
//!
//! Why not `HashSet`: at 100,000 snapshots the set holds about a million fingerprints (tens of
//! MB) and is probed once per candidate entry, 25 million times. Each probe of a `HashSet` was two
//! cache misses (its control bytes, then the slot), taken one at a time between entry decodes: a
//! profile put 22% of the expiry's CPU time on those loads. Here a slot *is* the fingerprint (one
//! miss, and linear probing at most half full stays in that line), and [`FingerprintSet::prefetch`]
//! lets a caller start the loads of a whole batch before it probes them, so the misses overlap.
//!
//! A slot holds the fingerprint's low 64 bits, which also choose the slot. Two fingerprints meet
//! when those are equal (about n / 2^64 a probe: one in ten thousand billion at 100,000
//! snapshots); the empty slot is 0, and a low half of 0 is stored as 1. Either only makes two files look like one, which can only keep a file (see
//! `paths`), never delete a live one; in exchange a slot is 8 bytes, so the table is as small as
//! a `HashSet` of the full fingerprints at twice the room.

use super::paths::Fingerprint;

/// A set of fingerprints (the live content files of retained manifests).
#[derive(Debug, Clone, Default)]
pub struct FingerprintSet {
    /// A power-of-two number of slots, at most half used; empty when nothing was inserted.
    slots: Box<[u64]>,
    len: usize,
}

const MIN_SLOTS: usize = 16;

impl FingerprintSet {
    /// A set that holds `n` fingerprints without growing.
    pub fn with_capacity(n: usize) -> Self {
        FingerprintSet {
            slots: vec![0; slots_for(n)].into_boxed_slice(),
            len: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes its table takes (what it reserves of a statement's memory bound).
    pub fn memory_bytes(&self) -> u64 {
        (self.slots.len() * std::mem::size_of::<u64>()) as u64
    }

    /// Whether `fingerprint` is in the set.
    pub fn contains(&self, fingerprint: &Fingerprint) -> bool {
        let want = stored(*fingerprint);
        let Some(mask) = self.slots.len().checked_sub(1) else {
            return false;
        };
        let mut i = home(want, mask);
        loop {
            match self.slots[i] {
                0 => return false,
                slot if slot == want => return true,
                _ => i = (i + 1) & mask,
            }
        }
    }

    /// Add `fingerprint`; `false` when it was already there.
    pub fn insert(&mut self, fingerprint: Fingerprint) -> bool {
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let want = stored(fingerprint);
        let mask = self.slots.len() - 1;
        let mut i = home(want, mask);
        loop {
            match self.slots[i] {
                0 => {
                    self.slots[i] = want;
                    self.len += 1;
                    return true;
                }
                slot if slot == want => return false,
                _ => i = (i + 1) & mask,
            }
        }
    }

    /// Start loading the slot `fingerprint` is probed at, so a later [`Self::contains`] or
    /// [`Self::insert`] of it does not wait for memory. Only a hint: it changes nothing.
    #[inline]
    pub fn prefetch(&self, fingerprint: &Fingerprint) {
        let Some(mask) = self.slots.len().checked_sub(1) else {
            return;
        };
        let slot = &self.slots[home(stored(*fingerprint), mask)];
        prefetch_line(std::ptr::from_ref(slot).cast());
    }

    /// Insert a batch, each slot's load started a few fingerprints ahead.
    pub fn insert_batch(&mut self, fingerprints: &[Fingerprint]) {
        if (self.len + fingerprints.len()) * 2 > self.slots.len() {
            self.reserve(fingerprints.len());
        }
        for (i, fingerprint) in fingerprints.iter().enumerate() {
            if let Some(ahead) = fingerprints.get(i + PREFETCH_AHEAD) {
                self.prefetch(ahead);
            }
            self.insert(*fingerprint);
        }
    }

    /// Room for `additional` more without growing (at most; duplicates need none).
    pub fn reserve(&mut self, additional: usize) {
        let wanted = slots_for(self.len + additional);
        if wanted > self.slots.len() {
            self.rehash(wanted);
        }
    }

    fn grow(&mut self) {
        self.rehash((self.slots.len() * 2).max(MIN_SLOTS));
    }

    fn rehash(&mut self, slots: usize) {
        let old = std::mem::replace(&mut self.slots, vec![0; slots].into_boxed_slice());
        let mask = slots - 1;
        for want in old.iter().copied().filter(|&s| s != 0) {
            let mut i = home(want, mask);
            while self.slots[i] != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = want;
        }
    }
}

/// How far ahead [`FingerprintSet::insert_batch`] prefetches (and callers that probe batches
/// should): enough loads in flight to cover a memory access, few enough to stay in L1.
pub const PREFETCH_AHEAD: usize = 8;

fn slots_for(n: usize) -> usize {
    n.saturating_mul(2).max(MIN_SLOTS).next_power_of_two()
}

/// What a slot holds: the low half (0 taken as 1).
fn stored(fingerprint: Fingerprint) -> u64 {
    (fingerprint.bits() as u64).max(1)
}

/// The slot a stored value starts probing at: its low bits (it is already a uniform hash).
fn home(stored: u64, mask: usize) -> usize {
    (stored as usize) & mask
}

#[inline]
fn prefetch_line(address: *const i8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it never faults or reads memory into the program, whatever
    // the address, and SSE is part of the x86_64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(address);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}

impl Extend<Fingerprint> for FingerprintSet {
    fn extend<I: IntoIterator<Item = Fingerprint>>(&mut self, items: I) {
        for fingerprint in items {
            self.insert(fingerprint);
        }
    }
}

impl FromIterator<Fingerprint> for FingerprintSet {
    fn from_iter<I: IntoIterator<Item = Fingerprint>>(items: I) -> Self {
        let mut set = FingerprintSet::default();
        set.extend(items);
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn fp(n: u128) -> Fingerprint {
        Fingerprint::from_bits(n)
    }

    #[test]
    fn the_empty_set_holds_nothing() {
        let set = FingerprintSet::default();
        assert!(set.is_empty());
        assert!(!set.contains(&fp(0)) && !set.contains(&fp(7)));
        set.prefetch(&fp(7));
    }

    #[test]
    fn it_is_a_set_through_growth_and_collisions() {
        let mut set = FingerprintSet::default();
        let mut reference = HashSet::new();
        // Multiples of 2^20: every one of these starts probing at the same slot.
        let values: Vec<u128> = (0..3000u128).map(|i| (i % 1500) << 20).collect();
        for v in &values {
            assert_eq!(set.insert(fp(*v)), reference.insert(*v.max(&1)), "{v}");
        }
        assert_eq!(set.len(), reference.len());
        for v in 0..1600u128 {
            assert_eq!(set.contains(&fp(v << 20)), v < 1500, "{v}");
        }
        let mut batched = FingerprintSet::with_capacity(4);
        let all: Vec<Fingerprint> = values.iter().map(|v| fp(*v)).collect();
        batched.insert_batch(&all);
        assert_eq!(batched.len(), set.len());
        assert!(all.iter().all(|f| batched.contains(f)));
    }

    #[test]
    fn only_the_low_half_is_held() {
        let mut set = FingerprintSet::default();
        assert!(set.insert(fp(5)));
        assert!(
            set.contains(&fp((9 << 64) | 5)),
            "the safe side: looks kept"
        );
    }

    #[test]
    fn zero_is_held_as_one() {
        let mut set = FingerprintSet::default();
        assert!(set.insert(fp(0)));
        assert!(set.contains(&fp(0)) && set.contains(&fp(1)));
        assert!(
            !set.insert(fp(1)),
            "0 and 1 are one fingerprint here: the safe side"
        );
    }

    #[test]
    fn collected_and_extended() {
        let set: FingerprintSet = (1..=100u128).map(fp).collect();
        assert_eq!(set.len(), 100);
        let mut more = set.clone();
        more.extend((50..=150u128).map(fp));
        assert_eq!(more.len(), 150);
        assert!(more.contains(&fp(150)) && !more.contains(&fp(151)));
    }
}
