//! `remove_orphan_files`: lists the table and deletes what nothing reaches (being integrated).

use super::target::MaintenanceTarget;
use crate::engine::QueryResult;
use crate::error::{Error, Result};
use crate::plan::OrphanOptions;

/// Run `remove_orphan_files` on `target`; with `explain`, return the plan only.
pub async fn run(
    target: &MaintenanceTarget,
    _options: &OrphanOptions,
    _explain: bool,
) -> Result<QueryResult> {
    Err(Error::not_implemented(format!(
        "remove_orphan_files on {} is being integrated",
        target.table_name
    )))
}
