//! A table's newest metadata, for the statements that only read it (`DESCRIBE TABLE`, the
//! metadata tables): a path table located under its folder, a catalog table loaded through its
//! catalog (errors scrubbed of the catalog's secrets).

use std::sync::Arc;

use super::*;
use crate::catalog::Catalog;
use crate::engine::registry::{DatabaseDef, TableDef};
use crate::iceberg::locate::{LocatedMetadata, locate};
use crate::io::FileIO;

/// Where a table is found.
pub(super) enum Found<'a> {
    Path(&'a TableDef),
    Catalog(&'a DatabaseDef, Arc<dyn Catalog>),
}

/// The newest metadata of `table` found at `found`, and the storage it lives on.
pub(super) async fn newest_metadata(
    runtime: &Runtime,
    settings: &Settings,
    found: Found<'_>,
    table: &str,
    cancel: Option<CancelToken>,
) -> Result<(LocatedMetadata, FileIO)> {
    match found {
        Found::Path(def) => {
            let target = open_table(runtime, settings, def)?;
            target.check_single_table("SELECT", false).await?;
            let located = locate(&target.io, &target.location, &target.metadata_settings)
                .await
                .map_err(|e| e.context(format!("table {}", target.table_name)))?;
            Ok((located, target.io.clone()))
        }
        Found::Catalog(def, catalog) => {
            let progress = Progress::new(None, cancel);
            let open = catalog_db::open_table_in(runtime, settings, def, catalog, table);
            let target = catalog_db::cancellable(&progress, open).await?;
            let located = target
                .locate_newest("SELECT")
                .await
                .map_err(|e| catalog_db::scrub(e, def))?;
            Ok((located, target.io.clone()))
        }
    }
}
