//! Properties of the expiry decision over random histories: random snapshot trees (with the odd
//! missing parent or cycle), random timestamps around the policy ages, random branches and tags
//! with random retention fields, a random (possibly missing) current snapshot, a random fuse.

use super::*;
use proptest::prelude::*;
use rand::{SeedableRng, rngs::SmallRng, seq::SliceRandom};
use std::collections::HashMap;

#[derive(Debug, Clone)]
struct History {
    snapshots: Vec<Snapshot>,
    refs: Vec<SnapshotRef>,
    current: Option<i64>,
    policy: TablePolicy,
    expire_before: Option<i64>,
}

const MISSING_ID: i64 = 99;
const REF_NAMES: [&str; 5] = ["main", "b1", "b2", "t1", "t2"];

fn id_of(index: usize, n: usize) -> i64 {
    if index >= n {
        MISSING_ID
    } else {
        100 + 3 * index as i64
    }
}

type RefSpec = (usize, bool, usize, Option<i32>, Option<i64>, Option<i64>);

fn ref_spec(n: usize) -> impl Strategy<Value = RefSpec> {
    (
        0..REF_NAMES.len(),
        any::<bool>(),
        0..=n,
        prop::option::of(0i32..4),
        prop::option::of(0i64..=50),
        prop::option::of(0i64..=60),
    )
}

fn history() -> impl Strategy<Value = History> {
    (1usize..12)
        .prop_flat_map(|n| {
            (
                prop::collection::vec(prop::option::weighted(0.8, 0..=n), n),
                prop::collection::vec(0i64..=60, n),
                prop::collection::vec(ref_spec(n), 0..5),
                prop::option::of(0..=n),
                (1i32..4, 0i64..=50, prop_oneof![Just(i64::MAX), 0i64..=50]),
                prop::option::of(0i64..=70),
            )
        })
        .prop_map(|(parents, ages, ref_specs, current, policy, fuse)| {
            let n = ages.len();
            let snapshots = (0..n)
                .map(|i| {
                    let parent = parents.get(i).copied().flatten().map(|p| id_of(p, n));
                    snap(id_of(i, n), parent, NOW - ages[i])
                })
                .collect();
            let mut refs: Vec<SnapshotRef> = Vec::new();
            for (name, is_branch, target, min_keep, max_age, max_ref_age) in ref_specs {
                if refs.iter().any(|r| r.name == REF_NAMES[name]) {
                    continue;
                }
                let kind = if is_branch {
                    RefKind::Branch
                } else {
                    RefKind::Tag
                };
                let mut r = reference(REF_NAMES[name], kind, id_of(target, n));
                r.min_snapshots_to_keep = min_keep;
                r.max_snapshot_age_ms = max_age;
                r.max_ref_age_ms = max_ref_age;
                refs.push(r);
            }
            History {
                snapshots,
                refs,
                current: current.map(|c| id_of(c, n)),
                policy: TablePolicy {
                    min_snapshots_to_keep: policy.0,
                    max_snapshot_age_ms: policy.1,
                    max_ref_age_ms: policy.2,
                },
                expire_before: fuse.map(|f| NOW - f),
            }
        })
}

fn decide_with(h: &History, policy: TablePolicy, mode: &ExpiryMode) -> Result<ExpiryDecision> {
    decide_expiry(&ExpiryInput {
        snapshots: &h.snapshots,
        refs: &h.refs,
        current_snapshot_id: h.current,
        policy,
        now_ms: NOW,
        expire_before_ms: h.expire_before,
        mode,
    })
}

fn decide(h: &History) -> ExpiryDecision {
    decide_with(h, h.policy, &ExpiryMode::Policy).expect("policy mode never fails on unique ids")
}

fn all_ids(h: &History) -> BTreeSet<i64> {
    h.snapshots.iter().map(|s| s.snapshot_id).collect()
}

fn surviving_heads(d: &ExpiryDecision) -> Vec<i64> {
    d.refs
        .iter()
        .filter(|r| r.fate == RefFate::Kept)
        .map(|r| r.snapshot_id)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn current_and_surviving_ref_heads_are_never_expired(h in history()) {
        let d = decide(&h);
        for id in surviving_heads(&d).into_iter().chain(h.current) {
            prop_assert!(!d.expired.contains(&id), "{id} expired: {d:?}");
        }
    }

    #[test]
    fn retained_and_expired_partition_the_snapshots(h in history()) {
        let d = decide(&h);
        prop_assert!(d.retained.is_disjoint(&d.expired));
        let union: BTreeSet<i64> = d.retained.union(&d.expired).copied().collect();
        prop_assert_eq!(union, all_ids(&h));
        prop_assert_eq!(d.snapshots.len(), h.snapshots.len());
        for v in &d.snapshots {
            let kept = matches!(&v.fate, SnapshotFate::Kept(r) if !r.is_empty());
            prop_assert_eq!(kept, d.retained.contains(&v.snapshot_id));
        }
    }

    #[test]
    fn removed_refs_are_not_survivors_and_main_stays(h in history()) {
        let d = decide(&h);
        prop_assert_eq!(d.refs.len(), h.refs.len());
        let removed: BTreeSet<&str> = d.removed_refs().map(|r| r.name.as_str()).collect();
        let kept: BTreeSet<&str> = d.refs.iter()
            .filter(|r| r.fate == RefFate::Kept).map(|r| r.name.as_str()).collect();
        prop_assert!(removed.is_disjoint(&kept));
        prop_assert!(!removed.contains(MAIN_BRANCH));
        prop_assert_eq!(removed.len() + kept.len(), h.refs.len());
    }

    #[test]
    fn the_fuse_always_protects(h in history()) {
        let d = decide(&h);
        if let Some(before) = h.expire_before {
            for s in h.snapshots.iter().filter(|s| s.timestamp_ms >= before) {
                prop_assert!(d.retained.contains(&s.snapshot_id));
            }
        }
    }

    #[test]
    fn a_larger_retain_last_never_expires_more(h in history(), extra in 0i32..5) {
        let base = decide(&h);
        let mut policy = h.policy;
        policy.min_snapshots_to_keep += extra;
        let more = decide_with(&h, policy, &ExpiryMode::Policy).expect("decision");
        prop_assert!(more.retained.is_superset(&base.retained));
    }

    #[test]
    fn a_larger_retention_period_never_expires_more(h in history(), extra in 0i64..100) {
        let base = decide(&h);
        let mut policy = h.policy;
        policy.max_snapshot_age_ms += extra;
        let more = decide_with(&h, policy, &ExpiryMode::Policy).expect("decision");
        prop_assert!(more.retained.is_superset(&base.retained));
    }

    #[test]
    fn the_decision_does_not_depend_on_order(h in history(), seed in any::<u64>()) {
        let base = decide(&h);
        let mut shuffled = h.clone();
        let mut rng = SmallRng::seed_from_u64(seed);
        shuffled.snapshots.shuffle(&mut rng);
        shuffled.refs.shuffle(&mut rng);
        let other = decide(&shuffled);
        prop_assert_eq!(&base.retained, &other.retained);
        prop_assert_eq!(&base.expired, &other.expired);
        let fates = |d: &ExpiryDecision| -> HashMap<i64, SnapshotFate> {
            d.snapshots.iter().map(|v| (v.snapshot_id, v.fate.clone())).collect()
        };
        prop_assert_eq!(fates(&base), fates(&other));
        let ref_fates = |d: &ExpiryDecision| -> HashMap<String, RefFate> {
            d.refs.iter().map(|r| (r.name.clone(), r.fate)).collect()
        };
        prop_assert_eq!(ref_fates(&base), ref_fates(&other));
    }

    #[test]
    fn id_mode_expires_the_named_minus_the_fuse(h in history(), picks in prop::collection::vec(0usize..12, 0..6)) {
        let protected: BTreeSet<i64> = h.refs.iter().map(|r| r.snapshot_id).chain(h.current).collect();
        let candidates: Vec<i64> = all_ids(&h).difference(&protected).copied().collect();
        if candidates.is_empty() && !picks.is_empty() {
            return Ok(()); // nothing expirable to name
        }
        let named: Vec<i64> = picks.iter().map(|p| candidates[p % candidates.len()]).collect();
        let d = decide_with(&h, h.policy, &ExpiryMode::Ids(named.clone())).expect("valid ids");
        let expected: BTreeSet<i64> = h.snapshots.iter()
            .filter(|s| named.contains(&s.snapshot_id))
            .filter(|s| h.expire_before.is_none_or(|b| s.timestamp_ms < b))
            .map(|s| s.snapshot_id)
            .collect();
        prop_assert_eq!(&d.expired, &expected);
        prop_assert!(d.removed_refs().next().is_none());
    }

    #[test]
    fn id_mode_refuses_any_protected_existing_id(h in history(), pick in 0usize..8) {
        let existing = all_ids(&h);
        let protected: Vec<i64> = h.refs.iter().map(|r| r.snapshot_id).chain(h.current)
            .filter(|id| existing.contains(id)).collect();
        if protected.is_empty() {
            return Ok(()); // nothing protected to name
        }
        let id = protected[pick % protected.len()];
        let err = decide_with(&h, h.policy, &ExpiryMode::Ids(vec![MISSING_ID, id])).unwrap_err();
        prop_assert!(err.message().contains(&format!("snapshot {id} because")), "{}", err.message());
    }
}
