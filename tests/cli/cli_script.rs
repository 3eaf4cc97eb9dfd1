//! The `icetrim` binary in script mode: piped standard input and `-q`, on statements that need no
//! real table (settings, the registry, formats, errors and exit codes, broken pipes, `--path`).

use std::io::{Read, Write};
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_icetrim");

/// Runs icetrim with `args`, `stdin` piped in.
fn run(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .env_remove("NO_COLOR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("icetrim starts");
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(stdin.as_bytes())
        .expect("script written");
    child.wait_with_output().expect("icetrim finishes")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("utf-8 output")
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).expect("utf-8 errors")
}

fn query(sql: &str) -> Output {
    run(&["-q", sql], "")
}

const CREATE: &str = "CREATE TABLE t (id Int64, name String) ENGINE = IcebergLocal('/tmp/x');";

#[test]
fn piped_script_runs_in_order_and_prints_tab_separated() {
    let script = format!(
        "-- a comment\nSET session_timezone = 'UTC', iceberg_delete_concurrency = 8;\n{CREATE}\n\
         CREATE TABLE db2.z ENGINE = IcebergS3('s3://b/z/', NOSIGN);\n\
         CREATE TABLE a ENGINE = IcebergLocal('/tmp/a');\nSHOW TABLES;\nSHOW TABLES FROM db2;\n\
         USE db2; SHOW TABLES; DROP TABLE z; DROP TABLE IF EXISTS z; USE default; SHOW TABLES"
    );
    let output = run(&[], &script);
    assert_eq!(stderr(&output), "");
    assert!(output.status.success());
    assert_eq!(stdout(&output), "a\nt\nz\nz\na\nt\n");
}

#[test]
fn first_error_stops_the_script_with_its_code() {
    let output = run(&[], &format!("{CREATE} SET nope = 1; SHOW TABLES;"));
    assert_eq!(
        stderr(&output),
        "Code: 115. DB::Exception: Unknown setting 'nope'. (UNKNOWN_SETTING)\n\
         (at line 1: SET nope = 1)\n"
    );
    assert_eq!(
        stdout(&output),
        "",
        "SHOW TABLES after the error did not run"
    );
    assert_eq!(output.status.code(), Some(115));
}

#[test]
fn error_codes_for_common_mistakes() {
    let cases: [(&str, i32, &str); 7] = [
        (
            "ALTER TABLE nope EXECUTE expire_snapshots()",
            60,
            "Code: 60. DB::Exception: Table default.nope does not exist. Register it first: \
             CREATE TABLE default.nope ENGINE = IcebergLocal('/path/to/table')",
        ),
        (
            "USE nodb",
            81,
            "Code: 81. DB::Exception: Database nodb does not exist. (UNKNOWN_DATABASE)",
        ),
        ("SHOW TABLES FORMAT Parquet", 73, "(UNKNOWN_FORMAT)"),
        (
            "ALTER TABLE t EXECUTE expire_snapshots(",
            62,
            "(SYNTAX_ERROR)",
        ),
        ("SET allow_insert_into_iceberg = 2", 36, "(BAD_ARGUMENTS)"),
        ("DROP TABLE t", 60, "Table default.t does not exist"),
        (
            "CREATE TABLE t ENGINE = IcebergLocal('/a'); CREATE TABLE t ENGINE = IcebergLocal('/a')",
            57,
            "Code: 57. DB::Exception: Table default.t already exists. (TABLE_ALREADY_EXISTS)",
        ),
    ];
    for (sql, code, text) in cases {
        let output = query(sql);
        assert_eq!(output.status.code(), Some(code), "{sql}");
        let err = stderr(&output);
        assert!(
            err.starts_with(&format!("Code: {code}. DB::Exception: ")),
            "{err}"
        );
        assert!(err.contains(text), "{sql}: {err}");
        assert!(
            !err.contains("\x1b["),
            "no colour when stderr is not a terminal"
        );
    }
}

#[test]
fn exit_status_is_the_code_modulo_256() {
    let output = query(
        "SET allow_insert_into_iceberg = 0; CREATE TABLE t ENGINE = IcebergLocal('/a'); \
         ALTER TABLE t EXECUTE expire_snapshots()",
    );
    assert!(
        stderr(&output).contains("Code: 344."),
        "{}",
        stderr(&output)
    );
    assert_eq!(output.status.code(), Some(344 % 256));
}

#[test]
fn arguments_are_checked_before_any_io() {
    let output = query(
        "CREATE TABLE t ENGINE = IcebergLocal('/nonexistent/dir'); \
         ALTER TABLE t EXECUTE expire_snapshots(retention_period = '3D')",
    );
    assert_eq!(output.status.code(), Some(36));
    assert!(
        stderr(&output).contains("invalid duration '3D' for 'retention_period'"),
        "{}",
        stderr(&output)
    );
    let output =
        query("CREATE TABLE t ENGINE = IcebergLocal('/a'); ALTER TABLE t EXECUTE optimize()");
    assert!(
        stderr(&output).contains("Unknown EXECUTE command 'optimize' for Iceberg table"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn ignore_error_goes_on_and_reports_the_last_error() {
    let output = run(
        &["--ignore-error"],
        "SET nope = 1; CREATE TABLE t ENGINE = IcebergLocal('/a'); USE nodb; SHOW TABLES;",
    );
    assert_eq!(stdout(&output), "t\n");
    let err = stderr(&output);
    assert_eq!(
        err.lines().count(),
        4,
        "each error and its statement's line: {err}"
    );
    assert!(err.contains("(UNKNOWN_SETTING)") && err.contains("(UNKNOWN_DATABASE)"));
    assert_eq!(output.status.code(), Some(81));
    let output = run(&["-n"], "SET nope = 1; SHOW TABLES");
    assert_eq!(output.status.code(), Some(115));
    assert_eq!(
        stdout(&output),
        "",
        "-n is --multiquery: it stops at the error"
    );
}

#[test]
fn show_create_table_masks_secrets() {
    let output = query(
        "CREATE TABLE s ENGINE = IcebergS3('https://b.s3.amazonaws.com/t/', 'AKIA1', 'very-secret', 'tok3n');\
         CREATE TABLE az ENGINE = IcebergAzure('DefaultEndpointsProtocol=https;AccountName=acc;AccountKey=k3y==;', 'c', 't/', 'acc', 'k3y2==');\
         SHOW CREATE TABLE s FORMAT TSVRaw; SHOW CREATE TABLE az FORMAT Vertical",
    );
    // TSVRaw is not a format icetrim prints: the error comes first, nothing leaks.
    assert_eq!(output.status.code(), Some(73));
    let output = query(
        "CREATE TABLE s ENGINE = IcebergS3('https://b.s3.amazonaws.com/t/', 'AKIA1', 'very-secret', 'tok3n');\
         CREATE TABLE az ENGINE = IcebergAzure('DefaultEndpointsProtocol=https;AccountName=acc;AccountKey=k3y==;', 'c', 't/', 'acc', 'k3y2==');\
         SHOW CREATE TABLE s; SHOW CREATE TABLE az FORMAT Vertical",
    );
    let out = stdout(&output);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!out.contains("very-secret") && !out.contains("tok3n") && !out.contains("k3y"));
    assert!(out.starts_with(
        "CREATE TABLE default.s\\nENGINE = IcebergS3(\\'https://b.s3.amazonaws.com/t/\\', \\'AKIA1\\', \\'[HIDDEN]\\', \\'[HIDDEN]\\')\n"
    ));
    assert!(
        out.contains("AccountKey=[HIDDEN];', 'c', 't/', 'acc', '[HIDDEN]')"),
        "{out}"
    );
}

#[test]
fn every_format_by_clause_and_by_flag() {
    let setup = "CREATE TABLE t ENGINE = IcebergLocal('/a'); CREATE TABLE `u v` ENGINE = IcebergLocal('/b');";
    let expected = [
        ("TabSeparated", "t\nu v\n"),
        ("TSV", "t\nu v\n"),
        ("TabSeparatedWithNames", "name\nt\nu v\n"),
        ("CSV", "\"t\"\n\"u v\"\n"),
        ("CSVWithNames", "\"name\"\n\"t\"\n\"u v\"\n"),
        ("JSONEachRow", "{\"name\":\"t\"}\n{\"name\":\"u v\"}\n"),
        (
            "Vertical",
            "Row 1:\n──────\nname: t\n\nRow 2:\n──────\nname: u v\n",
        ),
        (
            "PrettyCompact",
            "   ┌─name─┐\n1. │ t    │\n2. │ u v  │\n   └──────┘\n",
        ),
    ];
    for (format, text) in expected {
        let by_clause = query(&format!("{setup} SHOW TABLES FORMAT {format}"));
        assert_eq!(stdout(&by_clause), text, "FORMAT {format}");
        let by_flag = run(
            &["--format", format, "-q", &format!("{setup} SHOW TABLES")],
            "",
        );
        assert_eq!(stdout(&by_flag), text, "--format {format}");
    }
    let clause_wins = run(
        &[
            "-f",
            "CSV",
            "-q",
            &format!("{setup} SHOW TABLES FORMAT TSV"),
        ],
        "",
    );
    assert_eq!(stdout(&clause_wins), "t\nu v\n");
    for format in ["Pretty", "JSON"] {
        let output = query(&format!("{setup} SHOW TABLES FORMAT {format}"));
        assert!(output.status.success());
        assert!(stdout(&output).contains("u v"), "{format}");
    }
    let json = stdout(&query(&format!("{setup} SHOW TABLES FORMAT JSON")));
    assert!(json.contains("\"rows\": 2"), "{json}");
}

#[test]
fn time_prints_elapsed_seconds_per_statement() {
    let output = run(&["--time"], "SET session_timezone = 'UTC'; SHOW TABLES;");
    let err = stderr(&output);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    for line in lines {
        let seconds: f64 = line.parse().expect("seconds");
        assert!((0.0..5.0).contains(&seconds));
        assert_eq!(line.split('.').nth(1).map(str::len), Some(3), "{line}");
    }
}

#[test]
fn broken_pipe_is_a_clean_exit() {
    let long = "x".repeat(200);
    let mut script = String::new();
    for i in 0..50 {
        script.push_str(&format!(
            "CREATE TABLE t{i}_{long} ENGINE = IcebergLocal('/a');\n"
        ));
    }
    for _ in 0..100 {
        script.push_str("SHOW TABLES;\n");
    }
    let mut child = Command::new(BIN)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("icetrim starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(script.as_bytes())
        .expect("script written");
    let mut first = [0u8; 1];
    let mut out = child.stdout.take().expect("stdout");
    out.read_exact(&mut first).expect("one byte");
    drop(out);
    let output = child.wait_with_output().expect("icetrim finishes");
    assert_eq!(first[0], b't');
    assert_eq!(stderr(&output), "", "no panic, no message");
    assert_eq!(output.status.code(), Some(0));
}

#[test]
fn path_persists_tables_across_runs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().to_str().expect("utf-8 path");
    let first = run(
        &[
            "--path",
            path,
            "-q",
            "CREATE TABLE db1.keep ENGINE = IcebergS3('s3://b/k/', 'AK', 'SK')",
        ],
        "",
    );
    assert!(first.status.success(), "{}", stderr(&first));
    let second = run(
        &["--path", path],
        "USE db1; SHOW TABLES; SHOW CREATE TABLE keep",
    );
    assert_eq!(
        stdout(&second),
        "keep\nCREATE TABLE db1.keep\\nENGINE = IcebergS3(\\'s3://b/k/\\', \\'AK\\', \\'[HIDDEN]\\')\n"
    );
    let third = run(&["--path", path], "DROP TABLE db1.keep");
    assert!(third.status.success());
    let fourth = run(&["--path", path], "SHOW TABLES FROM db1");
    assert_eq!(
        fourth.status.code(),
        Some(81),
        "db1 is gone with its last table"
    );
    let memory = run(&[], "SHOW TABLES FROM db1");
    assert_eq!(memory.status.code(), Some(81));
}

#[test]
fn version_and_help() {
    let version = Command::new(BIN).arg("--version").output().expect("runs");
    assert_eq!(
        String::from_utf8_lossy(&version.stdout),
        format!("icetrim {}\n", env!("CARGO_PKG_VERSION"))
    );
    let help = Command::new(BIN).arg("--help").output().expect("runs");
    let text = String::from_utf8_lossy(&help.stdout);
    for flag in [
        "--query",
        "--format",
        "--path",
        "--time",
        "--ignore-error",
        "--progress",
    ] {
        assert!(text.contains(flag), "{flag} in --help");
    }
    assert!(text.contains("Examples:"));
    let bad = Command::new(BIN)
        .arg("--no-such-flag")
        .output()
        .expect("runs");
    assert_eq!(
        String::from_utf8_lossy(&bad.stderr),
        "Code: 552. DB::Exception: Unrecognized option '--no-such-flag'. (UNRECOGNIZED_ARGUMENTS)\n"
    );
    assert_eq!(bad.status.code(), Some(552 % 256));
}

#[test]
fn empty_input_does_nothing() {
    let output = run(&[], "  -- nothing here\n;;\n");
    assert!(output.status.success());
    assert_eq!(stdout(&output), "");
    assert_eq!(stderr(&output), "");
}

#[test]
fn empty_results_print_as_clickhouse_prints_them() {
    let expected = [
        ("PrettyCompact", ""),
        ("Pretty", ""),
        ("Vertical", ""),
        ("JSONEachRow", ""),
        ("TabSeparated", ""),
        ("TabSeparatedWithNames", "name\n"),
        ("CSVWithNames", "\"name\"\n"),
    ];
    for (format, text) in expected {
        let output = query(&format!("SHOW TABLES FORMAT {format}"));
        assert!(output.status.success());
        assert_eq!(stdout(&output), text, "{format}");
    }
}

#[test]
fn query_parameters_from_the_command_line_and_from_set() {
    let output = run(
        &[
            "--param_path=/tmp/it's",
            "--param_n",
            "4",
            "-q",
            "CREATE TABLE t ENGINE = IcebergLocal({path:String}); \
             SET iceberg_delete_concurrency = {n:UInt8}; SHOW CREATE TABLE t",
        ],
        "",
    );
    assert_eq!(stderr(&output), "");
    assert_eq!(
        stdout(&output),
        concat!(
            r"CREATE TABLE default.t\nENGINE = IcebergLocal(\'/tmp/it\\\'s\')",
            "\n"
        )
    );
    let script = "SET param_p = '/data/{x}', param_q = 2;\n\
                  CREATE TABLE u ENGINE = IcebergLocal({p:String});\n\
                  SHOW CREATE TABLE u; -- {q:UInt8} in a comment stays\n\
                  SET iceberg_delete_concurrency = {q:UInt8}";
    let output = run(&[], script);
    assert_eq!(stderr(&output), "");
    assert_eq!(
        stdout(&output),
        concat!(
            r"CREATE TABLE default.u\nENGINE = IcebergLocal(\'/data/{x}\')",
            "\n"
        )
    );
}

#[test]
fn query_parameter_errors_are_clickhouse_errors() {
    let output = query("SET iceberg_delete_concurrency = {n:UInt64}");
    assert_eq!(
        stderr(&output),
        "Code: 456. DB::Exception: Substitution `n` is not set. (UNKNOWN_QUERY_PARAMETER)\n"
    );
    assert_eq!(output.status.code(), Some(456 % 256));
    let output = run(
        &[
            "--param_n=-1",
            "-q",
            "SET iceberg_delete_concurrency = {n:UInt64}",
        ],
        "",
    );
    assert_eq!(
        stderr(&output),
        "Code: 457. DB::Exception: Value -1 cannot be parsed as UInt64 for query parameter 'n'. \
         (BAD_QUERY_PARAMETER)\n"
    );
    assert_eq!(output.status.code(), Some(457 % 256));
    // The value reaches the binder as a typed literal: its own checks apply.
    let output = run(
        &[
            "--param_keep=-3",
            "-q",
            "CREATE TABLE t ENGINE = IcebergLocal('/nonexistent'); \
             ALTER TABLE t EXECUTE expire_snapshots(retain_last = {keep:Int64})",
        ],
        "",
    );
    assert_eq!(output.status.code(), Some(36), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("retain_last"),
        "{}",
        stderr(&output)
    );
    // Command-line mistakes with parameters are ClickHouse errors too (clickhouse-client's
    // texts), not clap's usage errors.
    let output = run(&["-q", "SELECT 1", "--param_n"], "");
    assert_eq!(
        stderr(&output),
        "Code: 36. DB::Exception: Parameter requires value. (BAD_ARGUMENTS)\n"
    );
    assert_eq!(output.status.code(), Some(36));
    for empty in ["--param_=1", "--param_"] {
        let output = run(&[empty, "-q", "SELECT 1"], "");
        assert_eq!(
            stderr(&output),
            "Code: 36. DB::Exception: Parameter name cannot be empty. (BAD_ARGUMENTS)\n",
            "{empty}"
        );
        assert_eq!(output.status.code(), Some(36));
    }
}

/// `icetrim-generate ... | head`: the summary goes to a closed pipe; the program ends quietly with
/// status 0, as `icetrim` does (it once panicked).
#[test]
fn generator_broken_pipe_is_a_clean_exit() {
    let dir = tempfile::tempdir().expect("temp dir");
    let location = dir.path().join("t");
    let mut child = Command::new(env!("CARGO_BIN_EXE_icetrim-generate"))
        .args([
            "--location",
            location.to_str().expect("utf-8 path"),
            "--format-version",
            "2",
            "--snapshots",
            "3",
            "--files-per-snapshot",
            "1",
            "--seed",
            "1",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("icetrim-generate starts");
    // Close the reading end before the summary is written (it is written last).
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("icetrim-generate finishes");
    assert_eq!(stderr(&output), "", "no panic, no message");
    assert_eq!(output.status.code(), Some(0));
    assert!(location.join("metadata").is_dir(), "the table was written");
}

#[test]
fn a_path_that_is_not_a_folder_names_the_real_cause() {
    let output = run(&["--path", "/dev/null", "-q", "SHOW TABLES"], "");
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(172), "{err}");
    assert!(
        err.starts_with("Code: 172. DB::Exception: Cannot use '/dev/null' as the data path (--path): it is not a folder")
            && err.trim_end().ends_with("(CANNOT_CREATE_DIRECTORY)"),
        "{err}"
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("plain-file");
    std::fs::write(&file, b"x").expect("write");
    let path = file.to_str().expect("utf-8 path");
    let output = run(&["--path", path, "-q", "SHOW TABLES"], "");
    assert_eq!(output.status.code(), Some(172), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("it is not a folder"),
        "{}",
        stderr(&output)
    );
}

/// ClickHouse scripts set `iceberg_format_version`; ClickHouse reads it only when it creates a new
/// table, and icetrim never creates one: accepted, echoed, and a warning on standard error says it
/// does nothing. Without the setting there is no warning.
#[test]
fn iceberg_format_version_is_accepted_with_a_warning() {
    let output = run(
        &[],
        "CREATE TABLE t ENGINE = IcebergLocal('/tmp/x') SETTINGS iceberg_format_version = 1;\n\
         SHOW CREATE TABLE t",
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.starts_with("Warning: ")
            && err.contains("iceberg_format_version = 1 has no effect on an existing table")
            && err.lines().count() == 1,
        "{err}"
    );
    assert!(
        stdout(&output).ends_with("SETTINGS iceberg_format_version = 1\n"),
        "{}",
        stdout(&output)
    );
    let plain = query(
        "CREATE TABLE t ENGINE = IcebergLocal('/tmp/x') SETTINGS iceberg_use_version_hint = 1",
    );
    assert_eq!(stderr(&plain), "");
    assert!(plain.status.success());
}

/// The flags every caller passes (tests, `benches/vs_clickhouse`), as `--help` must list them.
const GENERATOR_FLAGS: [&str; 18] = [
    "--location",
    "--format-version",
    "--snapshots",
    "--files-per-snapshot",
    "--seed",
    "--mix",
    "--branches",
    "--tags",
    "--staged",
    "--statistics",
    "--orphans",
    "--no-data-files",
    "--span",
    "--now",
    "--codec",
    "--max-manifests",
    "--target-manifest-entries",
    "--merge-fan-in",
];

/// `icetrim-generate --help` prints every flag and exits 0 (it failed with "--help needs a value").
#[test]
fn generator_help_lists_every_flag() {
    let output = Command::new(env!("CARGO_BIN_EXE_icetrim-generate"))
        .arg("--help")
        .output()
        .expect("icetrim-generate runs");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("Usage: icetrim-generate"), "{text}");
    for flag in GENERATOR_FLAGS {
        assert!(text.contains(flag), "{flag} missing from --help:\n{text}");
    }
}

/// An unknown flag is clap's error (named, with the usage line) and status 2; nothing is written.
#[test]
fn generator_refuses_an_unknown_flag() {
    let dir = tempfile::tempdir().expect("temp dir");
    let location = dir.path().join("t");
    let output = Command::new(env!("CARGO_BIN_EXE_icetrim-generate"))
        .args(["--location", location.to_str().expect("utf-8 path")])
        .args(["--snapshot", "3"])
        .output()
        .expect("icetrim-generate runs");
    assert_eq!(output.status.code(), Some(2));
    let err = stderr(&output);
    assert!(
        err.starts_with("error: unexpected argument '--snapshot' found"),
        "{err}"
    );
    assert!(err.contains("Usage: icetrim-generate"), "{err}");
    assert!(stdout(&output).is_empty());
    assert!(!location.exists(), "nothing was written");
}

/// The README's first command: `icetrim --demo` builds its table and runs every statement of the
/// demo on it, compaction included, without an error.
#[test]
fn demo_runs_the_whole_maintenance_session() {
    let output = Command::new(BIN)
        .args(["--demo", "--format", "TabSeparated"])
        .output()
        .expect("run icetrim --demo");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "demo failed: {stderr}\n{stdout}");
    for statement in [
        "EXECUTE expire_snapshots(retention_period = '3d', retain_last = 5);",
        "OPTIMIZE TABLE events;",
        "EXECUTE rewrite_manifests();",
        "CREATE TAG compacted;",
        "EXECUTE remove_orphan_files();",
    ] {
        assert!(stdout.contains(statement), "{statement} missing:\n{stdout}");
    }
    let metric = |name: &str| -> Vec<i64> {
        stdout
            .lines()
            .filter_map(|l| l.strip_prefix(&format!("{name}\t")))
            .filter_map(|v| v.parse().ok())
            .collect()
    };
    let rewritten = metric("rewritten_data_files_count");
    assert_eq!(rewritten.len(), 1, "one OPTIMIZE result:\n{stdout}");
    assert!(
        rewritten[0] > 0,
        "OPTIMIZE rewrote the small files:\n{stdout}"
    );
    assert!(metric("added_data_files_count")[0] >= 1, "{stdout}");
    assert!(
        stdout.lines().any(|l| l.starts_with("compacted\ttag\t")),
        "the tag shows in system.iceberg_refs:\n{stdout}"
    );
    let location = stdout
        .lines()
        .find_map(|l| l.strip_prefix("-- icetrim demo: table "))
        .expect("the demo names its table");
    let folder = std::path::Path::new(location)
        .parent()
        .expect("a temporary folder");
    std::fs::remove_dir_all(folder).expect("remove the demo folder");
}
