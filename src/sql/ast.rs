//! icetrim's statement tree: what the parser produces and what `Display` prints back.
//!
//! Every node prints canonical SQL: upper-case keywords, single spaces, `key = value` arguments,
//! identifiers bare when they are plain words and back-quoted otherwise, strings in single quotes
//! with `\\` and `\'` escaped. Printing a parsed statement and parsing the text again yields an equal
//! tree (tested for every syntax form in `tests/sql/sql_roundtrip.rs`).

use std::borrow::Cow;
use std::fmt;

pub use super::access::{GrantOn, GrantStatement, UserNames};
pub use super::alter_refs::{AlterAction, AlterTable};
use super::select::Select;
pub use crate::literal::Literal;

/// One statement icetrim accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Statement {
    /// `ALTER TABLE [db.]t EXECUTE name(args) [FORMAT f]`.
    AlterExecute(AlterExecute),
    /// `EXPLAIN <statement>`: the plan of an [`Statement::AlterExecute`], [`Statement::Optimize`],
    /// [`Statement::AlterTable`] or [`Statement::OptimizeManifest`] (the only statements the parser
    /// puts here), nothing changed.
    Explain(Box<Statement>),
    /// `OPTIMIZE TABLE [db.]t [FORMAT f]`: compaction (`rewrite_data_files` with
    /// `delete_file_threshold = 1`).
    Optimize(OptimizeTable),
    /// `CREATE TABLE [IF NOT EXISTS] [db.]t [(cols)] ENGINE = Iceberg…(args) [SETTINGS …]`.
    CreateTable(CreateTable),
    /// `DROP TABLE [IF EXISTS] [db.]t`: forgets the table, never deletes files.
    DropTable { if_exists: bool, name: TableName },
    /// `SHOW TABLES [FROM db] [FORMAT f]`.
    ShowTables {
        from_db: Option<String>,
        format: Option<String>,
    },
    /// `SHOW CREATE TABLE [db.]t [FORMAT f]`.
    ShowCreateTable {
        name: TableName,
        format: Option<String>,
    },
    /// `USE db`.
    Use(String),
    /// `SET name = literal [, ...]`.
    Set(Vec<(String, Literal)>),
    /// `[WITH …] SELECT …` over the `system.iceberg_*` metadata tables.
    Select(Select),
    /// `ALTER TABLE [db.]t` on refs or properties (`CREATE BRANCH`, `SET TBLPROPERTIES`, ...).
    AlterTable(AlterTable),
    /// `OPTIMIZE TABLE [db.]t MANIFEST` (ClickHouse 26.9): manifest rewrite.
    OptimizeManifest(OptimizeManifest),
    /// `CREATE DATABASE [IF NOT EXISTS] db ENGINE = DataLakeCatalog(args) [SETTINGS …]`.
    CreateDatabase(CreateDatabase),
    /// `DROP DATABASE [IF EXISTS] db`: forgets the database, never touches the catalog.
    DropDatabase { if_exists: bool, name: String },
    /// `SHOW DATABASES [FORMAT f]`.
    ShowDatabases { format: Option<String> },
    /// `SHOW CREATE DATABASE db [FORMAT f]`.
    ShowCreateDatabase {
        name: String,
        format: Option<String>,
    },
    /// `DESCRIBE [TABLE] [db.]t` or `DESCRIBE (SELECT …)` (also `DESC`) `[FORMAT f]`.
    Describe {
        target: DescribeTarget,
        format: Option<String>,
    },
    /// `SHOW [CHANGED] SETTINGS [LIKE | ILIKE 'pattern'] [FORMAT f]`.
    ShowSettings {
        changed: bool,
        /// The pattern and whether it ignores case (`ILIKE`).
        like: Option<(String, bool)>,
        format: Option<String>,
    },
    /// `CREATE USER [IF NOT EXISTS] u [, …]`.
    CreateUser(UserNames),
    /// `DROP USER [IF EXISTS] u [, …]`.
    DropUser(UserNames),
    /// `GRANT privs ON … TO u [, …] [WITH GRANT OPTION]`.
    Grant(GrantStatement),
    /// `REVOKE [GRANT OPTION FOR] privs ON … FROM u [, …]`.
    Revoke(GrantStatement),
    /// `SHOW GRANTS [FOR u] [FORMAT f]`.
    ShowGrants {
        user: Option<String>,
        format: Option<String>,
    },
    /// `SHOW USERS [FORMAT f]`.
    ShowUsers { format: Option<String> },
    /// `SYSTEM MAINTAIN TABLE t | DATABASE db [NAMESPACE 'ns'] [SETTINGS …]` (icetrim's
    /// extension): every procedure a table's maintenance policy finds due.
    SystemMaintain(super::maintain_ast::SystemMaintain),
}

/// What `DESCRIBE` describes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DescribeTarget {
    /// A registered table or `system.<table>`.
    Table(TableName),
    /// A query's result (the text inside the parentheses).
    Query(String),
}

/// `OPTIMIZE TABLE [db.]t MANIFEST [FORMAT f]` (a format only under `EXPLAIN`: the statement
/// itself returns no rows, as in ClickHouse).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptimizeManifest {
    pub table: TableName,
    pub format: Option<String>,
}

impl fmt::Display for OptimizeManifest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OPTIMIZE TABLE {} MANIFEST", self.table)?;
        write_format(f, &self.format)
    }
}

/// `CREATE DATABASE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateDatabase {
    pub if_not_exists: bool,
    pub name: String,
    /// The engine name as written (`DataLakeCatalog`; others are refused when run).
    pub engine: String,
    /// Engine arguments (string literals for `DataLakeCatalog`).
    pub args: Vec<Literal>,
    /// `SETTINGS name = value, ...`, in written order.
    pub settings: Vec<(String, Literal)>,
}

impl fmt::Display for CreateDatabase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CREATE DATABASE ")?;
        if self.if_not_exists {
            f.write_str("IF NOT EXISTS ")?;
        }
        write_ident(f, &self.name)?;
        f.write_str(" ENGINE = ")?;
        write_ident(f, &self.engine)?;
        f.write_str("(")?;
        write_list(f, &self.args, |f, a| write!(f, "{a}"))?;
        f.write_str(")")?;
        if !self.settings.is_empty() {
            f.write_str(" SETTINGS ")?;
            write_settings(f, &self.settings)?;
        }
        Ok(())
    }
}

/// `ALTER TABLE [db.]t EXECUTE procedure(args)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterExecute {
    pub table: TableName,
    /// The procedure name as written (names are case-sensitive).
    pub procedure: String,
    pub args: Vec<Arg>,
    /// Output format from a trailing `FORMAT <name>`.
    pub format: Option<String>,
}

/// `OPTIMIZE TABLE [db.]t`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptimizeTable {
    pub table: TableName,
    /// Output format from a trailing `FORMAT <name>`.
    pub format: Option<String>,
}

/// A table name, optionally qualified by its database.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TableName {
    pub database: Option<String>,
    pub table: String,
}

/// One procedure argument: `key = value`, `key => value`, or positional `value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arg {
    pub name: Option<String>,
    pub value: ArgValue,
}

/// An argument's value: a literal, or any other expression (kept as sqlparser prints it, so the
/// binder can refuse it with "must be a literal value").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgValue {
    Literal(Literal),
    Expr(String),
}

/// The table engines icetrim knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EngineName {
    IcebergLocal,
    IcebergS3,
    IcebergAzure,
}

impl EngineName {
    /// The engine named `name` (case-sensitive, as in ClickHouse).
    pub fn from_name(name: &str) -> Option<EngineName> {
        match name {
            "IcebergLocal" => Some(EngineName::IcebergLocal),
            "IcebergS3" => Some(EngineName::IcebergS3),
            "IcebergAzure" => Some(EngineName::IcebergAzure),
            _ => None,
        }
    }

    /// The engine's name as written in SQL.
    pub fn as_str(self) -> &'static str {
        match self {
            EngineName::IcebergLocal => "IcebergLocal",
            EngineName::IcebergS3 => "IcebergS3",
            EngineName::IcebergAzure => "IcebergAzure",
        }
    }
}

/// One engine argument: a literal or the keyword `NOSIGN` (anonymous S3 access).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineArg {
    Literal(Literal),
    NoSign,
}

/// `ENGINE = Name(args)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Engine {
    pub name: EngineName,
    pub args: Vec<EngineArg>,
}

/// `CREATE TABLE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateTable {
    pub if_not_exists: bool,
    pub name: TableName,
    /// Column definitions as canonical text (`id Int64`), when a column list was given.
    pub columns: Option<Vec<String>>,
    pub engine: Engine,
    /// Table settings from `SETTINGS name = value, ...`, in written order.
    pub settings: Vec<(String, Literal)>,
}

/// Writes `name` bare when it is a plain word that is no SQL keyword, else back-quoted.
pub fn write_ident(f: &mut fmt::Formatter<'_>, name: &str) -> fmt::Result {
    if is_bare_identifier(name) {
        f.write_str(name)
    } else {
        write!(f, "`{}`", name.replace('`', "``"))
    }
}

pub(crate) fn is_bare_identifier(name: &str) -> bool {
    is_plain_word(name) && !is_keyword(name)
}

fn is_plain_word(name: &str) -> bool {
    let mut chars = name.chars();
    let starts_well = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    starts_well && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Words that cannot stand bare where icetrim prints identifiers (found by round-tripping every
/// sqlparser keyword through every identifier position, see `tests/sql/sql_roundtrip.rs`).
const RESERVED: &[&str] = &[
    "ALL",
    "AND",
    "ANY",
    "ARRAY",
    "AS",
    "ASC",
    "BETWEEN",
    "BY",
    "CASE",
    "CAST",
    "CROSS",
    "CURRENT_DATE",
    "CURRENT_TIME",
    "CURRENT_TIMESTAMP",
    "DATE",
    "DESC",
    "DISTINCT",
    "ELSE",
    "END",
    "EXCEPT",
    "EXISTS",
    "FALSE",
    "FETCH",
    "FOR",
    "FORMAT",
    "FROM",
    "FULL",
    "GROUP",
    "HAVING",
    "IN",
    "INNER",
    "INTERSECT",
    "INTERVAL",
    "INTO",
    "IS",
    "JOIN",
    "LEFT",
    "LIKE",
    "LIMIT",
    "NOT",
    "NULL",
    "OFFSET",
    "ON",
    "OR",
    "LOCALTIME",
    "LOCALTIMESTAMP",
    "ORDER",
    "PREWHERE",
    "RIGHT",
    "SELECT",
    "SETTINGS",
    "SOME",
    "TABLE",
    "THEN",
    "TIME",
    "TIMESTAMP",
    "TOP",
    "TRIM",
    "TRUE",
    "UNION",
    "USING",
    "WHEN",
    "WHERE",
    "WINDOW",
    "WITH",
];

fn is_keyword(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    RESERVED.contains(&upper.as_str())
}

/// Writes a single-quoted SQL string with `\` and `'` escaped by a backslash.
pub fn write_string(f: &mut fmt::Formatter<'_>, value: &str) -> fmt::Result {
    f.write_str("'")?;
    for c in value.chars() {
        match c {
            '\\' => f.write_str("\\\\")?,
            '\'' => f.write_str("\\'")?,
            _ => write!(f, "{c}")?,
        }
    }
    f.write_str("'")
}

fn write_list<T>(
    f: &mut fmt::Formatter<'_>,
    items: &[T],
    mut write: impl FnMut(&mut fmt::Formatter<'_>, &T) -> fmt::Result,
) -> fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write(f, item)?;
    }
    Ok(())
}

/// Writes ` FORMAT <name>`; a format name is bare whenever it is a plain word, keyword or not.
pub(crate) fn write_format(f: &mut fmt::Formatter<'_>, format: &Option<String>) -> fmt::Result {
    match format {
        Some(name) if is_plain_word(name) => write!(f, " FORMAT {name}"),
        Some(name) => write!(f, " FORMAT `{}`", name.replace('`', "``")),
        None => Ok(()),
    }
}

pub(crate) fn write_settings(
    f: &mut fmt::Formatter<'_>,
    settings: &[(String, Literal)],
) -> fmt::Result {
    write_list(f, settings, |f, (name, value)| {
        write_ident(f, name)?;
        write!(f, " = {value}")
    })
}

/// A list being printed: its remaining items, whether one was printed, its closing bracket.
type OpenList<'a> = (
    Box<dyn Iterator<Item = Cow<'a, Literal>> + 'a>,
    bool,
    &'static str,
);

/// Printed with an explicit stack: nested arrays and tuples cost no recursion.
impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut stack: Vec<OpenList<'_>> = Vec::new();
        let mut next = Some(Cow::Borrowed(self));
        loop {
            if let Some(literal) = next.take() {
                match literal {
                    Cow::Borrowed(Literal::Array(items)) => {
                        f.write_str("[")?;
                        stack.push((Box::new(items.iter()), false, "]"));
                    }
                    Cow::Borrowed(Literal::Tuple(items)) => {
                        f.write_str("(")?;
                        stack.push((Box::new(items.iter().map(Cow::Borrowed)), false, ")"));
                    }
                    other => write_scalar(f, &other)?,
                }
            }
            let Some((items, printed, close)) = stack.last_mut() else {
                return Ok(());
            };
            match items.next() {
                Some(item) => {
                    if *printed {
                        f.write_str(", ")?;
                    }
                    *printed = true;
                    next = Some(item);
                }
                None => {
                    f.write_str(close)?;
                    stack.pop();
                }
            }
        }
    }
}

/// A literal that is not a borrowed list (lists only ever hold scalars by value).
fn write_scalar(f: &mut fmt::Formatter<'_>, literal: &Literal) -> fmt::Result {
    match literal {
        Literal::Number(text) => f.write_str(text),
        Literal::String(value) => write_string(f, value),
        Literal::Bool(true) => f.write_str("true"),
        Literal::Bool(false) => f.write_str("false"),
        Literal::Null => f.write_str("NULL"),
        list @ (Literal::Array(_) | Literal::Tuple(_)) => write!(f, "{list}"),
    }
}

impl fmt::Display for ArgValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgValue::Literal(literal) => write!(f, "{literal}"),
            ArgValue::Expr(text) => f.write_str(text),
        }
    }
}

impl fmt::Display for Arg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(name) = &self.name {
            write_ident(f, name)?;
            f.write_str(" = ")?;
        }
        write!(f, "{}", self.value)
    }
}

impl fmt::Display for TableName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(database) = &self.database {
            write_ident(f, database)?;
            f.write_str(".")?;
        }
        write_ident(f, &self.table)
    }
}

impl fmt::Display for AlterExecute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ALTER TABLE {} EXECUTE ", self.table)?;
        write_ident(f, &self.procedure)?;
        f.write_str("(")?;
        write_list(f, &self.args, |f, arg| write!(f, "{arg}"))?;
        f.write_str(")")?;
        write_format(f, &self.format)
    }
}

impl fmt::Display for EngineArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineArg::Literal(literal) => write!(f, "{literal}"),
            EngineArg::NoSign => f.write_str("NOSIGN"),
        }
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}(", self.name.as_str())?;
        write_list(f, &self.args, |f, arg| write!(f, "{arg}"))?;
        f.write_str(")")
    }
}

impl fmt::Display for CreateTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CREATE TABLE ")?;
        if self.if_not_exists {
            f.write_str("IF NOT EXISTS ")?;
        }
        write!(f, "{}", self.name)?;
        if let Some(columns) = &self.columns {
            f.write_str(" (")?;
            write_list(f, columns, |f, column| f.write_str(column))?;
            f.write_str(")")?;
        }
        write!(f, " ENGINE = {}", self.engine)?;
        if !self.settings.is_empty() {
            f.write_str(" SETTINGS ")?;
            write_settings(f, &self.settings)?;
        }
        Ok(())
    }
}

impl fmt::Display for Statement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Statement::AlterExecute(alter) => write!(f, "{alter}"),
            Statement::Explain(inner) => write!(f, "EXPLAIN {inner}"),
            Statement::Optimize(o) => {
                write!(f, "OPTIMIZE TABLE {}", o.table)?;
                write_format(f, &o.format)
            }
            Statement::CreateTable(create) => write!(f, "{create}"),
            Statement::DropTable { if_exists, name } => {
                let if_exists = if *if_exists { "IF EXISTS " } else { "" };
                write!(f, "DROP TABLE {if_exists}{name}")
            }
            Statement::ShowTables { from_db, format } => {
                f.write_str("SHOW TABLES")?;
                if let Some(db) = from_db {
                    f.write_str(" FROM ")?;
                    write_ident(f, db)?;
                }
                write_format(f, format)
            }
            Statement::ShowCreateTable { name, format } => {
                write!(f, "SHOW CREATE TABLE {name}")?;
                write_format(f, format)
            }
            Statement::Use(db) => {
                f.write_str("USE ")?;
                write_ident(f, db)
            }
            Statement::Set(settings) => {
                f.write_str("SET ")?;
                write_settings(f, settings)
            }
            Statement::Select(select) => write!(f, "{select}"),
            Statement::AlterTable(alter) => write!(f, "{alter}"),
            Statement::OptimizeManifest(optimize) => write!(f, "{optimize}"),
            Statement::CreateDatabase(create) => write!(f, "{create}"),
            Statement::DropDatabase { if_exists, name } => {
                f.write_str(if *if_exists {
                    "DROP DATABASE IF EXISTS "
                } else {
                    "DROP DATABASE "
                })?;
                write_ident(f, name)
            }
            Statement::ShowDatabases { format } => {
                f.write_str("SHOW DATABASES")?;
                write_format(f, format)
            }
            Statement::ShowCreateDatabase { name, format } => {
                f.write_str("SHOW CREATE DATABASE ")?;
                write_ident(f, name)?;
                write_format(f, format)
            }
            Statement::Describe { target, format } => {
                match target {
                    DescribeTarget::Table(name) => write!(f, "DESCRIBE TABLE {name}")?,
                    DescribeTarget::Query(text) => write!(f, "DESCRIBE ({text})")?,
                }
                write_format(f, format)
            }
            Statement::ShowSettings {
                changed,
                like,
                format,
            } => {
                f.write_str(if *changed {
                    "SHOW CHANGED SETTINGS"
                } else {
                    "SHOW SETTINGS"
                })?;
                if let Some((pattern, ignore_case)) = like {
                    f.write_str(if *ignore_case { " ILIKE " } else { " LIKE " })?;
                    write!(f, "{}", Literal::String(pattern.clone()))?;
                }
                write_format(f, format)
            }
            Statement::CreateUser(users) => users.write(f, true),
            Statement::DropUser(users) => users.write(f, false),
            Statement::Grant(grant) => grant.write(f, false),
            Statement::Revoke(revoke) => revoke.write(f, true),
            Statement::ShowGrants { user, format } => {
                super::access::write_show_grants(f, user, format)
            }
            Statement::ShowUsers { format } => {
                f.write_str("SHOW USERS")?;
                write_format(f, format)
            }
            Statement::SystemMaintain(maintain) => write!(f, "{maintain}"),
        }
    }
}

impl Statement {
    /// The output format a trailing `FORMAT <name>` asked for, if any.
    pub fn format(&self) -> Option<&str> {
        match self {
            Statement::AlterExecute(alter) => alter.format.as_deref(),
            // A ref or property statement keeps a format only for its EXPLAIN (it returns no
            // rows itself).
            Statement::Explain(inner) => match inner.as_ref() {
                Statement::AlterTable(alter) => alter.format.as_deref(),
                other => other.format(),
            },
            Statement::Optimize(o) => o.format.as_deref(),
            Statement::ShowTables { format, .. }
            | Statement::ShowCreateTable { format, .. }
            | Statement::ShowDatabases { format }
            | Statement::ShowCreateDatabase { format, .. }
            | Statement::Describe { format, .. }
            | Statement::ShowSettings { format, .. }
            | Statement::ShowGrants { format, .. }
            | Statement::ShowUsers { format } => format.as_deref(),
            Statement::Select(select) => select.format.as_deref(),
            Statement::OptimizeManifest(optimize) => optimize.format.as_deref(),
            Statement::SystemMaintain(maintain) => maintain.format.as_deref(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_type_names_follow_clickhouse() {
        let number = |s: &str| Literal::Number(s.to_string());
        assert_eq!(number("5").type_name(), "UInt64");
        assert_eq!(number("18446744073709551615").type_name(), "UInt64");
        assert_eq!(number("18446744073709551616").type_name(), "Float64");
        assert_eq!(number("-5").type_name(), "Int64");
        assert_eq!(number("-9223372036854775809").type_name(), "Float64");
        assert_eq!(number("5.5").type_name(), "Float64");
        assert_eq!(Literal::Array(Default::default()).type_name(), "Array");
        assert_eq!(Literal::Null.type_name(), "Null");
        assert_eq!(Literal::Bool(true).type_name(), "Bool");
    }

    #[test]
    fn keywords_and_odd_names_are_quoted() {
        let name = |db: Option<&str>, t: &str| TableName {
            database: db.map(str::to_string),
            table: t.to_string(),
        };
        assert_eq!(name(None, "events").to_string(), "events");
        assert_eq!(name(Some("db"), "select").to_string(), "db.`select`");
        assert_eq!(name(None, "a-b").to_string(), "`a-b`");
        assert_eq!(name(None, "a`b").to_string(), "`a``b`");
    }

    #[test]
    fn strings_escape_quotes_and_backslashes() {
        let s = Literal::String("it's a \\ test".into());
        assert_eq!(s.to_string(), "'it\\'s a \\\\ test'");
    }
}
