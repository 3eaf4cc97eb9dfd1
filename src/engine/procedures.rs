//! Runs a bound maintenance procedure on a registered table, for real, as a dry run, or as
//! `EXPLAIN`, within the statement's [`Progress`] scope (progress events, cancellation):
//! `expire_snapshots`, `remove_orphan_files`, `rewrite_data_files` / `OPTIMIZE TABLE`,
//! `rewrite_manifests` / `OPTIMIZE TABLE t MANIFEST`, the six snapshot procedures, and the branch,
//! tag and property DDL. Each has one `run_*` function here, the one path of its SQL statement and
//! its typed API.

use std::future::Future;
use std::pin::Pin;

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

/// One procedure statement, the one shape every procedure runs in: `run` (the executor's future
/// on `target`, a statement target from [`MaintenanceTarget::for_statement`] with its own read
/// cache, so a re-plan after a commit conflict reads only new files) within the progress scope
/// (events, cancellation), after refusing a location that holds a second table
/// ([`MaintenanceTarget::check_single_table`]; `even_when_chosen` for procedures that delete by
/// listing). `run` is boxed: the executors' futures are large and stay off the stack.
async fn statement<T, F>(
    target: &MaintenanceTarget,
    procedure: &str,
    even_when_chosen: bool,
    run: Pin<Box<F>>,
) -> Result<T>
where
    F: Future<Output = Result<T>>,
{
    target
        .progress
        .scope(async move {
            // Two tables written to one location: "this table" must be named first.
            target
                .check_single_table(procedure, even_when_chosen)
                .await?;
            run.await
        })
        .await
        .map_err(|e| name_the_table(e, target))
}

/// A storage failure (S3, Azure, local disk) of a procedure names the table and its location
/// first: the file that failed may be one of icetrim's own (the expiry journal's hidden folder)
/// rather than one the user knows.
fn name_the_table(e: Error, target: &MaintenanceTarget) -> Error {
    if !e.kind().is_storage_failure() {
        return e;
    }
    let location = crate::io::mask_url(&target.location);
    if target.table_name == target.location {
        e.context(format!("Table at '{location}'"))
    } else {
        e.context(format!("Table {} at '{location}'", target.table_name))
    }
}

/// A snapshot-management procedure on an opened `target`: the one path of the SQL statement and
/// the typed API.
pub(crate) async fn run_snapshots(
    target: &MaintenanceTarget,
    call: &SnapshotProcedure,
    explain: bool,
) -> Result<SnapshotOutcome> {
    let target = &target.for_statement();
    let run = Box::pin(manage_snapshots::execute_procedure(target, call, explain));
    statement(target, call.procedure_name(), false, run).await
}

/// A ref or property DDL statement on an opened `target`: the one path of the SQL statement and
/// the typed API.
pub(crate) async fn run_change(
    target: &MaintenanceTarget,
    change: &TableChange,
    explain: bool,
) -> Result<SnapshotOutcome> {
    let target = &target.for_statement();
    let run = Box::pin(manage_snapshots::execute_change(target, change, explain));
    statement(target, &change.statement_name(), false, run).await
}

/// `rewrite_manifests` (and `OPTIMIZE TABLE t MANIFEST`) on an opened `target`: the one path of
/// SQL and the typed API ([`super::api::RewriteManifests`]).
pub(crate) async fn run_rewrite_manifests(
    target: &MaintenanceTarget,
    options: &RewriteManifestsOptions,
    explain: bool,
) -> Result<RewriteManifestsOutcome> {
    let target = &target.for_statement();
    let run = Box::pin(rewrite_manifests::execute(target, options, explain));
    statement(target, "rewrite_manifests", false, run).await
}

/// `expire_snapshots` on an opened `target`: the one path of both the SQL statement and the
/// typed API ([`super::api::ExpireSnapshots`]).
pub(crate) async fn run_expire(
    target: &MaintenanceTarget,
    options: &ExpireOptions,
    explain: bool,
) -> Result<ExpireOutcome> {
    let target = &target.for_statement();
    let run = Box::pin(expire::execute(target, options, explain));
    statement(target, "expire_snapshots", false, run).await
}

/// `remove_orphan_files` on an opened `target`: the one path of both the SQL statement and the
/// typed API ([`super::api::RemoveOrphanFiles`]).
pub(crate) async fn run_orphans(
    target: &MaintenanceTarget,
    options: &OrphanOptions,
    explain: bool,
) -> Result<OrphanOutcome> {
    let target = &target.for_statement();
    let run = Box::pin(orphans::execute(target, options, explain));
    statement(target, "remove_orphan_files", true, run).await
}

/// ClickHouse 26.9's refusal of `OPTIMIZE TABLE ... MANIFEST` while its gate is off (code 36,
/// `BAD_ARGUMENTS`, observed through chdb); `rewrite_manifests` is refused the same way.
pub const OPTIMIZE_DISABLED: &str = "Enable 'allow_experimental_iceberg_compaction' setting to \
     call OPTIMIZE TABLE ... MANIFEST for iceberg tables";

/// `rewrite_data_files` / `OPTIMIZE TABLE` on an opened `target`: the one path of both SQL and
/// the typed API ([`super::api::RewriteDataFiles`]).
pub(crate) async fn run_compact(
    target: &MaintenanceTarget,
    options: &CompactOptions,
    explain: bool,
) -> Result<CompactOutcome> {
    let target = &target.for_statement();
    let run = Box::pin(compact::execute(target, options, explain));
    statement(target, "rewrite_data_files", false, run).await
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
