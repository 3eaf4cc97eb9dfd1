//! Databases and what a session reads without touching a table's storage: which database a name
//! is in, whether it exists or is a catalog database, and `SHOW TABLES`.

use super::*;

impl Session {
    pub(super) fn database_of(&self, name: &TableName) -> String {
        name.database
            .clone()
            .unwrap_or_else(|| self.database.clone())
    }

    pub(super) async fn database_exists(&self, database: &str) -> bool {
        let registry = self.shared.registry.lock().await;
        registry.database(database).is_some() || !registry.tables_in(database).is_empty()
    }

    pub(super) async fn check_database(&self, database: &str) -> Result<()> {
        let known = database == DEFAULT_DATABASE
            || database == self.database
            || self.database_exists(database).await;
        if known {
            return Ok(());
        }
        Err(unknown_database(database))
    }

    /// The catalog database `name`, if it is one.
    pub(super) async fn catalog_database(
        &self,
        name: &str,
    ) -> Option<crate::engine::registry::DatabaseDef> {
        self.shared.registry.lock().await.database(name).cloned()
    }

    /// Catalog databases hold only their catalog's tables: `what` is refused there.
    pub(super) async fn refuse_in_catalog(&self, database: &str, what: &str) -> Result<()> {
        if self.catalog_database(database).await.is_none() {
            return Ok(());
        }
        Err(Error::new(
            ErrorKind::QueryIsProhibited,
            format!(
                "{what} is not allowed in database {database}: its tables are its catalog's \
                 ({})",
                crate::catalog::ENGINE
            ),
        ))
    }

    pub(super) async fn show_tables(&self, from_db: Option<&str>) -> Result<QueryResult> {
        let database = from_db.unwrap_or(&self.database);
        if database == "system" {
            return Ok(QueryResult::table(
                vec![Column::new("name", "String")],
                Self::system_table_names()
                    .into_iter()
                    .map(|n| vec![Value::from(n)])
                    .collect(),
            ));
        }
        self.check_database(database).await?;
        if let Some(def) = self.catalog_database(database).await {
            // Nothing to show: the catalog is not asked.
            if !self.sees_database(database) {
                return Ok(QueryResult::table(
                    vec![Column::new("name", "String")],
                    Vec::new(),
                ));
            }
            let progress = Progress::new(None, self.cancel.clone());
            let catalog = self.catalogs.get(&def)?;
            let listed = catalog_db::table_names(&def, catalog.as_ref());
            let mut names = catalog_db::cancellable(&progress, listed).await?;
            names.retain(|name| self.sees_table(database, name));
            return Ok(QueryResult::table(
                vec![Column::new("name", "String")],
                names.into_iter().map(|n| vec![Value::Str(n)]).collect(),
            ));
        }
        let registry = self.shared.registry.lock().await;
        let mut names: Vec<String> = registry
            .tables_in(database)
            .into_iter()
            .filter(|def| self.sees_table(database, &def.name))
            .map(|def| def.name.clone())
            .collect();
        names.sort();
        Ok(QueryResult::table(
            vec![Column::new("name", "String")],
            names.into_iter().map(|n| vec![Value::Str(n)]).collect(),
        ))
    }
}

/// The names a session knows, for completing them as the user types: never a storage or catalog
/// request (the tables of a catalog database are not listed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KnownNames {
    /// Databases: `default`, the current one, those holding a table, catalog databases.
    pub databases: Vec<String>,
    /// Registered tables as `(database, table)`.
    pub tables: Vec<(String, String)>,
    /// The `system` tables with their columns.
    pub system_tables: Vec<(&'static str, Vec<String>)>,
    /// Session settings.
    pub settings: Vec<&'static str>,
}

impl Session {
    /// The names this session knows (see [`KnownNames`]); reads the registry only.
    ///
    /// ```
    /// use icetrim::engine::Engine;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> icetrim::Result<()> {
    /// let mut session = Engine::builder().build()?.session();
    /// session.execute("CREATE TABLE db2.t ENGINE = IcebergLocal('/tmp/t')").await?;
    /// let names = session.known_names().await;
    /// assert!(names.tables.contains(&("db2".to_string(), "t".to_string())));
    /// assert!(names.databases.contains(&"db2".to_string()));
    /// assert!(names.system_tables.iter().any(|(t, _)| *t == "iceberg_refs"));
    /// assert!(names.settings.contains(&"session_timezone"));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn known_names(&self) -> KnownNames {
        let registry = self.shared.registry.lock().await;
        let mut databases = registry.table_databases();
        databases.extend(registry.databases().map(|d| d.name.clone()));
        databases.push(DEFAULT_DATABASE.to_string());
        databases.push(self.database.clone());
        databases.sort();
        databases.dedup();
        databases.retain(|db| self.sees_database(db));
        let mut tables: Vec<(String, String)> = registry
            .all()
            .filter(|def| self.sees_table(&def.database, &def.name))
            .map(|def| (def.database.clone(), def.name.clone()))
            .collect();
        tables.sort();
        #[cfg(feature = "datafusion")]
        let system_tables = crate::inspect::MetadataTable::ALL
            .iter()
            .map(|table| {
                let schema = table.schema();
                let columns = schema.fields().iter().map(|f| f.name().clone()).collect();
                (table.name(), columns)
            })
            .chain(
                crate::engine::maintain_log_tables::LogTable::ALL.map(|table| {
                    let schema = table.schema();
                    let columns = schema.fields().iter().map(|f| f.name().clone()).collect();
                    (table.name(), columns)
                }),
            )
            .collect();
        #[cfg(not(feature = "datafusion"))]
        let system_tables = Vec::new();
        KnownNames {
            databases,
            tables,
            system_tables,
            settings: self.settings.definitions().iter().map(|d| d.name).collect(),
        }
    }
}
