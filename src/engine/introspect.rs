//! Rows of the introspection tables `system.iceberg_history`, `system.iceberg_snapshots` and
//! `system.iceberg_refs`, read from each registered table's current metadata.

use super::registry::TableDef;
use super::runtime::Runtime;
use crate::error::{Error, Result};
use crate::format::{Column, Value};
use crate::settings::Settings;
use crate::sql::select::SystemTable;

/// Every row of `table` over the registered tables `defs` (filtering, ordering and limits are the
/// caller's).
pub async fn system_table_rows(
    _runtime: &Runtime,
    _settings: &Settings,
    table: SystemTable,
    _defs: &[TableDef],
) -> Result<(Vec<Column>, Vec<Vec<Value>>)> {
    Err(Error::not_implemented(format!(
        "system.{} is being integrated",
        table.as_str()
    )))
}
