//! Snapshot summaries as Java's `SnapshotSummary.Builder` writes them: `added-*` / `deleted-*` /
//! `removed-*` keys for what the commit changed (only when non-zero), and `total-*` keys carried
//! from the parent's summary and adjusted. The manifest list records no file sizes, so totals are
//! never recomputed from manifests; when the parent has a snapshot but lacks a total, that total is
//! left out (Java does the same). A first snapshot starts from zero.

use std::collections::BTreeMap;

use crate::iceberg::spec::DataContent;

/// A file the commit adds or removes, as the summary counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counted {
    pub content: DataContent,
    pub record_count: i64,
    pub file_size_in_bytes: i64,
}

/// What one side (added or removed) of a commit amounts to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub data_files: i64,
    pub delete_files: i64,
    pub position_delete_files: i64,
    pub equality_delete_files: i64,
    pub records: i64,
    pub files_size: i64,
    pub position_deletes: i64,
    pub equality_deletes: i64,
}

impl Tally {
    pub fn of(files: impl IntoIterator<Item = Counted>) -> Tally {
        let mut t = Tally::default();
        for f in files {
            t.files_size += f.file_size_in_bytes;
            match f.content {
                DataContent::Data => {
                    t.data_files += 1;
                    t.records += f.record_count;
                }
                DataContent::PositionDeletes => {
                    t.delete_files += 1;
                    t.position_delete_files += 1;
                    t.position_deletes += f.record_count;
                }
                DataContent::EqualityDeletes => {
                    t.delete_files += 1;
                    t.equality_delete_files += 1;
                    t.equality_deletes += f.record_count;
                }
            }
        }
        t
    }

    /// `self` plus `added` minus `removed`, field by field.
    pub fn apply(&self, added: &Tally, removed: &Tally) -> Tally {
        let f = |a: i64, b: i64, c: i64| a + b - c;
        Tally {
            data_files: f(self.data_files, added.data_files, removed.data_files),
            delete_files: f(self.delete_files, added.delete_files, removed.delete_files),
            position_delete_files: f(
                self.position_delete_files,
                added.position_delete_files,
                removed.position_delete_files,
            ),
            equality_delete_files: f(
                self.equality_delete_files,
                added.equality_delete_files,
                removed.equality_delete_files,
            ),
            records: f(self.records, added.records, removed.records),
            files_size: f(self.files_size, added.files_size, removed.files_size),
            position_deletes: f(
                self.position_deletes,
                added.position_deletes,
                removed.position_deletes,
            ),
            equality_deletes: f(
                self.equality_deletes,
                added.equality_deletes,
                removed.equality_deletes,
            ),
        }
    }

    /// The `total-*` keys of a summary whose totals are `self`.
    pub fn as_summary(&self) -> BTreeMap<String, String> {
        TOTALS
            .iter()
            .map(|(key, of)| (key.to_string(), of(self).to_string()))
            .collect()
    }
}

/// The `total-*` keys and how each is derived from a tally.
/// Reads one total out of a tally.
type TotalOf = fn(&Tally) -> i64;

const TOTALS: [(&str, TotalOf); 6] = [
    ("total-records", |t| t.records),
    ("total-files-size", |t| t.files_size),
    ("total-data-files", |t| t.data_files),
    ("total-delete-files", |t| t.delete_files),
    ("total-position-deletes", |t| t.position_deletes),
    ("total-equality-deletes", |t| t.equality_deletes),
];

/// The summary of a commit with `operation` that added `added` and removed `removed`, given the
/// parent's summary (`None` for a first snapshot).
pub fn build_summary(
    operation: &str,
    added: &Tally,
    removed: &Tally,
    parent: Option<&BTreeMap<String, String>>,
) -> BTreeMap<String, String> {
    let mut s = BTreeMap::new();
    s.insert("operation".to_string(), operation.to_string());
    let changes: [(&str, i64); 16] = [
        ("added-data-files", added.data_files),
        ("deleted-data-files", removed.data_files),
        ("added-delete-files", added.delete_files),
        ("removed-delete-files", removed.delete_files),
        ("added-position-delete-files", added.position_delete_files),
        (
            "removed-position-delete-files",
            removed.position_delete_files,
        ),
        ("added-equality-delete-files", added.equality_delete_files),
        (
            "removed-equality-delete-files",
            removed.equality_delete_files,
        ),
        ("added-records", added.records),
        ("deleted-records", removed.records),
        ("added-files-size", added.files_size),
        ("removed-files-size", removed.files_size),
        ("added-position-deletes", added.position_deletes),
        ("removed-position-deletes", removed.position_deletes),
        ("added-equality-deletes", added.equality_deletes),
        ("removed-equality-deletes", removed.equality_deletes),
    ];
    for (key, value) in changes {
        if value != 0 {
            s.insert(key.to_string(), value.to_string());
        }
    }
    for (key, of) in TOTALS {
        let before = match parent {
            None => Some(0),
            Some(p) => p.get(key).and_then(|v| v.trim().parse::<i64>().ok()),
        };
        if let Some(before) = before {
            let total = before + of(added) - of(removed);
            s.insert(key.to_string(), total.to_string());
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(content: DataContent, records: i64, size: i64) -> Counted {
        Counted {
            content,
            record_count: records,
            file_size_in_bytes: size,
        }
    }

    #[test]
    fn totals_carry_from_parent_and_adjust() {
        let parent: BTreeMap<String, String> = [
            ("total-records", "100"),
            ("total-files-size", "1000"),
            ("total-data-files", "4"),
            ("total-delete-files", "1"),
            ("total-position-deletes", "3"),
            ("total-equality-deletes", "0"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let added = Tally::of([file(DataContent::Data, 10, 50)]);
        let removed = Tally::of([
            file(DataContent::Data, 25, 250),
            file(DataContent::PositionDeletes, 3, 30),
        ]);
        let s = build_summary("overwrite", &added, &removed, Some(&parent));
        assert_eq!(s["total-records"], "85");
        assert_eq!(s["total-files-size"], "770");
        assert_eq!(s["total-data-files"], "4");
        assert_eq!(s["total-delete-files"], "0");
        assert_eq!(s["total-position-deletes"], "0");
        assert_eq!(s["total-equality-deletes"], "0");
        assert_eq!(s["added-data-files"], "1");
        assert_eq!(s["deleted-data-files"], "1");
        assert_eq!(s["removed-delete-files"], "1");
        assert_eq!(s["removed-position-deletes"], "3");
        assert_eq!(s["deleted-records"], "25");
        assert!(
            !s.contains_key("added-delete-files"),
            "zero counts are left out"
        );
    }

    #[test]
    fn a_total_the_parent_lacks_is_left_out() {
        let parent = BTreeMap::from([("total-records".to_string(), "7".to_string())]);
        let s = build_summary(
            "append",
            &Tally::of([file(DataContent::Data, 3, 9)]),
            &Tally::default(),
            Some(&parent),
        );
        assert_eq!(s["total-records"], "10");
        assert!(!s.contains_key("total-files-size"));
        let first = build_summary(
            "append",
            &Tally::of([file(DataContent::Data, 3, 9)]),
            &Tally::default(),
            None,
        );
        assert_eq!(first["total-files-size"], "9");
        assert_eq!(first["total-delete-files"], "0");
    }
}
