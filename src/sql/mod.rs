//! The SQL front end: split a script, parse each statement into icetrim's [`Statement`], and bind
//! `EXECUTE` arguments to typed options. No I/O.
//!
//! - [`split`]: a script into statements (quotes and comments respected).
//! - [`parser`] and [`ast`]: the statement grammar (`grammar/icetrim.md`), round-trip printable.
//! - [`select`]: the introspection `SELECT` over `system.iceberg_*`.
//! - [`bind`]: procedure arguments → [`crate::plan::ProcedureCall`], with ClickHouse's messages.
//! - [`duration`] and [`timestamp`]: the argument value grammars.

pub mod alter_refs;
pub mod ast;
pub mod bind;
pub mod bind_compact;
pub mod bind_snapshots;
pub mod duration;
pub mod parser;
pub mod select;
pub mod split;
pub mod timestamp;

pub use ast::{
    AlterAction, AlterExecute, AlterTable, Arg, ArgValue, CreateTable, EngineArg, EngineName,
    Literal, OptimizeManifest, Statement, TableName,
};
pub use bind::{BindContext, bind, bind_noted};
pub use bind_compact::parse_where;
pub use duration::{format_duration_ms, parse_duration_ms};
pub use parser::{parse_statement, parse_statement_at};
pub use select::{CompareOp, Comparison, OrderKey, Projection, Select, SystemTable};
pub use split::split_statements;
pub use timestamp::{SessionTimeZone, parse_timestamp_ms};
