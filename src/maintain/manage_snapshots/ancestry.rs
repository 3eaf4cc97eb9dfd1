//! Walking a snapshot's ancestry through `parent-snapshot-id` (Java `SnapshotUtil.ancestorIds`):
//! from a snapshot to the first one whose parent is absent or no longer listed. A parent cycle
//! (malformed metadata) ends the walk at the first repeated id.

use std::collections::HashSet;

use crate::iceberg::metadata::TableMetadata;
use crate::iceberg::spec::{Snapshot, SnapshotId};

/// `from` and its ancestors, newest first; empty when `from` is `None` or not listed.
pub fn ancestors(metadata: &TableMetadata, from: Option<SnapshotId>) -> Vec<&Snapshot> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut next = from;
    while let Some(id) = next {
        if !seen.insert(id) {
            break;
        }
        let Some(snapshot) = metadata.snapshot(id) else {
            break;
        };
        out.push(snapshot);
        next = snapshot.parent_snapshot_id;
    }
    out
}

/// Whether `ancestor` is `of` or one of its ancestors.
pub fn is_ancestor_of(metadata: &TableMetadata, ancestor: SnapshotId, of: SnapshotId) -> bool {
    ancestors(metadata, Some(of))
        .iter()
        .any(|s| s.snapshot_id == ancestor)
}

/// The current snapshot and its ancestors, newest first.
pub fn current_ancestors(metadata: &TableMetadata) -> Vec<&Snapshot> {
    ancestors(metadata, metadata.current_snapshot_id())
}

/// Whether `id` is the current snapshot or one of its ancestors.
pub fn is_current_ancestor(metadata: &TableMetadata, id: SnapshotId) -> bool {
    current_ancestors(metadata)
        .iter()
        .any(|s| s.snapshot_id == id)
}
