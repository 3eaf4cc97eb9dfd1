//! Unit tests of [`super`]: every statement against every kind of move another writer can make
//! between a plan and its commit, on a small hand-built history; the exhaustive sweep over every
//! head of `main` and of the named ref, and properties over random histories, are in [`sweeps`];
//! the branch, tag and property statements in [`refs`].
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

#[path = "moved_base_ref_tests.rs"]
mod refs;
use refs::{drop_ref, put};

#[path = "moved_base_sweeps.rs"]
mod sweeps;
