//! Property tests of the compaction decisions: on random files and deletes, every grouped file was
//! selected, lies in its group's partition and in one group only; groups respect the size bound;
//! each group lists exactly the deletes that apply to its inputs; a dropped delete file applies to
//! (and, out of scope, may name) no data file that stays live.

use std::collections::{HashMap, HashSet};

use proptest::prelude::*;

use super::deletes::{applies, droppable, needs};
use super::memory::deletes_estimate;
use super::model::LiveFile;
use super::plan::{Resolved, by_spec, plan};
use crate::iceberg::manifest::DataFile;
use crate::iceberg::spec::DataContent;

fn live(content: DataContent, n: usize, part: u8, seq: i64, size: i64) -> LiveFile {
    let global = part == 9;
    LiveFile {
        file: DataFile::new(content, format!("f{n}"), 1, size),
        spec_id: if global { 0 } else { 1 },
        spec_unpartitioned: global,
        partition: if global {
            String::new()
        } else {
            format!("p={part}")
        },
        data_sequence_number: seq,
    }
}

fn files() -> impl Strategy<Value = (Vec<LiveFile>, Vec<LiveFile>)> {
    let data = prop::collection::vec((0u8..3, 1i64..6, 1i64..2000), 0..30);
    let deletes = prop::collection::vec(
        (
            prop::bool::ANY,
            prop::sample::select(vec![0u8, 1, 2, 9]),
            1i64..7,
            prop::option::of(0usize..30),
            1i64..400,
        ),
        0..8,
    );
    (data, deletes).prop_map(|(data, deletes)| {
        let data: Vec<LiveFile> = data
            .into_iter()
            .enumerate()
            .map(|(i, (p, seq, size))| live(DataContent::Data, i, p, seq, size))
            .collect();
        let n = data.len();
        let deletes = deletes
            .into_iter()
            .enumerate()
            .map(|(i, (eq, p, seq, referenced, size))| {
                let content = if eq {
                    DataContent::EqualityDeletes
                } else {
                    DataContent::PositionDeletes
                };
                let mut d = live(content, 100 + i, p, seq, size);
                if !eq && n > 0 {
                    d.file.referenced_data_file = referenced.map(|r| format!("f{}", r % n));
                }
                d
            })
            .collect();
        (data, deletes)
    })
}

fn options() -> impl Strategy<Value = Resolved> {
    (
        100u64..1000,
        1u64..6,
        1u64..4,
        prop::bool::ANY,
        100u64..5000,
    )
        .prop_map(|(target, min_inputs, threshold, all, group)| Resolved {
            target,
            min: target * 3 / 4,
            max: target * 9 / 5,
            min_input_files: min_inputs,
            delete_file_threshold: threshold,
            rewrite_all: all,
            max_group_size: group,
            max_concurrent: 5,
            delete_memory: u64::MAX,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn groups_are_sound((data, deletes) in files(), o in options()) {
        let p = plan(&data, &deletes, &o, |_| true, 1, by_spec((1, false)));
        let mut seen = HashSet::new();
        for g in &p.groups {
            prop_assert!(!g.inputs.is_empty());
            let bytes: u64 = g.inputs.iter().map(|i| data[*i].file.file_size_in_bytes as u64).sum();
            prop_assert!(g.inputs.len() == 1 || bytes <= o.max_group_size);
            let mut want = HashSet::new();
            for i in &g.inputs {
                prop_assert!(seen.insert(*i), "a file in two groups");
                let f = &data[*i];
                prop_assert_eq!(&f.partition, &g.partition);
                let size = f.file.file_size_in_bytes as u64;
                let n_deletes = deletes.iter().filter(|d| applies(d, f)).count() as u64;
                prop_assert!(o.rewrite_all || size < o.min || size > o.max
                    || n_deletes >= o.delete_file_threshold);
                want.extend((0..deletes.len()).filter(|d| applies(&deletes[*d], f)));
            }
            let listed: HashSet<usize> = g.deletes.iter().copied().collect();
            prop_assert_eq!(listed, want);
        }
    }

    /// Memory: with a bound on what a group's delete files may take, the same files are grouped
    /// (each group of the unbounded plan is cut into consecutive runs), every group that is
    /// rewritten fits the bound, and a group that does not fit is a single file left alone.
    #[test]
    fn groups_split_to_fit_the_delete_memory(
        (data, deletes) in files(),
        o in options(),
        bound in 0u64..6000,
    ) {
        let unbounded = plan(&data, &deletes, &o, |_| true, 1, by_spec((1, false)));
        let bounded_options = Resolved { delete_memory: bound, ..o.clone() };
        let bounded = plan(&data, &deletes, &bounded_options, |_| true, 1, by_spec((1, false)));
        let flat = |p: &super::plan::Plan| -> Vec<usize> {
            p.groups.iter().flat_map(|g| g.inputs.iter().copied()).collect()
        };
        prop_assert_eq!(flat(&unbounded), flat(&bounded));
        // Every bounded group lies inside one unbounded group.
        let owner: HashMap<usize, usize> = unbounded
            .groups
            .iter()
            .flat_map(|g| g.inputs.iter().map(move |i| (*i, g.index)))
            .collect();
        for g in &bounded.groups {
            let owners: HashSet<usize> = g.inputs.iter().map(|i| owner[i]).collect();
            prop_assert_eq!(owners.len(), 1);
            let need = deletes_estimate(g.deletes.iter().map(|d| &deletes[*d]));
            if need > bound {
                prop_assert_eq!(g.inputs.len(), 1);
                prop_assert!(!g.rewrite);
                prop_assert!(g.reason.contains("iceberg_compaction_max_memory_bytes"));
            }
            if g.rewrite {
                prop_assert!(need <= bound);
            }
            // Groups are maximal: the next file of the same unbounded group would not fit.
        }
        for pair in bounded.groups.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            if owner[&a.inputs[0]] != owner[&b.inputs[0]] {
                continue;
            }
            let mut with: HashSet<usize> = a.deletes.iter().copied().collect();
            with.extend(deletes.iter().enumerate()
                .filter(|(_, d)| applies(d, &data[b.inputs[0]]))
                .map(|(i, _)| i));
            prop_assert!(deletes_estimate(with.iter().map(|d| &deletes[*d])) > bound);
        }
        // Unbounded, nothing is refused for memory.
        prop_assert!(unbounded.groups.iter().all(|g| !g.reason.contains("memory")));
    }

    #[test]
    fn a_dropped_delete_is_needed_by_no_remaining_file(
        (data, deletes) in files(),
        rewritten_mask in prop::collection::vec(prop::bool::ANY, 30),
    ) {
        let rewritten: Vec<&LiveFile> =
            data.iter().enumerate().filter(|(i, _)| rewritten_mask[*i]).map(|(_, f)| f).collect();
        let remaining: Vec<&LiveFile> =
            data.iter().enumerate().filter(|(i, _)| !rewritten_mask[*i]).map(|(_, f)| f).collect();
        let dropped = droppable(&deletes, &rewritten, &remaining, &HashMap::new());
        for path in &dropped {
            let d = deletes.iter().find(|d| d.path() == path).unwrap();
            prop_assert!(remaining.iter().all(|f| !applies(d, f)));
            prop_assert!(remaining.iter().all(|f| !needs(d, f, &HashMap::new())));
            prop_assert!(rewritten.iter().any(|f| applies(d, f)));
        }
        // And every delete that applies to a rewritten file, and that no remaining file needs
        // (applies to it or, out of scope, may name it), is dropped.
        for d in &deletes {
            let needed = remaining.iter().any(|f| needs(d, f, &HashMap::new()));
            let used = rewritten.iter().any(|f| applies(d, f));
            prop_assert_eq!(dropped.iter().any(|p| p == d.path()), used && !needed);
        }
    }
}
