//! The `SYSTEM MAINTAIN` statement's tree (an icetrim extension beside ClickHouse's `SYSTEM`
//! statements): one table or every table of a catalog database, with the run's settings.

use std::fmt;

use super::ast::{Literal, TableName, write_format, write_ident, write_settings, write_string};

/// `SYSTEM MAINTAIN TABLE [db.]t | DATABASE db [NAMESPACE 'ns'] [SETTINGS k = v, ...] [FORMAT f]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemMaintain {
    pub target: MaintainTarget,
    /// `SETTINGS name = value, ...` in written order (`dry_run` and `iceberg_maintain_*`).
    pub settings: Vec<(String, Literal)>,
    pub format: Option<String>,
}

/// What `SYSTEM MAINTAIN` maintains.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MaintainTarget {
    /// One table: a path table or a catalog database's `db.t`.
    Table(TableName),
    /// Every table of a database, or of one namespace of a catalog database.
    Database {
        name: String,
        namespace: Option<String>,
    },
}

impl fmt::Display for SystemMaintain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SYSTEM MAINTAIN ")?;
        match &self.target {
            MaintainTarget::Table(name) => write!(f, "TABLE {name}")?,
            MaintainTarget::Database { name, namespace } => {
                f.write_str("DATABASE ")?;
                write_ident(f, name)?;
                if let Some(namespace) = namespace {
                    f.write_str(" NAMESPACE ")?;
                    write_string(f, namespace)?;
                }
            }
        }
        if !self.settings.is_empty() {
            f.write_str(" SETTINGS ")?;
            write_settings(f, &self.settings)?;
        }
        write_format(f, &self.format)
    }
}
