//! Unit tests of the branch, tag and property statements' decisions, on the hand-built history
//! of `tests.rs`.

use super::properties::{set_properties, unset_properties, validate_property};
use super::tests::{NOW, doc, head, md, md_of, msg, written};
use super::*;
use crate::iceberg::spec::RefKind;
use crate::plan::{CreateMode, RefRetention, RefType};
use serde_json::json;

pub(super) fn put(kind: RefType, mode: CreateMode, name: &str, at: Option<i64>) -> TableChange {
    TableChange::PutRef {
        kind,
        mode,
        name: name.into(),
        snapshot_id: at,
        retention: RefRetention::default(),
    }
}

pub(super) fn drop_ref(kind: RefType, name: &str, if_exists: bool) -> TableChange {
    TableChange::DropRef {
        kind,
        name: name.into(),
        if_exists,
    }
}

#[test]
fn create_branch_and_tag() {
    let m = md();
    let c = decide_change(
        &m,
        &put(RefType::Branch, CreateMode::Create, "b", None),
        NOW,
    )
    .unwrap();
    let r = written(&c).ref_named("b").unwrap().clone();
    assert_eq!((r.kind, r.snapshot_id), (RefKind::Branch, 4));
    let with = TableChange::PutRef {
        kind: RefType::Branch,
        mode: CreateMode::Create,
        name: "b".into(),
        snapshot_id: Some(2),
        retention: RefRetention {
            max_ref_age_ms: Some(1),
            min_snapshots_to_keep: Some(2),
            max_snapshot_age_ms: Some(3),
        },
    };
    let c = decide_change(&m, &with, NOW).unwrap();
    let r = written(&c).ref_named("b").unwrap().clone();
    assert_eq!(
        (
            r.snapshot_id,
            r.max_ref_age_ms,
            r.min_snapshots_to_keep,
            r.max_snapshot_age_ms
        ),
        (2, Some(1), Some(2), Some(3))
    );
    let c = decide_change(
        &m,
        &put(RefType::Tag, CreateMode::Create, "v2", Some(6)),
        NOW,
    )
    .unwrap();
    assert_eq!(written(&c).ref_named("v2").unwrap().kind, RefKind::Tag);
    assert_eq!(written(&c).current_snapshot_id(), Some(4));
}

#[test]
fn create_and_replace_errors_and_no_ops() {
    let m = md();
    let create = |kind, mode, name: &str, at| decide_change(&m, &put(kind, mode, name, at), NOW);
    assert_eq!(
        msg(create(RefType::Branch, CreateMode::Create, "audit", None)),
        "Ref audit already exists"
    );
    assert_eq!(
        msg(create(RefType::Tag, CreateMode::Create, "v1", None)),
        "Ref v1 already exists"
    );
    assert!(
        create(
            RefType::Branch,
            CreateMode::CreateIfNotExists,
            "audit",
            Some(1)
        )
        .unwrap()
        .metadata
        .is_none()
    );
    // IF NOT EXISTS of a name taken by the other kind changes nothing either (Spark).
    assert!(
        create(RefType::Tag, CreateMode::CreateIfNotExists, "audit", None)
            .unwrap()
            .metadata
            .is_none()
    );
    assert_eq!(
        msg(create(RefType::Branch, CreateMode::Replace, "x", None)),
        "Branch does not exist: x"
    );
    assert_eq!(
        msg(create(RefType::Tag, CreateMode::Replace, "x", None)),
        "Tag does not exist: x"
    );
    assert_eq!(
        msg(create(RefType::Branch, CreateMode::Replace, "v1", None)),
        "Ref v1 is a tag not a branch"
    );
    assert_eq!(
        msg(create(
            RefType::Tag,
            CreateMode::CreateOrReplace,
            "audit",
            None
        )),
        "Ref audit is a branch not a tag"
    );
    assert_eq!(
        msg(create(RefType::Tag, CreateMode::Create, "v9", Some(42))),
        "Cannot set v9 to unknown snapshot: 42"
    );
    // Replacing keeps the retention it had.
    let c = create(
        RefType::Branch,
        CreateMode::CreateOrReplace,
        "audit",
        Some(5),
    )
    .unwrap();
    let r = written(&c).ref_named("audit").unwrap().clone();
    assert_eq!((r.snapshot_id, r.min_snapshots_to_keep), (5, Some(3)));
    let c = create(RefType::Branch, CreateMode::CreateOrReplace, "new", Some(5)).unwrap();
    assert_eq!(head(written(&c), "new"), Some(5));
    // Replacing with what is there writes nothing.
    assert!(
        create(RefType::Branch, CreateMode::Replace, "audit", Some(6))
            .unwrap()
            .metadata
            .is_none()
    );
    // REPLACE BRANCH main moves the current snapshot.
    let c = create(RefType::Branch, CreateMode::Replace, "main", Some(2)).unwrap();
    assert_eq!(written(&c).current_snapshot_id(), Some(2));
    assert_eq!(
        written(&c).snapshot_log().last().map(|e| e.snapshot_id),
        Some(2)
    );
}

#[test]
fn a_tag_cannot_be_main() {
    let mut d = doc();
    d["current-snapshot-id"] = (-1).into();
    d["refs"] = json!({});
    let change = put(RefType::Tag, CreateMode::Create, "main", Some(1));
    assert_eq!(
        msg(decide_change(&md_of(&d), &change, NOW)),
        "Cannot set main to a tag, it must be a branch"
    );
}

#[test]
fn a_table_without_snapshots_needs_as_of() {
    let mut d = doc();
    d["current-snapshot-id"] = (-1).into();
    d["refs"] = json!({});
    let m = md_of(&d);
    let e = msg(decide_change(
        &m,
        &put(RefType::Tag, CreateMode::Create, "t", None),
        NOW,
    ));
    assert!(e.contains("main has no snapshot"), "{e}");
    assert!(
        decide_change(
            &m,
            &put(RefType::Tag, CreateMode::Create, "t", Some(1)),
            NOW
        )
        .is_ok()
    );
}

#[test]
fn drop_rules() {
    let m = md();
    let c = decide_change(&m, &drop_ref(RefType::Branch, "audit", false), NOW).unwrap();
    assert!(written(&c).ref_named("audit").is_none());
    assert_eq!(written(&c).snapshots().len(), 10);
    let c = decide_change(&m, &drop_ref(RefType::Tag, "v1", false), NOW).unwrap();
    assert!(written(&c).ref_named("v1").is_none());
    assert_eq!(
        msg(decide_change(
            &m,
            &drop_ref(RefType::Branch, "main", true),
            NOW
        )),
        "Cannot remove main branch"
    );
    assert_eq!(
        msg(decide_change(
            &m,
            &drop_ref(RefType::Branch, "x", false),
            NOW
        )),
        "Branch does not exist: x"
    );
    assert_eq!(
        msg(decide_change(&m, &drop_ref(RefType::Tag, "x", false), NOW)),
        "Tag does not exist: x"
    );
    assert!(
        decide_change(&m, &drop_ref(RefType::Tag, "x", true), NOW)
            .unwrap()
            .metadata
            .is_none()
    );
    assert_eq!(
        msg(decide_change(
            &m,
            &drop_ref(RefType::Branch, "v1", true),
            NOW
        )),
        "Ref v1 is a tag not a branch"
    );
    assert_eq!(
        msg(decide_change(
            &m,
            &drop_ref(RefType::Tag, "main", false),
            NOW
        )),
        "Ref main is a branch not a tag"
    );
}

#[test]
fn properties_are_validated_and_diffed() {
    let m = md();
    let set = |pairs: &[(&str, &str)]| {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        set_properties(&m, &pairs)
    };
    let c = set(&[
        ("history.expire.max-snapshot-age-ms", "259200000"),
        ("k", "v"),
    ])
    .unwrap();
    assert_eq!(written(&c).property("k"), Some("v"));
    assert_eq!(c.rows.len(), 2);
    assert!(set(&[("owner", "me")]).unwrap().metadata.is_none());
    for (key, bad) in [
        ("history.expire.max-snapshot-age-ms", "-1"),
        ("history.expire.min-snapshots-to-keep", "0"),
        ("history.expire.max-ref-age-ms", "12abc"),
        ("write.metadata.previous-versions-max", "-1"),
        ("commit.retry.num-retries", "-3"),
        ("commit.manifest.target-size-bytes", "big"),
        ("gc.enabled", "yes"),
        ("write.metadata.delete-after-commit.enabled", "1"),
    ] {
        let e = set(&[(key, bad)]).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::BadArguments);
        assert!(e.message().contains(key), "{key}: {}", e.message());
    }
    assert!(msg(set(&[("format-version", "3")])).contains("reserved"));
    assert!(validate_property("gc.enabled", "FALSE").is_ok());
    assert!(validate_property("commit.retry.num-retries", "0").is_ok());
    let c = unset_properties(&m, &["owner".into()], false).unwrap();
    assert_eq!(written(&c).property("owner"), None);
    assert!(msg(unset_properties(&m, &["nope".into()], false)).contains("non-existent"));
    assert!(
        unset_properties(&m, &["nope".into()], true)
            .unwrap()
            .metadata
            .is_none()
    );
}
