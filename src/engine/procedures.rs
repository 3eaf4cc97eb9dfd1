//! Runs a bound maintenance procedure on a registered table: `expire_snapshots` and
//! `remove_orphan_files`, for real, as a dry run, or as `EXPLAIN`.

use super::registry::TableDef;
use super::result::QueryResult;
use super::runtime::Runtime;
use crate::error::{Error, Result};
use crate::plan::ProcedureCall;
use crate::settings::Settings;

/// Run `call` on `table`. With `explain`, return the plan and change nothing.
pub async fn run_procedure(
    _runtime: &Runtime,
    _settings: &Settings,
    table: &TableDef,
    call: ProcedureCall,
    _explain: bool,
) -> Result<QueryResult> {
    Err(Error::not_implemented(format!(
        "{} on table {}.{} is being integrated",
        call.procedure_name(),
        table.database,
        table.name
    )))
}
