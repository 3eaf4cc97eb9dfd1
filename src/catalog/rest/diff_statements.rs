//! The REST commit of each snapshot, ref and property statement's metadata change: every ref the
//! statement moves, creates or drops is asserted (`assert-ref-snapshot-id`, `null` for a new one),
//! and so is every ref it leaves alone, so a concurrent change to any ref makes the commit fail
//! (409) and the statement re-plan; the updates are exactly the statement's change.

use serde_json::{Value, json};

use super::rest_changes;
use super::tests::{doc, types};

const UUID: &str = "9c12d441-03fe-4693-9a96-a0705ddf69c1";

/// main at 3, branch audit at 2, tag v1 at 1.
fn refs() -> Value {
    json!({"main": {"snapshot-id": 3, "type": "branch"},
           "audit": {"snapshot-id": 2, "type": "branch"},
           "v1": {"snapshot-id": 1, "type": "tag"}})
}

/// The requirements asserting the base refs of [`refs`] (in name order), then `extra`.
fn asserts_base_refs(extra: &[Value]) -> Vec<Value> {
    let mut all = vec![
        json!({"type": "assert-table-uuid", "uuid": UUID}),
        json!({"type": "assert-ref-snapshot-id", "ref": "audit", "snapshot-id": 2}),
        json!({"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 3}),
        json!({"type": "assert-ref-snapshot-id", "ref": "v1", "snapshot-id": 1}),
    ];
    all.extend(extra.iter().cloned());
    all
}

#[test]
fn ref_ddl_asserts_the_created_replaced_and_dropped_refs() {
    // CREATE BRANCH b AS OF VERSION 3, CREATE TAG t2, REPLACE BRANCH audit AS OF VERSION 1,
    // DROP TAG v1 (one combined change: each part's update and requirement is present).
    let base = doc(&[1, 2, 3], refs(), json!({}), json!({}));
    let new = doc(
        &[1, 2, 3],
        json!({"main": {"snapshot-id": 3, "type": "branch"},
               "audit": {"snapshot-id": 1, "type": "branch"},
               "b": {"snapshot-id": 3, "type": "branch"},
               "t2": {"snapshot-id": 2, "type": "tag", "max-ref-age-ms": 86400000}}),
        json!({}),
        json!({}),
    );
    let changes = rest_changes(&base, &new).unwrap();
    assert_eq!(
        changes.requirements,
        asserts_base_refs(&[
            json!({"type": "assert-ref-snapshot-id", "ref": "b", "snapshot-id": null}),
            json!({"type": "assert-ref-snapshot-id", "ref": "t2", "snapshot-id": null}),
        ])
    );
    assert_eq!(
        changes.updates,
        vec![
            json!({"action": "remove-snapshot-ref", "ref-name": "v1"}),
            json!({"action": "set-snapshot-ref", "ref-name": "audit", "snapshot-id": 1, "type": "branch"}),
            json!({"action": "set-snapshot-ref", "ref-name": "b", "snapshot-id": 3, "type": "branch"}),
            json!({"action": "set-snapshot-ref", "ref-name": "t2", "snapshot-id": 2, "type": "tag",
                   "max-ref-age-ms": 86400000}),
        ]
    );
}

#[test]
fn rollback_set_current_and_fast_forward_move_main_only() {
    // rollback_to_snapshot(1) / set_current_snapshot(1): main 3 -> 1.
    let base = doc(&[1, 2, 3], refs(), json!({}), json!({}));
    let mut moved = refs();
    moved["main"]["snapshot-id"] = json!(1);
    let new = doc(
        &[1, 2, 3],
        moved,
        json!({}),
        json!({"current-snapshot-id": 1}),
    );
    let changes = rest_changes(&base, &new).unwrap();
    assert_eq!(changes.requirements, asserts_base_refs(&[]));
    assert_eq!(
        changes.updates,
        vec![
            json!({"action": "set-snapshot-ref", "ref-name": "main", "snapshot-id": 1, "type": "branch"})
        ]
    );
    // fast_forward('audit', 'main'): audit 2 -> 3.
    let mut forwarded = refs();
    forwarded["audit"]["snapshot-id"] = json!(3);
    let new = doc(&[1, 2, 3], forwarded, json!({}), json!({}));
    let changes = rest_changes(&base, &new).unwrap();
    assert_eq!(changes.requirements, asserts_base_refs(&[]));
    assert_eq!(types(&changes), ["set-snapshot-ref"]);
    assert_eq!(changes.updates[0]["ref-name"], "audit");
    assert_eq!(changes.updates[0]["snapshot-id"], 3);
}

/// `base` with one more snapshot 4 (`operation`, parent 3) that main points at.
fn new_head(operation: &str, summary_extra: Value) -> (Value, Vec<Value>) {
    let mut summary = json!({"operation": operation});
    if let (Some(s), Some(extra)) = (summary.as_object_mut(), summary_extra.as_object()) {
        for (k, v) in extra {
            s.insert(k.clone(), v.clone());
        }
    }
    let snapshots: Vec<Value> = (1..=4)
        .map(|id: i64| {
            let mut s = json!({"snapshot-id": id, "sequence-number": id, "timestamp-ms": 1000 * id,
                               "manifest-list": format!("/t/metadata/snap-{id}.avro"),
                               "summary": {"operation": "append"}});
            if id > 1 {
                s["parent-snapshot-id"] = json!(id - 1);
            }
            if id == 4 {
                s["summary"] = summary.clone();
            }
            s
        })
        .collect();
    let mut new_refs = refs();
    new_refs["main"]["snapshot-id"] = json!(4);
    (new_refs, snapshots)
}

#[test]
fn cherry_pick_and_rewrite_manifests_add_a_snapshot_and_move_main() {
    for (operation, extra) in [
        ("append", json!({"source-snapshot-id": "2"})),
        (
            "replace",
            json!({"manifests-replaced": "6", "manifests-created": "1"}),
        ),
    ] {
        let base = doc(&[1, 2, 3], refs(), json!({}), json!({}));
        let (new_refs, snapshots) = new_head(operation, extra);
        let new = doc(
            &[1, 2, 3, 4],
            new_refs,
            json!({}),
            json!({"snapshots": snapshots, "current-snapshot-id": 4}),
        );
        let changes = rest_changes(&base, &new).unwrap();
        assert_eq!(changes.requirements, asserts_base_refs(&[]), "{operation}");
        assert_eq!(
            types(&changes),
            ["add-snapshot", "set-snapshot-ref"],
            "{operation}"
        );
        assert_eq!(changes.updates[0]["snapshot"], snapshots[3], "{operation}");
        assert_eq!(
            changes.updates[1],
            json!({"action": "set-snapshot-ref", "ref-name": "main", "snapshot-id": 4, "type": "branch"})
        );
    }
}

#[test]
fn clean_expired_metadata_removes_schemas_and_specs_under_java_requirements() {
    let schema = |id: i64| json!({"type": "struct", "schema-id": id, "fields": []});
    let spec = |id: i64| json!({"spec-id": id, "fields": []});
    let base = doc(
        &[1, 2, 3],
        refs(),
        json!({}),
        json!({"schemas": [schema(0), schema(1), schema(2)], "current-schema-id": 2,
               "partition-specs": [spec(0), spec(1)], "default-spec-id": 1}),
    );
    // expire_snapshots(clean_expired_metadata = 1) expiring 1 (and tag v1 with it).
    let mut kept = refs();
    kept.as_object_mut().unwrap().remove("v1");
    let new = doc(
        &[2, 3],
        kept,
        json!({}),
        json!({"schemas": [schema(2)], "current-schema-id": 2,
               "partition-specs": [spec(1)], "default-spec-id": 1}),
    );
    let changes = rest_changes(&base, &new).unwrap();
    assert_eq!(
        changes.requirements,
        asserts_base_refs(&[
            json!({"type": "assert-current-schema-id", "current-schema-id": 2}),
            json!({"type": "assert-default-spec-id", "default-spec-id": 1}),
        ])
    );
    assert_eq!(
        changes.updates,
        vec![
            json!({"action": "remove-snapshot-ref", "ref-name": "v1"}),
            json!({"action": "remove-snapshots", "snapshot-ids": [1]}),
            json!({"action": "remove-schemas", "schema-ids": [0, 1]}),
            json!({"action": "remove-partition-specs", "spec-ids": [0]}),
        ]
    );
}

#[test]
fn tblproperties_set_and_unset_keep_every_ref_asserted() {
    let base = doc(&[1, 2, 3], refs(), json!({"a": "1", "b": "2"}), json!({}));
    // SET TBLPROPERTIES ('a' = '5', 'c' = '3'); UNSET TBLPROPERTIES ('b').
    let new = doc(&[1, 2, 3], refs(), json!({"a": "5", "c": "3"}), json!({}));
    let changes = rest_changes(&base, &new).unwrap();
    assert_eq!(changes.requirements, asserts_base_refs(&[]));
    assert_eq!(
        changes.updates,
        vec![
            json!({"action": "set-properties", "updates": {"a": "5", "c": "3"}}),
            json!({"action": "remove-properties", "removals": ["b"]}),
        ]
    );
}
