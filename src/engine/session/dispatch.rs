//! Running one parsed statement: the route from each kind of [`Statement`] to what carries it
//! out (the table statements in `table_statements.rs`, databases and reads in `databases.rs`,
//! DDL in `engine/ddl.rs`), and the output format its `FORMAT` clause asks for.

use super::*;

impl Session {
    /// Runs a parsed statement.
    pub async fn execute_statement(&mut self, statement: &Statement) -> Result<QueryResult> {
        if self.cancel.as_ref().is_some_and(CancelToken::is_cancelled) {
            return Err(cancelled_error());
        }
        // Before the format, the table or any storage: what the user may not run fails first.
        self.authorize(statement)?;
        let format = statement
            .format()
            .map(OutputFormat::from_name)
            .transpose()?;
        // Only a SELECT's columns can be `name` and `value`: refused before anything runs.
        if format == Some(OutputFormat::Prometheus) && !matches!(statement, Statement::Select(_)) {
            return Err(crate::format::prometheus::needs_a_select());
        }
        let mut result = match statement {
            Statement::CreateUser(_)
            | Statement::DropUser(_)
            | Statement::Grant(_)
            | Statement::Revoke(_)
            | Statement::ShowGrants { .. }
            | Statement::ShowUsers { .. } => self.access_statement(statement)?,
            Statement::AlterExecute(alter) => self.alter_execute(alter, false).await?,
            Statement::Explain(inner) => self.explain(inner).await?,
            Statement::Optimize(o) => self.optimize(o, false).await?,
            Statement::CreateTable(create) => {
                let def = ddl::table_def(create, &self.database)?;
                self.refuse_in_catalog(&def.database, "CREATE TABLE")
                    .await?;
                self.shared
                    .registry
                    .lock()
                    .await
                    .create(def, create.if_not_exists)?;
                QueryResult {
                    warnings: ddl::create_warnings(create),
                    ..QueryResult::empty()
                }
            }
            Statement::DropTable { if_exists, name } => {
                let database = self.database_of(name);
                self.refuse_in_catalog(&database, "DROP TABLE").await?;
                self.shared
                    .registry
                    .lock()
                    .await
                    .drop_table(&database, &name.table, *if_exists)?;
                QueryResult::empty()
            }
            Statement::ShowTables { from_db, .. } => self.show_tables(from_db.as_deref()).await?,
            Statement::ShowCreateTable { name, .. } => {
                self.refuse_in_catalog(&self.database_of(name), "SHOW CREATE TABLE")
                    .await?;
                let registry = self.shared.registry.lock().await;
                let def = registry.get(&self.database_of(name), &name.table)?;
                QueryResult::table(
                    vec![Column::new("statement", "String")],
                    vec![vec![Value::Str(ddl::show_create(def))]],
                )
            }
            Statement::Use(database) => {
                self.check_database(database).await?;
                self.database = database.clone();
                QueryResult::empty()
            }
            Statement::Set(pairs) => {
                let mut settings = self.settings.clone();
                let mut params = self.params.clone();
                for (name, value) in pairs {
                    match name.strip_prefix(PARAM_SETTING_PREFIX) {
                        Some(param) if !param.is_empty() => {
                            params.insert(param.to_string(), setting_value_text(value));
                        }
                        _ => settings.set(name, value)?,
                    }
                }
                self.settings = settings;
                self.params = params;
                QueryResult::empty()
            }
            Statement::Select(select) => self.select(select).await?,
            Statement::Describe { target, .. } => self.describe(target).await?,
            Statement::ShowSettings { changed, like, .. } => {
                self.show_settings(*changed, like.as_ref())
            }
            Statement::AlterTable(alter) => self.alter_table(alter, false).await?,
            Statement::OptimizeManifest(optimize) => {
                self.optimize_manifest(optimize, false).await?
            }
            Statement::CreateDatabase(create) => {
                let def = catalog_db::database_def(create)?;
                if def
                    .settings
                    .get("catalog_type")
                    .is_some_and(|t| t == "rest")
                    && !self.settings.allow_database_iceberg()
                {
                    return Err(Error::new(
                        ErrorKind::SupportIsDisabled,
                        "DatabaseDataLake with Iceberg Rest catalog is beta. To allow its usage, \
                         enable setting allow_database_iceberg",
                    ));
                }
                if def
                    .settings
                    .get("catalog_type")
                    .is_some_and(|t| t == "glue")
                    && !self.settings.allow_database_glue_catalog()
                {
                    return Err(Error::new(
                        ErrorKind::SupportIsDisabled,
                        "DatabaseDataLake with Glue catalog is beta. To allow its usage, enable \
                         setting allow_database_glue_catalog",
                    ));
                }
                let exists = self.database_exists(&def.name).await;
                if exists && create.if_not_exists {
                    return Ok(QueryResult::empty());
                }
                if !exists {
                    // As ClickHouse: the catalog must answer with these credentials.
                    let progress = Progress::new(None, self.cancel.clone());
                    let catalog = self.catalogs.get(&def)?;
                    let check = catalog_db::check_reachable(&def, catalog.as_ref());
                    catalog_db::cancellable(&progress, check).await?;
                }
                self.shared
                    .registry
                    .lock()
                    .await
                    .create_database(def, create.if_not_exists)?;
                QueryResult::empty()
            }
            Statement::DropDatabase { if_exists, name } => {
                let mut registry = self.shared.registry.lock().await;
                let dropped = registry.drop_database(name)?;
                self.catalogs.forget(name);
                let tables: Vec<String> = registry
                    .tables_in(name)
                    .into_iter()
                    .map(|d| d.name.clone())
                    .collect();
                for table in &tables {
                    registry.drop_table(name, table, true)?;
                }
                if !dropped && tables.is_empty() && !*if_exists {
                    return Err(unknown_database(name));
                }
                if self.database == *name {
                    self.database = DEFAULT_DATABASE.to_string();
                }
                QueryResult::empty()
            }
            Statement::ShowDatabases { .. } => {
                let registry = self.shared.registry.lock().await;
                let mut names: Vec<String> = registry.table_databases();
                names.extend(registry.databases().map(|d| d.name.clone()));
                names.push(DEFAULT_DATABASE.to_string());
                names.push(self.database.clone());
                names.sort();
                names.dedup();
                names.retain(|name| self.sees_database(name));
                QueryResult::table(
                    vec![Column::new("name", "String")],
                    names.into_iter().map(|n| vec![Value::Str(n)]).collect(),
                )
            }
            Statement::ShowCreateDatabase { name, .. } => {
                let text = match self.catalog_database(name).await {
                    Some(def) => catalog_db::show_create(&def),
                    None => {
                        self.check_database(name).await?;
                        format!(
                            "CREATE DATABASE {}\nENGINE = Atomic",
                            TableName {
                                database: None,
                                table: name.clone()
                            }
                        )
                    }
                };
                QueryResult::table(
                    vec![Column::new("statement", "String")],
                    vec![vec![Value::Str(text)]],
                )
            }
            Statement::SystemMaintain(maintain) => self.system_maintain(maintain, false).await?,
        };
        result.format = format;
        Ok(result)
    }
}
