//! The snapshot and ref statements: every DDL form parses, prints canonically and
//! parses back equal; the procedures' argument forms bind; malformed forms fail with the right kind.

use icetrim::ErrorKind;
use icetrim::internals::sql::{Statement, parse_statement};

fn verified(sql: &str, canonical: &str) -> Statement {
    let statement = parse_statement(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    assert_eq!(statement.to_string(), canonical, "printing {sql}");
    let again = parse_statement(canonical).unwrap_or_else(|e| panic!("{canonical}: {e}"));
    assert_eq!(again, statement, "reparsing {canonical}");
    statement
}

fn verified_stmt(sql: &str) -> Statement {
    verified(sql, sql)
}

fn error_kind(sql: &str) -> ErrorKind {
    match parse_statement(sql) {
        Ok(statement) => panic!("{sql} parsed as {statement:?}"),
        Err(e) => e.kind(),
    }
}

#[test]
fn branch_forms_round_trip() {
    verified_stmt("ALTER TABLE t CREATE BRANCH b");
    verified_stmt("ALTER TABLE db.t CREATE BRANCH IF NOT EXISTS b");
    verified_stmt("ALTER TABLE t CREATE OR REPLACE BRANCH b AS OF VERSION 123");
    verified_stmt("ALTER TABLE t REPLACE BRANCH b AS OF VERSION -5");
    verified_stmt("ALTER TABLE t CREATE BRANCH b RETAIN 7 DAYS");
    verified_stmt("ALTER TABLE t CREATE BRANCH b WITH SNAPSHOT RETENTION 3 SNAPSHOTS");
    verified_stmt("ALTER TABLE t CREATE BRANCH b WITH SNAPSHOT RETENTION 2 HOURS");
    verified_stmt(
        "ALTER TABLE t CREATE BRANCH `audit-1` AS OF VERSION 9 RETAIN 30 MINUTES WITH SNAPSHOT \
         RETENTION 3 SNAPSHOTS 2 DAYS",
    );
    verified(
        "alter table t create or replace branch b as of version 1 retain 1 days with snapshot \
         retention 2 snapshots 3 hours;",
        "ALTER TABLE t CREATE OR REPLACE BRANCH b AS OF VERSION 1 RETAIN 1 DAYS WITH SNAPSHOT \
         RETENTION 2 SNAPSHOTS 3 HOURS",
    );
    verified_stmt("EXPLAIN ALTER TABLE t CREATE BRANCH b FORMAT JSON");
}

#[test]
fn tag_drop_and_property_forms_round_trip() {
    verified_stmt("ALTER TABLE t CREATE TAG v1");
    verified_stmt("ALTER TABLE t CREATE TAG IF NOT EXISTS v1 AS OF VERSION 4 RETAIN 365 DAYS");
    verified_stmt("ALTER TABLE t CREATE OR REPLACE TAG v1 RETAIN 2 HOURS");
    verified_stmt("ALTER TABLE t REPLACE TAG v1 AS OF VERSION 8");
    verified_stmt("ALTER TABLE t DROP BRANCH b");
    verified_stmt("ALTER TABLE t DROP BRANCH IF EXISTS b");
    verified_stmt("ALTER TABLE t DROP TAG IF EXISTS `select`");
    verified_stmt(
        "ALTER TABLE t SET TBLPROPERTIES ('history.expire.max-snapshot-age-ms' = '259200000', \
         'k' = 'it\\'s')",
    );
    verified(
        "ALTER TABLE t SET TBLPROPERTIES ('a'=1, 'b'=TRUE)",
        "ALTER TABLE t SET TBLPROPERTIES ('a' = '1', 'b' = 'true')",
    );
    verified_stmt("ALTER TABLE t UNSET TBLPROPERTIES ('a', 'b')");
    verified_stmt("ALTER TABLE t UNSET TBLPROPERTIES IF EXISTS ('a')");
    verified_stmt("EXPLAIN ALTER TABLE t UNSET TBLPROPERTIES IF EXISTS ('a')");
}

#[test]
fn procedure_forms_round_trip() {
    for sql in [
        "ALTER TABLE t EXECUTE rollback_to_snapshot(123)",
        "ALTER TABLE t EXECUTE rollback_to_snapshot(snapshot_id = 123)",
        "ALTER TABLE t EXECUTE rollback_to_timestamp('2026-11-01 00:00:00')",
        "ALTER TABLE t EXECUTE set_current_snapshot(snapshot_id = 5)",
        "ALTER TABLE t EXECUTE set_current_snapshot(ref = 'audit')",
        "ALTER TABLE t EXECUTE fast_forward('main', 'audit')",
        "ALTER TABLE t EXECUTE fast_forward(branch = 'main', to = 'audit')",
        "ALTER TABLE t EXECUTE cherrypick_snapshot(42)",
        "ALTER TABLE t EXECUTE publish_changes('wap-1')",
        "ALTER TABLE t EXECUTE publish_changes(wap_id = 'wap-1')",
        "EXPLAIN ALTER TABLE t EXECUTE cherrypick_snapshot(snapshot_id = 42)",
    ] {
        verified_stmt(sql);
    }
}

#[test]
fn malformed_forms_fail() {
    for sql in [
        // Spark's grammar: OR REPLACE and IF NOT EXISTS do not combine.
        "ALTER TABLE t CREATE OR REPLACE BRANCH IF NOT EXISTS b",
        "ALTER TABLE t CREATE BRANCH",
        "ALTER TABLE t CREATE BRANCH b AS OF VERSION 'x'",
        "ALTER TABLE t CREATE BRANCH b AS OF VERSION 1.5",
        "ALTER TABLE t CREATE BRANCH b RETAIN 3 WEEKS",
        "ALTER TABLE t CREATE BRANCH b RETAIN DAYS",
        "ALTER TABLE t CREATE BRANCH b WITH SNAPSHOT RETENTION",
        "ALTER TABLE t CREATE TAG v WITH SNAPSHOT RETENTION 2 SNAPSHOTS",
        "ALTER TABLE t DROP BRANCH",
        "ALTER TABLE t DROP TAG IF v",
        "ALTER TABLE t SET TBLPROPERTIES ()",
        "ALTER TABLE t SET TBLPROPERTIES (k = 'v')",
        "ALTER TABLE t SET TBLPROPERTIES ('k')",
        "ALTER TABLE t UNSET TBLPROPERTIES 'k'",
        "ALTER TABLE t CREATE BRANCH b FORMAT JSON",
        "ALTER TABLE t CREATE BRANCH b extra",
    ] {
        assert_eq!(error_kind(sql), ErrorKind::SyntaxError, "{sql}");
    }
    // A foreign ALTER stays foreign.
    assert_eq!(
        error_kind("ALTER TABLE t DROP COLUMN c"),
        ErrorKind::NotImplemented
    );
}

mod props {
    use icetrim::internals::plan::TimeUnit;
    use icetrim::internals::sql::{AlterAction, AlterTable, Statement, TableName, parse_statement};
    use icetrim::{CreateMode, RefType};
    use proptest::prelude::*;

    fn name() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z_][a-z0-9_]{0,8}",
            "[a-zA-Z0-9 .`'-]{1,10}",
            Just("select".to_string()),
            Just("main".to_string()),
        ]
    }

    fn unit() -> impl Strategy<Value = TimeUnit> {
        prop_oneof![
            Just(TimeUnit::Days),
            Just(TimeUnit::Hours),
            Just(TimeUnit::Minutes)
        ]
    }

    fn kind() -> impl Strategy<Value = RefType> {
        prop_oneof![Just(RefType::Branch), Just(RefType::Tag)]
    }

    fn mode() -> impl Strategy<Value = CreateMode> {
        prop_oneof![
            Just(CreateMode::Create),
            Just(CreateMode::CreateIfNotExists),
            Just(CreateMode::Replace),
            Just(CreateMode::CreateOrReplace),
        ]
    }

    fn action() -> impl Strategy<Value = AlterAction> {
        let put = (
            kind(),
            mode(),
            name(),
            proptest::option::of(any::<i64>()),
            proptest::option::of((any::<u64>(), unit())),
            proptest::option::of(any::<u64>()),
            proptest::option::of((any::<u64>(), unit())),
        )
            .prop_map(|(kind, mode, name, as_of, retain, min, age)| {
                let branch = kind == RefType::Branch;
                AlterAction::PutRef {
                    kind,
                    mode,
                    name,
                    as_of,
                    retain,
                    min_snapshots: min.filter(|_| branch),
                    snapshot_age: age.filter(|_| branch),
                }
            });
        let drop = (kind(), name(), any::<bool>()).prop_map(|(kind, name, if_exists)| {
            AlterAction::DropRef {
                kind,
                name,
                if_exists,
            }
        });
        let set = proptest::collection::vec(("\\PC{0,8}", "\\PC{0,8}"), 1..4)
            .prop_map(AlterAction::SetProperties);
        let unset = (any::<bool>(), proptest::collection::vec("\\PC{0,8}", 1..4))
            .prop_map(|(if_exists, keys)| AlterAction::UnsetProperties { if_exists, keys });
        prop_oneof![put, drop, set, unset]
    }

    proptest! {
        /// Every tree prints as text that parses back to the same tree.
        #[test]
        fn every_ref_statement_round_trips(action in action(), db in proptest::option::of(name()), explain in any::<bool>()) {
            let alter = AlterTable {
                table: TableName { database: db, table: "t".into() },
                action,
                format: None,
            };
            let statement = if explain {
                Statement::Explain(Box::new(Statement::AlterTable(alter)))
            } else {
                Statement::AlterTable(alter)
            };
            let text = statement.to_string();
            let parsed = parse_statement(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
            prop_assert_eq!(parsed, statement, "{}", text);
        }
    }
}
