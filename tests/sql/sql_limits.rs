//! The parser on long and deep text, each case on a thread with a 2 MiB stack: flat chains of any
//! length parse into flat trees that print and parse back; nesting past `max_parser_depth` is
//! `TOO_DEEP_RECURSION`; text sqlparser would have to nest as deep as its chains is never handed
//! to it; and (a property test) random long or deep expressions in every position never panic.

use icetrim::ErrorKind;
use icetrim::internals::plan::ProcedureCall;
use icetrim::internals::sql::{
    ArgValue, BindContext, Literal, ParseLimits, SessionTimeZone, Statement, bind, parse_statement,
    parse_statement_with, parse_where_with,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

fn on_small_stack<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(work)
        .expect("thread starts")
        .join()
        .expect("no panic")
}

fn unlimited_size() -> ParseLimits {
    ParseLimits {
        max_query_size: 0,
        ..ParseLimits::default()
    }
}

/// Parses `sql`, prints it, parses the print and demands the same statement.
fn round_trip(sql: &str, limits: &ParseLimits) -> Statement {
    let statement = parse_statement_with(sql, 1, limits).unwrap_or_else(|e| panic!("{e}"));
    let printed = statement.to_string();
    let again = parse_statement_with(&printed, 1, limits).unwrap_or_else(|e| panic!("{e}"));
    assert!(again == statement, "printing changed the statement");
    statement
}

#[test]
fn ten_thousand_ands_are_kept_as_text() {
    let filter_len = on_small_stack(|| {
        let conditions: Vec<String> = (0..10_000)
            .map(|i| format!("(snapshot_id != {i})"))
            .collect();
        let sql = format!(
            "SELECT * FROM system.iceberg_history WHERE {} ORDER BY snapshot_id LIMIT 5",
            conditions.join(" AND ")
        );
        match round_trip(&sql, &ParseLimits::default()) {
            Statement::Select(select) => select.text.matches(" AND ").count() + 1,
            other => panic!("{other:?}"),
        }
    });
    assert_eq!(filter_len, 10_000);
}

#[test]
fn long_chains_outside_the_select_form_are_not_supported() {
    let errors = on_small_stack(|| {
        let ands = vec!["a = 1"; 20_000].join(" AND ");
        [
            format!("DELETE FROM t WHERE {ands}"),
            format!("INSERT INTO t VALUES ({})", vec!["1"; 30_000].join(" + ")),
        ]
        .iter()
        .map(|sql| parse_statement(sql).expect_err("refused"))
        .collect::<Vec<_>>()
    });
    for error in errors {
        assert_eq!(error.kind(), ErrorKind::NotImplemented, "{error}");
    }
    let error = on_small_stack(|| {
        parse_statement(&format!("SET a = {}", vec!["1"; 30_000].join(" + "))).unwrap_err()
    });
    assert_eq!(
        error.to_string(),
        "Code: 62. DB::Exception: Syntax error: failed at position 9 (line 1, col 9): Expected: \
         a literal setting value, found: 1. (SYNTAX_ERROR)"
    );
}

#[test]
fn a_hundred_thousand_term_sum_is_an_expression_argument() {
    let (text, bound) = on_small_stack(|| {
        let sum = vec!["1"; 100_000].join(" +\n");
        let sql = format!("ALTER TABLE t EXECUTE expire_snapshots(retain_last = {sum})");
        let Statement::AlterExecute(alter) = round_trip(&sql, &unlimited_size()) else {
            panic!("not an ALTER");
        };
        let ArgValue::Expr(text) = &alter.args[0].value else {
            panic!("{:?}", alter.args[0].value);
        };
        let context = BindContext {
            now_ms: 0,
            time_zone: SessionTimeZone::System,
            limits: ParseLimits::default(),
        };
        let bound = bind(&alter.procedure, &alter.args, &context).map(|_| ());
        (text.clone(), bound)
    });
    assert_eq!(text, vec!["1"; 100_000].join(" + "));
    let error = bound.expect_err("no literal");
    assert_eq!(
        error.message(),
        "Argument 1 to expire_snapshots() must be a literal value"
    );
    // Short expressions are still sqlparser's, printed as before.
    let Statement::AlterExecute(alter) =
        parse_statement("ALTER TABLE t EXECUTE p(x = now()+ 1, y = [now()])").unwrap()
    else {
        panic!("not an ALTER");
    };
    assert_eq!(alter.args[0].value, ArgValue::Expr("now() + 1".into()));
    assert_eq!(alter.args[1].value, ArgValue::Expr("[now()]".into()));
}

#[test]
fn a_million_ids_bind_from_one_pass() {
    let ids = on_small_stack(|| {
        let list: Vec<String> = (0..1_000_000_i64)
            .map(|i| (i * 9_000_000_000_007).to_string())
            .collect();
        let sql = format!(
            "ALTER TABLE t EXECUTE expire_snapshots(snapshot_ids = [{}], dry_run = 1)",
            list.join(", ")
        );
        let Statement::AlterExecute(alter) =
            parse_statement_with(&sql, 1, &unlimited_size()).expect("parses")
        else {
            panic!("not an ALTER");
        };
        let context = BindContext {
            now_ms: 0,
            time_zone: SessionTimeZone::System,
            limits: ParseLimits::default(),
        };
        match bind(&alter.procedure, &alter.args, &context) {
            Ok(ProcedureCall::Expire(options)) => options.snapshot_ids.expect("ids"),
            other => panic!("{other:?}"),
        }
    });
    assert_eq!(ids.len(), 1_000_000);
    assert_eq!(ids[999_999], 999_999 * 9_000_000_000_007);
}

#[test]
fn fifty_thousand_ors_are_one_flat_predicate() {
    let (len, columns) = on_small_stack(|| {
        let text = (0..50_000)
            .map(|i| format!("p = {i}"))
            .collect::<Vec<_>>()
            .join(" OR ");
        let predicate = parse_where_with(&text, &ParseLimits::default()).expect("parses");
        let columns = predicate.columns().len();
        match predicate {
            icetrim::internals::plan::Predicate::Or(items) => (items.len(), columns),
            other => panic!("{other:?}"),
        }
    });
    assert_eq!((len, columns), (50_000, 50_000));
}

#[test]
fn nesting_is_counted_in_brackets_and_not() {
    let outcomes = on_small_stack(|| {
        let limits = ParseLimits::default();
        let parens = |n: usize| format!("{}p = 1{}", "(".repeat(n), ")".repeat(n));
        let nots = |n: usize| format!("{}p = 1", "NOT ".repeat(n));
        let arrays = |n: usize| {
            format!(
                "ALTER TABLE t EXECUTE p(x = {}1{})",
                "[".repeat(n),
                "]".repeat(n)
            )
        };
        vec![
            parse_where_with(&parens(1000), &limits).err(),
            parse_where_with(&parens(1001), &limits).err(),
            parse_where_with(&nots(1000), &limits).err(),
            parse_where_with(&nots(1001), &limits).err(),
            parse_statement(&arrays(999)).err(),
            parse_statement(&arrays(1000)).err(),
        ]
    });
    let kinds: Vec<Option<ErrorKind>> = outcomes
        .iter()
        .map(|e| e.as_ref().map(|e| e.kind()))
        .collect();
    let too_deep = Some(ErrorKind::TooDeepRecursion);
    assert_eq!(kinds, [None, too_deep, None, too_deep, None, too_deep]);
}

#[test]
fn literals_in_parentheses_are_the_literal_as_in_clickhouse() {
    let Statement::AlterExecute(alter) = round_trip(
        "ALTER TABLE t EXECUTE p(x = ((5)), y = ((1, 'a')), z = (-2))",
        &Default::default(),
    ) else {
        panic!("not an ALTER");
    };
    let values: Vec<String> = alter.args.iter().map(|a| a.value.to_string()).collect();
    assert_eq!(values, ["5", "(1, 'a')", "-2"]);
    assert_eq!(
        alter.args[0].value,
        ArgValue::Literal(Literal::Number("5".into()))
    );
}

/// A random expression: a flat chain of atoms joined by operators, wrapped in brackets and
/// `NOT`s; lengths and depths on both sides of the limits.
fn expression() -> impl Strategy<Value = String> {
    let atom = prop_oneof![
        Just("1".to_string()),
        Just("-2.5".to_string()),
        Just("'s'".to_string()),
        Just("part".to_string()),
        Just("now()".to_string()),
        Just("[1, 2]".to_string()),
        Just("(1, 'a')".to_string()),
        Just("NULL".to_string()),
    ];
    let operator = prop_oneof![
        Just(" AND "),
        Just(" OR "),
        Just(" + "),
        Just(" * "),
        Just(" = "),
        Just(" < "),
        Just(" || "),
        Just(", "),
        Just(" IN "),
        Just(" :: "),
    ];
    let wrap = prop_oneof![
        Just(("(", ")")),
        Just(("[", "]")),
        Just(("NOT ", "")),
        Just(("-", ""))
    ];
    (
        prop::collection::vec((atom, operator), 1..4),
        0usize..30_000,
        prop::collection::vec(wrap, 0..4),
        0usize..1_200,
    )
        .prop_map(|(pieces, repeat, wraps, depth)| {
            let mut chain = String::new();
            for i in 0..=repeat {
                let (atom, op) = &pieces[i % pieces.len()];
                if i > 0 {
                    chain.push_str(op);
                }
                chain.push_str(atom);
            }
            let (open, close): (String, String) = (0..depth)
                .map(|i| {
                    wraps
                        .get(i % wraps.len().max(1))
                        .copied()
                        .unwrap_or(("(", ")"))
                })
                .fold((String::new(), String::new()), |(mut o, mut c), (a, b)| {
                    o.push_str(a);
                    c.insert_str(0, b);
                    (o, c)
                });
            format!("{open}{chain}{close}")
        })
}

/// The expression in every position icetrim reads one.
fn statements(expr: &str) -> Vec<String> {
    let quoted = expr.replace('\'', "\\'");
    vec![
        format!("SELECT * FROM system.iceberg_history WHERE {expr}"),
        format!("ALTER TABLE t EXECUTE expire_snapshots(retain_last = {expr}, dry_run = 1)"),
        format!("EXPLAIN ALTER TABLE t EXECUTE rewrite_data_files(where = '{quoted}')"),
        format!("SET a = {expr}"),
        format!("CREATE TABLE t ENGINE = IcebergLocal({expr})"),
        format!("DELETE FROM t WHERE {expr}"),
    ]
}

#[test]
fn random_long_or_deep_expressions_never_panic() {
    on_small_stack(|| {
        let mut runner = TestRunner::new(Config {
            cases: 48,
            ..Config::default()
        });
        let limits = ParseLimits {
            max_query_size: 0,
            ..ParseLimits::default()
        };
        let context = BindContext {
            now_ms: 0,
            time_zone: SessionTimeZone::System,
            limits,
        };
        runner
            .run(&expression(), |expr| {
                for sql in statements(&expr) {
                    let Ok(statement) = parse_statement_with(&sql, 1, &limits) else {
                        continue;
                    };
                    let printed = statement.to_string();
                    prop_assert_eq!(
                        parse_statement_with(&printed, 1, &limits).ok(),
                        Some(statement.clone()),
                        "{}",
                        printed
                    );
                    let alter = match &statement {
                        Statement::AlterExecute(alter) => Some(alter),
                        Statement::Explain(inner) => match inner.as_ref() {
                            Statement::AlterExecute(alter) => Some(alter),
                            _ => None,
                        },
                        _ => None,
                    };
                    if let Some(alter) = alter {
                        let _ = bind(&alter.procedure, &alter.args, &context);
                    }
                }
                Ok(())
            })
            .expect("no failing case");
    });
}
