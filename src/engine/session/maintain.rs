//! `SYSTEM MAINTAIN TABLE t | DATABASE db [NAMESPACE 'ns']` and its `EXPLAIN`: which tables, each
//! opened where it lives (a path table or a catalog database's table), then each maintained by
//! [`crate::engine::maintain::maintain_table`]. A table that cannot be opened or whose
//! maintenance fails is a `failed` row; the others still run, and the statement then fails
//! naming every failure. Up to `iceberg_maintain_max_parallel_tables` tables run at once, sharing
//! the session's compaction memory and request concurrency ([`crate::maintain::upkeep_share`]).

use super::*;
use crate::engine::maintain::{
    MaintainRow, MaintainRun, TableToMaintain, failures_error, maintain_table, result_of,
    stop_if_cancelled,
};
use futures::StreamExt;

use crate::maintain::upkeep_share::{RunBudget, TableShare, table_share};
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
        let share = table_share(&self.run_budget(run.max_parallel_tables), count);
        // Up to `share.parallel` tables at once, answered in name order. Every table in flight
        // finishes (or stops between procedures when cancelled) before the answer.
        let results: Vec<Result<Vec<MaintainRow>>> = futures::stream::iter(listed)
            .map(|table| self.maintain_listed(table, &run, &share, &progress))
            .buffered(share.parallel)
            .collect()
            .await;
        // A cancelled run is logged too: what it did, and what it did not start.
        let mut rows = Vec::new();
        let mut cancelled = false;
        for result in results {
            match result {
                Ok(table_rows) => rows.extend(table_rows),
                Err(_) => cancelled = true,
            }
        }
        let logged = self.log_maintenance(&run, &rows);
        if cancelled || rows.iter().any(MaintainRow::cancelled) {
            return Err(crate::progress::cancelled_error());
        }
        if let Some(error) = failures_error(&rows, count) {
            return Err(error);
        }
        logged?;
        Ok(rows)
    }

    /// The session's budgets a run splits among the tables it maintains at once.
    fn run_budget(&self, max_parallel_tables: u64) -> RunBudget {
        let as_u64 = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        RunBudget {
            max_parallel_tables,
            compaction_memory_bytes: self.settings.compaction_max_memory_bytes(),
            read_concurrency: as_u64(self.settings.metadata_read_concurrency()),
            delete_concurrency: as_u64(self.settings.delete_concurrency()),
            read_cache_bytes: self.settings.statement_cache_max_bytes(),
        }
    }

    /// One listed table opened with its share of the run's budgets and maintained; a table that
    /// cannot be opened is a `failed` row. `Err` only for a cancellation before the table's
    /// maintenance began (then nothing of it ran).
    async fn maintain_listed(
        &self,
        table: Listed,
        run: &MaintainRun,
        share: &TableShare,
        progress: &Progress,
    ) -> Result<Vec<MaintainRow>> {
        stop_if_cancelled(progress, run)?;
        let (database, name) = (table.database.clone(), table.table.clone());
        let opened = match self.open_to_maintain(table, progress).await {
            Ok(mut opened) => take_share(&mut opened.target.settings, share).map(|()| opened),
            Err(e) => Err(e),
        };
        match opened {
            Ok(opened) => Ok(maintain_table(opened, run, progress).await),
            Err(e) if e.kind() == ErrorKind::QueryWasCancelled => Err(e),
            Err(e) => Ok(vec![MaintainRow {
                database,
                table: name,
                procedure: "open".into(),
                status: "failed".into(),
                reason: String::new(),
                detail: e.to_string(),
                error: Some(e.kind()),
                ..MaintainRow::default()
            }]),
        }
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

/// Lower a table's compaction memory, read and delete concurrency and read cache bound to its
/// share of the run's (a table's own setting that is lower stays).
fn take_share(settings: &mut crate::settings::Settings, share: &TableShare) -> Result<()> {
    for (name, value) in [
        ("iceberg_statement_cache_max_bytes", share.read_cache_bytes),
        (
            "iceberg_compaction_max_memory_bytes",
            share.compaction_memory_bytes,
        ),
        ("iceberg_metadata_read_concurrency", share.read_concurrency),
        ("iceberg_delete_concurrency", share.delete_concurrency),
    ] {
        if value < settings.get_uint(name) {
            settings.set(name, &crate::literal::Literal::Number(value.to_string()))?;
        }
    }
    Ok(())
}
