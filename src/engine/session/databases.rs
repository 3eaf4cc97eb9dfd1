//! Databases and what a session reads without touching a table's storage: which database a name
//! is in, whether it exists or is a catalog database, `SHOW TABLES`, and `SELECT` over the
//! `system.iceberg_*` tables.

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
        self.check_database(database).await?;
        if let Some(def) = self.catalog_database(database).await {
            let progress = Progress::new(None, self.cancel.clone());
            let catalog = self.catalogs.get(&def)?;
            let listed = catalog_db::table_names(&def, catalog.as_ref());
            let names = catalog_db::cancellable(&progress, listed).await?;
            return Ok(QueryResult::table(
                vec![Column::new("name", "String")],
                names.into_iter().map(|n| vec![Value::Str(n)]).collect(),
            ));
        }
        let registry = self.shared.registry.lock().await;
        let mut names: Vec<String> = registry
            .tables_in(database)
            .into_iter()
            .map(|def| def.name.clone())
            .collect();
        names.sort();
        Ok(QueryResult::table(
            vec![Column::new("name", "String")],
            names.into_iter().map(|n| vec![Value::Str(n)]).collect(),
        ))
    }

    pub(super) async fn select(&self, select: &Select) -> Result<QueryResult> {
        let wanted = |column: &str| {
            select
                .filter
                .iter()
                .find(|c| c.column == column && c.op == crate::sql::CompareOp::Eq)
                .and_then(|c| match &c.value {
                    Literal::String(s) => Some(s.clone()),
                    _ => None,
                })
        };
        let (only_db, only_table) = (wanted("database"), wanted("table"));
        let (defs, catalogs) = {
            let registry = self.shared.registry.lock().await;
            let defs: Vec<_> = registry
                .all()
                .filter(|d| only_db.as_ref().is_none_or(|db| *db == d.database))
                .cloned()
                .collect();
            let catalogs: Vec<_> = registry
                .databases()
                .filter(|d| only_db.as_ref().is_none_or(|db| *db == d.name))
                .cloned()
                .collect();
            (defs, catalogs)
        };
        let (columns, mut rows) =
            system_table_rows(&self.shared.runtime, &self.settings, select.table, &defs).await?;
        let progress = Progress::new(None, self.cancel.clone());
        for def in &catalogs {
            let catalog = self.catalogs.get(def)?;
            let names = match &only_table {
                Some(name) => vec![name.clone()],
                None => {
                    let listed = catalog_db::table_names(def, catalog.as_ref());
                    catalog_db::cancellable(&progress, listed).await?
                }
            };
            for name in names {
                let runtime = &self.shared.runtime;
                let catalog = Arc::clone(&catalog);
                let open = catalog_db::open_table_in(runtime, &self.settings, def, catalog, &name);
                let target = catalog_db::cancellable(&progress, open).await?;
                crate::engine::introspect::target_rows(
                    &self.settings,
                    select.table,
                    &target,
                    (&def.name, &name),
                    &mut rows,
                )
                .await
                .map_err(|e| catalog_db::scrub(e, def))?;
            }
        }
        let (columns, rows) = select_eval::evaluate(select, columns, rows)?;
        Ok(QueryResult::table(columns, rows))
    }
}
