//! Long flat statements and the parser's limits through the embedding API, each run on a thread
//! with a 2 MiB stack (a tokio worker's, and what an embedding host gives), on real tables written
//! by `icetrim-generate`: 1,000 `AND`s in a `SELECT`'s `WHERE` (the query engine's longest chain), a 100,000-term sum as an argument,
//! 50,000 `OR`s in `rewrite_data_files(where = …)`, parentheses 999 and 1,001 deep, the deepest
//! `max_parser_depth`, and `max_query_size`. Before the fix each of the first three aborted the
//! process ("thread has overflowed its stack").

use std::path::Path;
use std::process::Command;

use icetrim::ErrorKind;
use icetrim::engine::{Engine, QueryResult, Session};
use icetrim::format::Value;
use icetrim::internals::sql::MAX_PARSER_DEPTH_CEILING;

const GENERATE: &str = env!("CARGO_BIN_EXE_icetrim-generate");

/// Runs `work` on a new thread with a 2 MiB stack and a current-thread runtime (so the
/// statement's futures, and the tasks they spawn, run on that stack).
fn on_small_stack<T: Send + 'static>(
    work: impl FnOnce() -> futures::future::LocalBoxFuture<'static, T> + Send + 'static,
) -> T {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime")
                .block_on(work())
        })
        .expect("thread starts")
        .join()
        .expect("no panic")
}

/// Writes a table with `args` (a `--location` is added) and returns its summary.
fn generate(dir: &Path, args: &[&str]) -> serde_json::Value {
    let out = Command::new(GENERATE)
        .args(["--location", dir.to_str().expect("utf-8 path")])
        .args(args)
        .output()
        .expect("icetrim-generate runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("a JSON summary")
}

fn session_on(dir: &Path) -> (Session, String) {
    let create = format!("CREATE TABLE t ENGINE = IcebergLocal('{}')", dir.display());
    (Engine::builder().build().expect("engine").session(), create)
}

fn metric(result: &QueryResult, name: &str) -> i64 {
    result
        .rows
        .iter()
        .find(|row| row[0] == Value::Str(name.into()))
        .and_then(|row| match &row[1] {
            Value::Int(v) => Some(*v),
            Value::UInt(v) => i64::try_from(*v).ok(),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no {name} in {:?}", result.rows))
}

#[test]
fn a_thousand_ands_in_a_select_where_filter_real_rows() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("t");
    let summary = generate(&dir, &["--snapshots", "3", "--files-per-snapshot", "1"]);
    let current = summary["current_snapshot_id"].as_i64().expect("an id");
    let rows = on_small_stack(move || {
        Box::pin(async move {
            let (mut session, create) = session_on(&dir);
            session.execute(&create).await.expect("created");
            let mut conditions: Vec<String> =
                (0..999).map(|i| format!("snapshot_id != {i}")).collect();
            conditions.push(format!("snapshot_id != {current}"));
            let sql = format!(
                "SELECT snapshot_id FROM system.iceberg_history WHERE {}",
                conditions.join(" AND ")
            );
            let result = session.execute(&sql).await.expect("the SELECT runs");
            result[0].rows.len()
        })
    });
    assert_eq!(
        rows, 2,
        "the current snapshot is filtered out, the other two stay"
    );
}

#[test]
fn a_hundred_thousand_term_sum_is_refused_as_no_literal() {
    let outcome = on_small_stack(|| {
        Box::pin(async {
            let mut session = Engine::builder().build().expect("engine").session();
            session
                .execute("CREATE TABLE t ENGINE = IcebergLocal('/nonexistent/t')")
                .await
                .expect("registered");
            let sum = vec!["1"; 100_000].join(" + ");
            let sql = format!("ALTER TABLE t EXECUTE expire_snapshots(retain_last = {sum})");
            let too_long = session.execute(&sql).await.expect_err("over 256 KiB");
            session
                .execute("SET max_query_size = 1000000")
                .await
                .expect("set");
            let not_literal = session.execute(&sql).await.expect_err("no literal");
            (too_long, not_literal)
        })
    });
    let (too_long, not_literal) = outcome;
    assert_eq!(too_long.kind(), ErrorKind::SyntaxError);
    assert!(
        too_long.message().starts_with(
            "Max query size exceeded (can be increased with the `max_query_size` setting): \
             Syntax error: failed at position 262145 "
        ),
        "{too_long}"
    );
    assert_eq!(not_literal.kind(), ErrorKind::BadArguments, "{not_literal}");
    assert_eq!(
        not_literal.message(),
        "Argument 1 to expire_snapshots() must be a literal value"
    );
}

/// 50,000 `OR`ed partition values in `where`: the predicate is one flat `OR`, evaluated against
/// every file of a real partitioned table; it selects exactly what `part = 1` selects.
#[test]
fn fifty_thousand_ors_in_where_select_the_same_files_as_one_comparison() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("t");
    generate(
        &dir,
        &[
            "--snapshots",
            "4",
            "--files-per-snapshot",
            "4",
            "--partitions",
            "4",
            "--parquet",
            "--rows-per-file",
            "5",
            "--mix",
            "append=1",
        ],
    );
    let (with_one, with_many) = on_small_stack(move || {
        Box::pin(async move {
            let (mut session, create) = session_on(&dir);
            session
                .execute(&format!("SET max_query_size = 10000000; {create}"))
                .await
                .expect("created");
            let run = |predicate: String| {
                format!(
                    "ALTER TABLE t EXECUTE rewrite_data_files(where = '{predicate}', \
                     rewrite_all = 1, min_input_files = 1, dry_run = 1)"
                )
            };
            let one = session.execute(&run("part = 1".into())).await.expect("one");
            let mut terms: Vec<String> = (0..50_000)
                .map(|i| format!("part = {}", 1000 + i))
                .collect();
            terms.insert(25_000, "part = 1".into());
            let many = session
                .execute(&run(terms.join(" OR ")))
                .await
                .expect("50,000 ORs");
            (
                metric(&one[0], "rewritten_data_files_count"),
                metric(&many[0], "rewritten_data_files_count"),
            )
        })
    });
    assert!(with_one > 0, "partition 1 has files");
    assert_eq!(with_many, with_one);
}

/// Parentheses 999 deep parse (a literal in parentheses is the literal, as in ClickHouse), 1,001
/// deep are ClickHouse's `TOO_DEEP_RECURSION`; in an argument, in a `SELECT`'s `WHERE` and in a
/// `where` string.
#[test]
fn parentheses_999_deep_parse_and_1001_deep_are_too_deep() {
    let errors = on_small_stack(|| {
        Box::pin(async {
            let mut session = Engine::builder().build().expect("engine").session();
            session
                .execute("CREATE TABLE t ENGINE = IcebergLocal('/nonexistent/t')")
                .await
                .expect("registered");
            let nest = |n: usize, inner: &str| format!("{}{inner}{}", "(".repeat(n), ")".repeat(n));
            let mut outcomes = Vec::new();
            for n in [998, 1001] {
                // The argument list's own parenthesis is one level: 998 + 1 = 999.
                let argument = format!(
                    "ALTER TABLE t EXECUTE expire_snapshots(retain_last = {})",
                    nest(n, "5")
                );
                let select = format!(
                    "SELECT * FROM system.iceberg_refs WHERE {}",
                    nest(n + 1, "name = 'main'")
                );
                let predicate = format!(
                    "ALTER TABLE t EXECUTE rewrite_data_files(where = '{}')",
                    nest(n + 1, "part = 1")
                );
                for sql in [argument, select, predicate] {
                    outcomes.push((n, session.execute(&sql).await.err()));
                }
            }
            outcomes
        })
    });
    for (n, error) in errors {
        let kind = error.as_ref().map(|e| e.kind());
        if n == 998 {
            // Past the parser: the table's path does not exist (or the SELECT ran).
            assert!(
                matches!(kind, None | Some(ErrorKind::FileDoesntExist)),
                "{n}: {error:?}"
            );
        } else {
            assert_eq!(kind, Some(ErrorKind::TooDeepRecursion), "{n}: {error:?}");
            assert_eq!(
                error.map(|e| e.to_string()).unwrap_or_default(),
                "Code: 306. DB::Exception: Maximum parse depth (1000) exceeded. Consider rising \
                 max_parser_depth parameter. (TOO_DEEP_RECURSION)"
            );
        }
    }
}

/// At the deepest `max_parser_depth` icetrim accepts, the deepest structures it builds (nested
/// arrays and tuples, a `where` alternating `OR`, `AND` and `NOT` in parentheses) are parsed,
/// bound, printed and evaluated against a real table on a 2 MiB stack.
#[test]
fn the_deepest_max_parser_depth_fits_a_small_stack() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("t");
    generate(
        &dir,
        &[
            "--snapshots",
            "2",
            "--files-per-snapshot",
            "2",
            "--partitions",
            "2",
            "--parquet",
            "--rows-per-file",
            "3",
            "--mix",
            "append=1",
        ],
    );
    let depth = usize::try_from(MAX_PARSER_DEPTH_CEILING).expect("small");
    let rewritten = on_small_stack(move || {
        Box::pin(async move {
            let (mut session, create) = session_on(&dir);
            session
                .execute(&format!(
                    "SET max_parser_depth = {depth}, max_query_size = 0; {create}"
                ))
                .await
                .expect("created");
            // Nested literals: refused by the binder (an id list of lists), after parsing.
            let arrays = format!("{}1{}", "[".repeat(depth - 1), "]".repeat(depth - 1));
            let error = session
                .execute(&format!(
                    "ALTER TABLE t EXECUTE expire_snapshots(snapshot_ids = {arrays})"
                ))
                .await
                .expect_err("not a list of ids");
            assert_eq!(error.kind(), ErrorKind::BadArguments, "{error}");
            let mut tuples = "(1, 2)".to_string();
            for _ in 1..(depth - 1) {
                tuples = format!("({tuples}, 3)");
            }
            let error = session
                .execute(&format!("SET iceberg_delete_concurrency = {tuples}"))
                .await
                .expect_err("a tuple is no count");
            assert_eq!(error.kind(), ErrorKind::BadArguments, "{error}");
            // part = 1 OR (part = 5 AND NOT (part = 1 OR (…))): every level a new node; an
            // even number of levels, so the outermost is an OR and the whole selects part = 1.
            let mut predicate = "part = 1".to_string();
            for level in 0..((depth / 2 - 1) & !1) {
                predicate = if level % 2 == 0 {
                    format!("part = 5 AND NOT ({predicate})")
                } else {
                    format!("part = 1 OR ({predicate})")
                };
            }
            let run = |predicate: &str| {
                format!(
                    "ALTER TABLE t EXECUTE rewrite_data_files(where = '{predicate}', \
                     rewrite_all = 1, min_input_files = 1, dry_run = 1)"
                )
            };
            let deep = session
                .execute(&run(&predicate))
                .await
                .expect("the deep predicate runs");
            let flat = session.execute(&run("part = 1")).await.expect("flat");
            (
                metric(&deep[0], "rewritten_data_files_count"),
                metric(&flat[0], "rewritten_data_files_count"),
            )
        })
    });
    assert!(rewritten.1 > 0, "partition 1 has files");
    assert_eq!(rewritten.0, rewritten.1);
}

#[tokio::test]
async fn max_query_size_is_a_session_setting_counted_in_bytes() {
    let mut session = Engine::builder().build().expect("engine").session();
    let statement = "SHOW TABLES FORMAT JSON";
    session
        .execute(&format!("SET max_query_size = {}", statement.len()))
        .await
        .expect("set");
    session.execute(statement).await.expect("exactly the limit");
    let error = session
        .execute("SHOW  TABLES FORMAT JSON")
        .await
        .expect_err("one byte over");
    assert_eq!(error.kind(), ErrorKind::SyntaxError);
    assert_eq!(
        error.message(),
        "Max query size exceeded (can be increased with the `max_query_size` setting): Syntax \
         error: failed at position 21 (JSON): JSON. "
    );
    // The text is measured as written, before `{name:Type}` parameters are substituted: 14
    // bytes here, 110 once the name is in (and past the parser, the database is unknown).
    session.set_param("d", "x".repeat(100));
    let error = session
        .execute("SET max_query_size = 16; USE {d:String}")
        .await
        .expect_err("no such database");
    assert_eq!(error.kind(), ErrorKind::UnknownDatabase, "{error}");
    let error = Engine::builder()
        .setting("max_parser_depth", "0")
        .build()
        .expect_err("0 is refused");
    assert_eq!(error.kind(), ErrorKind::BadArguments);
}
