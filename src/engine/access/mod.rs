//! Who may run what: the [`Privilege`]s of ClickHouse's access model that icetrim checks, the
//! objects they are granted on ([`GrantObject`]), the [`Authorizer`] a session asks before a
//! statement touches anything, and the privilege each statement needs ([`needs`]).
//!
//! icetrim's own grant store (`store.rs`: users and their grants, `CREATE USER`, `GRANT`,
//! `REVOKE`, persisted under the engine's data path) is the default authorizer; an embedder that
//! authenticates its users may put its own in its place with
//! [`EngineBuilder::authorizer`](super::EngineBuilder::authorizer). Naming a user is not
//! authenticating one: see `docs/access-control.md`.

mod privilege;
mod rights;
pub(crate) mod store;

use std::fmt;

pub use privilege::Privilege;
pub(crate) use privilege::{Level, grantable_at};

use crate::error::{Error, ErrorKind, Result};
use crate::sql::ast::write_ident;
use crate::sql::{AlterAction, Statement, TableName};

/// The user every session runs as unless told otherwise; icetrim's grant store gives it every
/// privilege with the grant option, and it cannot be dropped or changed.
pub const DEFAULT_USER: &str = "default";

/// What a privilege is granted on: `*.*`, `db.*` or `db.t`.
///
/// ```
/// use icetrim::engine::GrantObject;
/// assert_eq!(GrantObject::table("db", "t").to_string(), "db.t");
/// assert_eq!(GrantObject::Database("db".into()).to_string(), "db.*");
/// assert_eq!(GrantObject::Global.to_string(), "*.*");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum GrantObject {
    /// `*.*`: every database and table.
    Global,
    /// `db.*`: the database and every table in it.
    Database(String),
    /// `db.t`.
    Table { database: String, table: String },
}

impl GrantObject {
    /// The table `database.table`.
    pub fn table(database: impl Into<String>, table: impl Into<String>) -> GrantObject {
        GrantObject::Table {
            database: database.into(),
            table: table.into(),
        }
    }

    pub(crate) fn level(&self) -> Level {
        match self {
            GrantObject::Global => Level::Global,
            GrantObject::Database(_) => Level::Database,
            GrantObject::Table { .. } => Level::Table,
        }
    }
}

impl fmt::Display for GrantObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GrantObject::Global => f.write_str("*.*"),
            GrantObject::Database(db) => {
                write_ident(f, db)?;
                f.write_str(".*")
            }
            GrantObject::Table { database, table } => {
                write_ident(f, database)?;
                f.write_str(".")?;
                write_ident(f, table)
            }
        }
    }
}

/// Decides whether a user may use a privilege on an object. A session asks it before every
/// statement, before any storage or catalog request, and when it lists tables (a table is shown
/// only to a user holding some privilege on it).
///
/// icetrim's grant store is the default; a host that authenticates its users supplies its own
/// with [`EngineBuilder::authorizer`](super::EngineBuilder::authorizer) and names the principal
/// with [`Session::set_user`](super::Session::set_user). The calls are synchronous and frequent
/// (once per statement, once per listed table): answer from memory.
///
/// ```
/// use std::sync::Arc;
/// use icetrim::engine::{Authorizer, Engine, GrantObject, Privilege};
///
/// /// Everybody may read; only `ops` may run procedures on `prod` tables.
/// #[derive(Debug)]
/// struct Policy;
///
/// impl Authorizer for Policy {
///     fn allows(&self, user: &str, privilege: Privilege, object: &GrantObject) -> bool {
///         match (privilege, object) {
///             (Privilege::Select | Privilege::ShowTables | Privilege::ShowColumns, _) => true,
///             (_, GrantObject::Table { database, .. }) if database == "prod" => user == "ops",
///             _ => false,
///         }
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> icetrim::Result<()> {
/// let engine = Engine::builder().authorizer(Arc::new(Policy)).build()?;
/// let mut session = engine.session();
/// session.set_user("alice")?;
/// let denied = session
///     .execute("ALTER TABLE prod.t EXECUTE expire_snapshots()")
///     .await
///     .unwrap_err();
/// assert_eq!(denied.code(), 497);
/// # Ok(())
/// # }
/// ```
pub trait Authorizer: Send + Sync + fmt::Debug {
    /// Whether `user` holds `privilege` on `object` (for `db.*` and `*.*`: on everything inside
    /// it too).
    fn allows(&self, user: &str, privilege: Privilege, object: &GrantObject) -> bool;

    /// Whether `user` holds any privilege on `object` or on anything inside it: the table or
    /// database is visible to the user. The default asks [`allows`](Self::allows) for each
    /// table privilege on the object itself.
    fn allows_any(&self, user: &str, object: &GrantObject) -> bool {
        Privilege::ALL
            .iter()
            .filter(|p| grantable_at(Level::Table) & p.bit() != 0)
            .any(|p| self.allows(user, *p, object))
    }
}

/// What a statement needs before it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Need {
    /// The privilege on the object.
    Grant(Privilege, GrantObject),
    /// Any privilege on the object (ClickHouse's `SHOW …` privileges, implied by any grant);
    /// the privilege names it in the error.
    See(Privilege, GrantObject),
    /// A privilege on users (`*.*` here), named in the error by the user it is for, as
    /// ClickHouse names it (`CREATE USER ON ops`).
    OnUser(Privilege, String),
}

/// What `statement` needs, run in database `current` by `user`. Statements that list things
/// (`SHOW TABLES`, `SHOW DATABASES`, `SELECT` over the metadata tables) need nothing: they show
/// only what the user may see. `SET` is allowed to all, as in ClickHouse. `GRANT` and `REVOKE`
/// are checked by the grant store (the grant option on what is granted).
pub(crate) fn needs(statement: &Statement, current: &str, user: &str) -> Vec<Need> {
    let table = |name: &TableName| GrantObject::Table {
        database: name.database.clone().unwrap_or_else(|| current.to_string()),
        table: name.table.clone(),
    };
    let grant = |privilege, object| vec![Need::Grant(privilege, object)];
    match statement {
        Statement::AlterExecute(alter) => grant(Privilege::AlterExecute, table(&alter.table)),
        Statement::Optimize(o) => grant(Privilege::Optimize, table(&o.table)),
        Statement::OptimizeManifest(o) => grant(Privilege::Optimize, table(&o.table)),
        Statement::AlterTable(alter) => {
            let privilege = match alter.action {
                AlterAction::SetProperties(_) | AlterAction::UnsetProperties { .. } => {
                    Privilege::AlterSettings
                }
                AlterAction::PutRef { .. } | AlterAction::DropRef { .. } => Privilege::AlterExecute,
            };
            grant(privilege, table(&alter.table))
        }
        Statement::Explain(inner) => needs(inner, current, user),
        Statement::CreateTable(create) => grant(Privilege::CreateTable, table(&create.name)),
        Statement::DropTable { name, .. } => grant(Privilege::DropTable, table(name)),
        Statement::CreateDatabase(create) => grant(
            Privilege::CreateDatabase,
            GrantObject::Database(create.name.clone()),
        ),
        Statement::DropDatabase { name, .. } => {
            grant(Privilege::DropDatabase, GrantObject::Database(name.clone()))
        }
        Statement::ShowCreateTable { name, .. } => {
            vec![Need::See(Privilege::ShowColumns, table(name))]
        }
        Statement::Describe {
            target: crate::sql::DescribeTarget::Table(name),
            ..
        } if name.database.as_deref() != Some("system") => {
            vec![Need::See(Privilege::ShowColumns, table(name))]
        }
        Statement::Use(db) | Statement::ShowCreateDatabase { name: db, .. } => {
            vec![Need::See(
                Privilege::ShowDatabases,
                GrantObject::Database(db.clone()),
            )]
        }
        Statement::CreateUser(users) => users
            .names
            .iter()
            .map(|name| Need::OnUser(Privilege::CreateUser, name.clone()))
            .collect(),
        Statement::DropUser(users) => users
            .names
            .iter()
            .map(|name| Need::OnUser(Privilege::DropUser, name.clone()))
            .collect(),
        // `SYSTEM MAINTAIN` runs `ALTER TABLE … EXECUTE` procedures and compaction (OPTIMIZE) on
        // the table, or on every table of the database: both privileges on what it names.
        Statement::SystemMaintain(maintain) => {
            let object = match &maintain.target {
                crate::sql::MaintainTarget::Table(name) => table(name),
                crate::sql::MaintainTarget::Database { name, .. } => {
                    GrantObject::Database(name.clone())
                }
            };
            vec![
                Need::Grant(Privilege::AlterExecute, object.clone()),
                Need::Grant(Privilege::Optimize, object),
            ]
        }
        Statement::ShowUsers { .. } => grant(Privilege::ShowUsers, GrantObject::Global),
        Statement::ShowGrants {
            user: Some(other), ..
        } if other != user => grant(Privilege::ShowUsers, GrantObject::Global),
        _ => Vec::new(),
    }
}

/// Checks `needs` for `user`: the first one missing is ClickHouse's `ACCESS_DENIED`.
pub(crate) fn check(authorizer: &dyn Authorizer, user: &str, needs: &[Need]) -> Result<()> {
    for need in needs {
        let (held, privilege, object) = match need {
            Need::Grant(privilege, object) => (
                authorizer.allows(user, *privilege, object),
                privilege,
                object,
            ),
            Need::See(privilege, object) => {
                (authorizer.allows_any(user, object), privilege, object)
            }
            Need::OnUser(privilege, name) => {
                if authorizer.allows(user, *privilege, &GrantObject::Global) {
                    continue;
                }
                let name = rights::quoted_user(name);
                return Err(denied(user, &format!("{privilege} ON {name}")));
            }
        };
        if !held {
            return Err(denied(user, &format!("{privilege} ON {object}")));
        }
    }
    Ok(())
}

/// `u: Not enough privileges. To execute this query, it's necessary to have the grant X ON o`.
pub(crate) fn denied(user: &str, grant: &str) -> Error {
    Error::new(
        ErrorKind::AccessDenied,
        format!(
            "{user}: Not enough privileges. To execute this query, it's necessary to have the \
             grant {grant}"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::parse_statement;

    fn needs_of(sql: &str) -> Vec<Need> {
        needs(&parse_statement(sql).expect(sql), "cur", "u")
    }

    #[test]
    fn each_statement_needs_clickhouses_privilege() {
        let t = || GrantObject::table("db", "t");
        let current = GrantObject::table("cur", "t");
        for (sql, privilege, object) in [
            (
                "ALTER TABLE db.t EXECUTE expire_snapshots()",
                Privilege::AlterExecute,
                t(),
            ),
            (
                "EXPLAIN ALTER TABLE t EXECUTE remove_orphan_files()",
                Privilege::AlterExecute,
                current.clone(),
            ),
            ("OPTIMIZE TABLE db.t", Privilege::Optimize, t()),
            (
                "EXPLAIN OPTIMIZE TABLE db.t MANIFEST",
                Privilege::Optimize,
                t(),
            ),
            (
                "ALTER TABLE db.t CREATE BRANCH b",
                Privilege::AlterExecute,
                t(),
            ),
            ("ALTER TABLE db.t DROP TAG v1", Privilege::AlterExecute, t()),
            (
                "ALTER TABLE db.t SET TBLPROPERTIES ('k' = 'v')",
                Privilege::AlterSettings,
                t(),
            ),
            (
                "ALTER TABLE db.t UNSET TBLPROPERTIES ('k')",
                Privilege::AlterSettings,
                t(),
            ),
            (
                "CREATE TABLE db.t ENGINE = IcebergLocal('/x')",
                Privilege::CreateTable,
                t(),
            ),
            ("DROP TABLE db.t", Privilege::DropTable, t()),
            (
                "DROP DATABASE db",
                Privilege::DropDatabase,
                GrantObject::Database("db".into()),
            ),
            (
                "SHOW GRANTS FOR v",
                Privilege::ShowUsers,
                GrantObject::Global,
            ),
        ] {
            assert_eq!(needs_of(sql), vec![Need::Grant(privilege, object)], "{sql}");
        }
        assert_eq!(
            needs_of("DROP USER v, w"),
            vec![
                Need::OnUser(Privilege::DropUser, "v".into()),
                Need::OnUser(Privilege::DropUser, "w".into())
            ]
        );
        assert_eq!(
            needs_of("DESCRIBE TABLE db.t"),
            vec![Need::See(Privilege::ShowColumns, t())]
        );
        for free in [
            "SET max_threads = 1",
            "SHOW TABLES",
            "SHOW GRANTS",
            "SHOW GRANTS FOR u",
        ] {
            assert!(needs_of(free).is_empty(), "{free}");
        }
    }

    #[test]
    fn the_denial_reads_as_clickhouses() {
        let error = denied("u", "ALTER EXECUTE ON db.t");
        assert_eq!(
            error.to_string(),
            "Code: 497. DB::Exception: u: Not enough privileges. To execute this query, it's \
             necessary to have the grant ALTER EXECUTE ON db.t. (ACCESS_DENIED)"
        );
    }
}
