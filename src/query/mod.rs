//! `SELECT` over the metadata tables, on Apache DataFusion, the ClickHouse way: the context a
//! session queries through (ClickHouse dialect, case-sensitive identifiers, the session time
//! zone, ClickHouse's functions, a memory pool bounded by `max_memory_usage`), running one query,
//! and turning its Arrow result into ClickHouse-named columns and [`Value`] rows.
//!
//! A query is parsed here (on a thread with a large stack, nesting bounded as ClickHouse's
//! `max_parser_depth` bounds it), its result columns named as ClickHouse names them, its
//! ClickHouse-only functions rewritten into DataFusion's, then planned by DataFusion.
//! Only the `system` schema is registered (by the engine), so a SELECT over Iceberg data finds no
//! table. DDL, DML and other statements are refused.

mod errors;
mod functions;
mod names;
mod quantile;
mod rewrite;
#[cfg(test)]
mod tests;
mod types;
mod values;

use std::sync::Arc;

use datafusion::common::config::Dialect;
use datafusion::dataframe::DataFrame;
use datafusion::execution::disk_manager::{DiskManagerBuilder, DiskManagerMode};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::prelude::{SQLOptions, SessionConfig, SessionContext};
use datafusion::sql::parser::{DFParserBuilder, Statement as DfStatement};
use datafusion::sql::sqlparser::ast::Statement;
use datafusion::sql::sqlparser::dialect::ClickHouseDialect;

pub(crate) use errors::to_error;
pub use types::clickhouse_type;

use crate::error::{Error, ErrorKind, Result};
use crate::format::{Column, Value};
use crate::time_zone::SessionTimeZone;

/// The stack of the thread a query is parsed and rewritten on: room for [`rewrite::MAX_DEPTH`]
/// levels of the parser's and the syntax tree visitor's recursion.
const PARSE_STACK_BYTES: usize = 256 * 1024 * 1024;

/// How a session's queries run.
#[derive(Debug, Clone)]
pub struct QueryOptions {
    pub time_zone: SessionTimeZone,
    /// Bytes DataFusion's operators may hold (sorts, aggregates, joins); 0 = unbounded.
    pub max_memory_usage: u64,
}

/// A DataFusion context configured the ClickHouse way (see the module comment).
pub fn session_context(options: &QueryOptions) -> SessionContext {
    let mut config = SessionConfig::new()
        .with_information_schema(false)
        .with_default_catalog_and_schema("icetrim", "default");
    let sql = &mut config.options_mut().sql_parser;
    sql.dialect = Dialect::ClickHouse;
    sql.enable_ident_normalization = false;
    config.options_mut().execution.time_zone = Some("+00:00".to_string());
    // A query that outgrows the pool fails; it never spills to temporary files.
    let mut runtime = RuntimeEnvBuilder::new().with_disk_manager_builder(
        DiskManagerBuilder::default().with_mode(DiskManagerMode::Disabled),
    );
    if options.max_memory_usage > 0 {
        let limit = usize::try_from(options.max_memory_usage).unwrap_or(usize::MAX);
        runtime = runtime.with_memory_limit(limit, 1.0);
    }
    let runtime = runtime
        .build_arc()
        .unwrap_or_else(|_| Arc::new(Default::default()));
    let ctx = SessionContext::new_with_config_rt(config, runtime);
    for function in functions::all(options.time_zone) {
        ctx.register_udf(function);
    }
    ctx.register_udaf(quantile::udaf());
    ctx
}

/// A parsed query: the DataFusion form of its syntax tree and the ClickHouse names of its
/// result columns (`None` when a `*` makes them DataFusion's).
struct Prepared {
    statement: Statement,
    names: Option<Vec<String>>,
}

/// Parses `sql` with the ClickHouse dialect, names its columns and rewrites its ClickHouse
/// functions, on a thread whose stack holds the deepest nesting allowed.
fn prepare(sql: &str) -> Result<Prepared> {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("icetrim-parse".to_string())
            .stack_size(PARSE_STACK_BYTES)
            .spawn_scoped(scope, || prepare_here(sql))
            .map_err(|e| Error::logical(format!("starting the query parser thread: {e}")))?
            .join()
            .unwrap_or_else(|_| {
                Err(Error::logical(
                    "the query parser thread panicked".to_string(),
                ))
            })
    })
}

fn prepare_here(sql: &str) -> Result<Prepared> {
    let dialect = ClickHouseDialect {};
    let mut statements = DFParserBuilder::new(sql)
        .with_dialect(&dialect)
        .with_recursion_limit(rewrite::MAX_DEPTH)
        .build()
        .and_then(|mut parser| parser.parse_statements())
        .map_err(to_error)?;
    let statement = match (statements.pop_front(), statements.is_empty()) {
        (Some(DfStatement::Statement(statement)), true) => *statement,
        (None, _) => return Err(Error::new(ErrorKind::SyntaxError, "Empty query")),
        _ => {
            return Err(Error::new(
                ErrorKind::SyntaxError,
                "Syntax error: expected one SELECT query",
            ));
        }
    };
    let mut statement = statement;
    rewrite::balance_chains(&mut statement)?;
    rewrite::check_depth(&mut statement)?;
    let names = match &mut statement {
        Statement::Query(query) => {
            let names = names::projection_names(&query.body);
            let names = names.into_iter().collect::<Option<Vec<String>>>();
            if let Some(names) = &names {
                names::alias_projection(&mut query.body, names);
            }
            names
        }
        _ => None,
    };
    rewrite::rewrite(&mut statement)?;
    Ok(Prepared { statement, names })
}

/// `sql` planned in `ctx`, and the ClickHouse names of its result columns.
async fn plan(ctx: &SessionContext, sql: &str) -> Result<(DataFrame, Vec<String>)> {
    let Prepared { statement, names } = prepare(sql)?;
    let state = ctx.state();
    let plan = state
        .statement_to_plan(DfStatement::Statement(Box::new(statement)))
        .await
        .map_err(to_error)?;
    only_queries().verify_plan(&plan).map_err(to_error)?;
    let frame = DataFrame::new(state, plan);
    let fields = frame.schema().fields();
    let names = match names {
        Some(names) if names.len() == fields.len() => names,
        _ => fields.iter().map(|f| f.name().clone()).collect(),
    };
    Ok((frame, names))
}

/// Rows of a query's result, a record batch at a time, as the plan produces them.
pub type RowChunks = futures::stream::BoxStream<'static, Result<Vec<Vec<Value>>>>;

/// Runs one query (text without `FORMAT`): its columns, and its rows as a stream of chunks (one
/// a record batch), so that a large result is printed while it is read, never held whole.
pub async fn select_stream(
    ctx: &SessionContext,
    sql: &str,
    options: &QueryOptions,
) -> Result<(Vec<Column>, RowChunks)> {
    use futures::StreamExt;
    let (frame, names) = plan(ctx, sql).await?;
    let columns = frame
        .schema()
        .fields()
        .iter()
        .zip(names)
        .map(|(f, name)| Column::new(name, clickhouse_type(f)))
        .collect();
    let batches = frame.execute_stream().await.map_err(to_error)?;
    let zone = options.time_zone;
    let chunks = batches.map(move |batch| {
        let batch = batch.map_err(to_error)?;
        values::rows(std::slice::from_ref(&batch), &zone)
    });
    Ok((columns, chunks.boxed()))
}

/// Runs one query (text without `FORMAT`) and returns its columns and every row.
#[cfg(test)]
pub async fn select(
    ctx: &SessionContext,
    sql: &str,
    options: &QueryOptions,
) -> Result<(Vec<Column>, Vec<Vec<Value>>)> {
    use futures::TryStreamExt;
    let (columns, chunks) = select_stream(ctx, sql, options).await?;
    let chunks: Vec<Vec<Vec<Value>>> = chunks.try_collect().await?;
    Ok((columns, chunks.into_iter().flatten().collect()))
}

/// `DESCRIBE (query)`: the query's result columns in ClickHouse's seven `DESCRIBE` columns.
pub async fn describe_select(
    ctx: &SessionContext,
    sql: &str,
) -> Result<(Vec<Column>, Vec<Vec<Value>>)> {
    let (frame, names) = plan(ctx, sql).await?;
    let rows = frame
        .schema()
        .fields()
        .iter()
        .zip(names)
        .map(|(f, name)| crate::format::describe_row(&name, clickhouse_type(f)))
        .collect();
    Ok((crate::format::describe_columns(), rows))
}

/// `EXPLAIN query`: DataFusion's logical and physical plans, one line a row in the column
/// `explain`.
pub async fn explain_select(
    ctx: &SessionContext,
    sql: &str,
) -> Result<(Vec<Column>, Vec<Vec<Value>>)> {
    let (frame, _) = plan(ctx, sql).await?;
    let batches = frame
        .explain(false, false)
        .map_err(to_error)?
        .collect()
        .await
        .map_err(to_error)?;
    let mut rows = Vec::new();
    for row in values::rows(&batches, &SessionTimeZone::Named(chrono_tz::UTC))? {
        for cell in row {
            rows.extend(
                cell.plain()
                    .lines()
                    .map(|l| vec![Value::Str(l.to_string())]),
            );
        }
    }
    Ok((vec![Column::new("explain", "String")], rows))
}

/// Queries only: no DDL, DML or other statements.
fn only_queries() -> SQLOptions {
    SQLOptions::new()
        .with_allow_ddl(false)
        .with_allow_dml(false)
        .with_allow_statements(false)
}
