//! ClickHouse functions DataFusion has under another form, rewritten in the query's syntax tree
//! before planning: `count` answers `UInt64`, `countIf(c)` counts the rows where `c` holds,
//! `uniqExact(x)` counts distinct values, `if(c, a, b)` is a `CASE`, and the parametric
//! `quantile(p)(x)` is the exact, interpolated quantile of `x` as `Float64` (`quantile.rs`).
//! A parametric call of any other function is refused (DataFusion has no parameters).

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, CaseWhen, CastKind, DataType, DuplicateTreatment, Expr, Function, FunctionArg,
    FunctionArgExpr, FunctionArgumentList, FunctionArguments, Ident, ObjectName, Value, VisitMut,
    VisitorMut, helpers::attached_token::AttachedToken,
};

use crate::error::{Error, ErrorKind, Result};

/// The deepest expression nesting a query may have. The front end has already held the text to
/// the session's `max_parser_depth` (at most 2000 brackets); a bracket is up to a few levels of
/// the syntax tree, so this only stops what no accepted text reaches.
pub(super) const MAX_DEPTH: usize = 10_000;

/// Rewrites the ClickHouse functions of `node` in place.
pub(super) fn rewrite<T: VisitMut>(node: &mut T) -> Result<()> {
    match node.visit(&mut ClickHouseFunctions) {
        ControlFlow::Break(error) => Err(error),
        ControlFlow::Continue(()) => Ok(()),
    }
}

/// Rebuilds every chain of one `AND` or `OR` (`a AND b AND c …`, which the parser builds
/// left-deep, one level per operand) as a balanced tree of the same operands in the same order:
/// the same answer (both operators are associative, NULLs included), nesting in the logarithm of
/// the operands. A filter of 10,000 conditions then plans as ClickHouse runs it.
pub(super) fn balance_chains<T: VisitMut>(node: &mut T) -> Result<()> {
    match node.visit(&mut Balance) {
        ControlFlow::Break(()) => Err(Error::new(
            ErrorKind::TooDeepRecursion,
            format!(
                "A chain of more than {MAX_CHAIN} AND or OR operands is not supported by icetrim's \
                 query engine (its optimizer rebuilds such chains one level per operand)"
            ),
        )),
        ControlFlow::Continue(()) => Ok(()),
    }
}

/// The longest `AND` / `OR` chain a query may hold: DataFusion's optimizer rebuilds conjunctions
/// left-deep, and some of its passes recurse per level on the caller's stack.
pub(super) const MAX_CHAIN: usize = 1000;

struct Balance;

impl VisitorMut for Balance {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        let Expr::BinaryOp { op, .. } = expr else {
            return ControlFlow::Continue(());
        };
        if !matches!(op, BinaryOperator::And | BinaryOperator::Or) {
            return ControlFlow::Continue(());
        }
        let op = op.clone();
        // The operands of the whole chain in order, taken out with a stack (no recursion),
        // whichever way the parser leaned the tree.
        let mut operands = Vec::new();
        let mut pending = vec![std::mem::replace(expr, Expr::value(Value::Null))];
        while let Some(next) = pending.pop() {
            match next {
                Expr::BinaryOp {
                    left,
                    op: this,
                    right,
                } if this == op => {
                    pending.push(*right);
                    pending.push(*left);
                }
                other => operands.push(other),
            }
        }
        if operands.len() > MAX_CHAIN {
            return ControlFlow::Break(());
        }
        *expr = balanced(operands, &op);
        ControlFlow::Continue(())
    }
}

/// `operands` joined by `op` as a balanced tree (at least one operand).
fn balanced(mut operands: Vec<Expr>, op: &BinaryOperator) -> Expr {
    if operands.len() == 1 {
        return operands.pop().unwrap_or_else(|| Expr::value(Value::Null));
    }
    let right = operands.split_off(operands.len() / 2);
    Expr::BinaryOp {
        left: Box::new(balanced(operands, op)),
        op: op.clone(),
        right: Box::new(balanced(right, op)),
    }
}

/// Refuses a tree whose expressions nest deeper than [`MAX_DEPTH`] (the planner and the
/// rewrites recurse on it).
pub(super) fn check_depth<T: VisitMut>(node: &mut T) -> Result<()> {
    let mut depth = Depth { now: 0 };
    match node.visit(&mut depth) {
        ControlFlow::Break(()) => Err(Error::new(
            ErrorKind::TooDeepRecursion,
            format!(
                "Maximum parse depth ({MAX_DEPTH}) exceeded. Consider rising max_parser_depth parameter"
            ),
        )),
        ControlFlow::Continue(()) => Ok(()),
    }
}

struct Depth {
    now: usize,
}

impl VisitorMut for Depth {
    type Break = ();

    fn pre_visit_expr(&mut self, _expr: &mut Expr) -> ControlFlow<()> {
        self.now += 1;
        if self.now > MAX_DEPTH {
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, _expr: &mut Expr) -> ControlFlow<()> {
        self.now -= 1;
        ControlFlow::Continue(())
    }
}

struct ClickHouseFunctions;

impl VisitorMut for ClickHouseFunctions {
    type Break = Error;

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<Error> {
        if let Expr::Function(function) = expr {
            match rewritten(function) {
                Ok(Some(new)) => *expr = new,
                Ok(None) => {}
                Err(error) => return ControlFlow::Break(error),
            }
        }
        ControlFlow::Continue(())
    }
}

/// The DataFusion form of a ClickHouse function call, `None` when it needs none.
fn rewritten(function: &mut Function) -> Result<Option<Expr>> {
    let name = function.name.to_string();
    let parameters = match &function.parameters {
        FunctionArguments::List(list) => Some(plain_args(&name, &list.args)?),
        _ => None,
    };
    if parameters.is_some() && name != "quantile" {
        return Err(Error::new(
            ErrorKind::NotImplemented,
            format!("Function {name} takes no parameters here (only quantile(level)(x) does)"),
        ));
    }
    Ok(Some(match name.as_str() {
        "count" => {
            if let FunctionArguments::List(list) = &mut function.args
                && list.args.is_empty()
            {
                list.args
                    .push(FunctionArg::Unnamed(FunctionArgExpr::Wildcard));
            }
            if matches!(function.args, FunctionArguments::None) {
                function.args =
                    argument_list(vec![FunctionArg::Unnamed(FunctionArgExpr::Wildcard)], None);
            }
            unsigned(Expr::Function(function.clone()))
        }
        "countIf" => {
            let [condition] = take_args::<1>(&name, function)?;
            let case = Expr::Case {
                case_token: AttachedToken::empty(),
                end_token: AttachedToken::empty(),
                operand: None,
                conditions: vec![CaseWhen {
                    condition,
                    result: Expr::value(Value::Number("1".into(), false)),
                }],
                else_result: None,
            };
            unsigned(call("count", vec![case], None, function))
        }
        "uniqExact" => {
            let args = plain_args(&name, function_args(function))?;
            if args.len() != 1 {
                return Err(wrong_count(&name, 1, args.len()));
            }
            unsigned(call(
                "count",
                args,
                Some(DuplicateTreatment::Distinct),
                function,
            ))
        }
        "if" => {
            let [condition, then, otherwise] = take_args::<3>(&name, function)?;
            Expr::Case {
                case_token: AttachedToken::empty(),
                end_token: AttachedToken::empty(),
                operand: None,
                conditions: vec![CaseWhen {
                    condition,
                    result: then,
                }],
                else_result: Some(Box::new(otherwise)),
            }
        }
        "quantile" => {
            let [value] = take_args::<1>(&name, function)?;
            let level = match parameters.as_deref() {
                None => Expr::value(Value::Number("0.5".into(), false)),
                Some([level]) => level.clone(),
                Some(other) => return Err(wrong_count("quantile's parameters", 1, other.len())),
            };
            call(
                super::quantile::NAME,
                vec![double(value), double(level)],
                None,
                function,
            )
        }
        _ => return Ok(None),
    }))
}

fn function_args(function: &Function) -> &[FunctionArg] {
    match &function.args {
        FunctionArguments::List(list) => &list.args,
        _ => &[],
    }
}

/// `N` plain (unnamed, non-wildcard) arguments of `function`.
fn take_args<const N: usize>(name: &str, function: &Function) -> Result<[Expr; N]> {
    let args = plain_args(name, function_args(function))?;
    let count = args.len();
    args.try_into().map_err(|_| wrong_count(name, N, count))
}

fn plain_args(name: &str, args: &[FunctionArg]) -> Result<Vec<Expr>> {
    args.iter()
        .map(|arg| match arg {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(expr)) => Ok(expr.clone()),
            other => Err(Error::new(
                ErrorKind::BadArguments,
                format!("Function {name} does not take the argument {other}"),
            )),
        })
        .collect()
}

fn wrong_count(name: &str, wanted: usize, got: usize) -> Error {
    Error::new(
        ErrorKind::NumberOfArgumentsDoesntMatch,
        format!(
            "Number of arguments for function {name} doesn't match: passed {got}, should be {wanted}"
        ),
    )
}

fn argument_list(
    args: Vec<FunctionArg>,
    distinct: Option<DuplicateTreatment>,
) -> FunctionArguments {
    FunctionArguments::List(FunctionArgumentList {
        duplicate_treatment: distinct,
        args,
        clauses: Vec::new(),
    })
}

/// A call of DataFusion's `name` on `args`, keeping the window and filter of `original`.
fn call(
    name: &str,
    args: Vec<Expr>,
    distinct: Option<DuplicateTreatment>,
    original: &Function,
) -> Expr {
    let args = args
        .into_iter()
        .map(|e| FunctionArg::Unnamed(FunctionArgExpr::Expr(e)))
        .collect();
    Expr::Function(Function {
        name: ObjectName::from(vec![Ident::new(name)]),
        parameters: FunctionArguments::None,
        args: argument_list(args, distinct),
        ..original.clone()
    })
}

fn double(expr: Expr) -> Expr {
    Expr::Cast {
        kind: CastKind::Cast,
        expr: Box::new(expr),
        data_type: DataType::Double(datafusion::sql::sqlparser::ast::ExactNumberInfo::None),
        array: false,
        format: None,
    }
}

/// `expr` as ClickHouse's `UInt64` (DataFusion counts in `Int64`).
fn unsigned(expr: Expr) -> Expr {
    Expr::Cast {
        kind: CastKind::Cast,
        expr: Box::new(expr),
        data_type: DataType::BigIntUnsigned(None),
        array: false,
        format: None,
    }
}

#[cfg(test)]
mod balance_tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::ClickHouseDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn depth_of(expr: &Expr) -> usize {
        match expr {
            Expr::BinaryOp { left, right, .. } => 1 + depth_of(left).max(depth_of(right)),
            Expr::Nested(inner) => 1 + depth_of(inner),
            _ => 1,
        }
    }

    /// The longest accepted `AND` chain becomes a balanced tree with the same conditions in order.
    #[test]
    fn long_chains_are_balanced_in_order() {
        let conditions: Vec<String> = (0..MAX_CHAIN).map(|i| format!("a != {i}")).collect();
        let sql = format!("SELECT 1 FROM t WHERE {}", conditions.join(" AND "));
        let dialect = ClickHouseDialect {};
        let mut statement = std::thread::Builder::new()
            .stack_size(256 << 20)
            .spawn(move || {
                let mut parsed = Parser::new(&dialect)
                    .try_with_sql(&sql)
                    .and_then(|mut p| p.parse_statement())
                    .unwrap();
                balance_chains(&mut parsed).unwrap();
                parsed
            })
            .unwrap()
            .join()
            .unwrap();
        let datafusion::sql::sqlparser::ast::Statement::Query(query) = &statement else {
            panic!("not a query");
        };
        let datafusion::sql::sqlparser::ast::SetExpr::Select(select) = query.body.as_ref() else {
            panic!("not a select");
        };
        let filter = select.selection.as_ref().unwrap();
        // 10 levels of AND, then each comparison and its operands.
        assert_eq!(depth_of(filter), 12);
        let text = filter.to_string();
        assert!(
            text.starts_with("a <> 0 AND a <> 1 AND") || text.starts_with("a != 0"),
            "{}",
            &text[..40]
        );
        assert_eq!(text.matches(" AND ").count(), MAX_CHAIN - 1);
        check_depth(&mut statement).unwrap();
    }
}
