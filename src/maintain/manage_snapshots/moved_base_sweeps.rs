//! The sweeps of [`super`]: every pinned statement against every state another writer can leave
//! (exhaustive over the hand-built history), and the ancestry rules over random histories.

use std::collections::HashMap;

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

/// The refs the sweeps name: main, the planned branches and tag, and one that does not exist.
const NAMES: [&str; 5] = ["main", "dev", "audit", "v1", "new"];

pub(super) fn pinned_procedures() -> Vec<Pinned> {
    let mut all = Vec::new();
    for id in 1..=13 {
        all.push(Pinned::Rollback { target: id });
        all.push(Pinned::SetCurrent { target: id });
        all.push(Pinned::Cherrypick { picked: id });
        for branch in NAMES {
            all.push(ff(branch, id));
        }
    }
    all
}

pub(super) fn changes() -> Vec<TableChange> {
    let mut all = Vec::new();
    for name in NAMES {
        for kind in [RefType::Branch, RefType::Tag] {
            for mode in [
                CreateMode::Create,
                CreateMode::CreateIfNotExists,
                CreateMode::Replace,
                CreateMode::CreateOrReplace,
            ] {
                all.push(put(kind, mode, name, 3));
            }
            all.push(drop_ref(kind, name));
        }
    }
    all.push(TableChange::SetProperties(vec![("a".into(), "1".into())]));
    all.push(TableChange::UnsetProperties {
        keys: vec!["k".into()],
        if_exists: false,
    });
    all
}

/// The name a statement moves (`main` for the procedures other than `fast_forward`).
fn moved_ref(pinned: &Pinned) -> &str {
    match pinned {
        Pinned::FastForward { branch, .. } => branch,
        _ => "main",
    }
}

/// Every state another writer can leave: main at any snapshot, and the ref `name` absent, a
/// branch or a tag at any snapshot.
fn heads_moving(name: &str) -> Vec<TableMetadata> {
    let mut out = Vec::new();
    for main in 1..=13 {
        if name == "main" {
            out.push(head(main, "", None));
            continue;
        }
        out.push(head(main, name, None));
        for id in 1..=13 {
            out.push(head(main, name, Some((B, id))));
            out.push(head(main, name, Some((T, id))));
        }
    }
    out
}

/// Exhaustive: for every pinned procedure and every state another writer can leave, a commit
/// the rules let through never undoes that writer's commit (except a rollback, which moves main
/// back along history by meaning), and never touches a ref other than the one it moves.
#[test]
fn every_procedure_against_every_move() {
    let from = planned();
    let planned_md = planned_md();
    let heads: HashMap<&str, Vec<TableMetadata>> = NAMES
        .iter()
        .map(|name| (*name, heads_moving(name)))
        .collect();
    for pinned in pinned_procedures() {
        let name = moved_ref(&pinned);
        for h in &heads[name] {
            let allowed = procedure_may_commit(&pinned, &from, h);
            let before = ref_of(h, name);
            let planned_ref = ref_of(&planned_md, name);
            match (&pinned, &allowed) {
                (Pinned::SetCurrent { target }, Ok(())) => assert!(
                    before == planned_ref || before == Some((B, *target)),
                    "{pinned:?} over {before:?}"
                ),
                (Pinned::Rollback { target }, Ok(())) if before != planned_ref => {
                    assert!(super::is_current_ancestor(h, *target), "{pinned:?}")
                }
                (Pinned::FastForward { target, .. }, Ok(())) if before != planned_ref => {
                    let (kind, id) = before.expect("a branch to move forward");
                    assert_eq!(kind, B);
                    assert!(id == *target || super::is_ancestor_of(h, id, *target));
                }
                (_, Err(e)) => assert_eq!(e.kind(), ErrorKind::LimitExceeded),
                _ => {}
            }
            let Ok(()) = allowed else { continue };
            let Ok(decided) = decide_pinned(h, &pinned, NOW) else {
                continue;
            };
            let written = match decided {
                Decision::Edit(c) => c.metadata,
                Decision::Reapply(_) => None,
            };
            if let Some(w) = written {
                for r in h.refs().iter().filter(|r| r.name != name) {
                    assert_eq!(
                        w.ref_named(&r.name),
                        Some(r),
                        "{pinned:?} touched {}",
                        r.name
                    );
                }
            }
        }
    }
}

/// Exhaustive: a ref statement the rules let through never overwrites another writer's move of
/// the ref it names (a `REPLACE` or `DROP BRANCH`), and never touches another ref.
#[test]
fn every_ref_statement_against_every_move() {
    let from = planned();
    let planned_md = planned_md();
    let heads: HashMap<&str, Vec<TableMetadata>> = NAMES
        .iter()
        .map(|name| (*name, heads_moving(name)))
        .collect();
    for change in changes() {
        let name = match &change {
            TableChange::PutRef { name, .. } | TableChange::DropRef { name, .. } => name.clone(),
            _ => "dev".into(),
        };
        for h in &heads[name.as_str()] {
            let allowed = change_may_commit(&change, &from, h);
            let before = ref_of(h, &name);
            let strict = matches!(
                change,
                TableChange::PutRef {
                    mode: CreateMode::Replace | CreateMode::CreateOrReplace,
                    ..
                } | TableChange::DropRef {
                    kind: RefType::Branch,
                    ..
                }
            );
            let left_alone = match &change {
                TableChange::DropRef { .. } => before.is_none(),
                TableChange::PutRef { kind, .. } => {
                    let kind = if *kind == RefType::Branch { B } else { T };
                    before == Some((kind, 3))
                }
                _ => false,
            };
            if strict && allowed.is_ok() && !left_alone {
                assert_eq!(before, ref_of(&planned_md, &name), "{change:?}");
            }
            if let Err(e) = &allowed {
                assert_eq!(e.kind(), ErrorKind::LimitExceeded);
                continue;
            }
            let Ok(c) = decide_change(h, &change_on_new_head(&change), NOW) else {
                continue;
            };
            if let Some(w) = c.metadata {
                for r in h.refs().iter().filter(|r| r.name != name) {
                    assert_eq!(w.ref_named(&r.name), Some(r), "{change:?}");
                }
            }
        }
    }
}

/// A random history: snapshot `i` (1-based) has parent `parents[i - 1]` when that is below `i`.
fn history(parents: &[usize], main: i64, dev: i64) -> TableMetadata {
    let snaps: Vec<Value> = parents
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let id = i as i64 + 1;
            let parent = (*p as i64 >= 1 && (*p as i64) < id).then_some(*p as i64);
            snap(id, parent, json!({"operation": "append"}))
        })
        .collect();
    let doc = json!({
        "format-version": 2,
        "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
        "location": "s3://b/t", "last-sequence-number": parents.len(), "last-updated-ms": 1,
        "last-column-id": 1, "current-schema-id": 0,
        "schemas": [{"type": "struct", "schema-id": 0, "fields": []}],
        "default-spec-id": 0, "partition-specs": [{"spec-id": 0, "fields": []}],
        "current-snapshot-id": main, "snapshots": snaps,
        "refs": {"main": {"snapshot-id": main, "type": "branch"},
                 "dev": {"snapshot-id": dev, "type": "branch"}},
    });
    TableMetadata::parse(doc.to_string().as_bytes(), "v1.metadata.json").unwrap()
}

proptest! {
    /// On random histories: a rollback may commit exactly when main did not move or its target
    /// is an ancestor of main's new head; a fast-forward of dev exactly when dev did not move or
    /// its new head is the target or an ancestor of it.
    #[test]
    fn ancestry_rules_on_random_histories(
        parents in prop::collection::vec(0usize..12, 12),
        planned_main in 1i64..=12, new_main in 1i64..=12,
        planned_dev in 1i64..=12, new_dev in 1i64..=12, target in 1i64..=12,
    ) {
        let from = PlannedFrom::of(&history(&parents, planned_main, planned_dev));
        let h = history(&parents, new_main, new_dev);
        let rollback = procedure_may_commit(&Pinned::Rollback { target }, &from, &h);
        let expected = planned_main == new_main || super::is_current_ancestor(&h, target);
        prop_assert_eq!(rollback.is_ok(), expected);
        let forward = procedure_may_commit(&ff("dev", target), &from, &h);
        let expected = planned_dev == new_dev || super::is_ancestor_of(&h, new_dev, target);
        prop_assert_eq!(forward.is_ok(), expected);
        let set = procedure_may_commit(&Pinned::SetCurrent { target }, &from, &h);
        prop_assert_eq!(set.is_ok(), planned_main == new_main || new_main == target);
    }
}
