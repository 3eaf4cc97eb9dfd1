//! Unit tests of [`super`] (the compaction plan): Java's defaults and expected output counts,
//! selection by size and delete threshold, grouping by partition with its bounds (group size,
//! `min_input_files`, the memory for delete files), and files of older specs joining the
//! partition their rows take under the default spec.

use super::*;
use crate::iceberg::manifest::{DataFile, PartitionTuple, PartitionValue};
use crate::iceberg::spec::DataContent;

fn data(path: &str, partition: &str, size: i64) -> LiveFile {
    LiveFile {
        file: DataFile::new(DataContent::Data, path, 10, size),
        spec_id: 0,
        spec_unpartitioned: false,
        partition: partition.into(),
        data_sequence_number: 1,
    }
}

fn resolved(o: CompactOptions) -> Resolved {
    Resolved::new(&o, None).unwrap()
}

#[test]
fn defaults_are_javas() {
    let r = resolved(CompactOptions::default());
    assert_eq!(r.target, 512 << 20);
    assert_eq!(r.min, (512u64 << 20) * 3 / 4);
    assert_eq!(r.max, ((512u64 << 20) as f64 * 1.8) as u64);
    assert_eq!(r.min_input_files, 5);
    assert_eq!(r.delete_file_threshold, u64::MAX);
    assert_eq!(r.max_concurrent, 5);
    let r = Resolved::new(&CompactOptions::default(), Some("1000")).unwrap();
    assert_eq!((r.target, r.min, r.max), (1000, 750, 1800));
    assert!(Resolved::new(&CompactOptions::default(), Some("x")).is_err());
    let bad = CompactOptions {
        target_file_size_bytes: Some(100),
        min_file_size_bytes: Some(200),
        ..Default::default()
    };
    assert!(Resolved::new(&bad, None).is_err());
}

#[test]
fn expected_outputs_follow_java() {
    let r = Resolved::new(&CompactOptions::default(), Some("100")).unwrap();
    assert_eq!(r.expected_outputs(50), 1);
    assert_eq!(r.expected_outputs(100), 1);
    assert_eq!(r.expected_outputs(180), 2, "remainder 80 > min 75");
    assert_eq!(r.expected_outputs(205), 2, "remainder 5, average 102 < 110");
    assert_eq!(r.expected_outputs(120), 2, "average 120 >= 110");
}

#[test]
fn groups_by_partition_and_min_input_files() {
    let r = Resolved::new(&CompactOptions::default(), Some("1000")).unwrap();
    let mut files: Vec<LiveFile> = (0..5).map(|i| data(&format!("a{i}"), "p=1", 10)).collect();
    files.extend((0..3).map(|i| data(&format!("b{i}"), "p=2", 10)));
    files.push(data("big", "p=1", 900));
    let p = plan(&files, &[], &r, |_| true, 0, by_spec((0, false)));
    assert_eq!(p.groups.len(), 2);
    assert!(p.groups[0].rewrite && p.groups[0].inputs.len() == 5);
    assert!(!p.groups[1].rewrite, "3 files < 5");
    let p = plan(
        &files,
        &[],
        &r,
        |f| f.partition == "p=2",
        0,
        by_spec((0, false)),
    );
    assert_eq!(p.groups.len(), 1);
    let all = Resolved {
        rewrite_all: true,
        ..r.clone()
    };
    let p = plan(&files, &[], &all, |_| true, 0, by_spec((0, false)));
    assert_eq!(p.rewritten().map(|g| g.inputs.len()).sum::<usize>(), 9);
}

#[test]
fn delete_threshold_selects_a_single_file() {
    let r = Resolved::new(
        &CompactOptions {
            delete_file_threshold: Some(1),
            ..Default::default()
        },
        Some("1000"),
    )
    .unwrap();
    let files = [data("a", "p=1", 900), data("b", "p=1", 900)];
    let mut del = data("del", "p=1", 5);
    del.file.content = DataContent::PositionDeletes;
    del.file.referenced_data_file = Some("a".into());
    let p = plan(&files, &[del], &r, |_| true, 0, by_spec((0, false)));
    assert_eq!(p.groups.len(), 1);
    assert_eq!(p.groups[0].inputs, [0]);
    assert_eq!(p.groups[0].deletes, [0]);
    assert!(p.groups[0].rewrite);
}

#[test]
fn groups_are_bounded() {
    let r = Resolved {
        max_group_size: 25,
        ..Resolved::new(&CompactOptions::default(), Some("1000")).unwrap()
    };
    let files: Vec<LiveFile> = (0..5).map(|i| data(&format!("a{i}"), "", 10)).collect();
    let p = plan(&files, &[], &r, |_| true, 0, by_spec((0, false)));
    let sizes: Vec<usize> = p.groups.iter().map(|g| g.inputs.len()).collect();
    assert_eq!(sizes, [2, 2, 1]);
}

#[test]
fn groups_split_so_their_delete_files_fit_memory() {
    let files: Vec<LiveFile> = (0..4).map(|i| data(&format!("a{i}"), "p=1", 10)).collect();
    // One position delete file per data file, 1,000 rows: 8,000 bytes kept + 20,000 loading.
    let deletes: Vec<LiveFile> = (0..4)
        .map(|i| {
            let mut d = data(&format!("d{i}"), "p=1", 10_000);
            d.file.content = DataContent::PositionDeletes;
            d.file.record_count = 1000;
            d.file.referenced_data_file = Some(format!("a{i}"));
            d
        })
        .collect();
    let o = CompactOptions {
        delete_file_threshold: Some(1),
        min_input_files: Some(2),
        ..Default::default()
    };
    let r = Resolved::new(&o, Some("1000")).unwrap();
    let sizes = |r: &Resolved| -> Vec<(usize, bool)> {
        plan(&files, &deletes, r, |_| true, 0, by_spec((0, false)))
            .groups
            .iter()
            .map(|g| (g.inputs.len(), g.rewrite))
            .collect()
    };
    assert_eq!(sizes(&r), [(4, true)]);
    // Two files' deletes: 16,000 + 20,000.
    let two = Resolved {
        delete_memory: 36_000,
        ..r.clone()
    };
    assert_eq!(sizes(&two), [(2, true), (2, true)]);
    let three = Resolved {
        delete_memory: 44_000,
        ..r.clone()
    };
    assert_eq!(sizes(&three), [(3, true), (1, true)]);
    // Not even one file's deletes fit: each file alone, not rewritten, and the reason says why.
    let none = Resolved {
        delete_memory: 27_999,
        ..r.clone()
    };
    let p = plan(&files, &deletes, &none, |_| true, 0, by_spec((0, false)));
    assert_eq!(p.groups.len(), 4);
    for g in &p.groups {
        assert!(!g.rewrite && g.over_memory, "{g:?}");
        assert!(g.reason.contains("28000 bytes of memory"), "{}", g.reason);
    }
}

#[test]
fn old_specs_join_their_output_partition_or_split() {
    let r = Resolved::new(&CompactOptions::default(), Some("1000")).unwrap();
    let part = |v: i32| PartitionTuple::new(vec![("p".into(), PartitionValue::Int(v))]);
    // Three files of the default spec 2 in p=1, two of spec 1 whose rows all land in p=1,
    // four of spec 0 whose rows must be split.
    let mut files: Vec<LiveFile> = (0..3).map(|i| data(&format!("a{i}"), "p=1", 10)).collect();
    for f in &mut files {
        f.spec_id = 2;
        f.file.partition = part(1);
    }
    for i in 0..2 {
        let mut f = data(&format!("b{i}"), "day=7", 10);
        f.spec_id = 1;
        files.push(f);
    }
    for i in 0..4 {
        let mut f = data(&format!("c{i}"), &format!("x={i}"), 10);
        f.spec_id = 0;
        files.push(f);
    }
    let place = |f: &LiveFile| match f.spec_id {
        2 => Place::Partition(f.file.partition.clone()),
        1 => Place::Partition(part(1)),
        _ => Place::Split,
    };
    let all = Resolved {
        rewrite_all: true,
        ..r.clone()
    };
    let p = plan(&files, &[], &all, |_| true, 2, place);
    assert_eq!(p.groups.len(), 2);
    let joined = &p.groups[0];
    assert_eq!((joined.spec_id, joined.partition.as_str()), (2, "p=1"));
    assert_eq!(joined.inputs.len(), 5);
    assert_eq!(joined.output, Output::Partition(part(1)));
    assert!(
        joined.reason.contains("spec 1 re-partitioned"),
        "{}",
        joined.reason
    );
    let split = &p.groups[1];
    assert_eq!((split.spec_id, split.partition.as_str()), (2, "*"));
    assert_eq!(
        split.inputs.len(),
        4,
        "old partitions of spec 0 grouped together"
    );
    assert_eq!(split.output, Output::Split);
    assert!(split.rewrite);
    // Blocked files keep their own (spec, partition) groups and are left.
    let p = plan(&files, &[], &all, |_| true, 2, by_spec((2, false)));
    let left: Vec<&Group> = p.groups.iter().filter(|g| !g.rewrite).collect();
    assert_eq!(
        left.len(),
        5,
        "2 files of spec 1 in one partition, 4 of spec 0 in four"
    );
    assert!(left[0].reason.contains("not the default spec"));
    let p = plan(&files, &[], &all, |_| true, 2, by_spec((2, true)));
    assert!(p.groups.iter().all(|g| g.rewrite));
}
