//! Which statements of a host's script are icetrim's: what [`handles`] accepts (procedures,
//! compaction, manifest rewrite, branch and tag DDL, table properties, and their `EXPLAIN`), the
//! `CREATE TABLE … ENGINE = Iceberg…` and `CREATE DATABASE … ENGINE = DataLakeCatalog(…)` that
//! register icetrim's tables, `DROP TABLE` / `DROP DATABASE` of a name icetrim registered, `SET`
//! of icetrim's own settings, and the user and grant statements. Everything else belongs to the
//! host.

use super::*;

impl Session {
    /// Whether `sql` (one statement) is icetrim's to run rather than the host's (see the module
    /// comment). A statement icetrim cannot parse is the host's.
    pub async fn claims(&self, sql: &str) -> bool {
        if handles(sql) {
            return true;
        }
        let Ok(statement) = parse_checked(sql.trim(), 1) else {
            return false;
        };
        match &statement {
            // icetrim's parser knows only its own table engines.
            Statement::CreateTable(_) => true,
            Statement::CreateDatabase(create) => {
                create.engine.eq_ignore_ascii_case("DataLakeCatalog")
            }
            Statement::DropTable { name, .. } => {
                let database = self.database_of(name);
                let registry = self.shared.registry.lock().await;
                registry.get(&database, &name.table).is_ok()
            }
            Statement::DropDatabase { name, .. } => {
                self.shared.registry.lock().await.database(name).is_some()
            }
            Statement::CreateUser(_)
            | Statement::DropUser(_)
            | Statement::Grant(_)
            | Statement::Revoke(_)
            | Statement::ShowGrants { .. }
            | Statement::ShowUsers { .. } => true,
            Statement::Set(pairs) => pairs
                .iter()
                .all(|(name, _)| self.settings.get_text(name).is_some()),
            _ => false,
        }
    }
}
