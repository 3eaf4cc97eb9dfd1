//! The embedding API: `Engine` / `Session` on statements that need no real table.

use std::ops::ControlFlow;

use icetrim::FixedClock;
use icetrim::engine::{Engine, handles};
use icetrim::format::{OutputFormat, Value};
use icetrim::internals::sql::parse_statement;
use icetrim::{Error, ErrorKind};

fn names(result: &icetrim::engine::QueryResult) -> Vec<String> {
    result.rows.iter().map(|r| r[0].to_string()).collect()
}

#[tokio::test]
async fn sessions_share_tables_but_not_settings_or_database() {
    let engine = Engine::builder().build().unwrap();
    let mut one = engine.session();
    let mut two = engine.session();
    one.execute(
        "CREATE TABLE db1.a ENGINE = IcebergLocal('/a'); USE db1; SET session_timezone = 'UTC'",
    )
    .await
    .unwrap();
    assert_eq!(one.current_database(), "db1");
    assert_eq!(two.current_database(), "default");
    assert_eq!(one.settings().get_string("session_timezone"), "UTC");
    assert_eq!(two.settings().get_string("session_timezone"), "");
    let shown = two.execute("SHOW TABLES FROM db1").await.unwrap();
    assert_eq!(names(&shown[0]), ["a"]);
    one.execute("CREATE TABLE b ENGINE = IcebergLocal('/b')")
        .await
        .unwrap();
    let shown = two.execute("USE db1; SHOW TABLES").await.unwrap();
    assert_eq!(shown.len(), 2);
    assert_eq!(names(&shown[1]), ["a", "b"]);
}

#[tokio::test]
async fn builder_settings_are_session_defaults_and_validated() {
    let engine = Engine::builder()
        .setting("iceberg_delete_concurrency", "7")
        .setting("allow_iceberg_remove_orphan_files", "false")
        .build()
        .unwrap();
    let session = engine.session();
    assert_eq!(session.settings().get_uint("iceberg_delete_concurrency"), 7);
    assert!(!session.settings().allow_iceberg_remove_orphan_files());
    let error = Engine::builder().setting("nope", "1").build().unwrap_err();
    assert_eq!(error.kind(), ErrorKind::UnknownSetting);
    let error = Engine::builder()
        .setting("iceberg_delete_concurrency", "-1")
        .build()
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::BadArguments);
}

#[tokio::test]
async fn set_is_all_or_nothing() {
    let mut session = Engine::builder().build().unwrap().session();
    let error = session
        .execute("SET iceberg_delete_concurrency = 3, nope = 1")
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::UnknownSetting);
    assert_eq!(
        session.settings().get_uint("iceberg_delete_concurrency"),
        32
    );
}

#[tokio::test]
async fn execute_each_reports_every_statement_and_can_go_on_after_errors() {
    let mut session = Engine::builder().build().unwrap().session();
    let mut seen: Vec<(String, Result<usize, ErrorKind>)> = Vec::new();
    let flow = session
        .execute_each(
            "CREATE TABLE t ENGINE = IcebergLocal('/t');\nUSE nowhere;\nSHOW TABLES",
            |text, result| {
                seen.push((
                    text.to_string(),
                    result.map(|r| r.rows.len()).map_err(|e| e.kind()),
                ));
                ControlFlow::Continue(())
            },
        )
        .await;
    assert_eq!(flow, ControlFlow::Continue(()));
    assert_eq!(
        seen,
        vec![
            ("CREATE TABLE t ENGINE = IcebergLocal('/t')".into(), Ok(0)),
            ("USE nowhere".into(), Err(ErrorKind::UnknownDatabase)),
            ("SHOW TABLES".into(), Ok(1)),
        ]
    );
    let mut count = 0;
    let flow = session
        .execute_each("SHOW TABLES; SHOW TABLES", |_, _| {
            count += 1;
            ControlFlow::Break(())
        })
        .await;
    assert_eq!((flow, count), (ControlFlow::Break(()), 1));
}

#[tokio::test]
async fn execute_stops_at_the_first_error() {
    let mut session = Engine::builder().build().unwrap().session();
    let error = session
        .execute("CREATE TABLE t ENGINE = IcebergLocal('/t'); DROP TABLE u; DROP TABLE t")
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "Code: 60. DB::Exception: Table default.u does not exist. (UNKNOWN_TABLE)"
    );
    let shown = session.execute("SHOW TABLES").await.unwrap();
    assert_eq!(
        names(&shown[0]),
        ["t"],
        "the DROP after the error did not run"
    );
}

#[tokio::test]
async fn syntax_errors_name_the_line_of_the_script() {
    let mut session = Engine::builder().build().unwrap().session();
    let error = session
        .execute("SHOW TABLES;\n\nCREATE TABLE t ENGINE = IcebergLocal(")
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::SyntaxError);
    assert!(error.message().contains("line 3"), "{error}");
}

#[tokio::test]
async fn format_clause_sets_the_result_format() {
    let mut session = Engine::builder().build().unwrap().session();
    let results = session
        .execute("SHOW TABLES FORMAT JSONEachRow; SHOW TABLES")
        .await
        .unwrap();
    assert_eq!(results[0].format, Some(OutputFormat::JsonEachRow));
    assert_eq!(results[1].format, None);
    let statement = parse_statement("SHOW TABLES FORMAT Vertical").unwrap();
    let result = session.execute_statement(&statement).await.unwrap();
    assert_eq!(result.format, Some(OutputFormat::Vertical));
}

#[tokio::test]
async fn alter_checks_table_gates_and_arguments_in_order() {
    let clock = FixedClock::new(1_704_067_200_000 + 3_600_000); // 2024-01-01 01:00 UTC
    let engine = Engine::builder().clock(clock).build().unwrap();
    let mut session = engine.session();
    let kind = |r: Result<_, Error>| r.map(|_: Vec<_>| ()).unwrap_err().kind();
    assert_eq!(
        kind(session.execute("ALTER TABLE t EXECUTE nonsense()").await),
        ErrorKind::UnknownTable
    );
    session
        .execute("CREATE TABLE t ENGINE = IcebergLocal('/nonexistent/icetrim/t')")
        .await
        .unwrap();
    session
        .execute("SET allow_iceberg_remove_orphan_files = 0")
        .await
        .unwrap();
    assert_eq!(
        kind(
            session
                .execute("ALTER TABLE t EXECUTE remove_orphan_files(older_than = 5)")
                .await
        ),
        ErrorKind::SupportIsDisabled
    );
    session
        .execute("SET allow_iceberg_remove_orphan_files = 1")
        .await
        .unwrap();
    let error = session
        .execute("EXPLAIN ALTER TABLE t EXECUTE nonsense()")
        .await
        .unwrap_err();
    assert_eq!(
        error.message(),
        "Unknown EXECUTE command 'nonsense' for Iceberg table"
    );
}

#[tokio::test]
async fn binding_uses_the_engine_clock_and_the_session_time_zone() {
    let clock = FixedClock::new(1_704_067_200_000 + 3_600_000); // 2024-01-01 01:00 UTC
    let engine = Engine::builder().clock(clock.clone()).build().unwrap();
    let mut session = engine.session();
    session
        .execute("CREATE TABLE t ENGINE = IcebergLocal('/nonexistent/icetrim/t')")
        .await
        .unwrap();
    let run = "ALTER TABLE t EXECUTE remove_orphan_files(older_than = '2024-01-01 00:30:00', dry_run = 1)";
    let is_future = |e: &Error| e.message().contains("must not be in the future");
    session
        .execute("SET session_timezone = 'America/New_York'")
        .await
        .unwrap();
    let error = session.execute(run).await.unwrap_err();
    assert!(is_future(&error), "05:30 UTC is after 01:00 UTC: {error}");
    session
        .execute("SET session_timezone = 'UTC'")
        .await
        .unwrap();
    let error = session.execute(run).await.unwrap_err();
    assert!(!is_future(&error), "00:30 UTC is before 01:00 UTC: {error}");
    clock.set(1_704_067_200_000);
    let error = session.execute(run).await.unwrap_err();
    assert!(is_future(&error), "the clock moved back: {error}");
}

#[tokio::test]
async fn data_path_persists_between_engines() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::builder().data_path(dir.path()).build().unwrap();
    engine
        .session()
        .execute("CREATE TABLE t ENGINE = IcebergLocal('/t') SETTINGS iceberg_use_version_hint = 1")
        .await
        .unwrap();
    drop(engine);
    let engine = Engine::builder().data_path(dir.path()).build().unwrap();
    let shown = engine
        .session()
        .execute("SHOW CREATE TABLE t")
        .await
        .unwrap();
    assert_eq!(
        shown[0].rows[0][0],
        Value::Str(
            "CREATE TABLE default.t\nENGINE = IcebergLocal('/t')\nSETTINGS iceberg_use_version_hint = 1"
                .into()
        )
    );
}

#[tokio::test]
async fn try_handle_takes_only_execute_statements() {
    let mut session = Engine::builder().build().unwrap().session();
    assert!(session.try_handle("SELECT 1").await.is_none());
    assert!(
        session
            .try_handle("ALTER TABLE t ADD COLUMN c Int32")
            .await
            .is_none()
    );
    let handled = session
        .try_handle("/* maintenance */ ALTER TABLE t EXECUTE expire_snapshots();")
        .await
        .expect("icetrim's statement");
    assert_eq!(handled.unwrap_err().kind(), ErrorKind::UnknownTable);
    let handled = session
        .try_handle("ALTER TABLE t EXECUTE expire_snapshots(")
        .await
        .expect("malformed, still icetrim's");
    assert_eq!(handled.unwrap_err().kind(), ErrorKind::SyntaxError);
    assert!(handles(
        "EXPLAIN ALTER TABLE `weird name` EXECUTE remove_orphan_files()"
    ));
    assert!(
        !handles("ALTER TABLE t UPDATE execute = 1 WHERE 1"),
        "execute as a column name"
    );
    assert!(!handles("ALTER TABLE t DELETE WHERE `execute` = 1"));
    assert!(!handles(""));
}

#[tokio::test]
async fn show_create_of_an_unknown_table_is_unknown_table() {
    let mut session = Engine::builder().build().unwrap().session();
    let error = session
        .execute("SHOW CREATE TABLE db.nope")
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(
        text.starts_with(
            "Code: 60. DB::Exception: Table db.nope does not exist. Register it first: CREATE \
             TABLE db.nope ENGINE = IcebergLocal('/path/to/table')"
        ) && text.ends_with(". (UNKNOWN_TABLE)"),
        "{text}"
    );
}
