//! `SELECT` over the metadata tables, on Apache DataFusion, the ClickHouse way: the context a
//! session queries through (ClickHouse dialect, case-sensitive identifiers, the session time
//! zone, a memory pool bounded by `max_memory_usage`), running one query, and turning its Arrow
//! result into ClickHouse-named columns and [`Value`] rows.
//!
//! Only the `system` schema is registered (by the engine), so a SELECT over Iceberg data finds no
//! table. DDL, DML and other statements are refused by DataFusion's SQL options.

mod values;

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, TimeUnit};
use datafusion::common::config::Dialect;
use datafusion::error::DataFusionError;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::prelude::{SQLOptions, SessionConfig, SessionContext};

use crate::error::{Error, ErrorKind, Result};
use crate::format::{Column, Value};
use crate::time_zone::SessionTimeZone;

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
    let mut runtime = RuntimeEnvBuilder::new();
    if options.max_memory_usage > 0 {
        let limit = usize::try_from(options.max_memory_usage).unwrap_or(usize::MAX);
        runtime = runtime.with_memory_limit(limit, 1.0);
    }
    let runtime = runtime
        .build_arc()
        .unwrap_or_else(|_| Arc::new(Default::default()));
    SessionContext::new_with_config_rt(config, runtime)
}

/// Runs one query (text without `FORMAT`) and returns its columns and rows.
pub async fn select(
    ctx: &SessionContext,
    sql: &str,
    options: &QueryOptions,
) -> Result<(Vec<Column>, Vec<Vec<Value>>)> {
    let frame = ctx
        .sql_with_options(sql, only_queries())
        .await
        .map_err(to_error)?;
    let fields: Vec<Field> = frame
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    let batches = frame.collect().await.map_err(to_error)?;
    let columns = fields
        .iter()
        .map(|f| Column::new(f.name().clone(), clickhouse_type(f)))
        .collect();
    let rows = values::rows(&batches, &options.time_zone)?;
    Ok((columns, rows))
}

/// `DESCRIBE (query)`: the query's result columns in ClickHouse's seven `DESCRIBE` columns.
pub async fn describe_select(
    ctx: &SessionContext,
    sql: &str,
) -> Result<(Vec<Column>, Vec<Vec<Value>>)> {
    let frame = ctx
        .sql_with_options(sql, only_queries())
        .await
        .map_err(to_error)?;
    let columns = [
        "name",
        "type",
        "default_type",
        "default_expression",
        "comment",
        "codec_expression",
        "ttl_expression",
    ]
    .into_iter()
    .map(|n| Column::new(n, "String"))
    .collect();
    let rows = frame
        .schema()
        .fields()
        .iter()
        .map(|f| {
            let mut row = vec![Value::Str(f.name().clone()), Value::Str(clickhouse_type(f))];
            row.extend(std::iter::repeat_n(Value::Str(String::new()), 5));
            row
        })
        .collect();
    Ok((columns, rows))
}

/// `EXPLAIN query`: DataFusion's logical and physical plans, one line a row in the column
/// `explain`.
pub async fn explain_select(
    ctx: &SessionContext,
    sql: &str,
) -> Result<(Vec<Column>, Vec<Vec<Value>>)> {
    let frame = ctx
        .sql_with_options(sql, only_queries())
        .await
        .map_err(to_error)?;
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

/// The ClickHouse type name of an Arrow field.
pub fn clickhouse_type(field: &Field) -> String {
    let inner = type_name(field.data_type());
    let wraps = !matches!(
        field.data_type(),
        DataType::Map(..) | DataType::List(_) | DataType::LargeList(_) | DataType::Struct(_)
    );
    if field.is_nullable() && wraps {
        format!("Nullable({inner})")
    } else {
        inner
    }
}

fn type_name(data_type: &DataType) -> String {
    match data_type {
        DataType::Boolean => "Bool".into(),
        DataType::Int8 => "Int8".into(),
        DataType::Int16 => "Int16".into(),
        DataType::Int32 => "Int32".into(),
        DataType::Int64 => "Int64".into(),
        DataType::UInt8 => "UInt8".into(),
        DataType::UInt16 => "UInt16".into(),
        DataType::UInt32 => "UInt32".into(),
        DataType::UInt64 => "UInt64".into(),
        DataType::Float32 => "Float32".into(),
        DataType::Float64 => "Float64".into(),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "String".into(),
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => "String".into(),
        DataType::Timestamp(TimeUnit::Second, _) => "DateTime".into(),
        DataType::Timestamp(TimeUnit::Millisecond, _) => "DateTime64(3)".into(),
        DataType::Timestamp(TimeUnit::Microsecond, _) => "DateTime64(6)".into(),
        DataType::Timestamp(TimeUnit::Nanosecond, _) => "DateTime64(9)".into(),
        DataType::Date32 | DataType::Date64 => "Date".into(),
        DataType::Map(entries, _) => match entries.data_type() {
            DataType::Struct(kv) if kv.len() == 2 => format!(
                "Map({}, {})",
                type_name(kv[0].data_type()),
                clickhouse_type(&kv[1])
            ),
            other => type_name(other),
        },
        DataType::List(item) | DataType::LargeList(item) => {
            format!("Array({})", clickhouse_type(item))
        }
        DataType::Struct(fields) => {
            let parts: Vec<String> = fields
                .iter()
                .map(|f| format!("{} {}", f.name(), clickhouse_type(f)))
                .collect();
            format!("Tuple({})", parts.join(", "))
        }
        DataType::Null => "Nullable(Nothing)".into(),
        other => other.to_string(),
    }
}

/// A DataFusion error as icetrim's: an icetrim error carried through DataFusion comes back
/// unchanged; the rest keep DataFusion's message under the nearest ClickHouse kind.
pub(crate) fn to_error(error: DataFusionError) -> Error {
    match error {
        DataFusionError::External(inner) => match inner.downcast::<Error>() {
            Ok(own) => *own,
            Err(other) => Error::new(ErrorKind::LogicalError, other.to_string()),
        },
        DataFusionError::Context(_, inner) => to_error(*inner),
        DataFusionError::SQL(e, _) => Error::new(ErrorKind::SyntaxError, e.to_string()),
        DataFusionError::ResourcesExhausted(message) => Error::new(
            ErrorKind::MemoryLimitExceeded,
            format!("Memory limit (max_memory_usage) exceeded: {message}"),
        ),
        DataFusionError::SchemaError(e, _) => {
            Error::new(ErrorKind::UnknownIdentifier, e.to_string())
        }
        DataFusionError::Plan(message)
            if message.contains("table") && message.contains("not found") =>
        {
            Error::new(ErrorKind::UnknownTable, message)
        }
        DataFusionError::NotImplemented(message) => Error::not_implemented(message),
        other => Error::new(ErrorKind::BadArguments, other.to_string()),
    }
}
