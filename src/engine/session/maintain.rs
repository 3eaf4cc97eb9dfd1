//! `SYSTEM MAINTAIN TABLE t | DATABASE db [NAMESPACE 'ns']` and its `EXPLAIN`: which tables, each
//! opened where it lives (a path table or a catalog database's table), then each maintained by
//! [`crate::engine::maintain::maintain_table`] in turn. A table that cannot be opened or whose
//! maintenance fails is a `failed` row; the others still run, and the statement then fails
//! naming every failure.

use super::*;
use crate::engine::maintain::{
    MaintainRow, MaintainRun, TableToMaintain, failures_error, maintain_table, result_of,
};
use crate::sql::{MaintainTarget, SystemMaintain};

/// A table to maintain, not yet opened: its database and name as the user writes them.
struct Listed {
    database: String,
    table: String,
    place: TablePlace,
}

impl Session {
    /// `SYSTEM MAINTAIN …` (`explain`: its decisions, nothing changed).
    pub(super) async fn system_maintain(
        &self,
        statement: &SystemMaintain,
        explain: bool,
    ) -> Result<QueryResult> {
        let rows = self.maintain_rows(statement, explain).await?;
        Ok(result_of(&rows, explain))
    }

    /// The rows of `SYSTEM MAINTAIN …`; an error after every table ran when one failed.
    pub(crate) async fn maintain_rows(
        &self,
        statement: &SystemMaintain,
        explain: bool,
    ) -> Result<Vec<MaintainRow>> {
        let settings: Vec<(String, String)> = statement
            .settings
            .iter()
            .map(|(name, value)| (name.clone(), setting_value_text(value)))
            .collect();
        let mut run = MaintainRun::from_settings(&settings, &self.settings, explain)?;
        run.stop = self.maintain_stop.clone();
        let progress = Progress::new(self.progress.0.clone(), self.cancel.clone());
        let listed = self
            .tables_to_maintain(&statement.target, &progress)
            .await?;
        let count = listed.len();
        let mut rows = Vec::new();
        for table in listed {
            let (database, name) = (table.database.clone(), table.table.clone());
            match self.open_to_maintain(table, &progress).await {
                Ok(opened) => rows.extend(maintain_table(opened, &run, &progress).await?),
                Err(e) if e.kind() == ErrorKind::QueryWasCancelled => return Err(e),
                Err(e) => rows.push(MaintainRow {
                    database,
                    table: name,
                    procedure: "open".into(),
                    status: "failed".into(),
                    reason: String::new(),
                    detail: e.to_string(),
                    error: Some(e.kind()),
                }),
            }
        }
        if let Some(error) = failures_error(&rows, count) {
            return Err(error);
        }
        Ok(rows)
    }

    /// The tables `target` names, in name order.
    async fn tables_to_maintain(
        &self,
        target: &MaintainTarget,
        progress: &Progress,
    ) -> Result<Vec<Listed>> {
        let (database, namespace) = match target {
            MaintainTarget::Table(name) => {
                return Ok(vec![Listed {
                    database: self.database_of(name),
                    table: name.table.clone(),
                    place: self.place_of(name).await?,
                }]);
            }
            MaintainTarget::Database { name, namespace } => (name, namespace),
        };
        if let Some(def) = self.catalog_database(database).await {
            let catalog = self.catalogs.get(&def)?;
            let names =
                catalog_db::cancellable(progress, catalog_db::table_names(&def, catalog.as_ref()))
                    .await?;
            let prefix = namespace.as_ref().map(|ns| format!("{ns}."));
            return Ok(names
                .into_iter()
                .filter(|n| prefix.as_ref().is_none_or(|p| n.starts_with(p.as_str())))
                .map(|table| Listed {
                    database: database.clone(),
                    table,
                    place: TablePlace::Catalog(def.clone()),
                })
                .collect());
        }
        if namespace.is_some() {
            return Err(Error::bad_arguments(format!(
                "NAMESPACE is for a {} database; {database} holds path tables",
                crate::catalog::ENGINE
            )));
        }
        self.check_database(database).await?;
        let registry = self.shared.registry.lock().await;
        let mut defs: Vec<_> = registry.tables_in(database).into_iter().cloned().collect();
        defs.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(defs
            .into_iter()
            .map(|def| Listed {
                database: database.clone(),
                table: def.name.clone(),
                place: TablePlace::Path(def),
            })
            .collect())
    }

    /// `listed`, opened for maintenance (a catalog table loaded through its catalog).
    async fn open_to_maintain(
        &self,
        listed: Listed,
        progress: &Progress,
    ) -> Result<TableToMaintain> {
        let runtime = &self.shared.runtime;
        let (target, catalog_database) = match listed.place {
            TablePlace::Catalog(def) => {
                let catalog = self.catalogs.get(&def)?;
                let open = catalog_db::open_table_in(
                    runtime,
                    &self.settings,
                    &def,
                    catalog,
                    &listed.table,
                );
                (catalog_db::cancellable(progress, open).await?, Some(def))
            }
            TablePlace::Path(def) => (open_table(runtime, &self.settings, &def)?, None),
        };
        Ok(TableToMaintain {
            database: listed.database,
            table: listed.table,
            target,
            catalog_database,
        })
    }
}
