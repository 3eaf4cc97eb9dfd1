//! `remove_orphan_files`: list the table, delete what nothing reaches (SPEC §4).
//!
//! Steps, in order; every check that needs no I/O runs before any I/O:
//! 1. **Arguments** (no I/O): `older_than` defaults to `now - iceberg_orphan_files_older_than_seconds`;
//!    a value after the statement's "now" is refused with ClickHouse's message (the binder checks
//!    too, but the executor's clock may differ); `location` is re-normalised (leading `./`, empty
//!    and `.` components dropped; `..` or a leading `/` refused).
//! 2. **Newest metadata** ([`locate`]; a stale version hint is never followed). When the table
//!    setting `iceberg_metadata_file_path` pins a file, it must be the newest committed one
//!    (else `BAD_ARGUMENTS`): scanning against an older file would delete newer commits' files.
//!    Unless `gc.enabled` is absent or `true`, the statement is refused (`BAD_ARGUMENTS`; Java's
//!    `DeleteOrphanFiles` refuses likewise, and so does our `expire_snapshots`).
//! 3. **Reachable set** ([`collect_reachable`]); a reference outside the table location is
//!    refused (`NOT_IMPLEMENTED`, naming up to 10).
//! 4. **Listing** ([`scan`]): recursive and streaming under `<root>` or `<root>/<location>`, each
//!    file judged by [`crate::maintain::orphans::classify`] as it arrives; first-level folders
//!    are listed concurrently (up to `iceberg_metadata_read_concurrency`; a local table is walked
//!    directly, folders shared by up to one worker per core, no symbolic link below the table
//!    location followed, see `FileIO::list_entries`). A `location` under which nothing is listed
//!    (no file, link or skipped entry) is `BAD_ARGUMENTS` "Scan path '<path>' does not exist". A listed
//!    file whose path matches a reachable one except for scheme or authority fails the statement
//!    (`INCORRECT_DATA`; Java's `PrefixMismatchMode.ERROR`) before anything is deleted.
//!    **Other tables** ([`other_tables`]): files that metadata resolution takes for table
//!    metadata (every `*.metadata.json` spelling, `version-hint.text`) outside our own
//!    `metadata/` folder belong to other tables. A whole-table scan finds them in its own listing;
//!    a narrowed one (`location = ...`) lists the whole location first. Found ones refuse the
//!    statement (`BAD_ARGUMENTS`, naming them; dry runs and EXPLAIN too) unless
//!    `protect_other_tables = 1`: then every metadata file found for them is read, and an orphan
//!    that any of them reaches, or that lies under their location, is kept (`other_table`).
//!    A found table that cannot be read refuses the statement.
//!    The metadata files the listing calls orphans then pass the metadata-file rule
//!    ([`newer_metadata`]): one at least as new as the planned file (version or
//!    `last-updated-ms`) is never deleted, and one of a version at least the planned one refuses
//!    the statement.
//! 5. **Delete** (unless dry run or EXPLAIN): re-locate the newest metadata; if it is no longer the
//!    file scanned against, nothing is deleted and the statement fails with `QUERY_WAS_CANCELLED`
//!    "Current metadata file changed during orphan scan (was '<a>', now '<b>'); nothing was
//!    deleted" (a concurrent commit may reference files the scan judged orphaned; re-run the
//!    statement). Then bulk deletes ([`delete`]), each path re-checked with [`is_under`] right
//!    before (on local disk also: no link on its path, a regular file; `FileIO::delete_below`);
//!    no metadata is written.
//!
//! Deliberate differences from ClickHouse 26.9: files under a `_`/`.` folder (other than a
//! `<partition field>=<value>` folder) and dotfiles are kept (ClickHouse deletes them as data
//! files); `gc.enabled=false`, references outside the location, a pinned older metadata file,
//! other tables' metadata under the location (unless `protect_other_tables = 1`; ClickHouse and
//! Java delete their files, apache/iceberg #17213) and a concurrent commit refuse the statement;
//! v1 tables are scanned (ClickHouse refuses them).
//!
//! **Result**: the nine rows of SPEC §4. A dry run counts every orphan as deleted; a real run
//! counts the deletes that succeeded (a file already gone counts as deleted) and the failures in
//! `failed_deletions_count` (also a warning naming the first paths).
//!
//! **EXPLAIN** returns one row per orphan, per kept unreachable file, per symbolic link and per
//! skipped entry, then totals; columns:
//!
//! | column          | type   | orphan row            | kept row                                  | link row        | skipped row      | total row               |
//! |-----------------|--------|-----------------------|-------------------------------------------|-----------------|------------------|-------------------------|
//! | `item`          | String | `orphan`              | `kept`                                    | `link`          | `skipped`        | `total`                 |
//! | `path`          | String | the file's URI        | the file's URI                            | the link's URI  | the entry's URI (bytes that are not UTF-8 or control characters escaped, `\xff`) | metric name (see below) |
//! | `category`      | String | by name: `data`, `position_delete`, `equality_delete`, `manifest`, `manifest_list`, `metadata`, `statistics` | `''` | `''` | `''` | `''` |
//! | `reason`        | String | `unreachable`         | `too_young`, `hidden`, `no_last_modified`, `other_table` | `symlink`       | `not_utf8_name`, `control_character_name`, `unreadable`, `folder_loop` | `''` |
//! | `files`         | Int64  | 1                     | 1                                         | 0               | 0                | how many files          |
//! | `size_bytes`    | Int64  | the file's size       | the file's size                           | 0               | 0                | their total size        |
//! | `last_modified` | String | `YYYY-MM-DD hh:mm:ss` in the session time zone | same, `''` when the store gave none | `''`            | `''`             | `''`                    |
//!
//! **Symbolic links** (local disk; object stores have none) below the table location are never
//! followed and never deleted, file and folder links alike (SPEC §7): files behind a link are not
//! listed, so they are neither orphans nor kept. The table location itself is opened as the path
//! it is (a location that is a link is the user's choice; `location = '<link>'` lists nothing).
//! Links and skipped entries (a name that is not UTF-8 or holds a control character, a folder
//! that cannot be read, a bind-mount loop) get an EXPLAIN row and a warning on a run or dry run;
//! they are counted by no metric row and by no total row. See `FileIO::list_entries` and
//! `FileIO::delete_below` (the delete re-checks: nothing is unlinked through a link).
//!
//! Total rows: the nine metrics (as a dry run reports them; `failed_deletions_count` is 0), then
//! `kept_too_young_count`, `kept_hidden_count`, `reachable_listed_count` (listed files that are
//! reachable; they get no row of their own) and `reachable_files_count` (the size of the
//! reachable set, `size_bytes` 0).
//!
//! With `protect_other_tables = 1` and other tables found, the plan starts with one row per other
//! table and one per metadata file found for it, and ends with one more total:
//!
//! | column     | `other_table` row                      | `other_table_metadata` row                          |
//! |------------|----------------------------------------|-----------------------------------------------------|
//! | `item`     | `other_table`                          | `other_table_metadata`                              |
//! | `path`     | its location (derived, see [`other_tables`]) | the metadata file (or version hint) found     |
//! | `category` | `''`                                   | `metadata` or `version_hint`                        |
//! | `reason`   | `protected`                            | the file's `location` field (`''` for a hint)       |
//! | `files`    | metadata files found for it            | 1                                                   |
//! | `size_bytes`, `last_modified` | 0, `''`             | 0, `''`                                             |
//!
//! and the total `kept_other_table_count`: files that would otherwise be orphans, kept because
//! they are another table's (`size_bytes` their size). Without other tables the plan is unchanged.
//!
//! Memory: the reachable set, one listing page per first-level folder in flight, and the orphans
//! found (held until the pointer re-check; EXPLAIN also holds the kept rows).

mod delete;
mod explain;
mod newer_metadata;
mod other_tables;
mod scan;

use super::reachable::collect_reachable;
use super::target::MaintenanceTarget;
use crate::engine::{Metrics, OrphanMetrics, QueryResult};
use crate::error::{Error, ErrorKind, Result};
use crate::iceberg::locate::LocatedMetadata;
use crate::io::{is_under, path_key};
use crate::maintain::orphans::OrphanTally;
use crate::plan::OrphanOptions;

pub use crate::io::SkipReason;
pub use scan::{KeepReason, Kept, Orphan, ScanOutcome};

/// Run `remove_orphan_files` on `target`; with `explain`, return the plan only.
pub async fn run(
    target: &MaintenanceTarget,
    options: &OrphanOptions,
    explain: bool,
) -> Result<QueryResult> {
    let older_than_ms = effective_older_than(target, options)?;
    let scan_rel = normalize_scan_location(options.location.as_deref())?;
    let located = locate_newest(target).await?;
    check_gc_enabled(target, &located)?;
    let reachable = collect_reachable(
        &target.io,
        &located.metadata,
        &located.path,
        &target.location,
        target.settings.metadata_read_concurrency(),
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
        Some(_) => Some(other_tables::search(&target.io, &target.location, concurrency).await?),
        None => None,
    };
    if let Some(found) = &searched {
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
    let mut outcome = scan::scan(&target.io, &request, &reachable).await?;
    let found = match searched {
        Some(found) => found,
        None => std::mem::take(&mut outcome.foreign_metadata),
    };
    refuse_other_tables(target, options, &found).await?;
    let protection = if found.is_empty() {
        None
    } else {
        let others = other_tables::group(&target.location, found);
        let protection = other_tables::protect(
            &target.io,
            &target.table_name,
            &target.location,
            others,
            concurrency,
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
    if explain {
        let mut result = explain::result(
            &outcome,
            reachable.len(),
            &target.settings.session_time_zone(),
        );
        if let Some((protection, kept)) = &protection {
            explain::add_other_tables(&mut result, protection, &outcome, *kept);
        }
        return Ok(result);
    }
    if options.dry_run {
        let warnings = located.warnings.iter().cloned().chain(outcome.warnings());
        return Ok(metrics_result(&outcome.dry_run_tally(), warnings.collect()));
    }
    check_pointer_unchanged(target, &located.path).await?;
    target.progress.begin_writes()?;
    let deleted = delete::delete_orphans(
        &target.io,
        &target.location,
        &outcome.orphans,
        target.settings.delete_concurrency(),
    )
    .await;
    let mut tally = deleted.tally;
    tally.skipped_missing_metadata = outcome.skipped_missing_metadata;
    let warnings = located
        .warnings
        .iter()
        .cloned()
        .chain(outcome.warnings())
        .chain(deleted.warnings)
        .chain(target.progress.cancel_warning());
    Ok(metrics_result(&tally, warnings.collect()))
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
    Err(other_tables::refusal(&target.io, &target.table_name, &target.location, &others).await)
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
    let Some(location) = location else {
        return Ok(None);
    };
    let components: Vec<&str> = location.split('/').collect();
    if location.starts_with('/') || components.contains(&"..") {
        return Err(Error::bad_arguments(format!(
            "location must be a relative path under the table root, got '{location}'"
        )));
    }
    let kept: Vec<&str> = components
        .into_iter()
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    Ok((!kept.is_empty()).then(|| kept.join("/")))
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
         outside the table location '{}': {}",
        target.table_name,
        target.location,
        examples.join(", ")
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

fn metrics_result(tally: &OrphanTally, warnings: Vec<String>) -> QueryResult {
    let metrics = OrphanMetrics {
        deleted_data_files_count: tally.data_files,
        deleted_position_delete_files_count: tally.position_delete_files,
        deleted_equality_delete_files_count: tally.equality_delete_files,
        deleted_manifest_files_count: tally.manifest_files,
        deleted_manifest_lists_count: tally.manifest_lists,
        deleted_metadata_files_count: tally.metadata_files,
        deleted_statistics_files_count: tally.statistics_files,
        skipped_missing_metadata_count: tally.skipped_missing_metadata,
        failed_deletions_count: tally.failed_deletions,
    };
    let mut result = QueryResult::from_metrics(Metrics::Orphans(metrics));
    result.warnings = warnings;
    result
}

/// Whether `uri` may be deleted: strictly inside the table location.
pub(crate) fn deletable(location: &str, uri: &str) -> bool {
    is_under(location, uri)
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

    #[test]
    fn metrics_rows_carry_the_tally() {
        let tally = OrphanTally {
            data_files: 2,
            metadata_files: 1,
            failed_deletions: 3,
            ..Default::default()
        };
        let result = metrics_result(&tally, vec!["w".into()]);
        let Some(Metrics::Orphans(m)) = result.metrics else {
            panic!("no orphan metrics");
        };
        assert_eq!(m.deleted_data_files_count, 2);
        assert_eq!(m.deleted_metadata_files_count, 1);
        assert_eq!(m.failed_deletions_count, 3);
        assert_eq!(result.warnings, ["w"]);
    }
}
