//! The pure decisions of `rewrite_manifests`: which manifests of the current snapshot are
//! rewritten (per partition spec and content, against the target size), and how their live
//! entries are regrouped (clustered by partition, cut into manifests of about the target size).
//! No I/O: the executor reads, calls these, and writes what they return.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::iceberg::manifest::{PartitionTuple, PartitionValue};
use crate::iceberg::manifest_list::ManifestFile;
use crate::iceberg::spec::ManifestContent;

/// The table property sizing new manifests (Java `TableProperties.MANIFEST_TARGET_SIZE_BYTES`).
pub const PROP_TARGET_SIZE: &str = "commit.manifest.target-size-bytes";
/// Its default, 8 MiB (Java's).
pub const DEFAULT_TARGET_SIZE: i64 = 8 * 1024 * 1024;

/// The target size of a new manifest: the `target_manifest_size_bytes` argument, else the table
/// property [`PROP_TARGET_SIZE`], else 8 MiB. A property that is not a positive integer is
/// `BAD_ARGUMENTS` naming it.
pub fn target_size(argument: Option<i64>, properties: &BTreeMap<String, String>) -> Result<i64> {
    if let Some(bytes) = argument {
        return Ok(bytes);
    }
    match properties.get(PROP_TARGET_SIZE) {
        None => Ok(DEFAULT_TARGET_SIZE),
        Some(text) => match text.trim().parse::<i64>() {
            Ok(bytes) if bytes > 0 => Ok(bytes),
            _ => Err(Error::bad_arguments(format!(
                "Invalid value '{text}' of table property '{PROP_TARGET_SIZE}': expected a \
                 positive integer (bytes)"
            ))),
        },
    }
}

/// Why a manifest of the current snapshot is carried by reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeepReason {
    /// `spec_id = N` names another spec.
    OtherSpec,
    /// Its group (spec, content) already has no more manifests than the target size requires.
    AlreadyCompact,
    /// `OPTIMIZE TABLE t MANIFEST`: the snapshot has no more manifests than
    /// `iceberg_manifest_min_count_to_compact`.
    BelowMinCount,
}

impl KeepReason {
    pub fn as_str(self) -> &'static str {
        match self {
            KeepReason::OtherSpec => "other partition spec",
            KeepReason::AlreadyCompact => "group already at the target size",
            KeepReason::BelowMinCount => {
                "no more manifests than iceberg_manifest_min_count_to_compact"
            }
        }
    }
}

/// The verdict on one manifest of the current snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ManifestVerdict {
    /// Its live entries go into the group's new manifests; its list entry is replaced.
    Rewrite {
        group: usize,
    },
    Keep(KeepReason),
}

/// The manifests of one partition spec and one content that are rewritten together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub spec_id: i32,
    pub content: ManifestContent,
    /// Indexes into the manifest list, in list order.
    pub manifests: Vec<usize>,
    /// Estimated bytes of the group's live entries (see [`estimated_live_bytes`]).
    pub live_bytes: i64,
    /// How many manifests the target size requires: `ceil(live_bytes / target)`, at least 1.
    pub target_count: usize,
}

/// Which manifests are rewritten, and in which groups.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selection {
    /// One verdict per manifest of the list, in list order.
    pub verdicts: Vec<ManifestVerdict>,
    /// Only the groups that are rewritten.
    pub groups: Vec<Group>,
}

impl Selection {
    /// Nothing is rewritten.
    pub fn is_noop(&self) -> bool {
        self.groups.is_empty()
    }

    /// How many manifests are replaced.
    pub fn rewritten_count(&self) -> usize {
        self.groups.iter().map(|g| g.manifests.len()).sum()
    }
}

/// The bytes a manifest's live entries take, estimated from the list entry: its length times the
/// share of live files among all its entries (the whole length when the counts are unknown).
pub fn estimated_live_bytes(m: &ManifestFile) -> i64 {
    let live = i64::from(m.added_files_count.unwrap_or(0))
        + i64::from(m.existing_files_count.unwrap_or(0));
    let total = live + i64::from(m.deleted_files_count.unwrap_or(0));
    if m.added_files_count.is_none() || total == 0 {
        return m.manifest_length.max(0);
    }
    let scaled = i128::from(m.manifest_length.max(0)) * i128::from(live) / i128::from(total);
    i64::try_from(scaled).unwrap_or(i64::MAX)
}

/// How many manifests of `target` bytes `bytes` need (at least 1).
pub fn required_count(bytes: i64, target: i64) -> usize {
    let target = target.max(1);
    let count = (bytes.max(0) as u64).div_ceil(target as u64).max(1);
    usize::try_from(count).unwrap_or(usize::MAX)
}

/// Decide which manifests of `list` (the current snapshot's manifest list) are rewritten: with
/// `spec_id`, only that spec's; per (spec, content), a group is rewritten when it has more
/// manifests than its live bytes require at `target` bytes each (Spark's action leaves a group
/// that is already one manifest alone; counting the required manifests makes a second run a
/// no-op). Data and delete manifests, and different specs, never share a group.
pub fn select(list: &[ManifestFile], spec_id: Option<i32>, target: i64) -> Selection {
    let mut by_group: BTreeMap<(i32, u8), Vec<usize>> = BTreeMap::new();
    let mut verdicts = vec![ManifestVerdict::Keep(KeepReason::OtherSpec); list.len()];
    for (i, m) in list.iter().enumerate() {
        if spec_id.is_some_and(|id| id != m.partition_spec_id) {
            continue;
        }
        let content = match m.content {
            ManifestContent::Data => 0,
            ManifestContent::Deletes => 1,
        };
        by_group
            .entry((m.partition_spec_id, content))
            .or_default()
            .push(i);
    }
    let mut groups = Vec::new();
    for ((spec_id, _), manifests) in by_group {
        let live_bytes: i64 = manifests
            .iter()
            .map(|&i| estimated_live_bytes(&list[i]))
            .fold(0i64, i64::saturating_add);
        let target_count = required_count(live_bytes, target);
        if manifests.len() <= target_count {
            for &i in &manifests {
                verdicts[i] = ManifestVerdict::Keep(KeepReason::AlreadyCompact);
            }
            continue;
        }
        let group = groups.len();
        for &i in &manifests {
            verdicts[i] = ManifestVerdict::Rewrite { group };
        }
        groups.push(Group {
            spec_id,
            content: list[manifests[0]].content,
            manifests,
            live_bytes,
            target_count,
        });
    }
    Selection { verdicts, groups }
}

/// One component of a partition tuple, ordered (nulls first) so equal partitions sort together.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum KeyPart {
    Null,
    Bool(bool),
    Int(i64),
    /// An IEEE float as a totally ordered integer.
    Float(i64),
    Text(String),
    Bytes(Vec<u8>),
}

/// A partition tuple as a sort key.
pub type PartitionKey = Vec<KeyPart>;

fn ordered_float(v: f64) -> i64 {
    let bits = v.to_bits() as i64;
    if bits < 0 { bits ^ i64::MAX } else { bits }
}

fn key_part(value: &PartitionValue) -> KeyPart {
    match value {
        PartitionValue::Null => KeyPart::Null,
        PartitionValue::Boolean(b) => KeyPart::Bool(*b),
        PartitionValue::Int(v) => KeyPart::Int(i64::from(*v)),
        PartitionValue::Long(v) => KeyPart::Int(*v),
        PartitionValue::Float(v) => KeyPart::Float(ordered_float(f64::from(*v))),
        PartitionValue::Double(v) => KeyPart::Float(ordered_float(*v)),
        PartitionValue::String(s) => KeyPart::Text(s.clone()),
        PartitionValue::Bytes(b) | PartitionValue::Fixed(b) => KeyPart::Bytes(b.clone()),
    }
}

/// The sort key of a partition tuple: its values in field order.
pub fn partition_key(partition: &PartitionTuple) -> PartitionKey {
    partition.values().map(key_part).collect()
}

/// A live entry of a rewritten manifest, as the clustering sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveEntry {
    pub key: PartitionKey,
    /// Estimated bytes in a manifest (its manifest's length over its entry count).
    pub bytes: i64,
}

/// Cut the live entries of one group into at most `count` manifests: sorted by partition (stable,
/// so entries of one partition keep their order), then cut where the running size crosses each
/// `k / count` of the total, so every manifest holds a contiguous run of partitions of about the
/// same size and a partition's entries share as few manifests as possible. Returns the entry
/// indexes of each new manifest, none empty.
pub fn cluster(entries: &[LiveEntry], count: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..entries.len()).collect();
    order.sort_by(|&a, &b| match entries[a].key.cmp(&entries[b].key) {
        Ordering::Equal => a.cmp(&b),
        other => other,
    });
    let count = count.clamp(1, entries.len().max(1));
    let total: i128 = entries.iter().map(|e| i128::from(e.bytes.max(1))).sum();
    let mut bins: Vec<Vec<usize>> = vec![Vec::new(); count];
    let mut before: i128 = 0;
    for i in order {
        let size = i128::from(entries[i].bytes.max(1));
        // The bin of the entry's midpoint: bins cut at multiples of total / count.
        let mid = before * 2 + size;
        let bin = (mid * count as i128 / (total * 2)).clamp(0, count as i128 - 1) as usize;
        bins[bin].push(i);
        before += size;
    }
    bins.retain(|b| !b.is_empty());
    bins
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn manifest(spec: i32, content: ManifestContent, length: i64, live: i32) -> ManifestFile {
        ManifestFile {
            manifest_path: format!("m-{spec}-{length}-{live}"),
            manifest_length: length,
            partition_spec_id: spec,
            content,
            sequence_number: 1,
            min_sequence_number: 1,
            added_snapshot_id: 1,
            added_files_count: Some(live),
            existing_files_count: Some(0),
            deleted_files_count: Some(0),
            added_rows_count: Some(1),
            existing_rows_count: Some(0),
            deleted_rows_count: Some(0),
            partitions: None,
            key_metadata: None,
            first_row_id: None,
        }
    }

    #[test]
    fn target_size_precedence_and_bad_property() {
        let mut props = BTreeMap::new();
        assert_eq!(target_size(None, &props), Ok(DEFAULT_TARGET_SIZE));
        props.insert(PROP_TARGET_SIZE.to_string(), "1000".to_string());
        assert_eq!(target_size(None, &props), Ok(1000));
        assert_eq!(target_size(Some(5), &props), Ok(5));
        props.insert(PROP_TARGET_SIZE.to_string(), "-3".to_string());
        let e = target_size(None, &props).unwrap_err();
        assert!(e.message().contains(PROP_TARGET_SIZE), "{e}");
    }

    #[test]
    fn groups_keep_specs_and_contents_apart() {
        use ManifestContent::{Data, Deletes};
        let list = vec![
            manifest(0, Data, 100, 1),
            manifest(1, Data, 100, 1),
            manifest(0, Deletes, 100, 1),
            manifest(0, Data, 100, 1),
            manifest(1, Data, 100, 1),
            manifest(0, Deletes, 100, 1),
            manifest(2, Data, 100, 1),
        ];
        let s = select(&list, None, 1000);
        assert_eq!(s.groups.len(), 3);
        for g in &s.groups {
            assert!(
                g.manifests
                    .iter()
                    .all(|&i| list[i].partition_spec_id == g.spec_id)
            );
            assert!(g.manifests.iter().all(|&i| list[i].content == g.content));
            assert_eq!(g.target_count, 1);
        }
        assert_eq!(
            s.verdicts[6],
            ManifestVerdict::Keep(KeepReason::AlreadyCompact)
        );
        let only_one = select(&list, Some(1), 1000);
        assert_eq!(only_one.groups.len(), 1);
        assert_eq!(only_one.groups[0].manifests, vec![1, 4]);
        assert_eq!(
            only_one.verdicts[0],
            ManifestVerdict::Keep(KeepReason::OtherSpec)
        );
        // A target below each manifest's size requires as many manifests as there are.
        assert!(select(&list, None, 50).is_noop());
    }

    #[test]
    fn deleted_entries_do_not_count_towards_the_size() {
        let mut m = manifest(0, ManifestContent::Data, 1000, 1);
        m.deleted_files_count = Some(3);
        assert_eq!(estimated_live_bytes(&m), 250);
        m.added_files_count = None;
        assert_eq!(estimated_live_bytes(&m), 1000);
    }

    #[test]
    fn partition_keys_order_nulls_first_and_group_equal_tuples() {
        let rec = |v: PartitionValue| PartitionTuple::new(vec![("p".into(), v)]);
        let a = partition_key(&rec(PartitionValue::Int(3)));
        let b = partition_key(&rec(PartitionValue::Long(3)));
        assert_eq!(a, b, "an int and a long of one value sort as one");
        assert!(partition_key(&rec(PartitionValue::Null)) < a);
        assert!(
            partition_key(&rec(PartitionValue::Double(-1.0)))
                < partition_key(&rec(PartitionValue::Double(0.5)))
        );
    }

    proptest! {
        /// Groups never mix specs or contents; with `spec_id` nothing else is touched; a group is
        /// rewritten exactly when it has more manifests than its live bytes need.
        #[test]
        fn selection_keeps_groups_apart(
            shapes in proptest::collection::vec((0i32..3, proptest::bool::ANY, 1i64..5000, 0i32..4), 0..40),
            spec_filter in proptest::option::of(0i32..3),
            target in 1i64..20_000,
        ) {
            let list: Vec<ManifestFile> = shapes
                .iter()
                .map(|&(spec, deletes, length, live)| {
                    let content = if deletes { ManifestContent::Deletes } else { ManifestContent::Data };
                    manifest(spec, content, length, live)
                })
                .collect();
            let s = select(&list, spec_filter, target);
            prop_assert_eq!(s.verdicts.len(), list.len());
            for (g, group) in s.groups.iter().enumerate() {
                prop_assert!(group.manifests.len() > group.target_count);
                prop_assert_eq!(group.target_count, required_count(group.live_bytes, target));
                for &i in &group.manifests {
                    prop_assert_eq!(list[i].partition_spec_id, group.spec_id);
                    prop_assert_eq!(list[i].content, group.content);
                    prop_assert_eq!(s.verdicts[i], ManifestVerdict::Rewrite { group: g });
                }
            }
            for (i, v) in s.verdicts.iter().enumerate() {
                let other = spec_filter.is_some_and(|id| id != list[i].partition_spec_id);
                prop_assert_eq!(*v == ManifestVerdict::Keep(KeepReason::OtherSpec), other);
            }
        }

        /// Every entry lands in exactly one new manifest, there are at most `count` of them, and
        /// every partition's entries form one contiguous run of manifests.
        #[test]
        fn clustering_is_a_partition_of_the_entries(
            keys in proptest::collection::vec((0i64..6, 1i64..500), 1..120),
            count in 1usize..8,
        ) {
            let entries: Vec<LiveEntry> = keys
                .iter()
                .map(|&(k, bytes)| LiveEntry { key: vec![KeyPart::Int(k)], bytes })
                .collect();
            let bins = cluster(&entries, count);
            prop_assert!(bins.len() <= count && !bins.is_empty());
            let mut seen: Vec<usize> = bins.iter().flatten().copied().collect();
            seen.sort_unstable();
            prop_assert_eq!(seen, (0..entries.len()).collect::<Vec<_>>());
            // Keys never go backwards from one manifest to the next.
            let flat: Vec<&PartitionKey> = bins.iter().flatten().map(|&i| &entries[i].key).collect();
            prop_assert!(flat.windows(2).all(|w| w[0] <= w[1]));
            // Sizes are balanced: no manifest exceeds its share by more than one entry.
            let total: i64 = entries.iter().map(|e| e.bytes).sum();
            let share = (total as u64).div_ceil(bins.len() as u64) as i64;
            for b in &bins {
                let size: i64 = b.iter().map(|&i| entries[i].bytes).sum();
                prop_assert!(size <= share + 500, "{} > {}", size, share);
            }
        }
    }
}
