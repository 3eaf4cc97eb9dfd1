//! Whether the manifests one attempt wrote may serve the next attempt after a commit conflict, or
//! the rewrite must plan again from the new head (pure).
//!
//! A rewrite's `replace` snapshot lists its new manifests in place of the ones they replace, on
//! top of the newest head; its manifests must list exactly the live files of that parent. The
//! written manifests are reused only when all of these hold, else they are deleted (this
//! statement wrote them and no commit references them) and the rewrite plans again on the head:
//! - **The planned-from snapshot is still in the head's history** (Iceberg Java's history check,
//!   "Cannot determine history between starting snapshot … and the last known ancestor …"). A
//!   rolled-back or replaced branch is another table state: the plan (which manifests to merge,
//!   how many, what the head holds besides) was made for the old head and says nothing about the
//!   new one.
//! - **The format version is the one planned with.** The manifests were written in that version's
//!   schema; after a v2 → v3 upgrade the table's new manifests are v3 manifests.
//! - **Every manifest they replace is still listed by the head** (Java's `BaseRewriteManifests`
//!   rule). Manifests never change once written, so the new manifests then hold exactly the live
//!   entries the replaced ones hold in the head, and the new list's live files are the head's:
//!   nothing is lost, and nothing removed meanwhile comes back.

use crate::iceberg::metadata::Ancestry;
use crate::iceberg::spec::{FormatVersion, SnapshotId};

/// What the written manifests were planned from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlannedFrom {
    pub snapshot_id: SnapshotId,
    pub format_version: FormatVersion,
}

/// The verdict on written manifests at a new attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reuse {
    /// Commit them on the new head.
    Reuse,
    /// Delete them and plan again; the reason.
    PlanAgain(String),
}

/// The verdict for manifests planned from `planned`, on a head where the planned-from snapshot
/// has `history`, the table is at `format_version`, and `replaced_all_listed` says whether every
/// manifest they replace is in the head's list. See the module comment.
pub fn reuse(
    planned: PlannedFrom,
    history: Ancestry,
    format_version: FormatVersion,
    replaced_all_listed: bool,
) -> Reuse {
    if let Some(gap) = history.gap_message(planned.snapshot_id) {
        return Reuse::PlanAgain(format!(
            "{gap} (the branch was rolled back or replaced since the plan)"
        ));
    }
    if format_version != planned.format_version {
        return Reuse::PlanAgain(format!(
            "the table's format version changed from {} to {} since the plan",
            planned.format_version.number(),
            format_version.number()
        ));
    }
    if !replaced_all_listed {
        return Reuse::PlanAgain(
            "a concurrent commit replaced manifests this rewrite had planned on".to_string(),
        );
    }
    Reuse::Reuse
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_combination() {
        let planned = PlannedFrom {
            snapshot_id: 7,
            format_version: FormatVersion::V2,
        };
        let histories = [
            Ancestry::Listed,
            Ancestry::Expired,
            Ancestry::Unrelated {
                last_known: Some(3),
            },
            Ancestry::Unrelated { last_known: None },
        ];
        for history in histories {
            for version in [FormatVersion::V1, FormatVersion::V2, FormatVersion::V3] {
                for listed in [true, false] {
                    let got = reuse(planned, history, version, listed);
                    let case = format!("{history:?} {version:?} {listed}");
                    let expected = if !history.in_history() {
                        Some("Cannot determine history between starting snapshot 7")
                    } else if version != FormatVersion::V2 {
                        Some("format version changed from 2 to")
                    } else if !listed {
                        Some("replaced manifests this rewrite had planned on")
                    } else {
                        None
                    };
                    match (expected, got) {
                        (None, Reuse::Reuse) => {}
                        (Some(want), Reuse::PlanAgain(why)) => {
                            assert!(why.contains(want), "{case}: {why}");
                        }
                        (want, got) => panic!("{case}: expected {want:?}, got {got:?}"),
                    }
                }
            }
        }
    }
}
