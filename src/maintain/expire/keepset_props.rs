//! Properties of the file decision over random graphs: random manifests with random entries
//! (content types, statuses), snapshots sharing manifests and sometimes manifest lists, random
//! statistics entries, and a random set of expired snapshots.

use super::*;
use crate::iceberg::spec::EntryStatus;
use crate::maintain::file_graph::paths::{Fingerprint, FingerprintSet};
use proptest::prelude::*;

type ManifestSpec = Vec<(usize, u8, u8)>;
type SnapshotSpec = (Option<usize>, Vec<usize>, bool);

#[derive(Debug)]
struct World {
    table: Table,
    expired: BTreeSet<i64>,
}

fn content(n: u8) -> DataContent {
    match n % 3 {
        0 => Data,
        1 => PositionDeletes,
        _ => EqualityDeletes,
    }
}

fn status(n: u8) -> EntryStatus {
    match n % 3 {
        0 => Existing,
        1 => Added,
        _ => Deleted,
    }
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("graph", &self.graph)
            .field("contents", &self.contents)
            .finish()
    }
}

fn world() -> impl Strategy<Value = World> {
    let manifests = prop::collection::vec(
        prop::collection::vec((0usize..12, any::<u8>(), any::<u8>()), 0..5),
        1..8,
    );
    (manifests, 1usize..7).prop_flat_map(|(manifests, n)| {
        let m = manifests.len();
        let snapshots = prop::collection::vec(
            (
                prop::option::weighted(0.9, 0..n),
                prop::collection::vec(0..m, 0..4),
                any::<bool>(),
            ),
            n,
        );
        let stats = prop::collection::vec((0..=n, 0usize..4), 0..5);
        (Just(manifests), snapshots, stats).prop_map(build)
    })
}

fn build(
    (manifests, snapshots, stats): (Vec<ManifestSpec>, Vec<SnapshotSpec>, Vec<(usize, usize)>),
) -> World {
    let mut t = Table::default();
    for (j, entries) in manifests.iter().enumerate() {
        let names: Vec<String> = entries.iter().map(|(f, _, _)| format!("f{f}")).collect();
        let spec: Vec<(&str, DataContent, EntryStatus)> = entries
            .iter()
            .zip(&names)
            .map(|((_, c, s), name)| (name.as_str(), content(*c), status(*s)))
            .collect();
        t.manifest(&format!("m{j}"), &spec);
    }
    let mut expired = BTreeSet::new();
    for (k, (list, ms, is_expired)) in snapshots.iter().enumerate() {
        let id = k as i64;
        let names: Vec<String> = ms.iter().map(|j| format!("m{j}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        t.snapshot(id, &format!("snap-{}", list.unwrap_or(k)), &refs);
        if list.is_none()
            && let Some(s) = t.graph.snapshots.last_mut()
        {
            s.manifest_list = None;
        }
        if *is_expired {
            expired.insert(id);
        }
    }
    for (snapshot, path) in stats {
        t.stats(snapshot as i64, &format!("st{path}"), Some(3));
    }
    World { table: t, expired }
}

fn all_candidates(d: &FileDecision) -> Vec<PathId> {
    d.deletion_order().map(|(_, f)| f.path).collect()
}

/// The keep set, computed naively from the definition.
fn naive_keep(w: &World) -> HashSet<PathId> {
    let mut keep = HashSet::new();
    for s in w
        .table
        .graph
        .snapshots
        .iter()
        .filter(|s| !w.expired.contains(&s.snapshot_id))
    {
        keep.extend(s.manifest_list);
        for m in &s.manifests {
            keep.insert(m.path);
            if let Some(c) = w.table.contents.get(&m.path) {
                keep.extend(
                    c.entries
                        .iter()
                        .filter(|e| e.status.is_live())
                        .map(|e| e.path),
                );
            }
        }
    }
    for st in &w.table.graph.statistics {
        if !w.expired.contains(&st.snapshot_id) {
            keep.insert(st.path);
        }
    }
    keep
}

/// Everything the expired snapshots name: lists, manifests, statistics, and every entry of the
/// manifests no retained snapshot lists (a retained manifest's entries are not up for deletion).
fn expired_graph(w: &World) -> HashSet<PathId> {
    let retained_manifests: HashSet<PathId> = w
        .table
        .graph
        .snapshots
        .iter()
        .filter(|s| !w.expired.contains(&s.snapshot_id))
        .flat_map(|s| s.manifests.iter().map(|m| m.path))
        .collect();
    let mut named = HashSet::new();
    for s in w
        .table
        .graph
        .snapshots
        .iter()
        .filter(|s| w.expired.contains(&s.snapshot_id))
    {
        named.extend(s.manifest_list);
        for m in &s.manifests {
            named.insert(m.path);
            if retained_manifests.contains(&m.path) {
                continue;
            }
            if let Some(c) = w.table.contents.get(&m.path) {
                named.extend(c.entries.iter().map(|e| e.path));
            }
        }
    }
    for st in &w.table.graph.statistics {
        if w.expired.contains(&st.snapshot_id) {
            named.insert(st.path);
        }
    }
    named
}

fn decide(w: &World) -> FileDecision {
    decide_files(&w.table.graph, &w.expired, &w.table.contents).expect("all manifests read")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn candidates_are_exactly_the_expired_graph_minus_the_keep_set(w in world()) {
        let d = decide(&w);
        let candidates: HashSet<PathId> = all_candidates(&d).into_iter().collect();
        let keep = naive_keep(&w);
        let expected: HashSet<PathId> = expired_graph(&w).difference(&keep).copied().collect();
        prop_assert_eq!(candidates, expected);
    }

    #[test]
    fn nothing_live_in_a_retained_snapshot_is_a_candidate(w in world()) {
        let d = decide(&w);
        let keep = naive_keep(&w);
        for path in all_candidates(&d) {
            prop_assert!(!keep.contains(&path));
        }
    }

    #[test]
    fn every_candidate_is_named_by_an_expired_snapshot(w in world()) {
        let d = decide(&w);
        let named = expired_graph(&w);
        for path in all_candidates(&d) {
            prop_assert!(named.contains(&path));
        }
    }

    #[test]
    fn candidates_are_distinct_paths(w in world()) {
        let d = decide(&w);
        let all = all_candidates(&d);
        let distinct: HashSet<PathId> = all.iter().copied().collect();
        prop_assert_eq!(all.len(), distinct.len());
        prop_assert_eq!(d.len(), all.len());
    }

    #[test]
    fn the_candidates_do_not_depend_on_snapshot_order(w in world(), seed in any::<u64>()) {
        use rand::{SeedableRng, rngs::SmallRng, seq::SliceRandom};
        let base: HashSet<PathId> = all_candidates(&decide(&w)).into_iter().collect();
        let mut graph = w.table.graph.clone();
        graph.snapshots.shuffle(&mut SmallRng::seed_from_u64(seed));
        let d = decide_files(&graph, &w.expired, &w.table.contents).expect("decision");
        let shuffled: HashSet<PathId> = all_candidates(&d).into_iter().collect();
        prop_assert_eq!(base, shuffled);
    }

    #[test]
    fn expiring_nothing_deletes_nothing(w in world()) {
        let none = BTreeSet::new();
        prop_assert_eq!(plan_manifest_reads(&w.table.graph, &none), ManifestReadPlan::default());
        let d = decide_files(&w.table.graph, &none, &w.table.contents).expect("decision");
        prop_assert!(d.is_empty());
    }

    #[test]
    fn reading_only_the_planned_manifests_is_enough(w in world()) {
        let plan = plan_manifest_reads(&w.table.graph, &w.expired);
        let planned: ManifestContents = plan
            .manifests_to_read()
            .filter_map(|m| w.table.contents.get(&m).map(|c| (m, c.clone())))
            .collect();
        let partial = decide_files(&w.table.graph, &w.expired, &planned).expect("planned reads suffice");
        prop_assert_eq!(partial, decide(&w));
        if plan.candidate_manifests.is_empty() {
            prop_assert!(plan.retained_manifests.is_empty());
        }
    }

    #[test]
    fn failed_deletes_hold_exactly_what_names_them(w in world(), picks in prop::collection::vec(any::<prop::sample::Index>(), 0..4)) {
        let d = decide(&w);
        let all = all_candidates(&d);
        if all.is_empty() {
            return Ok(()); // nothing to fail
        }
        let failed: HashSet<PathId> = picks.iter().map(|i| all[i.index(all.len())]).collect();
        let held = after_failed_deletes(&w.table.graph, &w.expired, &d, &w.table.contents, &failed);
        let names_failed = |m: &PathId| w.table.contents.get(m)
            .is_some_and(|c| c.entries.iter().any(|e| failed.contains(&e.path)));
        for m in &d.manifests {
            prop_assert_eq!(held.manifests.contains(&m.path), names_failed(&m.path));
        }
        for list in &d.manifest_lists {
            let blocked = w.table.graph.snapshots.iter()
                .filter(|s| w.expired.contains(&s.snapshot_id) && s.manifest_list == Some(list.path))
                .any(|s| s.manifests.iter().any(|m| failed.contains(&m.path) || held.manifests.contains(&m.path)));
            prop_assert_eq!(held.manifest_lists.contains(&list.path), blocked);
        }
    }

    #[test]
    fn the_streamed_decision_equals_the_whole_graph_one(w in world(), picks in prop::collection::vec(any::<prop::sample::Index>(), 0..4)) {
        // What the executor does: fold retained manifests into fingerprints of their live
        // files, keep only the candidate entries those do not cover, decide on that.
        let t = &w.table;
        let plan = plan_manifest_reads(&t.graph, &w.expired);
        let fingerprint = |id: PathId| Fingerprint::of_key(t.paths.resolve(id).expect("interned"));
        let live: FingerprintSet = plan.retained_manifests.iter()
            .flat_map(|m| t.contents[m].entries.iter())
            .filter(|e| e.status.is_live())
            .map(|e| fingerprint(e.path))
            .collect();
        let unkept: ManifestContents = plan.candidate_manifests.iter()
            .map(|m| {
                let entries = t.contents[&m.path].entries.iter()
                    .filter(|e| !live.contains(&fingerprint(e.path)))
                    .copied()
                    .collect();
                (m.path, ManifestEntries { entries })
            })
            .collect();
        let streamed = decide_candidates(&t.graph, &w.expired, &plan,
            |id| live.contains(&fingerprint(id)), &unkept).expect("candidates read");
        let whole = decide(&w);
        prop_assert_eq!(&streamed, &whole);
        let all = all_candidates(&whole);
        if !all.is_empty() {
            let failed: HashSet<PathId> = picks.iter().map(|i| all[i.index(all.len())]).collect();
            prop_assert_eq!(
                after_failed_deletes(&t.graph, &w.expired, &whole, &unkept, &failed),
                after_failed_deletes(&t.graph, &w.expired, &whole, &t.contents, &failed)
            );
        }
    }
}
