//! `icetrim maintain` run unattended, as real processes on real tables:
//! - two runs at once on the same tables: each table's work is done by exactly one of them;
//! - a run killed (SIGKILL) in the middle of a compaction: its lease keeps the next run off the
//!   table until it expires, then the next run converges and pyiceberg reads the table;
//! - SIGTERM to `--every 1s` while it compacts: the compaction finishes, nothing else starts, the
//!   process exits 0 and releases the lease;
//! - the Kubernetes CronJob manifest's and the cron line's exact command lines, run once;
//! - `remove_orphan_files` keeps the lease and journal folder, however old.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::compaction_killed::unfinished_uploads;
use super::compaction_memory::{generate, live_files};
use crate::support::fixtures::oracle_inspect;

const BIN: &str = env!("CARGO_BIN_EXE_icetrim");
const LIMIT: Duration = Duration::from_secs(300);

/// `icetrim` with `args`, to completion.
fn icetrim(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("icetrim runs")
}

fn text(out: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Registers `tables` (name, folder) under the `--path` folder `state`.
fn register(state: &Path, tables: &[(&str, &Path)]) {
    for (name, dir) in tables {
        let sql = format!(
            "CREATE TABLE {name} ENGINE = IcebergLocal('{}')",
            dir.display()
        );
        let out = icetrim(&["--path", state.to_str().unwrap(), "-q", &sql]);
        assert!(out.status.success(), "{}", text(&out));
    }
}

/// The rows of a run's TabSeparated output: `[database, table, procedure, status, reason, ..]`.
fn rows(out: &Output) -> Vec<Vec<String>> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

/// The lease files of the table at `dir`: (generation file name, parsed content).
fn leases(dir: &Path) -> Vec<(String, serde_json::Value)> {
    let Ok(entries) = std::fs::read_dir(dir.join("metadata/.icetrim")) else {
        return Vec::new();
    };
    let mut found: Vec<(String, serde_json::Value)> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("maintain-lease-"))
        .filter_map(|n| {
            let bytes = std::fs::read(dir.join("metadata/.icetrim").join(&n)).ok()?;
            Some((n, serde_json::from_slice(&bytes).ok()?))
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

/// The newest `vN.metadata.json` of the table at `dir`.
fn newest_metadata(dir: &Path) -> PathBuf {
    let version = |p: &Path| -> Option<u64> {
        let name = p.file_name()?.to_str()?.strip_suffix(".metadata.json")?;
        name.trim_start_matches('v').split('-').next()?.parse().ok()
    };
    std::fs::read_dir(dir.join("metadata"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| version(p).is_some())
        .max_by_key(|p| version(p))
        .expect("a metadata file")
}

/// pyiceberg reads every file the table's newest metadata names.
fn pyiceberg_reads(dir: &Path) {
    let report = oracle_inspect(&newest_metadata(dir));
    assert_eq!(report["missing"], serde_json::json!([]), "{report}");
    assert!(report.get("errors").is_none(), "{report}");
}

/// How many live data files the table at `dir` has.
fn live_count(dir: &Path) -> usize {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(live_files(dir)).len()
}

/// The compaction of the table at `dir` is writing its output: a staging file under `data/`
/// (a lease or metadata write stages its own file under `metadata/`, which does not count).
fn compaction_writing(dir: &Path) -> bool {
    !unfinished_uploads(&dir.join("data")).is_empty()
}

/// Waits until `ready` holds, failing when `child` ends first.
fn wait_for(child: &mut Child, what: &str, ready: impl Fn() -> bool) {
    let started = Instant::now();
    while !ready() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the run ended ({status}) before {what}");
        }
        assert!(started.elapsed() < LIMIT, "no {what} after {LIMIT:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn two_runs_at_once_maintain_each_table_once() {
    let tmp = tempfile::tempdir().unwrap();
    let names = ["t1", "t2", "t3"];
    let dirs: Vec<PathBuf> = names.iter().map(|n| tmp.path().join(n)).collect();
    for dir in &dirs {
        generate(dir, 8, 20_000);
    }
    // Each process registers the tables in its own memory and maintains them, in opposite
    // orders, so they meet on the tables in the middle.
    let script = |order: &[usize]| {
        let mut sql = String::new();
        for (name, dir) in names.iter().zip(&dirs) {
            sql += &format!(
                "CREATE TABLE {name} ENGINE = IcebergLocal('{}');\n",
                dir.display()
            );
        }
        for i in order {
            sql += &format!("SYSTEM MAINTAIN TABLE {};\n", names[*i]);
        }
        sql
    };
    let spawn = |sql: String| {
        Command::new(BIN)
            .args(["maintain", "-f", "TabSeparated", "-q", &sql])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("icetrim starts")
    };
    let forward = spawn(script(&[0, 1, 2]));
    let backward = spawn(script(&[2, 1, 0]));
    let outs = [
        forward.wait_with_output().unwrap(),
        backward.wait_with_output().unwrap(),
    ];
    for out in &outs {
        assert!(out.status.success(), "{}", text(out));
    }
    let mut skipped = 0;
    for name in names {
        let compacted: Vec<&Output> = outs
            .iter()
            .filter(|out| {
                rows(out)
                    .iter()
                    .any(|r| r[1] == name && r[2] == "rewrite_data_files" && r[3] == "ok")
            })
            .collect();
        assert_eq!(
            compacted.len(),
            1,
            "{name} compacted once:\n{}\n{}",
            text(&outs[0]),
            text(&outs[1])
        );
        for out in &outs {
            for row in rows(out).iter().filter(|r| r[1] == name) {
                assert_ne!(row[3], "failed", "{row:?}");
                if row[2] == "lease" {
                    assert_eq!(row[3], "skipped", "{row:?}");
                    assert!(row[4].starts_with("being maintained by "), "{row:?}");
                    skipped += 1;
                }
            }
        }
    }
    eprintln!("{skipped} table(s) found leased by the other run");
    for dir in &dirs {
        assert_eq!(live_count(dir), 1, "one compacted file");
        let newest = leases(dir).pop().expect("a lease file").1;
        assert_eq!(newest["released"], true, "{newest}");
    }
}

#[test]
fn a_killed_run_delays_its_table_by_the_lease_then_the_next_run_converges() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, state) = (tmp.path().join("t"), tmp.path().join("state"));
    generate(&dir, 8, 50_000);
    register(&state, &[("t", &dir)]);
    let state = state.to_str().unwrap();
    let run = [
        "maintain",
        "--path",
        state,
        "-f",
        "TabSeparated",
        "--table",
        "t",
    ];
    let mut child = Command::new(BIN)
        .args(run)
        .arg("--iceberg_maintain_lease_seconds=10")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("icetrim starts");
    wait_for(&mut child, "the compaction writing", || {
        compaction_writing(&dir)
    });
    child.kill().expect("SIGKILL");
    assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGKILL));
    let (_, held) = leases(&dir).pop().expect("the killed run's lease");
    assert_eq!(held["released"], false, "{held}");

    // Within the lease time the table is left alone: a skipped row, no failure.
    let out = icetrim(&run);
    assert!(out.status.success(), "{}", text(&out));
    let skipped = rows(&out);
    assert_eq!(skipped.len(), 1, "{}", text(&out));
    assert_eq!(
        (skipped[0][2].as_str(), skipped[0][3].as_str()),
        ("lease", "skipped")
    );
    let holder = held["holder"].as_str().unwrap();
    assert!(
        skipped[0][4].starts_with(&format!("being maintained by {holder} until ")),
        "{skipped:?}"
    );

    // Once it expired, the next run takes the table over and does the work.
    let expires = held["expires-ms"].as_i64().unwrap();
    let now = chrono::Utc::now().timestamp_millis();
    std::thread::sleep(Duration::from_millis(
        u64::try_from(expires - now + 200).unwrap_or(0),
    ));
    let out = icetrim(&run);
    assert!(out.status.success(), "{}", text(&out));
    let done = rows(&out);
    assert!(
        done.iter()
            .any(|r| r[2] == "rewrite_data_files" && r[3] == "ok"),
        "{}",
        text(&out)
    );
    assert!(
        done.iter().all(|r| r[3] != "failed" && r[2] != "lease"),
        "{done:?}"
    );
    let leased = leases(&dir);
    let out = icetrim(&run);
    let again = rows(&out);
    assert!(
        again
            .iter()
            .all(|r| r[3] == "not due" || r[3] == "disabled"),
        "the next run finds nothing due: {again:?}"
    );
    // A run that finds nothing due writes nothing, not even a lease.
    assert_eq!(leases(&dir), leased);
    assert_eq!(live_count(&dir), 1);
    pyiceberg_reads(&dir);
}

#[test]
fn sigterm_stops_the_loop_between_procedures_and_exits_zero() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, state) = (tmp.path().join("t"), tmp.path().join("state"));
    generate(&dir, 8, 50_000);
    register(&state, &[("t", &dir)]);
    let mut child = Command::new(BIN)
        .args([
            "maintain",
            "--every",
            "1s",
            "--path",
            state.to_str().unwrap(),
            "--table",
            "t",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("icetrim starts");
    wait_for(&mut child, "the compaction writing", || {
        compaction_writing(&dir)
    });
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(
            started.elapsed() < LIMIT,
            "still running {LIMIT:?} after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("stopped between procedures as asked"),
        "{}",
        text(&out)
    );
    // The compaction running at the signal finished and committed; no upload is left behind.
    assert_eq!(live_count(&dir), 1);
    assert!(unfinished_uploads(&dir).is_empty());
    let newest = leases(&dir).pop().expect("a lease").1;
    assert_eq!(newest["released"], true, "the lease was released: {newest}");
    // The log under --path keeps the cancelled run: the compaction that finished, and the
    // procedures the stop kept from starting.
    let log = std::fs::read_to_string(state.join("maintenance_log.jsonl")).expect("the log");
    let entries: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let status = |procedure: &str| {
        entries
            .iter()
            .find(|e| e["procedure"] == procedure)
            .map(|e| e["status"].as_str().unwrap_or_default().to_string())
    };
    assert_eq!(status("rewrite_data_files").as_deref(), Some("ok"), "{log}");
    for procedure in [
        "rewrite_manifests",
        "expire_snapshots",
        "remove_orphan_files",
    ] {
        assert_eq!(status(procedure).as_deref(), Some("cancelled"), "{log}");
    }
    pyiceberg_reads(&dir);
}

/// The manifest's `command` and `args` (flow-style lists of double-quoted strings, valid JSON),
/// with `$(ICETRIM_PATH)` expanded as Kubernetes expands it from the container's environment.
fn cronjob_command_line(state: &str) -> Vec<String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let manifest =
        std::fs::read_to_string(root.join("scripts/k8s/icetrim-maintain-cronjob.yaml")).unwrap();
    let list = |key: &str| -> Vec<String> {
        let line = manifest
            .lines()
            .map(str::trim)
            .find_map(|l| l.strip_prefix(key))
            .unwrap_or_else(|| panic!("no {key} in the manifest"));
        serde_json::from_str(line.trim()).unwrap_or_else(|e| panic!("{key} {line}: {e}"))
    };
    // The container's environment: `- name: X` then `value: "Y"`; ICETRIM_PATH is the test's.
    let lines: Vec<&str> = manifest.lines().map(str::trim).collect();
    let mut env: Vec<(String, String)> = lines
        .windows(2)
        .filter_map(|w| {
            let name = w[0].strip_prefix("- name: ")?;
            let value: String = serde_json::from_str(w[1].strip_prefix("value: ")?).ok()?;
            Some((format!("$({name})"), value))
        })
        .collect();
    let path = env
        .iter_mut()
        .find(|(n, _)| n == "$(ICETRIM_PATH)")
        .expect("ICETRIM_PATH");
    path.1 = state.to_string();
    let mut line = list("command:");
    line.extend(list("args:"));
    line.iter()
        .map(|a| {
            env.iter()
                .fold(a.clone(), |a, (name, value)| a.replace(name, value))
        })
        .collect()
}

/// The cron line of `docs/maintaining-a-catalog.md`: the command after the five time fields, up
/// to the redirection, with its `--path` replaced by `state`.
fn cron_command_line(state: &str) -> Vec<String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/maintaining-a-catalog.md")).unwrap();
    let line = doc
        .lines()
        .find(|l| l.starts_with("17 * * * * icetrim maintain"))
        .expect("the cron line");
    let command = line.split(">>").next().unwrap();
    let words: Vec<String> = command
        .split_whitespace()
        .skip(5)
        .map(str::to_string)
        .collect();
    let at = words.iter().position(|w| w == "--path").expect("--path");
    let mut words = words;
    words[at + 1] = state.to_string();
    words
}

#[test]
fn the_cronjob_and_cron_recipes_run_as_written() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("events");
    generate(&dir, 6, 1_000);
    let state = tmp.path().join("state");
    let sql = format!(
        "CREATE TABLE events ENGINE = IcebergLocal('{}')",
        dir.display()
    );
    let out = icetrim(&["--path", state.to_str().unwrap(), "-q", &sql]);
    assert!(out.status.success(), "{}", text(&out));
    for (recipe, line) in [
        ("CronJob", cronjob_command_line(state.to_str().unwrap())),
        ("cron", cron_command_line(state.to_str().unwrap())),
    ] {
        assert_eq!(line[..2], ["icetrim", "maintain"], "{recipe}: {line:?}");
        assert!(
            line.iter().all(|a| !a.contains("$(")),
            "{recipe}: expanded {line:?}"
        );
        let out = Command::new(BIN)
            .args(&line[1..])
            .args(["-f", "TabSeparated"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{recipe} {line:?}: {}", text(&out));
        let rows = rows(&out);
        assert_eq!(
            rows.len(),
            4,
            "{recipe}: one row per procedure: {}",
            text(&out)
        );
        assert!(
            rows.iter().all(|r| r[0] == "default" && r[1] == "events"),
            "{rows:?}"
        );
        if recipe == "CronJob" {
            assert!(
                rows.iter()
                    .any(|r| r[2] == "rewrite_data_files" && r[3] == "ok"),
                "{rows:?}"
            );
        } else {
            assert!(
                rows.iter().all(|r| r[3] == "not due" || r[3] == "disabled"),
                "{rows:?}"
            );
        }
    }
}

#[test]
fn orphan_removal_keeps_the_lease_and_journal_folder_however_old() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    // Eight small files: compaction is due, so the run takes (and releases) a lease.
    generate(&dir, 8, 100);
    let table = format!("CREATE TABLE t ENGINE = IcebergLocal('{}');", dir.display());
    let out = icetrim(&[
        "maintain",
        "-q",
        &format!("{table} SYSTEM MAINTAIN TABLE t"),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let (lease, _) = leases(&dir).pop().expect("the run's released lease");
    let icetrim_dir = dir.join("metadata/.icetrim");
    let lease = icetrim_dir.join(lease);
    let journal = icetrim_dir.join("expiry-00000000-0000-0000-0000-000000000000.json");
    std::fs::write(&journal, b"{}").unwrap();
    let stray = dir.join("data/stray.parquet");
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::write(&stray, b"not a table file").unwrap();
    let old = std::time::SystemTime::now() - Duration::from_secs(10 * 86_400);
    for file in [&lease, &journal, &stray] {
        std::fs::File::options()
            .write(true)
            .open(file)
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
    let older_than = (chrono::Utc::now() - chrono::Duration::days(5)).format("%Y-%m-%d %H:%M:%S");
    let call = format!(
        "SET session_timezone = 'UTC'; {table} ALTER TABLE t EXECUTE \
         remove_orphan_files(older_than = '{older_than}')"
    );
    let out = icetrim(&["-f", "TabSeparated", "-q", &call]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        !stray.exists(),
        "an old stray file is an orphan: {}",
        text(&out)
    );
    assert!(lease.exists() && journal.exists(), "{}", text(&out));
}

#[test]
fn a_run_whose_lease_is_taken_over_stops_before_its_next_procedure() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    generate(&dir, 8, 50_000);
    let sql = format!(
        "CREATE TABLE t ENGINE = IcebergLocal('{}'); SYSTEM MAINTAIN TABLE t",
        dir.display()
    );
    let mut child = Command::new(BIN)
        .args(["maintain", "--iceberg_maintain_lease_seconds=3", "-q", &sql])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("icetrim starts");
    // The compaction writing: the run holds a confirmed lease.
    wait_for(&mut child, "the compaction writing", || {
        compaction_writing(&dir)
    });
    // Another maintainer (its clock far ahead) takes the table over with a newer generation
    // while the compaction runs; the holder's next renewal (after 1 s) finds it.
    let now = chrono::Utc::now().timestamp_millis();
    let foreign = serde_json::json!({
        "format": "icetrim-maintain-lease/1", "generation": 1000, "holder": "other:1:x",
        "acquired-ms": now, "expires-ms": now + 3_000, "released": false,
        "icetrim-version": "0"
    });
    let name = "maintain-lease-00000000000000001000.json";
    std::fs::write(
        dir.join("metadata/.icetrim").join(name),
        foreign.to_string(),
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let rows = rows(&out);
    let status = |procedure: &str| {
        rows.iter()
            .find(|r| r[2] == procedure)
            .map(|r| (r[3].clone(), r[4].clone()))
            .unwrap_or_else(|| panic!("no {procedure} row: {rows:?}"))
    };
    assert_eq!(
        status("rewrite_data_files").0,
        "ok",
        "the running procedure finished"
    );
    let (expire, reason) = status("expire_snapshots");
    assert_eq!(expire, "skipped", "{rows:?}");
    assert!(
        reason.contains("taken over by another maintainer"),
        "{reason}"
    );
    let names: Vec<String> = leases(&dir).into_iter().map(|l| l.0).collect();
    assert_eq!(
        names,
        [name],
        "the loser neither released nor left a generation"
    );
    pyiceberg_reads(&dir);
}

#[test]
fn a_failed_table_fails_a_single_run_and_the_loop_goes_on() {
    use std::io::BufRead;
    let tmp = tempfile::tempdir().unwrap();
    let (dir, state) = (tmp.path().join("t"), tmp.path().join("state"));
    generate(&dir, 2, 100);
    register(&state, &[("t", &dir)]);
    // The table's newest metadata becomes unreadable after it was registered.
    std::fs::write(newest_metadata(&dir), b"{ not json").unwrap();
    let state = state.to_str().unwrap();
    let metrics = tmp.path().join("icetrim.prom");
    let metrics_arg = metrics.to_str().unwrap();
    let once = icetrim(&[
        "maintain",
        "--path",
        state,
        "--table",
        "t",
        "--metrics-file",
        metrics_arg,
    ]);
    assert_ne!(once.status.code(), Some(0), "{}", text(&once));
    assert!(
        String::from_utf8_lossy(&once.stderr).contains("1 of 1 table(s) failed"),
        "{}",
        text(&once)
    );
    // The run's metrics file counts the failed run, as the shell's would.
    let exposition = std::fs::read_to_string(&metrics).expect("icetrim maintain wrote the metrics");
    assert!(
        exposition
            .lines()
            .any(|l| l.starts_with("icetrim_maintain_runs{") && l.contains("status=\"failed\"")),
        "{exposition}"
    );

    let mut child = Command::new(BIN)
        .args(["maintain", "--every", "1s", "--path", state, "--table", "t"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("icetrim starts");
    let stderr = child.stderr.take().unwrap();
    let (send, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = send.send(line);
        }
    });
    let mut seen = Vec::new();
    while !seen.iter().any(|l: &String| l.contains("round 3 at")) {
        match lines.recv_timeout(LIMIT) {
            Ok(line) => seen.push(line),
            Err(e) => panic!("no third round ({e}): {seen:#?}"),
        }
    }
    let failures = seen
        .iter()
        .filter(|l| l.contains("1 of 1 table(s) failed"))
        .count();
    assert!(failures >= 2, "each round logs the failure: {seen:#?}");
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let status = child.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(0),
        "a stop that was asked for: {status}"
    );
}
