//! A table's life told end to end through the pure maintenance API: retention policy → expiry
//! decision → file graph → manifest read plan → files to delete, as the executor will chain them.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use icetrim::internals::iceberg::spec::{
    DataContent, EntryStatus, ManifestContent, RefKind, Snapshot, SnapshotRef,
};
use icetrim::internals::maintain::expire::keepset::{
    EntryRef, ExpiryFileCounts, FileGraph, ManifestContents, ManifestEntries, ManifestRef,
    PathInterner, SnapshotFiles, StatisticsRef, decide_files, plan_manifest_reads,
};
use icetrim::internals::maintain::expire::policy::{
    ExpiryInput, ExpiryMode, RefFate, RefRemoval, decide_expiry,
};
use icetrim::internals::maintain::expire::retention::{TablePolicy, effective_policy};

const NOW: i64 = 1_750_000_000_000;
const DAY: i64 = 86_400_000;
const ROOT: &str = "s3://bucket/wh/t";

/// s1 append f1 (m1) · s2 append f2 (m2) · s3 overwrite f1→f3 (m3) · s4 position delete d1 (m4)
/// · s5 append f5 (m5); tag `t2` on s2; statistics for s1.
struct Table {
    snapshots: Vec<Snapshot>,
    refs: Vec<SnapshotRef>,
    paths: PathInterner,
    graph: FileGraph,
    contents: ManifestContents,
}

fn key(rel: &str) -> String {
    format!("{ROOT}/{rel}")
}

fn table(tag_max_ref_age_ms: Option<i64>) -> Table {
    use DataContent::{Data, PositionDeletes};
    use EntryStatus::{Added, Deleted};
    let ages = [10 * DAY, 9 * DAY, 8 * DAY, 7 * DAY, DAY / 24];
    let lists: [&[usize]; 5] = [&[1], &[1, 2], &[3, 2], &[3, 2, 4], &[3, 2, 4, 5]];
    let manifests: [&[(&str, DataContent, EntryStatus)]; 5] = [
        &[("data/f1.parquet", Data, Added)],
        &[("data/f2.parquet", Data, Added)],
        &[
            ("data/f1.parquet", Data, Deleted),
            ("data/f3.parquet", Data, Added),
        ],
        &[("data/d1-deletes.parquet", PositionDeletes, Added)],
        &[("data/f5.parquet", Data, Added)],
    ];
    let mut t = Table {
        snapshots: vec![],
        refs: vec![],
        paths: PathInterner::new(),
        graph: FileGraph::default(),
        contents: HashMap::new(),
    };
    for (i, entries) in manifests.iter().enumerate() {
        let m = t
            .paths
            .intern(&key(&format!("metadata/m{}.avro", i + 1)))
            .unwrap();
        let entries = entries
            .iter()
            .map(|(p, c, s)| EntryRef {
                path: t.paths.intern(&key(p)).unwrap(),
                content: *c,
                status: *s,
                file_size: 1000,
            })
            .collect();
        t.contents.insert(m, ManifestEntries { entries });
    }
    for (i, (age, listed)) in ages.iter().zip(lists).enumerate() {
        let id = i as i64 + 1;
        let list = key(&format!("metadata/snap-{id}.avro"));
        t.snapshots.push(Snapshot {
            snapshot_id: id,
            parent_snapshot_id: (id > 1).then(|| id - 1),
            sequence_number: id,
            timestamp_ms: NOW - age,
            manifest_list: Some(list.clone()),
            manifests: vec![],
            summary: Default::default(),
            schema_id: Some(0),
            first_row_id: None,
            added_rows: None,
        });
        let manifests = listed
            .iter()
            .map(|m| ManifestRef {
                path: t.paths.get(&key(&format!("metadata/m{m}.avro"))).unwrap(),
                length: 500,
                content: if *m == 4 {
                    ManifestContent::Deletes
                } else {
                    ManifestContent::Data
                },
            })
            .collect();
        t.graph.snapshots.push(SnapshotFiles {
            snapshot_id: id,
            manifest_list: Some(t.paths.intern(&list).unwrap()),
            manifest_list_size: Some(200),
            manifests,
        });
    }
    let stats = t.paths.intern(&key("metadata/s1-stats.puffin")).unwrap();
    t.graph.statistics.push(StatisticsRef {
        snapshot_id: 1,
        path: stats,
        size: Some(50),
    });
    let branch = |name: &str, kind, id| SnapshotRef {
        name: name.into(),
        kind,
        snapshot_id: id,
        min_snapshots_to_keep: None,
        max_snapshot_age_ms: None,
        max_ref_age_ms: None,
    };
    t.refs.push(branch("main", RefKind::Branch, 5));
    let mut tag = branch("t2", RefKind::Tag, 2);
    tag.max_ref_age_ms = tag_max_ref_age_ms;
    t.refs.push(tag);
    t
}

fn expire(t: &Table, retain_last: Option<i32>) -> (BTreeSet<i64>, ExpiryFileCounts, Vec<RefFate>) {
    let props = BTreeMap::new();
    let policy = effective_policy(TablePolicy::default(), &props, retain_last, None).unwrap();
    let mode = ExpiryMode::Policy;
    let decision = decide_expiry(&ExpiryInput {
        snapshots: &t.snapshots,
        refs: &t.refs,
        current_snapshot_id: Some(5),
        policy,
        now_ms: NOW,
        expire_before_ms: None,
        mode: &mode,
    })
    .unwrap();
    // Read only what the plan asks for, as the executor will.
    let plan = plan_manifest_reads(&t.graph, &decision.expired);
    let read: ManifestContents = plan
        .manifests_to_read()
        .map(|m| (m, t.contents[&m].clone()))
        .collect();
    let files = decide_files(&t.graph, &decision.expired, &read).unwrap();
    assert_eq!(files.outside_location(&t.paths, ROOT, 10).0, 0);
    let ref_fates = decision.refs.iter().map(|r| r.fate).collect();
    (decision.expired, files.counts(), ref_fates)
}

fn counts(data: i64, pos: i64, manifests: i64, lists: i64, stats: i64) -> ExpiryFileCounts {
    ExpiryFileCounts {
        data_files: data,
        position_delete_files: pos,
        equality_delete_files: 0,
        manifest_files: manifests,
        manifest_lists: lists,
        statistics_files: stats,
    }
}

#[test]
fn defaults_expire_everything_older_than_five_days_and_the_overwritten_file() {
    let t = table(Some(8 * DAY));
    let (expired, files, refs) = expire(&t, None);
    assert_eq!(expired, BTreeSet::from([1, 2, 3, 4]));
    assert_eq!(
        refs[1],
        RefFate::Removed(RefRemoval::AgedOut {
            age_ms: 9 * DAY,
            max_ref_age_ms: 8 * DAY
        })
    );
    // f1 (replaced by s3) and m1 go; f2, f3, d1 are still live in s5.
    assert_eq!(files, counts(1, 0, 1, 4, 1));
}

#[test]
fn retain_last_keeps_the_newest_three() {
    let t = table(Some(8 * DAY));
    let (expired, files, _) = expire(&t, Some(3));
    assert_eq!(expired, BTreeSet::from([1, 2]));
    assert_eq!(files, counts(1, 0, 1, 2, 1));
}

#[test]
fn a_live_tag_keeps_its_snapshot_and_every_file_it_lists() {
    let t = table(None);
    let (expired, files, refs) = expire(&t, None);
    assert_eq!(expired, BTreeSet::from([1, 3, 4]));
    assert_eq!(refs, vec![RefFate::Kept, RefFate::Kept]);
    // s2 still lists m1 with f1 live: only manifest lists and s1's statistics go.
    assert_eq!(files, counts(0, 0, 0, 3, 1));
}
