//! What a compaction may still commit when the table moved between its plan and its commit (pure).
//!
//! A `replace` snapshot must read exactly the rows of its parent. A group's outputs hold the rows
//! its inputs held in the *starting* snapshot, with the deletes live *there* applied. They may take
//! the inputs' place in the newest snapshot only when that snapshot reads those inputs exactly as
//! the start did. Comparing the newest live files with the start's is not enough on its own: the
//! newest state may have undone something the start held (a rollback past a merge-on-read delete,
//! a delete file removed meanwhile). The inputs are then live in the parent with rows our outputs
//! no longer hold, and committing would drop those rows.
//!
//! So every commit attempt after the first (the first commits on the start itself) compares the
//! newest state with the start. **Every group fails** when
//! - the starting snapshot is no longer in the history of the newest head (Iceberg Java's history
//!   check: "Cannot determine history between starting snapshot … and the last known ancestor …"):
//!   the branch was rolled back or replaced, and nothing planned from the start says anything
//!   about the head's rows;
//! - the table's format version changed (a v2 → v3 upgrade gives rows a lineage, `_row_id`, that
//!   outputs written for v2 do not carry);
//! - the default partition spec changed (the outputs were written for the old one).
//!
//! Otherwise, when the head is not the start, **a group fails** when
//! - one of its inputs is no longer live, or is live with another data sequence number;
//! - a delete file live at the start that applies to one of its inputs is no longer live (the rows
//!   it deleted are back in the parent; our outputs lack them);
//! - a delete file live now but not at the start applies to one of its inputs (position, equality
//!   or deletion vector: the rows it deletes would come back in our outputs).
//!
//! Why that suffices: with the start in the head's history, the head's rows of a group's inputs
//! are decided by the inputs themselves and the delete files applying to them. Passing the checks,
//! those are the same files, with the same sequence numbers, as at the start (content files never
//! change once written), so the inputs read in the head exactly the rows our outputs hold. A group
//! that fails is left as it is and counted in `failed_data_files_count`; the others commit.

use std::collections::{HashMap, HashSet};

use super::deletes::applies;
use super::model::LiveFile;
use crate::iceberg::metadata::Ancestry;
use crate::iceberg::spec::{FormatVersion, SnapshotId};

/// The table-wide facts an attempt compares with the start's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableFacts {
    pub format_version: FormatVersion,
    pub default_spec_id: i32,
}

/// Why no group planned from snapshot `start` may commit on the newest state, whose head has
/// `history` with respect to `start`; `None`: judge each group ([`group_conflict`]).
pub fn base_refusal(
    start: SnapshotId,
    history: Ancestry,
    start_facts: TableFacts,
    now: TableFacts,
) -> Option<String> {
    if let Some(gap) = history.gap_message(start) {
        return Some(format!(
            "{gap} (the branch was rolled back or replaced since the plan)"
        ));
    }
    if now.format_version != start_facts.format_version {
        return Some(format!(
            "the table's format version changed from {} to {} since the plan",
            start_facts.format_version.number(),
            now.format_version.number()
        ));
    }
    if now.default_spec_id != start_facts.default_spec_id {
        return Some(format!(
            "the default partition spec changed from {} to {} since the plan",
            start_facts.default_spec_id, now.default_spec_id
        ));
    }
    None
}

/// The live content files of one snapshot, indexed for [`group_conflict`].
#[derive(Debug)]
pub struct LiveSet<'a> {
    /// Data file path → data sequence number.
    data: HashMap<&'a str, i64>,
    deletes: &'a [LiveFile],
    delete_paths: HashSet<&'a str>,
}

impl<'a> LiveSet<'a> {
    pub fn new(data: &'a [LiveFile], deletes: &'a [LiveFile]) -> Self {
        LiveSet {
            data: data
                .iter()
                .map(|f| (f.path(), f.data_sequence_number))
                .collect(),
            deletes,
            delete_paths: deletes.iter().map(LiveFile::path).collect(),
        }
    }
}

/// Why the group of `inputs` (live files of the start) cannot commit on the newest state `now`
/// when the head is not the start; `None`: it can. See the module comment.
pub fn group_conflict(inputs: &[&LiveFile], start: &LiveSet, now: &LiveSet) -> Option<String> {
    for input in inputs {
        match now.data.get(input.path()) {
            None => return Some(format!("'{}' is no longer live", input.path())),
            Some(&seq) if seq != input.data_sequence_number => {
                return Some(format!(
                    "'{}' is live with data sequence number {seq}, not {} as at the start",
                    input.path(),
                    input.data_sequence_number
                ));
            }
            Some(_) => {}
        }
    }
    for d in start.deletes {
        if now.delete_paths.contains(d.path()) {
            continue;
        }
        if let Some(hit) = inputs.iter().find(|f| applies(d, f)) {
            return Some(format!(
                "delete file '{}', applied to '{}', is no longer live",
                d.path(),
                hit.path()
            ));
        }
    }
    for d in now.deletes {
        if start.delete_paths.contains(d.path()) {
            continue;
        }
        if let Some(hit) = inputs.iter().find(|f| applies(d, f)) {
            return Some(format!(
                "delete file '{}' committed meanwhile applies to '{}'",
                d.path(),
                hit.path()
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::iceberg::manifest::DataFile;
    use crate::iceberg::spec::DataContent;

    fn f(content: DataContent, path: &str, seq: i64) -> LiveFile {
        LiveFile {
            file: DataFile::new(content, path, 1, 1),
            spec_id: 0,
            spec_unpartitioned: false,
            partition: "p=1".into(),
            data_sequence_number: seq,
        }
    }

    fn data(path: &str, seq: i64) -> LiveFile {
        f(DataContent::Data, path, seq)
    }

    const V2: TableFacts = TableFacts {
        format_version: FormatVersion::V2,
        default_spec_id: 0,
    };

    #[test]
    fn the_base_refuses_every_group_when_the_history_breaks_or_the_table_changed() {
        let gap = Ancestry::Unrelated {
            last_known: Some(11),
        };
        let why = base_refusal(42, gap, V2, V2).unwrap();
        assert!(
            why.starts_with(
                "Cannot determine history between starting snapshot 42 and the last known \
                 ancestor 11"
            ),
            "{why}"
        );
        let none = Ancestry::Unrelated { last_known: None };
        assert!(
            base_refusal(42, none, V2, V2)
                .unwrap()
                .contains("ancestor null")
        );
        let v3 = TableFacts {
            format_version: FormatVersion::V3,
            ..V2
        };
        assert_eq!(
            base_refusal(42, Ancestry::Listed, V2, v3).as_deref(),
            Some("the table's format version changed from 2 to 3 since the plan")
        );
        let respec = TableFacts {
            default_spec_id: 1,
            ..V2
        };
        assert!(
            base_refusal(42, Ancestry::Listed, V2, respec)
                .unwrap()
                .contains("default partition spec changed from 0 to 1")
        );
        // The history is checked first: a rollback is named as such whatever else changed.
        assert!(
            base_refusal(42, gap, V2, v3)
                .unwrap()
                .starts_with("Cannot determine history")
        );
        assert_eq!(base_refusal(42, Ancestry::Listed, V2, V2), None);
        assert_eq!(
            base_refusal(42, Ancestry::Expired, V2, V2),
            None,
            "an expired start whose child is listed still has a known history"
        );
    }

    /// Every combination of the group rules on one input `a` (data sequence number 1) in the
    /// start: whether it is live now (and with which sequence number), whether the start's
    /// position delete on it is still live, and which delete was added meanwhile.
    #[test]
    fn every_combination_of_the_group_rules() {
        let a = data("a", 1);
        let b = data("b", 1);
        let old_pos = f(DataContent::PositionDeletes, "old-pos", 2);
        let mut elsewhere = f(DataContent::EqualityDeletes, "eq-p2", 3);
        elsewhere.partition = "p=2".into();
        let new_eq = f(DataContent::EqualityDeletes, "new-eq", 3);
        let new_pos = f(DataContent::PositionDeletes, "new-pos", 3);
        let start_data = [a.clone(), b.clone()];
        let start_deletes = [old_pos.clone()];
        let start = LiveSet::new(&start_data, &start_deletes);
        for input_now in [None, Some(1), Some(5)] {
            for old_still_live in [false, true] {
                for added in [None, Some(&elsewhere), Some(&new_eq), Some(&new_pos)] {
                    let mut now_data = vec![b.clone()];
                    if let Some(seq) = input_now {
                        now_data.push(data("a", seq));
                    }
                    let mut now_deletes = Vec::new();
                    if old_still_live {
                        now_deletes.push(old_pos.clone());
                    }
                    now_deletes.extend(added.cloned());
                    let now = LiveSet::new(&now_data, &now_deletes);
                    let got = group_conflict(&[&a], &start, &now);
                    let case = format!("{input_now:?} {old_still_live} {added:?}");
                    let expected = match (input_now, old_still_live, added) {
                        (None, ..) => Some("'a' is no longer live"),
                        (Some(5), ..) => Some("data sequence number 5"),
                        (_, false, _) => Some("'old-pos', applied to 'a', is no longer live"),
                        (_, true, Some(d)) if d.path() != "eq-p2" => {
                            Some("committed meanwhile applies to 'a'")
                        }
                        _ => None,
                    };
                    match (expected, got) {
                        (None, None) => {}
                        (Some(want), Some(why)) => assert!(why.contains(want), "{case}: {why}"),
                        (want, got) => panic!("{case}: expected {want:?}, got {got:?}"),
                    }
                }
            }
        }
    }

    #[test]
    fn a_vanished_delete_that_applied_to_no_input_does_not_matter() {
        let a = data("a", 1);
        let mut other = f(DataContent::PositionDeletes, "pos-p2", 2);
        other.partition = "p=2".into();
        let mut older = f(DataContent::PositionDeletes, "pos-older", 0);
        older.partition = "p=1".into();
        let start_data = [a.clone()];
        let start_deletes = [other, older];
        let start = LiveSet::new(&start_data, &start_deletes);
        let now = LiveSet::new(&start_data, &[]);
        assert_eq!(
            group_conflict(&[&a], &start, &now),
            None,
            "another partition's delete and a delete older than the input applied to nothing"
        );
    }

    #[test]
    fn a_deletion_vector_replaced_meanwhile_fails_the_group() {
        let a = data("a", 1);
        let mut dv = f(DataContent::PositionDeletes, "dv-1.puffin", 2);
        dv.file.file_format = "PUFFIN".into();
        dv.file.referenced_data_file = Some("a".into());
        let mut dv2 = dv.clone();
        dv2.file.file_path = "dv-2.puffin".into();
        dv2.data_sequence_number = 3;
        let start_data = [a.clone()];
        let (start_deletes, now_deletes) = ([dv], [dv2]);
        let start = LiveSet::new(&start_data, &start_deletes);
        let now = LiveSet::new(&start_data, &now_deletes);
        let why = group_conflict(&[&a], &start, &now).unwrap();
        assert!(why.contains("'dv-1.puffin', applied to 'a'"), "{why}");
    }

    /// A universe of content files, each path with fixed attributes: data files `d0..d5` in
    /// partitions `p=0..2`, delete files `x0..x7` (position or equality, partition or global,
    /// some referencing one data file).
    fn universe(
        seqs: &[i64],
        kinds: &[(bool, u8, Option<usize>)],
    ) -> (Vec<LiveFile>, Vec<LiveFile>) {
        let part = |p: u8| {
            if p == 9 {
                String::new()
            } else {
                format!("p={p}")
            }
        };
        let data: Vec<LiveFile> = seqs
            .iter()
            .enumerate()
            .map(|(i, &seq)| {
                let mut f = f(DataContent::Data, &format!("d{i}"), seq);
                f.partition = part((i % 3) as u8);
                f
            })
            .collect();
        let deletes = kinds
            .iter()
            .enumerate()
            .map(|(i, &(eq, p, referenced))| {
                let content = if eq {
                    DataContent::EqualityDeletes
                } else {
                    DataContent::PositionDeletes
                };
                let mut d = f(content, &format!("x{i}"), 1 + (i as i64 % 5));
                d.partition = part(p);
                d.spec_unpartitioned = p == 9;
                if !eq {
                    d.file.referenced_data_file = referenced.map(|r| format!("d{}", r % 6));
                }
                d
            })
            .collect();
        (data, deletes)
    }

    proptest! {
        /// The group rule is exact: a group passes iff each of its inputs is live now with its
        /// start sequence number and exactly the same delete files apply to it now as at the
        /// start (the rows it reads are the same).
        #[test]
        fn a_group_passes_iff_its_inputs_read_the_same_rows(
            seqs in prop::collection::vec(1i64..5, 6),
            kinds in prop::collection::vec(
                (any::<bool>(), prop::sample::select(vec![0u8, 1, 2, 9]),
                 prop::option::of(0usize..6)),
                8,
            ),
            inputs in prop::collection::btree_set(0usize..6, 1..4),
            start_data in prop::collection::btree_set(0usize..6, 0..6),
            now_data in prop::collection::btree_set(0usize..6, 0..6),
            start_del in prop::collection::btree_set(0usize..8, 0..8),
            now_del in prop::collection::btree_set(0usize..8, 0..8),
            reseq in prop::option::of(0usize..6),
        ) {
            let (data, deletes) = universe(&seqs, &kinds);
            let pick = |set: &std::collections::BTreeSet<usize>, all: &[LiveFile]| -> Vec<LiveFile> {
                set.iter().map(|&i| all[i].clone()).collect()
            };
            // Inputs are live at the start by definition.
            let start_data_files: Vec<LiveFile> =
                pick(&start_data.union(&inputs).copied().collect(), &data);
            let mut now_data_files = pick(&now_data, &data);
            if let Some(r) = reseq {
                for f in now_data_files.iter_mut().filter(|f| f.path() == format!("d{r}")) {
                    f.data_sequence_number += 10;
                }
            }
            let (start_deletes, now_deletes) = (pick(&start_del, &deletes), pick(&now_del, &deletes));
            let start = LiveSet::new(&start_data_files, &start_deletes);
            let now = LiveSet::new(&now_data_files, &now_deletes);
            let group: Vec<&LiveFile> = inputs.iter().map(|&i| &data[i]).collect();
            let same_rows = group.iter().all(|input| {
                let live_now = now_data_files
                    .iter()
                    .any(|f| f.path() == input.path()
                        && f.data_sequence_number == input.data_sequence_number);
                let applying = |ds: &[LiveFile]| -> Vec<String> {
                    ds.iter().filter(|d| applies(d, input)).map(|d| d.path().to_string()).collect()
                };
                live_now && applying(&start_deletes) == applying(&now_deletes)
            });
            let verdict = group_conflict(&group, &start, &now);
            prop_assert_eq!(verdict.is_none(), same_rows, "{:?}", verdict);
        }
    }
}
