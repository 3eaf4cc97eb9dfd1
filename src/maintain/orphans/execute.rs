//! The executor of `remove_orphan_files` in the procedure shape: the plan is the steps of
//! [`super`]'s algorithm up to the judgement (locate, read the reachable set, list, judge); a run
//! re-checks the metadata and deletes, returning an [`OrphanOutcome`].

use super::explain::OrphanExplainRow;
use super::metrics::OrphanMetrics;
use super::scan::{KeepReason, Kept, ScanOutcome};
use super::{delete, explain, newer_metadata, other_tables, protect, scan};
use crate::error::{Error, ErrorKind, Result};
use crate::iceberg::locate::LocatedMetadata;
use crate::io::path_key;
use crate::maintain::file_graph::reachable::collect_reachable_reporting;
use crate::maintain::report::{Metrics, Report, ReportBody, Reported};
use crate::maintain::shape::{Intent, MaintenanceProcedure};
use crate::maintain::target::MaintenanceTarget;
use crate::plan::{OrphanOptions, normalize_location};
use crate::progress::Phase;
use crate::time_zone::SessionTimeZone;

/// What one `remove_orphan_files` statement did (a dry run: would do; EXPLAIN: plans).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OrphanOutcome {
    /// The counts (all 0 for EXPLAIN).
    pub metrics: OrphanMetrics,
    /// EXPLAIN only: the plan, row by row.
    pub explain: Option<Vec<OrphanExplainRow>>,
    /// Things the user should know that did not fail the statement.
    pub warnings: Vec<String>,
    /// A run: the listed sizes of the files it deleted.
    pub freed_bytes: Option<i64>,
}

impl Reported for OrphanOutcome {
    fn into_report(self) -> Report {
        let failed_deletions = self.metrics.failed_deletions_count;
        let metrics = ReportBody::Metrics(Metrics::Orphans(self.metrics));
        let mut report = Report::explain_or(self.explain, metrics, self.warnings);
        report.failed_deletions = failed_deletions;
        report.freed_bytes = self.freed_bytes;
        report
    }
}

/// `remove_orphan_files` in the procedure shape.
pub struct RemoveOrphans;

/// What `remove_orphan_files` decided: the unreachable files old enough to delete, after
/// protecting other tables and newer metadata, on the metadata it scanned.
pub struct OrphanPlan {
    /// The metadata the scan started from (a run re-checks it is still the newest).
    located: LocatedMetadata,
    scan: ScanOutcome,
    /// Other tables found under the location, and how many of our orphans are theirs.
    protection: Option<(other_tables::Protection, i64)>,
    /// EXPLAIN's context: the reachable files, the time zone and the protect option.
    reachable_files: usize,
    zone: SessionTimeZone,
    protect_other_tables: bool,
}

impl MaintenanceProcedure for RemoveOrphans {
    type Options = OrphanOptions;
    type Plan = OrphanPlan;
    type Outcome = OrphanOutcome;
    const PHASES: &'static [Phase] = &[
        Phase::ReadingManifestLists,
        Phase::ReadingManifests,
        Phase::ListingFiles,
        Phase::DeletingFiles,
    ];
    const DELETES_BY_LISTING: bool = true;

    fn name(_: &OrphanOptions) -> String {
        "remove_orphan_files".to_string()
    }

    fn dry_run(options: &OrphanOptions) -> bool {
        options.dry_run
    }

    async fn plan(
        target: &MaintenanceTarget,
        options: &OrphanOptions,
        intent: Intent,
    ) -> Result<OrphanPlan> {
        plan(target, options, intent == Intent::Explain).await
    }

    fn explain(plan: OrphanPlan) -> OrphanOutcome {
        let mut rows = explain::explain_rows(&plan.scan, plan.reachable_files, &plan.zone);
        if let Some((protection, kept)) = &plan.protection {
            let protected = plan.protect_other_tables;
            explain::add_other_tables(&mut rows, protection, &plan.scan, *kept, protected);
        }
        OrphanOutcome {
            explain: Some(rows),
            ..OrphanOutcome::default()
        }
    }

    fn count(plan: OrphanPlan) -> OrphanOutcome {
        let warnings = plan.located.warnings.iter().cloned();
        OrphanOutcome {
            metrics: plan.scan.dry_run_tally(),
            explain: None,
            warnings: warnings.chain(plan.scan.warnings()).collect(),
            freed_bytes: None,
        }
    }

    async fn execute(
        target: &MaintenanceTarget,
        _: &OrphanOptions,
        plan: OrphanPlan,
    ) -> Result<OrphanOutcome> {
        delete_planned(target, plan).await
    }
}

/// Locate, read the reachable set, list, judge: the plan (EXPLAIN's when `explain`: it refuses
/// nothing and keeps the rows of kept files).
async fn plan(
    target: &MaintenanceTarget,
    options: &OrphanOptions,
    explain: bool,
) -> Result<OrphanPlan> {
    let older_than_ms = effective_older_than(target, options)?;
    let scan_rel = normalize_scan_location(options.location.as_deref())?;
    let located = locate_newest(target).await?;
    // A forked table: the other branch's files look unreferenced from ours.
    located.check_not_forked()?;
    check_gc_enabled(target, &located)?;
    let reachable = collect_reachable_reporting(
        &target.io,
        &located.metadata,
        &located.path,
        &target.location,
        target.settings.metadata_read_concurrency(),
        &target.progress,
    )
    .await?;
    refuse_outside_references(target, reachable.outside())?;
    let partition_field_names: Vec<String> = located
        .metadata
        .partition_specs()
        .iter()
        .flat_map(|spec| spec.fields.iter().map(|f| f.name.clone()))
        .collect();
    let concurrency = target.settings.metadata_read_concurrency();
    // A narrowed scan does not see the whole location: search it first (and refuse before the
    // scan); a whole-table scan finds other tables' metadata as it lists.
    let searched = match scan_rel {
        Some(_) => Some(protect::search(&target.io, &target.location, concurrency).await?),
        None => None,
    };
    // EXPLAIN refuses nothing: it lists the other tables and what protecting them would keep.
    if let Some(found) = searched.as_ref().filter(|_| !explain) {
        refuse_other_tables(target, options, found).await?;
    }
    let request = scan::ScanRequest {
        location: &target.location,
        scan_rel: scan_rel.as_deref(),
        older_than_ms,
        partition_field_names: &partition_field_names,
        keep_kept_rows: explain,
        concurrency,
    };
    let mut outcome = scan::scan(&target.io, &request, &reachable, &target.progress).await?;
    let found = match searched {
        Some(found) => found,
        None => std::mem::take(&mut outcome.foreign_metadata),
    };
    if !explain {
        refuse_other_tables(target, options, &found).await?;
    }
    let protection = if found.is_empty() {
        None
    } else {
        let others = other_tables::group(&target.location, found);
        let protection = protect::protect(
            &target.io,
            &target.table_name,
            &target.location,
            others,
            concurrency,
            &target.progress,
        )
        .await?;
        let kept = keep_other_tables(&mut outcome, &protection, explain);
        Some((protection, kept))
    };
    newer_metadata::keep_newer_metadata(
        &target.io,
        &located,
        &mut outcome.orphans,
        target.settings.metadata_read_concurrency(),
        &target.table_name,
    )
    .await?;
    Ok(OrphanPlan {
        located,
        scan: outcome,
        protection,
        reachable_files: reachable.len(),
        zone: target.settings.session_time_zone(),
        protect_other_tables: options.protect_other_tables,
    })
}

/// Delete the planned orphans, after checking the metadata did not move since the scan.
async fn delete_planned(target: &MaintenanceTarget, plan: OrphanPlan) -> Result<OrphanOutcome> {
    let OrphanPlan {
        located,
        scan: outcome,
        ..
    } = plan;
    check_pointer_unchanged(target, &located.path).await?;
    target.progress.begin_writes()?;
    let deleted = delete::delete_orphans(
        &target.io,
        &target.location,
        &outcome.orphans,
        target.settings.delete_concurrency(),
        &target.progress,
    )
    .await;
    let mut tally = deleted.tally;
    tally.skipped_missing_metadata_count = outcome.skipped_missing_metadata;
    let warnings = located
        .warnings
        .iter()
        .cloned()
        .chain(outcome.warnings())
        .chain(deleted.warnings)
        .chain(target.progress.cancel_warning());
    Ok(OrphanOutcome {
        metrics: tally,
        explain: None,
        warnings: warnings.collect(),
        freed_bytes: Some(i64::try_from(deleted.freed_bytes).unwrap_or(i64::MAX)),
    })
}

/// Refuse when `found` (other tables' metadata under the location) is not empty and the
/// statement does not protect them.
async fn refuse_other_tables(
    target: &MaintenanceTarget,
    options: &OrphanOptions,
    found: &[String],
) -> Result<()> {
    if found.is_empty() || options.protect_other_tables {
        return Ok(());
    }
    let others = other_tables::group(&target.location, found.to_vec());
    Err(protect::refusal(&target.io, &target.table_name, &target.location, &others).await)
}

/// Move the orphans that are other tables' into the kept files (reason `other_table`); how many.
fn keep_other_tables(
    outcome: &mut ScanOutcome,
    protection: &other_tables::Protection,
    keep_rows: bool,
) -> i64 {
    let mut kept = 0i64;
    let orphans = std::mem::take(&mut outcome.orphans);
    for orphan in orphans {
        if !protection.keeps(&orphan.uri) {
            outcome.orphans.push(orphan);
            continue;
        }
        kept = kept.saturating_add(1);
        if keep_rows {
            outcome.kept.push(Kept {
                uri: orphan.uri,
                reason: KeepReason::OtherTable,
                size: orphan.size,
                last_modified_ms: Some(orphan.last_modified_ms),
            });
        }
    }
    kept
}

/// `older_than`, defaulted, and refused when after "now".
fn effective_older_than(target: &MaintenanceTarget, options: &OrphanOptions) -> Result<i64> {
    match options.older_than_ms {
        Some(ms) if ms > target.now_ms => Err(Error::bad_arguments(
            "older_than must not be in the future; a future value would bypass the \
             in-progress-write safety window",
        )),
        Some(ms) => Ok(ms),
        None => {
            let window_ms = target
                .settings
                .orphan_files_older_than_seconds()
                .saturating_mul(1000);
            Ok(target.now_ms.saturating_sub(window_ms))
        }
    }
}

/// The scan path below the root, normalised as the binder does (idempotent on its output).
fn normalize_scan_location(location: Option<&str>) -> Result<Option<String>> {
    location.map_or(Ok(None), normalize_location)
}

/// The newest committed metadata; a pinned `iceberg_metadata_file_path` must be it (one rule for
/// every procedure: [`MaintenanceTarget::locate_newest`]).
async fn locate_newest(target: &MaintenanceTarget) -> Result<LocatedMetadata> {
    target.locate_newest("remove_orphan_files").await
}

fn check_gc_enabled(target: &MaintenanceTarget, located: &LocatedMetadata) -> Result<()> {
    match located.metadata.property("gc.enabled") {
        None => Ok(()),
        Some(v) if v.trim().eq_ignore_ascii_case("true") => Ok(()),
        Some(v) => Err(Error::bad_arguments(format!(
            "Cannot remove orphan files of {}: GC is disabled by table property gc.enabled={v} \
             (deleting files may corrupt other tables)",
            target.table_name
        ))),
    }
}

fn refuse_outside_references(
    target: &MaintenanceTarget,
    outside: (usize, &[String]),
) -> Result<()> {
    let (count, examples) = outside;
    if count == 0 {
        return Ok(());
    }
    Err(Error::not_implemented(format!(
        "remove_orphan_files on {} cannot run: the current metadata references {count} file(s) \
         outside the table location '{}': {}{}",
        target.table_name,
        target.location,
        examples.join(", "),
        crate::iceberg::locate::copied_or_moved_hint(&target.location, examples)
    )))
}

/// Re-locate the newest metadata; refuse to delete when it moved since the scan began.
async fn check_pointer_unchanged(target: &MaintenanceTarget, scanned: &str) -> Result<()> {
    let now = locate_newest(target).await.map_err(|e| {
        e.context("remove_orphan_files: re-reading the current metadata before deleting; nothing was deleted")
    })?;
    if path_key(&now.path) == path_key(scanned) {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::QueryWasCancelled,
        format!(
            "Current metadata file changed during orphan scan (was '{scanned}', now '{}'); \
             nothing was deleted",
            now.path
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_locations_normalise() {
        let n = |s: &str| normalize_scan_location(Some(s)).unwrap();
        assert_eq!(n("data/"), Some("data".into()));
        assert_eq!(n("./data/"), Some("data".into()));
        assert_eq!(n("./data//x/./"), Some("data/x".into()));
        assert_eq!(n("./"), None);
        assert_eq!(normalize_scan_location(None).unwrap(), None);
        for bad in ["/data", "../x", "data/../../x"] {
            let e = normalize_scan_location(Some(bad)).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::BadArguments, "{bad}");
            assert!(e.message().contains(bad), "{}", e.message());
        }
    }
}
