//! Deleting what a committed expiry planned, leaf first (a crash never leaves metadata naming a
//! deleted file):
//! content files → manifests → manifest lists → statistics files, one bulk delete per stage.
//!
//! - A file already gone counts as deleted (`FileIO::delete_many` reports it as `Ok`).
//! - After a stage, [`after_failed_deletes`] says which manifests and manifest lists must now be
//!   kept: a manifest naming a file that could not be deleted, and a list naming such a manifest,
//!   so no surviving file loses the metadata that names it. Held files are not counted.
//! - Every URI is checked again with [`is_under`] right before deleting: a path outside the table
//!   location is never deleted (the planner already refused such plans; this is the last guard).
//! - Failures never fail the statement; they come back as one warning with the count and the
//!   first paths.

use std::collections::HashSet;

use super::plan::ExpiryPlan;
use crate::io::{FileIO, is_under};
use crate::maintain::expire::keepset::{
    ExpiryFileCounts, FileCandidate, FileCategory, FileDecision, PathId, after_failed_deletes,
};
use crate::progress::{Phase, Progress};

/// How many failed paths the warning names.
const FAILED_NAMED: usize = 10;

/// What the deletes did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteReport {
    /// Files deleted (or already gone), by category.
    pub counts: ExpiryFileCounts,
    /// URIs that could not be deleted, with the reason, in deletion order.
    pub failed: Vec<(String, String)>,
    /// Manifests and lists kept because something they name could not be deleted.
    pub held: usize,
    /// The bytes of the deleted files whose size the metadata records (a file already gone
    /// counts: its bytes are no longer stored).
    pub freed_bytes: i64,
}

impl DeleteReport {
    /// The warning to show, if anything failed.
    pub fn warning(&self) -> Option<String> {
        if self.failed.is_empty() {
            return None;
        }
        let first: Vec<String> = self
            .failed
            .iter()
            .take(FAILED_NAMED)
            .map(|(uri, why)| format!("{uri} ({why})"))
            .collect();
        Some(format!(
            "{} file(s) could not be deleted: {}{}{}",
            self.failed.len(),
            first.join("; "),
            if self.failed.len() > FAILED_NAMED {
                "; ..."
            } else {
                ""
            },
            if self.held > 0 {
                format!(
                    "; {} manifest(s)/manifest list(s) naming them were kept",
                    self.held
                )
            } else {
                String::new()
            }
        ))
    }

    fn add(&mut self, category: FileCategory, n: i64) {
        let c = &mut self.counts;
        let slot = match category {
            FileCategory::DataFile => &mut c.data_files,
            FileCategory::PositionDeleteFile => &mut c.position_delete_files,
            FileCategory::EqualityDeleteFile => &mut c.equality_delete_files,
            FileCategory::Manifest => &mut c.manifest_files,
            FileCategory::ManifestList => &mut c.manifest_lists,
            FileCategory::StatisticsFile => &mut c.statistics_files,
        };
        *slot = slot.saturating_add(n);
    }
}

const STAGES: [&[FileCategory]; 4] = [
    &[
        FileCategory::DataFile,
        FileCategory::PositionDeleteFile,
        FileCategory::EqualityDeleteFile,
    ],
    &[FileCategory::Manifest],
    &[FileCategory::ManifestList],
    &[FileCategory::StatisticsFile],
];

/// Delete the planned files of `plan` under `location`, leaf first, with up to `in_flight`
/// delete requests at once (`iceberg_delete_concurrency`).
pub async fn delete_planned(
    io: &FileIO,
    location: &str,
    plan: &ExpiryPlan,
    in_flight: usize,
    progress: &Progress,
) -> DeleteReport {
    let mut report = DeleteReport::default();
    let mut failed_ids: HashSet<PathId> = HashSet::new();
    let mut decision: FileDecision = plan.delete.clone();
    progress.start(
        Phase::DeletingFiles,
        Some(
            STAGES
                .concat()
                .iter()
                .map(|c| decision.files(*c).len())
                .sum(),
        ),
    );
    for stage in STAGES.iter().take_while(|_| progress.keep_going()) {
        let batch: Vec<(FileCategory, FileCandidate)> = stage
            .iter()
            .flat_map(|c| decision.files(*c).iter().map(move |f| (*c, *f)))
            .collect();
        delete_stage(
            io,
            location,
            plan,
            &batch,
            in_flight,
            &mut report,
            &mut failed_ids,
        )
        .await;
        progress.advance(
            batch.len() as u64,
            batch.iter().filter_map(|(_, f)| f.size).sum::<i64>().max(0) as u64,
        );
        if !failed_ids.is_empty() {
            let held = after_failed_deletes(
                &plan.files.graph,
                &plan.decision.expired,
                &plan.delete,
                &plan.contents,
                &failed_ids,
            );
            decision = plan.delete.without(&held);
            report.held = held.manifests.len() + held.manifest_lists.len();
        }
    }
    report
}

async fn delete_stage(
    io: &FileIO,
    location: &str,
    plan: &ExpiryPlan,
    batch: &[(FileCategory, FileCandidate)],
    in_flight: usize,
    report: &mut DeleteReport,
    failed_ids: &mut HashSet<PathId>,
) {
    let mut uris = Vec::with_capacity(batch.len());
    let mut sent: Vec<(FileCategory, PathId, Option<i64>)> = Vec::with_capacity(batch.len());
    for (category, file) in batch {
        let uri = plan.uri(file.path).unwrap_or_default();
        if uri.is_empty() || !is_under(location, uri) {
            failed_ids.insert(file.path);
            report.failed.push((
                uri.to_string(),
                format!("outside the table location '{location}', not deleted"),
            ));
            continue;
        }
        uris.push(uri.to_string());
        sent.push((*category, file.path, file.size));
    }
    if uris.is_empty() {
        return;
    }
    let outcomes = io.delete_many_with(&uris, in_flight).await;
    for ((category, id, size), outcome) in sent.into_iter().zip(outcomes) {
        match outcome.result {
            Ok(()) => {
                report.add(category, 1);
                let size = size.unwrap_or(0).max(0);
                report.freed_bytes = report.freed_bytes.saturating_add(size);
            }
            Err(e) => {
                failed_ids.insert(id);
                report.failed.push((outcome.uri, e.message().to_string()));
            }
        }
    }
}
