//! Who the session runs as, the one check every statement passes before it runs
//! ([`Session::authorize`]), what a user may see, and the statements on users and grants
//! (`CREATE USER`, `DROP USER`, `GRANT`, `REVOKE`, `SHOW GRANTS`, `SHOW USERS`) on icetrim's
//! grant store.

use super::*;
use crate::engine::access::store::{GrantChange, unknown_user};
use crate::engine::access::{self, GrantObject, Privilege};
use crate::sql::access::{GrantOn, GrantStatement};

/// Who decides on privileges: icetrim's grant store, or the embedder's authorizer (then the
/// statements on users and grants are the host's business and refused here).
#[derive(Debug, Clone)]
pub(super) enum Access {
    Store(Arc<GrantStore>),
    Host(Arc<dyn Authorizer>),
}

impl Access {
    /// The authorizer, shared (a session-bound `Table` keeps it).
    pub(super) fn shared_authorizer(&self) -> Arc<dyn Authorizer> {
        match self {
            Access::Store(store) => Arc::clone(store) as Arc<dyn Authorizer>,
            Access::Host(host) => Arc::clone(host),
        }
    }

    pub(super) fn authorizer(&self) -> &dyn Authorizer {
        match self {
            Access::Store(store) => store.as_ref(),
            Access::Host(host) => host.as_ref(),
        }
    }
}

impl Session {
    /// Run the following statements as `user`: every statement is checked against that user's
    /// privileges before it touches anything. With icetrim's grant store the user must exist
    /// (`UNKNOWN_USER` otherwise); with an embedder's [`Authorizer`] any name is taken as given.
    ///
    /// This names a principal; it is not a login. A host that serves several users
    /// authenticates them itself and passes the name in.
    ///
    /// ```
    /// use icetrim::engine::Engine;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> icetrim::Result<()> {
    /// let engine = Engine::builder().build()?;
    /// let mut admin = engine.session();
    /// admin.execute("CREATE USER ops; GRANT OPTIMIZE ON lake.* TO ops").await?;
    /// let mut session = engine.session();
    /// session.set_user("ops")?;
    /// assert_eq!(session.user(), "ops");
    /// let denied = session.execute("ALTER TABLE lake.t EXECUTE expire_snapshots()").await.unwrap_err();
    /// assert_eq!(
    ///     denied.message(),
    ///     "ops: Not enough privileges. To execute this query, it's necessary to have the grant \
    ///      ALTER EXECUTE ON lake.t"
    /// );
    /// assert_eq!(session.set_user("nobody").unwrap_err().code(), 192);
    /// # Ok(())
    /// # }
    /// ```
    pub fn set_user(&mut self, user: impl Into<String>) -> Result<()> {
        let user = user.into();
        if let Access::Store(store) = &self.shared.access
            && !store.exists(&user)
        {
            return Err(unknown_user(&user));
        }
        self.user = user;
        Ok(())
    }

    /// The user the session runs as.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The one check of every statement, before anything else runs: the privileges it needs
    /// ([`access::needs`]) held by the session's user.
    pub(super) fn authorize(&self, statement: &Statement) -> Result<()> {
        let needs = access::needs(statement, &self.database, &self.user);
        access::check(self.shared.access.authorizer(), &self.user, &needs)
    }

    /// Whether the session's user may see the table `database.table` (holds any privilege on it).
    pub(super) fn sees_table(&self, database: &str, table: &str) -> bool {
        let object = GrantObject::table(database, table);
        self.shared
            .access
            .authorizer()
            .allows_any(&self.user, &object)
    }

    /// Whether the session's user may see database `database` (any privilege on it or inside).
    pub(super) fn sees_database(&self, database: &str) -> bool {
        let object = GrantObject::Database(database.to_string());
        self.shared
            .access
            .authorizer()
            .allows_any(&self.user, &object)
    }

    /// `CREATE USER`, `DROP USER`, `GRANT`, `REVOKE`, `SHOW GRANTS`, `SHOW USERS`.
    pub(super) fn access_statement(&self, statement: &Statement) -> Result<QueryResult> {
        let Access::Store(store) = &self.shared.access else {
            return Err(Error::new(
                ErrorKind::QueryIsProhibited,
                format!("{statement}: users and grants are managed by the host's authorizer"),
            ));
        };
        match statement {
            Statement::CreateUser(users) => store.edit(|all| {
                for name in &users.names {
                    all.create(name, users.if_clause)?;
                }
                Ok(())
            })?,
            Statement::DropUser(users) => store.edit(|all| {
                for name in &users.names {
                    all.drop_user(name, users.if_clause)?;
                }
                Ok(())
            })?,
            Statement::Grant(grant) | Statement::Revoke(grant) => {
                let change = self.grant_change(grant)?;
                let granting = matches!(statement, Statement::Grant(_));
                store.edit(|all| all.change(&self.user, &change, granting))?
            }
            Statement::ShowGrants { user, .. } => {
                let user = user.as_deref().unwrap_or(&self.user);
                let lines = store.users().show_grants(user)?;
                let column = statement.to_string();
                let column = column.strip_prefix("SHOW ").unwrap_or(&column);
                let column = column.split(" FORMAT ").next().unwrap_or(column);
                return Ok(QueryResult::table(
                    vec![Column::new(column, "String")],
                    lines.into_iter().map(|l| vec![Value::Str(l)]).collect(),
                ));
            }
            Statement::ShowUsers { .. } => {
                return Ok(QueryResult::table(
                    vec![Column::new("name", "String")],
                    store
                        .users()
                        .names()
                        .into_iter()
                        .map(|n| vec![Value::Str(n)])
                        .collect(),
                ));
            }
            other => {
                return Err(Error::logical(format!(
                    "{other} is not a statement on users and grants"
                )));
            }
        }
        Ok(QueryResult::empty())
    }

    /// A `GRANT` or `REVOKE` with its privileges named and its object resolved (`ON t` and `ON *`
    /// are in the current database).
    fn grant_change(&self, grant: &GrantStatement) -> Result<GrantChange> {
        let privileges = grant
            .privileges
            .iter()
            .map(|name| {
                Privilege::from_name(name).ok_or_else(|| {
                    Error::syntax(format!(
                        "Unknown privilege {name} (icetrim knows {})",
                        Privilege::ALL
                            .iter()
                            .map(|p| p.name())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let object = match &grant.on {
            GrantOn::All => GrantObject::Global,
            GrantOn::Database(db) => {
                GrantObject::Database(db.clone().unwrap_or_else(|| self.database.clone()))
            }
            GrantOn::Table(name) => GrantObject::table(self.database_of(name), &name.table),
        };
        Ok(GrantChange {
            privileges,
            object,
            users: grant.users.clone(),
            grant_option: grant.grant_option,
        })
    }
}
