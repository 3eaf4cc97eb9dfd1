//! Runs a bound maintenance procedure on a registered table: `expire_snapshots` and
//! `remove_orphan_files`, for real, as a dry run, or as `EXPLAIN`.

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
    let target = open_table(runtime, settings, table)?;
    match call {
        ProcedureCall::Expire(options) => expire::run(&target, &options, explain).await,
        ProcedureCall::Orphans(options) => orphan_scan::run(&target, &options, explain).await,
    }
}
