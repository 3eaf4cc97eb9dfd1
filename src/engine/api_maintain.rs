//! The typed builder of `SYSTEM MAINTAIN`: [`Session::maintain_table`] and
//! [`Session::maintain_database`] build the same statement SQL parses and run it through the same
//! path, returning its rows typed ([`MaintainRow`]).
//!
//! ```no_run
//! # async fn main_() -> icetrim::Result<()> {
//! let engine = icetrim::engine::Engine::builder().build()?;
//! let mut session = engine.session();
//! session.execute("CREATE TABLE events ENGINE = IcebergLocal('/data/events')").await?;
//! let decisions = session.maintain_table("events").dry_run(true).run().await?;
//! for row in decisions {
//!     println!("{} {} {} {}", row.table, row.procedure, row.status, row.reason);
//! }
//! # Ok(())
//! # }
//! ```

use super::Session;
pub use super::maintain::MaintainRow;
use crate::error::Result;
use crate::literal::Literal;
use crate::sql::{MaintainTarget, SystemMaintain, TableName};

/// A `SYSTEM MAINTAIN` being built.
#[derive(Debug)]
pub struct Maintain<'a> {
    session: &'a Session,
    statement: SystemMaintain,
}

impl Session {
    /// `SYSTEM MAINTAIN TABLE table` (in the current database; see [`Maintain::database`]).
    pub fn maintain_table(&self, table: &str) -> Maintain<'_> {
        let name = TableName {
            database: None,
            table: table.to_string(),
        };
        self.maintain(MaintainTarget::Table(name))
    }

    /// `SYSTEM MAINTAIN DATABASE database`.
    pub fn maintain_database(&self, database: &str) -> Maintain<'_> {
        self.maintain(MaintainTarget::Database {
            name: database.to_string(),
            namespace: None,
        })
    }

    fn maintain(&self, target: MaintainTarget) -> Maintain<'_> {
        Maintain {
            session: self,
            statement: SystemMaintain {
                target,
                settings: Vec::new(),
                format: None,
            },
        }
    }
}

impl Maintain<'_> {
    /// The table's database (`SYSTEM MAINTAIN TABLE database.table`); no effect on a database.
    pub fn database(mut self, database: &str) -> Self {
        if let MaintainTarget::Table(name) = &mut self.statement.target {
            name.database = Some(database.to_string());
        }
        self
    }

    /// `NAMESPACE 'namespace'`; no effect on a table.
    pub fn namespace(mut self, namespace: &str) -> Self {
        if let MaintainTarget::Database { namespace: ns, .. } = &mut self.statement.target {
            *ns = Some(namespace.to_string());
        }
        self
    }

    /// `SETTINGS dry_run = 1`: the decisions, nothing changed.
    pub fn dry_run(self, dry_run: bool) -> Self {
        self.setting("dry_run", if dry_run { "1" } else { "0" })
    }

    /// `SETTINGS name = 'value'` (an `iceberg_maintain_*` setting).
    pub fn setting(mut self, name: &str, value: &str) -> Self {
        self.statement
            .settings
            .push((name.to_string(), Literal::String(value.to_string())));
        self
    }

    /// The statement this builds, as SQL.
    pub fn sql(&self) -> String {
        self.statement.to_string()
    }

    /// Run it: one row per table and procedure; an error naming every failure after the other
    /// tables ran, when one failed.
    pub async fn run(self) -> Result<Vec<MaintainRow>> {
        self.session.maintain_rows(&self.statement, false).await
    }

    /// `EXPLAIN` it: the decisions and the knobs' sources, nothing changed.
    pub async fn explain(self) -> Result<Vec<MaintainRow>> {
        self.session.maintain_rows(&self.statement, true).await
    }
}
