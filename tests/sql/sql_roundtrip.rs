//! Every syntax form parses, prints canonically and parses back to an equal tree
//! (sqlparser-style `verified_stmt`), and malformed or foreign statements fail with the right kind.

use icetrim::ErrorKind;
use icetrim::internals::sql::{
    ArgValue, EngineArg, EngineName, Literal, Statement, parse_statement, parse_statement_at,
};

/// Parses `sql`, demands that it prints as `canonical`, and that the canonical text parses back to
/// an equal statement.
fn verified(sql: &str, canonical: &str) -> Statement {
    let statement = parse_statement(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    assert_eq!(statement.to_string(), canonical, "printing {sql}");
    let again = parse_statement(canonical).unwrap_or_else(|e| panic!("{canonical}: {e}"));
    assert_eq!(again, statement, "reparsing {canonical}");
    statement
}

/// A statement already in canonical form.
fn verified_stmt(sql: &str) -> Statement {
    verified(sql, sql)
}

fn error_of(sql: &str) -> icetrim::Error {
    match parse_statement(sql) {
        Ok(statement) => panic!("{sql} parsed as {statement:?}"),
        Err(e) => e,
    }
}

#[test]
fn alter_execute_forms() {
    verified_stmt("ALTER TABLE t EXECUTE expire_snapshots()");
    verified_stmt("ALTER TABLE db.t EXECUTE remove_orphan_files(dry_run = 1)");
    verified_stmt(
        "ALTER TABLE t EXECUTE expire_snapshots('2024-06-01 00:00:00', retention_period = '3d', \
         retain_last = 10, snapshot_ids = [1, -2, 3], dry_run = true)",
    );
    verified(
        "alter table `db`.`t` execute expire_snapshots(expire_before => '2024-06-01', dry_run=>1);",
        "ALTER TABLE db.t EXECUTE expire_snapshots(expire_before = '2024-06-01', dry_run = 1)",
    );
    verified(
        "ALTER TABLE `select` EXECUTE expire_snapshots(x = - 5, y = NULL, z = (1, 'a'), w = [])",
        "ALTER TABLE `select` EXECUTE expire_snapshots(x = -5, y = NULL, z = (1, 'a'), w = [])",
    );
    verified_stmt("ALTER TABLE t EXECUTE expire_snapshots() FORMAT JSON");
    verified_stmt(
        "EXPLAIN ALTER TABLE t EXECUTE remove_orphan_files(location = 'data') FORMAT TSV",
    );
}

#[test]
fn optimize_forms() {
    verified_stmt("OPTIMIZE TABLE t");
    verified("optimize table `db`.`t`;", "OPTIMIZE TABLE db.t");
    verified_stmt("OPTIMIZE TABLE t FORMAT JSONEachRow");
    verified_stmt("EXPLAIN OPTIMIZE TABLE db.t");
    verified_stmt("EXPLAIN OPTIMIZE TABLE t FORMAT TSV");
    verified_stmt(
        "ALTER TABLE t EXECUTE rewrite_data_files(`where` = 'a = 1 AND b IN (\\'x\\')', \
         min_input_files = 2, dry_run = 1)",
    );
    let e = error_of("OPTIMIZE TABLE t PARTITION 1");
    assert_eq!(e.kind(), ErrorKind::NotImplemented, "{e}");
}

#[test]
fn arguments_keep_names_and_values() {
    let Statement::AlterExecute(alter) = verified_stmt(
        "ALTER TABLE t EXECUTE expire_snapshots('2024-06-01', dry_run = 1, x = now(), y = [now()])",
    ) else {
        panic!("not an ALTER");
    };
    assert_eq!(alter.procedure, "expire_snapshots");
    assert_eq!(alter.args[0].name, None);
    assert_eq!(
        alter.args[0].value,
        ArgValue::Literal(Literal::String("2024-06-01".into()))
    );
    assert_eq!(alter.args[1].name.as_deref(), Some("dry_run"));
    assert_eq!(alter.args[2].value, ArgValue::Expr("now()".into()));
    assert_eq!(alter.args[3].value, ArgValue::Expr("[now()]".into()));
}

#[test]
fn strings_with_quotes_and_backslashes_round_trip() {
    let Statement::Set(settings) = verified(
        r"SET session_timezone = 'it''s', x = 'a\'b\\c'",
        r"SET session_timezone = 'it\'s', x = 'a\'b\\c'",
    ) else {
        panic!("not a SET");
    };
    assert_eq!(settings[0].1, Literal::String("it's".into()));
    assert_eq!(settings[1].1, Literal::String("a'b\\c".into()));
}

#[test]
fn create_table_forms() {
    verified_stmt("CREATE TABLE t ENGINE = IcebergLocal('/data/t')");
    let Statement::CreateTable(create) = verified(
        "create table if not exists db.t (id Int64, name Nullable(String)) \
         engine = IcebergS3('http://127.0.0.1:9000/b/t', NOSIGN) \
         settings iceberg_use_version_hint = 1, iceberg_metadata_file_path = 'metadata/v3.metadata.json'",
        "CREATE TABLE IF NOT EXISTS db.t (id Int64, name Nullable(String)) \
         ENGINE = IcebergS3('http://127.0.0.1:9000/b/t', NOSIGN) \
         SETTINGS iceberg_use_version_hint = 1, iceberg_metadata_file_path = 'metadata/v3.metadata.json'",
    ) else {
        panic!("not a CREATE");
    };
    assert!(create.if_not_exists);
    assert_eq!(create.engine.name, EngineName::IcebergS3);
    assert_eq!(create.engine.args[1], EngineArg::NoSign);
    assert_eq!(create.columns.as_ref().map(Vec::len), Some(2));
    verified_stmt(
        "CREATE TABLE t ENGINE = IcebergAzure('DefaultEndpointsProtocol=http', 'c', 'p/t', 'acct', 'key')",
    );
}

#[test]
fn other_statement_forms() {
    verified_stmt("DROP TABLE t");
    verified("drop table if exists db.t;", "DROP TABLE IF EXISTS db.t");
    verified_stmt("SHOW TABLES");
    verified("SHOW TABLES IN db", "SHOW TABLES FROM db");
    verified_stmt("SHOW TABLES FROM db FORMAT Vertical");
    verified_stmt("SHOW CREATE TABLE db.t");
    verified_stmt("SHOW CREATE TABLE t FORMAT TSVRaw");
    verified_stmt("USE db");
    let Statement::Set(settings) = verified(
        "set allow_insert_into_iceberg = 0, session_timezone = 'UTC'",
        "SET allow_insert_into_iceberg = 0, session_timezone = 'UTC'",
    ) else {
        panic!("not a SET");
    };
    assert_eq!(
        settings.len(),
        2,
        "sqlparser's ClickHouse dialect would read one"
    );
}

#[test]
fn select_forms() {
    verified_stmt("SELECT * FROM system.iceberg_history");
    let Statement::Select(select) = verified(
        "select snapshot_id, `table` from system.iceberg_snapshots where `table` = 't' \
         order by snapshot_id limit 10 format JSONEachRow;",
        "select snapshot_id, `table` from system.iceberg_snapshots where `table` = 't' \
         order by snapshot_id limit 10 FORMAT JSONEachRow",
    ) else {
        panic!("not a SELECT");
    };
    assert_eq!(
        select.text,
        "select snapshot_id, `table` from system.iceberg_snapshots where `table` = 't' \
         order by snapshot_id limit 10"
    );
    assert_eq!(select.format.as_deref(), Some("JSONEachRow"));
}

/// Any query is kept whole for the query engine, which parses and plans it: the front end only
/// takes off `FORMAT`.
#[test]
fn every_query_form_is_kept_as_written() {
    for sql in [
        "SELECT count() FROM system.iceberg_history",
        "SELECT a AS b FROM system.iceberg_history",
        "SELECT DISTINCT a FROM system.iceberg_history",
        "SELECT a FROM system.iceberg_history WHERE a = 1 OR b = 2",
        "SELECT a FROM system.iceberg_history GROUP BY a",
        "SELECT a FROM system.iceberg_history LIMIT 1 OFFSET 2",
        "SELECT a FROM system.iceberg_history, system.iceberg_refs",
        "SELECT 1",
        "SELECT quantile(0.5)(a) FROM system.iceberg_history SETTINGS max_threads = 1",
        "SELECT a FROM system.iceberg_history UNION ALL SELECT a FROM system.iceberg_refs",
        "WITH x AS (SELECT 1 AS a) SELECT a FROM x",
    ] {
        let Ok(Statement::Select(select)) = parse_statement(sql) else {
            panic!("{sql}: not a SELECT");
        };
        assert_eq!(select.text, sql);
        assert_eq!(select.format, None);
    }
}

/// One trailing `;` ends a query; anything after it is a second statement, which one statement's
/// parse refuses (a script's splitter cuts statements apart before they get here).
#[test]
fn a_query_ends_at_its_semicolon() {
    let Ok(Statement::Select(select)) = parse_statement("SELECT 1 ;") else {
        panic!("not a SELECT");
    };
    assert_eq!(select.text, "SELECT 1");
    for sql in ["SELECT 1;;", "SELECT 1; SELECT 2", "EXPLAIN SELECT 1 ; ;"] {
        let e = error_of(sql);
        assert_eq!(e.kind(), ErrorKind::SyntaxError, "{sql}: {e}");
        assert!(
            e.message().contains("Expected: end of statement, found: ;"),
            "{sql}: {e}"
        );
    }
}

#[test]
fn foreign_statements_are_not_implemented() {
    for (sql, kind) in [
        ("INSERT INTO t VALUES (1)", "INSERT INTO"),
        ("ALTER TABLE t ADD COLUMN c Int64", "ALTER TABLE"),
        ("CREATE VIEW v AS SELECT 1", "CREATE VIEW"),
        ("DELETE FROM t WHERE a = 1", "DELETE FROM"),
        ("OPTIMIZE TABLE t FINAL", "OPTIMIZE TABLE"),
    ] {
        let e = error_of(sql);
        assert_eq!(e.kind(), ErrorKind::NotImplemented, "{sql}: {e}");
        assert_eq!(
            e.message(),
            format!("Statement {kind} is not supported by icetrim"),
            "{sql}"
        );
    }
    let e = error_of("CREATE TABLE t (id Int64) ENGINE = MergeTree ORDER BY id");
    assert_eq!(e.kind(), ErrorKind::NotImplemented);
    assert!(
        e.message().contains("Engine MergeTree is not supported"),
        "{e}"
    );
}

#[test]
fn syntax_errors_carry_position_line_and_column() {
    let e = error_of("ALTER TABLE t EXECUTE expire_snapshots(dry_run = 1");
    assert_eq!(e.kind(), ErrorKind::SyntaxError);
    assert!(
        e.message()
            .starts_with("Syntax error: failed at position 51 (line 1, col 51): "),
        "{e}"
    );
    let e = error_of("ALTER TABLE t EXECUTE expire_snapshots(dry_run = 1))");
    assert!(
        e.message()
            .starts_with("Syntax error: failed at position 52 (line 1, col 52): "),
        "{e}"
    );
    let e = match parse_statement_at("SET a = 1,\n  b = ", 7) {
        Err(e) => e,
        Ok(s) => panic!("parsed {s:?}"),
    };
    assert!(e.message().contains("(line 8, col "), "{e}");
    for sql in [
        "FOO BAR",
        "SET a",
        "SET a = now()",
        "USE",
        "DROP TABLE",
        "SHOW TABLES FROM",
        "CREATE TABLE t ENGINE = IcebergLocal(now())",
        "CREATE TABLE t ENGINE = IcebergLocal",
        "ALTER TABLE t EXECUTE",
        "ALTER TABLE t EXECUTE expire_snapshots",
        "SET a = 'unterminated",
        "USE db FORMAT JSON",
        "",
        " ; ",
    ] {
        assert_eq!(error_of(sql).kind(), ErrorKind::SyntaxError, "{sql}");
    }
}

#[test]
fn two_execute_clauses_are_prohibited() {
    let e = error_of("ALTER TABLE t EXECUTE expire_snapshots(), EXECUTE remove_orphan_files()");
    assert_eq!(e.kind(), ErrorKind::QueryIsProhibited);
    assert_eq!(e.code(), 392);
    assert_eq!(e.message(), "Execute commands should not be combined");
}

/// Every sqlparser keyword, in every position icetrim prints an identifier, must print so that it
/// parses back to the same statement.
#[test]
fn every_keyword_round_trips_as_an_identifier() {
    use icetrim::internals::sql::{AlterExecute, Arg, Select, TableName};
    let mut failures = Vec::new();
    for keyword in sqlparser::keywords::ALL_KEYWORDS {
        for word in [keyword.to_string(), keyword.to_ascii_lowercase()] {
            let alter = Statement::AlterExecute(AlterExecute {
                table: TableName {
                    database: Some(word.clone()),
                    table: word.clone(),
                },
                procedure: word.clone(),
                args: vec![Arg {
                    name: Some(word.clone()),
                    value: ArgValue::Literal(Literal::Number("1".into())),
                }],
                format: Some(word.clone()),
            });
            let select = Statement::Select(Select {
                text: format!(
                    "SELECT `{0}`, x FROM system.iceberg_history WHERE `{0}` = 1",
                    word.replace('`', "``")
                ),
                format: Some(word.clone()),
            });
            let others = [
                Statement::Use(word.clone()),
                Statement::Set(vec![(word.clone(), Literal::Bool(true))]),
                Statement::ShowTables {
                    from_db: Some(word.clone()),
                    format: None,
                },
                Statement::DropTable {
                    if_exists: false,
                    name: TableName {
                        database: None,
                        table: word.clone(),
                    },
                },
            ];
            for statement in [alter, select].into_iter().chain(others) {
                let text = statement.to_string();
                match parse_statement(&text) {
                    Ok(again) if again == statement => {}
                    Ok(_) => failures.push(format!("{keyword}: {text} reparses differently")),
                    Err(e) => failures.push(format!("{keyword}: {text}: {e}")),
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn user_and_grant_forms() {
    verified(
        "create user if not exists ops, `odd-name`",
        "CREATE USER IF NOT EXISTS ops, `odd-name`",
    );
    verified("CREATE USER 'ops'", "CREATE USER ops");
    verified_stmt("DROP USER IF EXISTS ops");
    verified_stmt("DROP USER a, b");
    verified(
        "grant alter table execute, optimize on db.t to ops, dev with grant option",
        "GRANT ALTER TABLE EXECUTE, OPTIMIZE ON db.t TO ops, dev WITH GRANT OPTION",
    );
    verified_stmt("GRANT ALTER EXECUTE ON db.* TO ops");
    verified_stmt("GRANT ALL ON *.* TO ops");
    verified_stmt("GRANT SELECT ON * TO ops");
    verified_stmt("GRANT SHOW TABLES ON t TO ops");
    verified_stmt("REVOKE ALTER TABLE ON db.t FROM ops");
    verified(
        "revoke grant option for optimize on *.* from ops",
        "REVOKE GRANT OPTION FOR OPTIMIZE ON *.* FROM ops",
    );
    verified_stmt("SHOW GRANTS");
    verified_stmt("SHOW GRANTS FOR ops FORMAT TSV");
    verified_stmt("SHOW USERS");
    for bad in [
        "GRANT ON db.t TO u",
        "GRANT SELECT db.t TO u",
        "GRANT SELECT ON db.t",
        "GRANT SELECT, ON db.t TO u",
        "REVOKE SELECT ON db.t TO u",
        "CREATE USER",
        "GRANT SELECT ON db.t TO u WITH",
    ] {
        assert_eq!(error_of(bad).kind(), ErrorKind::SyntaxError, "{bad}");
    }
}
