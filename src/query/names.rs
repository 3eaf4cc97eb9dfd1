//! The names ClickHouse gives unaliased result columns: an expression printed with its operators
//! as function calls (`a + 1` is `plus(a, 1)`, `x = 'b'` is `equals(x, 'b')`, `a AND b AND c` is
//! `and(a, b, c)`), `count(*)` as `count()`, a qualified column as its bare name, string literals
//! in single quotes with `\'` escapes. Forms without a rule keep the text the parser prints.

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, SelectItem,
    SetExpr, UnaryOperator, Value,
};

/// The ClickHouse name of each item of a query's outer projection, `None` for an item that
/// expands to several columns (`*`, `t.*`).
pub(super) fn projection_names(body: &SetExpr) -> Vec<Option<String>> {
    match body {
        SetExpr::Select(select) => select
            .projection
            .iter()
            .map(|item| match item {
                SelectItem::UnnamedExpr(expr) => Some(name(expr)),
                SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.clone()),
                _ => None,
            })
            .collect(),
        SetExpr::SetOperation { left, .. } => projection_names(left),
        SetExpr::Query(query) => projection_names(&query.body),
        _ => Vec::new(),
    }
}

/// The column name ClickHouse gives `expr`.
pub(super) fn name(expr: &Expr) -> String {
    match expr {
        Expr::Identifier(ident) => ident.value.clone(),
        Expr::CompoundIdentifier(parts) => {
            parts.last().map_or_else(String::new, |p| p.value.clone())
        }
        Expr::Value(value) => literal(&value.value),
        Expr::Nested(inner) => name(inner),
        Expr::BinaryOp { left, op, right } => binary(left, op, right),
        Expr::UnaryOp { op, expr } => match (op, expr.as_ref()) {
            (UnaryOperator::Minus, Expr::Value(v)) => format!("-{}", literal(&v.value)),
            (UnaryOperator::Minus, inner) => call("negate", &[name(inner)]),
            (UnaryOperator::Not, inner) => call("not", &[name(inner)]),
            (UnaryOperator::Plus, inner) => name(inner),
            _ => expr.to_string(),
        },
        Expr::IsNull(inner) => call("isNull", &[name(inner)]),
        Expr::IsNotNull(inner) => call("isNotNull", &[name(inner)]),
        Expr::Between {
            expr,
            negated: false,
            low,
            high,
        } => format!(
            "and(greaterOrEquals({0}, {1}), lessOrEquals({0}, {2}))",
            name(expr),
            name(low),
            name(high)
        ),
        Expr::InList {
            expr,
            list,
            negated,
        } => {
            let function = if *negated { "notIn" } else { "in" };
            let items: Vec<String> = list.iter().map(name).collect();
            let set = match items.as_slice() {
                [one] => one.clone(),
                _ => format!("({})", items.join(", ")),
            };
            call(function, &[name(expr), set])
        }
        Expr::Like {
            negated,
            expr,
            pattern,
            ..
        } => {
            let function = if *negated { "notLike" } else { "like" };
            call(function, &[name(expr), name(pattern)])
        }
        Expr::Function(function) => {
            let mut text = function.name.to_string();
            if let FunctionArguments::List(params) = &function.parameters {
                text.push_str(&arguments(&params.args));
            }
            match &function.args {
                FunctionArguments::List(list) => {
                    let distinct = list.duplicate_treatment.is_some_and(|d| {
                        d == datafusion::sql::sqlparser::ast::DuplicateTreatment::Distinct
                    });
                    if distinct {
                        text.push_str("Distinct");
                    }
                    text.push_str(&arguments(&list.args));
                }
                FunctionArguments::None => text.push_str("()"),
                FunctionArguments::Subquery(_) => return expr.to_string(),
            }
            if let Some(over) = &function.over {
                text.push_str(&format!(" OVER {over}"));
            }
            text
        }
        Expr::Array(array) => {
            let items: Vec<String> = array.elem.iter().map(name).collect();
            format!("[{}]", items.join(", "))
        }
        Expr::Tuple(items) => {
            let items: Vec<String> = items.iter().map(name).collect();
            format!("({})", items.join(", "))
        }
        Expr::Cast {
            expr: inner,
            data_type,
            ..
        } => {
            format!("CAST({}, '{}')", name(inner), data_type)
        }
        other => other.to_string(),
    }
}

fn arguments(args: &[FunctionArg]) -> String {
    let items: Vec<String> = args
        .iter()
        .filter_map(|arg| match arg {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(name(e)),
            FunctionArg::Unnamed(FunctionArgExpr::Wildcard) => None,
            other => Some(other.to_string()),
        })
        .collect();
    format!("({})", items.join(", "))
}

fn call(function: &str, args: &[String]) -> String {
    format!("{function}({})", args.join(", "))
}

fn binary(left: &Expr, op: &BinaryOperator, right: &Expr) -> String {
    let function = match op {
        BinaryOperator::Plus => "plus",
        BinaryOperator::Minus => "minus",
        BinaryOperator::Multiply => "multiply",
        BinaryOperator::Divide => "divide",
        BinaryOperator::Modulo => "modulo",
        BinaryOperator::Eq => "equals",
        BinaryOperator::NotEq => "notEquals",
        BinaryOperator::Lt => "less",
        BinaryOperator::LtEq => "lessOrEquals",
        BinaryOperator::Gt => "greater",
        BinaryOperator::GtEq => "greaterOrEquals",
        BinaryOperator::StringConcat => "concat",
        BinaryOperator::And => return call("and", &chain(left, right, op)),
        BinaryOperator::Or => return call("or", &chain(left, right, op)),
        _ => return format!("{left} {op} {right}"),
    };
    call(function, &[name(left), name(right)])
}

/// The operands of a chain of one associative operator, flattened as ClickHouse flattens
/// `a AND b AND c` into `and(a, b, c)`.
fn chain(left: &Expr, right: &Expr, op: &BinaryOperator) -> Vec<String> {
    let mut operands = Vec::new();
    let mut pending = vec![right, left];
    while let Some(expr) = pending.pop() {
        match expr {
            Expr::BinaryOp {
                left,
                op: inner,
                right,
            } if inner == op => {
                pending.push(right);
                pending.push(left);
            }
            other => operands.push(name(other)),
        }
    }
    operands
}

fn literal(value: &Value) -> String {
    match value {
        Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => {
            format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
        }
        Value::Boolean(b) => b.to_string(),
        other => other.to_string(),
    }
}

/// Gives each unaliased item of the outer projection its ClickHouse name as alias, so that
/// DataFusion's result columns carry it; a name already taken (ClickHouse allows two equal
/// columns, DataFusion does not) gets a ` #N` suffix DataFusion sees and the result drops.
pub(super) fn alias_projection(body: &mut SetExpr, names: &[String]) {
    let SetExpr::Select(select) = body else {
        return;
    };
    let mut taken = std::collections::HashSet::new();
    for (item, name) in select.projection.iter_mut().zip(names) {
        let mut alias = name.clone();
        let mut n = 1;
        while !taken.insert(alias.clone()) {
            n += 1;
            alias = format!("{name} #{n}");
        }
        if let SelectItem::UnnamedExpr(expr) = item {
            let expr = std::mem::replace(expr, Expr::value(Value::Null));
            *item = SelectItem::ExprWithAlias {
                expr,
                alias: Ident::new(alias),
            };
        }
    }
}
