//! A snapshot's ancestry in one metadata document (pure): the chain of `parent-snapshot-id` from
//! a head back to the first snapshot whose parent is absent or no longer listed.
//!
//! Statements that plan from one snapshot and commit on a newer head ask whether the snapshot
//! they planned from is still in the head's history ([`TableMetadata::ancestry`]). Iceberg Java
//! asks the same before committing a rewrite (`validateFromSnapshot`, the history walk of
//! `MergingSnapshotProducer`): it walks the head's listed ancestors and accepts when the last one
//! it reaches is the starting snapshot or names it as its parent, so a starting snapshot that
//! expired meanwhile still counts when its child is listed. Otherwise the history between the two
//! cannot be determined (a rollback, a replaced or re-created branch), and what was planned from
//! the start says nothing about the head. A parent cycle (malformed metadata) ends the walk at the
//! first repeated id.

use std::collections::HashSet;

use super::TableMetadata;
use crate::iceberg::spec::SnapshotId;

/// Where a snapshot stands in a head's history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ancestry {
    /// It is the head or a listed snapshot on the head's parent chain.
    Listed,
    /// The head's parent chain reaches its id through a `parent-snapshot-id`, but the snapshot
    /// itself is no longer listed (expired): the history is still known.
    Expired,
    /// The chain ends without reaching it. `last_known`: the oldest snapshot the walk reached
    /// (`None` when there is no head or the head is not listed).
    Unrelated { last_known: Option<SnapshotId> },
}

impl Ancestry {
    /// Whether the snapshot is in the head's history (listed or expired).
    pub fn in_history(self) -> bool {
        !matches!(self, Ancestry::Unrelated { .. })
    }

    /// Iceberg Java's words for a history that cannot be determined between `start` and a head
    /// (`None` when the snapshot is in the head's history).
    pub fn gap_message(self, start: SnapshotId) -> Option<String> {
        match self {
            Ancestry::Listed | Ancestry::Expired => None,
            Ancestry::Unrelated { last_known } => Some(format!(
                "Cannot determine history between starting snapshot {start} and the last known \
                 ancestor {}",
                last_known.map_or_else(|| "null".to_string(), |id| id.to_string())
            )),
        }
    }
}

impl TableMetadata {
    /// Where `snapshot` stands in the history of `head` (see the module comment).
    pub fn ancestry(&self, snapshot: SnapshotId, head: Option<SnapshotId>) -> Ancestry {
        let mut seen = HashSet::new();
        let mut last_known = None;
        let mut next = head;
        while let Some(id) = next {
            if !seen.insert(id) {
                break;
            }
            let listed = self.snapshot(id);
            if id == snapshot {
                return if listed.is_some() {
                    Ancestry::Listed
                } else {
                    Ancestry::Expired
                };
            }
            let Some(listed) = listed else {
                break;
            };
            last_known = Some(id);
            next = listed.parent_snapshot_id;
        }
        Ancestry::Unrelated { last_known }
    }

    /// Whether `ancestor` is `of` itself or a listed snapshot on `of`'s parent chain (Iceberg
    /// Java's `SnapshotUtil.isAncestorOf`).
    pub fn is_ancestor_of(&self, ancestor: SnapshotId, of: SnapshotId) -> bool {
        self.ancestry(ancestor, Some(of)) == Ancestry::Listed
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    /// Snapshots `(id, parent)` in a v2 document (ids as given; 0 parent: none).
    fn with_snapshots(snapshots: &[(i64, i64)]) -> TableMetadata {
        let listed: Vec<Value> = snapshots
            .iter()
            .enumerate()
            .map(|(i, &(id, parent))| {
                let mut s = json!({"snapshot-id": id, "sequence-number": i + 1,
                    "timestamp-ms": 100 + i, "manifest-list": format!("s3://b/t/snap-{id}.avro"),
                    "summary": {"operation": "append"}});
                if parent != 0 {
                    s["parent-snapshot-id"] = json!(parent);
                }
                s
            })
            .collect();
        let doc = json!({
            "format-version": 2,
            "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
            "location": "s3://b/t",
            "last-sequence-number": snapshots.len(),
            "last-updated-ms": 1000,
            "last-column-id": 1,
            "current-schema-id": 0,
            "schemas": [{"type": "struct", "schema-id": 0, "fields": []}],
            "default-spec-id": 0,
            "partition-specs": [{"spec-id": 0, "fields": []}],
            "snapshots": listed,
        });
        TableMetadata::parse(doc.to_string().as_bytes(), "v1.metadata.json").unwrap()
    }

    #[test]
    fn a_chain_and_a_rolled_back_branch() {
        // 1 <- 2 <- 3 (the planned-from head), and 4 a new child of 2 after a rollback.
        let m = with_snapshots(&[(1, 0), (2, 1), (3, 2), (4, 2)]);
        assert_eq!(m.ancestry(3, Some(3)), Ancestry::Listed, "the head itself");
        assert_eq!(m.ancestry(2, Some(3)), Ancestry::Listed);
        assert_eq!(m.ancestry(1, Some(4)), Ancestry::Listed);
        assert_eq!(
            m.ancestry(3, Some(2)),
            Ancestry::Unrelated {
                last_known: Some(1)
            },
            "rolled back to 2: 3 is not in 2's history"
        );
        assert_eq!(
            m.ancestry(3, Some(4)),
            Ancestry::Unrelated {
                last_known: Some(1)
            },
            "a sibling"
        );
        assert_eq!(
            m.ancestry(3, None),
            Ancestry::Unrelated { last_known: None }
        );
        assert_eq!(
            m.ancestry(3, Some(99)),
            Ancestry::Unrelated { last_known: None },
            "an unlisted head"
        );
        assert!(m.is_ancestor_of(2, 4));
        assert!(m.is_ancestor_of(4, 4));
        assert!(!m.is_ancestor_of(4, 2));
        assert!(!m.is_ancestor_of(3, 4));
    }

    #[test]
    fn an_expired_start_counts_when_its_child_names_it() {
        // 1 and 2 expired; 3's parent is 2.
        let m = with_snapshots(&[(3, 2), (4, 3)]);
        assert_eq!(m.ancestry(2, Some(4)), Ancestry::Expired);
        assert!(m.ancestry(2, Some(4)).in_history());
        assert!(!m.is_ancestor_of(2, 4), "Java's isAncestorOf: listed only");
        assert_eq!(
            m.ancestry(1, Some(4)),
            Ancestry::Unrelated {
                last_known: Some(3)
            },
            "beyond the first missing parent nothing is known"
        );
    }

    #[test]
    fn a_parent_cycle_ends_the_walk() {
        let m = with_snapshots(&[(1, 2), (2, 1)]);
        assert_eq!(
            m.ancestry(7, Some(1)),
            Ancestry::Unrelated {
                last_known: Some(2)
            }
        );
        assert!(m.is_ancestor_of(2, 1));
    }

    #[test]
    fn javas_message() {
        assert_eq!(
            Ancestry::Unrelated {
                last_known: Some(5)
            }
            .gap_message(9)
            .as_deref(),
            Some(
                "Cannot determine history between starting snapshot 9 and the last known ancestor 5"
            )
        );
        assert_eq!(
            Ancestry::Unrelated { last_known: None }
                .gap_message(9)
                .as_deref(),
            Some(
                "Cannot determine history between starting snapshot 9 and the last known ancestor null"
            )
        );
        assert_eq!(Ancestry::Listed.gap_message(9), None);
        assert_eq!(Ancestry::Expired.gap_message(9), None);
    }
}
