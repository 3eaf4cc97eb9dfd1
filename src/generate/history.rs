//! One generated snapshot: choose what it adds and removes, lay out its manifest list (new manifests
//! first, untouched ones carried by `Arc`, the victim manifest rewritten, small manifests merged
//! by size tier when asked or when the list grows past its bound), write it, and return the new head.
//!
//! The same rules as [`crate::iceberg::txn::prepare`]: kept entries of a rewrite become EXISTING
//! and removed ones DELETED with explicit sequence numbers and row ids; older DELETED entries are
//! dropped; an emptied manifest is dropped. Merging (in the spirit of Java's `ManifestMergeManager`, but
//! size-tiered so a file is rewritten a logarithmic number of times) packs manifests below the
//! target size into one, keeping this snapshot's ADDED and DELETED entries and
//! turning other live ones EXISTING. Removals pick a manifest among the smallest few, so a delete costs
//! a small rewrite rather than one of a full manifest (which keeps 100,000-snapshot tables fast).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use bytes::Bytes;

use rand::Rng;
use rand::rngs::StdRng;
use serde_json::{Map, Value, json};

use super::MainOp;
use super::model::{Entry, FileRec, Head, Manifest};
use super::sink::{Credit, Sink};
use crate::error::Result;
use crate::iceberg::manifest_list::ManifestListMeta;
use crate::iceberg::spec::{DataContent, EntryStatus, FormatVersion, ManifestContent, SnapshotId};
use crate::iceberg::txn::names::snapshot_id_from;
use crate::iceberg::txn::summary::{Tally, build_summary};

/// Victims are chosen among this many smallest data manifests.
const VICTIM_WINDOW: usize = 8;

/// Tuning of the manifest layout.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Layout {
    pub files_per_snapshot: usize,
    /// Merge when the list holds more manifests than this.
    pub max_manifests: usize,
    /// Manifests with at least this many entries are never merged.
    pub target_entries: usize,
    /// Manifests of one size tier merged at once when the list is too long.
    pub fan_in: usize,
}

/// The whole history being generated.
pub(crate) struct History {
    pub rng: StdRng,
    pub sink: Sink,
    pub layout: Layout,
    pub seq: i64,
    pub next_row_id: i64,
    used_ids: HashSet<SnapshotId>,
    pub snapshots: Vec<Value>,
    pub data_files_added: u64,
    /// Write placeholder data and delete files.
    pub write_data: bool,
    /// Real Parquet content, by file id, when the options ask for it (written, then dropped).
    pub parquet: Option<HashMap<u128, Bytes>>,
    /// The next `id` value of a generated row (Parquet mode).
    next_value: i64,
    /// Partitions of the identity partition `part` (0: unpartitioned); new data files take
    /// the values `0..partitions` in turn.
    pub partitions: usize,
    next_partition: usize,
    /// Parquet mode: rows of every new data file (`None`: 1 to 1,000, drawn).
    pub rows_per_file: Option<i64>,
    /// Parquet mode: `data` values padded to this many bytes (0: `row-<id>`).
    pub row_bytes: usize,
    /// Data files carry the wide columns (`parquet::WIDE_COLUMNS`).
    pub wide_columns: bool,
}

/// A manifest of the list being laid out: carried, or to be written.
enum Slot {
    Carried(Arc<Manifest>),
    New {
        content: ManifestContent,
        entries: Vec<Entry>,
        first_row_id: Option<i64>,
    },
}

impl Slot {
    fn content(&self) -> ManifestContent {
        match self {
            Slot::Carried(m) => m.content(),
            Slot::New { content, .. } => *content,
        }
    }

    fn entries(&self) -> &[Entry] {
        match self {
            Slot::Carried(m) => &m.entries,
            Slot::New { entries, .. } => entries,
        }
    }
}

/// What one snapshot changes.
#[derive(Default)]
struct Change {
    added: Vec<FileRec>,
    added_deletes: Vec<FileRec>,
    /// Index of the victim manifest in the parent's list and the entry indexes removed from it.
    removal: Option<(usize, Vec<usize>)>,
    merge: bool,
}

/// A placeholder data file's bytes (its size is the size the manifest records).
pub(crate) fn placeholder(records: i64) -> Vec<u8> {
    format!("PAR1{records}PAR1").into_bytes()
}

impl History {
    pub fn new(rng: StdRng, sink: Sink, layout: Layout) -> Self {
        History {
            rng,
            sink,
            layout,
            seq: 0,
            next_row_id: 0,
            used_ids: HashSet::new(),
            snapshots: Vec::new(),
            data_files_added: 0,
            write_data: true,
            parquet: None,
            next_value: 0,
            partitions: 0,
            next_partition: 0,
            rows_per_file: None,
            row_bytes: 0,
            wide_columns: false,
        }
    }

    fn version(&self) -> FormatVersion {
        self.sink.version
    }

    pub fn uuid(&mut self) -> uuid::Uuid {
        uuid::Builder::from_random_bytes(self.rng.random()).into_uuid()
    }

    fn new_snapshot_id(&mut self) -> SnapshotId {
        loop {
            let id = snapshot_id_from(self.rng.random());
            if self.used_ids.insert(id) {
                return id;
            }
        }
    }

    /// The partition of the next new data file (in turn), `None` when unpartitioned.
    fn take_partition(&mut self) -> Option<i32> {
        (self.partitions > 0).then(|| {
            let p = self.next_partition % self.partitions;
            self.next_partition = (p + 1) % self.partitions;
            p as i32
        })
    }

    /// A new file; a data file takes the next partition, a delete file gets its data file's
    /// from the caller.
    fn new_file(&mut self, content: DataContent, records: i64, seq: i64) -> FileRec {
        let part = match content {
            DataContent::Data => self.take_partition(),
            _ => None,
        };
        self.new_file_in(content, records, seq, part)
    }

    fn new_file_in(
        &mut self,
        content: DataContent,
        records: i64,
        seq: i64,
        part: Option<i32>,
    ) -> FileRec {
        let first_row_id = (self.version() >= FormatVersion::V3 && content == DataContent::Data)
            .then(|| {
                let id = self.next_row_id;
                self.next_row_id += records;
                id
            });
        let mut rec = FileRec {
            id: self.rng.random(),
            content,
            records,
            size: placeholder(records).len() as i64,
            seq,
            first_row_id,
            referenced: None,
            part,
        };
        if content == DataContent::Data
            && let Some(files) = &mut self.parquet
        {
            // Parquet mode: generation cannot fail on data we make ourselves; a placeholder
            // stays if it ever did.
            if let Ok(bytes) = super::parquet::data_file(
                self.next_value,
                records,
                part,
                self.row_bytes,
                self.wide_columns,
            ) {
                rec.size = bytes.len() as i64;
                files.insert(rec.id, bytes);
            }
            self.next_value += records;
        }
        rec
    }

    /// Parquet mode: the content of position delete file `del` (its first positions of the
    /// data file it references).
    fn position_delete_content(&mut self, del: &mut FileRec) {
        let (Some(files), Some(target)) = (&mut self.parquet, del.referenced) else {
            return;
        };
        let path = self.sink.paths.of(target, DataContent::Data, del.part);
        let positions: Vec<i64> = (0..del.records).collect();
        if let Ok(bytes) = super::parquet::position_deletes(&path, &positions) {
            del.size = bytes.len() as i64;
            files.insert(del.id, bytes);
        }
    }

    fn new_data_files(&mut self, n: usize, seq: i64) -> Vec<FileRec> {
        (0..n)
            .map(|_| {
                let drawn = self.rng.random_range(1..=1000);
                let records = self.rows_per_file.unwrap_or(drawn);
                self.new_file(DataContent::Data, records, seq)
            })
            .collect()
    }

    /// A data manifest with live entries among the few smallest (ties: newest first).
    fn victim(&mut self, parent: &Head) -> Option<usize> {
        let mut candidates: Vec<(usize, usize)> = parent
            .manifests
            .iter()
            .enumerate()
            .filter(|(_, m)| m.content() == ManifestContent::Data && m.live().next().is_some())
            .map(|(i, m)| (m.entries.len(), i))
            .collect();
        candidates.sort_unstable();
        candidates.truncate(VICTIM_WINDOW);
        if candidates.is_empty() {
            return None;
        }
        Some(candidates[self.rng.random_range(0..candidates.len())].1)
    }

    /// Up to `n` (at least 1) live entry indexes of manifest `victim`, chosen at random.
    fn pick_live(&mut self, parent: &Head, victim: usize, n: usize) -> Vec<usize> {
        let live: Vec<usize> = parent.manifests[victim]
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.status.is_live())
            .map(|(i, _)| i)
            .collect();
        let n = n.clamp(1, live.len().max(1));
        let mut chosen: Vec<usize> =
            rand::seq::index::sample(&mut self.rng, live.len(), n.min(live.len()))
                .into_iter()
                .map(|i| live[i])
                .collect();
        chosen.sort_unstable();
        chosen
    }

    fn plan_change(&mut self, parent: &Head, op: MainOp, seq: i64) -> (MainOp, Change) {
        let k = self.layout.files_per_snapshot.max(1);
        let victim = match op {
            MainOp::Append | MainOp::Merge => None,
            _ => self.victim(parent),
        };
        let Some(victim) = victim else {
            let merge = op == MainOp::Merge;
            let added = self.new_data_files(k, seq);
            let op = if merge { MainOp::Merge } else { MainOp::Append };
            return (
                op,
                Change {
                    added,
                    merge,
                    ..Change::default()
                },
            );
        };
        let mut change = Change::default();
        match op {
            MainOp::Delete if self.version() == FormatVersion::V2 && self.rng.random_bool(0.5) => {
                let target = self.pick_live(parent, victim, 1)[0];
                let referenced = parent.manifests[victim].entries[target].file;
                let records = self.rng.random_range(1..=3);
                let mut del =
                    self.new_file_in(DataContent::PositionDeletes, records, seq, referenced.part);
                let referenced = referenced.id;
                del.referenced = Some(referenced);
                self.position_delete_content(&mut del);
                change.added_deletes.push(del);
            }
            MainOp::Delete => {
                let n = self.rng.random_range(1..=(k / 2).max(1));
                change.removal = Some((victim, self.pick_live(parent, victim, n)));
            }
            MainOp::Overwrite => {
                let n = self.rng.random_range(1..=(k / 2).max(1));
                change.removal = Some((victim, self.pick_live(parent, victim, n)));
                change.added = self.new_data_files((k / 2).max(1), seq);
            }
            _ => {
                let picked = self.pick_live(parent, victim, k.max(2));
                let records = picked
                    .iter()
                    .map(|&i| parent.manifests[victim].entries[i].file.records)
                    .sum();
                // The compacted file stays in the partition of the first file it replaces.
                let part = parent.manifests[victim].entries[picked[0]].file.part;
                change.removal = Some((victim, picked));
                change.added = vec![self.new_file_in(DataContent::Data, records, seq, part)];
            }
        }
        (op, change)
    }

    /// Generate one snapshot on top of `parent`; returns the new head.
    pub async fn commit(&mut self, parent: &Head, op: MainOp, timestamp_ms: i64) -> Result<Head> {
        let id = self.new_snapshot_id();
        let seq = if self.version() >= FormatVersion::V2 {
            self.seq + 1
        } else {
            0
        };
        self.seq = self.seq.max(seq);
        let first_row_id = (self.version() >= FormatVersion::V3).then_some(self.next_row_id);
        let (op, change) = self.plan_change(parent, op, seq);
        let removed: Vec<FileRec> = match &change.removal {
            Some((m, picked)) => picked
                .iter()
                .map(|&i| parent.manifests[*m].entries[i].file)
                .collect(),
            None => Vec::new(),
        };
        let mut slots = self.lay_out(parent, &change, id, first_row_id);
        if change.merge || slots.len() > self.layout.max_manifests {
            slots = merge(slots, id, self.layout.target_entries, self.layout.fan_in);
        }
        let commit_uuid = self.uuid();
        let manifests = self.write_slots(slots, id, seq, &commit_uuid).await?;
        let list: Vec<_> = manifests.iter().map(|m| m.list_entry.clone()).collect();
        let list_path = self
            .sink
            .paths
            .metadata(&format!("snap-{id}-0-{commit_uuid}.avro"));
        let meta = ManifestListMeta {
            format_version: self.version(),
            snapshot_id: id,
            parent_snapshot_id: parent.snapshot_id,
            sequence_number: seq,
            first_row_id,
        };
        let sync = self.rng.random();
        self.sink
            .manifest_list(&meta, &list, list_path.clone(), sync)
            .await?;
        let added = Tally::of(
            change
                .added
                .iter()
                .chain(&change.added_deletes)
                .map(FileRec::counted),
        );
        let removed = Tally::of(removed.iter().map(FileRec::counted));
        let totals = parent.totals.apply(&added, &removed);
        let summary = build_summary(
            op.operation(),
            &added,
            &removed,
            Some(&parent.totals.as_summary()),
        );
        self.data_files_added += change.added.len() as u64;
        for f in change.added.iter().chain(&change.added_deletes) {
            if self.write_data {
                let path = self.sink.paths.file(f);
                let content = match self.parquet.as_mut().and_then(|p| p.remove(&f.id)) {
                    Some(bytes) => bytes,
                    None => placeholder(f.records).into(),
                };
                self.sink.write(path, content).await?;
            }
        }
        let mut snap = Map::new();
        snap.insert("snapshot-id".into(), id.into());
        if let Some(p) = parent.snapshot_id {
            snap.insert("parent-snapshot-id".into(), p.into());
        }
        if self.version() >= FormatVersion::V2 {
            snap.insert("sequence-number".into(), seq.into());
        }
        snap.insert("timestamp-ms".into(), timestamp_ms.into());
        snap.insert("manifest-list".into(), list_path.into());
        snap.insert("summary".into(), json!(summary));
        snap.insert("schema-id".into(), 0.into());
        if let Some(first) = first_row_id {
            snap.insert("first-row-id".into(), first.into());
            snap.insert("added-rows".into(), (self.next_row_id - first).into());
        }
        self.snapshots.push(Value::Object(snap));
        Ok(Head {
            snapshot_id: Some(id),
            manifests,
            totals,
        })
    }

    /// New manifests first, then the parent's: carried, or (the victim) rewritten.
    fn lay_out(
        &self,
        parent: &Head,
        change: &Change,
        id: SnapshotId,
        first_row_id: Option<i64>,
    ) -> Vec<Slot> {
        let mut slots = Vec::with_capacity(parent.manifests.len() + 2);
        let added = |files: &[FileRec]| -> Vec<Entry> {
            files
                .iter()
                .map(|f| Entry {
                    status: EntryStatus::Added,
                    snapshot_id: id,
                    file: *f,
                    inherits: true,
                })
                .collect()
        };
        if !change.added.is_empty() {
            slots.push(Slot::New {
                content: ManifestContent::Data,
                entries: added(&change.added),
                first_row_id,
            });
        }
        if !change.added_deletes.is_empty() {
            slots.push(Slot::New {
                content: ManifestContent::Deletes,
                entries: added(&change.added_deletes),
                first_row_id: None,
            });
        }
        for (i, m) in parent.manifests.iter().enumerate() {
            match &change.removal {
                Some((victim, picked)) if *victim == i => {
                    if let Some(slot) = rewrite(m, picked, id) {
                        slots.push(slot);
                    }
                }
                _ => slots.push(Slot::Carried(Arc::clone(m))),
            }
        }
        slots
    }

    async fn write_slots(
        &mut self,
        slots: Vec<Slot>,
        id: SnapshotId,
        seq: i64,
        commit_uuid: &uuid::Uuid,
    ) -> Result<Vec<Arc<Manifest>>> {
        let mut out = Vec::with_capacity(slots.len());
        let mut n = 0;
        for slot in slots {
            match slot {
                Slot::Carried(m) => out.push(m),
                Slot::New {
                    content,
                    entries,
                    first_row_id,
                } => {
                    let path = self
                        .sink
                        .paths
                        .metadata(&format!("{commit_uuid}-m{n}.avro"));
                    n += 1;
                    let credit = Credit {
                        snapshot_id: id,
                        sequence_number: seq,
                        first_row_id,
                        sync: self.rng.random(),
                    };
                    let list_entry = self.sink.manifest(content, &entries, path, &credit).await?;
                    out.push(Arc::new(Manifest {
                        list_entry,
                        entries,
                    }));
                }
            }
        }
        Ok(out)
    }
}

/// The victim manifest without the picked entries: kept live ones EXISTING, picked ones DELETED by
/// `id`, older DELETED ones gone; `None` when nothing live is left.
fn rewrite(m: &Manifest, picked: &[usize], id: SnapshotId) -> Option<Slot> {
    let mut entries = Vec::with_capacity(m.entries.len());
    let mut live = 0;
    for (i, e) in m.entries.iter().enumerate() {
        if !e.status.is_live() {
            continue;
        }
        let mut e = *e;
        e.inherits = false;
        if picked.binary_search(&i).is_ok() {
            e.status = EntryStatus::Deleted;
            e.snapshot_id = id;
        } else {
            e.status = EntryStatus::Existing;
            live += 1;
        }
        entries.push(e);
    }
    (live > 0).then_some(Slot::New {
        content: m.content(),
        entries,
        first_row_id: m.list_entry.first_row_id,
    })
}

/// Size-tiered merging: small manifests (fewer than `target` entries) of the same content fall in
/// tier `floor(log_fan_in(entries))`; a tier holding `fan_in` or more is merged into one, which may
/// cascade into the next tier. Each file is rewritten about `log_fan_in(target / files per
/// snapshot)` times over its life, and the list keeps at most `fan_in - 1` manifests a tier.
fn merge(mut slots: Vec<Slot>, id: SnapshotId, target: usize, fan_in: usize) -> Vec<Slot> {
    let fan_in = fan_in.max(2);
    loop {
        let mut tiers: BTreeMap<(u32, u8), Vec<usize>> = BTreeMap::new();
        for (i, s) in slots.iter().enumerate() {
            let len = s.entries().len();
            if len < target {
                let tier = len.max(1).ilog(fan_in);
                tiers.entry((tier, s.content() as u8)).or_default().push(i);
            }
        }
        let Some(group) = tiers.into_values().find(|g| g.len() >= fan_in) else {
            return slots;
        };
        let mut taken: Vec<Option<Slot>> = slots.into_iter().map(Some).collect();
        let mut entries = Vec::new();
        let mut content = ManifestContent::Data;
        for &i in &group {
            if let Some(slot) = taken[i].take() {
                content = slot.content();
                entries.extend(slot.entries().iter().filter_map(|e| merged_entry(e, id)));
            }
        }
        let first_row_id = entries
            .iter()
            .filter(|e| e.status.is_live())
            .filter_map(|e| e.file.first_row_id)
            .min();
        taken[group[0]] = Some(Slot::New {
            content,
            entries,
            first_row_id,
        });
        slots = taken.into_iter().flatten().collect();
    }
}

/// An entry as a merged manifest holds it: this snapshot's ADDED and DELETED entries kept, other live
/// ones EXISTING, older DELETED ones dropped; every number explicit.
fn merged_entry(e: &Entry, id: SnapshotId) -> Option<Entry> {
    let mut e = *e;
    let ours = e.snapshot_id == id;
    match e.status {
        EntryStatus::Deleted if !ours => return None,
        EntryStatus::Added if ours => {}
        EntryStatus::Deleted => {}
        _ => e.status = EntryStatus::Existing,
    }
    e.inherits = false;
    Some(e)
}

#[cfg(test)]
#[path = "history_tests.rs"]
mod tests;
