//! The introspection `SELECT`'s evaluator: projection, `WHERE`, `ORDER BY` and `LIMIT` over rows
//! that [`super::introspect`] produced.
//!
//! Rules (ClickHouse's where they matter here):
//! - `WHERE` is an AND of `column op literal`. A number literal against a numeric column compares
//!   numerically (exactly for integers, as `f64` otherwise); a string literal against a string column
//!   compares byte-wise; a string literal against a numeric column is read as a number first, a
//!   number literal against a string column is an error (ClickHouse has no common type for them).
//!   `NULL` on either side makes the comparison false, as in SQL.
//! - `ORDER BY` keys compare the same way; `NULL`s sort last in both directions (ClickHouse's
//!   default); the sort is stable.
//! - A column that does not exist is `UNKNOWN_IDENTIFIER` with ClickHouse's wording, checked before
//!   any row is looked at.

use std::cmp::Ordering;

use crate::error::{Error, ErrorKind, Result};
use crate::format::{Column, Value};
use crate::sql::{CompareOp, Literal, Projection, Select};

/// Applies `select`'s filter, order, limit and projection to `rows` of `columns`.
pub fn evaluate(
    select: &Select,
    columns: Vec<Column>,
    rows: Vec<Vec<Value>>,
) -> Result<(Vec<Column>, Vec<Vec<Value>>)> {
    // The statement as the error prints it (built only for an error: it can be long).
    let scope = || {
        Select {
            format: None,
            ..select.clone()
        }
        .to_string()
    };
    let index_of = |name: &str, what: &str| {
        columns.iter().position(|c| c.name == name).ok_or_else(|| {
            Error::new(
                ErrorKind::UnknownIdentifier,
                format!("Unknown {what} identifier `{name}`. In scope {}", scope()),
            )
        })
    };
    let projection: Vec<usize> = match &select.projection {
        Projection::All => (0..columns.len()).collect(),
        Projection::Columns(names) => names
            .iter()
            .map(|n| index_of(n, "expression"))
            .collect::<Result<_>>()?,
    };
    let filter: Vec<(usize, CompareOp, &Literal)> = select
        .filter
        .iter()
        .map(|c| {
            Ok((
                index_of(&c.column, "expression or function")?,
                c.op,
                &c.value,
            ))
        })
        .collect::<Result<_>>()?;
    let order: Vec<(usize, bool)> = select
        .order_by
        .iter()
        .map(|k| {
            Ok((
                index_of(&k.column, "expression")?,
                k.ascending != Some(false),
            ))
        })
        .collect::<Result<_>>()?;

    let mut kept = Vec::new();
    for row in rows {
        if matches_all(&row, &columns, &filter)? {
            kept.push(row);
        }
    }
    kept.sort_by(|a, b| compare_rows(a, b, &order));
    if let Some(limit) = select.limit {
        kept.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    }
    let out_columns = projection.iter().map(|&i| columns[i].clone()).collect();
    let out_rows = kept
        .into_iter()
        .map(|row| {
            projection
                .iter()
                .map(|&i| row.get(i).cloned().unwrap_or(Value::Null))
                .collect()
        })
        .collect();
    Ok((out_columns, out_rows))
}

fn matches_all(
    row: &[Value],
    columns: &[Column],
    filter: &[(usize, CompareOp, &Literal)],
) -> Result<bool> {
    for &(index, op, literal) in filter {
        let value = row.get(index).unwrap_or(&Value::Null);
        let Some(ordering) = compare_with_literal(value, literal, &columns[index])? else {
            return Ok(false);
        };
        let holds = match op {
            CompareOp::Eq => ordering == Ordering::Equal,
            CompareOp::NotEq => ordering != Ordering::Equal,
            CompareOp::Lt => ordering == Ordering::Less,
            CompareOp::LtEq => ordering != Ordering::Greater,
            CompareOp::Gt => ordering == Ordering::Greater,
            CompareOp::GtEq => ordering != Ordering::Less,
        };
        if !holds {
            return Ok(false);
        }
    }
    Ok(true)
}

/// A number on the comparison's scale: exact when it is an integer.
#[derive(Debug, Clone, Copy)]
enum Number {
    Int(i128),
    Float(f64),
}

impl Number {
    fn of_value(value: &Value) -> Option<Number> {
        match value {
            Value::Int(v) => Some(Number::Int(i128::from(*v))),
            Value::UInt(v) => Some(Number::Int(i128::from(*v))),
            Value::Bool(b) => Some(Number::Int(i128::from(*b))),
            Value::Float(v) => Some(Number::Float(*v)),
            Value::Null | Value::Str(_) => None,
        }
    }

    fn of_text(text: &str) -> Option<Number> {
        let number = Literal::Number(text.trim().to_string());
        if let Some(v) = number.as_integer() {
            return Some(Number::Int(v));
        }
        text.trim().parse::<f64>().ok().map(Number::Float)
    }

    fn as_f64(self) -> f64 {
        match self {
            Number::Int(v) => v as f64,
            Number::Float(v) => v,
        }
    }

    fn compare(self, other: Number) -> Option<Ordering> {
        match (self, other) {
            (Number::Int(a), Number::Int(b)) => Some(a.cmp(&b)),
            (a, b) => a.as_f64().partial_cmp(&b.as_f64()),
        }
    }
}

/// `value` compared with `literal`; `None` when SQL says the comparison is not true (NULLs, NaN).
fn compare_with_literal(
    value: &Value,
    literal: &Literal,
    column: &Column,
) -> Result<Option<Ordering>> {
    let mismatch = || {
        Error::bad_arguments(format!(
            "Cannot compare column `{}` of type {} with {literal}",
            column.name, column.type_name
        ))
    };
    match (value, literal) {
        (Value::Null, _) | (_, Literal::Null) => Ok(None),
        (Value::Str(s), Literal::String(l)) => Ok(Some(s.as_str().cmp(l.as_str()))),
        (Value::Str(_), _) => Err(mismatch()),
        (value, literal) => {
            let left = Number::of_value(value).ok_or_else(mismatch)?;
            let right = match literal {
                Literal::Number(text) => Number::of_text(text),
                Literal::Bool(b) => Some(Number::Int(i128::from(*b))),
                Literal::String(text) => Some(Number::of_text(text).ok_or_else(|| {
                    Error::bad_arguments(format!(
                        "Cannot parse string '{text}' as {} for column `{}`",
                        column.type_name, column.name
                    ))
                })?),
                _ => None,
            }
            .ok_or_else(mismatch)?;
            Ok(left.compare(right))
        }
    }
}

fn compare_rows(a: &[Value], b: &[Value], order: &[(usize, bool)]) -> Ordering {
    for &(index, ascending) in order {
        let left = a.get(index).unwrap_or(&Value::Null);
        let right = b.get(index).unwrap_or(&Value::Null);
        let ordering = match (left, right) {
            (Value::Null, Value::Null) => Ordering::Equal,
            (Value::Null, _) => return Ordering::Greater,
            (_, Value::Null) => return Ordering::Less,
            _ => {
                let ordering = compare_values(left, right);
                if ascending {
                    ordering
                } else {
                    ordering.reverse()
                }
            }
        };
        if ordering != Ordering::Equal {
            return ordering;
        }
    }
    Ordering::Equal
}

/// Two non-null cells of one column: numbers numerically, text byte-wise.
fn compare_values(a: &Value, b: &Value) -> Ordering {
    match (Number::of_value(a), Number::of_value(b)) {
        (Some(x), Some(y)) => x.compare(y).unwrap_or(Ordering::Equal),
        _ => a.plain().cmp(&b.plain()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::{Comparison, OrderKey, SystemTable};

    fn columns() -> Vec<Column> {
        vec![
            Column::new("snapshot_id", "Int64"),
            Column::new("parent_id", "Nullable(Int64)"),
            Column::new("made_current_at", "DateTime64(3)"),
            Column::new("is_current_ancestor", "Bool"),
        ]
    }

    fn rows() -> Vec<Vec<Value>> {
        vec![
            vec![
                Value::Int(9_007_199_254_740_993),
                Value::Null,
                "2024-01-01 00:00:00.000".into(),
                Value::Bool(false),
            ],
            vec![
                Value::Int(2),
                Value::Int(9_007_199_254_740_993),
                "2024-02-01 00:00:00.000".into(),
                Value::Bool(true),
            ],
            vec![
                Value::Int(10),
                Value::Int(2),
                "2024-03-01 00:00:00.000".into(),
                Value::Bool(true),
            ],
        ]
    }

    fn select() -> Select {
        Select {
            projection: Projection::All,
            table: SystemTable::IcebergHistory,
            filter: vec![],
            order_by: vec![],
            limit: None,
            format: None,
        }
    }

    fn cmp(column: &str, op: CompareOp, value: Literal) -> Comparison {
        Comparison {
            column: column.into(),
            op,
            value,
        }
    }

    fn ids(rows: &[Vec<Value>]) -> Vec<Value> {
        rows.iter().map(|r| r[0].clone()).collect()
    }

    #[test]
    fn no_clauses_returns_everything_in_order() {
        let (c, r) = evaluate(&select(), columns(), rows()).unwrap();
        assert_eq!(c, columns());
        assert_eq!(r, rows());
    }

    #[test]
    fn integers_compare_exactly_and_null_never_matches() {
        let s = Select {
            filter: vec![cmp(
                "parent_id",
                CompareOp::Eq,
                Literal::Number("9007199254740993".into()),
            )],
            ..select()
        };
        let (_, r) = evaluate(&s, columns(), rows()).unwrap();
        assert_eq!(ids(&r), vec![Value::Int(2)]);
        let s = Select {
            filter: vec![cmp(
                "parent_id",
                CompareOp::NotEq,
                Literal::Number("2".into()),
            )],
            ..select()
        };
        let (_, r) = evaluate(&s, columns(), rows()).unwrap();
        assert_eq!(ids(&r), vec![Value::Int(2)], "the NULL parent is not != 2");
    }

    #[test]
    fn numbers_compare_numerically_strings_as_strings() {
        let s = Select {
            filter: vec![
                cmp("snapshot_id", CompareOp::Gt, Literal::Number("1.5".into())),
                cmp("snapshot_id", CompareOp::Lt, Literal::String("100".into())),
                cmp(
                    "made_current_at",
                    CompareOp::GtEq,
                    Literal::String("2024-02".into()),
                ),
            ],
            ..select()
        };
        let (_, r) = evaluate(&s, columns(), rows()).unwrap();
        assert_eq!(ids(&r), vec![Value::Int(2), Value::Int(10)]);
    }

    #[test]
    fn bools_compare_with_numbers_and_bools() {
        for literal in [Literal::Bool(true), Literal::Number("1".into())] {
            let s = Select {
                filter: vec![cmp("is_current_ancestor", CompareOp::Eq, literal)],
                ..select()
            };
            let (_, r) = evaluate(&s, columns(), rows()).unwrap();
            assert_eq!(r.len(), 2);
        }
    }

    #[test]
    fn type_mismatches_are_errors() {
        let s = Select {
            filter: vec![cmp(
                "made_current_at",
                CompareOp::Eq,
                Literal::Number("1".into()),
            )],
            ..select()
        };
        let e = evaluate(&s, columns(), rows()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BadArguments);
        let s = Select {
            filter: vec![cmp(
                "snapshot_id",
                CompareOp::Eq,
                Literal::String("x".into()),
            )],
            ..select()
        };
        let e = evaluate(&s, columns(), rows()).unwrap_err();
        assert!(e.message().contains("Cannot parse string 'x'"), "{e}");
    }

    #[test]
    fn order_by_desc_nulls_last_then_limit_and_project() {
        let s = Select {
            projection: Projection::Columns(vec!["parent_id".into(), "snapshot_id".into()]),
            order_by: vec![OrderKey {
                column: "parent_id".into(),
                ascending: Some(false),
            }],
            limit: Some(2),
            ..select()
        };
        let (c, r) = evaluate(&s, columns(), rows()).unwrap();
        assert_eq!(c[0].name, "parent_id");
        assert_eq!(
            r,
            vec![
                vec![Value::Int(9_007_199_254_740_993), Value::Int(2)],
                vec![Value::Int(2), Value::Int(10)],
            ]
        );
        let s = Select {
            order_by: vec![OrderKey {
                column: "parent_id".into(),
                ascending: None,
            }],
            ..select()
        };
        let (_, r) = evaluate(&s, columns(), rows()).unwrap();
        assert_eq!(r[2][1], Value::Null, "NULLs sort last ascending too");
    }

    #[test]
    fn order_by_text_and_ties_are_stable() {
        let s = Select {
            order_by: vec![
                OrderKey {
                    column: "is_current_ancestor".into(),
                    ascending: Some(false),
                },
                OrderKey {
                    column: "made_current_at".into(),
                    ascending: Some(false),
                },
            ],
            ..select()
        };
        let (_, r) = evaluate(&s, columns(), rows()).unwrap();
        assert_eq!(
            ids(&r),
            vec![
                Value::Int(10),
                Value::Int(2),
                Value::Int(9_007_199_254_740_993)
            ]
        );
    }

    #[test]
    fn unknown_columns_name_the_scope() {
        let s = Select {
            projection: Projection::Columns(vec!["nope".into()]),
            ..select()
        };
        let e = evaluate(&s, columns(), vec![]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::UnknownIdentifier);
        assert_eq!(e.code(), 47);
        assert_eq!(
            e.message(),
            "Unknown expression identifier `nope`. In scope SELECT nope FROM system.iceberg_history"
        );
        let s = Select {
            filter: vec![cmp("nope", CompareOp::Eq, Literal::Number("1".into()))],
            ..select()
        };
        let e = evaluate(&s, columns(), vec![]).unwrap_err();
        assert!(
            e.message()
                .starts_with("Unknown expression or function identifier `nope`")
        );
    }
}
