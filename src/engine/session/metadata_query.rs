//! `SELECT` over the `system.iceberg_*` metadata tables: the session's tables as a
//! [`TableSource`] (registered path tables, then the tables of each catalog database), the
//! `system` schema registered in a DataFusion context, and the query run there.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{MemorySchemaProvider, SchemaProvider};

use super::newest::{Found, newest_metadata};
use super::*;
use crate::catalog::Catalog;
use crate::engine::access::GrantObject;
use crate::engine::registry::{DatabaseDef, TableDef};
use crate::inspect::provider::MetadataTableProvider;
use crate::inspect::{InspectedTable, MetadataTable, TableSource};
use crate::query::{QueryOptions, session_context};

/// The tables a session's query may read, as they were when the query started.
struct SessionTables {
    shared: Arc<Shared>,
    settings: Settings,
    paths: Vec<TableDef>,
    catalogs: Vec<(DatabaseDef, Arc<dyn Catalog>)>,
    cancel: Option<CancelToken>,
    /// The session's user: only tables it holds some privilege on are listed or opened.
    user: String,
}

impl SessionTables {
    fn sees(&self, object: &GrantObject) -> bool {
        self.shared
            .access
            .authorizer()
            .allows_any(&self.user, object)
    }

    fn sees_table(&self, database: &str, table: &str) -> bool {
        self.sees(&GrantObject::table(database, table))
    }
}

#[async_trait]
impl TableSource for SessionTables {
    async fn names(
        &self,
        database: Option<&str>,
        table: Option<&str>,
    ) -> Result<Vec<(String, String)>> {
        let wanted = |db: &str, name: Option<&str>| {
            database.is_none_or(|d| d == db) && name.is_none_or(|n| table.is_none_or(|t| t == n))
        };
        let mut names: Vec<(String, String)> = self
            .paths
            .iter()
            .filter(|d| wanted(&d.database, Some(&d.name)))
            .filter(|d| self.sees_table(&d.database, &d.name))
            .map(|d| (d.database.clone(), d.name.clone()))
            .collect();
        let progress = Progress::new(None, self.cancel.clone());
        let catalogs = self.catalogs.iter().filter(|(d, _)| wanted(&d.name, None));
        // A catalog the user sees nothing of is not asked for its tables.
        for (def, catalog) in
            catalogs.filter(|(d, _)| self.sees(&GrantObject::Database(d.name.clone())))
        {
            let listed = match table {
                Some(name) => vec![name.to_string()],
                None => {
                    let listed = catalog_db::table_names(def, catalog.as_ref());
                    catalog_db::cancellable(&progress, listed).await?
                }
            };
            names.extend(
                listed
                    .into_iter()
                    .filter(|n| self.sees_table(&def.name, n))
                    .map(|n| (def.name.clone(), n)),
            );
        }
        Ok(names)
    }

    async fn open(&self, database: &str, table: &str) -> Result<InspectedTable> {
        if !self.sees_table(database, table) {
            let object = GrantObject::table(database, table);
            return Err(crate::engine::access::denied(
                &self.user,
                &format!("SHOW TABLES ON {object}"),
            ));
        }
        let path = self
            .paths
            .iter()
            .find(|d| d.database == database && d.name == table);
        let found = match path {
            Some(def) => Found::Path(def),
            None => match self.catalogs.iter().find(|(d, _)| d.name == database) {
                Some((def, catalog)) => Found::Catalog(def, Arc::clone(catalog)),
                None => {
                    return Err(Error::new(
                        ErrorKind::UnknownTable,
                        format!("Table {database}.{table} does not exist"),
                    ));
                }
            },
        };
        let runtime = &self.shared.runtime;
        let cancel = self.cancel.clone();
        let (located, io) = newest_metadata(runtime, &self.settings, found, table, cancel).await?;
        Ok(InspectedTable {
            database: database.to_string(),
            name: table.to_string(),
            metadata: Arc::new(located.metadata),
            metadata_location: Some(located.path),
            io,
            settings: self.settings.clone(),
        })
    }
}

impl Session {
    pub(super) fn query_options(&self) -> QueryOptions {
        QueryOptions {
            time_zone: self.settings.session_time_zone(),
            max_memory_usage: self.settings.max_memory_usage(),
        }
    }

    /// A DataFusion context holding this session's `system` schema.
    pub(super) async fn query_context(&self) -> Result<datafusion::prelude::SessionContext> {
        let (paths, catalog_defs) = {
            let registry = self.shared.registry.lock().await;
            let paths: Vec<TableDef> = registry.all().cloned().collect();
            let catalogs: Vec<DatabaseDef> = registry.databases().cloned().collect();
            (paths, catalogs)
        };
        let mut catalogs = Vec::with_capacity(catalog_defs.len());
        for def in catalog_defs {
            let catalog = self.catalogs.get(&def)?;
            catalogs.push((def, catalog));
        }
        let source: Arc<dyn TableSource> = Arc::new(SessionTables {
            shared: Arc::clone(&self.shared),
            settings: self.settings.clone(),
            paths,
            catalogs,
            cancel: self.cancel.clone(),
            user: self.user.clone(),
        });
        let ctx = session_context(&self.query_options());
        let schema = MemorySchemaProvider::new();
        let allow_unfiltered = self.settings.metadata_tables_allow_full_scan();
        for table in MetadataTable::ALL {
            let provider =
                MetadataTableProvider::new(*table, Arc::clone(&source), allow_unfiltered);
            schema
                .register_table(table.name().to_string(), Arc::new(provider))
                .map_err(crate::query::to_error)?;
        }
        let catalog = ctx.catalog("icetrim").ok_or_else(|| {
            Error::logical("the query context has no catalog `icetrim`".to_string())
        })?;
        catalog
            .register_schema("system", Arc::new(schema))
            .map_err(crate::query::to_error)?;
        Ok(ctx)
    }
}
