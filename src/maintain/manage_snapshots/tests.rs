//! Unit tests of the decisions on a small hand-built history, and properties over random ones.
//!
//! The history (timestamps `id * 100`):
//! ```text
//! 1 ← 2 ← 3 ← 4 (main)      tag v1 → 2
//!              ↖ 5 ← 6 (audit, min-snapshots-to-keep 3)
//!          ↖ 7 (append, wap.id w1, staged)
//!              ↖ 8 (delete, parent 4, staged)
//!      ↖ 9 (overwrite replace-partitions, parent 2)   ↖ 10 (delete, parent 3)
//! ```

use proptest::prelude::*;
use serde_json::{Value, json};

use super::ancestry::{ancestors, is_ancestor_of};
use super::cherrypick::{CherrypickPlan, check_replaced_partitions, plan_cherrypick, wap_snapshot};
use super::history::{
    fast_forward, latest_ancestor_older_than, rollback_to_snapshot, rollback_to_timestamp,
    set_current_snapshot,
};
use super::refs_tests::{drop_ref, put};
use super::*;
use crate::iceberg::spec::{MAIN_BRANCH, RefKind};
use crate::plan::{CreateMode, RefType, SnapshotSelector};

pub(super) const NOW: i64 = 10_000;

pub(super) fn snap(id: i64, parent: Option<i64>, summary: Value) -> Value {
    let mut s = json!({"snapshot-id": id, "sequence-number": id, "timestamp-ms": id * 100,
        "manifest-list": format!("s3://b/t/metadata/snap-{id}.avro"), "summary": summary});
    if let Some(p) = parent {
        s["parent-snapshot-id"] = p.into();
    }
    s
}

pub(super) fn doc() -> Value {
    let append = json!({"operation": "append"});
    json!({
        "format-version": 2,
        "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
        "location": "s3://b/t",
        "last-sequence-number": 10,
        "last-updated-ms": 1000,
        "last-column-id": 1,
        "current-schema-id": 0,
        "schemas": [{"type": "struct", "schema-id": 0, "fields": []}],
        "default-spec-id": 0,
        "partition-specs": [{"spec-id": 0, "fields": []}],
        "properties": {"owner": "me"},
        "current-snapshot-id": 4,
        "snapshots": [
            snap(1, None, append.clone()), snap(2, Some(1), append.clone()),
            snap(3, Some(2), append.clone()), snap(4, Some(3), append.clone()),
            snap(5, Some(4), append.clone()), snap(6, Some(5), append.clone()),
            snap(7, Some(3), json!({"operation": "append", "wap.id": "w1"})),
            snap(8, Some(4), json!({"operation": "delete"})),
            snap(9, Some(2), json!({"operation": "overwrite", "replace-partitions": "true"})),
            snap(10, Some(3), json!({"operation": "delete"})),
        ],
        "refs": {"main": {"snapshot-id": 4, "type": "branch"},
                 "audit": {"snapshot-id": 6, "type": "branch", "min-snapshots-to-keep": 3},
                 "v1": {"snapshot-id": 2, "type": "tag", "max-ref-age-ms": 7}},
        "snapshot-log": ([1, 2, 3, 4].map(|i: i64| json!({"snapshot-id": i, "timestamp-ms": i * 100}))),
        "metadata-log": [],
    })
}

pub(super) fn md_of(v: &Value) -> TableMetadata {
    TableMetadata::parse(v.to_string().as_bytes(), "v3.metadata.json").unwrap()
}

pub(super) fn md() -> TableMetadata {
    md_of(&doc())
}

pub(super) fn written(c: &Change) -> &TableMetadata {
    c.metadata.as_ref().expect("a change to write")
}

pub(super) fn head(m: &TableMetadata, name: &str) -> Option<i64> {
    m.ref_named(name).map(|r| r.snapshot_id)
}

pub(super) fn msg<T: std::fmt::Debug>(r: Result<T>) -> String {
    r.unwrap_err().message().to_string()
}

#[test]
fn rollback_to_an_ancestor_moves_main_and_logs_it() {
    let m = md();
    let c = rollback_to_snapshot(&m, 2, NOW).unwrap();
    let w = written(&c);
    assert_eq!(w.current_snapshot_id(), Some(2));
    assert_eq!(head(w, MAIN_BRANCH), Some(2));
    assert_eq!(
        w.snapshot_log()
            .last()
            .map(|e| (e.snapshot_id, e.timestamp_ms)),
        Some((2, NOW))
    );
    assert_eq!(
        (c.previous_snapshot_id, c.current_snapshot_id),
        (Some(4), Some(2))
    );
    assert_eq!(head(w, "audit"), Some(6));
    assert_eq!(w.snapshots().len(), 10);
    assert_eq!(c.rows.len(), 1);
    assert_eq!(c.rows[0].before.as_deref(), Some("branch 4"));
    assert_eq!(c.rows[0].after.as_deref(), Some("branch 2"));
}

#[test]
fn rollback_refuses_unknown_and_non_ancestors_and_ignores_current() {
    let m = md();
    assert_eq!(
        msg(rollback_to_snapshot(&m, 99, NOW)),
        "Cannot roll back to unknown snapshot id: 99"
    );
    assert_eq!(
        msg(rollback_to_snapshot(&m, 6, NOW)),
        "Cannot roll back to snapshot, not an ancestor of the current state: 6"
    );
    let same = rollback_to_snapshot(&m, 4, NOW).unwrap();
    assert!(same.metadata.is_none());
    assert_eq!(
        (same.previous_snapshot_id, same.current_snapshot_id),
        (Some(4), Some(4))
    );
}

#[test]
fn rollback_to_timestamp_takes_the_latest_strictly_older_ancestor() {
    let m = md();
    assert_eq!(latest_ancestor_older_than(&m, 250), Some(2));
    assert_eq!(latest_ancestor_older_than(&m, 300), Some(2));
    assert_eq!(latest_ancestor_older_than(&m, 301), Some(3));
    // 5 and 6 are newer but not ancestors of main.
    assert_eq!(latest_ancestor_older_than(&m, 10_000), Some(4));
    assert_eq!(latest_ancestor_older_than(&m, 100), None);
    let c = rollback_to_timestamp(&m, 250, NOW).unwrap();
    assert_eq!(written(&c).current_snapshot_id(), Some(2));
    assert_eq!(
        msg(rollback_to_timestamp(&m, 100, NOW)),
        "Cannot roll back, no valid snapshot older than: 100"
    );
    assert!(
        rollback_to_timestamp(&m, 10_000, NOW)
            .unwrap()
            .metadata
            .is_none()
    );
}

#[test]
fn set_current_snapshot_by_id_or_ref() {
    let m = md();
    let c = set_current_snapshot(&m, &SnapshotSelector::Id(6), NOW).unwrap();
    assert_eq!(written(&c).current_snapshot_id(), Some(6));
    let c = set_current_snapshot(&m, &SnapshotSelector::Ref("v1".into()), NOW).unwrap();
    assert_eq!(written(&c).current_snapshot_id(), Some(2));
    assert_eq!(
        msg(set_current_snapshot(
            &m,
            &SnapshotSelector::Ref("nope".into()),
            NOW
        )),
        "Cannot find matching snapshot ID for ref nope"
    );
    assert!(set_current_snapshot(&m, &SnapshotSelector::Id(42), NOW).is_err());
}

#[test]
fn fast_forward_rules() {
    let m = md();
    let c = fast_forward(&m, "main", "audit", NOW).unwrap();
    let w = written(&c);
    assert_eq!(w.current_snapshot_id(), Some(6));
    assert_eq!(head(w, "audit"), Some(6));
    assert_eq!(
        (c.previous_snapshot_id, c.current_snapshot_id),
        (Some(4), Some(6))
    );
    assert_eq!(
        msg(fast_forward(&m, "audit", "main", NOW)),
        "Cannot fast-forward: audit is not an ancestor of main"
    );
    assert_eq!(
        msg(fast_forward(&m, "v1", "main", NOW)),
        "Ref v1 is a tag not a branch"
    );
    // A missing branch is created at the source's head (current Java).
    let c = fast_forward(&m, "nope", "audit", NOW).unwrap();
    let created = written(&c).ref_named("nope").unwrap().clone();
    assert_eq!((created.kind, created.snapshot_id), (RefKind::Branch, 6));
    assert_eq!(
        (c.previous_snapshot_id, c.current_snapshot_id),
        (None, Some(6))
    );
    assert_eq!(
        msg(fast_forward(&m, "main", "nope", NOW)),
        "Ref does not exist: nope"
    );
    assert!(
        fast_forward(&m, "main", "main", NOW)
            .unwrap()
            .metadata
            .is_none()
    );
    // A non-main branch keeps its retention; main is untouched.
    let mut d = doc();
    d["refs"]["b"] = json!({"snapshot-id": 4, "type": "branch", "max-ref-age-ms": 9});
    let c = fast_forward(&md_of(&d), "b", "audit", NOW).unwrap();
    let w = written(&c);
    let b = w.ref_named("b").unwrap();
    assert_eq!((b.snapshot_id, b.max_ref_age_ms), (6, Some(9)));
    assert_eq!(w.current_snapshot_id(), Some(4));
    // Fast-forward to a tag works too (the source may be any ref).
    d["refs"]["b"]["snapshot-id"] = 1.into();
    let c = fast_forward(&md_of(&d), "b", "v1", NOW).unwrap();
    assert_eq!(head(written(&c), "b"), Some(2));
}

#[test]
fn cherrypick_fast_forwards_a_child_of_current() {
    let m = md();
    let CherrypickPlan::FastForward(c) = plan_cherrypick(&m, 5, NOW).unwrap() else {
        panic!("expected a fast-forward");
    };
    assert_eq!(written(&c).current_snapshot_id(), Some(5));
    // Any operation fast-forwards (Java): a delete whose parent is current.
    assert!(matches!(
        plan_cherrypick(&m, 8, NOW).unwrap(),
        CherrypickPlan::FastForward(_)
    ));
}

#[test]
fn cherrypick_reapplies_an_append_with_source_and_wap_summary() {
    let m = md();
    let CherrypickPlan::Reapply(r) = plan_cherrypick(&m, 7, NOW).unwrap() else {
        panic!("expected a new snapshot");
    };
    assert_eq!(r.operation, "append");
    assert_eq!(
        r.summary.get("source-snapshot-id").map(String::as_str),
        Some("7")
    );
    assert_eq!(
        r.summary.get("published-wap-id").map(String::as_str),
        Some("w1")
    );
    assert_eq!(r.parent, Some(4));
    assert!(!r.replace_partitions);
    assert_eq!(wap_snapshot(&m, "w1").unwrap(), 7);
    assert_eq!(
        msg(wap_snapshot(&m, "nope")),
        "Cannot apply unknown WAP ID 'nope'"
    );
    assert!(matches!(
        decide_procedure(
            &m,
            &SnapshotProcedure::PublishChanges {
                wap_id: "w1".into()
            },
            NOW
        )
        .unwrap(),
        Decision::Reapply(_)
    ));
}

#[test]
fn cherrypick_refusals() {
    let m = md();
    assert_eq!(
        msg(plan_cherrypick(&m, 99, NOW)),
        "Cannot cherry-pick unknown snapshot ID: 99"
    );
    assert_eq!(
        msg(plan_cherrypick(&m, 3, NOW)),
        "Cannot cherrypick snapshot 3: already an ancestor"
    );
    assert_eq!(
        msg(plan_cherrypick(&m, 10, NOW)),
        "Cannot cherry-pick snapshot 10: not append, dynamic overwrite, or fast-forward"
    );
    // A WAP id already published by an ancestor.
    let mut d = doc();
    d["snapshots"][3]["summary"]["published-wap-id"] = "w1".into();
    assert_eq!(
        msg(plan_cherrypick(&md_of(&d), 7, NOW)),
        "Duplicate request to cherry pick wap id that was published already: w1"
    );
    // Already picked into an ancestor.
    let mut d = doc();
    d["snapshots"][6]["summary"] = json!({"operation": "append"});
    d["snapshots"][3]["summary"]["source-snapshot-id"] = "7".into();
    assert_eq!(
        msg(plan_cherrypick(&md_of(&d), 7, NOW)),
        "Cannot cherrypick snapshot 7: already picked to create ancestor 4"
    );
}

#[test]
fn cherrypick_dynamic_overwrite_checks_its_base() {
    let m = md();
    let CherrypickPlan::Reapply(r) = plan_cherrypick(&m, 9, NOW).unwrap() else {
        panic!("expected a new snapshot");
    };
    assert!(r.replace_partitions);
    assert_eq!(r.check_since, vec![4, 3]);
    let mut d = doc();
    d["snapshots"][8]["parent-snapshot-id"] = 6.into();
    assert_eq!(
        msg(plan_cherrypick(&md_of(&d), 9, NOW)),
        "Cannot cherry-pick overwrite not based on an ancestor of the current state: 9"
    );
    let a = (0, "p=1".to_string());
    let b = (0, "p=2".to_string());
    assert!(check_replaced_partitions(std::slice::from_ref(&a), std::slice::from_ref(&b)).is_ok());
    assert_eq!(
        msg(check_replaced_partitions(
            std::slice::from_ref(&a),
            &[b, a.clone()]
        )),
        "Cannot cherry-pick replace partitions with changed partition: p=1"
    );
}

// ---- properties over random histories ----

/// A random forest of `n` snapshots (parent: any earlier one or none), random timestamps, a
/// random current snapshot, and random branches and tags.
fn history() -> impl Strategy<Value = Value> {
    (2usize..12)
        .prop_flat_map(|n| {
            (
                Just(n),
                proptest::collection::vec(proptest::option::of(0usize..12), n),
                proptest::collection::vec(0i64..50, n),
                0..n,
                proptest::collection::vec((0..n, any::<bool>()), 0..4),
            )
        })
        .prop_map(|(n, parents, gaps, current, refs)| {
            let mut ts = 1_000;
            let snapshots: Vec<Value> = (0..n)
                .map(|i| {
                    ts += gaps[i];
                    let parent = parents[i].filter(|p| *p < i).map(|p| p as i64 + 1);
                    let mut s = json!({"snapshot-id": i as i64 + 1, "sequence-number": i as i64 + 1,
                        "timestamp-ms": ts, "manifest-list": format!("s3://b/t/m/{i}.avro"),
                        "summary": {"operation": "append"}});
                    if let Some(p) = parent {
                        s["parent-snapshot-id"] = p.into();
                    }
                    s
                })
                .collect();
            let mut ref_map = serde_json::Map::new();
            ref_map.insert(
                "main".into(),
                json!({"snapshot-id": current as i64 + 1, "type": "branch"}),
            );
            for (k, (at, is_branch)) in refs.into_iter().enumerate() {
                let kind = if is_branch { "branch" } else { "tag" };
                ref_map.insert(
                    format!("r{k}"),
                    json!({"snapshot-id": at as i64 + 1, "type": kind}),
                );
            }
            let mut d = doc();
            d["snapshots"] = Value::Array(snapshots);
            d["current-snapshot-id"] = (current as i64 + 1).into();
            d["refs"] = Value::Object(ref_map);
            d["snapshot-log"] = json!([]);
            d
        })
}

fn others_unchanged(before: &TableMetadata, after: &TableMetadata, moved: &str) {
    assert_eq!(before.snapshots(), after.snapshots());
    for r in before.refs().iter().filter(|r| r.name != moved) {
        assert_eq!(after.ref_named(&r.name), Some(r));
    }
    assert_eq!(before.properties(), after.properties());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn rollback_succeeds_exactly_on_ancestors(d in history(), target in 1i64..14) {
        let m = md_of(&d);
        let current = m.current_snapshot_id().unwrap();
        let is_anc = is_ancestor_of(&m, target, current);
        match rollback_to_snapshot(&m, target, NOW) {
            Ok(c) => {
                prop_assert!(is_anc);
                let after = c.metadata.as_ref().unwrap_or(&m);
                prop_assert_eq!(after.current_snapshot_id(), Some(target));
                prop_assert_eq!(head(after, MAIN_BRANCH), Some(target));
                prop_assert_eq!(c.metadata.is_none(), target == current);
                others_unchanged(&m, after, MAIN_BRANCH);
            }
            Err(_) => prop_assert!(!is_anc),
        }
    }

    #[test]
    fn rollback_to_timestamp_picks_the_newest_older_ancestor(d in history(), at in 900i64..1700) {
        let m = md_of(&d);
        let older: Vec<i64> = ancestors(&m, m.current_snapshot_id())
            .iter()
            .filter(|s| s.timestamp_ms < at)
            .map(|s| s.timestamp_ms)
            .collect();
        match rollback_to_timestamp(&m, at, NOW) {
            Ok(c) => {
                let after = c.metadata.as_ref().unwrap_or(&m);
                let picked = after.current_snapshot().unwrap();
                prop_assert!(picked.timestamp_ms < at);
                prop_assert_eq!(Some(picked.timestamp_ms), older.iter().copied().max());
                prop_assert!(is_ancestor_of(&m, picked.snapshot_id, m.current_snapshot_id().unwrap()));
            }
            Err(_) => prop_assert!(older.is_empty()),
        }
    }

    #[test]
    fn fast_forward_moves_only_onto_descendants(d in history(), a in 0usize..5, b in 0usize..5) {
        let m = md_of(&d);
        let names: Vec<String> = m.refs().iter().map(|r| r.name.clone()).collect();
        let (Some(from), Some(to)) = (names.get(a % names.len()), names.get(b % names.len())) else {
            return Ok(());
        };
        let from_ref = m.ref_named(from).unwrap().clone();
        let to_ref = m.ref_named(to).unwrap().clone();
        let allowed = from_ref.kind == RefKind::Branch
            && is_ancestor_of(&m, from_ref.snapshot_id, to_ref.snapshot_id);
        // A missing branch is created at `to`'s head.
        let c = fast_forward(&m, "fresh", to, NOW).unwrap();
        prop_assert_eq!(head(c.metadata.as_ref().unwrap_or(&m), "fresh"), Some(to_ref.snapshot_id));
        match fast_forward(&m, from, to, NOW) {
            Ok(c) => {
                prop_assert!(allowed);
                let after = c.metadata.as_ref().unwrap_or(&m);
                prop_assert_eq!(head(after, from), Some(to_ref.snapshot_id));
                let moved = after.ref_named(from).unwrap();
                prop_assert_eq!(moved.max_ref_age_ms, from_ref.max_ref_age_ms);
                others_unchanged(&m, after, from);
            }
            Err(_) => prop_assert!(!allowed),
        }
    }

    #[test]
    fn ref_ddl_never_touches_snapshots_or_main(d in history(), at in 0i64..14, drop in any::<bool>(), tag in any::<bool>()) {
        let m = md_of(&d);
        let kind = if tag { RefType::Tag } else { RefType::Branch };
        let change = if drop {
            drop_ref(kind, "r0", true)
        } else {
            put(kind, CreateMode::CreateOrReplace, "r0", Some(at))
        };
        if let Ok(c) = decide_change(&m, &change, NOW) {
            let after = c.metadata.as_ref().unwrap_or(&m);
            others_unchanged(&m, after, "r0");
            prop_assert_eq!(after.current_snapshot_id(), m.current_snapshot_id());
            if !drop {
                prop_assert_eq!(head(after, "r0"), Some(at));
            } else {
                prop_assert!(after.ref_named("r0").is_none() || after.ref_named("r0").unwrap().kind != RefKind::from_type(kind));
            }
        }
    }
}

impl RefKind {
    fn from_type(t: RefType) -> RefKind {
        match t {
            RefType::Branch => RefKind::Branch,
            RefType::Tag => RefKind::Tag,
        }
    }
}
