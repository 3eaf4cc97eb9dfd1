//! The statements that act on one table: `ALTER TABLE … EXECUTE`, `OPTIMIZE TABLE [… MANIFEST]`,
//! the ref and property statements, and their `EXPLAIN`: where the table is (path or catalog),
//! the gates, then the procedure or change through `engine/procedures.rs`; and a table opened for
//! the typed API on the session's behalf (`Session::table`).

use super::*;
use crate::engine::access::GrantObject;
use crate::engine::api::{Table, TableGuard};
use crate::maintain::target::{MaintenanceTarget, TableSource};

impl Session {
    /// `ALTER TABLE` on refs or properties (or its `EXPLAIN`): table, gate and statement are
    /// checked before storage is touched.
    pub(super) async fn alter_table(
        &self,
        alter: &AlterTable,
        explain: bool,
    ) -> Result<QueryResult> {
        let place = self.place_of(&alter.table).await?;
        check_gates("ALTER TABLE", &self.settings)?;
        let change = bind_alter(&alter.action)?;
        self.run_at(
            &place,
            &alter.table.table,
            TableWork::Change(change),
            explain,
        )
        .await
    }

    /// `OPTIMIZE TABLE t` (or its `EXPLAIN`): `rewrite_data_files` with `delete_file_threshold = 1`,
    /// behind ClickHouse's gate `allow_experimental_iceberg_compaction`; path and catalog tables.
    pub(super) async fn optimize(&self, o: &OptimizeTable, explain: bool) -> Result<QueryResult> {
        let place = self.place_of(&o.table).await?;
        check_gates("rewrite_data_files", &self.settings)?;
        let call = ProcedureCall::Compact(CompactOptions::optimize());
        self.run_at(&place, &o.table.table, TableWork::Procedure(call), explain)
            .await
    }

    /// `EXPLAIN <statement>`: the plan of a statement that changes a table, nothing changed.
    pub(super) async fn explain(&self, inner: &Statement) -> Result<QueryResult> {
        match inner {
            Statement::AlterExecute(alter) => self.alter_execute(alter, true).await,
            Statement::Optimize(o) => self.optimize(o, true).await,
            Statement::AlterTable(alter) => self.alter_table(alter, true).await,
            Statement::OptimizeManifest(optimize) => self.optimize_manifest(optimize, true).await,
            Statement::Select(select) => self.explain_select(select).await,
            Statement::SystemMaintain(maintain) => self.system_maintain(maintain, true).await,
            other => Err(Error::new(
                ErrorKind::NotImplemented,
                format!("EXPLAIN is not supported for {other}"),
            )),
        }
    }

    /// `OPTIMIZE TABLE t MANIFEST` (ClickHouse 26.9): `rewrite_manifests` with the table's
    /// defaults, acting only above `iceberg_manifest_min_count_to_compact` manifests; no rows, as
    /// in ClickHouse (warnings still reach the result). `EXPLAIN` gives the plan.
    pub(super) async fn optimize_manifest(
        &self,
        optimize: &OptimizeManifest,
        explain: bool,
    ) -> Result<QueryResult> {
        let place = self.place_of(&optimize.table).await?;
        if !self.settings.allow_experimental_iceberg_compaction() {
            return Err(Error::bad_arguments(OPTIMIZE_DISABLED));
        }
        let call = ProcedureCall::RewriteManifests(RewriteManifestsOptions {
            min_manifest_count: Some(self.settings.manifest_min_count_to_compact()),
            ..Default::default()
        });
        let work = TableWork::Procedure(call);
        let result = self
            .run_at(&place, &optimize.table.table, work, explain)
            .await?;
        if explain {
            return Ok(result);
        }
        Ok(QueryResult {
            warnings: result.warnings,
            ..QueryResult::empty()
        })
    }

    /// `ALTER TABLE … EXECUTE` (or its `EXPLAIN`): table, gates and arguments are checked before the
    /// procedure touches storage.
    pub(super) async fn alter_execute(
        &self,
        alter: &AlterExecute,
        explain: bool,
    ) -> Result<QueryResult> {
        let place = self.place_of(&alter.table).await?;
        check_gates(&alter.procedure, &self.settings)?;
        let context = BindContext {
            now_ms: self.shared.runtime.clock.now_ms(),
            time_zone: self.settings.session_time_zone(),
            limits: self.parse_limits(),
        };
        let (call, notes) = bind_noted(&alter.procedure, &alter.args, &context)?;
        let work = TableWork::Procedure(call);
        let mut result = self
            .run_at(&place, &alter.table.table, work, explain)
            .await?;
        // The arguments' warnings (a DST gap or fold) come before the run's own.
        result.warnings.splice(0..0, notes);
        Ok(result)
    }

    /// The table `name` (`t`, `db.t`, or a catalog table ``lake.`ns.t` ``, as SQL names it) for
    /// the typed API, bound to this session: its settings, clock and storage as a statement would
    /// use them, and its user, whose privilege each run checks as the statement doing the same
    /// would be checked (`ALTER EXECUTE` for procedures and refs, `ALTER SETTINGS` for
    /// properties, any privilege to read metadata). Opening loads a catalog table; a path table
    /// costs no I/O.
    ///
    /// ```
    /// use icetrim::engine::Engine;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> icetrim::Result<()> {
    /// let dir = tempfile::tempdir().map_err(|e| icetrim::Error::logical(e.to_string()))?;
    /// let location = dir.path().join("t").to_string_lossy().into_owned();
    /// icetrim::Table::write_demo(&location).await?;
    /// let mut session = Engine::builder().build()?.session();
    /// session
    ///     .execute(&format!("CREATE TABLE t ENGINE = IcebergLocal('{location}'); CREATE USER reader"))
    ///     .await?;
    /// session.execute("GRANT SELECT ON default.t TO reader").await?;
    /// session.set_user("reader")?;
    /// let table = session.table("t").await?;
    /// let denied = table.expire_snapshots().dry_run(true).execute().await.unwrap_err();
    /// assert_eq!(denied.code(), 497);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn table(&self, name: &str) -> Result<Table> {
        let statement = crate::sql::parse_statement(&format!("SHOW CREATE TABLE {name}"))?;
        let Statement::ShowCreateTable { name, .. } = statement else {
            return Err(Error::bad_arguments(format!(
                "'{name}' is not a table name"
            )));
        };
        let place = self.place_of(&name).await?;
        let runtime = &self.shared.runtime;
        let target = match &place {
            TablePlace::Catalog(def) => {
                let catalog = self.catalogs.get(def)?;
                let open =
                    catalog_db::open_table_in(runtime, &self.settings, def, catalog, &name.table);
                let progress = Progress::new(None, self.cancel.clone());
                catalog_db::cancellable(&progress, open)
                    .await
                    .map_err(|e| catalog_db::scrub(e, def))?
            }
            TablePlace::Path(def) => open_table(runtime, &self.settings, def)?,
        };
        let guard = TableGuard {
            authorizer: self.shared.access.shared_authorizer(),
            user: self.user.clone(),
            object: GrantObject::table(self.database_of(&name), &name.table),
        };
        Ok(Table::bound(target, Arc::clone(&runtime.clock), guard))
    }

    /// Where the table `name` is, the one routing of every statement on a table: a catalog
    /// database's table (its catalog is the session's, see [`Self::run_at`]), or a registered path table
    /// (`UNKNOWN_DATABASE` for a named database that does not exist, `UNKNOWN_TABLE` when there
    /// is no such table).
    pub(super) async fn place_of(&self, name: &TableName) -> Result<TablePlace> {
        let database = self.database_of(name);
        if let Some(def) = self.catalog_database(&database).await {
            return Ok(TablePlace::Catalog(def));
        }
        if name.database.is_some() {
            self.check_database(&database).await?;
        }
        let registry = self.shared.registry.lock().await;
        Ok(TablePlace::Path(
            registry.get(&database, &name.table)?.clone(),
        ))
    }

    /// Runs `work` on `table` at `place` within the statement's progress scope: a catalog table is
    /// loaded through its catalog (cancellable; errors scrubbed of the catalog's secrets).
    pub(super) async fn run_at(
        &self,
        place: &TablePlace,
        table: &str,
        work: TableWork,
        explain: bool,
    ) -> Result<QueryResult> {
        let progress = Progress::new(self.progress.0.clone(), self.cancel.clone());
        let runtime = &self.shared.runtime;
        let target = match place {
            TablePlace::Catalog(def) => {
                let catalog = self.catalogs.get(def)?;
                let open = catalog_db::open_table_in(runtime, &self.settings, def, catalog, table);
                // Loading the table is cancellable too (the catalog may be slow).
                catalog_db::cancellable(&progress, open).await?
            }
            TablePlace::Path(def) => open_table(runtime, &self.settings, def)?,
        };
        let mut owned_warning = if explain {
            None
        } else {
            self.catalog_owned_warning(&target).await
        };
        // Before anything runs: the statement may commit.
        if let (Some(sink), Some(warning)) = (&self.early_warnings.0, &owned_warning) {
            sink(warning);
            owned_warning = None;
        }
        let location = target.location.clone();
        let result = match work {
            TableWork::Procedure(call) => run_procedure_on(target, call, explain, &progress).await,
            TableWork::Change(change) => {
                run_table_change_on(target, &change, explain, &progress).await
            }
        };
        let result = result.map(|mut r| {
            r.location = Some(location);
            r
        });
        match place {
            TablePlace::Catalog(def) => result.map_err(|e| catalog_db::scrub(e, def)),
            TablePlace::Path(_) => result.map(|mut r| {
                r.warnings.splice(0..0, owned_warning);
                r
            }),
        }
    }

    /// For a path table whose metadata looks catalog-written
    /// ([`crate::iceberg::ownership`]), the warning, once per table per session (the first
    /// statement that may commit), never with `iceberg_warn_catalog_owned_tables = 0` or a
    /// pinned metadata file. Costs one listing of `metadata/`, once per table.
    async fn catalog_owned_warning(&self, target: &MaintenanceTarget) -> Option<String> {
        use crate::iceberg::ownership::{catalog_owned_warning, looks_catalog_owned_at};
        let applies = matches!(target.source, TableSource::Path)
            && self.settings.warn_catalog_owned_tables()
            && target.metadata_settings.metadata_file_path.is_none();
        if !applies {
            return None;
        }
        let first = self
            .warned_catalog_owned
            .lock()
            .ok()?
            .insert(target.location.clone());
        if !first || !looks_catalog_owned_at(&target.io, &target.location).await {
            return None;
        }
        Some(catalog_owned_warning(&target.location))
    }
}
