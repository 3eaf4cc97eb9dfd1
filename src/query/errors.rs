//! DataFusion's errors as icetrim's, under the ClickHouse kinds and wording ClickHouse uses for the
//! same mistake: an unknown column is `UNKNOWN_IDENTIFIER`, an unknown table `UNKNOWN_TABLE`
//! (`Table system.x does not exist`), an unknown function `UNKNOWN_FUNCTION`, text that does not
//! parse `SYNTAX_ERROR`, too deep a nesting `TOO_DEEP_RECURSION`, an exhausted memory pool
//! `MEMORY_LIMIT_EXCEEDED`. An icetrim error carried through DataFusion comes back unchanged.

use datafusion::common::SchemaError;
use datafusion::error::DataFusionError;
use datafusion::sql::sqlparser::parser::ParserError;

use crate::error::{Error, ErrorKind};

/// A DataFusion error as icetrim's (see the module comment).
pub(crate) fn to_error(error: DataFusionError) -> Error {
    match error {
        DataFusionError::External(inner) => match inner.downcast::<Error>() {
            Ok(own) => *own,
            Err(other) => match other.downcast::<DataFusionError>() {
                Ok(df) => to_error(*df),
                Err(other) => Error::new(ErrorKind::LogicalError, other.to_string()),
            },
        },
        DataFusionError::Context(_, inner) | DataFusionError::Diagnostic(_, inner) => {
            to_error(*inner)
        }
        DataFusionError::Shared(shared) => match std::sync::Arc::try_unwrap(shared) {
            Ok(inner) => to_error(inner),
            Err(shared) => shared_error(&shared),
        },
        DataFusionError::Collection(mut errors) if !errors.is_empty() => to_error(errors.remove(0)),
        DataFusionError::ArrowError(arrow, _) => match *arrow {
            datafusion::arrow::error::ArrowError::ExternalError(inner) => {
                to_error(DataFusionError::External(inner))
            }
            other => Error::new(ErrorKind::BadArguments, other.to_string()),
        },
        DataFusionError::SQL(parser, _) => match *parser {
            ParserError::RecursionLimitExceeded => Error::new(
                ErrorKind::TooDeepRecursion,
                "Maximum parse depth exceeded: the query nests too deep",
            ),
            other => Error::new(ErrorKind::SyntaxError, syntax_message(&other)),
        },
        DataFusionError::ResourcesExhausted(message) => Error::new(
            ErrorKind::MemoryLimitExceeded,
            format!("Memory limit (for query) exceeded (max_memory_usage): {message}"),
        ),
        DataFusionError::SchemaError(schema, _) => schema_error(*schema),
        DataFusionError::Plan(message) => plan_error(message),
        DataFusionError::NotImplemented(message) => Error::not_implemented(message),
        other => Error::new(ErrorKind::BadArguments, other.to_string()),
    }
}

/// An error still shared with other readers (a plan that fans out hands each output partition
/// the same error): looked through by reference, so that icetrim's own error inside keeps its
/// code, as [`to_error`] keeps it for an owned one.
fn shared_error(error: &DataFusionError) -> Error {
    match error {
        DataFusionError::External(inner) => external_error(inner.as_ref()),
        DataFusionError::Context(_, inner) | DataFusionError::Diagnostic(_, inner) => {
            shared_error(inner)
        }
        DataFusionError::Shared(inner) => shared_error(inner),
        DataFusionError::Collection(errors) if !errors.is_empty() => shared_error(&errors[0]),
        DataFusionError::ArrowError(arrow, _) => match arrow.as_ref() {
            datafusion::arrow::error::ArrowError::ExternalError(inner) => {
                external_error(inner.as_ref())
            }
            other => Error::new(ErrorKind::BadArguments, other.to_string()),
        },
        DataFusionError::ResourcesExhausted(message) => {
            to_error(DataFusionError::ResourcesExhausted(message.clone()))
        }
        other => Error::new(ErrorKind::BadArguments, other.to_string()),
    }
}

fn external_error(inner: &(dyn std::error::Error + Send + Sync + 'static)) -> Error {
    if let Some(own) = inner.downcast_ref::<Error>() {
        return own.clone();
    }
    match inner.downcast_ref::<DataFusionError>() {
        Some(df) => shared_error(df),
        None => Error::new(ErrorKind::LogicalError, inner.to_string()),
    }
}

fn syntax_message(error: &ParserError) -> String {
    match error {
        ParserError::ParserError(m) | ParserError::TokenizerError(m) => {
            format!("Syntax error: {m}")
        }
        ParserError::RecursionLimitExceeded => "Syntax error: nesting too deep".to_string(),
    }
}

fn schema_error(error: SchemaError) -> Error {
    match &error {
        SchemaError::FieldNotFound { field, .. } => Error::new(
            ErrorKind::UnknownIdentifier,
            format!("Unknown expression identifier `{}`", field.name()),
        ),
        SchemaError::AmbiguousReference { field } => Error::new(
            ErrorKind::AmbiguousIdentifier,
            format!("Identifier `{}` is ambiguous", field.name()),
        ),
        _ => Error::new(ErrorKind::BadArguments, error.to_string()),
    }
}

fn plan_error(message: String) -> Error {
    if let Some(table) = quoted_between(&message, "table '", "' not found") {
        let table = table.strip_prefix("icetrim.").unwrap_or(table);
        return Error::new(
            ErrorKind::UnknownTable,
            format!("Table {table} does not exist"),
        );
    }
    if let Some(function) = quoted_between(&message, "Invalid function '", "'") {
        let hint = message
            .split_once("Did you mean '")
            .and_then(|(_, rest)| rest.split_once('\''))
            .map(|(name, _)| format!(". Maybe you meant: ['{name}']"))
            .unwrap_or_default();
        return Error::new(
            ErrorKind::UnknownFunction,
            format!("Function with name `{function}` does not exist{hint}"),
        );
    }
    Error::new(ErrorKind::BadArguments, message)
}

/// The text of `message` between `before` (at its start) and the next `after`.
fn quoted_between<'a>(message: &'a str, before: &str, after: &str) -> Option<&'a str> {
    let rest = message.strip_prefix(before)?;
    rest.split_once(after).map(|(inside, _)| inside)
}
