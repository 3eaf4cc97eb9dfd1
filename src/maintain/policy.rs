//! Which snapshots and refs `expire_snapshots` lets go, and why (SPEC §3 "Policy mode", "Id mode").
//!
//! Pure: snapshots, refs, the current snapshot id, the effective [`TablePolicy`], `now` and the
//! `expire_before` fuse in; an [`ExpiryDecision`] out, with a reason for every verdict.
//!
//! **Policy mode** (Iceberg spec "Snapshot Retention Policy"; Java `RemoveSnapshots`):
//! 1. Refs: `main` is never removed (a `main` whose snapshot is missing stays and retains nothing).
//!    A non-main ref whose snapshot is missing is removed ([`RefRemoval::Dangling`]). A non-main
//!    ref whose head is older than its max ref age (the ref's `max-ref-age-ms`, else the table's),
//!    `now - ts > max` strictly, is removed ([`RefRemoval::AgedOut`]).
//! 2. Each remaining branch: walk head → `parent-snapshot-id`; keep while `kept < min_keep` or
//!    `now - ts <= max_age` (the ref's own fields win); stop at the first snapshot failing both,
//!    at a missing parent, or at a cycle (metadata is outside data).
//!    As ClickHouse does, when no `main` branch was walked (no `main` ref, or it is dangling), the
//!    current snapshot's ancestry is walked with the table policy as an implicit `main`.
//! 3. Each remaining tag keeps exactly its snapshot.
//! 4. A snapshot reachable from no remaining branch head (nor the implicit `main`) and no tag —
//!    staged, rolled back, or only on a removed ref — is kept while `now - ts <= table max age`
//!    (Java's unreferenced-snapshot rule; ClickHouse expires these at once).
//! 5. The current snapshot and every remaining ref head are always kept.
//! 6. The fuse: `timestamp-ms >= expire_before` is kept, in both modes.
//! 7. Everything else expires: [`ExpireReason::Aged`] when on a branch's ancestry beyond where its
//!    walk stopped, [`ExpireReason::UnreferencedAged`] otherwise.
//!
//! **Id mode**: no policy, no ref removal; exactly the named snapshots expire, minus the fuse.
//! Errors (`BAD_ARGUMENTS`), in ClickHouse's order — first every named id is checked against the
//! current snapshot and the ref heads, then every id for existence; within each pass the first id
//! in the order given wins. Duplicated ids are fine; `[]` expires nothing.
//!
//! Ages are computed in 128 bits, so no timestamp from metadata can overflow them. Duplicate
//! snapshot ids or ref names are `INCORRECT_DATA`: the decision would be ambiguous.

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::error::{Error, Result};
use crate::iceberg::spec::{MAIN_BRANCH, RefKind, Snapshot, SnapshotId, SnapshotRef};

pub use super::retention::TablePolicy;

/// How the snapshots to expire are chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExpiryMode {
    /// The retention policy decides.
    Policy,
    /// `snapshot_ids = [...]`: exactly these (minus the fuse).
    Ids(Vec<SnapshotId>),
}

/// Everything the decision looks at.
#[derive(Debug, Clone, Copy)]
pub struct ExpiryInput<'a> {
    pub snapshots: &'a [Snapshot],
    pub refs: &'a [SnapshotRef],
    pub current_snapshot_id: Option<SnapshotId>,
    /// The effective table policy ([`super::retention::effective_policy`]).
    pub policy: TablePolicy,
    pub now_ms: i64,
    /// The fuse: snapshots with `timestamp_ms >= expire_before_ms` are kept.
    pub expire_before_ms: Option<i64>,
    pub mode: &'a ExpiryMode,
}

/// Why a snapshot is kept. A snapshot may have several.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KeepReason {
    /// It is the table's current snapshot.
    Current,
    /// It is the head of this remaining ref.
    RefHead(String),
    /// Within the first `min-snapshots-to-keep` of this branch's walk.
    BranchMinKeep(String),
    /// On this branch's walk and not older than its max snapshot age.
    BranchYoung(String),
    /// The snapshot of this remaining tag.
    Tag(String),
    /// On no remaining branch's ancestry and no tag, but not older than the table max age.
    UnreferencedYoung,
    /// `timestamp_ms >= expire_before`.
    ProtectedByExpireBefore,
    /// Id mode: not in `snapshot_ids`.
    NotNamed,
}

/// Why a snapshot expires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExpireReason {
    /// On a remaining branch's ancestry, past where the branch's retention stopped.
    Aged,
    /// On no remaining branch's ancestry and no tag, and older than the table max age.
    UnreferencedAged,
    /// Id mode: named in `snapshot_ids`.
    NamedInIds,
}

/// The verdict on one snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapshotFate {
    /// Kept, for these reasons (sorted, at least one).
    Kept(Vec<KeepReason>),
    Expired(ExpireReason),
}

/// One snapshot and its verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotVerdict {
    pub snapshot_id: SnapshotId,
    pub timestamp_ms: i64,
    pub fate: SnapshotFate,
}

/// Why a ref is removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RefRemoval {
    /// Its head is older than its max ref age: `age_ms > max_ref_age_ms`.
    AgedOut { age_ms: i64, max_ref_age_ms: i64 },
    /// Its snapshot does not exist.
    Dangling,
}

/// The verdict on one ref.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RefFate {
    Kept,
    Removed(RefRemoval),
}

/// One ref and its verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefVerdict {
    pub name: String,
    pub kind: RefKind,
    pub snapshot_id: SnapshotId,
    pub fate: RefFate,
}

/// What expiry decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpiryDecision {
    /// Every snapshot, in the order given.
    pub snapshots: Vec<SnapshotVerdict>,
    /// Every ref, in the order given.
    pub refs: Vec<RefVerdict>,
    pub retained: BTreeSet<SnapshotId>,
    pub expired: BTreeSet<SnapshotId>,
}

impl ExpiryDecision {
    /// Nothing expires and no ref is removed: nothing is to be written.
    pub fn is_noop(&self) -> bool {
        self.expired.is_empty() && self.removed_refs().next().is_none()
    }

    /// The refs removed, in the order given.
    pub fn removed_refs(&self) -> impl Iterator<Item = &RefVerdict> {
        self.refs
            .iter()
            .filter(|r| matches!(r.fate, RefFate::Removed(_)))
    }

    /// The verdict on snapshot `id`.
    pub fn verdict(&self, id: SnapshotId) -> Option<&SnapshotVerdict> {
        self.snapshots.iter().find(|v| v.snapshot_id == id)
    }
}

/// Decide which snapshots and refs expiry lets go. Errors only on duplicate ids/names
/// (`INCORRECT_DATA`) and, in id mode, on protected or missing ids (`BAD_ARGUMENTS`).
pub fn decide_expiry(input: &ExpiryInput<'_>) -> Result<ExpiryDecision> {
    let graph = index_snapshots(input.snapshots)?;
    check_unique_ref_names(input.refs)?;
    let (reasons, refs, reachable) = match input.mode {
        ExpiryMode::Policy => policy_mode(input, &graph),
        ExpiryMode::Ids(ids) => (id_mode(input, &graph, ids)?, kept_refs(input.refs), None),
    };
    Ok(assemble(input, reasons, refs, reachable.as_ref()))
}

type Graph<'a> = HashMap<SnapshotId, &'a Snapshot>;
type Reasons = HashMap<SnapshotId, BTreeSet<KeepReason>>;

fn index_snapshots(snapshots: &[Snapshot]) -> Result<Graph<'_>> {
    let mut graph = HashMap::with_capacity(snapshots.len());
    for s in snapshots {
        if graph.insert(s.snapshot_id, s).is_some() {
            return Err(Error::incorrect_data(format!(
                "snapshot id {} appears more than once in 'snapshots'",
                s.snapshot_id
            )));
        }
    }
    Ok(graph)
}

fn check_unique_ref_names(refs: &[SnapshotRef]) -> Result<()> {
    let mut seen = HashSet::with_capacity(refs.len());
    for r in refs {
        if !seen.insert(r.name.as_str()) {
            return Err(Error::incorrect_data(format!(
                "ref '{}' appears more than once in 'refs'",
                r.name
            )));
        }
    }
    Ok(())
}

/// `now - ts`, exactly.
fn age(now_ms: i64, timestamp_ms: i64) -> i128 {
    i128::from(now_ms) - i128::from(timestamp_ms)
}

fn add(reasons: &mut Reasons, id: SnapshotId, reason: KeepReason) {
    reasons.entry(id).or_default().insert(reason);
}

fn policy_mode(
    input: &ExpiryInput<'_>,
    graph: &Graph<'_>,
) -> (Reasons, Vec<RefVerdict>, Option<HashSet<SnapshotId>>) {
    let refs: Vec<RefVerdict> = input
        .refs
        .iter()
        .map(|r| judge_ref(r, graph, &input.policy, input.now_ms))
        .collect();
    let mut reasons = Reasons::new();
    let mut reachable = HashSet::new();
    let mut tagged = HashSet::new();
    let mut main_walked = false;
    let surviving = input
        .refs
        .iter()
        .zip(&refs)
        .filter(|(_, v)| v.fate == RefFate::Kept)
        .map(|(r, _)| r);
    for r in surviving {
        if !graph.contains_key(&r.snapshot_id) {
            continue; // only `main` survives dangling; it retains nothing
        }
        add(
            &mut reasons,
            r.snapshot_id,
            KeepReason::RefHead(r.name.clone()),
        );
        match r.kind {
            RefKind::Branch => {
                let walk = BranchWalk {
                    name: &r.name,
                    min_keep: r
                        .min_snapshots_to_keep
                        .unwrap_or(input.policy.min_snapshots_to_keep),
                    max_age_ms: r
                        .max_snapshot_age_ms
                        .unwrap_or(input.policy.max_snapshot_age_ms),
                };
                walk.run(
                    graph,
                    r.snapshot_id,
                    input.now_ms,
                    &mut reasons,
                    &mut reachable,
                );
                main_walked |= r.name == MAIN_BRANCH;
            }
            RefKind::Tag => {
                add(&mut reasons, r.snapshot_id, KeepReason::Tag(r.name.clone()));
                tagged.insert(r.snapshot_id);
            }
        }
    }
    if let Some(current) = input.current_snapshot_id.filter(|_| !main_walked) {
        let walk = BranchWalk {
            name: MAIN_BRANCH,
            min_keep: input.policy.min_snapshots_to_keep,
            max_age_ms: input.policy.max_snapshot_age_ms,
        };
        walk.run(graph, current, input.now_ms, &mut reasons, &mut reachable);
    }
    for s in input.snapshots {
        let unreferenced = !reachable.contains(&s.snapshot_id) && !tagged.contains(&s.snapshot_id);
        let young =
            age(input.now_ms, s.timestamp_ms) <= i128::from(input.policy.max_snapshot_age_ms);
        if unreferenced && young {
            add(&mut reasons, s.snapshot_id, KeepReason::UnreferencedYoung);
        }
    }
    add_current(input, graph, &mut reasons);
    (reasons, refs, Some(reachable))
}

fn judge_ref(r: &SnapshotRef, graph: &Graph<'_>, policy: &TablePolicy, now_ms: i64) -> RefVerdict {
    let fate = if r.name == MAIN_BRANCH {
        RefFate::Kept
    } else {
        match graph.get(&r.snapshot_id) {
            None => RefFate::Removed(RefRemoval::Dangling),
            Some(head) => {
                let max_ref_age_ms = r.max_ref_age_ms.unwrap_or(policy.max_ref_age_ms);
                let age_ms = age(now_ms, head.timestamp_ms);
                if age_ms > i128::from(max_ref_age_ms) {
                    let age_ms = i64::try_from(age_ms).unwrap_or(i64::MAX);
                    RefFate::Removed(RefRemoval::AgedOut {
                        age_ms,
                        max_ref_age_ms,
                    })
                } else {
                    RefFate::Kept
                }
            }
        }
    };
    RefVerdict {
        name: r.name.clone(),
        kind: r.kind,
        snapshot_id: r.snapshot_id,
        fate,
    }
}

/// One branch's retention walk (rule 2).
struct BranchWalk<'n> {
    name: &'n str,
    min_keep: i32,
    max_age_ms: i64,
}

impl BranchWalk<'_> {
    /// Walk from `head` through parents, adding keep reasons while the branch retains, and marking
    /// every snapshot reached (to the root, a missing parent, or a cycle) in `reachable`.
    fn run(
        &self,
        graph: &Graph<'_>,
        head: SnapshotId,
        now_ms: i64,
        reasons: &mut Reasons,
        reachable: &mut HashSet<SnapshotId>,
    ) {
        let mut seen = HashSet::new();
        let mut kept: i64 = 0;
        let mut retaining = true;
        let mut cursor = Some(head);
        while let Some(id) = cursor {
            let Some(snapshot) = graph.get(&id) else {
                break;
            };
            if !seen.insert(id) {
                break; // a cycle
            }
            let newly_reached = reachable.insert(id);
            if retaining {
                let within_min_keep = kept < i64::from(self.min_keep);
                let young = age(now_ms, snapshot.timestamp_ms) <= i128::from(self.max_age_ms);
                if within_min_keep {
                    add(
                        reasons,
                        id,
                        KeepReason::BranchMinKeep(self.name.to_string()),
                    );
                }
                if young {
                    add(reasons, id, KeepReason::BranchYoung(self.name.to_string()));
                }
                if within_min_keep || young {
                    kept += 1;
                } else {
                    retaining = false;
                }
            }
            if !retaining && !newly_reached {
                break; // an earlier walk already marked the rest of this ancestry
            }
            cursor = snapshot.parent_snapshot_id;
        }
    }
}

fn add_current(input: &ExpiryInput<'_>, graph: &Graph<'_>, reasons: &mut Reasons) {
    if let Some(current) = input.current_snapshot_id
        && graph.contains_key(&current)
    {
        add(reasons, current, KeepReason::Current);
    }
}

fn kept_refs(refs: &[SnapshotRef]) -> Vec<RefVerdict> {
    refs.iter()
        .map(|r| RefVerdict {
            name: r.name.clone(),
            kind: r.kind,
            snapshot_id: r.snapshot_id,
            fate: RefFate::Kept,
        })
        .collect()
}

fn id_mode(input: &ExpiryInput<'_>, graph: &Graph<'_>, ids: &[SnapshotId]) -> Result<Reasons> {
    let protected: HashSet<SnapshotId> = input
        .refs
        .iter()
        .map(|r| r.snapshot_id)
        .chain(input.current_snapshot_id)
        .collect();
    if let Some(id) = ids
        .iter()
        .find(|id| graph.contains_key(id) && protected.contains(id))
    {
        return Err(Error::bad_arguments(format!(
            "expire_snapshots cannot expire snapshot {id} because it is referenced by current snapshot, branch, or tag"
        )));
    }
    if let Some(id) = ids.iter().find(|id| !graph.contains_key(id)) {
        return Err(Error::bad_arguments(format!(
            "expire_snapshots snapshot id {id} does not exist"
        )));
    }
    let named: HashSet<SnapshotId> = ids.iter().copied().collect();
    let mut reasons = Reasons::new();
    for r in input.refs {
        if graph.contains_key(&r.snapshot_id) {
            add(
                &mut reasons,
                r.snapshot_id,
                KeepReason::RefHead(r.name.clone()),
            );
        }
    }
    add_current(input, graph, &mut reasons);
    for s in input.snapshots {
        if !named.contains(&s.snapshot_id) {
            add(&mut reasons, s.snapshot_id, KeepReason::NotNamed);
        }
    }
    Ok(reasons)
}

/// Apply the fuse and turn the keep reasons into verdicts and the two id sets.
fn assemble(
    input: &ExpiryInput<'_>,
    mut reasons: Reasons,
    refs: Vec<RefVerdict>,
    reachable: Option<&HashSet<SnapshotId>>,
) -> ExpiryDecision {
    let mut decision = ExpiryDecision {
        snapshots: Vec::with_capacity(input.snapshots.len()),
        refs,
        retained: BTreeSet::new(),
        expired: BTreeSet::new(),
    };
    for s in input.snapshots {
        let id = s.snapshot_id;
        if let Some(before) = input.expire_before_ms
            && s.timestamp_ms >= before
        {
            add(&mut reasons, id, KeepReason::ProtectedByExpireBefore);
        }
        let fate = match reasons.remove(&id) {
            Some(kept) if !kept.is_empty() => {
                decision.retained.insert(id);
                SnapshotFate::Kept(kept.into_iter().collect())
            }
            _ => {
                decision.expired.insert(id);
                SnapshotFate::Expired(match reachable {
                    None => ExpireReason::NamedInIds,
                    Some(r) if r.contains(&id) => ExpireReason::Aged,
                    Some(_) => ExpireReason::UnreferencedAged,
                })
            }
        };
        decision.snapshots.push(SnapshotVerdict {
            snapshot_id: id,
            timestamp_ms: s.timestamp_ms,
            fate,
        });
    }
    decision
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
