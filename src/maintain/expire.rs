//! `expire_snapshots`: executes the retention decision (being integrated).

use super::target::MaintenanceTarget;
use crate::engine::QueryResult;
use crate::error::{Error, Result};
use crate::plan::ExpireOptions;

/// Run `expire_snapshots` on `target`; with `explain`, return the plan only.
pub async fn run(
    target: &MaintenanceTarget,
    _options: &ExpireOptions,
    _explain: bool,
) -> Result<QueryResult> {
    Err(Error::not_implemented(format!(
        "expire_snapshots on {} is being integrated",
        target.table_name
    )))
}
