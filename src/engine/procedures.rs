//! Runs a bound maintenance procedure on a registered table, for real, as a dry run, or as
//! `EXPLAIN`, within the statement's [`Progress`] scope (progress events, cancellation):
//! `expire_snapshots`, `remove_orphan_files`, `rewrite_data_files` / `OPTIMIZE TABLE`,
//! `rewrite_manifests` / `OPTIMIZE TABLE t MANIFEST`, the six snapshot procedures, and the branch,
//! tag and property DDL. One generic [`run`] is the one path of every SQL statement and typed
//! builder; one [`render`] turns every outcome into rows.

use super::registry::TableDef;
use super::render::render;
use super::result::QueryResult;
use super::runtime::Runtime;
use super::table::open_table;
use crate::error::{Error, ErrorKind, Result};
use crate::maintain::shape::{
    self, ChangeTable, Compact, Expire, MaintenanceProcedure, ManageSnapshots, RemoveOrphans,
    RewriteManifests,
};
use crate::maintain::target::MaintenanceTarget;
use crate::plan::{ProcedureCall, TableChange};
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
    let target = &target;
    match call {
        ProcedureCall::Expire(options) => {
            run::<Expire>(target, &options, explain).await.map(render)
        }
        ProcedureCall::Orphans(options) => run::<RemoveOrphans>(target, &options, explain)
            .await
            .map(render),
        ProcedureCall::Snapshots(call) => run::<ManageSnapshots>(target, &call, explain)
            .await
            .map(render),
        ProcedureCall::RewriteManifests(options) => {
            run::<RewriteManifests>(target, &options, explain)
                .await
                .map(render)
        }
        ProcedureCall::Compact(options) => {
            run::<Compact>(target, &options, explain).await.map(render)
        }
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
    run::<ChangeTable>(&target, change, explain)
        .await
        .map(render)
}

/// One procedure statement, the one path of every procedure's SQL statement and typed builder:
/// the procedure `P` in its shape ([`shape::run`]: plan, then explain, count or execute) on a
/// statement target from [`MaintenanceTarget::for_statement`] (a run on an object store gets its
/// own read cache: a re-plan after a commit conflict reads only new files), within the progress scope (events,
/// cancellation), after refusing a location that holds a second table
/// ([`MaintenanceTarget::check_single_table`], even when the table was chosen for procedures that
/// delete by listing). The future is boxed: the executors' futures are large and stay off the
/// stack.
pub(crate) async fn run<P: MaintenanceProcedure>(
    target: &MaintenanceTarget,
    options: &P::Options,
    explain: bool,
) -> Result<P::Outcome> {
    let intent = crate::maintain::shape::Intent::of(explain, P::dry_run(options));
    let target = &target.for_statement(intent);
    let name = P::name(options);
    let run = Box::pin(shape::run::<P>(target, options, explain));
    target
        .progress
        .scope(async move {
            // Two tables written to one location: "this table" must be named first.
            target
                .check_single_table(&name, P::DELETES_BY_LISTING)
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

/// ClickHouse 26.9's refusal of `OPTIMIZE TABLE ... MANIFEST` while its gate is off (code 36,
/// `BAD_ARGUMENTS`, observed through chdb); `rewrite_manifests` is refused the same way.
pub const OPTIMIZE_DISABLED: &str = "Enable 'allow_experimental_iceberg_compaction' setting to \
     call OPTIMIZE TABLE ... MANIFEST for iceberg tables";

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
