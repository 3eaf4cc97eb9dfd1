//! The `icetrim` binary on the parser's limits and on command-line mistakes: `max_query_size` and
//! `max_parser_depth` as settings and as options; every mistake on the command line in
//! ClickHouse's form with the exit-code rule; a million snapshot ids in one statement under
//! 110 MB of resident memory; and a large `SELECT` streamed whole in every row-by-row format.

use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_icetrim");
const GENERATE: &str = env!("CARGO_BIN_EXE_icetrim-generate");
const MB: u64 = 1_000_000;

fn run(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("icetrim starts");
    let mut input = child.stdin.take().expect("stdin is piped");
    let script = stdin.to_string();
    let writer = std::thread::spawn(move || input.write_all(script.as_bytes()));
    let output = child.wait_with_output().expect("icetrim finishes");
    writer.join().expect("writer").expect("script written");
    output
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn command_line_mistakes_are_clickhouse_errors() {
    let cases: [(&[&str], &str, i32); 7] = [
        (
            &["--nope"],
            "Code: 552. DB::Exception: Unrecognized option '--nope'. (UNRECOGNIZED_ARGUMENTS)",
            552,
        ),
        (
            &["--qeury", "SHOW TABLES"],
            "Code: 552. DB::Exception: Unrecognized option '--qeury'. Maybe you meant \
             ['query']. (UNRECOGNIZED_ARGUMENTS)",
            552,
        ),
        (
            &["SHOW TABLES"],
            "Code: 36. DB::Exception: Positional options are not supported. (BAD_ARGUMENTS)",
            36,
        ),
        (
            &["--param_x", "-q", "SELECT {x:UInt8}"],
            "Code: 36. DB::Exception: Parameter requires value. (BAD_ARGUMENTS)",
            36,
        ),
        (
            &["--max_parser_depth=0", "-q", "SHOW TABLES"],
            "Code: 36. DB::Exception: Setting max_parser_depth must be between 1 and 2000, got \
             '0': icetrim walks nested expressions one level at a time. (BAD_ARGUMENTS)",
            36,
        ),
        (
            &["--max_query_size"],
            "Code: 36. DB::Exception: the required argument for option '--max_query_size' is \
             missing. (BAD_ARGUMENTS)",
            36,
        ),
        (
            &["-f", "JSON", "-f", "TSV", "-q", "SHOW TABLES"],
            "Code: 36. DB::Exception: the argument '--format <NAME>' cannot be used multiple \
             times. (BAD_ARGUMENTS)",
            36,
        ),
    ];
    for (args, expected, code) in cases {
        let output = run(args, "");
        assert_eq!(stderr(&output), format!("{expected}\n"), "{args:?}");
        assert_eq!(output.status.code(), Some(code % 256), "{args:?}");
        assert!(output.stdout.is_empty(), "{args:?}");
    }
    let missing = run(&["-q"], "");
    assert!(
        stderr(&missing).starts_with("Code: 36. DB::Exception: a value is required for '--query"),
        "{}",
        stderr(&missing)
    );
    for print in ["--help", "--version"] {
        let output = run(&[print], "");
        assert_eq!(output.status.code(), Some(0), "{print}");
        assert!(
            !output.stdout.is_empty() && output.stderr.is_empty(),
            "{print}"
        );
    }
}

#[test]
fn parse_limits_from_settings_and_options() {
    let deep = |n: usize| {
        format!(
            "SELECT * FROM system.iceberg_refs WHERE {}name = 'main'{}",
            "(".repeat(n),
            ")".repeat(n)
        )
    };
    let output = run(&["-q", &deep(1001)], "");
    assert_eq!(
        stderr(&output),
        "Code: 306. DB::Exception: Maximum parse depth (1000) exceeded. Consider rising \
         max_parser_depth parameter. (TOO_DEEP_RECURSION)\n"
    );
    assert_eq!(output.status.code(), Some(306 % 256));
    let output = run(&["--max_parser_depth=1001", "-q", &deep(1001)], "");
    assert!(output.status.success(), "{}", stderr(&output));
    let output = run(&[], &format!("SET max_parser_depth = 10;\n{}", deep(11)));
    assert_eq!(output.status.code(), Some(306 % 256), "{}", stderr(&output));

    let long = format!(
        "SELECT * FROM system.iceberg_refs WHERE {}",
        vec!["name != 'x'"; 30_000].join(" AND ")
    );
    let output = run(&[], &long);
    assert!(
        stderr(&output).starts_with(
            "Code: 62. DB::Exception: Max query size exceeded (can be increased with the \
             `max_query_size` setting): Syntax error: failed at position 2621"
        ),
        "{}",
        stderr(&output)
    );
    assert_eq!(output.status.code(), Some(62));
    // Past the size limit, raised both ways: the query engine refuses a chain of 30,000 ANDs
    // itself (its longest is 1,000), a different error than the size's.
    for output in [
        run(&["--max_query_size=1000000"], &long),
        run(&[], &format!("SET max_query_size = 1000000;\n{long}")),
    ] {
        assert_eq!(output.status.code(), Some(306 % 256), "{}", stderr(&output));
        assert!(
            stderr(&output).contains("AND or OR operands"),
            "{}",
            stderr(&output)
        );
    }
}

/// The peak resident memory of a running process, from `VmHWM` (its own high-water mark: unlike
/// `wait4`'s `ru_maxrss`, it does not start from this test process's memory at the spawn).
/// Polled until the process exits; returns the peak and the exit status.
fn peak_rss(mut child: std::process::Child) -> (u64, std::process::ExitStatus) {
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    loop {
        if let Ok(status) = std::fs::read_to_string(&status_file) {
            let kb = status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
            peak = peak.max(kb.unwrap_or(0) * 1024);
        }
        if let Some(status) = child.try_wait().expect("waits") {
            return (peak, status);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// `expire_snapshots(snapshot_ids = [...])` with a million 19-digit ids (21 MB of text, given on
/// standard input with `max_query_size` raised) plans the expiry of that snapshot under 110 MB of
/// resident memory (debug build; the program alone, the query engine linked, is about 28 MB of
/// it). Before the one-pass parser this peaked at 801 MB.
#[test]
fn a_million_snapshot_ids_stay_under_110_mb() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let table = tmp.path().join("t");
    let out = Command::new(GENERATE)
        .args(["--location", table.to_str().expect("utf-8")])
        .args([
            "--snapshots",
            "3",
            "--files-per-snapshot",
            "1",
            "--mix",
            "append=1",
        ])
        .args(["--seed", "1"])
        .output()
        .expect("icetrim-generate runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let oldest = oldest_snapshot(&table);
    // Written piece by piece, so that this process stays small.
    let script = tmp.path().join("ids.sql");
    let mut file = BufWriter::new(std::fs::File::create(&script).expect("script"));
    write!(
        file,
        "CREATE TABLE t ENGINE = IcebergLocal('{}');\n\
         ALTER TABLE t EXECUTE expire_snapshots(snapshot_ids = [{oldest}",
        table.display()
    )
    .expect("written");
    for _ in 1..1_000_000 {
        write!(file, ", {oldest}").expect("written");
    }
    write!(file, "], dry_run = 1)").expect("written");
    file.into_inner()
        .expect("flushed")
        .sync_all()
        .expect("synced");
    let text_bytes = std::fs::metadata(&script).expect("script").len();
    assert!(text_bytes > 20 * MB, "{text_bytes} bytes of text");

    let results = tmp.path().join("out.tsv");
    let child = Command::new(BIN)
        .args(["--max_query_size=100000000", "--format", "TSV"])
        .stdin(std::fs::File::open(&script).expect("script"))
        .stdout(std::fs::File::create(&results).expect("output file"))
        .stderr(Stdio::null())
        .spawn()
        .expect("icetrim starts");
    let (peak, status) = peak_rss(child);
    eprintln!(
        "a million ids ({} MB of text): peak RSS {} MB",
        text_bytes / MB,
        peak / MB
    );
    assert!(status.success(), "{status}");
    assert!(peak > 0, "VmHWM was read");
    assert!(peak < 110 * MB, "peak RSS {peak} bytes");
    // The run planned the expiry of exactly that snapshot (a dry run: the metrics say what it
    // would delete).
    let text = std::fs::read_to_string(&results).expect("output");
    assert!(
        text.lines().any(|l| l == "deleted_manifest_lists_count\t1"),
        "{text}"
    );
}

/// The oldest snapshot of a generated table (not the current one: expiring it is allowed).
fn oldest_snapshot(table: &Path) -> i64 {
    let metadata = table.join("metadata").join("v1.metadata.json");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(metadata).expect("metadata")).expect("JSON");
    json["snapshots"]
        .as_array()
        .expect("snapshots")
        .iter()
        .min_by_key(|s| s["timestamp-ms"].as_i64())
        .and_then(|s| s["snapshot-id"].as_i64())
        .expect("a snapshot")
}

/// A `SELECT` in a row-by-row format prints as it streams, a record batch at a time: 20,000 rows
/// of `system.iceberg_all_files` (three batches and more) come out whole, under one header, in
/// every streamed format, and as many as `count()` says.
#[test]
fn a_large_select_streams_whole_in_every_row_format() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let table = tmp.path().join("t");
    let out = Command::new(GENERATE)
        .args(["--location", table.to_str().expect("utf-8")])
        .args(["--snapshots", "4", "--files-per-snapshot", "5000"])
        .args(["--mix", "append=1", "--no-data-files", "--seed", "3"])
        .output()
        .expect("icetrim-generate runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let create = format!(
        "CREATE TABLE t ENGINE = IcebergLocal('{}');",
        table.display()
    );
    let query = |format: &str| {
        let sql = format!(
            "{create}\nSELECT file_path FROM system.iceberg_all_files WHERE table = 't' \
             ORDER BY file_path FORMAT {format};"
        );
        let out = run(&[], &sql);
        assert!(out.status.success(), "{format}: {}", stderr(&out));
        String::from_utf8(out.stdout).expect("utf-8 output")
    };
    let counted = query("TSV").lines().count();
    assert_eq!(counted, 20_000);
    let with_names = query("TSVWithNames");
    let mut lines = with_names.lines();
    assert_eq!(lines.next(), Some("file_path"));
    let paths: Vec<&str> = lines.collect();
    assert_eq!(paths.len(), counted);
    assert!(paths.windows(2).all(|w| w[0] < w[1]), "sorted and distinct");
    let csv = query("CSVWithNames");
    assert_eq!(csv.lines().filter(|l| *l == "\"file_path\"").count(), 1);
    assert_eq!(csv.lines().count(), counted + 1);
    let json = query("JSONEachRow");
    assert_eq!(json.lines().count(), counted);
    assert!(json.lines().all(|l| l.starts_with("{\"file_path\":")));
    let total = run(
        &[],
        &format!(
            "{create}\nSELECT count() FROM system.iceberg_all_files WHERE table = 't' FORMAT TSV;"
        ),
    );
    assert_eq!(String::from_utf8_lossy(&total.stdout).trim(), "20000");
}
