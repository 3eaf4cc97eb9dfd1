//! Tests of [`super`]: every row of the category table, every hidden-path case, every verdict and
//! its precedence, the second-precision boundary, and properties over random names and times.

use super::*;
use crate::maintain::file_graph::paths::relative_components;
use crate::maintain::orphans::OrphanMetrics;
use proptest::prelude::*;
use std::collections::HashSet;

const ROOT: &str = "s3://bucket/wh/db/t";

#[test]
fn relative_path_is_the_part_strictly_below_the_root() {
    let cases: [(&str, &str, Option<&str>); 9] = [
        (
            ROOT,
            "s3://bucket/wh/db/t/data/a.parquet",
            Some("data/a.parquet"),
        ),
        (
            "s3://bucket/wh/db/t/",
            "s3://bucket/wh/db/t/data/a.parquet",
            Some("data/a.parquet"),
        ),
        (ROOT, "s3://bucket/wh/db/t2/data/a.parquet", None),
        (ROOT, "s3://bucket/wh/db/t", None),
        (ROOT, "s3://bucket/wh/db/t/", None),
        (ROOT, "s3://bucket/wh/db/other", None),
        (
            "/abs/t/",
            "/abs/t/metadata/v1.metadata.json",
            Some("metadata/v1.metadata.json"),
        ),
        ("/", "/x/y", Some("x/y")),
        ("", "x/y", Some("x/y")),
    ];
    for (root, key, expected) in cases {
        assert_eq!(relative_path(root, key), expected, "{root} {key}");
    }
    assert_eq!(
        relative_components(ROOT, "s3://bucket/wh/db/t/data/c=1/a.parquet"),
        Some(vec!["data", "c=1", "a.parquet"])
    );
    assert_eq!(relative_components(ROOT, "s3://bucket/other/x"), None);
}

#[test]
fn hidden_paths_follow_javas_partition_aware_filter() {
    let parts = ["_c", "region"];
    let cases = [
        ("data/a.parquet", false),
        ("data/region=eu/a.parquet", false),
        ("data/_c=1/a.parquet", false),
        ("data/_c=1/_d=2/a.parquet", true),
        ("data/_cx=1/a.parquet", true),
        ("data/_c/a.parquet", true),
        ("_temporary/0/a.parquet", true),
        ("data/.spark-staging/a.parquet", true),
        ("data/_SUCCESS", true),
        ("metadata/.v1.metadata.json.crc", true),
        ("data/_c=1", true), // the exception is for directories only
        ("data/x_/a.parquet", false),
        ("data/a_b.parquet", false),
        ("", false),
    ];
    for (rel, hidden) in cases {
        assert_eq!(is_hidden(rel, &parts), hidden, "{rel}");
    }
    assert!(is_hidden("data/_c=1/a.parquet", &[] as &[&str]));
}

#[test]
fn categories_follow_clickhouses_name_rule() {
    use OrphanCategory::*;
    let cases = [
        ("metadata/v3.metadata.json", Metadata),
        ("metadata/00001-uuid.metadata.json", Metadata),
        ("metadata/v3.gz.metadata.json", Metadata),
        ("metadata/v3.metadata.json.tmp", Metadata),
        ("metadata/snap-1-1-uuid.avro", ManifestList),
        ("metadata/uuid-m0.avro", Manifest),
        ("metadata/stats-1.puffin", Statistics),
        ("metadata/partition-stats.stats", Statistics),
        ("metadata/version-hint.text", Data),
        ("metadata/notes.txt", Data),
        ("metadata/x-eq-del-1.parquet", EqualityDelete),
        ("metadata/x-deletes.parquet", PositionDelete),
        ("data/snap-1.avro", Data),
        ("data/v1.metadata.json", Data),
        ("data/x.puffin", Data),
        ("data/00000-0-eq-del-00001.parquet", EqualityDelete),
        ("data/eq-delete-001.parquet", EqualityDelete),
        ("data/00000-0-deletes.parquet", PositionDelete),
        ("data/00000-0-delete-00001.parquet", PositionDelete),
        ("data/uuid-deletes.parquet", PositionDelete),
        ("data/a.parquet", Data),
        ("data/metadata/m.avro", Manifest),
        ("other.avro", Data),
    ];
    for (rel, category) in cases {
        assert_eq!(category_by_name(rel), category, "{rel}");
    }
}

fn listed(key: &str, mtime: Option<i64>) -> ListedFile<'_> {
    ListedFile {
        key,
        size: Some(1),
        last_modified_ms: mtime,
    }
}

fn judge(key: &str, mtime: Option<i64>, older_than_ms: i64, reachable: &[&str]) -> OrphanVerdict {
    let reachable: HashSet<&str> = reachable.iter().copied().collect();
    let rules = OrphanRules {
        table_root_key: ROOT,
        partition_field_names: &["_c"],
        older_than_ms,
    };
    classify(&listed(key, mtime), &|k| reachable.contains(k), &rules)
}

#[test]
fn each_verdict_and_their_precedence() {
    let data = "s3://bucket/wh/db/t/data/a.parquet";
    let hidden = "s3://bucket/wh/db/t/data/_tmp/a.parquet";
    let outside = "s3://bucket/wh/db/u/a.parquet";
    let old = Some(1_000);
    let t = 10_000;
    assert_eq!(
        judge(data, old, t, &[]),
        OrphanVerdict::Orphan(OrphanCategory::Data)
    );
    assert_eq!(judge(data, old, t, &[data]), OrphanVerdict::Reachable);
    assert_eq!(judge(hidden, old, t, &[hidden]), OrphanVerdict::Reachable);
    assert_eq!(judge(outside, old, t, &[]), OrphanVerdict::OutsideTableRoot);
    assert_eq!(judge(hidden, old, t, &[]), OrphanVerdict::Hidden);
    assert_eq!(judge(hidden, None, t, &[]), OrphanVerdict::Hidden);
    assert_eq!(judge(data, None, t, &[]), OrphanVerdict::NoLastModified);
    assert_eq!(judge(data, Some(t), t, &[]), OrphanVerdict::TooYoung);
    let partitioned = "s3://bucket/wh/db/t/data/_c=1/a.parquet";
    assert_eq!(
        judge(partitioned, old, t, &[]),
        OrphanVerdict::Orphan(OrphanCategory::Data)
    );
    let manifest = "s3://bucket/wh/db/t/metadata/snap-9.avro";
    assert_eq!(
        judge(manifest, old, t, &[]),
        OrphanVerdict::Orphan(OrphanCategory::ManifestList)
    );
}

#[test]
fn age_is_compared_in_whole_seconds() {
    let key = "s3://bucket/wh/db/t/data/a.parquet";
    let orphan = OrphanVerdict::Orphan(OrphanCategory::Data);
    // Same second as older_than: too young, whatever the milliseconds.
    assert_eq!(judge(key, Some(5_000), 5_999, &[]), OrphanVerdict::TooYoung);
    assert_eq!(judge(key, Some(5_999), 5_000, &[]), OrphanVerdict::TooYoung);
    // One second earlier: an orphan, even 1 ms before.
    assert_eq!(judge(key, Some(4_999), 5_000, &[]), orphan);
    assert_eq!(judge(key, Some(4_000), 5_999, &[]), orphan);
    // Negative times floor, not truncate toward zero.
    assert_eq!(judge(key, Some(-1), 0, &[]), orphan);
    assert_eq!(judge(key, Some(-1_000), -1, &[]), OrphanVerdict::TooYoung);
    assert!(older_than_at_second_precision(i64::MIN, i64::MAX));
    assert!(!older_than_at_second_precision(i64::MAX, i64::MIN));
}

#[test]
fn the_tally_gives_the_nine_rows_in_order() {
    let mut tally = OrphanMetrics::default();
    for category in [
        OrphanCategory::Data,
        OrphanCategory::Data,
        OrphanCategory::PositionDelete,
        OrphanCategory::EqualityDelete,
        OrphanCategory::Manifest,
        OrphanCategory::ManifestList,
        OrphanCategory::Metadata,
        OrphanCategory::Statistics,
    ] {
        tally.record_verdict(OrphanVerdict::Orphan(category));
    }
    tally.record_verdict(OrphanVerdict::NoLastModified);
    tally.record_verdict(OrphanVerdict::Hidden);
    tally.record_verdict(OrphanVerdict::TooYoung);
    tally.count_failed();
    tally.count_failed();
    let metrics = tally.named_values();
    let names: Vec<&str> = metrics.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names,
        vec![
            "deleted_data_files_count",
            "deleted_position_delete_files_count",
            "deleted_equality_delete_files_count",
            "deleted_manifest_files_count",
            "deleted_manifest_lists_count",
            "deleted_metadata_files_count",
            "deleted_statistics_files_count",
            "skipped_missing_metadata_count",
            "failed_deletions_count",
        ]
    );
    let values: Vec<i64> = metrics.iter().map(|(_, v)| *v).collect();
    assert_eq!(values, vec![2, 1, 1, 1, 1, 1, 1, 1, 2]);
}

fn rel_path() -> impl Strategy<Value = String> {
    prop::collection::vec("[a-z_.=-]{0,6}", 1..5).prop_map(|parts| parts.join("/"))
}

proptest! {
    #[test]
    fn a_reachable_file_is_never_an_orphan(rel in rel_path(), mtime in prop::option::of(any::<i64>()), t in any::<i64>()) {
        let key = format!("{ROOT}/{rel}");
        prop_assert_eq!(judge(&key, mtime, t, &[key.as_str()]), OrphanVerdict::Reachable);
    }

    #[test]
    fn a_later_older_than_never_spares_an_orphan(rel in rel_path(), mtime in any::<i64>(), t in any::<i64>(), extra in 0i64..10_000) {
        let key = format!("{ROOT}/{rel}");
        if let OrphanVerdict::Orphan(c) = judge(&key, Some(mtime), t, &[]) {
            prop_assert_eq!(judge(&key, Some(mtime), t.saturating_add(extra), &[]), OrphanVerdict::Orphan(c));
        }
    }

    #[test]
    fn no_component_starting_with_underscore_or_dot_means_not_hidden(rel in "[a-z0-9=-]{1,5}(/[a-z0-9=-]{1,5}){0,4}") {
        prop_assert!(!is_hidden(&rel, &["x"]));
        let hidden_file = format!("{rel}/_x");
        prop_assert!(is_hidden(&hidden_file, &["x"]));
    }

    #[test]
    fn orphans_are_below_the_root_and_not_hidden(rel in rel_path(), mtime in any::<i64>(), t in any::<i64>()) {
        let key = format!("{ROOT}/{rel}");
        if let OrphanVerdict::Orphan(c) = judge(&key, Some(mtime), t, &[]) {
            let below = relative_path(ROOT, &key).expect("below the root");
            prop_assert!(!is_hidden(below, &["_c"]));
            prop_assert_eq!(c, category_by_name(below));
            prop_assert!(mtime.div_euclid(1000) < t.div_euclid(1000));
        }
    }
}
