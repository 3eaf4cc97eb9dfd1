//! Runs a bound maintenance procedure on a registered table: `expire_snapshots` and
//! `remove_orphan_files`, for real, as a dry run, or as `EXPLAIN`, within the statement's
//! [`Progress`] scope (progress events, cancellation).

use super::progress::Progress;
use super::registry::TableDef;
use super::result::QueryResult;
use super::runtime::Runtime;
use super::table::open_table;
use crate::error::Result;
use crate::maintain::{expire, orphan_scan};
use crate::plan::ProcedureCall;
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
    let mut target = open_table(runtime, settings, table)?;
    target.progress = progress.clone();
    let target = &target;
    progress
        .scope(async move {
            // Two tables written to one location: "this table" must be named first.
            match call {
                ProcedureCall::Expire(options) => {
                    target.check_single_table("expire_snapshots", false).await?;
                    expire::run(target, &options, explain).await
                }
                ProcedureCall::Orphans(options) => {
                    target
                        .check_single_table("remove_orphan_files", true)
                        .await?;
                    orphan_scan::run(target, &options, explain).await
                }
            }
        })
        .await
}
