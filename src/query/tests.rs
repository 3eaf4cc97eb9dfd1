//! The query layer against ClickHouse itself: the same query run here and by chdb (ClickHouse
//! embedded, in the project's Python) must give the same column names, types and values. Tables
//! are `MemTable`s in a `system` schema; chdb reads the same rows from `numbers(n)`.

use std::process::Command;
use std::sync::Arc;

use datafusion::arrow::array::{StringArray, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{MemTable, MemorySchemaProvider, SchemaProvider};

use super::*;

fn options(zone: chrono_tz::Tz, max_memory_usage: u64) -> QueryOptions {
    QueryOptions {
        time_zone: SessionTimeZone::Named(zone),
        max_memory_usage,
    }
}

/// A context whose `system.numbers_N` holds `number` = 0..N (as chdb's `numbers(N)`), and
/// `system.tables` has the columns `database`, `table`, `ref`.
fn context(options: &QueryOptions) -> SessionContext {
    let ctx = session_context(options);
    let schema = MemorySchemaProvider::new();
    for n in [10u64, 1_000_000] {
        let numbers = Arc::new(Schema::new(vec![Field::new(
            "number",
            DataType::UInt64,
            false,
        )]));
        let batch = RecordBatch::try_new(
            Arc::clone(&numbers),
            vec![Arc::new(UInt64Array::from_iter_values(0..n))],
        )
        .unwrap();
        let table = MemTable::try_new(numbers, vec![vec![batch]]).unwrap();
        schema
            .register_table(format!("numbers_{n}"), Arc::new(table))
            .unwrap();
    }
    let names = ["database", "table", "ref"];
    let fields: Vec<Field> = names
        .iter()
        .map(|n| Field::new(*n, DataType::Utf8, false))
        .collect();
    let tables = Arc::new(Schema::new(fields));
    let column = |v: [&str; 2]| Arc::new(StringArray::from(v.to_vec())) as _;
    let batch = RecordBatch::try_new(
        Arc::clone(&tables),
        vec![
            column(["db", "db"]),
            column(["big", "small"]),
            column(["main", "audit"]),
        ],
    )
    .unwrap();
    let table = MemTable::try_new(tables, vec![vec![batch]]).unwrap();
    schema
        .register_table("tables".to_string(), Arc::new(table))
        .unwrap();
    ctx.catalog("icetrim")
        .unwrap()
        .register_schema("system", Arc::new(schema))
        .unwrap();
    ctx
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Column names, column types and TSV-like cells of a result.
type Answer = (Vec<String>, Vec<String>, Vec<Vec<String>>);

/// The answer to a query run here.
fn ours(sql: &str, options: &QueryOptions) -> Result<Answer> {
    runtime().block_on(async {
        let ctx = context(options);
        let (columns, rows) = select(&ctx, sql, options).await?;
        Ok((
            columns.iter().map(|c| c.name.clone()).collect(),
            columns.iter().map(|c| c.type_name.clone()).collect(),
            rows.iter()
                .map(|r| r.iter().map(Value::plain).collect())
                .collect(),
        ))
    })
}

/// The same, answered by chdb, `{n}` in `sql` naming `numbers(n)`.
fn chdb(sql: &str, zone: &str) -> Answer {
    let python = std::env::var("ICETRIM_PYTHON")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/.venv/bin/python").to_string());
    let script =
        "import chdb, sys\nsys.stdout.write(str(chdb.query(sys.argv[1], 'TSVWithNamesAndTypes')))";
    let sql = format!("{sql} SETTINGS session_timezone = '{zone}'");
    let output = Command::new(&python)
        .args(["-c", script, &sql])
        .output()
        .expect("running chdb");
    assert!(
        output.status.success(),
        "chdb failed on {sql}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).unwrap();
    let mut lines = text
        .lines()
        .map(|l| l.split('\t').map(unescape).collect::<Vec<_>>());
    let names = lines.next().unwrap();
    let types = lines.next().unwrap();
    (names, types, lines.collect())
}

fn unescape(field: &str) -> String {
    field.replace("\\'", "'").replace("\\\\", "\\")
}

/// Runs `sql` (tables written `numbers_N`) here and in chdb (`numbers(N)`); asserts equal names
/// and values, and equal types but for the columns in `type_differences` (name, ours).
fn agrees(sql: &str, zone: chrono_tz::Tz, type_differences: &[(&str, &str)]) {
    let here = sql.replace("numbers_", "system.numbers_");
    let there = sql.replace("numbers_10", "numbers(10)");
    let (names, types, rows) = ours(&here, &options(zone, 0)).unwrap();
    let (ch_names, ch_types, ch_rows) = chdb(&there, zone.name());
    assert_eq!(names, ch_names, "column names of {sql}");
    assert_eq!(rows, ch_rows, "values of {sql}");
    for ((name, ours), theirs) in names.iter().zip(&types).zip(&ch_types) {
        match type_differences.iter().find(|(n, _)| n == name) {
            Some((_, expected)) => assert_eq!(ours, expected, "type of {name}"),
            None => assert_eq!(ours, theirs, "type of {name} in {sql}"),
        }
    }
}

#[test]
fn aggregates_agree_with_clickhouse() {
    agrees(
        "SELECT count(), count(*), sum(number), avg(number), min(number), max(number), \
         uniqExact(number), countIf(number > 1), quantile(0.5)(number), quantile(number), \
         quantile(0.9)(number) FROM numbers_10",
        chrono_tz::UTC,
        // DataFusion's sum, avg, min and max are nullable (NULL over no rows, where ClickHouse
        // answers the type's default).
        &[
            ("sum(number)", "Nullable(UInt64)"),
            ("avg(number)", "Nullable(Float64)"),
            ("min(number)", "Nullable(UInt64)"),
            ("max(number)", "Nullable(UInt64)"),
            ("quantile(0.5)(number)", "Nullable(Float64)"),
            ("quantile(number)", "Nullable(Float64)"),
            ("quantile(0.9)(number)", "Nullable(Float64)"),
        ],
    );
}

#[test]
fn grouping_and_windows_agree_with_clickhouse() {
    agrees(
        "SELECT number % 3 AS k, count() AS n, sum(number) AS s FROM numbers_10 GROUP BY k ORDER BY k",
        chrono_tz::UTC,
        &[("k", "Decimal(20, 0)"), ("s", "Nullable(UInt64)")],
    );
    agrees(
        "SELECT number, sum(number) OVER (ORDER BY number) AS running FROM numbers_10 \
         WHERE number IN (SELECT number FROM numbers_10 WHERE number > 6) ORDER BY number",
        chrono_tz::UTC,
        &[("running", "Nullable(UInt64)")],
    );
}

#[test]
fn scalar_functions_agree_with_clickhouse() {
    agrees(
        "SELECT formatReadableSize(number * 1000000), formatReadableQuantity(number * 123456), \
         round(number / 4, 1), round(number / 4), if(number > 5, 'big', 'small'), number + 1 \
         FROM numbers_10 ORDER BY number",
        chrono_tz::UTC,
        &[("plus(number, 1)", "Decimal(20, 0)")],
    );
}

#[test]
fn date_time_functions_agree_with_clickhouse_in_the_session_zone() {
    for zone in [
        chrono_tz::UTC,
        chrono_tz::Asia::Tokyo,
        chrono_tz::America::New_York,
    ] {
        agrees(
            "SELECT toDateTime('2024-03-10 12:34:56'), toDateTime(1700000000 + number * 40000), \
             toDate('2024-03-10'), toDate(toDateTime(1700000000 + number * 40000)), \
             toStartOfDay(toDateTime(1700000000 + number * 40000)), toDate(19000) \
             FROM numbers_10 ORDER BY number",
            zone,
            &[],
        );
    }
}

#[test]
fn now_is_a_date_time_of_the_current_second() {
    let before = chrono::Utc::now().timestamp();
    let (names, types, rows) = ours("SELECT now()", &options(chrono_tz::UTC, 0)).unwrap();
    assert_eq!(
        (names, types),
        (vec!["now()".to_string()], vec!["DateTime".to_string()])
    );
    let printed = chrono::NaiveDateTime::parse_from_str(&rows[0][0], "%Y-%m-%d %H:%M:%S").unwrap();
    let seconds = printed.and_utc().timestamp();
    assert!(
        (before..=before + 5).contains(&seconds),
        "{seconds} vs {before}"
    );
}

#[test]
fn reserved_words_are_column_names_and_identifiers_keep_their_case() {
    let utc = options(chrono_tz::UTC, 0);
    let (_, _, rows) = ours(
        "SELECT ref FROM system.tables WHERE table = 'big' AND database = 'db'",
        &utc,
    )
    .unwrap();
    assert_eq!(rows, vec![vec!["main".to_string()]]);
    let error = ours("SELECT Table FROM system.tables", &utc).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::UnknownIdentifier, "{error}");
}

#[test]
fn composite_values_print_as_clickhouse_tsv() {
    let (_, types, rows) = ours(
        "SELECT [1, 2], ['x''y', NULL], named_struct('a', 1, 'b', 'z'), [[1], [2, 3]]",
        &options(chrono_tz::UTC, 0),
    )
    .unwrap();
    assert_eq!(
        rows[0],
        vec!["[1,2]", "['x\\'y',NULL]", "(1,'z')", "[[1],[2,3]]"]
    );
    assert_eq!(types[0], "Array(Nullable(Int64))");
    // DataFusion's struct fields are nullable where ClickHouse's tuple elements are not.
    assert_eq!(types[2], "Tuple(a Nullable(Int64), b Nullable(String))");
}

#[test]
fn errors_carry_clickhouse_kinds() {
    let utc = options(chrono_tz::UTC, 0);
    let kind = |sql: &str| ours(sql, &utc).unwrap_err();
    assert_eq!(
        kind("SELECT nope FROM system.numbers_10").kind(),
        ErrorKind::UnknownIdentifier
    );
    let table = kind("SELECT * FROM system.nope");
    assert_eq!(table.kind(), ErrorKind::UnknownTable);
    assert_eq!(table.message(), "Table system.nope does not exist");
    assert_eq!(kind("SELECT nope(1)").kind(), ErrorKind::UnknownFunction);
    assert_eq!(kind("SELECT FROM WHERE").kind(), ErrorKind::SyntaxError);
    assert_eq!(
        kind("SELECT toDateTime('soon')").kind(),
        ErrorKind::CannotParseDatetime
    );
    assert_eq!(
        kind("SELECT uniq(1)(number) FROM system.numbers_10").kind(),
        ErrorKind::NotImplemented
    );
    let own = Error::new(ErrorKind::UnknownTable, "Table a.b does not exist");
    let carried = datafusion::error::DataFusionError::External(Box::new(own.clone()));
    assert_eq!(to_error(carried), own);
}

#[test]
fn deep_nesting_is_an_error_or_an_answer_never_a_stack_overflow() {
    let utc = options(chrono_tz::UTC, 0);
    let parens = format!("SELECT {}1{}", "(".repeat(10_000), ")".repeat(10_000));
    let error = ours(&parens, &utc).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::TooDeepRecursion, "{error}");
    let ands = format!(
        "SELECT count() FROM system.numbers_10 WHERE {}",
        ["number >= 0"; 10_000].join(" AND ")
    );
    match ours(&ands, &utc) {
        Ok((_, _, rows)) => assert_eq!(rows, vec![vec!["10".to_string()]]),
        Err(error) => assert_eq!(error.kind(), ErrorKind::TooDeepRecursion, "{error}"),
    }
    let shallow = format!("SELECT {}1{}", "(".repeat(100), ")".repeat(100));
    assert_eq!(ours(&shallow, &utc).unwrap().2, vec![vec!["1".to_string()]]);
}

#[test]
fn a_query_outgrowing_max_memory_usage_fails_with_memory_limit_exceeded() {
    let small = options(chrono_tz::UTC, 1 << 20);
    let sql = "SELECT number, count() FROM system.numbers_1000000 GROUP BY number ORDER BY number DESC LIMIT 1";
    let error = ours(sql, &small).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::MemoryLimitExceeded, "{error}");
    assert!(
        error
            .message()
            .starts_with("Memory limit (for query) exceeded"),
        "{error}"
    );
    let (_, _, rows) = ours(sql, &options(chrono_tz::UTC, 0)).unwrap();
    assert_eq!(rows, vec![vec!["999999".to_string(), "1".to_string()]]);
}
