//! clickhouse-client habits and loud failures in script mode: `-n` / `--multiquery`,
//! `--ignore-error`, `-d`, `--queries-file`, `--echo`, `\G`, `-f Markdown`, unknown formats with
//! ClickHouse's hints, a failing statement's line, Pretty's Vertical fallback and relative paths,
//! and a procedure whose planned deletes partly failed (a real failed unlink) ending with
//! `CANNOT_UNLINK`.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use std::io::Write;

const BIN: &str = env!("CARGO_BIN_EXE_icetrim");

fn run(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .env("NO_COLOR", "1")
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

/// ClickHouse's error for the unregistered table `nope`, with icetrim's hint after it.
const UNKNOWN_NOPE: &str = "Code: 60. DB::Exception: Table default.nope does not exist. Register it \
     first: CREATE TABLE default.nope ENGINE = IcebergLocal('/path/to/table') \
     (IcebergS3('s3://bucket/path/to/table') or IcebergAzure(...) for object storage), or reach a \
     catalog's tables with CREATE DATABASE ... ENGINE = DataLakeCatalog(...). (UNKNOWN_TABLE)";

/// `-n` is clickhouse-client's `--multiquery`: it does not go on after an error;
/// `--ignore-error` does.
#[test]
fn multiquery_is_accepted_and_only_ignore_error_goes_on() {
    for flag in ["-n", "--multiquery"] {
        let output = run(&[flag, "-q", "SET nope = 1; SHOW DATABASES"], "");
        assert_eq!(output.status.code(), Some(115), "{flag}");
        assert_eq!(stdout(&output), "", "{flag} stops at the error");
    }
    let output = run(
        &["-n", "--ignore-error", "-q", "SET nope = 1; SHOW DATABASES"],
        "",
    );
    assert_eq!(stdout(&output), "default\n");
    assert_eq!(output.status.code(), Some(115));
    let output = run(&["--ignore_error", "-q", "SHOW DATABASES"], "");
    assert!(
        stderr(&output).contains("(UNRECOGNIZED_ARGUMENTS)"),
        "no other spelling"
    );
    assert_eq!(output.status.code(), Some(552 % 256));
}

#[test]
fn database_option_starts_in_that_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_str().unwrap();
    let created = run(
        &[
            "--path",
            path,
            "-q",
            "CREATE TABLE lake.events ENGINE = IcebergLocal('/tmp/x')",
        ],
        "",
    );
    assert!(created.status.success(), "{}", stderr(&created));
    let output = run(&["--path", path, "-d", "lake", "-q", "SHOW TABLES"], "");
    assert_eq!(stdout(&output), "events\n", "{}", stderr(&output));
    let output = run(
        &["--path", path, "--database=lake", "-q", "SHOW TABLES"],
        "",
    );
    assert_eq!(stdout(&output), "events\n");
    let output = run(&["-d", "nodb", "-q", "SHOW TABLES"], "");
    assert_eq!(
        stderr(&output),
        "Code: 81. DB::Exception: Database nodb does not exist. (UNKNOWN_DATABASE)\n"
    );
    assert_eq!(output.status.code(), Some(81));
}

/// Files run in order in one session; `--echo` prints each statement (with its terminator)
/// before its result; an error names the file and line of its statement on the next line.
#[test]
fn queries_files_run_in_order_echoed_and_errors_are_located() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.sql");
    let b = dir.path().join("b.sql");
    std::fs::write(
        &a,
        "CREATE TABLE t ENGINE = IcebergLocal('/tmp/x');\nSHOW TABLES;\n",
    )
    .unwrap();
    std::fs::write(&b, "-- second file\nSHOW DATABASES\n").unwrap();
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let output = run(&["--queries-file", a, "--queries-file", b, "--echo"], "");
    assert_eq!(
        stdout(&output),
        "CREATE TABLE t ENGINE = IcebergLocal('/tmp/x');\nSHOW TABLES;\nt\n\
         -- second file\nSHOW DATABASES\ndefault\n"
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let output = run(&["--queries-file", b, a], "");
    assert_eq!(
        stdout(&output),
        "default\nt\n",
        "several files after one flag"
    );

    let broken = dir.path().join("broken.sql");
    std::fs::write(
        &broken,
        "SHOW TABLES;\n\nALTER TABLE nope\n  EXECUTE expire_snapshots(retain_last = 5);\nSHOW DATABASES;\n",
    )
    .unwrap();
    let broken = broken.to_str().unwrap();
    let output = run(&["--queries-file", broken, "--queries-file", b], "");
    assert_eq!(
        stderr(&output),
        format!(
            "{UNKNOWN_NOPE}\n\
             (at line 3 of {broken}: ALTER TABLE nope EXECUTE expire_snapshots(retain_last = 5))\n"
        )
    );
    assert_eq!(
        stdout(&output),
        "",
        "nothing after the error, not the next file"
    );
    assert_eq!(output.status.code(), Some(60));
    let output = run(
        &[
            "--ignore-error",
            "--queries-file",
            broken,
            "--queries-file",
            b,
        ],
        "",
    );
    assert_eq!(stdout(&output), "default\ndefault\n");
    assert_eq!(output.status.code(), Some(60));

    let output = run(&["-q", "SELECT 1", "--queries-file", a], "");
    assert_eq!(output.status.code(), Some(36), "{}", stderr(&output));
    let missing = dir.path().join("missing.sql");
    let output = run(&["--queries-file", missing.to_str().unwrap()], "");
    assert!(stderr(&output).starts_with("Code: 76. DB::Exception: Cannot open queries file"));
    assert_eq!(output.status.code(), Some(76));
}

/// A piped script's failing statement: the ClickHouse line unchanged, then its line and first
/// words; `-q` stays one line.
#[test]
fn piped_script_errors_name_the_line() {
    let script = "SET session_timezone = 'UTC';\nSHOW TABLES;\n\n  ALTER TABLE nope EXECUTE remove_orphan_files(dry_run = 1, older_than = '2020-01-01 00:00:00');\nSHOW TABLES;";
    let output = run(&[], script);
    assert_eq!(
        stderr(&output),
        format!(
            "{UNKNOWN_NOPE}\n\
             (at line 4: ALTER TABLE nope EXECUTE remove_orphan_files(dry_run = 1, older_than …)\n"
        )
    );
    assert_eq!(output.status.code(), Some(60));
    let output = run(&["-q", "ALTER TABLE nope EXECUTE expire_snapshots()"], "");
    assert_eq!(stderr(&output).lines().count(), 1);
}

#[test]
fn backslash_g_prints_vertical_in_scripts() {
    let output = run(&["-q", "SHOW DATABASES\\G SHOW DATABASES"], "");
    assert_eq!(stdout(&output), "Row 1:\n──────\nname: default\ndefault\n");
    let output = run(&["--echo", "-q", "SHOW DATABASES\\G"], "");
    assert_eq!(
        stdout(&output),
        "SHOW DATABASES\\G\nRow 1:\n──────\nname: default\n",
        "echoed with its terminator"
    );
    let output = run(
        &[],
        "SELECT name FROM system.iceberg_refs WHERE name = '\\G'; -- \\G\nSHOW DATABASES;",
    );
    assert_eq!(
        stderr(&output),
        "",
        "a \\G in a string or a comment is text"
    );
    assert_eq!(stdout(&output), "default\n");
}

#[test]
fn markdown_and_unknown_formats() {
    let setup = "CREATE TABLE t ENGINE = IcebergLocal('/a'); CREATE TABLE `u|v` ENGINE = IcebergLocal('/b');";
    let output = run(
        &["-f", "Markdown", "-q", &format!("{setup} SHOW TABLES")],
        "",
    );
    assert_eq!(stdout(&output), "| name |\n|:-|\n| t |\n| u|v |\n");
    let output = run(&["-q", "SHOW TABLES FORMAT Markdown"], "");
    assert_eq!(stdout(&output), "| name |\n|:-|\n", "no rows: the header");
    let cases = [
        (
            &["-f", "Markdwn", "-q", "SHOW TABLES"][..],
            "Unknown format Markdwn. Maybe you meant: ['Markdown']",
        ),
        (
            &["-q", "SHOW TABLES FORMAT CSVWithName"][..],
            "Unknown format CSVWithName. Maybe you meant: ['CSVWithNames','TSVWithNames']",
        ),
        (
            &["-f", "Parquet", "-q", "SHOW TABLES"][..],
            "Unknown format Parquet",
        ),
    ];
    for (args, message) in cases {
        let output = run(args, "");
        assert_eq!(
            stderr(&output),
            format!("Code: 73. DB::Exception: {message}. (UNKNOWN_FORMAT)\n"),
            "{args:?}"
        );
        assert_eq!(output.status.code(), Some(73));
    }
}

/// A generated table (three snapshots, no data files).
pub(super) fn generated_table(dir: &Path) -> String {
    let location = dir.join("t").display().to_string();
    let output = Command::new(env!("CARGO_BIN_EXE_icetrim-generate"))
        .args([
            "--location",
            &location,
            "--format-version",
            "2",
            "--snapshots",
            "3",
        ])
        .args([
            "--files-per-snapshot",
            "2",
            "--seed",
            "5",
            "--no-data-files",
        ])
        .output()
        .expect("icetrim-generate runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    location
}

/// The widths of a PrettyCompact frame's columns, read from its top border.
fn frame_widths(frame: &str) -> Vec<usize> {
    let top = frame.lines().find(|l| l.contains('┌')).expect("a frame");
    let inner = top.trim().trim_start_matches('┌').trim_end_matches('┐');
    inner
        .split('┬')
        .map(|part| part.chars().count() - 2)
        .collect()
}

/// The snapshots table (3 rows, 11 columns) in PrettyCompact: its manifest lists relative to
/// the folder they share, that folder printed above; Vertical exactly from the width the
/// columns add up to; TabSeparated keeps full paths.
#[test]
fn pretty_falls_back_to_vertical_at_the_width_and_shows_relative_paths() {
    let dir = tempfile::tempdir().unwrap();
    let location = generated_table(dir.path());
    let create = format!("CREATE TABLE t ENGINE = IcebergLocal('{location}');");
    let select = "SELECT * FROM system.iceberg_snapshots ORDER BY sequence_number";
    let framed = run(
        &[
            "-f",
            "PrettyCompact",
            "--output_format_pretty_fallback_to_vertical=0",
            "-q",
            &format!("{create} {select}"),
        ],
        "",
    );
    let text = stdout(&framed);
    let metadata = format!("{location}/metadata/");
    assert!(
        text.starts_with(&format!("Paths relative to {metadata}\n   ┌─database")),
        "{text}"
    );
    assert!(
        !text.contains(&format!("│ {metadata}")),
        "paths are relative: {text}"
    );
    assert!(text.contains("│ snap-"), "{text}");
    let width: usize = frame_widths(&text).iter().sum();
    let at = |min_width: usize| {
        run(
            &[
                "-f",
                "PrettyCompact",
                &format!("--output_format_pretty_fallback_to_vertical_min_table_width={min_width}"),
                "-q",
                &format!("{create} {select}"),
            ],
            "",
        )
    };
    let vertical = stdout(&at(width));
    assert!(
        vertical.starts_with(&format!(
            "Paths relative to {metadata}\nRow 1:\n──────\ndatabase:"
        )),
        "width {width} reaches the minimum: {vertical}"
    );
    assert!(
        vertical.contains("manifest_list:       snap-"),
        "{vertical}"
    );
    let framed_again = stdout(&at(width + 1));
    assert!(
        framed_again.contains("   ┌─database"),
        "one less: {framed_again}"
    );
    let rows = run(
        &[
            "-f",
            "PrettyCompact",
            "--output_format_pretty_fallback_to_vertical_max_rows_per_chunk=2",
            "--output_format_pretty_fallback_to_vertical_min_table_width=1",
            "-q",
            &format!("{create} {select}"),
        ],
        "",
    );
    assert!(stdout(&rows).contains("┌─database"), "3 rows > 2: framed");
    let tsv = stdout(&run(&["-q", &format!("{create} {select}")], ""));
    assert!(
        tsv.contains(&format!("\t{metadata}snap-")),
        "TSV keeps full paths: {tsv}"
    );
    assert!(!tsv.contains("Paths relative"));
}

/// Makes `files` impossible to delete for this process until dropped: the folder read-only, or,
/// for root (which a mode does not stop), the files immutable (`chattr +i`).
pub(super) struct Undeletable {
    folder: std::path::PathBuf,
    immutable: Vec<std::path::PathBuf>,
}

pub(super) fn undeletable(folder: &Path, files: &[std::path::PathBuf]) -> Undeletable {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(folder, std::fs::Permissions::from_mode(0o555)).unwrap();
    let mut guard = Undeletable {
        folder: folder.to_path_buf(),
        immutable: Vec::new(),
    };
    let probe = folder.join("probe");
    if std::fs::write(&probe, "x").is_err() {
        return guard;
    }
    // Root: the mode is no obstacle. The immutable attribute is.
    std::fs::remove_file(&probe).unwrap();
    let status = Command::new("chattr")
        .arg("+i")
        .args(files)
        .status()
        .expect("chattr runs (root: the only way to make an unlink fail)");
    guard.immutable = files.to_vec();
    assert!(status.success(), "chattr +i works on this filesystem");
    guard
}

impl Drop for Undeletable {
    fn drop(&mut self) {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&self.folder, std::fs::Permissions::from_mode(0o755));
        if !self.immutable.is_empty() {
            let _ = Command::new("chattr")
                .arg("-i")
                .args(&self.immutable)
                .status();
        }
    }
}

/// Three stray files ten days old in the table's `data/` folder.
pub(super) fn stray_files(location: &str) -> (std::path::PathBuf, Vec<std::path::PathBuf>) {
    let data = Path::new(location).join("data");
    std::fs::create_dir_all(&data).unwrap();
    let strays: Vec<_> = (0..3)
        .map(|i| data.join(format!("stray-{i}.parquet")))
        .collect();
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(10 * 86_400);
    for stray in &strays {
        std::fs::write(stray, "x").unwrap();
        let file = std::fs::File::options().write(true).open(stray).unwrap();
        file.set_modified(old).unwrap();
    }
    (data, strays)
}

/// Three stray files, two of which cannot be deleted: the result's rows print, then
/// `CANNOT_UNLINK` ends the script with exit status 202 (458 mod 256), located; with
/// `iceberg_error_on_failed_deletions = 0` the warning alone, exit status 0.
#[test]
fn failed_deletions_end_the_script_with_cannot_unlink() {
    let dir = tempfile::tempdir().unwrap();
    let location = generated_table(dir.path());
    let (data, strays) = stray_files(&location);
    let script = format!(
        "CREATE TABLE t ENGINE = IcebergLocal('{location}');\n\
         ALTER TABLE t EXECUTE remove_orphan_files();\nSHOW TABLES;\n"
    );
    let undo = undeletable(&data, &strays[..2]);
    let failing = run(&[], &script);
    let relaxed = run(&["--iceberg_error_on_failed_deletions=0"], &script);
    let by_set = run(
        &[],
        &format!("SET iceberg_error_on_failed_deletions = 0;\n{script}"),
    );
    drop(undo);
    let (out, err) = (stdout(&failing), stderr(&failing));
    assert!(out.contains("failed_deletions_count\t2\n"), "{out}");
    assert!(
        !out.contains("\nt\n"),
        "SHOW TABLES after the error did not run: {out}"
    );
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert!(lines[0].starts_with("Warning: remove_orphan_files: 2 deletion(s) failed"));
    assert_eq!(
        lines[1],
        "Code: 458. DB::Exception: 2 of the planned deletions failed (the warning above names \
         them). SET iceberg_error_on_failed_deletions = 0 to only warn. (CANNOT_UNLINK)"
    );
    assert_eq!(
        lines[2],
        "(at line 2: ALTER TABLE t EXECUTE remove_orphan_files())"
    );
    assert_eq!(failing.status.code(), Some(202));
    for kept in [&relaxed, &by_set] {
        assert!(
            stdout(kept).ends_with("failed_deletions_count\t2\nt\n"),
            "{}",
            stdout(kept)
        );
        assert_eq!(
            stderr(kept).lines().count(),
            1,
            "the warning only: {}",
            stderr(kept)
        );
        assert_eq!(kept.status.code(), Some(0));
    }
    assert!(strays[0].exists() && strays[1].exists() && !strays[2].exists());
}

/// `--demo` piped to a file prints column names (TabSeparatedWithNames) and ends with what to
/// try next.
#[test]
fn demo_piped_names_columns_and_ends_with_next_steps() {
    let output = Command::new(BIN)
        .arg("--demo")
        .output()
        .expect("run icetrim --demo");
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(out.contains("SHOW TABLES;\n\nname\nevents\n"), "{out}");
    assert!(out.contains("\nmetric_name\tmetric_value\n"), "{out}");
    let location = out
        .lines()
        .find_map(|l| l.strip_prefix("-- icetrim demo: table "))
        .expect("the demo names its table");
    let tail: Vec<&str> = out.lines().rev().take(4).collect();
    assert_eq!(tail[3], "-- Try next:", "{out}");
    for step in &tail[..3] {
        assert!(step.starts_with("--   icetrim "), "{step}");
        assert!(step.contains(location), "{step}");
    }
    // The two one-line suggestions run as printed.
    for step in [tail[2], tail[1]] {
        let command = step.trim_start_matches("--   ").replacen("icetrim", BIN, 1);
        let ran = Command::new("sh").args(["-c", &command]).output().unwrap();
        assert!(
            ran.status.success(),
            "{command}: {}",
            String::from_utf8_lossy(&ran.stderr)
        );
        assert!(!ran.stdout.is_empty(), "{command}");
    }
    let folder = Path::new(location).parent().expect("a temporary folder");
    std::fs::remove_dir_all(folder).expect("remove the demo folder");
}
