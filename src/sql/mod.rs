//! The SQL front end: split a script, parse each statement into icetrim's [`Statement`], and bind
//! `EXECUTE` arguments to typed options. No I/O.
//!
//! - [`split`]: a script into statements (quotes and comments respected).
//! - [`limits`]: `max_query_size` and `max_parser_depth`, checked before parsing.
//! - [`parser`] and [`ast`]: the statement grammar (`grammar/icetrim.md`), round-trip printable;
//!   `fast` reads the long flat statements in one pass over `lexer`'s tokens, without sqlparser's
//!   tree (`literal_parse`, `where_parse`; `sqlparser_glue` is what they share
//!   with the sqlparser path, `render` the text of an expression kept unparsed).
//! - [`select`]: a `SELECT` over `system.iceberg_*`, kept as text for the query engine.
//! - [`bind`]: procedure arguments → [`crate::plan::ProcedureCall`], with ClickHouse's messages.
//! - [`duration`] and [`timestamp`]: the argument value grammars.

pub mod access;
pub mod alter_refs;
pub mod ast;
pub mod bind;
mod bind_args;
pub mod bind_compact;
pub mod bind_snapshots;
pub mod duration;
pub(crate) mod fast;
pub(crate) mod lexer;
pub mod limits;
pub(crate) mod literal_parse;
pub mod maintain_ast;
pub mod parser;
pub(crate) mod render;
pub mod select;
pub mod split;
pub(crate) mod sqlparser_glue;
pub mod timestamp;
pub(crate) mod where_parse;

pub use crate::literal::LiteralList;
pub use ast::{
    AlterAction, AlterExecute, AlterTable, Arg, ArgValue, CreateTable, DescribeTarget, EngineArg,
    EngineName, Literal, OptimizeManifest, Statement, TableName,
};
pub use bind::{BindContext, bind, bind_noted};
pub use bind_compact::{parse_where, parse_where_with};
pub use duration::{format_duration_ms, parse_duration_ms};
pub use limits::{
    DEFAULT_MAX_PARSER_DEPTH, DEFAULT_MAX_QUERY_SIZE, MAX_PARSER_DEPTH_CEILING, ParseLimits,
};
pub use maintain_ast::{MaintainTarget, SystemMaintain};
pub use parser::{parse_statement, parse_statement_at, parse_statement_with};
pub use select::Select;
pub use split::split_statements;
pub use timestamp::{SessionTimeZone, parse_timestamp_ms};
