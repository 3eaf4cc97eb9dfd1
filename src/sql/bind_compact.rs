//! Binding `rewrite_data_files(...)` arguments (compaction) and parsing its `where` predicate.
//!
//! Parameters (Iceberg Java's `RewriteDataFiles` bin-pack options, snake case): `where` (String;
//! also the one positional argument), `target_file_size_bytes`, `min_file_size_bytes`,
//! `max_file_size_bytes`, `min_input_files`, `delete_file_threshold`,
//! `max_file_group_size_bytes`, `max_concurrent_file_group_rewrites` (UInt64), `rewrite_all` and
//! `dry_run` (`0/1`, `true/false`, `'true'/'false'`). The argument rules are those of
//! [`super::bind`].
//!
//! `where` accepts comparisons (`=`, `!=`, `<>`, `<`, `<=`, `>`, `>=`) between a column and a
//! literal (either side), `IN` / `NOT IN` lists, `IS [NOT] NULL`, `BETWEEN`, `AND`, `OR`, `NOT`
//! and parentheses. Anything else is `BAD_ARGUMENTS` naming the part refused.

use sqlparser::ast::{BinaryOperator, Expr, InTarget, UnaryOperator};
use sqlparser::dialect::ClickHouseDialect;
use sqlparser::parser::Parser;

use super::ast::{Arg, Literal};
use super::bind_args::collect;
use super::lexer::Lexer;
use super::limits::{ParseLimits, sqlparser_can_parse};
use super::parser::literal_of;
use crate::error::{Error, Result};
use crate::plan::procedures::REWRITE_DATA_FILES;
use crate::plan::{CmpOp, CompactOptions, Predicate};

/// The procedure's SQL name.
pub const REWRITE: &str = REWRITE_DATA_FILES.name;

/// Binds `rewrite_data_files(args)`; the `where` predicate is read under `limits`.
pub fn bind_rewrite(args: &[Arg], limits: &ParseLimits) -> Result<CompactOptions> {
    let values = collect(&REWRITE_DATA_FILES, args)?;
    let uint = |name: &str| -> Option<u64> {
        values
            .get(name)
            .and_then(|v| v.as_integer())
            .and_then(|v| u64::try_from(v).ok())
    };
    let flag = |name: &str| -> Result<bool> {
        let Some(value) = values.get(name) else {
            return Ok(false);
        };
        let flag = match value {
            Literal::Bool(b) => Some(*b),
            Literal::String(t) if t.eq_ignore_ascii_case("true") => Some(true),
            Literal::String(t) if t.eq_ignore_ascii_case("false") => Some(false),
            other => other.as_integer().map(|v| v != 0),
        };
        flag.ok_or_else(|| {
            Error::bad_arguments(format!(
                "{REWRITE} expects '{name}' to be a boolean or integer literal"
            ))
        })
    };
    let filter = match values.get("where") {
        Some(Literal::String(text)) => Some(parse_where_with(text, limits)?),
        _ => None,
    };
    let options = CompactOptions {
        target_file_size_bytes: uint("target_file_size_bytes"),
        min_file_size_bytes: uint("min_file_size_bytes"),
        max_file_size_bytes: uint("max_file_size_bytes"),
        min_input_files: uint("min_input_files"),
        delete_file_threshold: uint("delete_file_threshold"),
        rewrite_all: flag("rewrite_all")?,
        max_file_group_size_bytes: uint("max_file_group_size_bytes"),
        max_concurrent_file_group_rewrites: uint("max_concurrent_file_group_rewrites"),
        filter,
        dry_run: flag("dry_run")?,
    };
    options.validate()?;
    Ok(options)
}

/// Parses a `where` predicate (see the module comment) under ClickHouse's default limits.
pub fn parse_where(text: &str) -> Result<Predicate> {
    parse_where_with(text, &ParseLimits::default())
}

/// Parses a `where` predicate: its brackets and `NOT`s may nest `limits.max_parser_depth` deep
/// (else `TOO_DEEP_RECURSION`). Read in one pass when it is of the usual form
/// ([`super::where_parse`]); otherwise sqlparser reads it, unless it holds more operators than
/// sqlparser's recursive tree may take (then it is not supported).
pub fn parse_where_with(text: &str, limits: &ParseLimits) -> Result<Predicate> {
    limits.check_depth(Lexer::new(text).filter(|t| !t.is_trivia()))?;
    if let Some(predicate) = super::where_parse::parse(text, limits)? {
        return Ok(predicate);
    }
    let bad = |m: String| Error::bad_arguments(format!("{REWRITE} 'where': {m}"));
    if !sqlparser_can_parse(text) {
        return Err(bad(format!(
            "'{text}' is not supported (comparisons, IN, IS NULL, AND, OR, NOT of literals)"
        )));
    }
    let dialect = ClickHouseDialect {};
    let expr = Parser::new(&dialect)
        .try_with_sql(text)
        .and_then(|mut p| {
            let e = p.parse_expr()?;
            p.expect_token(&sqlparser::tokenizer::Token::EOF)?;
            Ok(e)
        })
        .map_err(|e| bad(format!("cannot parse '{text}': {e}")))?;
    predicate(&expr).map_err(bad)
}

fn column(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Identifier(id) => Some(id.value.clone()),
        Expr::CompoundIdentifier(parts) => Some(
            parts
                .iter()
                .map(|p| p.value.as_str())
                .collect::<Vec<_>>()
                .join("."),
        ),
        Expr::Nested(inner) => column(inner),
        _ => None,
    }
}

fn literal(expr: &Expr) -> Option<Literal> {
    match expr {
        Expr::Nested(inner) => literal(inner),
        other => literal_of(other),
    }
}

fn cmp_op(op: &BinaryOperator) -> Option<CmpOp> {
    Some(match op {
        BinaryOperator::Eq => CmpOp::Eq,
        BinaryOperator::NotEq => CmpOp::NotEq,
        BinaryOperator::Lt => CmpOp::Lt,
        BinaryOperator::LtEq => CmpOp::LtEq,
        BinaryOperator::Gt => CmpOp::Gt,
        BinaryOperator::GtEq => CmpOp::GtEq,
        _ => return None,
    })
}

fn predicate(expr: &Expr) -> std::result::Result<Predicate, String> {
    let unsupported = || {
        format!("'{expr}' is not supported (comparisons, IN, IS NULL, AND, OR, NOT of literals)")
    };
    match expr {
        Expr::Nested(inner) => predicate(inner),
        Expr::BinaryOp { left, op, right } => match op {
            BinaryOperator::And => Ok(Predicate::and(predicate(left)?, predicate(right)?)),
            BinaryOperator::Or => Ok(Predicate::or(predicate(left)?, predicate(right)?)),
            other => {
                let op = cmp_op(other).ok_or_else(unsupported)?;
                if let (Some(c), Some(v)) = (column(left), literal(right)) {
                    Ok(Predicate::Cmp {
                        column: c,
                        op,
                        value: v,
                    })
                } else if let (Some(v), Some(c)) = (literal(left), column(right)) {
                    Ok(Predicate::Cmp {
                        column: c,
                        op: op.flipped(),
                        value: v,
                    })
                } else {
                    Err(unsupported())
                }
            }
        },
        Expr::UnaryOp {
            op: UnaryOperator::Not,
            expr,
        } => Ok(Predicate::Not(Box::new(predicate(expr)?))),
        Expr::In {
            expr: inner,
            target: InTarget::List(list),
            negated,
            ..
        } => {
            let c = column(inner).ok_or_else(unsupported)?;
            let values = list
                .iter()
                .map(|e| literal(e).ok_or_else(unsupported))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            Ok(Predicate::In {
                column: c,
                values,
                negated: *negated,
            })
        }
        Expr::IsNull(inner) | Expr::IsNotNull(inner) => Ok(Predicate::IsNull {
            column: column(inner).ok_or_else(unsupported)?,
            negated: matches!(expr, Expr::IsNotNull(_)),
        }),
        Expr::Between {
            expr: inner,
            negated,
            low,
            high,
        } => {
            let c = column(inner).ok_or_else(unsupported)?;
            let (lo, hi) = (
                literal(low).ok_or_else(unsupported)?,
                literal(high).ok_or_else(unsupported)?,
            );
            let both = Predicate::And(vec![
                Predicate::Cmp {
                    column: c.clone(),
                    op: CmpOp::GtEq,
                    value: lo,
                },
                Predicate::Cmp {
                    column: c,
                    op: CmpOp::LtEq,
                    value: hi,
                },
            ]);
            Ok(if *negated {
                Predicate::Not(Box::new(both))
            } else {
                both
            })
        }
        _ => Err(unsupported()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::ast::ArgValue;

    fn named(name: &str, literal: Literal) -> Arg {
        Arg {
            name: Some(name.into()),
            value: ArgValue::Literal(literal),
        }
    }

    #[test]
    fn where_forms() {
        let p = parse_where("d >= '2024-01-01' AND (k IN (1, 2) OR NOT x IS NULL)").unwrap();
        assert_eq!(p.columns(), ["d", "k", "x"]);
        let p = parse_where("5 < k").unwrap();
        assert_eq!(
            p,
            Predicate::Cmp {
                column: "k".into(),
                op: CmpOp::Gt,
                value: Literal::Number("5".into())
            }
        );
        assert!(parse_where("k BETWEEN 1 AND 3").is_ok());
        let e = parse_where("k + 1 > 2").unwrap_err();
        assert!(e.message().contains("is not supported"), "{}", e.message());
        assert!(parse_where("k >").is_err());
        assert!(parse_where("k > 1 garbage").is_err());
    }

    #[test]
    fn options_and_checks() {
        let limits = ParseLimits::default();
        let o = bind_rewrite(
            &[
                named("target_file_size_bytes", Literal::Number("1000".into())),
                named("min_input_files", Literal::Number("2".into())),
                named("rewrite_all", Literal::Bool(true)),
                named("dry_run", Literal::Number("1".into())),
                named("where", Literal::String("p = 1".into())),
            ],
            &limits,
        )
        .unwrap();
        assert_eq!(o.target_file_size_bytes, Some(1000));
        assert_eq!(o.min_input_files, Some(2));
        assert!(o.rewrite_all && o.dry_run && o.filter.is_some());
        let e = bind_rewrite(
            &[named("min_input_files", Literal::Number("0".into()))],
            &limits,
        );
        assert!(e.unwrap_err().message().contains("positive"));
        let e = bind_rewrite(
            &[named("target_file_size_bytes", Literal::String("1".into()))],
            &limits,
        );
        assert!(e.unwrap_err().message().contains("wrong type"));
        let e = bind_rewrite(&[named("bogus", Literal::Number("1".into()))], &limits);
        assert_eq!(
            e.unwrap_err().message(),
            "Unknown parameter 'bogus' for rewrite_data_files"
        );
        let e = bind_rewrite(
            &[
                named("target_file_size_bytes", Literal::Number("100".into())),
                named("max_file_size_bytes", Literal::Number("100".into())),
            ],
            &limits,
        );
        assert!(e.unwrap_err().message().contains("must be greater"));
    }
}
