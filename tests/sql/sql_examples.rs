//! Every script in `sql-examples/` runs as a user would run it (`icetrim < script.sql`) against a
//! table made by the generator: the example's placeholder location is replaced by the generated
//! table's, nothing else changes.

use crate::support as common;

use std::io::Write;
use std::process::{Command, Stdio};

use icetrim::internals::generate::{GenerateOptions, generate};
use icetrim::internals::iceberg::spec::FormatVersion;
use icetrim::internals::io::FileIO;

const PLACEHOLDER: &str = "/tmp/icetrim-example/events";
const DAY_MS: i64 = 86_400_000;

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn options(location: &str) -> GenerateOptions {
    let mut opts = GenerateOptions::new(location, FormatVersion::V2, 20, 2, 7, now_ms());
    opts.branches = 1;
    opts.tags = 1;
    opts.staged = 1;
    opts.orphans = 2;
    opts.span_ms = 10 * DAY_MS;
    // Real Parquet data files: the examples compact too.
    opts.parquet_data = true;
    opts
}

/// Runs the binary on `script`, asserting success; returns standard output.
fn run_script(script: &str) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_icetrim"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start icetrim");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(script.as_bytes())
        .expect("write script");
    let out = child.wait_with_output().expect("icetrim finishes");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        out.status.success(),
        "icetrim failed ({:?}):\n{stderr}\n{stdout}",
        out.status
    );
    assert!(!stderr.contains("DB::Exception"), "{stderr}");
    stdout
}

fn example(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("sql-examples")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Statements of `script` that run a procedure (not EXPLAIN).
fn procedure_runs(script: &str) -> usize {
    script
        .lines()
        .filter(|l| l.starts_with("ALTER TABLE") && l.contains("EXECUTE"))
        .count()
}

async fn run_local_example(name: &str) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let location = dir.path().join("events").display().to_string();
    generate(&FileIO::local(), &options(&location))
        .await
        .expect("generate");
    let script = example(name).replace(PLACEHOLDER, &location);
    let stdout = run_script(&script);
    let metric_blocks = stdout
        .lines()
        .filter(|l| l.starts_with("deleted_data_files_count\t"))
        .count();
    assert_eq!(
        metric_blocks,
        procedure_runs(&script),
        "{name}: one metric block per procedure run\n{stdout}"
    );
    stdout
}

#[tokio::test]
async fn demo_example() {
    let out = run_local_example("demo.sql").await;
    assert!(out.lines().any(|l| l == "events"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("rewritten_data_files_count\t")),
        "the demo compacts\n{out}"
    );
}

/// `table_health.sql`: every metadata-table query answers, and the files the current snapshot
/// holds are the ones the typed API lists for it.
#[tokio::test]
async fn table_health_example() {
    let dir = tempfile::tempdir().expect("tempdir");
    let location = dir.path().join("events").display().to_string();
    generate(&FileIO::local(), &options(&location))
        .await
        .expect("generate");
    let script = example("table_health.sql").replace(PLACEHOLDER, &location);
    let out = run_script(&script);
    for table in ["iceberg_files", "iceberg_all_files", "iceberg_manifests"] {
        assert!(
            out.lines().any(|l| l == table),
            "SHOW TABLES lists {table}\n{out}"
        );
    }
    let table = icetrim::Table::open(&location, icetrim::StorageOptions::default()).expect("open");
    let files = table
        .metadata_table(icetrim::MetadataTable::Files)
        .collect()
        .await
        .expect("files");
    let live = files
        .iter()
        .map(|b| {
            let content = b.column_by_name("content").expect("content");
            let content = content
                .as_any()
                .downcast_ref::<icetrim::datafusion::arrow::array::Int8Array>()
                .expect("Int8");
            content.iter().filter(|c| *c == Some(0)).count()
        })
        .sum::<usize>();
    assert!(live > 0, "the generated table has live data files");
    assert!(
        out.lines()
            .any(|l| l.starts_with("{}\t") && l.split('\t').nth(1) == Some(&live.to_string())),
        "one unpartitioned group of {live} files\n{out}"
    );
    assert!(out.contains("\nmain\tbranch\t"), "{out}");
}

/// `maintain_catalog.sql`: EXPLAIN finds compaction and expiry due on the generated table (many
/// small files, ten days of history against the week its property keeps), the dry run agrees,
/// and the run does both and removes the generator's old orphans.
#[tokio::test]
async fn maintain_catalog_example() {
    let dir = tempfile::tempdir().expect("tempdir");
    let location = dir.path().join("events").display().to_string();
    generate(&FileIO::local(), &options(&location))
        .await
        .expect("generate");
    let script = example("maintain_catalog.sql").replace(PLACEHOLDER, &location);
    let out = run_script(&script);
    let row = |procedure: &str, status: &str| {
        let prefix = format!("default\tevents\t{procedure}\t{status}\t");
        out.lines().filter(|l| l.starts_with(&prefix)).count()
    };
    for procedure in [
        "rewrite_data_files",
        "expire_snapshots",
        "remove_orphan_files",
    ] {
        assert_eq!(
            row(procedure, "due"),
            2,
            "{procedure} due in EXPLAIN and dry run\n{out}"
        );
        assert_eq!(row(procedure, "ok"), 1, "{procedure} ran\n{out}");
    }
}

#[tokio::test]
async fn daily_maintenance_example() {
    run_local_example("daily_maintenance.sql").await;
}

#[tokio::test]
async fn dry_run_then_expire_example() {
    let out = run_local_example("dry_run_then_expire.sql").await;
    let dry: Vec<&str> = out.lines().filter(|l| l.starts_with("deleted_")).collect();
    let half = dry.len() / 2;
    assert_eq!(
        dry[..half],
        dry[half..],
        "the dry run reports what the real run does\n{out}"
    );
}

#[tokio::test]
async fn compaction_example() {
    let dir = tempfile::tempdir().expect("tempdir");
    let location = dir.path().join("events").display().to_string();
    let mut opts = options(&location);
    opts.parquet_data = true;
    opts.branches = 0;
    opts.tags = 0;
    opts.staged = 0;
    generate(&FileIO::local(), &opts).await.expect("generate");
    let script = example("compaction.sql").replace(PLACEHOLDER, &location);
    let out = run_script(&script);
    let metric = |name: &str| -> i64 {
        out.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}\t")))
            .unwrap_or_else(|| panic!("no {name} in\n{out}"))
            .parse()
            .unwrap()
    };
    assert!(metric("rewritten_data_files_count") > 1, "{out}");
    assert_eq!(metric("added_data_files_count"), 1, "{out}");
    assert_eq!(metric("failed_data_files_count"), 0, "{out}");
    assert!(out.lines().any(|l| l.ends_with("\treplace")), "{out}");
    assert!(
        metric("deleted_data_files_count") >= metric("rewritten_data_files_count"),
        "{out}"
    );
}

#[tokio::test]
async fn branch_tag_retention_example() {
    run_local_example("branch_tag_retention.sql").await;
}

/// `snapshots_and_refs.sql`: its placeholder time becomes "a day ago" (the generated history spans
/// ten days up to now), so the rollback has an ancestor to go back to.
#[tokio::test]
async fn snapshots_and_refs_example() {
    let dir = tempfile::tempdir().expect("tempdir");
    let location = dir.path().join("events").display().to_string();
    generate(&FileIO::local(), &options(&location))
        .await
        .expect("generate");
    let day_ago = chrono::DateTime::from_timestamp_millis(now_ms() - DAY_MS)
        .expect("time")
        .format("%Y-%m-%d %H:%M:%S")
        .to_string();
    let script = example("snapshots_and_refs.sql")
        .replace(PLACEHOLDER, &location)
        .replace("2000-01-02 00:00:00", &day_ago);
    let out = run_script(&script);
    let moves: Vec<&str> = out
        .lines()
        .filter(|l| {
            l.starts_with("previous_snapshot_id\t") || l.starts_with("current_snapshot_id\t")
        })
        .collect();
    assert_eq!(moves.len(), 6, "three procedures, two rows each\n{out}");
    // The rollback moved main back; fast_forward brought it to audit's head again.
    assert_ne!(
        moves[0].split('\t').nth(1),
        moves[1].split('\t').nth(1),
        "{out}"
    );
    assert_eq!(
        moves[0].split('\t').nth(1),
        moves[3].split('\t').nth(1),
        "{out}"
    );
    assert!(out.contains("\nrelease\ttag\t"), "{out}");
    assert!(
        !out.contains("audit\tbranch"),
        "audit was dropped at the end\n{out}"
    );
}

#[tokio::test]
async fn s3_table_example() {
    let (io, root) = common::s3_emulator("example");
    generate(&io, &options(&root))
        .await
        .expect("generate on S3");
    let endpoint = common::emulator_var("ICETRIM_S3_ENDPOINT");
    let path = root.trim_start_matches("s3://");
    let script = example("s3_table.sql")
        .replace(
            "http://127.0.0.1:9000/icetrim-example/events/",
            &format!("{endpoint}/{path}/"),
        )
        .replace("'test-key', 'test-secret'", "'testing', 'testing'");
    let out = run_script(&script);
    assert!(out.contains("[HIDDEN]"), "{out}");
    let blocks = out
        .lines()
        .filter(|l| l.starts_with("deleted_data_files_count\t"))
        .count();
    assert_eq!(blocks, procedure_runs(&script), "{out}");
}

#[tokio::test]
async fn rewrite_manifests_example() {
    let dir = tempfile::tempdir().expect("tempdir");
    let location = dir.path().join("events").display().to_string();
    generate(&FileIO::local(), &options(&location))
        .await
        .expect("generate");
    let script = example("rewrite_manifests.sql").replace(PLACEHOLDER, &location);
    let out = run_script(&script);
    let rewritten: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("rewritten_manifests_count\t"))
        .collect();
    // The dry run and the real run agree; the generated table has manifests to rewrite.
    assert_eq!(rewritten.len(), 2, "{out}");
    assert_eq!(rewritten[0], rewritten[1], "{out}");
    assert_ne!(rewritten[0], "rewritten_manifests_count\t0", "{out}");
    assert!(out.contains("removed_schemas_count\t"), "{out}");
    assert!(
        out.contains("new_manifest"),
        "EXPLAIN lists the new manifests\n{out}"
    );
}

#[tokio::test]
async fn catalog_rest_example() {
    use futures::TryStreamExt;
    let (io, root) = common::s3_emulator("rest-example");
    generate(&io, &options(&root))
        .await
        .expect("generate on S3");
    let listed: Vec<String> = io
        .list(&format!("{root}/metadata"))
        .map_ok(|f| f.uri)
        .try_collect()
        .await
        .expect("list metadata");
    let newest = common::rest_catalog::newest_metadata_name(listed.iter().map(String::as_str))
        .expect("a metadata file")
        .to_string();
    let warehouse = common::unique("example");
    common::rest_catalog::warehouse(&warehouse, serde_json::json!({})).await;
    common::rest_catalog::register(&warehouse, &["ns"], "events", &newest).await;
    let endpoint = common::emulator_var("ICETRIM_S3_ENDPOINT");
    let script = example("catalog_rest.sql")
        .replace("http://127.0.0.1:8181", &common::rest_catalog::uri())
        .replace("warehouse = 'wh'", &format!("warehouse = '{warehouse}'"))
        .replace("http://127.0.0.1:9000", &endpoint)
        .replace("'test-key'", "'testing'")
        .replace("'test-secret'", "'testing'");
    let out = run_script(&script);
    assert!(out.contains("[HIDDEN]"), "{out}");
    assert!(
        out.contains("aws_secret_access_key = \\'[HIDDEN]\\'")
            || out.contains("aws_secret_access_key = '[HIDDEN]'"),
        "the secret key is hidden: {out}"
    );
    assert!(out.lines().any(|l| l == "ns.events"), "{out}");
    assert!(out.lines().any(|l| l == "main\tbranch"), "{out}");
    let blocks = out
        .lines()
        .filter(|l| {
            l.starts_with("deleted_data_files_count\t") || l.starts_with("deleted_data_files_count")
        })
        .count();
    assert!(blocks >= 2, "{out}");
}

/// `grants.sql`, as its comment says to run it: once as the owner with `--path`, then as each
/// user. `ops` may run a procedure and not change a property; `dashboards` may read the metadata
/// tables and not run a procedure.
#[tokio::test]
async fn grants_example() {
    let dir = tempfile::tempdir().expect("tempdir");
    let location = dir.path().join("events").display().to_string();
    generate(&FileIO::local(), &options(&location))
        .await
        .expect("generate");
    let data = dir.path().join("icetrim-data");
    let data = data.to_str().expect("utf-8");
    let run = |user: &str, sql: &str| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_icetrim"))
            .args(["--path", data, "--user", user])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start icetrim");
        let mut input = child.stdin.take().expect("stdin");
        input.write_all(sql.as_bytes()).expect("write script");
        drop(input);
        child.wait_with_output().expect("icetrim finishes")
    };
    let setup = run(
        "default",
        &example("grants.sql").replace(PLACEHOLDER, &location),
    );
    let shown = String::from_utf8_lossy(&setup.stdout).to_string();
    assert!(
        setup.status.success(),
        "{}",
        String::from_utf8_lossy(&setup.stderr)
    );
    assert!(
        shown.contains("GRANT ALTER EXECUTE, OPTIMIZE ON default.* TO ops"),
        "{shown}"
    );
    assert!(
        shown.contains("GRANT SELECT ON default.events TO dashboards"),
        "{shown}"
    );
    let expire = "ALTER TABLE events EXECUTE expire_snapshots(dry_run = 1)";
    let maintained = run("ops", expire);
    assert!(
        maintained.status.success(),
        "{}",
        String::from_utf8_lossy(&maintained.stderr)
    );
    assert!(String::from_utf8_lossy(&maintained.stdout).contains("dry_run\t1"));
    let property = run("ops", "ALTER TABLE events SET TBLPROPERTIES ('k' = 'v')");
    assert!(!property.status.success());
    assert!(String::from_utf8_lossy(&property.stderr).contains(
        "ops: Not enough privileges. To execute this query, it's necessary to have the grant \
         ALTER SETTINGS ON default.events."
    ));
    let denied = run("dashboards", expire);
    assert!(!denied.status.success());
    assert!(String::from_utf8_lossy(&denied.stderr).contains("(ACCESS_DENIED)"));
    let read = run(
        "dashboards",
        "SELECT count() FROM system.iceberg_snapshots WHERE table = 'events'",
    );
    assert!(
        read.status.success(),
        "{}",
        String::from_utf8_lossy(&read.stderr)
    );
    let count: usize = String::from_utf8_lossy(&read.stdout)
        .trim()
        .parse()
        .expect("a count");
    assert!(count >= 15, "{count}");
}
