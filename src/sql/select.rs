//! The introspection `SELECT`: a small form over `system.iceberg_history`, `system.iceberg_snapshots`
//! and `system.iceberg_refs`.
//!
//! Accepted: `SELECT * | col, ... FROM system.<table> [WHERE col op literal [AND ...]]
//! [ORDER BY col [ASC|DESC], ...] [LIMIT n]` with `op` one of `=`, `!=`, `<>`, `<`, `<=`, `>`, `>=`.
//! sqlparser parses the text; [`Select::from_query`] converts its tree and refuses anything else with
//! `NOT_IMPLEMENTED`. To be sure no clause was silently dropped, the converted form is printed,
//! parsed again by sqlparser and compared with the original tree.

use std::fmt;

use sqlparser::ast::{
    BinaryOperator, Expr, GroupByExpr, Ident, LimitClause, ObjectNamePart, OrderByKind,
    OrderBySort, Query, SelectItem, SetExpr, TableFactor, Value,
};

use super::ast::{Literal, write_format, write_ident};
use super::parser::literal_of;
use crate::error::{Error, Result};

/// The system tables the introspection `SELECT` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SystemTable {
    IcebergHistory,
    IcebergSnapshots,
    IcebergRefs,
}

impl SystemTable {
    /// The table's name inside the `system` database.
    pub fn as_str(self) -> &'static str {
        match self {
            SystemTable::IcebergHistory => "iceberg_history",
            SystemTable::IcebergSnapshots => "iceberg_snapshots",
            SystemTable::IcebergRefs => "iceberg_refs",
        }
    }

    pub(crate) fn from_name(name: &str) -> Option<SystemTable> {
        match name {
            "iceberg_history" => Some(SystemTable::IcebergHistory),
            "iceberg_snapshots" => Some(SystemTable::IcebergSnapshots),
            "iceberg_refs" => Some(SystemTable::IcebergRefs),
            _ => None,
        }
    }
}

/// `*` or a list of column names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Projection {
    All,
    Columns(Vec<String>),
}

/// A comparison operator of the `WHERE` clause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompareOp {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
}

impl CompareOp {
    /// The operator as printed (`!=` for both `!=` and `<>`).
    pub fn as_str(self) -> &'static str {
        match self {
            CompareOp::Eq => "=",
            CompareOp::NotEq => "!=",
            CompareOp::Lt => "<",
            CompareOp::LtEq => "<=",
            CompareOp::Gt => ">",
            CompareOp::GtEq => ">=",
        }
    }
}

/// `column op literal`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comparison {
    pub column: String,
    pub op: CompareOp,
    pub value: Literal,
}

/// `column [ASC|DESC]`; `ascending` is `None` when no direction was written (ascending).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderKey {
    pub column: String,
    pub ascending: Option<bool>,
}

/// The introspection query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Select {
    pub projection: Projection,
    pub table: SystemTable,
    /// Comparisons joined by `AND`; empty when there is no `WHERE`.
    pub filter: Vec<Comparison>,
    pub order_by: Vec<OrderKey>,
    pub limit: Option<u64>,
    pub format: Option<String>,
}

pub(crate) fn unsupported(what: impl fmt::Display) -> Error {
    Error::not_implemented(format!(
        "{what} is not supported by icetrim: SELECT reads system.iceberg_history, \
         system.iceberg_snapshots or system.iceberg_refs with column names or *, WHERE col op literal \
         [AND ...], ORDER BY col [ASC|DESC], LIMIT n"
    ))
}

impl Select {
    /// Converts sqlparser's query into the small form, refusing anything outside it.
    pub fn from_query(query: &Query, format: Option<String>) -> Result<Select> {
        let SetExpr::Select(select) = query.body.as_ref() else {
            return Err(unsupported("This SELECT form"));
        };
        let projection = convert_projection(&select.projection)?;
        let table = convert_from(select)?;
        let filter = match &select.selection {
            Some(expr) => convert_filter(expr)?,
            None => Vec::new(),
        };
        let order_by = match &query.order_by {
            Some(order_by) => convert_order_by(&order_by.kind)?,
            None => Vec::new(),
        };
        let limit = convert_limit(query.limit_clause.as_ref())?;
        if let GroupByExpr::Expressions(exprs, _) = &select.group_by {
            if !exprs.is_empty() {
                return Err(unsupported("GROUP BY"));
            }
        } else {
            return Err(unsupported("GROUP BY ALL"));
        }
        let converted = Select {
            projection,
            table,
            filter,
            order_by,
            limit,
            format,
        };
        converted.ensure_nothing_dropped(query)?;
        Ok(converted)
    }

    /// Prints the converted form, parses it again and demands the same sqlparser tree: a clause the
    /// conversion does not model (DISTINCT, HAVING, SETTINGS, ...) makes the trees differ.
    fn ensure_nothing_dropped(&self, original: &Query) -> Result<()> {
        let text = Select {
            format: None,
            ..self.clone()
        }
        .to_string();
        let dialect = sqlparser::dialect::ClickHouseDialect {};
        let reparsed = sqlparser::parser::Parser::parse_sql(&dialect, &text)
            .map_err(|e| Error::logical(format!("reparsing '{text}': {e}")))?;
        let mut original = original.clone();
        forget_quoting(&mut original);
        match reparsed.as_slice() {
            [sqlparser::ast::Statement::Query(query)] => {
                let mut query = query.clone();
                forget_quoting(&mut query);
                if *query == original {
                    return Ok(());
                }
                Err(unsupported("This SELECT form"))
            }
            _ => Err(unsupported("This SELECT form")),
        }
    }
}

/// Clears the quote style of the identifiers the small form models (columns, the table name), so
/// that `"a"`, `` `a` `` and `a` compare equal.
fn forget_quoting(query: &mut Query) {
    fn unquote(ident: &mut Ident) {
        ident.quote_style = None;
    }
    fn walk_filter(expr: &mut Expr) {
        match expr {
            Expr::Identifier(ident) => unquote(ident),
            Expr::BinaryOp { left, right, .. } => {
                walk_filter(left);
                walk_filter(right);
            }
            _ => {}
        }
    }
    if let SetExpr::Select(select) = query.body.as_mut() {
        for item in &mut select.projection {
            if let SelectItem::UnnamedExpr(Expr::Identifier(ident)) = item {
                unquote(ident);
            }
        }
        if let Some(expr) = &mut select.selection {
            walk_filter(expr);
        }
        for from in &mut select.from {
            if let TableFactor::Table { name, .. } = &mut from.relation {
                for part in &mut name.0 {
                    if let ObjectNamePart::Identifier(ident) = part {
                        unquote(ident);
                    }
                }
            }
        }
    }
    if let Some(order_by) = &mut query.order_by {
        if let OrderByKind::Expressions(exprs) = &mut order_by.kind {
            for order in exprs {
                if let Expr::Identifier(ident) = &mut order.expr {
                    unquote(ident);
                }
            }
        }
    }
}

fn convert_projection(items: &[SelectItem]) -> Result<Projection> {
    if let [SelectItem::Wildcard(_)] = items {
        return Ok(Projection::All);
    }
    let columns = items
        .iter()
        .map(|item| match item {
            SelectItem::UnnamedExpr(Expr::Identifier(ident)) => Ok(ident.value.clone()),
            other => Err(unsupported(format!("Projection '{other}'"))),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Projection::Columns(columns))
}

fn convert_from(select: &sqlparser::ast::Select) -> Result<SystemTable> {
    let [from] = select.from.as_slice() else {
        return Err(unsupported("A FROM clause other than one system table"));
    };
    if !from.joins.is_empty() {
        return Err(unsupported("JOIN"));
    }
    let TableFactor::Table {
        name, args: None, ..
    } = &from.relation
    else {
        return Err(unsupported(format!("FROM {}", from.relation)));
    };
    let parts: Vec<&str> = name
        .0
        .iter()
        .filter_map(|part| match part {
            ObjectNamePart::Identifier(ident) => Some(ident.value.as_str()),
            _ => None,
        })
        .collect();
    match parts.as_slice() {
        ["system", table] if parts.len() == name.0.len() => SystemTable::from_name(table)
            .ok_or_else(|| unsupported(format!("Reading system.{table}"))),
        _ => Err(unsupported(format!("Reading {name}"))),
    }
}

fn convert_filter(expr: &Expr) -> Result<Vec<Comparison>> {
    match expr {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            let mut comparisons = convert_filter(left)?;
            comparisons.extend(convert_filter(right)?);
            Ok(comparisons)
        }
        Expr::BinaryOp { left, op, right } => {
            let op = compare_op(op).ok_or_else(|| unsupported(format!("Operator {op}")))?;
            let Expr::Identifier(column) = left.as_ref() else {
                return Err(unsupported(format!("Condition '{expr}'")));
            };
            let value = literal_of(right)
                .ok_or_else(|| unsupported(format!("Condition '{expr}' (not a literal)")))?;
            Ok(vec![Comparison {
                column: column.value.clone(),
                op,
                value,
            }])
        }
        other => Err(unsupported(format!("Condition '{other}'"))),
    }
}

fn compare_op(op: &BinaryOperator) -> Option<CompareOp> {
    Some(match op {
        BinaryOperator::Eq => CompareOp::Eq,
        BinaryOperator::NotEq => CompareOp::NotEq,
        BinaryOperator::Lt => CompareOp::Lt,
        BinaryOperator::LtEq => CompareOp::LtEq,
        BinaryOperator::Gt => CompareOp::Gt,
        BinaryOperator::GtEq => CompareOp::GtEq,
        _ => return None,
    })
}

fn convert_order_by(kind: &OrderByKind) -> Result<Vec<OrderKey>> {
    let OrderByKind::Expressions(exprs) = kind else {
        return Err(unsupported("ORDER BY ALL"));
    };
    exprs
        .iter()
        .map(|order| {
            let ascending = match &order.options.sort {
                None => None,
                Some(OrderBySort::Asc) => Some(true),
                Some(OrderBySort::Desc) => Some(false),
                Some(OrderBySort::Using(_)) => {
                    return Err(unsupported(format!("ORDER BY {order}")));
                }
            };
            match (&order.expr, order.options.nulls_first) {
                (Expr::Identifier(column), None) => Ok(OrderKey {
                    column: column.value.clone(),
                    ascending,
                }),
                _ => Err(unsupported(format!("ORDER BY {order}"))),
            }
        })
        .collect()
}

fn convert_limit(limit: Option<&LimitClause>) -> Result<Option<u64>> {
    match limit {
        None => Ok(None),
        Some(LimitClause::LimitOffset {
            limit: Some(Expr::Value(value)),
            offset: None,
            limit_by,
        }) if limit_by.is_empty() => match &value.value {
            Value::Number(text, _) => text
                .parse::<u64>()
                .map(Some)
                .map_err(|_| unsupported(format!("LIMIT {text}"))),
            other => Err(unsupported(format!("LIMIT {other}"))),
        },
        Some(other) => Err(unsupported(format!("'{}'", other.to_string().trim()))),
    }
}

impl fmt::Display for Select {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SELECT ")?;
        match &self.projection {
            Projection::All => f.write_str("*")?,
            Projection::Columns(columns) => write_idents(f, columns)?,
        }
        write!(f, " FROM system.{}", self.table.as_str())?;
        for (i, comparison) in self.filter.iter().enumerate() {
            f.write_str(if i == 0 { " WHERE " } else { " AND " })?;
            write_ident(f, &comparison.column)?;
            write!(f, " {} {}", comparison.op.as_str(), comparison.value)?;
        }
        for (i, key) in self.order_by.iter().enumerate() {
            f.write_str(if i == 0 { " ORDER BY " } else { ", " })?;
            write_ident(f, &key.column)?;
            match key.ascending {
                Some(true) => f.write_str(" ASC")?,
                Some(false) => f.write_str(" DESC")?,
                None => {}
            }
        }
        if let Some(limit) = self.limit {
            write!(f, " LIMIT {limit}")?;
        }
        write_format(f, &self.format)
    }
}

fn write_idents(f: &mut fmt::Formatter<'_>, names: &[String]) -> fmt::Result {
    for (i, name) in names.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write_ident(f, name)?;
    }
    Ok(())
}
