//! Finishing the deletes of interrupted expiries, from their journals ([`super::journal`]).
//!
//! For each pending journal: when any of its snapshots is still in the current metadata, its
//! commit never happened and the journal is dropped. Otherwise the files are re-planned with the
//! ordinary planner on a *merged view*: the current metadata (every snapshot retained) plus the
//! journal's expired snapshots and their statistics entries as the base metadata recorded them.
//! The keep set is therefore every current snapshot's lists, manifests and live entries, and
//! only files no current snapshot lists live are deleted, leaf first, as in a normal expiry.
//! Anything that stops the recovery becomes a warning and keeps the journal for the next run.

use std::collections::BTreeSet;

use super::delete::delete_planned;
use super::journal::{self, PendingJournal};
use super::plan::plan_files;
use crate::error::{Error, Result};
use crate::iceberg::locate::{file_name, metadata_versions, parse_file_name};
use crate::iceberg::metadata::TableMetadata;
use crate::iceberg::spec::SnapshotId;
use crate::io::delete_failure_kind;
use crate::maintain::expire::keepset::ExpiryFileCounts;
use crate::maintain::expire::policy::ExpiryDecision;
use crate::maintain::target::MaintenanceTarget;

/// What finishing the pending journals did.
#[derive(Debug, Clone, Default)]
pub struct Recovered {
    pub counts: ExpiryFileCounts,
    pub warnings: Vec<String>,
}

/// Finish every pending journal of `target`, whose newest metadata is `current`.
/// `pending` is what [`journal::pending`] found (after [`retract_unconfirmed`]).
pub async fn finish_pending(
    target: &MaintenanceTarget,
    current: &TableMetadata,
    pending: (Vec<PendingJournal>, Vec<String>),
) -> Result<Recovered> {
    let (journals, warnings) = pending;
    let mut recovered = Recovered {
        warnings,
        ..Recovered::default()
    };
    for pending in journals {
        let expired = &pending.journal.expired_snapshot_ids;
        if expired.iter().any(|id| current.snapshot(*id).is_some()) {
            // The commit this journal announced never landed: nothing of it is to delete.
            recovered
                .warnings
                .extend(journal::remove(&target.io, &pending.uri).await);
            continue;
        }
        match finish_one(target, current, &pending).await {
            Ok(counts) => {
                if counts.total() > 0 {
                    recovered.warnings.push(format!(
                        "finished the deletes of an interrupted expire_snapshots (journal '{}'): \
                         {} file(s) deleted or already gone",
                        pending.uri,
                        counts.total()
                    ));
                }
                recovered.counts = recovered.counts.plus(counts);
            }
            Err(e) => recovered.warnings.push(format!(
                "could not finish the interrupted expire_snapshots recorded in '{}': {}; \
                 it is retried by the next expire_snapshots",
                pending.uri,
                e.message()
            )),
        }
    }
    Ok(recovered)
}

/// Before anything else, settle the journals of unconfirmed commits (another file of the same
/// version appeared after ours was written and ours could not be removed then): when ours is
/// still there beside the other file and no higher version builds on either, ours is removed now
/// (the commit never counted, so the journal goes too); when the other file is gone, ours is the
/// commit and the journal's deletes proceed as for any committed expiry; otherwise (a higher
/// version exists) nothing can be decided and a warning says so. Returns the journals still
/// pending and warnings.
pub async fn retract_unconfirmed(
    target: &MaintenanceTarget,
    journals: Vec<PendingJournal>,
) -> Result<(Vec<PendingJournal>, Vec<String>)> {
    let mut warnings = Vec::new();
    let mut still = Vec::new();
    for mut pending in journals {
        let Some(ours) = pending.journal.unconfirmed_metadata.clone() else {
            still.push(pending);
            continue;
        };
        let ours_name = file_name(&ours).to_string();
        let Some(version) = parse_file_name(&ours_name).and_then(|n| n.version) else {
            still.push(pending);
            continue;
        };
        let listed = metadata_versions(&target.io, &target.location).await?;
        let ours_there = listed.iter().any(|(_, n)| *n == ours_name);
        let rival = listed
            .iter()
            .find(|(v, n)| *v == version && *n != ours_name)
            .map(|(_, n)| n.clone());
        let higher = listed.iter().any(|(v, _)| *v > version);
        let mut cleared = pending.journal.clone();
        cleared.unconfirmed_metadata = None;
        match (ours_there, rival, higher) {
            (true, Some(rival), false) => match target.io.delete(&ours).await {
                Ok(()) => {
                    warnings.push(format!(
                        "retracted the unconfirmed commit '{ours}' of an earlier \
                         expire_snapshots ('{rival}' has the same version); its expiry is \
                         planned again"
                    ));
                    warnings.extend(journal::remove(&target.io, &pending.uri).await);
                }
                Err(e) => {
                    warnings.push(format!(
                        "the unconfirmed commit '{ours}' of an earlier expire_snapshots could \
                         not be retracted ({}); '{rival}' has the same version",
                        e.message()
                    ));
                    still.push(pending);
                }
            },
            (true, Some(rival), true) => {
                warnings.push(format!(
                    "the unconfirmed commit '{ours}' of an earlier expire_snapshots and \
                     '{rival}' share a version and a later version follows; remove the one \
                     readers must not take by hand (journal '{}')",
                    pending.uri
                ));
                still.push(pending);
            }
            // Ours alone (the commit stands) or gone (it never counted): an ordinary journal.
            _ => {
                journal::rewrite(&target.io, &pending.uri, &cleared).await?;
                pending.journal = cleared;
                still.push(pending);
            }
        }
    }
    Ok((still, warnings))
}

/// Re-plan and delete one committed journal's leftovers; removes the journal when all went well.
async fn finish_one(
    target: &MaintenanceTarget,
    current: &TableMetadata,
    pending: &PendingJournal,
) -> Result<ExpiryFileCounts> {
    let base_path = &pending.journal.base_metadata;
    let bytes = target
        .io
        .read(base_path)
        .await
        .map_err(|e| e.context("Cannot read the journal's base metadata"))?;
    let base = TableMetadata::parse_bytes(bytes, base_path)?;
    let expired: BTreeSet<SnapshotId> = pending
        .journal
        .expired_snapshot_ids
        .iter()
        .copied()
        .filter(|id| base.snapshot(*id).is_some())
        .collect();
    let merged = merged_view(current, &base, &expired)?;
    let decision = ExpiryDecision {
        snapshots: Vec::new(),
        refs: Vec::new(),
        retained: current.snapshots().iter().map(|s| s.snapshot_id).collect(),
        expired,
    };
    let plan = plan_files(target, &merged, decision).await?;
    let report = delete_planned(
        &target.io,
        &target.location,
        &plan,
        target.settings.delete_concurrency(),
        &target.progress,
    )
    .await;
    if let Some(warning) = report.warning() {
        return Err(Error::new(delete_failure_kind(&target.location), warning));
    }
    if let Some(warning) = journal::remove(&target.io, &pending.uri).await {
        return Err(Error::new(delete_failure_kind(&pending.uri), warning));
    }
    Ok(report.counts)
}

/// `current` plus the `expired` snapshots of `base` and their statistics entries.
fn merged_view(
    current: &TableMetadata,
    base: &TableMetadata,
    expired: &BTreeSet<SnapshotId>,
) -> Result<TableMetadata> {
    current.with_expired_of(base, expired)
}
