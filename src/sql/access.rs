//! The statements on users and grants, as ClickHouse spells them: `CREATE USER`, `DROP USER`,
//! `GRANT`, `REVOKE`, `SHOW GRANTS`, `SHOW USERS`. Privileges are kept as written (upper-case
//! words, one space apart); the engine resolves their names.

use std::fmt;

use super::ast::{TableName, write_format, write_ident};

/// `CREATE USER [IF NOT EXISTS] u [, …]` or `DROP USER [IF EXISTS] u [, …]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserNames {
    /// `IF NOT EXISTS` (create) or `IF EXISTS` (drop).
    pub if_clause: bool,
    pub names: Vec<String>,
}

/// What a `GRANT` or `REVOKE` is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrantOn {
    /// `*.*`.
    All,
    /// `db.*`, or `*` (`None`: the current database).
    Database(Option<String>),
    /// `[db.]t`.
    Table(TableName),
}

/// `GRANT privs ON … TO users [WITH GRANT OPTION]`, or `REVOKE [GRANT OPTION FOR] privs ON …
/// FROM users`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantStatement {
    /// The privileges as written, upper case (`ALTER TABLE EXECUTE`).
    pub privileges: Vec<String>,
    pub on: GrantOn,
    pub users: Vec<String>,
    /// `WITH GRANT OPTION` (grant) or `GRANT OPTION FOR` (revoke).
    pub grant_option: bool,
}

impl fmt::Display for GrantOn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GrantOn::All => f.write_str("*.*"),
            GrantOn::Database(None) => f.write_str("*"),
            GrantOn::Database(Some(db)) => {
                write_ident(f, db)?;
                f.write_str(".*")
            }
            GrantOn::Table(name) => write!(f, "{name}"),
        }
    }
}

pub(crate) fn write_names(f: &mut fmt::Formatter<'_>, names: &[String]) -> fmt::Result {
    for (i, name) in names.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write_ident(f, name)?;
    }
    Ok(())
}

impl UserNames {
    /// Prints `CREATE USER …` (`create`) or `DROP USER …`.
    pub(crate) fn write(&self, f: &mut fmt::Formatter<'_>, create: bool) -> fmt::Result {
        f.write_str(match (create, self.if_clause) {
            (true, true) => "CREATE USER IF NOT EXISTS ",
            (true, false) => "CREATE USER ",
            (false, true) => "DROP USER IF EXISTS ",
            (false, false) => "DROP USER ",
        })?;
        write_names(f, &self.names)
    }
}

impl GrantStatement {
    /// Prints `GRANT …` (`revoke`: `REVOKE …`).
    pub(crate) fn write(&self, f: &mut fmt::Formatter<'_>, revoke: bool) -> fmt::Result {
        f.write_str(if revoke { "REVOKE " } else { "GRANT " })?;
        if revoke && self.grant_option {
            f.write_str("GRANT OPTION FOR ")?;
        }
        write!(f, "{} ON {} ", self.privileges.join(", "), self.on)?;
        f.write_str(if revoke { "FROM " } else { "TO " })?;
        write_names(f, &self.users)?;
        if !revoke && self.grant_option {
            f.write_str(" WITH GRANT OPTION")?;
        }
        Ok(())
    }
}

/// `SHOW GRANTS [FOR u]` as text (also the name of its result column without `SHOW `, as in
/// ClickHouse).
pub(crate) fn write_show_grants(
    f: &mut fmt::Formatter<'_>,
    user: &Option<String>,
    format: &Option<String>,
) -> fmt::Result {
    f.write_str("SHOW GRANTS")?;
    if let Some(user) = user {
        f.write_str(" FOR ")?;
        write_ident(f, user)?;
    }
    write_format(f, format)
}
