//! Which snapshots and refs `expire_snapshots` lets go, and why (policy mode and id mode).
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
//!    As ClickHouse does, when no `main` branch was walked (no `main` ref, a dangling one, or a
//!    `main` that is a tag), the current snapshot's ancestry is walked with the table policy as an
//!    implicit `main`. A ref's retention fields are used as given (the metadata reader validates
//!    them); a ref's head is kept whatever they say.
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

    /// The verdict on snapshot `id` (a linear search; for EXPLAIN and tests).
    pub fn verdict(&self, id: SnapshotId) -> Option<&SnapshotVerdict> {
        self.snapshots.iter().find(|v| v.snapshot_id == id)
    }
}

/// Decide which snapshots and refs expiry lets go. Errors only on duplicate ids/names
/// (`INCORRECT_DATA`) and, in id mode, on protected or missing ids (`BAD_ARGUMENTS`).
pub fn decide_expiry(input: &ExpiryInput<'_>) -> Result<ExpiryDecision> {
    let graph = Graph::new(input.snapshots)?;
    check_unique_ref_names(input.refs)?;
    let mut state = State::new(graph.len());
    let refs = match input.mode {
        ExpiryMode::Policy => policy_mode(input, &graph, &mut state),
        ExpiryMode::Ids(ids) => {
            id_mode(input, &graph, ids, &mut state)?;
            kept_refs(input.refs)
        }
    };
    let by_policy = matches!(input.mode, ExpiryMode::Policy);
    Ok(assemble(input, state, refs, by_policy))
}

/// The snapshots by dense index, with each parent resolved to an index once.
struct Graph<'a> {
    snapshots: &'a [Snapshot],
    index: HashMap<SnapshotId, usize>,
    parent: Vec<Option<usize>>,
}

impl<'a> Graph<'a> {
    fn new(snapshots: &'a [Snapshot]) -> Result<Self> {
        let mut index = HashMap::with_capacity(snapshots.len());
        for (i, s) in snapshots.iter().enumerate() {
            if index.insert(s.snapshot_id, i).is_some() {
                return Err(Error::incorrect_data(format!(
                    "snapshot id {} appears more than once in 'snapshots'",
                    s.snapshot_id
                )));
            }
        }
        let parent = snapshots
            .iter()
            .map(|s| s.parent_snapshot_id.and_then(|p| index.get(&p).copied()))
            .collect();
        Ok(Graph {
            snapshots,
            index,
            parent,
        })
    }

    fn len(&self) -> usize {
        self.snapshots.len()
    }

    fn find(&self, id: SnapshotId) -> Option<usize> {
        self.index.get(&id).copied()
    }

    fn timestamp(&self, i: usize) -> i64 {
        self.snapshots.get(i).map_or(i64::MIN, |s| s.timestamp_ms)
    }
}

/// Per-snapshot working state, by graph index.
struct State {
    reasons: Vec<Vec<KeepReason>>,
    /// Reached from a remaining branch head (rule 4's "on a branch's ancestry").
    reachable: Vec<bool>,
    tagged: Vec<bool>,
    /// `visit[i] == walk` when the current walk has been at `i` (cycle guard without allocation).
    visit: Vec<u32>,
    walk: u32,
}

impl State {
    fn new(n: usize) -> Self {
        State {
            reasons: vec![Vec::new(); n],
            reachable: vec![false; n],
            tagged: vec![false; n],
            visit: vec![0; n],
            walk: 0,
        }
    }

    fn add(&mut self, i: usize, reason: KeepReason) {
        if let Some(r) = self.reasons.get_mut(i) {
            r.push(reason);
        }
    }
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

fn policy_mode(input: &ExpiryInput<'_>, graph: &Graph<'_>, state: &mut State) -> Vec<RefVerdict> {
    let refs: Vec<RefVerdict> = input
        .refs
        .iter()
        .map(|r| judge_ref(r, graph, &input.policy, input.now_ms))
        .collect();
    let mut main_walked = false;
    let surviving = input
        .refs
        .iter()
        .zip(&refs)
        .filter(|(_, v)| v.fate == RefFate::Kept)
        .map(|(r, _)| r);
    for r in surviving {
        let Some(head) = graph.find(r.snapshot_id) else {
            continue; // only `main` survives dangling; it retains nothing
        };
        state.add(head, KeepReason::RefHead(r.name.clone()));
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
                walk.run(graph, head, input.now_ms, state);
                main_walked |= r.name == MAIN_BRANCH;
            }
            RefKind::Tag => {
                state.add(head, KeepReason::Tag(r.name.clone()));
                if let Some(t) = state.tagged.get_mut(head) {
                    *t = true;
                }
            }
        }
    }
    let implicit_main = input.current_snapshot_id.filter(|_| !main_walked);
    if let Some(current) = implicit_main.and_then(|id| graph.find(id)) {
        let walk = BranchWalk {
            name: MAIN_BRANCH,
            min_keep: input.policy.min_snapshots_to_keep,
            max_age_ms: input.policy.max_snapshot_age_ms,
        };
        walk.run(graph, current, input.now_ms, state);
    }
    let max_age = i128::from(input.policy.max_snapshot_age_ms);
    for (i, s) in graph.snapshots.iter().enumerate() {
        let referenced =
            state.reachable.get(i) == Some(&true) || state.tagged.get(i) == Some(&true);
        if !referenced && age(input.now_ms, s.timestamp_ms) <= max_age {
            state.add(i, KeepReason::UnreferencedYoung);
        }
    }
    add_current(input, graph, state);
    refs
}

fn judge_ref(r: &SnapshotRef, graph: &Graph<'_>, policy: &TablePolicy, now_ms: i64) -> RefVerdict {
    let fate = if r.name == MAIN_BRANCH {
        RefFate::Kept
    } else {
        match graph.find(r.snapshot_id) {
            None => RefFate::Removed(RefRemoval::Dangling),
            Some(head) => {
                let max_ref_age_ms = r.max_ref_age_ms.unwrap_or(policy.max_ref_age_ms);
                let age_ms = age(now_ms, graph.timestamp(head));
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
    /// every snapshot reached (to the root, a missing parent, or a cycle) reachable.
    fn run(&self, graph: &Graph<'_>, head: usize, now_ms: i64, state: &mut State) {
        state.walk = state.walk.wrapping_add(1);
        if state.walk == 0 {
            state.visit.iter_mut().for_each(|v| *v = 0);
            state.walk = 1;
        }
        let mut kept: i64 = 0;
        let mut retaining = true;
        let mut cursor = Some(head);
        while let Some(i) = cursor {
            match state.visit.get_mut(i) {
                Some(v) if *v != state.walk => *v = state.walk,
                _ => break, // a cycle (or an index out of range, which cannot happen)
            }
            let newly_reached = state.reachable.get(i) == Some(&false);
            if let Some(r) = state.reachable.get_mut(i) {
                *r = true;
            }
            if retaining {
                let within_min_keep = kept < i64::from(self.min_keep);
                let young = age(now_ms, graph.timestamp(i)) <= i128::from(self.max_age_ms);
                if within_min_keep {
                    state.add(i, KeepReason::BranchMinKeep(self.name.to_string()));
                }
                if young {
                    state.add(i, KeepReason::BranchYoung(self.name.to_string()));
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
            cursor = graph.parent.get(i).copied().flatten();
        }
    }
}

fn add_current(input: &ExpiryInput<'_>, graph: &Graph<'_>, state: &mut State) {
    if let Some(current) = input.current_snapshot_id.and_then(|id| graph.find(id)) {
        state.add(current, KeepReason::Current);
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

fn id_mode(
    input: &ExpiryInput<'_>,
    graph: &Graph<'_>,
    ids: &[SnapshotId],
    state: &mut State,
) -> Result<()> {
    let protected: HashSet<SnapshotId> = input
        .refs
        .iter()
        .map(|r| r.snapshot_id)
        .chain(input.current_snapshot_id)
        .collect();
    let exists = |id: &SnapshotId| graph.find(*id).is_some();
    if let Some(id) = ids.iter().find(|id| exists(id) && protected.contains(id)) {
        return Err(Error::bad_arguments(format!(
            "expire_snapshots cannot expire snapshot {id} because it is referenced by current snapshot, branch, or tag"
        )));
    }
    if let Some(id) = ids.iter().find(|id| !exists(id)) {
        return Err(Error::bad_arguments(format!(
            "expire_snapshots snapshot id {id} does not exist"
        )));
    }
    for r in input.refs {
        if let Some(head) = graph.find(r.snapshot_id) {
            state.add(head, KeepReason::RefHead(r.name.clone()));
        }
    }
    add_current(input, graph, state);
    let named: HashSet<SnapshotId> = ids.iter().copied().collect();
    for (i, s) in graph.snapshots.iter().enumerate() {
        if !named.contains(&s.snapshot_id) {
            state.add(i, KeepReason::NotNamed);
        }
    }
    Ok(())
}

/// Apply the fuse and turn the keep reasons into verdicts and the two id sets.
fn assemble(
    input: &ExpiryInput<'_>,
    state: State,
    refs: Vec<RefVerdict>,
    by_policy: bool,
) -> ExpiryDecision {
    let mut decision = ExpiryDecision {
        snapshots: Vec::with_capacity(input.snapshots.len()),
        refs,
        retained: BTreeSet::new(),
        expired: BTreeSet::new(),
    };
    let reached = state.reachable;
    for ((s, mut reasons), reachable) in input.snapshots.iter().zip(state.reasons).zip(reached) {
        let id = s.snapshot_id;
        if input.expire_before_ms.is_some_and(|b| s.timestamp_ms >= b) {
            reasons.push(KeepReason::ProtectedByExpireBefore);
        }
        let fate = if reasons.is_empty() {
            decision.expired.insert(id);
            SnapshotFate::Expired(match (by_policy, reachable) {
                (false, _) => ExpireReason::NamedInIds,
                (true, true) => ExpireReason::Aged,
                (true, false) => ExpireReason::UnreferencedAged,
            })
        } else {
            decision.retained.insert(id);
            reasons.sort();
            reasons.dedup();
            SnapshotFate::Kept(reasons)
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
