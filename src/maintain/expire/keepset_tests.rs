//! Tests of [`super`]: the keep-set rules one by one, then properties over random file graphs.

use super::*;
use crate::error::ErrorKind;
use crate::iceberg::spec::{EntryStatus, ManifestContent};
use DataContent::{Data, EqualityDeletes, PositionDeletes};
use EntryStatus::{Added, Deleted, Existing};

/// Builds a graph by name: "snap-N" lists, "mN" manifests, anything else content files.
#[derive(Default)]
struct Table {
    paths: PathInterner,
    graph: FileGraph,
    contents: ManifestContents,
}

impl Table {
    fn id(&mut self, key: &str) -> PathId {
        self.paths.intern(key).expect("intern")
    }

    fn manifest(&mut self, name: &str, entries: &[(&str, DataContent, EntryStatus)]) {
        let path = self.id(name);
        let entries = entries
            .iter()
            .map(|(p, c, s)| EntryRef {
                path: self.paths.intern(p).expect("intern"),
                content: *c,
                status: *s,
                file_size: 10,
            })
            .collect();
        self.contents.insert(path, ManifestEntries { entries });
    }

    fn snapshot(&mut self, id: i64, list: &str, manifests: &[&str]) {
        let manifest_list = Some(self.id(list));
        let manifests = manifests
            .iter()
            .map(|m| ManifestRef {
                path: self.paths.intern(m).expect("intern"),
                length: 100,
                content: ManifestContent::Data,
            })
            .collect();
        self.graph.snapshots.push(SnapshotFiles {
            snapshot_id: id,
            manifest_list,
            manifest_list_size: Some(1000),
            manifests,
        });
    }

    fn stats(&mut self, snapshot_id: i64, path: &str, size: Option<i64>) {
        let path = self.id(path);
        self.graph.statistics.push(StatisticsRef {
            snapshot_id,
            path,
            size,
        });
    }

    fn decide(&self, expired: &[i64]) -> FileDecision {
        decide_files(&self.graph, &expired_set(expired), &self.contents).expect("decision")
    }

    fn names(&self, files: &[FileCandidate]) -> Vec<&str> {
        files
            .iter()
            .map(|f| self.paths.resolve(f.path).expect("known id"))
            .collect()
    }

    fn plan(&self, expired: &[i64]) -> ManifestReadPlan {
        plan_manifest_reads(&self.graph, &expired_set(expired))
    }
}

fn expired_set(ids: &[i64]) -> BTreeSet<i64> {
    ids.iter().copied().collect()
}

/// Three appends: snapshot N adds manifest mN with file fN; each snapshot lists all earlier ones.
fn three_appends() -> Table {
    let mut t = Table::default();
    t.manifest("m1", &[("f1", Data, Added)]);
    t.manifest("m2", &[("f2", Data, Added)]);
    t.manifest("m3", &[("f3", Data, Added)]);
    t.snapshot(1, "snap-1", &["m1"]);
    t.snapshot(2, "snap-2", &["m1", "m2"]);
    t.snapshot(3, "snap-3", &["m1", "m2", "m3"]);
    t
}

#[test]
fn a_file_still_listed_by_retained_snapshots_is_not_deleted() {
    // Expiring the oldest snapshot must not touch files every later one lists.
    let t = three_appends();
    let plan = t.plan(&[1]);
    assert!(plan.candidate_manifests.is_empty());
    assert!(
        plan.retained_manifests.is_empty(),
        "nothing to protect, nothing to read"
    );
    let d = t.decide(&[1]);
    assert_eq!(t.names(&d.manifest_lists), vec!["snap-1"]);
    assert_eq!(d.len(), 1);
}

#[test]
fn a_deleted_entry_never_protects() {
    // 1: m1 adds f1. 2: m2 deletes f1 and adds f2 (an overwrite). Expire 1.
    let mut t = Table::default();
    t.manifest("m1", &[("f1", Data, Added)]);
    t.manifest("m2", &[("f1", Data, Deleted), ("f2", Data, Added)]);
    t.snapshot(1, "snap-1", &["m1"]);
    t.snapshot(2, "snap-2", &["m2"]);
    let plan = t.plan(&[1]);
    assert_eq!(plan.candidate_manifests.len(), 1);
    assert_eq!(plan.retained_manifests, vec![t.paths.get("m2").unwrap()]);
    let d = t.decide(&[1]);
    assert_eq!(t.names(&d.data_files), vec!["f1"]);
    assert_eq!(t.names(&d.manifests), vec!["m1"]);
    assert_eq!(t.names(&d.manifest_lists), vec!["snap-1"]);
}

#[test]
fn deleted_entries_of_candidate_manifests_are_candidates() {
    // 1: m1 adds f1; 2: m2 deletes f1; 3: m3 empty. Expire 1 and 2: f1 named only by DELETED.
    let mut t = Table::default();
    t.manifest("m1", &[("f1", Data, Added)]);
    t.manifest("m2", &[("f1", Data, Deleted)]);
    t.manifest("m3", &[("f3", Data, Added)]);
    t.snapshot(1, "snap-1", &["m1"]);
    t.snapshot(2, "snap-2", &["m2"]);
    t.snapshot(3, "snap-3", &["m3"]);
    let d = t.decide(&[1, 2]);
    assert_eq!(t.names(&d.data_files), vec!["f1"]);
    // But a retained snapshot that still lists it live protects it.
    let mut t2 = Table::default();
    t2.manifest("m1", &[("f1", Data, Added)]);
    t2.manifest("m2", &[("f1", Data, Deleted)]);
    t2.snapshot(1, "snap-1", &["m1"]);
    t2.snapshot(2, "snap-2", &["m2"]);
    let d = t2.decide(&[2]);
    assert!(d.data_files.is_empty());
    assert_eq!(t2.names(&d.manifests), vec!["m2"]);
}

#[test]
fn an_existing_entry_protects_like_an_added_one() {
    let mut t = Table::default();
    t.manifest("m1", &[("f1", Data, Added)]);
    t.manifest("m2", &[("f1", Data, Existing)]);
    t.snapshot(1, "snap-1", &["m1"]);
    t.snapshot(2, "snap-2", &["m2"]);
    let d = t.decide(&[1]);
    assert!(d.data_files.is_empty());
    assert_eq!(t.names(&d.manifests), vec!["m1"]);
}

#[test]
fn categories_come_from_the_entry_content_and_the_first_one_seen_wins() {
    let mut t = Table::default();
    t.manifest(
        "m1",
        &[
            ("d", Data, Added),
            ("pos", PositionDeletes, Added),
            ("eq", EqualityDeletes, Added),
            ("both", EqualityDeletes, Added),
        ],
    );
    t.manifest(
        "m2",
        &[("both", PositionDeletes, Added), ("d", Data, Added)],
    );
    t.manifest("m3", &[]);
    t.snapshot(1, "snap-1", &["m1", "m2"]);
    t.snapshot(2, "snap-2", &["m3"]);
    let d = t.decide(&[1]);
    assert_eq!(t.names(&d.data_files), vec!["d"]);
    assert_eq!(t.names(&d.position_delete_files), vec!["pos"]);
    assert_eq!(t.names(&d.equality_delete_files), vec!["eq", "both"]);
    assert_eq!(d.counts().manifest_files, 2);
}

#[test]
fn every_path_is_counted_once() {
    // Two expired snapshots share a manifest list and a manifest; a file is in two manifests.
    let mut t = Table::default();
    t.manifest("m1", &[("f", Data, Added)]);
    t.manifest("m2", &[("f", Data, Existing)]);
    t.manifest("m9", &[]);
    t.snapshot(1, "snap-1", &["m1", "m2"]);
    t.snapshot(2, "snap-1", &["m1", "m2"]);
    t.snapshot(3, "snap-3", &["m9"]);
    let d = t.decide(&[1, 2]);
    assert_eq!(t.names(&d.data_files), vec!["f"]);
    assert_eq!(t.names(&d.manifests), vec!["m1", "m2"]);
    assert_eq!(t.names(&d.manifest_lists), vec!["snap-1"]);
    // A path playing two roles lands in the first category of the deletion order.
    let mut t = Table::default();
    t.manifest("m1", &[("m1", Data, Added)]);
    t.snapshot(1, "snap-1", &["m1"]);
    t.snapshot(2, "snap-2", &[]);
    let d = t.decide(&[1]);
    assert_eq!(t.names(&d.data_files), vec!["m1"]);
    assert!(d.manifests.is_empty());
}

#[test]
fn a_manifest_or_list_shared_with_a_retained_snapshot_is_kept() {
    let mut t = Table::default();
    t.manifest("m1", &[("f1", Data, Added)]);
    t.snapshot(1, "snap-1", &["m1"]);
    t.snapshot(2, "snap-1", &["m1"]);
    let plan = t.plan(&[1]);
    assert!(plan.candidate_manifest_lists.is_empty());
    assert!(t.decide(&[1]).is_empty());
}

#[test]
fn statistics_of_expired_snapshots_go_unless_still_referenced() {
    let mut t = three_appends();
    t.stats(1, "stats-1.puffin", Some(7));
    t.stats(1, "shared.puffin", None);
    t.stats(3, "shared.puffin", None);
    t.stats(2, "partition-stats-2.parquet", Some(5));
    t.stats(77, "stale.puffin", Some(1)); // an entry of a snapshot that no longer exists
    let d = t.decide(&[1, 2]);
    assert_eq!(
        t.names(&d.statistics_files),
        vec!["stats-1.puffin", "partition-stats-2.parquet"]
    );
}

#[test]
fn expiring_nothing_deletes_nothing_and_reads_nothing() {
    let mut t = three_appends();
    t.stats(1, "s.puffin", None);
    assert_eq!(t.plan(&[]), ManifestReadPlan::default());
    assert!(t.decide(&[]).is_empty());
}

#[test]
fn a_manifest_that_was_not_read_is_a_logical_error() {
    let mut t = Table::default();
    t.manifest("m2", &[]);
    t.snapshot(1, "snap-1", &["m1"]);
    t.snapshot(2, "snap-2", &["m2"]);
    let err = decide_files(&t.graph, &expired_set(&[1]), &t.contents).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LogicalError);
    // And a retained manifest that was not read, too.
    t.contents.clear();
    t.manifest("m1", &[]);
    let err = decide_files(&t.graph, &expired_set(&[1]), &t.contents).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LogicalError);
}

#[test]
fn deletion_order_is_leaf_first_and_totals_add_known_sizes() {
    let mut t = Table::default();
    t.manifest(
        "m1",
        &[
            ("d", Data, Added),
            ("eq", EqualityDeletes, Added),
            ("pos", PositionDeletes, Added),
        ],
    );
    t.manifest("m2", &[]);
    t.snapshot(1, "snap-1", &["m1"]);
    t.snapshot(2, "snap-2", &["m2"]);
    t.stats(1, "s.puffin", None);
    let d = t.decide(&[1]);
    let order: Vec<(FileCategory, &str)> = d
        .deletion_order()
        .map(|(c, f)| (c, t.paths.resolve(f.path).unwrap()))
        .collect();
    assert_eq!(
        order,
        vec![
            (FileCategory::DataFile, "d"),
            (FileCategory::PositionDeleteFile, "pos"),
            (FileCategory::EqualityDeleteFile, "eq"),
            (FileCategory::Manifest, "m1"),
            (FileCategory::ManifestList, "snap-1"),
            (FileCategory::StatisticsFile, "s.puffin"),
        ]
    );
    assert_eq!(d.total_bytes(), (10 * 3 + 100 + 1000, 1));
}

#[test]
fn metrics_are_the_seven_clickhouse_rows() {
    let counts = ExpiryFileCounts {
        data_files: 1,
        position_delete_files: 2,
        equality_delete_files: 3,
        manifest_files: 4,
        manifest_lists: 5,
        statistics_files: 6,
    };
    let names: Vec<&str> = counts.metrics(true).iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names,
        vec![
            "deleted_data_files_count",
            "deleted_position_delete_files_count",
            "deleted_equality_delete_files_count",
            "deleted_manifest_files_count",
            "deleted_manifest_lists_count",
            "deleted_statistics_files_count",
            "dry_run"
        ]
    );
    let values: Vec<i64> = counts.metrics(true).iter().map(|(_, v)| *v).collect();
    assert_eq!(values, vec![1, 2, 3, 4, 5, 6, 1]);
    assert_eq!(counts.metrics(false)[6], ("dry_run", 0));
}

/// Expired 1 (m1: a, b) and 2 (m2: c; m3: d); retained 3 (m9).
fn failing_table() -> Table {
    let mut t = Table::default();
    t.manifest("m1", &[("a", Data, Added), ("b", Data, Deleted)]);
    t.manifest("m2", &[("c", Data, Added)]);
    t.manifest("m3", &[("d", Data, Added)]);
    t.manifest("m9", &[]);
    t.snapshot(1, "snap-1", &["m1"]);
    t.snapshot(2, "snap-2", &["m2", "m3"]);
    t.snapshot(3, "snap-3", &["m9"]);
    t
}

#[test]
fn a_failed_content_delete_keeps_its_manifest_and_the_lists_naming_it() {
    let t = failing_table();
    let expired = expired_set(&[1, 2]);
    let d = t.decide(&[1, 2]);
    let failed: HashSet<PathId> = [t.paths.get("b").unwrap()].into();
    let held = after_failed_deletes(&t.graph, &expired, &d, &t.contents, &failed);
    assert_eq!(held.manifests, [t.paths.get("m1").unwrap()].into());
    assert_eq!(held.manifest_lists, [t.paths.get("snap-1").unwrap()].into());
    let rest = d.without(&held);
    assert_eq!(t.names(&rest.manifests), vec!["m2", "m3"]);
    assert_eq!(t.names(&rest.manifest_lists), vec!["snap-2"]);
    assert_eq!(rest.data_files, d.data_files);
}

#[test]
fn a_failed_manifest_delete_keeps_the_lists_naming_it() {
    let t = failing_table();
    let expired = expired_set(&[1, 2]);
    let d = t.decide(&[1, 2]);
    let failed: HashSet<PathId> = [t.paths.get("m3").unwrap()].into();
    let held = after_failed_deletes(&t.graph, &expired, &d, &t.contents, &failed);
    assert!(held.manifests.is_empty());
    assert_eq!(held.manifest_lists, [t.paths.get("snap-2").unwrap()].into());
    let none = after_failed_deletes(&t.graph, &expired, &d, &t.contents, &HashSet::new());
    assert_eq!(none, HeldFiles::default());
}

#[path = "keepset_props.rs"]
mod props;

#[test]
fn candidates_outside_the_table_location_are_reported() {
    let mut t = Table::default();
    t.manifest(
        "s3://b/t/metadata/m1.avro",
        &[
            ("s3://b/t/data/a", Data, Added),
            ("s3://b/elsewhere/x", Data, Added),
            ("s3://b/t2/y", Data, Added),
        ],
    );
    t.manifest("s3://b/t/metadata/m2.avro", &[]);
    t.snapshot(
        1,
        "s3://b/t/metadata/snap-1.avro",
        &["s3://b/t/metadata/m1.avro"],
    );
    t.snapshot(
        2,
        "s3://b/t/metadata/snap-2.avro",
        &["s3://b/t/metadata/m2.avro"],
    );
    let d = t.decide(&[1]);
    assert_eq!(d.len(), 5);
    let (count, first) = d.outside_location(&t.paths, "s3://b/t/", 1);
    assert_eq!((count, first), (2, vec!["s3://b/elsewhere/x"]));
    assert_eq!(
        d.outside_location(&t.paths, "s3://b/t", 10).1,
        vec!["s3://b/elsewhere/x", "s3://b/t2/y"]
    );
    assert_eq!(d.outside_location(&t.paths, "s3://b", 10).0, 0);
}
