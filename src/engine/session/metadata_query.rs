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
use crate::engine::maintain_log::LogEntry;
use crate::engine::maintain_log_tables::{LogSource, LogTable, LogTableProvider};
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

    /// The tables this session may read, as they are now.
    async fn table_source(&self) -> Result<SessionTables> {
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
        Ok(SessionTables {
            shared: Arc::clone(&self.shared),
            settings: self.settings.clone(),
            paths,
            catalogs,
            cancel: self.cancel.clone(),
            user: self.user.clone(),
        })
    }

    /// A DataFusion context holding this session's `system` schema.
    pub(super) async fn query_context(&self) -> Result<datafusion::prelude::SessionContext> {
        let tables = Arc::new(self.table_source().await?);
        let source: Arc<dyn TableSource> = tables.clone();
        let log: Arc<dyn LogSource> = tables;
        let ctx = session_context(&self.query_options());
        let allow_unfiltered = self.settings.metadata_tables_allow_full_scan();
        let schema = system_schema(source, log, allow_unfiltered)?;
        let catalog = ctx.catalog("icetrim").ok_or_else(|| {
            Error::logical("the query context has no catalog `icetrim`".to_string())
        })?;
        catalog
            .register_schema("system", schema)
            .map_err(crate::query::to_error)?;
        Ok(ctx)
    }
}

/// The log entries about tables the session's user sees, read when a query scans the log.
#[async_trait]
impl LogSource for SessionTables {
    async fn entries(&self) -> Vec<LogEntry> {
        self.shared
            .maintenance_log
            .entries()
            .into_iter()
            .filter(|e| self.sees_table(&e.database, &e.table))
            .collect()
    }
}

/// The `system` schema: every metadata table over `source`, the maintenance log and metrics
/// over `log`.
fn system_schema(
    source: Arc<dyn TableSource>,
    log: Arc<dyn LogSource>,
    allow_unfiltered: bool,
) -> Result<Arc<dyn SchemaProvider>> {
    let schema = MemorySchemaProvider::new();
    for table in MetadataTable::ALL {
        let provider = MetadataTableProvider::new(*table, Arc::clone(&source), allow_unfiltered);
        schema
            .register_table(table.name().to_string(), Arc::new(provider))
            .map_err(crate::query::to_error)?;
    }
    for table in LogTable::ALL {
        let provider = LogTableProvider::new(table, Arc::clone(&log));
        schema
            .register_table(table.name().to_string(), Arc::new(provider))
            .map_err(crate::query::to_error)?;
    }
    Ok(Arc::new(schema))
}

/// The tables of a session shared with a host (`icetrim::host`), looked up when a query reads
/// them: tables registered after the schema was built are seen.
struct LiveTables {
    session: Arc<tokio::sync::Mutex<Session>>,
}

impl LiveTables {
    async fn now(&self) -> Result<SessionTables> {
        self.session.lock().await.table_source().await
    }
}

#[async_trait]
impl TableSource for LiveTables {
    async fn names(
        &self,
        database: Option<&str>,
        table: Option<&str>,
    ) -> Result<Vec<(String, String)>> {
        self.now().await?.names(database, table).await
    }

    async fn open(&self, database: &str, table: &str) -> Result<InspectedTable> {
        self.now().await?.open(database, table).await
    }
}

#[async_trait]
impl LogSource for LiveTables {
    async fn entries(&self) -> Vec<LogEntry> {
        self.session.lock().await.visible_log_entries()
    }
}

/// The `system` schema of `session` for a host's context: the metadata tables over the
/// session's tables as they are when each query runs (`allow_unfiltered`: the session's
/// `iceberg_metadata_tables_allow_full_scan`).
pub(crate) fn live_system_schema(
    session: &Arc<tokio::sync::Mutex<Session>>,
    allow_unfiltered: bool,
) -> Result<Arc<dyn SchemaProvider>> {
    let source = Arc::new(LiveTables {
        session: Arc::clone(session),
    });
    system_schema(source.clone(), source, allow_unfiltered)
}
