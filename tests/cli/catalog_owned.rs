//! A table a catalog owns (pyiceberg's SqlCatalog, as its quickstart makes them) maintained by
//! path through the `icetrim` binary: a warning on standard error before the first commit, once
//! per table per session, silenced by a setting; after the catalog's next commit forks the table,
//! the error names both files of the forked version.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::support::emulator_var;

const BIN: &str = env!("CARGO_BIN_EXE_icetrim");
const WARNING: &str = "Warning: Table looks owned by a catalog";

fn icetrim(sql: &str) -> Output {
    Command::new(BIN)
        .args(["-q", sql])
        .stdin(Stdio::null())
        .output()
        .expect("icetrim runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// pyiceberg through the SqlCatalog of `warehouse`: `create` (three appends) or `append`.
fn pyiceberg(warehouse: &Path, action: &str) {
    let script = r#"
import sys, pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
warehouse, action = sys.argv[1], sys.argv[2]
catalog = SqlCatalog("default", uri=f"sqlite:///{warehouse}/catalog.db", warehouse=f"file://{warehouse}")
if action == "create":
    catalog.create_namespace("db")
    table = catalog.create_table("db.events", schema=pa.schema([("id", pa.int64())]))
    for i in range(3):
        table.append(pa.table({"id": [i]}))
else:
    catalog.load_table("db.events").append(pa.table({"id": [99]}))
"#;
    let output = Command::new(emulator_var("ICETRIM_PYTHON"))
        .args(["-c", script, warehouse.to_str().expect("utf-8"), action])
        .output()
        .expect("python runs");
    assert!(output.status.success(), "{}", stderr(&output));
}

#[test]
fn a_catalog_table_committed_by_path_warns_then_its_fork_is_named() {
    let dir = tempfile::tempdir().expect("a warehouse");
    pyiceberg(dir.path(), "create");
    let table = dir.path().join("db/events");
    let create = format!(
        "CREATE TABLE t ENGINE = IcebergLocal('{}');",
        table.display()
    );

    // Silenced: no warning.
    let quiet = icetrim(&format!(
        "SET iceberg_warn_catalog_owned_tables = 0; {create} \
         ALTER TABLE t EXECUTE expire_snapshots(dry_run = 1)"
    ));
    assert!(quiet.status.success(), "{}", stderr(&quiet));
    assert!(!stderr(&quiet).contains(WARNING), "{}", stderr(&quiet));

    // Statements by path in one session (one commit): one warning, naming DataLakeCatalog and
    // the setting.
    let by_path = icetrim(&format!(
        "{create} ALTER TABLE t EXECUTE expire_snapshots(dry_run = 1); \
         ALTER TABLE t EXECUTE expire_snapshots(retention_period = '0s', retain_last = 1)"
    ));
    let text = stderr(&by_path);
    assert!(by_path.status.success(), "{text}");
    assert_eq!(text.matches(WARNING).count(), 1, "{text}");
    assert!(
        text.contains("DataLakeCatalog") && text.contains("iceberg_warn_catalog_owned_tables = 0"),
        "{text}"
    );

    // The catalog knew nothing of those commits: its append writes a second version 4.
    pyiceberg(dir.path(), "append");
    let forked = icetrim(&format!(
        "{create} ALTER TABLE t EXECUTE expire_snapshots(retention_period = '0s', retain_last = 1)"
    ));
    let text = stderr(&forked);
    assert_eq!(forked.status.code(), Some(48), "{text}");
    let metadata = table.join("metadata");
    let mut fours: Vec<String> = std::fs::read_dir(&metadata)
        .expect("metadata/")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| name.starts_with("00004-") && name.ends_with(".metadata.json"))
        .collect();
    fours.sort();
    assert_eq!(fours.len(), 2, "{fours:?}");
    assert!(text.contains("it forked at version 4"), "{text}");
    for name in &fours {
        assert!(text.contains(name.as_str()), "{name} not named: {text}");
    }
    // Orphan removal too: the catalog's append looks unreferenced from icetrim's branch.
    let orphans = icetrim(&format!(
        "{create} ALTER TABLE t EXECUTE remove_orphan_files(older_than = '2000-01-01 00:00:00', dry_run = 1)"
    ));
    let text = stderr(&orphans);
    assert!(text.contains("it forked at version 4"), "{text}");
}

/// Embedded with an early-warning sink (as the shell runs), the warning arrives before the
/// statement's first commit attempt, and not again with its result.
#[tokio::test]
async fn the_warning_arrives_before_the_first_commit() {
    use std::sync::{Arc, Mutex};

    use icetrim::engine::Engine;
    use icetrim::internals::maintain::target::BeforeCommit;

    let dir = tempfile::tempdir().expect("a warehouse");
    pyiceberg(dir.path(), "create");
    let table = dir.path().join("db/events");
    let warned: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen_at_commit: Arc<Mutex<Option<usize>>> = Arc::default();
    let (w, s) = (Arc::clone(&warned), Arc::clone(&seen_at_commit));
    let hook = BeforeCommit(Arc::new(move || {
        let count = w.lock().expect("warnings").len();
        s.lock().expect("seen").get_or_insert(count);
        Box::pin(async {})
    }));
    let engine = Engine::builder()
        .before_commit(hook)
        .build()
        .expect("an engine");
    let mut session = engine.session();
    let sink = Arc::clone(&warned);
    session.set_early_warnings(Some(Arc::new(move |warning: &str| {
        sink.lock().expect("warnings").push(warning.to_string());
    })));
    let create = format!(
        "CREATE TABLE t ENGINE = IcebergLocal('{}')",
        table.display()
    );
    session.execute(&create).await.expect("registered");
    let results = session
        .execute("ALTER TABLE t EXECUTE expire_snapshots(retention_period = '0s', retain_last = 1)")
        .await
        .expect("expired");
    assert_eq!(
        *seen_at_commit.lock().expect("seen"),
        Some(1),
        "warned before the commit"
    );
    let warnings = warned.lock().expect("warnings").clone();
    assert!(warnings[0].contains("DataLakeCatalog"), "{warnings:?}");
    assert!(
        results
            .iter()
            .all(|r| r.warnings.iter().all(|w| !w.contains("owned by a catalog"))),
        "not repeated with the result: {results:?}"
    );
}
