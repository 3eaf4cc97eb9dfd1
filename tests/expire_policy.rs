//! `expire_snapshots` end to end on real pyiceberg tables: which snapshots and refs go (policy and
//! id mode, the fuse, table properties, branches and tags), what the counts say, and that the
//! table is whole afterwards (pyiceberg oracle after every expiry).

#[path = "expire_support/mod.rs"]
mod support;

use std::collections::BTreeSet;

use icetrim::ErrorKind;
use icetrim::plan::ExpireOptions;
use support::*;

fn labels_to_ids(fx: &Fixture, labels: &[&str]) -> BTreeSet<i64> {
    labels.iter().map(|l| fx.snapshot_id(l)).collect()
}

#[tokio::test]
async fn defaults_expire_only_snapshots_past_five_days() {
    let fx = make_fixture("py_v2_linear", NOW, false);
    let dir = fx.table_dir();
    let (r, after) = expire_checked(&dir, ExpireOptions::default()).await;
    // a1 is 5 d 1 h old; fast appends keep its manifest in a2's list, so only its list goes.
    assert_eq!(counts(&r), [0, 0, 0, 0, 1, 0, 0]);
    assert_eq!(
        snapshot_ids(&after),
        labels_to_ids(&fx, &["a2", "a3", "a4", "a5", "a6"])
    );
    let log: Vec<i64> = after["snapshot_log"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_i64().unwrap())
        .collect();
    assert!(!log.contains(&fx.snapshot_id("a1")), "snapshot-log trimmed");
    assert_eq!(log.len(), 5);
    let metadata_log = after["metadata_log"].as_array().unwrap();
    assert_eq!(
        metadata_log.last().unwrap()["file"].as_str().unwrap(),
        fx.metadata_path().to_str().unwrap(),
        "the previous file joins metadata-log"
    );
}

#[tokio::test]
async fn aggressive_table_properties_leave_only_the_current_snapshot() {
    let fx = make_fixture("py_v2_linear", NOW, false);
    let dir = fx.table_dir();
    let path = fx.metadata_path();
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    json["properties"]["history.expire.max-snapshot-age-ms"] = "0".into();
    json["properties"]["history.expire.min-snapshots-to-keep"] = "1".into();
    std::fs::write(&path, serde_json::to_vec(&json).unwrap()).unwrap();
    let (r, after) = expire_checked(&dir, ExpireOptions::default()).await;
    assert_eq!(counts(&r), [0, 0, 0, 0, 5, 0, 0]);
    assert_eq!(snapshot_ids(&after), labels_to_ids(&fx, &["a6"]));
}

#[tokio::test]
async fn table_properties_min_keep_three_and_ref_age() {
    // min-snapshots-to-keep 3, max-snapshot-age 2 d, max-ref-age 3 d; old_branch on a2.
    let fx = make_fixture("py_v2_properties", NOW, false);
    let dir = fx.table_dir();
    let (_, after) = expire_checked(&dir, ExpireOptions::default()).await;
    assert_eq!(
        snapshot_ids(&after),
        labels_to_ids(&fx, &["a4", "a5", "a6"])
    );
    assert_eq!(ref_names(&after), BTreeSet::from(["main".to_string()]));
}

#[tokio::test]
async fn retain_last_three_keeps_three() {
    let fx = make_fixture("py_v2_linear", NOW, false);
    let (r, after) = expire_checked(&fx.table_dir(), policy(Some(3), Some(0))).await;
    assert_eq!(counts(&r)[4], 3);
    assert_eq!(
        snapshot_ids(&after),
        labels_to_ids(&fx, &["a4", "a5", "a6"])
    );
}

#[tokio::test]
async fn retention_period_boundary_is_inclusive() {
    // a6 is exactly 1 h old: `now - ts <= max` keeps it; a5 (1 d 1 h) goes.
    let fx = make_fixture("py_v2_linear", NOW, false);
    let (_, after) = expire_checked(&fx.table_dir(), policy(None, Some(HOUR))).await;
    assert_eq!(snapshot_ids(&after), labels_to_ids(&fx, &["a6"]));
    // A period longer than the history keeps everything and writes nothing.
    let fx = make_fixture("py_v2_linear", NOW, false);
    let before = metadata_files(&fx.table_dir());
    let r = expire(&fx.table_dir(), policy(None, Some(7 * DAY))).await;
    assert_eq!(counts(&r), [0; 7]);
    assert_eq!(metadata_files(&fx.table_dir()), before);
}

#[tokio::test]
async fn retain_last_and_retention_period_together() {
    let fx = make_fixture("py_v2_many", NOW, false);
    let ts = fx.facts["snapshot_ts"].as_object().unwrap().clone();
    let young = ts
        .values()
        .filter(|t| NOW - t.as_i64().unwrap() <= 2 * DAY)
        .count();
    // 40 is more than 2 days' worth of 3-hourly appends: retain_last decides.
    let (_, after) = expire_checked(&fx.table_dir(), policy(Some(40), Some(2 * DAY))).await;
    assert_eq!(snapshot_ids(&after).len(), 40);
    // 10 is fewer: the period decides.
    let (_, after) = expire_checked(&fx.table_dir(), policy(Some(10), Some(2 * DAY))).await;
    assert!(young > 10);
    assert_eq!(snapshot_ids(&after).len(), young);
}

#[tokio::test]
async fn retain_last_larger_than_history_expires_nothing() {
    let fx = make_fixture("py_v2_linear", NOW, false);
    let before = files_on_disk(&fx.table_dir());
    let r = expire(&fx.table_dir(), policy(Some(100), Some(0))).await;
    assert_eq!(counts(&r), [0; 7]);
    assert_eq!(files_on_disk(&fx.table_dir()), before, "nothing written");
}

#[tokio::test]
async fn expire_before_is_a_fuse_protecting_newer_snapshots() {
    let fx = make_fixture("py_v2_linear", NOW, false);
    let fuse = fx.facts["snapshot_ts"]["a3"].as_i64().unwrap();
    let opts = ExpireOptions {
        expire_before_ms: Some(fuse),
        ..policy(Some(1), Some(0))
    };
    let (r, after) = expire_checked(&fx.table_dir(), opts).await;
    assert_eq!(counts(&r)[4], 2);
    assert_eq!(
        snapshot_ids(&after),
        labels_to_ids(&fx, &["a3", "a4", "a5", "a6"])
    );
}

#[tokio::test]
async fn snapshot_ids_expire_exactly_those() {
    let fx = make_fixture("py_v2_linear", NOW, false);
    let opts = ids(&[fx.snapshot_id("a2"), fx.snapshot_id("a3")]);
    let (r, after) = expire_checked(&fx.table_dir(), opts).await;
    assert_eq!(counts(&r), [0, 0, 0, 0, 2, 0, 0]);
    assert_eq!(
        snapshot_ids(&after),
        labels_to_ids(&fx, &["a1", "a4", "a5", "a6"])
    );
}

#[tokio::test]
async fn snapshot_ids_refuse_current_tagged_and_unknown() {
    let fx = make_fixture("py_v2_branches_tags", NOW, false);
    let dir = fx.table_dir();
    let before = files_on_disk(&dir);
    for (id, needle) in [
        (
            fx.snapshot_id("m6"),
            "referenced by current snapshot, branch, or tag",
        ),
        (
            fx.snapshot_id("m2"),
            "referenced by current snapshot, branch, or tag",
        ),
        (12345, "expire_snapshots snapshot id 12345 does not exist"),
    ] {
        let err = expire_at(&dir, NOW, ids(&[id]), false, None)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::BadArguments);
        assert!(err.message().contains(needle), "{err}");
    }
    let r = expire(&dir, ids(&[])).await;
    assert_eq!(counts(&r), [0; 7]);
    assert_eq!(files_on_disk(&dir), before, "nothing written");
}

#[tokio::test]
async fn branches_and_tags() {
    // main m1..m6 (m_del deletes m1's file), branch audit (fork at m3, b1..b3, min-keep 2,
    // max age 7 d), tag t_old on m2, tag t_short and branch stale past their 1 d max-ref-age.
    let fx = make_fixture("py_v2_branches_tags", NOW, false);
    let m1_file = fx.data_file("m1");
    let (r, after) = expire_checked(&fx.table_dir(), ExpireOptions::default()).await;
    assert_eq!(
        ref_names(&after),
        ["audit", "main", "t_old"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    );
    assert_eq!(
        snapshot_ids(&after),
        labels_to_ids(&fx, &["m2", "m5", "m6", "m_del", "b2", "b3"]),
        "tag keeps m2 alone, audit keeps 2 by min-keep, main keeps 5 days"
    );
    assert!(m1_file.exists(), "m1's file is live on audit and survives");
    assert_eq!(counts(&r), [0, 0, 0, 0, 4, 0, 0], "lists of m1, m3, m4, b1");
}

#[tokio::test]
async fn dangling_ref_is_removed_with_a_warning() {
    let fx = make_fixture("py_v2_linear", NOW, false);
    let path = fx.metadata_path();
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    json["refs"]["ghost"] = serde_json::json!({"snapshot-id": 42, "type": "tag"});
    std::fs::write(&path, serde_json::to_vec(&json).unwrap()).unwrap();
    let before = inspect(&fx.table_dir()).await;
    let r = expire(&fx.table_dir(), policy(Some(100), None)).await;
    assert_eq!(counts(&r), [0; 7]);
    assert!(
        r.warnings.iter().any(|w| w.contains("ghost")),
        "{:?}",
        r.warnings
    );
    let after = inspect(&fx.table_dir()).await;
    assert_whole(&before, &after);
    assert_eq!(ref_names(&after), BTreeSet::from(["main".to_string()]));
    assert_eq!(snapshot_ids(&after).len(), 6);
}

#[tokio::test]
async fn staged_young_snapshot_survives_old_one_goes() {
    // s_old (8 d) and r_young (1 d) are on no ref; main is on a4 (2 d).
    let fx = make_fixture("py_v2_staged", NOW, false);
    let (_, after) = expire_checked(&fx.table_dir(), ExpireOptions::default()).await;
    let kept = snapshot_ids(&after);
    assert!(kept.contains(&fx.snapshot_id("r_young")));
    assert!(!kept.contains(&fx.snapshot_id("s_old")));
    assert_eq!(kept, labels_to_ids(&fx, &["a4", "r_young"]));
}

#[tokio::test]
async fn format_v1_table() {
    let fx = make_fixture("py_v1_linear", NOW, false);
    let (r, after) = expire_checked(&fx.table_dir(), policy(Some(2), Some(0))).await;
    assert_eq!(snapshot_ids(&after), labels_to_ids(&fx, &["a5", "a6"]));
    assert_eq!(counts(&r)[4], 4);
}
