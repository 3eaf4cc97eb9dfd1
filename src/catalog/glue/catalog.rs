//! [`GlueDatabase`]: a `DataLakeCatalog` database with `catalog_type = 'glue'`, as the
//! [`Catalog`] the engine and maintenance use.
//!
//! - Names: a Glue database is one namespace level (`` lake.`sales.orders` `` is Glue database
//!   `sales`, table `orders`); a nested namespace is `UNKNOWN_TABLE`.
//! - Settings: the engine's URL argument is the Glue endpoint (optional: AWS's regional endpoint
//!   otherwise); `region`, `aws_access_key_id`, `aws_secret_access_key`, `aws_session_token` sign
//!   the Glue requests, and the same keys with `storage_endpoint` reach the tables' files
//!   ([`CatalogConfig::storage_options`]). `aws_role_arn` (assuming a role) is refused.
//! - `namespaces = 'a,b'` (ClickHouse's filter): only those Glue databases are listed and
//!   reachable; a table in another is `UNKNOWN_TABLE`.
//! - `check` (`CREATE DATABASE`): one `GetDatabases` page.
//! - `list_tables`: every Glue database (or those `namespaces` names), its Iceberg tables.
//! - `load_table`: `GetTable`, then the named metadata file from storage (missing:
//!   `FILE_DOESNT_EXIST` naming the endpoint, the table and the file).
//! - `commit`: the table is read again (`GetTable`, as Java's `GlueTableOperations` does before
//!   every commit); when it no longer names `base_location` that is a conflict, otherwise
//!   [`super::commit`] conditions `UpdateTable` on the `VersionId` just read. The fresh read is
//!   what keeps another writer's commit since the load from being overwritten on a Glue that
//!   does not enforce `VersionId` (moto does not); on AWS Glue the `VersionId` closes the window
//!   between that read and the update.

use super::commit::{GlueCommitOutcome, commit};
use super::{GlueCatalog, GlueOptions, GlueTable};
use aws_sdk_glue::types::TableOptimizerType;

use crate::catalog::{
    Catalog, CatalogCommit, CatalogConfig, LoadedTable, OwnMaintenance, OwnMaintenanceKind,
    TableIdent,
};
use crate::error::{Error, ErrorKind, Result};
use crate::iceberg::locate::read_metadata;
use crate::iceberg::metadata::TableMetadata;
use crate::io::FileIO;

/// A Glue catalog database.
#[derive(Debug)]
pub struct GlueDatabase {
    database: String,
    endpoint: String,
    client: GlueCatalog,
    io: FileIO,
    /// `namespaces`: the Glue databases this database shows (`None`: all).
    namespaces: Option<Vec<String>>,
}

impl GlueDatabase {
    /// The database `config` defines (no I/O).
    pub fn new(config: &CatalogConfig) -> Result<GlueDatabase> {
        if config.get("aws_role_arn").is_some() {
            return Err(Error::not_implemented(format!(
                "Database {}: aws_role_arn (assuming a role) is not supported for Glue catalogs \
                 by icetrim; give aws_access_key_id and aws_secret_access_key (and \
                 aws_session_token for temporary credentials)",
                config.database
            )));
        }
        let options = GlueOptions {
            endpoint: config.endpoint.clone(),
            region: config.get("region").map(str::to_string),
            access_key_id: config.get("aws_access_key_id").map(str::to_string),
            secret_access_key: config.get("aws_secret_access_key").map(str::to_string),
            session_token: config.get("aws_session_token").map(str::to_string),
            catalog_id: None,
        };
        let endpoint = match &options.endpoint {
            Some(url) => crate::io::mask_url(url),
            None => format!("https://glue.{}.amazonaws.com", options.effective_region()),
        };
        let mut storage = config.storage_options();
        if storage.s3.region.is_none() {
            storage.s3.region = Some(options.effective_region());
        }
        let client = GlueCatalog::new(options)
            .map_err(|e| e.context(format!("Database {}", config.database)))?;
        Ok(GlueDatabase {
            database: config.database.clone(),
            endpoint,
            client,
            io: FileIO::new(storage),
            namespaces: config.get("namespaces").map(namespace_filter),
        })
    }

    /// The Glue database and table of `ident` (one namespace level).
    fn glue_name<'a>(&self, ident: &'a TableIdent) -> Result<(&'a str, &'a str)> {
        match ident.namespace.as_slice() {
            [database] if self.shows(database) => Ok((database.as_str(), ident.name.as_str())),
            [_] => Err(Error::new(
                ErrorKind::UnknownTable,
                format!(
                    "Table {}.`{ident}` does not exist: its Glue database is not among the \
                     database's namespaces ({})",
                    self.database,
                    self.client.options().describe()
                ),
            )),
            _ => Err(Error::new(
                ErrorKind::UnknownTable,
                format!(
                    "Table {}.`{ident}` does not exist: a Glue catalog has one namespace level \
                     (`glue_database.table`), {} given ({})",
                    self.database,
                    ident.namespace.len(),
                    self.client.options().describe()
                ),
            )),
        }
    }

    /// Whether the `namespaces` filter lets Glue database `name` through.
    fn shows(&self, name: &str) -> bool {
        self.namespaces
            .as_ref()
            .is_none_or(|allowed| allowed.iter().any(|a| a == name))
    }

    /// The table as Glue shows it now, when it still names `base_location`.
    async fn base_table(
        &self,
        ident: &TableIdent,
        base_location: &str,
    ) -> Result<std::result::Result<GlueTable, String>> {
        let (database, name) = self.glue_name(ident)?;
        let table = self.client.load(database, name).await?;
        if super::naming::same_location(&table.metadata_location, base_location) {
            Ok(Ok(table))
        } else {
            Ok(Err(format!(
                "Glue now names '{}' as the current metadata of {ident}, not '{base_location}'",
                table.metadata_location
            )))
        }
    }
}

#[async_trait::async_trait]
impl Catalog for GlueDatabase {
    fn endpoint(&self) -> &str {
        &self.endpoint
    }

    async fn check(&self) -> Result<()> {
        self.client.databases().await.map(|_| ())
    }

    async fn list_tables(&self) -> Result<Vec<TableIdent>> {
        let mut tables = Vec::new();
        let databases = match &self.namespaces {
            Some(allowed) => allowed.clone(),
            None => self.client.databases().await?,
        };
        for database in databases {
            let names = match self.client.iceberg_tables(&database).await {
                Ok(names) => names,
                // A filtered name Glue does not have lists nothing.
                Err(e) if e.kind() == ErrorKind::UnknownTable && self.namespaces.is_some() => {
                    Vec::new()
                }
                Err(e) => return Err(e),
            };
            for name in names {
                tables.push(TableIdent {
                    namespace: vec![database.clone()],
                    name,
                });
            }
        }
        tables.sort();
        Ok(tables)
    }

    async fn own_maintenance(&self, ident: &TableIdent) -> Vec<OwnMaintenance> {
        let Ok((database, name)) = self.glue_name(ident) else {
            return Vec::new();
        };
        let Ok(kinds) = self.client.enabled_optimizers(database, name).await else {
            return Vec::new();
        };
        kinds
            .iter()
            .filter_map(|kind| {
                let (kind, by) = match kind {
                    TableOptimizerType::Compaction => (
                        OwnMaintenanceKind::Compaction,
                        "the Glue compaction optimizer",
                    ),
                    TableOptimizerType::Retention => (
                        OwnMaintenanceKind::SnapshotRetention,
                        "the Glue snapshot retention optimizer",
                    ),
                    TableOptimizerType::OrphanFileDeletion => (
                        OwnMaintenanceKind::OrphanFiles,
                        "the Glue orphan file deletion optimizer",
                    ),
                    _ => return None,
                };
                Some(OwnMaintenance { kind, by })
            })
            .collect()
    }

    async fn load_table(&self, ident: &TableIdent) -> Result<LoadedTable> {
        let (database, name) = self.glue_name(ident)?;
        let table = self.client.load(database, name).await?;
        let location = table.metadata_location.clone();
        let metadata = match read_metadata(&self.io, &location).await {
            Ok(m) => m,
            Err(e) if e.kind() == ErrorKind::FileDoesntExist => {
                return Err(Error::new(
                    ErrorKind::FileDoesntExist,
                    format!(
                        "{} names '{location}' as the current metadata of table {ident}, but \
                         storage has no such file; nothing was done",
                        self.client.options().describe()
                    ),
                ));
            }
            Err(e) => {
                return Err(e.context(format!(
                    "Reading the metadata of table {ident} ({})",
                    self.client.options().describe()
                )));
            }
        };
        Ok(LoadedTable {
            ident: ident.clone(),
            metadata_location: location,
            metadata,
            io: self.io.clone(),
        })
    }

    async fn commit(
        &self,
        ident: &TableIdent,
        base_location: &str,
        base: &TableMetadata,
        new: &TableMetadata,
    ) -> Result<CatalogCommit> {
        let loaded = match self.base_table(ident, base_location).await? {
            Ok(t) => t,
            Err(reason) => return Ok(CatalogCommit::Conflict { reason }),
        };
        let outcome = commit(
            &self.client,
            &self.io,
            &loaded,
            base,
            new.clone(),
            system_now_ms(),
        )
        .await;
        Ok(match outcome? {
            GlueCommitOutcome::Committed { path, metadata } => CatalogCommit::Committed {
                metadata_location: path,
                metadata,
            },
            GlueCommitOutcome::Conflict { why } => CatalogCommit::Conflict { reason: why },
            GlueCommitOutcome::Unconfirmed { path, why, .. } => CatalogCommit::Unknown {
                reason: format!("{why} (our metadata file: '{path}')"),
            },
        })
    }
}

/// `namespaces = 'a, b'`: the names, trimmed, empty ones dropped.
fn namespace_filter(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect()
}

/// The system clock in milliseconds (a catalog commit stamps `last-updated-ms` with it, never
/// below the base's + 1).
fn system_now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::namespace_filter;

    #[test]
    fn namespaces_are_a_comma_separated_list() {
        assert_eq!(namespace_filter(" sales, ops ,,x"), ["sales", "ops", "x"]);
        assert!(namespace_filter(" , ").is_empty());
    }
}
