//! Unit tests of [`super`]: every statement against every kind of move another writer can make
//! between a plan and its commit, on a small hand-built history; the exhaustive sweep over every
//! head of `main` and of the named ref, and properties over random histories, are in [`sweeps`].
//!
//! The history (snapshots 11–13 are other writers' commits, listed in every state):
//! ```text
//! 1 ← 2 ← 3 ← 4 (main)      tag v1 → 2, branch dev → 2
//!              ↖ 5 ← 6 (audit)
//!          ↖ 7 (append, wap.id w1)
//!              ↖ 8 (delete, parent 4)
//!      ↖ 9 (overwrite replace-partitions, parent 2)   ↖ 10 (delete, parent 3)
//!              ↖ 11 (append, parent 4)   ↖ 12 (append, parent 4, source-snapshot-id 7)
//! 13 (append, no parent)
//! ```

use serde_json::{Value, json};

use super::*;
use crate::iceberg::spec::RefKind;
use crate::maintain::manage_snapshots::{Change, Decision, decide_change, decide_pinned};
use crate::plan::{RefRetention, SnapshotSelector};

const NOW: i64 = 10_000;
const B: RefKind = RefKind::Branch;
const T: RefKind = RefKind::Tag;

fn snap(id: i64, parent: Option<i64>, summary: Value) -> Value {
    let mut s = json!({"snapshot-id": id, "sequence-number": id, "timestamp-ms": id * 100,
        "manifest-list": format!("s3://b/t/metadata/snap-{id}.avro"), "summary": summary});
    if let Some(p) = parent {
        s["parent-snapshot-id"] = p.into();
    }
    s
}

fn snapshots() -> Vec<Value> {
    let append = json!({"operation": "append"});
    vec![
        snap(1, None, append.clone()),
        snap(2, Some(1), append.clone()),
        snap(3, Some(2), append.clone()),
        snap(4, Some(3), append.clone()),
        snap(5, Some(4), append.clone()),
        snap(6, Some(5), append.clone()),
        snap(7, Some(3), json!({"operation": "append", "wap.id": "w1"})),
        snap(8, Some(4), json!({"operation": "delete"})),
        snap(
            9,
            Some(2),
            json!({"operation": "overwrite", "replace-partitions": "true"}),
        ),
        snap(10, Some(3), json!({"operation": "delete"})),
        snap(11, Some(4), append.clone()),
        snap(
            12,
            Some(4),
            json!({"operation": "append", "source-snapshot-id": "7"}),
        ),
        snap(13, None, append),
    ]
}

type Refs<'a> = &'a [(&'a str, RefKind, i64)];

/// A state: `main` at `main`, the other refs `refs`, every snapshot but `without`.
fn state_without(main: Option<i64>, refs: Refs<'_>, without: &[i64]) -> TableMetadata {
    let mut ref_map = serde_json::Map::new();
    if let Some(m) = main {
        ref_map.insert("main".into(), json!({"snapshot-id": m, "type": "branch"}));
    }
    for (name, kind, id) in refs {
        ref_map.insert(
            name.to_string(),
            json!({"snapshot-id": id, "type": kind.as_str()}),
        );
    }
    let listed: Vec<Value> = snapshots()
        .into_iter()
        .filter(|s| !without.contains(&s["snapshot-id"].as_i64().unwrap()))
        .collect();
    let doc = json!({
        "format-version": 2,
        "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
        "location": "s3://b/t",
        "last-sequence-number": 13,
        "last-updated-ms": 1000,
        "last-column-id": 1,
        "current-schema-id": 0,
        "schemas": [{"type": "struct", "schema-id": 0, "fields": []}],
        "default-spec-id": 0,
        "partition-specs": [{"spec-id": 0, "fields": []}],
        "properties": {"owner": "me", "k": "v"},
        "current-snapshot-id": main.unwrap_or(-1),
        "snapshots": listed,
        "refs": ref_map,
        "snapshot-log": [],
        "metadata-log": [],
    });
    TableMetadata::parse(doc.to_string().as_bytes(), "v3.metadata.json").unwrap()
}

fn state(main: Option<i64>, refs: Refs<'_>) -> TableMetadata {
    state_without(main, refs, &[])
}

const PLANNED_REFS: [(&str, RefKind, i64); 3] = [("audit", B, 6), ("v1", T, 2), ("dev", B, 2)];

/// The state every statement plans from: main 4, audit 6, tag v1 2, dev 2.
fn planned_md() -> TableMetadata {
    state(Some(4), &PLANNED_REFS)
}

fn planned() -> PlannedFrom {
    PlannedFrom::of(&planned_md())
}

/// The planned state with `main` at `main` and the ref `name` replaced (`None`: dropped).
fn head(main: i64, name: &str, to: Option<(RefKind, i64)>) -> TableMetadata {
    let mut refs: Vec<(&str, RefKind, i64)> = PLANNED_REFS
        .iter()
        .copied()
        .filter(|(n, ..)| *n != name)
        .collect();
    if let Some((kind, id)) = to {
        refs.push((name, kind, id));
    }
    state(Some(main), &refs)
}

/// The refusal's message (it must be `LIMIT_EXCEEDED`).
fn refusal(r: Result<()>) -> String {
    let e = r.expect_err("a refusal");
    assert_eq!(e.kind(), ErrorKind::LimitExceeded, "{e}");
    e.message().to_string()
}

fn edit(d: Decision) -> Change {
    match d {
        Decision::Edit(c) => *c,
        other => panic!("not an edit: {other:?}"),
    }
}

fn main_of(c: &Change) -> Option<i64> {
    c.metadata.as_ref().expect("a write").current_snapshot_id()
}

fn ref_of(md: &TableMetadata, name: &str) -> Option<(RefKind, i64)> {
    md.ref_named(name).map(|r| (r.kind, r.snapshot_id))
}

#[test]
fn pinning_resolves_what_the_statement_names_on_the_planned_state() {
    let m = planned_md();
    let pin = |call: SnapshotProcedure| pin_procedure(&m, &call).unwrap();
    assert_eq!(
        pin(SnapshotProcedure::RollbackToTimestamp { timestamp_ms: 250 }),
        Pinned::Rollback { target: 2 }
    );
    assert_eq!(
        pin(SnapshotProcedure::SetCurrentSnapshot(
            SnapshotSelector::Ref("audit".into())
        )),
        Pinned::SetCurrent { target: 6 }
    );
    assert_eq!(
        pin(SnapshotProcedure::FastForward {
            branch: "dev".into(),
            to: "main".into()
        }),
        Pinned::FastForward {
            branch: "dev".into(),
            to: "main".into(),
            target: 4
        }
    );
    assert_eq!(
        pin(SnapshotProcedure::PublishChanges {
            wap_id: "w1".into()
        }),
        Pinned::Cherrypick { picked: 7 }
    );
    let errors = [
        SnapshotProcedure::RollbackToTimestamp { timestamp_ms: 100 },
        SnapshotProcedure::SetCurrentSnapshot(SnapshotSelector::Ref("nope".into())),
        SnapshotProcedure::FastForward {
            branch: "dev".into(),
            to: "nope".into(),
        },
        SnapshotProcedure::PublishChanges {
            wap_id: "nope".into(),
        },
    ];
    for call in errors {
        let e = pin_procedure(&m, &call).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BadArguments, "{call:?}");
    }
}

#[test]
fn nothing_moved_every_statement_may_commit() {
    let from = planned();
    let same = planned_md();
    for pinned in sweeps::pinned_procedures() {
        assert_eq!(
            procedure_may_commit(&pinned, &from, &same),
            Ok(()),
            "{pinned:?}"
        );
    }
    for change in sweeps::changes() {
        assert_eq!(
            change_may_commit(&change, &from, &same),
            Ok(()),
            "{change:?}"
        );
    }
}

#[test]
fn a_rollback_proceeds_while_its_target_is_still_an_ancestor_of_main() {
    let from = planned();
    let rollback = |target| Pinned::Rollback { target };
    // Another writer appended 11 on main: 2 is still an ancestor; the rollback moves main back.
    let appended = head(11, "", None);
    assert_eq!(procedure_may_commit(&rollback(2), &from, &appended), Ok(()));
    let c = edit(decide_pinned(&appended, &rollback(2), NOW).unwrap());
    assert_eq!(main_of(&c), Some(2));
    assert_eq!(c.previous_snapshot_id, Some(11));
    assert!(
        c.metadata.unwrap().snapshot(11).is_some(),
        "11 stays listed"
    );
    // Main moved along audit (6 → 5 → 4 → ...): 3 is an ancestor.
    assert_eq!(
        procedure_may_commit(&rollback(3), &from, &head(6, "", None)),
        Ok(())
    );
    // Main moved to 7 (parent 3): 4 is not an ancestor any more.
    assert_eq!(
        refusal(procedure_may_commit(
            &rollback(4),
            &from,
            &head(7, "", None)
        )),
        "a concurrent commit moved main from 4 to 7, of which snapshot 4 is not an ancestor; \
         nothing was changed"
    );
    // The target was expired meanwhile.
    let expired = state_without(Some(11), &PLANNED_REFS, &[2]);
    assert_eq!(
        refusal(procedure_may_commit(&rollback(2), &from, &expired)),
        "a concurrent commit moved main from 4 to 11; snapshot 2 is no longer listed; nothing \
         was changed"
    );
    // Another writer rolled main back already: the target is its head, nothing to write.
    let rolled = head(2, "", None);
    assert_eq!(procedure_may_commit(&rollback(2), &from, &rolled), Ok(()));
    assert!(
        edit(decide_pinned(&rolled, &rollback(2), NOW).unwrap())
            .metadata
            .is_none()
    );
}

#[test]
fn set_current_snapshot_refuses_when_main_moved() {
    let from = planned();
    let set = Pinned::SetCurrent { target: 2 };
    // Other refs moving does not matter.
    assert_eq!(
        procedure_may_commit(&set, &from, &head(4, "audit", Some((B, 5)))),
        Ok(())
    );
    assert_eq!(
        refusal(procedure_may_commit(&set, &from, &head(11, "", None))),
        "a concurrent commit moved main from 4 to 11; nothing was changed"
    );
    // Another writer moved main exactly there: nothing is overwritten, nothing to write.
    let there = head(2, "", None);
    assert_eq!(procedure_may_commit(&set, &from, &there), Ok(()));
    assert!(
        edit(decide_pinned(&there, &set, NOW).unwrap())
            .metadata
            .is_none()
    );
    // Even back along its own history.
    assert_eq!(
        refusal(procedure_may_commit(&set, &from, &head(3, "", None))),
        "a concurrent commit moved main from 4 to 3; nothing was changed"
    );
    // A table whose main had no snapshot.
    let empty = PlannedFrom::of(&state(None, &[]));
    assert_eq!(
        refusal(procedure_may_commit(&set, &empty, &head(11, "", None))),
        "a concurrent commit moved main from no snapshot to 11; nothing was changed"
    );
}

fn ff(branch: &str, target: i64) -> Pinned {
    Pinned::FastForward {
        branch: branch.into(),
        to: "main".into(),
        target,
    }
}

#[test]
fn a_fast_forward_still_moves_forward_or_is_refused() {
    let from = planned();
    // dev at 2 → 4 (main's head when planned).
    let ok = [
        head(11, "", None),             // main moved on: the target is kept
        head(4, "dev", Some((B, 3))),   // dev moved forward, still before 4
        head(4, "dev", Some((B, 4))),   // dev already there
        head(4, "audit", Some((B, 1))), // another ref moved
    ];
    for h in &ok {
        assert_eq!(procedure_may_commit(&ff("dev", 4), &from, h), Ok(()));
    }
    let c = edit(decide_pinned(&ok[0], &ff("dev", 4), NOW).unwrap());
    let written = c.metadata.expect("a write");
    assert_eq!(ref_of(&written, "dev"), Some((B, 4)));
    assert_eq!(
        written.current_snapshot_id(),
        Some(11),
        "main's commit stays"
    );
    assert!(
        edit(decide_pinned(&ok[2], &ff("dev", 4), NOW).unwrap())
            .metadata
            .is_none()
    );
    let refused = [
        (
            head(4, "dev", Some((B, 6))),
            "a concurrent commit moved branch dev from 2 to 6, which is not an ancestor of \
             snapshot 4: fast-forwarding would undo that commit; nothing was changed",
        ),
        (
            head(4, "dev", Some((B, 7))),
            "a concurrent commit moved branch dev from 2 to 7, which is not an ancestor of \
             snapshot 4: fast-forwarding would undo that commit; nothing was changed",
        ),
        (
            head(4, "dev", None),
            "a concurrent commit dropped branch dev (at 2); nothing was changed",
        ),
        (
            head(4, "dev", Some((T, 2))),
            "a concurrent commit replaced branch dev (at 2) with a tag at 2; nothing was changed",
        ),
        (
            state_without(Some(4), &[("dev", B, 3)], &[4]),
            "a concurrent commit moved branch dev from 2 to 3; snapshot 4 is no longer listed; \
             nothing was changed",
        ),
    ];
    for (h, text) in refused {
        assert_eq!(
            refusal(procedure_may_commit(&ff("dev", 4), &from, &h)),
            text
        );
    }
}

#[test]
fn a_fast_forward_that_creates_its_branch_holds_a_branch_created_meanwhile_to_the_rule() {
    let from = planned();
    let create = ff("new", 4);
    assert_eq!(
        procedure_may_commit(&create, &from, &head(11, "", None)),
        Ok(())
    );
    assert_eq!(
        procedure_may_commit(&create, &from, &head(4, "new", Some((B, 3)))),
        Ok(())
    );
    assert_eq!(
        refusal(procedure_may_commit(
            &create,
            &from,
            &head(4, "new", Some((B, 7)))
        )),
        "a concurrent commit created branch new at 7, which is not an ancestor of snapshot 4: \
         fast-forwarding would undo that commit; nothing was changed"
    );
}

#[test]
fn fast_forwarding_main_refuses_over_a_commit_on_main() {
    let from = planned();
    // main 4 → audit's 6.
    assert_eq!(
        procedure_may_commit(&ff("main", 6), &from, &head(5, "", None)),
        Ok(())
    );
    assert_eq!(
        refusal(procedure_may_commit(
            &ff("main", 6),
            &from,
            &head(11, "", None)
        )),
        "a concurrent commit moved main from 4 to 11, which is not an ancestor of snapshot 6: \
         fast-forwarding would undo that commit; nothing was changed"
    );
}

#[test]
fn a_cherry_pick_checks_ancestry_and_its_parent_rule_on_the_new_main() {
    let from = planned();
    let pick = |picked| Pinned::Cherrypick { picked };
    // An append re-applies on any new main.
    let appended = head(11, "", None);
    assert_eq!(procedure_may_commit(&pick(7), &from, &appended), Ok(()));
    match decide_pinned(&appended, &pick(7), NOW).unwrap() {
        Decision::Reapply(r) => assert_eq!(r.parent, Some(11)),
        other => panic!("{other:?}"),
    }
    let refused = [
        (
            7,
            head(7, "", None),
            "a concurrent commit moved main from 4 to 7; snapshot 7 is now main's head or one of \
             its ancestors; nothing was changed",
        ),
        (
            7,
            head(12, "", None),
            "a concurrent commit moved main from 4 to 12; snapshot 7 was already picked to \
             create ancestor 12; nothing was changed",
        ),
        (
            9,
            head(13, "", None),
            "a concurrent commit moved main from 4 to 13; the parent 2 of overwrite 9 is not an \
             ancestor of main any more; nothing was changed",
        ),
        (
            8,
            head(11, "", None),
            "a concurrent commit moved main from 4 to 11; snapshot 8 (delete) can only be \
             fast-forwarded and main's head is no longer its parent; nothing was changed",
        ),
        (
            7,
            state_without(Some(11), &PLANNED_REFS, &[7]),
            "a concurrent commit moved main from 4 to 11; snapshot 7 is no longer listed; \
             nothing was changed",
        ),
    ];
    for (picked, h, text) in refused {
        assert_eq!(
            refusal(procedure_may_commit(&pick(picked), &from, &h)),
            text
        );
    }
    // A dynamic overwrite whose parent is still an ancestor.
    assert_eq!(procedure_may_commit(&pick(9), &from, &appended), Ok(()));
    // A delete planned as a fast-forward from 3 still fast-forwards when main is back on 3...
    let from_3 = PlannedFrom::of(&state(Some(4), &[]));
    assert_eq!(
        procedure_may_commit(&pick(10), &from_3, &head(3, "", None)),
        Ok(())
    );
    // ...and an append planned as a fast-forward becomes a new snapshot once main moved on.
    let on_3 = PlannedFrom::of(&state(Some(3), &[]));
    assert_eq!(procedure_may_commit(&pick(7), &on_3, &appended), Ok(()));
}

fn put(kind: RefType, mode: CreateMode, name: &str, snapshot_id: i64) -> TableChange {
    TableChange::PutRef {
        kind,
        mode,
        name: name.into(),
        snapshot_id: Some(snapshot_id),
        retention: RefRetention::default(),
    }
}

fn drop_ref(kind: RefType, name: &str) -> TableChange {
    TableChange::DropRef {
        kind,
        name: name.into(),
        if_exists: false,
    }
}

#[test]
fn replacing_a_ref_refuses_when_it_moved_was_created_or_dropped() {
    let from = planned();
    let replace_dev = put(RefType::Branch, CreateMode::Replace, "dev", 3);
    // main moving does not matter to dev.
    assert_eq!(
        change_may_commit(&replace_dev, &from, &head(11, "", None)),
        Ok(())
    );
    let cases = [
        (
            replace_dev.clone(),
            head(4, "dev", Some((B, 4))),
            "a concurrent commit moved branch dev from 2 to 4; nothing was changed",
        ),
        (
            replace_dev.clone(),
            head(4, "dev", None),
            "a concurrent commit dropped branch dev (at 2); nothing was changed",
        ),
        (
            replace_dev,
            head(4, "dev", Some((T, 2))),
            "a concurrent commit replaced branch dev (at 2) with a tag at 2; nothing was changed",
        ),
        (
            put(RefType::Tag, CreateMode::Replace, "v1", 4),
            head(4, "v1", Some((T, 3))),
            "a concurrent commit moved tag v1 from 2 to 3; nothing was changed",
        ),
        (
            put(RefType::Branch, CreateMode::CreateOrReplace, "new", 3),
            head(4, "new", Some((B, 1))),
            "a concurrent commit created branch new at 1; nothing was changed",
        ),
        (
            put(RefType::Branch, CreateMode::Replace, "main", 2),
            head(11, "", None),
            "a concurrent commit moved main from 4 to 11; nothing was changed",
        ),
    ];
    for (change, h, text) in cases {
        assert_eq!(
            refusal(change_may_commit(&change, &from, &h)),
            text,
            "{change:?}"
        );
    }
}

#[test]
fn a_retention_another_writer_set_is_kept_by_a_replace() {
    let from = planned();
    let mut refs: Vec<(&str, RefKind, i64)> = PLANNED_REFS.to_vec();
    refs.retain(|(n, ..)| *n != "dev");
    let mut h = state(Some(4), &refs);
    h.set_ref(&crate::iceberg::spec::SnapshotRef {
        name: "dev".into(),
        kind: B,
        snapshot_id: 2,
        min_snapshots_to_keep: Some(9),
        max_snapshot_age_ms: None,
        max_ref_age_ms: None,
    })
    .unwrap();
    let replace = put(RefType::Branch, CreateMode::Replace, "dev", 3);
    assert_eq!(change_may_commit(&replace, &from, &h), Ok(()));
    let c = decide_change(&h, &change_on_new_head(&replace), NOW).unwrap();
    let dev = c.metadata.unwrap().ref_named("dev").cloned().unwrap();
    assert_eq!((dev.snapshot_id, dev.min_snapshots_to_keep), (3, Some(9)));
}

#[test]
fn a_ref_statement_without_as_of_takes_mains_head_where_it_commits() {
    let from = planned();
    let appended = head(11, "", None);
    let create = TableChange::PutRef {
        kind: RefType::Branch,
        mode: CreateMode::Create,
        name: "x".into(),
        snapshot_id: None,
        retention: RefRetention::default(),
    };
    assert_eq!(change_may_commit(&create, &from, &appended), Ok(()));
    let written = decide_change(&appended, &change_on_new_head(&create), NOW)
        .unwrap()
        .metadata
        .unwrap();
    assert_eq!(ref_of(&written, "x"), Some((B, 11)));
    // A REPLACE of dev without AS OF: dev did not move, main did; dev goes to main's new head.
    let replace = TableChange::PutRef {
        kind: RefType::Branch,
        mode: CreateMode::Replace,
        name: "dev".into(),
        snapshot_id: None,
        retention: RefRetention::default(),
    };
    assert_eq!(change_may_commit(&replace, &from, &appended), Ok(()));
    // Another writer already put dev at main's head: nothing is overwritten.
    let there = head(11, "dev", Some((B, 11)));
    assert_eq!(change_may_commit(&replace, &from, &there), Ok(()));
}

#[test]
fn creating_has_no_rule_of_its_own() {
    let from = planned();
    let create = put(RefType::Branch, CreateMode::Create, "new", 3);
    let taken = head(4, "new", Some((B, 1)));
    assert_eq!(change_may_commit(&create, &from, &taken), Ok(()));
    let e = decide_change(&taken, &change_on_new_head(&create), NOW).unwrap_err();
    assert_eq!(e.message(), "Ref new already exists");
    let if_not = put(RefType::Branch, CreateMode::CreateIfNotExists, "new", 3);
    let c = decide_change(&taken, &change_on_new_head(&if_not), NOW).unwrap();
    assert!(c.metadata.is_none());
}

#[test]
fn dropping_a_branch_that_moved_is_refused_a_tag_is_dropped() {
    let from = planned();
    let drop_dev = drop_ref(RefType::Branch, "dev");
    assert_eq!(
        refusal(change_may_commit(
            &drop_dev,
            &from,
            &head(4, "dev", Some((B, 3)))
        )),
        "a concurrent commit moved branch dev from 2 to 3; dropping it would lose that commit; \
         nothing was changed"
    );
    // Dropped meanwhile: nothing left to do.
    let gone = head(4, "dev", None);
    assert_eq!(change_may_commit(&drop_dev, &from, &gone), Ok(()));
    let c = decide_change(&gone, &change_on_new_head(&drop_dev), NOW).unwrap();
    assert!(c.metadata.is_none());
    // A tag re-pointed meanwhile is dropped (Java's behaviour).
    let drop_v1 = drop_ref(RefType::Tag, "v1");
    let moved = head(11, "v1", Some((T, 3)));
    assert_eq!(change_may_commit(&drop_v1, &from, &moved), Ok(()));
    let written = decide_change(&moved, &change_on_new_head(&drop_v1), NOW)
        .unwrap()
        .metadata
        .unwrap();
    assert!(written.ref_named("v1").is_none());
    assert_eq!(written.current_snapshot_id(), Some(11));
}

#[test]
fn property_edits_apply_on_any_new_head() {
    let from = planned();
    let moved = head(11, "dev", None);
    let set = TableChange::SetProperties(vec![("a".into(), "1".into())]);
    let unset = TableChange::UnsetProperties {
        keys: vec!["k".into()],
        if_exists: false,
    };
    for change in [&set, &unset] {
        assert_eq!(change_may_commit(change, &from, &moved), Ok(()));
    }
    let written = decide_change(&moved, &change_on_new_head(&set), NOW)
        .unwrap()
        .metadata
        .unwrap();
    assert_eq!(written.property("a"), Some("1"));
    assert_eq!(written.current_snapshot_id(), Some(11));
    // Another writer unset `k` meanwhile: nothing left to do, no error.
    let mut unset_meanwhile = moved.clone();
    unset_meanwhile.remove_property("k").unwrap();
    let c = decide_change(&unset_meanwhile, &change_on_new_head(&unset), NOW).unwrap();
    assert!(c.metadata.is_none());
}

#[path = "moved_base_sweeps.rs"]
mod sweeps;
