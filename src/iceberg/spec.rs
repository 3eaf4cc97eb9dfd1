//! The Iceberg domain model maintenance works on: snapshots, refs, statistics files, manifest-list
//! entries and manifest entries, as typed values. Parsing and writing live elsewhere
//! (`metadata/` for `metadata.json`, `avro/` + `manifest*.rs` for Avro); this file only says what
//! the things are. Field names follow the Iceberg spec (<https://iceberg.apache.org/spec/>).

use std::collections::BTreeMap;

/// A snapshot id (`snapshot-id`).
pub type SnapshotId = i64;

/// The table format version (`format-version`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FormatVersion {
    V1 = 1,
    V2 = 2,
    V3 = 3,
}

impl FormatVersion {
    /// The number as written in metadata.
    pub fn number(self) -> i32 {
        self as i32
    }

    /// From the number in metadata; `None` for versions icetrim does not know.
    pub fn from_number(n: i64) -> Option<Self> {
        match n {
            1 => Some(FormatVersion::V1),
            2 => Some(FormatVersion::V2),
            3 => Some(FormatVersion::V3),
            _ => None,
        }
    }
}

/// One entry of `snapshots`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub snapshot_id: SnapshotId,
    pub parent_snapshot_id: Option<SnapshotId>,
    /// `sequence-number`; 0 when absent (v1).
    pub sequence_number: i64,
    pub timestamp_ms: i64,
    /// `manifest-list` (v2+, and most v1 writers).
    pub manifest_list: Option<String>,
    /// v1 inline `manifests` (used only when `manifest_list` is absent).
    pub manifests: Vec<String>,
    /// `summary` as strings (`operation` included).
    pub summary: Summary,
    pub schema_id: Option<i32>,
    /// v3 `first-row-id`.
    pub first_row_id: Option<i64>,
    /// v3 `added-rows`.
    pub added_rows: Option<i64>,
}

impl Snapshot {
    /// `summary.operation`, if present.
    pub fn operation(&self) -> Option<&str> {
        self.summary.get("operation")
    }
}

/// A snapshot's `summary`: string properties in key order, packed into one string and its offsets.
/// A table holds one per snapshot (100,000 and more); as a `BTreeMap` of `String`s each took about
/// 1 KB, packed about a quarter of that.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Keys and values back to back, in key order.
    text: Box<str>,
    /// The end of each key and each value in `text`: `[key0, value0, key1, value1, ...]`.
    ends: Box<[u32]>,
}

impl Summary {
    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// The properties in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        self.ends.chunks_exact(2).scan(0usize, |start, pair| {
            let (key_end, value_end) = (pair[0] as usize, pair[1] as usize);
            let key = self.text.get(*start..key_end).unwrap_or("");
            let value = self.text.get(key_end..value_end).unwrap_or("");
            *start = value_end;
            Some((key, value))
        })
    }

    pub fn len(&self) -> usize {
        self.ends.len() / 2
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// As a map.
    pub fn to_map(&self) -> BTreeMap<String, String> {
        self.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }
}

impl From<BTreeMap<String, String>> for Summary {
    fn from(map: BTreeMap<String, String>) -> Self {
        Summary::from_iter(map)
    }
}

/// Later values of a repeated key win, as in a map; a summary longer than 4 GiB is cut short.
impl<K: AsRef<str>, V: AsRef<str>> FromIterator<(K, V)> for Summary {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(items: I) -> Self {
        let sorted: BTreeMap<String, String> = items
            .into_iter()
            .map(|(k, v)| (k.as_ref().to_string(), v.as_ref().to_string()))
            .collect();
        let mut text = String::with_capacity(sorted.iter().map(|(k, v)| k.len() + v.len()).sum());
        let mut ends = Vec::with_capacity(sorted.len() * 2);
        for (k, v) in &sorted {
            let (Ok(key_end), Ok(value_end)) = (
                u32::try_from(text.len() + k.len()),
                u32::try_from(text.len() + k.len() + v.len()),
            ) else {
                break;
            };
            text.push_str(k);
            text.push_str(v);
            ends.extend([key_end, value_end]);
        }
        Summary {
            text: text.into_boxed_str(),
            ends: ends.into_boxed_slice(),
        }
    }
}

impl std::fmt::Debug for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// Branch or tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RefKind {
    Branch,
    Tag,
}

impl RefKind {
    /// `"branch"` or `"tag"`, as in metadata.
    pub fn as_str(self) -> &'static str {
        match self {
            RefKind::Branch => "branch",
            RefKind::Tag => "tag",
        }
    }
}

/// One entry of `refs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotRef {
    pub name: String,
    pub kind: RefKind,
    pub snapshot_id: SnapshotId,
    /// Branches only.
    pub min_snapshots_to_keep: Option<i32>,
    /// Branches only.
    pub max_snapshot_age_ms: Option<i64>,
    pub max_ref_age_ms: Option<i64>,
}

/// The name of the main branch.
pub const MAIN_BRANCH: &str = "main";

/// An entry of `statistics` or `partition-statistics`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatisticsFile {
    pub snapshot_id: SnapshotId,
    /// `statistics-path`.
    pub path: String,
    /// `file-size-in-bytes`, when given.
    pub file_size_in_bytes: Option<i64>,
    /// True for `partition-statistics`, false for `statistics` (Puffin).
    pub partition_statistics: bool,
}

/// An entry of `snapshot-log`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotLogEntry {
    pub snapshot_id: SnapshotId,
    pub timestamp_ms: i64,
}

/// An entry of `metadata-log`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataLogEntry {
    pub metadata_file: String,
    pub timestamp_ms: i64,
}

/// What a manifest holds (`content` of a manifest-list entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ManifestContent {
    Data = 0,
    Deletes = 1,
}

/// What a content file holds (`data_file.content`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DataContent {
    Data = 0,
    PositionDeletes = 1,
    EqualityDeletes = 2,
}

impl DataContent {
    /// From the integer in Avro; `None` when out of range.
    pub fn from_i32(v: i32) -> Option<Self> {
        match v {
            0 => Some(DataContent::Data),
            1 => Some(DataContent::PositionDeletes),
            2 => Some(DataContent::EqualityDeletes),
            _ => None,
        }
    }
}

/// `status` of a manifest entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryStatus {
    Existing = 0,
    Added = 1,
    Deleted = 2,
}

impl EntryStatus {
    /// From the integer in Avro; `None` when out of range.
    pub fn from_i32(v: i32) -> Option<Self> {
        match v {
            0 => Some(EntryStatus::Existing),
            1 => Some(EntryStatus::Added),
            2 => Some(EntryStatus::Deleted),
            _ => None,
        }
    }

    /// ADDED or EXISTING: the file is part of the snapshot's table state.
    pub fn is_live(self) -> bool {
        !matches!(self, EntryStatus::Deleted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_keeps_key_order_and_values() {
        let s: Summary = [
            ("total", "3"),
            ("operation", "append"),
            ("", ""),
            ("é", "ü\0"),
        ]
        .into_iter()
        .collect();
        assert_eq!(s.len(), 4);
        assert_eq!(s.get("operation"), Some("append"));
        assert_eq!(s.get(""), Some(""));
        assert_eq!(s.get("é"), Some("ü\0"));
        assert_eq!(s.get("missing"), None);
        let keys: Vec<&str> = s.iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["", "operation", "total", "é"]);
        assert_eq!(Summary::from(s.to_map()), s);
    }

    #[test]
    fn summary_repeated_keys_keep_the_last_value() {
        let s: Summary = [("a", "1"), ("a", "2")].into_iter().collect();
        assert_eq!(s.to_map(), BTreeMap::from([("a".into(), "2".into())]));
        assert!(Summary::default().is_empty());
        assert_eq!(format!("{s:?}"), r#"{"a": "2"}"#);
    }
}
