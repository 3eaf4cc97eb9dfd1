//! Runs a bound maintenance procedure on a registered table: `expire_snapshots` and
//! `remove_orphan_files`, for real, as a dry run, or as `EXPLAIN`, within the statement's
//! [`Progress`] scope (progress events, cancellation).

use super::registry::TableDef;
use super::render::{
    change_result, compact_result, expire_result, orphan_result, rewrite_manifests_result,
    snapshot_result,
};
use super::result::QueryResult;
use super::runtime::Runtime;
use super::table::open_table;
use crate::error::{Error, ErrorKind, Result};
use crate::maintain::target::MaintenanceTarget;
use crate::maintain::{
    CompactOutcome, ExpireOutcome, OrphanOutcome, RewriteManifestsOutcome, SnapshotOutcome,
    compact, expire, manage_snapshots, orphans, rewrite_manifests,
};
use crate::plan::{
    CompactOptions, ExpireOptions, OrphanOptions, ProcedureCall, RewriteManifestsOptions,
    SnapshotProcedure, TableChange,
};
use crate::progress::Progress;
use crate::settings::Settings;

/// Run `call` on `table`. With `explain`, return the plan and change nothing.
pub async fn run_procedure(
    runtime: &Runtime,
    settings: &Settings,
    table: &TableDef,
    call: ProcedureCall,
    explain: bool,
) -> Result<QueryResult> {
    let progress = Progress::default();
    run_procedure_with(runtime, settings, table, call, explain, &progress).await
}

/// [`run_procedure`], reporting to and cancelled by `progress`.
pub async fn run_procedure_with(
    runtime: &Runtime,
    settings: &Settings,
    table: &TableDef,
    call: ProcedureCall,
    explain: bool,
    progress: &Progress,
) -> Result<QueryResult> {
    let target = open_table(runtime, settings, table)?;
    run_procedure_on(target, call, explain, progress).await
}

/// Run `call` on an opened `target` (a path table or a catalog table), reporting to and
/// cancelled by `progress`.
pub async fn run_procedure_on(
    mut target: MaintenanceTarget,
    call: ProcedureCall,
    explain: bool,
    progress: &Progress,
) -> Result<QueryResult> {
    target.progress = progress.clone();
    match call {
        ProcedureCall::Expire(options) => run_expire(&target, &options, explain)
            .await
            .map(expire_result),
        ProcedureCall::Orphans(options) => run_orphans(&target, &options, explain)
            .await
            .map(orphan_result),
        ProcedureCall::Snapshots(call) => run_snapshots(&target, &call, explain)
            .await
            .map(snapshot_result),
        ProcedureCall::RewriteManifests(options) => {
            run_rewrite_manifests(&target, &options, explain)
                .await
                .map(rewrite_manifests_result)
        }
        ProcedureCall::Compact(options) => run_compact(&target, &options, explain)
            .await
            .map(compact_result),
    }
}

/// Run a ref or property DDL statement on `table` (`explain`: the plan, nothing changed).
pub async fn run_table_change(
    runtime: &Runtime,
    settings: &Settings,
    table: &TableDef,
    change: &TableChange,
    explain: bool,
    progress: &Progress,
) -> Result<QueryResult> {
    let target = open_table(runtime, settings, table)?;
    run_table_change_on(target, change, explain, progress).await
}

/// Run a ref or property DDL statement on an opened `target` (a path table or a catalog table).
pub async fn run_table_change_on(
    mut target: MaintenanceTarget,
    change: &TableChange,
    explain: bool,
    progress: &Progress,
) -> Result<QueryResult> {
    target.progress = progress.clone();
    run_change(&target, change, explain)
        .await
        .map(change_result)
}

/// A snapshot-management procedure on an opened `target`: the one path of the SQL statement and
/// the typed API.
pub(crate) async fn run_snapshots(
    target: &MaintenanceTarget,
    call: &SnapshotProcedure,
    explain: bool,
) -> Result<SnapshotOutcome> {
    target
        .progress
        .scope(async move {
            target
                .check_single_table(call.procedure_name(), false)
                .await?;
            manage_snapshots::execute_procedure(target, call, explain).await
        })
        .await
}

/// A ref or property DDL statement on an opened `target`: the one path of the SQL statement and
/// the typed API.
pub(crate) async fn run_change(
    target: &MaintenanceTarget,
    change: &TableChange,
    explain: bool,
) -> Result<SnapshotOutcome> {
    target
        .progress
        .scope(async move {
            target
                .check_single_table(&change.statement_name(), false)
                .await?;
            manage_snapshots::execute_change(target, change, explain).await
        })
        .await
}

/// `rewrite_manifests` (and `OPTIMIZE TABLE t MANIFEST`) on an opened `target`, within its
/// progress scope: the one path of SQL and the typed API ([`super::api::RewriteManifests`]).
pub(crate) async fn run_rewrite_manifests(
    target: &MaintenanceTarget,
    options: &RewriteManifestsOptions,
    explain: bool,
) -> Result<RewriteManifestsOutcome> {
    target
        .progress
        .scope(async move {
            target
                .check_single_table("rewrite_manifests", false)
                .await?;
            rewrite_manifests::execute(target, options, explain).await
        })
        .await
}

/// `expire_snapshots` on an opened `target`, within its progress scope: the one path of both the
/// SQL statement and the typed API ([`super::api::ExpireSnapshots`]).
pub(crate) async fn run_expire(
    target: &MaintenanceTarget,
    options: &ExpireOptions,
    explain: bool,
) -> Result<ExpireOutcome> {
    target
        .progress
        .scope(async move {
            // Two tables written to one location: "this table" must be named first.
            target.check_single_table("expire_snapshots", false).await?;
            expire::execute(target, options, explain).await
        })
        .await
}

/// `remove_orphan_files` on an opened `target`, within its progress scope: the one path of both
/// the SQL statement and the typed API ([`super::api::RemoveOrphanFiles`]).
pub(crate) async fn run_orphans(
    target: &MaintenanceTarget,
    options: &OrphanOptions,
    explain: bool,
) -> Result<OrphanOutcome> {
    target
        .progress
        .scope(async move {
            target
                .check_single_table("remove_orphan_files", true)
                .await?;
            orphans::execute(target, options, explain).await
        })
        .await
}

/// ClickHouse 26.9's refusal of `OPTIMIZE TABLE ... MANIFEST` while its gate is off (code 36,
/// `BAD_ARGUMENTS`, observed through chdb); `rewrite_manifests` is refused the same way.
pub const OPTIMIZE_DISABLED: &str = "Enable 'allow_experimental_iceberg_compaction' setting to \
     call OPTIMIZE TABLE ... MANIFEST for iceberg tables";

/// `rewrite_data_files` / `OPTIMIZE TABLE` on an opened `target`, within its progress scope: the
/// one path of both SQL and the typed API ([`super::api::RewriteDataFiles`]).
pub(crate) async fn run_compact(
    target: &MaintenanceTarget,
    options: &CompactOptions,
    explain: bool,
) -> Result<CompactOutcome> {
    target
        .progress
        .scope(async move {
            target
                .check_single_table("rewrite_data_files", false)
                .await?;
            compact::execute(target, options, explain).await
        })
        .await
}

/// Refuses a procedure whose ClickHouse gate setting is off (`SUPPORT_IS_DISABLED`). Unknown
/// procedure names pass (the binder names them).
pub fn check_gates(procedure: &str, settings: &Settings) -> Result<()> {
    let disabled = |message: &str| Err(Error::new(ErrorKind::SupportIsDisabled, message));
    if !settings.allow_insert_into_iceberg() {
        return disabled(
            "Iceberg EXECUTE commands are experimental. To allow their usage, enable setting \
             allow_insert_into_iceberg",
        );
    }
    match procedure {
        "expire_snapshots" if !settings.allow_experimental_expire_snapshots() => disabled(
            "Iceberg expire_snapshots is experimental. To allow its usage, enable setting \
             allow_experimental_expire_snapshots",
        ),
        "remove_orphan_files" if !settings.allow_iceberg_remove_orphan_files() => disabled(
            "remove_orphan_files is experimental. To allow its usage, enable setting \
             allow_iceberg_remove_orphan_files",
        ),
        "rewrite_manifests" if !settings.allow_experimental_iceberg_compaction() => {
            Err(Error::bad_arguments(OPTIMIZE_DISABLED))
        }
        // ClickHouse 26.9's own words and code (observed through chdb): BAD_ARGUMENTS.
        "rewrite_data_files" if !settings.allow_experimental_iceberg_compaction() => {
            Err(Error::bad_arguments(
                "Enable 'allow_experimental_iceberg_compaction' setting to call optimize for \
                 iceberg tables",
            ))
        }
        _ => Ok(()),
    }
}
