//! Tests of [`super`]: each reason to fall back, and the incremental decision against the full
//! keep set on random histories written by a model writer (every operation, branches, tags,
//! staged and cherry-picked snapshots, rollbacks, paths added again, files dropped silently).

use std::collections::{BTreeSet, HashMap};

use proptest::prelude::*;

use super::*;
use crate::iceberg::spec::{DataContent, EntryStatus};
use crate::maintain::expire::keepset::{
    EntryRef, FileCandidate, FileCategory, ManifestEntries, ManifestRef, PathInterner,
    SnapshotFiles, decide_files,
};
use crate::maintain::file_graph::model::{EntryCounts, ListedManifest};

/// One operation of the model writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    /// A new manifest of new files on the head's list.
    Append,
    /// Every live entry merged into one manifest (EXISTING), with new files (ADDED).
    Merge,
    /// Files of one manifest deleted: the manifest rewritten with DELETED entries.
    Delete,
    /// A delete and an append in one snapshot.
    Overwrite,
    /// Compaction: files of one manifest replaced by one new file.
    Replace,
    /// A path deleted earlier added again.
    ReAdd,
    /// A manifest with live files dropped from the list, without DELETED entries (as writers
    /// that drop an emptied manifest do).
    SilentDrop,
    /// A snapshot on a branch `b<n>` forked at the head (the ref stays).
    Branch,
    /// A tag on a random earlier snapshot.
    Tag,
    /// A snapshot on no ref (write-audit-publish).
    Staged,
    /// The last staged snapshot cherry-picked onto main (its files added again, summary names it).
    CherryPick,
    /// Main set back to its parent (the head left on no ref).
    Rollback,
}

/// A table written by the model writer: its history, file graph and manifests.
#[derive(Default)]
pub(super) struct Written {
    pub paths: PathInterner,
    pub graph: FileGraph,
    pub contents: ManifestContents,
    pub history: History,
    next_file: usize,
    next_manifest: usize,
    lists: HashMap<SnapshotId, Vec<PathId>>,
    deleted: Vec<PathId>,
}

impl Written {
    fn intern(&mut self, key: &str) -> PathId {
        self.paths.intern(key).expect("intern")
    }

    fn new_file(&mut self) -> EntryRef {
        self.next_file += 1;
        let path = self.intern(&format!("data/f{}", self.next_file));
        EntryRef {
            path,
            content: DataContent::Data,
            status: EntryStatus::Added,
            // One size per path (a path has one size wherever it is named).
            file_size: 100 + i64::from(path.index() as u32),
        }
    }

    fn write_manifest(&mut self, writer: SnapshotId, entries: Vec<EntryRef>) -> PathId {
        self.next_manifest += 1;
        let path = self.intern(&format!("metadata/m{}.avro", self.next_manifest));
        let count = |s| entries.iter().filter(|e| e.status == s).count() as i64;
        let counts = EntryCounts {
            added: count(EntryStatus::Added),
            existing: count(EntryStatus::Existing),
            deleted: count(EntryStatus::Deleted),
        };
        self.graph.note_listed(
            path,
            ListedManifest {
                added_snapshot_id: writer,
                counts: Some(counts),
            },
        );
        self.contents.insert(path, ManifestEntries { entries });
        path
    }

    fn live_of(&self, manifest: PathId) -> Vec<EntryRef> {
        self.contents[&manifest]
            .entries
            .iter()
            .filter(|e| e.status.is_live())
            .copied()
            .collect()
    }

    fn commit(&mut self, id: SnapshotId, parent: Option<SnapshotId>, list: Vec<PathId>) {
        let list_path = self.intern(&format!("metadata/snap-{id}.avro"));
        let manifests = list
            .iter()
            .map(|m| ManifestRef {
                path: *m,
                length: 50,
                content: ManifestContent::Data,
            })
            .collect();
        self.graph.snapshots.push(SnapshotFiles {
            snapshot_id: id,
            manifest_list: Some(list_path),
            manifest_list_size: Some(20),
            manifests,
        });
        self.history.snapshots.push(HistorySnapshot {
            id,
            parent,
            picked_from: None,
        });
        self.lists.insert(id, list);
    }

    /// A child of `parent` (or a first snapshot) doing `op`; `pick` chooses among options.
    fn apply(&mut self, id: SnapshotId, parent: Option<SnapshotId>, op: Op, pick: usize) {
        let mut list = parent
            .and_then(|p| self.lists.get(&p).cloned())
            .unwrap_or_default();
        let with_live: Vec<usize> = (0..list.len())
            .filter(|i| !self.live_of(list[*i]).is_empty())
            .collect();
        let victim = (!with_live.is_empty()).then(|| with_live[pick % with_live.len()]);
        match (op, victim) {
            (Op::Delete | Op::Overwrite | Op::Replace, Some(at)) => {
                let old = list.remove(at);
                let live = self.live_of(old);
                let n = match op {
                    Op::Replace => live.len(),
                    _ => 1 + pick % live.len(),
                };
                let mut entries = Vec::new();
                for (i, e) in live.iter().enumerate() {
                    let status = if i < n {
                        self.deleted.push(e.path);
                        EntryStatus::Deleted
                    } else {
                        EntryStatus::Existing
                    };
                    entries.push(EntryRef { status, ..*e });
                }
                list.push(self.write_manifest(id, entries));
                if op != Op::Delete {
                    let added: Vec<EntryRef> = (0..1 + pick % 2).map(|_| self.new_file()).collect();
                    list.push(self.write_manifest(id, added));
                }
            }
            (Op::SilentDrop, Some(at)) => {
                list.remove(at);
                let added = vec![self.new_file()];
                list.push(self.write_manifest(id, added));
            }
            (Op::Merge, _) => {
                let mut entries: Vec<EntryRef> = Vec::new();
                for m in &list {
                    entries.extend(self.live_of(*m).into_iter().map(|e| EntryRef {
                        status: EntryStatus::Existing,
                        ..e
                    }));
                }
                entries.push(self.new_file());
                list = vec![self.write_manifest(id, entries)];
            }
            (Op::ReAdd, _) if !self.deleted.is_empty() => {
                let path = self.deleted[pick % self.deleted.len()];
                let live: HashSet<PathId> = list
                    .iter()
                    .flat_map(|m| self.live_of(*m))
                    .map(|e| e.path)
                    .collect();
                let mut again = self.new_file();
                if !live.contains(&path) {
                    again.path = path;
                    again.file_size = 100 + i64::from(path.index() as u32);
                }
                list.push(self.write_manifest(id, vec![again]));
            }
            _ => {
                let added: Vec<EntryRef> = (0..1 + pick % 3).map(|_| self.new_file()).collect();
                list.push(self.write_manifest(id, added));
            }
        }
        self.commit(id, parent, list);
    }
}

/// Write a history from `ops` (each with a pick); main is the only ref unless an op adds one.
pub(super) fn write(ops: &[(Op, usize)]) -> Written {
    let mut w = Written::default();
    let mut head: Option<SnapshotId> = None;
    let mut staged: Vec<SnapshotId> = Vec::new();
    let mut refs: Vec<(String, RefKind, SnapshotId)> = Vec::new();
    for (id, (op, pick)) in (1..).zip(ops) {
        match op {
            Op::Branch => {
                w.apply(id, head, Op::Append, *pick);
                refs.push((format!("b{id}"), RefKind::Branch, id));
            }
            Op::Staged => {
                w.apply(id, head, Op::Append, *pick);
                staged.push(id);
            }
            Op::Tag => {
                let Some(h) = head else { continue };
                let line: Vec<SnapshotId> = w.history.snapshots.iter().map(|s| s.id).collect();
                let at = line.get(pick % line.len()).copied().unwrap_or(h);
                refs.push((format!("t{id}"), RefKind::Tag, at));
            }
            Op::Rollback => {
                let parent = head.and_then(|h| {
                    w.history
                        .snapshots
                        .iter()
                        .find(|s| s.id == h)
                        .and_then(|s| s.parent)
                });
                if parent.is_some() {
                    head = parent;
                }
            }
            Op::CherryPick => {
                let Some(source) = staged.pop() else {
                    w.apply(id, head, Op::Append, *pick);
                    head = Some(id);
                    continue;
                };
                let added: Vec<EntryRef> = w.lists[&source]
                    .iter()
                    .filter(|m| w.graph.listed[m].added_snapshot_id == source)
                    .flat_map(|m| w.contents[m].entries.clone())
                    .collect();
                let mut list = head.map(|h| w.lists[&h].clone()).unwrap_or_default();
                list.push(w.write_manifest(id, added));
                w.commit(id, head, list);
                if let Some(s) = w.history.snapshots.last_mut() {
                    s.picked_from = Some(source.to_string());
                }
                head = Some(id);
            }
            other => {
                w.apply(id, head, *other, *pick);
                head = Some(id);
            }
        }
    }
    if let Some(h) = head {
        refs.insert(0, (MAIN_BRANCH.to_string(), RefKind::Branch, h));
    }
    w.history.refs = refs;
    w.history.current = head;
    w
}

/// Each category's files as a sorted list (path, size): the decision up to order.
fn canonical(d: &FileDecision) -> Vec<(FileCategory, Vec<FileCandidate>)> {
    FileDecision::DELETION_ORDER
        .iter()
        .map(|c| {
            let mut files = d.files(*c).to_vec();
            files.sort_by_key(|f| (f.path, f.size));
            (*c, files)
        })
        .collect()
}

/// The incremental decision as the executor reaches it: `L` from every retained manifest.
fn incremental(
    w: &Written,
    expired: &BTreeSet<SnapshotId>,
    reads: &IncrementalReads,
) -> FileDecision {
    let live: HashSet<PathId> = reads
        .plan
        .retained_manifests
        .iter()
        .flat_map(|m| w.contents[m].entries.iter())
        .filter(|e| e.status.is_live())
        .map(|e| e.path)
        .collect();
    let read: ManifestContents = reads
        .manifests_to_read()
        .into_iter()
        .map(|m| (m, w.contents[&m].clone()))
        .collect();
    decide_incremental(&w.graph, expired, reads, |p| live.contains(&p), &read).expect("decision")
}

/// The oldest `n` snapshots of main's line.
fn oldest(w: &Written, n: usize) -> BTreeSet<SnapshotId> {
    w.history.snapshots.iter().take(n).map(|s| s.id).collect()
}

fn reason(w: &Written, expired: &BTreeSet<SnapshotId>) -> String {
    match choose_cleanup(&w.history, &w.graph, expired) {
        Cleanup::Full(reason) => reason,
        Cleanup::Incremental(_) => "incremental".into(),
    }
}

fn linear() -> Vec<(Op, usize)> {
    vec![
        (Op::Append, 0),
        (Op::Append, 1),
        (Op::Delete, 0),
        (Op::Append, 2),
        (Op::Replace, 1),
        (Op::Merge, 0),
        (Op::Overwrite, 1),
        (Op::Append, 0),
    ]
}

#[test]
fn a_linear_history_is_incremental_and_equal() {
    let w = write(&linear());
    for n in 1..8 {
        let expired = oldest(&w, n);
        let Cleanup::Incremental(reads) = choose_cleanup(&w.history, &w.graph, &expired) else {
            panic!("{n}: {}", reason(&w, &expired));
        };
        let full = decide_files(&w.graph, &expired, &w.contents).expect("full");
        assert_eq!(
            canonical(&incremental(&w, &expired, &reads)),
            canonical(&full),
            "{n}"
        );
        // Only manifests with DELETED entries (or dropped whole) are read for their entries.
        for m in reads.manifests_to_read() {
            let dropped = reads.candidates.iter().any(|(c, t)| *c == m && t.live);
            assert!(dropped || w.graph.listed[&m].counts.is_some_and(|c| c.deleted > 0));
        }
    }
    // Something to compare: the oldest five delete data files.
    let full = decide_files(&w.graph, &oldest(&w, 5), &w.contents).expect("full");
    assert!(!full.data_files.is_empty());
}

#[test]
fn each_history_the_lists_cannot_vouch_for_falls_back_naming_why() {
    let with = |op: Op| {
        let mut ops = linear();
        ops.insert(3, (op, 0));
        write(&ops)
    };
    let cases = [
        (with(Op::Tag), "refs besides main: tag"),
        (with(Op::Branch), "refs besides main: branch"),
        (with(Op::Staged), "not in main's ancestry"),
        (with(Op::Rollback), "not in main's ancestry"),
    ];
    for (w, want) in cases {
        let got = reason(&w, &oldest(&w, 4));
        assert!(got.contains(want), "{want}: {got}");
    }
    let mut ops = linear();
    ops.insert(3, (Op::Staged, 0));
    ops.insert(4, (Op::CherryPick, 0));
    let w = write(&ops);
    assert!(reason(&w, &oldest(&w, 3)).contains("cherry-picked from snapshot 4"));
}

#[test]
fn ids_mode_counts_gaps_and_order_fall_back() {
    let w = write(&linear());
    let mut by_ids = w.history.clone();
    by_ids.by_ids = true;
    let expired = oldest(&w, 2);
    assert!(matches!(
        choose_cleanup(&by_ids, &w.graph, &expired),
        Cleanup::Full(r) if r.contains("snapshot_ids")
    ));
    // An expired snapshot newer than a retained one.
    let skip: BTreeSet<SnapshotId> = [1, 3].into();
    assert!(
        reason(&w, &skip).contains("expired snapshot 3 is newer on main than retained snapshot 2")
    );
    // A missing count.
    let mut gap = write(&linear());
    let some = gap.graph.snapshots[2].manifests[0].path;
    gap.graph.listed.get_mut(&some).expect("listed").counts = None;
    assert!(reason(&gap, &expired).contains("lacks file counts"));
    // A broken chain: snapshot 4's parent is gone.
    let mut broken = write(&linear());
    broken.history.snapshots.retain(|s| s.id != 3);
    broken.graph.snapshots.retain(|s| s.snapshot_id != 3);
    assert!(reason(&broken, &expired).contains("its parent 3 is not in the metadata"));
    // A v1 snapshot with inline manifests.
    let mut inline = write(&linear());
    inline.graph.snapshots[0].manifest_list = None;
    assert!(reason(&inline, &expired).contains("no manifest list"));
}

#[test]
fn a_path_added_again_stays_protected() {
    // f1 added, deleted, added again and live at the head: never a candidate.
    let ops = [
        (Op::Append, 0),
        (Op::Delete, 0),
        (Op::ReAdd, 0),
        (Op::Append, 0),
    ];
    let w = write(&ops);
    let f1 = w.paths.get("data/f1").expect("f1");
    for n in 1..4 {
        let expired = oldest(&w, n);
        let Cleanup::Incremental(reads) = choose_cleanup(&w.history, &w.graph, &expired) else {
            panic!("{n}: {}", reason(&w, &expired));
        };
        let d = incremental(&w, &expired, &reads);
        assert!(d.data_files.iter().all(|f| f.path != f1), "{n}: {d:?}");
        let full = decide_files(&w.graph, &expired, &w.contents).expect("full");
        assert_eq!(canonical(&d), canonical(&full));
    }
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        30 => Just(Op::Append),
        6 => Just(Op::Merge),
        10 => Just(Op::Delete),
        5 => Just(Op::Overwrite),
        5 => Just(Op::Replace),
        3 => Just(Op::ReAdd),
        1 => Just(Op::SilentDrop),
        1 => Just(Op::Branch),
        1 => Just(Op::Tag),
        1 => Just(Op::Staged),
        1 => Just(Op::CherryPick),
        1 => Just(Op::Rollback),
    ]
}

/// Expired sets: the oldest `n` snapshots (what the policy expires on one line), or any subset.
fn expired_of(w: &Written, n: usize, any: &[bool], prefix: bool) -> BTreeSet<SnapshotId> {
    let current = w.history.current;
    if prefix {
        return oldest(w, n.min(w.history.snapshots.len().saturating_sub(1)));
    }
    w.history
        .snapshots
        .iter()
        .zip(any.iter().cycle())
        .filter(|(s, pick)| **pick && Some(s.id) != current)
        .map(|(s, _)| s.id)
        .collect()
}

/// Histories per run: 600, or `ICETRIM_INCREMENTAL_CASES` (`scripts/incremental-check.sh`).
fn model_cases() -> u32 {
    std::env::var("ICETRIM_INCREMENTAL_CASES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(600)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(model_cases()))]

    /// On every history: when the incremental cleanup is taken, its files are the full keep
    /// set's; when the history is one plain line and something expires, it is taken.
    #[test]
    fn the_incremental_decision_equals_the_full_keep_set(
        ops in prop::collection::vec((op(), 0usize..50), 1..30),
        n in 0usize..30,
        any in prop::collection::vec(any::<bool>(), 1..8),
        prefix in any::<bool>(),
    ) {
        let w = write(&ops);
        let expired = expired_of(&w, n, &any, prefix);
        if expired.is_empty() {
            return Ok(());
        }
        let full = decide_files(&w.graph, &expired, &w.contents).expect("full");
        match choose_cleanup(&w.history, &w.graph, &expired) {
            Cleanup::Incremental(reads) => {
                prop_assert_eq!(canonical(&incremental(&w, &expired, &reads)), canonical(&full));
            }
            Cleanup::Full(why) => {
                let plain = ops.iter().all(|(o, _)| matches!(o,
                    Op::Append | Op::Merge | Op::Delete | Op::Overwrite | Op::Replace | Op::ReAdd
                        | Op::SilentDrop));
                prop_assert!(!(plain && prefix), "a plain line fell back: {}", why);
            }
        }
    }
}

#[test]
fn a_manifest_dropped_whole_is_read_for_its_live_files() {
    let ops = [
        (Op::Append, 0),
        (Op::Append, 1),
        (Op::SilentDrop, 0),
        (Op::Append, 0),
    ];
    let w = write(&ops);
    let expired = oldest(&w, 3);
    let Cleanup::Incremental(reads) = choose_cleanup(&w.history, &w.graph, &expired) else {
        panic!("{}", reason(&w, &expired));
    };
    assert_eq!(reads.candidates.iter().filter(|(_, t)| t.live).count(), 1);
    let d = incremental(&w, &expired, &reads);
    assert_eq!(d.data_files.len(), 1, "{d:?}");
    let full = decide_files(&w.graph, &expired, &w.contents).expect("full");
    assert_eq!(canonical(&d), canonical(&full));
}
