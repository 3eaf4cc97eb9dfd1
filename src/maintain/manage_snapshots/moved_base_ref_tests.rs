//! Unit tests of [`super::super`] for the branch, tag and property statements: every move
//! another writer can make to the named ref between a plan and its commit, on the history of
//! `moved_base_tests.rs`.

use super::*;

pub(super) fn put(kind: RefType, mode: CreateMode, name: &str, snapshot_id: i64) -> TableChange {
    TableChange::PutRef {
        kind,
        mode,
        name: name.into(),
        snapshot_id: Some(snapshot_id),
        retention: RefRetention::default(),
    }
}

pub(super) fn drop_ref(kind: RefType, name: &str) -> TableChange {
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
