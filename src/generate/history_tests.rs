//! Rewrites and merges of the generator's manifests.

use super::*;
use crate::iceberg::manifest_list::ManifestFile;

fn file(id: u128, seq: i64) -> FileRec {
    FileRec {
        id,
        content: DataContent::Data,
        records: 10,
        size: 8,
        seq,
        first_row_id: Some(id as i64 * 10),
        referenced: None,
        part: None,
    }
}

fn entry(status: EntryStatus, snapshot_id: SnapshotId, id: u128) -> Entry {
    Entry {
        status,
        snapshot_id,
        file: file(id, snapshot_id),
        inherits: status == EntryStatus::Added,
    }
}

fn manifest(entries: Vec<Entry>) -> Arc<Manifest> {
    Arc::new(Manifest {
        list_entry: ManifestFile {
            manifest_path: "m".into(),
            manifest_length: 1,
            partition_spec_id: 0,
            content: ManifestContent::Data,
            sequence_number: 1,
            min_sequence_number: 1,
            added_snapshot_id: 1,
            added_files_count: None,
            existing_files_count: None,
            deleted_files_count: None,
            added_rows_count: None,
            existing_rows_count: None,
            deleted_rows_count: None,
            partitions: None,
            key_metadata: None,
            first_row_id: Some(7),
        },
        entries,
    })
}

fn statuses(slot: &Slot) -> Vec<(u128, EntryStatus, SnapshotId, bool)> {
    slot.entries()
        .iter()
        .map(|e| (e.file.id, e.status, e.snapshot_id, e.inherits))
        .collect()
}

#[test]
fn rewrite_marks_picked_deleted_and_drops_old_deletes() {
    let m = manifest(vec![
        entry(EntryStatus::Added, 1, 1),
        entry(EntryStatus::Deleted, 2, 2),
        entry(EntryStatus::Existing, 1, 3),
    ]);
    let slot = rewrite(&m, &[0], 9).unwrap();
    assert_eq!(
        statuses(&slot),
        vec![
            (1, EntryStatus::Deleted, 9, false),
            (3, EntryStatus::Existing, 1, false)
        ]
    );
    assert_eq!(
        slot.entries()[0].file.seq,
        1,
        "the data sequence number is kept"
    );
    assert!(matches!(
        slot,
        Slot::New {
            first_row_id: Some(7),
            ..
        }
    ));
    assert!(rewrite(&m, &[0, 2], 9).is_none(), "nothing live: dropped");
}

#[test]
fn merge_keeps_this_snapshots_changes_and_bounds_tiers() {
    let id = 50;
    let slots = vec![
        Slot::New {
            content: ManifestContent::Data,
            entries: vec![entry(EntryStatus::Added, id, 1)],
            first_row_id: Some(10),
        },
        Slot::Carried(manifest(vec![entry(EntryStatus::Added, 3, 2)])),
        Slot::Carried(manifest(vec![
            entry(EntryStatus::Deleted, 4, 3),
            entry(EntryStatus::Existing, 2, 4),
        ])),
        Slot::New {
            content: ManifestContent::Data,
            entries: vec![entry(EntryStatus::Deleted, id, 5)],
            first_row_id: None,
        },
    ];
    let merged = merge(slots, id, 100, 2);
    assert_eq!(merged.len(), 1, "tiers cascade into one manifest");
    let mut got = statuses(&merged[0]);
    got.sort_by_key(|(id, ..)| *id);
    assert_eq!(
        got,
        vec![
            (1, EntryStatus::Added, id, false),
            (2, EntryStatus::Existing, 3, false),
            (4, EntryStatus::Existing, 2, false),
            (5, EntryStatus::Deleted, id, false),
        ]
    );
    assert!(matches!(
        merged[0],
        Slot::New {
            first_row_id: Some(10),
            ..
        }
    ));
}

#[test]
fn full_manifests_are_never_merged() {
    let big = || {
        Slot::Carried(manifest(
            (0..4).map(|i| entry(EntryStatus::Existing, 1, i)).collect(),
        ))
    };
    let merged = merge(vec![big(), big(), big()], 9, 4, 2);
    assert_eq!(merged.len(), 3);
    assert!(merged.iter().all(|s| matches!(s, Slot::Carried(_))));
}
