//! Tests of [`super`]: one per rule and boundary, then properties over random histories.

use super::*;
use crate::error::ErrorKind;

const NOW: i64 = 10_000_000;
const DAY: i64 = 1_000;

fn snap(id: i64, parent: Option<i64>, ts: i64) -> Snapshot {
    Snapshot {
        snapshot_id: id,
        parent_snapshot_id: parent,
        sequence_number: id,
        timestamp_ms: ts,
        manifest_list: Some(format!("snap-{id}.avro")),
        manifests: vec![],
        summary: Default::default(),
        schema_id: None,
        first_row_id: None,
        added_rows: None,
    }
}

fn reference(name: &str, kind: RefKind, id: i64) -> SnapshotRef {
    SnapshotRef {
        name: name.into(),
        kind,
        snapshot_id: id,
        min_snapshots_to_keep: None,
        max_snapshot_age_ms: None,
        max_ref_age_ms: None,
    }
}

fn branch(name: &str, id: i64) -> SnapshotRef {
    reference(name, RefKind::Branch, id)
}

fn tag(name: &str, id: i64) -> SnapshotRef {
    reference(name, RefKind::Tag, id)
}

/// keep 1, max age 1 day, refs forever.
fn table_policy() -> TablePolicy {
    TablePolicy {
        min_snapshots_to_keep: 1,
        max_snapshot_age_ms: DAY,
        max_ref_age_ms: i64::MAX,
    }
}

struct Case {
    snapshots: Vec<Snapshot>,
    refs: Vec<SnapshotRef>,
    current: Option<i64>,
    policy: TablePolicy,
    expire_before: Option<i64>,
    mode: ExpiryMode,
}

impl Case {
    fn new(snapshots: Vec<Snapshot>, refs: Vec<SnapshotRef>, current: Option<i64>) -> Self {
        Case {
            snapshots,
            refs,
            current,
            policy: table_policy(),
            expire_before: None,
            mode: ExpiryMode::Policy,
        }
    }

    fn run(&self) -> Result<ExpiryDecision> {
        decide_expiry(&ExpiryInput {
            snapshots: &self.snapshots,
            refs: &self.refs,
            current_snapshot_id: self.current,
            policy: self.policy,
            now_ms: NOW,
            expire_before_ms: self.expire_before,
            mode: &self.mode,
        })
    }

    fn decide(&self) -> ExpiryDecision {
        self.run().expect("decision")
    }
}

fn ids(v: &[i64]) -> BTreeSet<i64> {
    v.iter().copied().collect()
}

fn fate(d: &ExpiryDecision, id: i64) -> &SnapshotFate {
    &d.verdict(id).expect("verdict").fate
}

fn kept_with(d: &ExpiryDecision, id: i64, reason: &KeepReason) -> bool {
    matches!(fate(d, id), SnapshotFate::Kept(r) if r.contains(reason))
}

fn ref_fate<'d>(d: &'d ExpiryDecision, name: &str) -> &'d RefFate {
    &d.refs.iter().find(|r| r.name == name).expect("ref").fate
}

/// A linear main history 1 ← 2 ← … ← n, snapshot i aged (n - i + 1) days + 1 ms.
fn old_chain(n: i64) -> Vec<Snapshot> {
    (1..=n)
        .map(|i| snap(i, (i > 1).then(|| i - 1), NOW - (n - i + 1) * DAY - 1))
        .collect()
}

#[test]
fn main_is_never_removed_even_when_old() {
    let mut case = Case::new(old_chain(3), vec![branch("main", 3)], Some(3));
    case.policy.max_ref_age_ms = 0;
    let d = case.decide();
    assert_eq!(ref_fate(&d, "main"), &RefFate::Kept);
    assert_eq!(d.retained, ids(&[3]));
    assert_eq!(d.expired, ids(&[1, 2]));
    assert_eq!(fate(&d, 1), &SnapshotFate::Expired(ExpireReason::Aged));
}

#[test]
fn dangling_non_main_ref_is_removed() {
    let case = Case::new(
        old_chain(2),
        vec![branch("main", 2), branch("b", 99), tag("t", 98)],
        Some(2),
    );
    let d = case.decide();
    assert_eq!(ref_fate(&d, "b"), &RefFate::Removed(RefRemoval::Dangling));
    assert_eq!(ref_fate(&d, "t"), &RefFate::Removed(RefRemoval::Dangling));
    assert_eq!(d.removed_refs().count(), 2);
    assert!(!d.is_noop());
}

#[test]
fn dangling_main_stays_and_the_current_ancestry_is_walked_instead() {
    let mut case = Case::new(old_chain(3), vec![branch("main", 99)], Some(3));
    case.policy.min_snapshots_to_keep = 2;
    let d = case.decide();
    assert_eq!(ref_fate(&d, "main"), &RefFate::Kept);
    assert!(kept_with(&d, 3, &KeepReason::Current));
    assert!(kept_with(&d, 2, &KeepReason::BranchMinKeep("main".into())));
    assert_eq!(d.expired, ids(&[1]));
}

#[test]
fn ref_age_exactly_max_is_kept_one_more_ms_is_removed() {
    let snapshots = vec![
        snap(1, None, NOW),
        snap(2, None, NOW - 500),
        snap(3, None, NOW - 501),
    ];
    let mut case = Case::new(
        snapshots,
        vec![branch("main", 1), branch("b2", 2), tag("t3", 3)],
        Some(1),
    );
    case.policy.max_ref_age_ms = 500;
    let d = case.decide();
    assert_eq!(ref_fate(&d, "b2"), &RefFate::Kept);
    assert_eq!(
        ref_fate(&d, "t3"),
        &RefFate::Removed(RefRemoval::AgedOut {
            age_ms: 501,
            max_ref_age_ms: 500
        })
    );
}

#[test]
fn a_refs_own_max_ref_age_wins() {
    let snapshots = vec![snap(1, None, NOW), snap(2, None, NOW - 100)];
    let mut short = tag("short", 2);
    short.max_ref_age_ms = Some(99);
    let mut long = tag("long", 2);
    long.max_ref_age_ms = Some(100);
    let mut case = Case::new(snapshots, vec![branch("main", 1), short, long], Some(1));
    case.policy.max_ref_age_ms = 0;
    let d = case.decide();
    assert!(matches!(
        ref_fate(&d, "short"),
        RefFate::Removed(RefRemoval::AgedOut { .. })
    ));
    assert_eq!(ref_fate(&d, "long"), &RefFate::Kept);
    assert!(kept_with(&d, 2, &KeepReason::Tag("long".into())));
}

#[test]
fn branch_keeps_min_snapshots_regardless_of_age() {
    let mut case = Case::new(old_chain(4), vec![branch("main", 4)], Some(4));
    case.policy.min_snapshots_to_keep = 3;
    let d = case.decide();
    assert_eq!(d.retained, ids(&[2, 3, 4]));
    assert!(kept_with(&d, 2, &KeepReason::BranchMinKeep("main".into())));
    assert_eq!(fate(&d, 1), &SnapshotFate::Expired(ExpireReason::Aged));
}

#[test]
fn branch_snapshot_age_exactly_max_is_kept_one_more_ms_expires() {
    let snapshots = vec![
        snap(1, None, NOW - DAY - 1),
        snap(2, Some(1), NOW - DAY),
        snap(3, Some(2), NOW),
    ];
    let d = Case::new(snapshots, vec![branch("main", 3)], Some(3)).decide();
    assert!(kept_with(&d, 2, &KeepReason::BranchYoung("main".into())));
    assert!(!kept_with(&d, 2, &KeepReason::BranchMinKeep("main".into())));
    assert_eq!(d.expired, ids(&[1]));
}

#[test]
fn walk_stops_at_the_first_snapshot_failing_both_even_if_older_ones_are_young() {
    // Clock skew: 1 is "young" but behind the old 2.
    let snapshots = vec![
        snap(1, None, NOW),
        snap(2, Some(1), NOW - 5 * DAY),
        snap(3, Some(2), NOW),
    ];
    let d = Case::new(snapshots, vec![branch("main", 3)], Some(3)).decide();
    assert_eq!(d.retained, ids(&[3]));
    assert_eq!(fate(&d, 1), &SnapshotFate::Expired(ExpireReason::Aged));
}

#[test]
fn a_branchs_own_retention_fields_win_for_that_branch() {
    // main: 1 ← 2 ← 3 (old); b: 1 ← 2 ← 4 ← 5 (old) with its own min keep 3.
    let mut snapshots = old_chain(3);
    snapshots.push(snap(4, Some(2), NOW - 10 * DAY));
    snapshots.push(snap(5, Some(4), NOW - 10 * DAY));
    let mut b = branch("b", 5);
    b.min_snapshots_to_keep = Some(3);
    let d = Case::new(snapshots, vec![branch("main", 3), b], Some(3)).decide();
    assert_eq!(d.retained, ids(&[2, 3, 4, 5]));
    assert!(kept_with(&d, 2, &KeepReason::BranchMinKeep("b".into())));

    // And its own max age.
    let snapshots = vec![
        snap(1, None, NOW - 50),
        snap(2, Some(1), NOW - 40),
        snap(3, None, NOW),
    ];
    let mut b = branch("b", 2);
    b.max_snapshot_age_ms = Some(50);
    let mut case = Case::new(snapshots, vec![branch("main", 3), b], Some(3));
    case.policy.max_snapshot_age_ms = 0;
    let d = case.decide();
    assert!(kept_with(&d, 1, &KeepReason::BranchYoung("b".into())));
}

#[test]
fn a_tag_keeps_exactly_its_snapshot_not_its_ancestors() {
    let snapshots = vec![
        snap(1, None, NOW - 9 * DAY),
        snap(2, Some(1), NOW - 8 * DAY),
        snap(3, None, NOW),
    ];
    let d = Case::new(snapshots, vec![branch("main", 3), tag("t", 2)], Some(3)).decide();
    assert!(kept_with(&d, 2, &KeepReason::Tag("t".into())));
    assert!(kept_with(&d, 2, &KeepReason::RefHead("t".into())));
    assert_eq!(
        fate(&d, 1),
        &SnapshotFate::Expired(ExpireReason::UnreferencedAged)
    );
}

#[test]
fn unreferenced_snapshots_are_kept_while_young_boundary_inclusive() {
    // 1 ← 2 (main). 3 and 4 staged off 1 (not on main's ancestry).
    let snapshots = vec![
        snap(1, None, NOW - 9 * DAY),
        snap(2, Some(1), NOW),
        snap(3, Some(1), NOW - DAY),
        snap(4, Some(1), NOW - DAY - 1),
    ];
    let d = Case::new(snapshots, vec![branch("main", 2)], Some(2)).decide();
    assert!(kept_with(&d, 3, &KeepReason::UnreferencedYoung));
    assert_eq!(
        fate(&d, 4),
        &SnapshotFate::Expired(ExpireReason::UnreferencedAged)
    );
    assert_eq!(fate(&d, 1), &SnapshotFate::Expired(ExpireReason::Aged));
}

#[test]
fn ancestors_beyond_the_walk_expire_by_branch_rules_not_the_unreferenced_rule() {
    // 1 is young but behind old 2 on main: it is on main's ancestry, so it expires (Aged).
    let snapshots = vec![
        snap(1, None, NOW - 10),
        snap(2, Some(1), NOW - 5 * DAY),
        snap(3, Some(2), NOW),
    ];
    let d = Case::new(snapshots, vec![branch("main", 3)], Some(3)).decide();
    assert!(!kept_with(&d, 1, &KeepReason::UnreferencedYoung));
    assert!(d.expired.contains(&1));
}

#[test]
fn snapshots_only_on_a_removed_ref_follow_the_unreferenced_rule() {
    // b: 1 ← 2 (head 2 aged out). 1 young, 2 old.
    let snapshots = vec![
        snap(1, None, NOW - 10),
        snap(2, Some(1), NOW - 5 * DAY),
        snap(3, None, NOW),
    ];
    let mut b = branch("b", 2);
    b.max_ref_age_ms = Some(DAY);
    let d = Case::new(snapshots, vec![branch("main", 3), b], Some(3)).decide();
    assert!(matches!(ref_fate(&d, "b"), RefFate::Removed(_)));
    assert!(kept_with(&d, 1, &KeepReason::UnreferencedYoung));
    assert_eq!(
        fate(&d, 2),
        &SnapshotFate::Expired(ExpireReason::UnreferencedAged)
    );
}

#[test]
fn the_current_snapshot_is_always_kept() {
    // Current is old and on no branch (main points elsewhere).
    let snapshots = vec![snap(1, None, NOW - 9 * DAY), snap(2, None, NOW)];
    let d = Case::new(snapshots, vec![branch("main", 2)], Some(1)).decide();
    assert!(kept_with(&d, 1, &KeepReason::Current));
    assert!(d.expired.is_empty());
}

#[test]
fn no_refs_walks_the_current_ancestry_as_main() {
    let mut case = Case::new(old_chain(4), vec![], Some(4));
    case.policy.min_snapshots_to_keep = 2;
    let d = case.decide();
    assert_eq!(d.retained, ids(&[3, 4]));
    assert_eq!(fate(&d, 1), &SnapshotFate::Expired(ExpireReason::Aged));
}

#[test]
fn a_main_that_is_a_tag_is_not_a_branch_walk() {
    // As ClickHouse: a `main` that is not a walked branch leaves the current ancestry to walk.
    let mut case = Case::new(old_chain(4), vec![tag("main", 2)], Some(4));
    case.policy.min_snapshots_to_keep = 2;
    case.policy.max_ref_age_ms = 0;
    let d = case.decide();
    assert_eq!(ref_fate(&d, "main"), &RefFate::Kept);
    assert!(kept_with(&d, 2, &KeepReason::Tag("main".into())));
    assert!(kept_with(&d, 3, &KeepReason::BranchMinKeep("main".into())));
    assert_eq!(d.retained, ids(&[2, 3, 4]));
    assert_eq!(fate(&d, 1), &SnapshotFate::Expired(ExpireReason::Aged));
}

#[test]
fn no_current_and_no_refs_leaves_only_the_unreferenced_rule() {
    let snapshots = vec![snap(1, None, NOW - 9 * DAY), snap(2, Some(1), NOW)];
    let d = Case::new(snapshots, vec![], None).decide();
    assert_eq!(d.retained, ids(&[2]));
    assert!(kept_with(&d, 2, &KeepReason::UnreferencedYoung));
}

#[test]
fn the_fuse_protects_at_and_after_expire_before() {
    let mut case = Case::new(old_chain(4), vec![branch("main", 4)], Some(4));
    let ts2 = case.snapshots[1].timestamp_ms;
    case.expire_before = Some(ts2);
    let d = case.decide();
    assert!(kept_with(&d, 2, &KeepReason::ProtectedByExpireBefore));
    assert!(kept_with(&d, 3, &KeepReason::ProtectedByExpireBefore));
    assert_eq!(d.expired, ids(&[1]));

    case.expire_before = Some(ts2 + 1);
    assert_eq!(case.decide().expired, ids(&[1, 2]));
}

#[test]
fn the_fuse_protects_in_id_mode() {
    let mut case = Case::new(old_chain(3), vec![branch("main", 3)], Some(3));
    case.mode = ExpiryMode::Ids(vec![1, 2]);
    case.expire_before = Some(case.snapshots[1].timestamp_ms);
    let d = case.decide();
    assert_eq!(d.expired, ids(&[1]));
    assert!(kept_with(&d, 2, &KeepReason::ProtectedByExpireBefore));
}

#[test]
fn a_parent_cycle_ends_the_walk() {
    let snapshots = vec![
        snap(1, Some(2), NOW - 9 * DAY),
        snap(2, Some(1), NOW - 9 * DAY),
        snap(3, Some(3), NOW),
    ];
    let mut case = Case::new(snapshots, vec![branch("main", 2)], Some(2));
    case.policy.min_snapshots_to_keep = 5;
    let d = case.decide();
    assert_eq!(d.retained, ids(&[1, 2, 3]));
    assert!(kept_with(&d, 1, &KeepReason::BranchMinKeep("main".into())));
}

#[test]
fn a_missing_parent_ends_the_walk() {
    let snapshots = vec![snap(2, Some(1), NOW - 9 * DAY), snap(3, Some(2), NOW)];
    let mut case = Case::new(snapshots, vec![branch("main", 3)], Some(3));
    case.policy.min_snapshots_to_keep = 5;
    assert_eq!(case.decide().retained, ids(&[2, 3]));
}

#[test]
fn nothing_to_expire_and_no_ref_removed_is_a_noop() {
    let snapshots = vec![snap(1, None, NOW - 10), snap(2, Some(1), NOW)];
    let d = Case::new(snapshots, vec![branch("main", 2)], Some(2)).decide();
    assert!(d.is_noop());
    assert!(d.expired.is_empty());

    // Removing only a ref is not a noop.
    let snapshots = vec![snap(1, None, NOW)];
    let d = Case::new(snapshots, vec![branch("main", 1), tag("gone", 7)], Some(1)).decide();
    assert!(d.expired.is_empty());
    assert!(!d.is_noop());
}

#[test]
fn id_mode_expires_exactly_the_named_snapshots_and_keeps_every_ref() {
    let mut old_tag = tag("t", 2);
    old_tag.max_ref_age_ms = Some(0);
    let mut case = Case::new(old_chain(4), vec![branch("main", 4), old_tag], Some(4));
    case.mode = ExpiryMode::Ids(vec![1, 3, 1]);
    let d = case.decide();
    assert_eq!(d.expired, ids(&[1, 3]));
    assert_eq!(
        fate(&d, 3),
        &SnapshotFate::Expired(ExpireReason::NamedInIds)
    );
    assert!(kept_with(&d, 2, &KeepReason::NotNamed));
    assert!(kept_with(&d, 2, &KeepReason::RefHead("t".into())));
    assert!(d.refs.iter().all(|r| r.fate == RefFate::Kept));

    case.mode = ExpiryMode::Ids(vec![]);
    let d = case.decide();
    assert!(d.expired.is_empty());
    assert!(d.is_noop());
}

fn id_error(case: &mut Case, named: Vec<i64>) -> Error {
    case.mode = ExpiryMode::Ids(named);
    let err = case.run().expect_err("an error");
    assert_eq!(err.kind(), ErrorKind::BadArguments);
    err
}

#[test]
fn id_mode_refuses_referenced_and_missing_ids_in_clickhouse_order() {
    let referenced = |id: i64| {
        format!(
            "expire_snapshots cannot expire snapshot {id} because it is referenced by current snapshot, branch, or tag"
        )
    };
    let missing = |id: i64| format!("expire_snapshots snapshot id {id} does not exist");
    let mut case = Case::new(
        old_chain(5),
        vec![branch("main", 5), branch("b", 3), tag("t", 2)],
        Some(4),
    );
    assert_eq!(id_error(&mut case, vec![1, 4]).message(), referenced(4));
    assert_eq!(id_error(&mut case, vec![5]).message(), referenced(5));
    assert_eq!(id_error(&mut case, vec![3]).message(), referenced(3));
    assert_eq!(id_error(&mut case, vec![2]).message(), referenced(2));
    assert_eq!(id_error(&mut case, vec![77, 78]).message(), missing(77));
    // A referenced id wins over a missing one given earlier (ClickHouse checks refs first).
    assert_eq!(id_error(&mut case, vec![77, 2]).message(), referenced(2));
    // Within a pass, the first id given wins.
    assert_eq!(id_error(&mut case, vec![3, 2]).message(), referenced(3));
}

#[test]
fn id_mode_treats_a_dangling_ref_id_as_missing() {
    let mut case = Case::new(old_chain(2), vec![branch("main", 2), tag("t", 9)], Some(2));
    assert_eq!(
        id_error(&mut case, vec![9]).message(),
        "expire_snapshots snapshot id 9 does not exist"
    );
}

#[test]
fn duplicate_snapshot_ids_or_ref_names_are_incorrect_data() {
    let case = Case::new(vec![snap(1, None, NOW), snap(1, None, NOW)], vec![], None);
    assert_eq!(case.run().unwrap_err().kind(), ErrorKind::IncorrectData);
    let case = Case::new(old_chain(1), vec![branch("b", 1), tag("b", 1)], Some(1));
    assert_eq!(case.run().unwrap_err().kind(), ErrorKind::IncorrectData);
}

#[test]
fn extreme_timestamps_do_not_overflow() {
    let snapshots = vec![
        snap(1, None, i64::MIN),
        snap(2, Some(1), i64::MAX),
        snap(3, Some(2), 0),
    ];
    let mut b = tag("t", 1);
    b.max_ref_age_ms = Some(0);
    let mut case = Case::new(snapshots, vec![branch("main", 3), b], Some(3));
    case.policy.max_snapshot_age_ms = i64::MAX;
    case.policy.max_ref_age_ms = i64::MAX;
    let d = case.decide();
    assert!(matches!(
        ref_fate(&d, "t"),
        RefFate::Removed(RefRemoval::AgedOut {
            age_ms: i64::MAX,
            max_ref_age_ms: 0
        })
    ));
    assert_eq!(d.retained.len() + d.expired.len(), 3);
}

#[test]
fn verdicts_follow_the_input_order() {
    let snapshots = vec![snap(3, None, NOW), snap(1, None, NOW), snap(2, None, NOW)];
    let d = Case::new(snapshots, vec![tag("z", 1), branch("main", 3)], Some(3)).decide();
    let order: Vec<i64> = d.snapshots.iter().map(|v| v.snapshot_id).collect();
    assert_eq!(order, vec![3, 1, 2]);
    let names: Vec<&str> = d.refs.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, vec!["z", "main"]);
}

#[path = "policy_props.rs"]
mod props;
