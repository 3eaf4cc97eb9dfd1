//! Catalog tables in AWS Glue (cargo feature `glue`): moto's Glue and S3 (one server, started by
//! `scripts/emulators.sh`), tables built and read back by pyiceberg's own `GlueCatalog`
//! (`tests/py/glue_fixture.py`) and by ClickHouse (chdb's Glue `DataLakeCatalog`). Both procedures,
//! EXPLAIN, the system tables, `commit_edit`, persistence and the SQL example. The failure paths are
//! in `catalog_glue_failures`.
//!
//! Every test builds its own Glue database (a unique name) and S3 prefix, so they run in parallel.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use icetrim::engine::Engine;
use icetrim::internals::io::FileIO;

use crate::glue_support::*;
use crate::support::fixtures::run_python_json;
use crate::support::s3_emulator_options;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expiry_and_orphans_commit_through_glue_and_pyiceberg_and_clickhouse_read_every_ref() {
    let fx = GlueFixture::build();
    let before = fx.read();
    let clickhouse_before = fx.clickhouse();
    assert_eq!(
        clickhouse_before["rows"], before["rows"],
        "chdb and pyiceberg agree"
    );
    let mut s = session();
    rows(&mut s, &create_database(&moto(), "testing")).await;
    let tables = rows(&mut s, "SHOW TABLES FROM glue").await;
    assert!(
        tables.contains(&format!("{}.{}", fx.database, fx.table)),
        "{tables:?}"
    );
    let shown = rows(&mut s, "SHOW CREATE DATABASE glue").await.join("\n");
    assert!(!shown.contains(SECRET), "{shown}");
    assert!(shown.contains("[HIDDEN]"), "{shown}");
    // ClickHouse's `namespaces` filter: only the named Glue databases are shown and reachable.
    let filtered = create_database(&moto(), "testing").replacen(
        "CREATE DATABASE glue",
        "CREATE DATABASE only_ours",
        1,
    ) + &format!(", namespaces = '{}'", fx.database);
    rows(&mut s, &filtered).await;
    assert_eq!(
        rows(&mut s, "SHOW TABLES FROM only_ours").await,
        [format!("{}.{}", fx.database, fx.table)]
    );
    let history = rows(
        &mut s,
        &format!(
            "SELECT snapshot_id FROM system.iceberg_history WHERE database = 'only_ours' AND \
             table = '{}.{}'",
            fx.database, fx.table
        ),
    )
    .await;
    assert_eq!(history.len(), 8, "{history:?}");
    let refs = rows(
        &mut s,
        &format!(
            "SELECT name, snapshot_id FROM system.iceberg_refs WHERE database = 'glue' AND \
             table = '{}.{}' ORDER BY name",
            fx.database, fx.table
        ),
    )
    .await;
    assert_eq!(
        refs,
        [
            format!("audit\t{}", before["refs"]["audit"]),
            format!("main\t{}", before["refs"]["main"]),
            format!("t_a2\t{}", before["refs"]["t_a2"]),
        ]
    );
    let explain = rows(
        &mut s,
        &format!("EXPLAIN ALTER TABLE {} {EXPIRE}", fx.sql_name()),
    )
    .await;
    let expired_in_plan = explain
        .iter()
        .filter(|r| r.starts_with("snapshot\t") && r.contains("\texpire\t"))
        .count();
    assert_eq!(expired_in_plan, 5, "{explain:?}");
    let files_before = fx.files().await;
    let dry = rows(
        &mut s,
        &format!(
            "ALTER TABLE {} EXECUTE expire_snapshots(retention_period = '5d', dry_run = 1)",
            fx.sql_name()
        ),
    )
    .await;
    assert_eq!(fx.files().await, files_before, "a dry run changes nothing");
    assert_eq!(fx.read()["metadata_location"], before["metadata_location"]);
    let expired = rows(&mut s, &format!("ALTER TABLE {} {EXPIRE}", fx.sql_name())).await;
    for name in ["deleted_data_files_count", "deleted_manifest_lists_count"] {
        assert_eq!(metric(&dry, name), metric(&expired, name), "{name}");
    }
    // x1's file is live in no retained snapshot; a1's stays live through t_a2 and audit.
    assert_eq!(
        metric(&expired, "deleted_data_files_count"),
        1,
        "{expired:?}"
    );
    assert_eq!(
        metric(&expired, "deleted_manifest_lists_count"),
        5,
        "{expired:?}"
    );
    let after = fx.read();
    same_rows(&before, &after);
    let gone: Vec<i64> = ["a1", "a3", "x1", "del_x1", "del_a1"]
        .iter()
        .map(|l| fx.snapshot(l))
        .collect();
    let kept: Vec<i64> = serde_json::from_value(after["snapshot_ids"].clone()).expect("ids");
    assert!(gone.iter().all(|id| !kept.contains(id)), "{kept:?}");
    assert_eq!(kept.len(), 3, "{kept:?}");
    // Glue points at the next file of pyiceberg's naming, and the log links the two.
    let old = before["metadata_location"].as_str().expect("location");
    let new = after["metadata_location"].as_str().expect("location");
    let version = |l: &str| -> u64 {
        l.rsplit('/').next().unwrap()[..5]
            .parse()
            .expect("NNNNN-<uuid>.metadata.json")
    };
    assert_eq!(version(new), version(old) + 1, "{old} -> {new}");
    assert_eq!(
        after["metadata_log"].as_array().unwrap().last().unwrap(),
        old
    );
    // The system tables read through Glue after the commit.
    let snapshots = rows(
        &mut s,
        &format!(
            "SELECT snapshot_id FROM system.iceberg_snapshots WHERE database = 'glue' AND table \
             = '{}.{}'",
            fx.database, fx.table
        ),
    )
    .await;
    assert_eq!(snapshots.len(), 3, "{snapshots:?}");

    // Orphans: strays under data/ and metadata/ go, nothing Glue's metadata reaches does.
    let io = FileIO::new(s3_emulator_options());
    for stray in ["data/stray-1.parquet", "metadata/stray-m0.avro"] {
        io.write_if_absent(
            &format!("{}/{stray}", fx.location),
            bytes::Bytes::from_static(b"x"),
        )
        .await
        .expect("write a stray");
    }
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let now = chrono::Utc::now().format("%Y-%m-%d %H:%M:%S").to_string();
    let plan = rows(
        &mut s,
        &format!(
            "EXPLAIN ALTER TABLE {} EXECUTE remove_orphan_files(older_than = '{now}')",
            fx.sql_name()
        ),
    )
    .await;
    assert!(
        plan.iter().filter(|r| r.contains("stray")).count() == 2,
        "{plan:?}"
    );
    assert_eq!(
        fx.files()
            .await
            .iter()
            .filter(|f| f.contains("stray"))
            .count(),
        2
    );
    let orphans = rows(
        &mut s,
        &format!(
            "ALTER TABLE {} EXECUTE remove_orphan_files(older_than = '{now}')",
            fx.sql_name()
        ),
    )
    .await;
    let removed: i64 = orphans
        .iter()
        .filter(|r| r.starts_with("deleted_") && r.contains("_count\t"))
        .map(|r| r.rsplit('\t').next().unwrap().parse::<i64>().unwrap())
        .sum();
    assert_eq!(removed, 2, "{orphans:?}");
    let files = fx.files().await;
    assert!(!files.iter().any(|f| f.contains("stray")), "{files:?}");
    same_rows(&before, &fx.read());
    // ClickHouse reads every ref through Glue afterwards, with the same rows.
    let clickhouse_after = fx.clickhouse();
    same_rows(&clickhouse_before, &clickhouse_after);
    assert_eq!(clickhouse_after["current"], before["rows"]["main"]);
}

/// `sql-examples/catalog_glue.sql`, run as a user would (`icetrim < script`), on a Glue table.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_glue_sql_example_runs() {
    let fx = GlueFixture::build();
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("sql-examples/catalog_glue.sql");
    let script = std::fs::read_to_string(&path)
        .expect("the example")
        .replace("http://127.0.0.1:5000", &moto())
        .replace("sales.events", &format!("{}.{}", fx.database, fx.table))
        .replace("'test-key'", "'testing'")
        .replace("'test-secret'", &format!("'{SECRET}'"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_icetrim"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start icetrim");
    std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), script.as_bytes())
        .expect("write the script");
    let out = child.wait_with_output().expect("icetrim finishes");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}\n{stdout}");
    assert!(!stdout.contains(SECRET) && !stderr.contains(SECRET));
    assert!(stdout.contains("[HIDDEN]"), "{stdout}");
    let blocks: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("deleted_data_files_count\t"))
        .collect();
    // The dry run and the expiry report the same counts; the orphan dry run finds nothing.
    assert_eq!(
        blocks,
        [
            "deleted_data_files_count\t1",
            "deleted_data_files_count\t1",
            "deleted_data_files_count\t0"
        ]
    );
    same_rows(&fx.facts, &fx.read());
}

/// A Glue database survives the engine with a data path (`--path`): its definition file is 0600,
/// the next engine reaches the same table, and nothing shows the secret.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_glue_database_persists_with_its_secret_hidden() {
    let fx = GlueFixture::build();
    let dir = tempfile::tempdir().expect("data path");
    {
        let engine = Engine::builder()
            .data_path(dir.path())
            .build()
            .expect("engine");
        let mut s = engine.session();
        rows(&mut s, &create_database(&moto(), "testing")).await;
    }
    let engine = Engine::builder()
        .data_path(dir.path())
        .build()
        .expect("engine");
    let mut s = engine.session();
    let tables = rows(&mut s, "SHOW TABLES FROM glue").await;
    assert!(
        tables.contains(&format!("{}.{}", fx.database, fx.table)),
        "{tables:?}"
    );
    let shown = rows(&mut s, "SHOW CREATE DATABASE glue").await.join("\n");
    assert!(
        !shown.contains(SECRET) && shown.contains("[HIDDEN]"),
        "{shown}"
    );
    let plan = rows(
        &mut s,
        &format!("EXPLAIN ALTER TABLE {} {EXPIRE}", fx.sql_name()),
    )
    .await
    .join("\n");
    assert!(
        plan.contains("\texpire\t") && !plan.contains(SECRET),
        "{plan}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let file = dir.path().join("databases/glue.json");
        let mode = std::fs::metadata(&file)
            .expect("the definition file")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{}", file.display());
    }
}

/// What the other procedures commit through `MaintenanceTarget::commit_edit` (refs, properties)
/// goes through Glue the same way: a new tag and branch and a property, then the tag and the
/// property removed; pyiceberg reads the refs, Glue's parameters mirror the properties and the
/// pointer moved twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_edit_of_refs_and_properties_goes_through_glue() {
    use crate::support::catalog::{
        catalog_database, open_target, tag_branch_and_property, untag_and_unset,
    };
    use icetrim::internals::engine::Runtime;

    let fx = GlueFixture::build();
    let before = fx.read();
    let endpoint = moto();
    let def = catalog_database("glue", &endpoint, &[("catalog_type", "glue")]);
    let name = format!("{}.{}", fx.database, fx.table);
    let target = open_target(&Runtime::default(), &icetrim::Settings::new(), &def, &name).await;
    let a2 = fx.snapshot("a2");
    target
        .commit_edit("test", |m| tag_branch_and_property(m, a2))
        .await
        .expect("commit_edit")
        .expect("a commit");
    let middle = fx.read();
    assert_eq!(middle["rows"]["audit_tag"], before["rows"]["t_a2"]);
    assert_eq!(middle["rows"]["dev"], before["rows"]["main"]);
    assert_eq!(middle["properties"]["icetrim.test"], "yes");
    assert_eq!(middle["glue_parameters"]["icetrim.test"], "yes");
    assert_eq!(
        middle["glue_parameters"]["previous_metadata_location"],
        before["metadata_location"]
    );
    target
        .commit_edit("test", untag_and_unset)
        .await
        .expect("second commit_edit");
    let after = fx.read();
    let refs = after["refs"].as_object().expect("refs");
    assert!(
        refs.contains_key("dev") && !refs.contains_key("audit_tag"),
        "{after}"
    );
    assert!(after["properties"].get("icetrim.test").is_none(), "{after}");
    same_rows(&before, &after);
    assert_eq!(
        after["glue_parameters"]["previous_metadata_location"],
        middle["metadata_location"]
    );
}

/// ClickHouse's own Glue commit and icetrim's follow each other: chdb expires what is older than
/// 9.5 days through Glue (it writes `v<N>.metadata.json`), icetrim then expires the rest on top of
/// it and names its file `<N+1>-<uuid>`; pyiceberg reads every ref unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn icetrim_commits_on_top_of_clickhouses_glue_commit() {
    let fx = GlueFixture::build();
    let before = fx.read();
    let endpoint = moto();
    let cutoff = chrono::Utc::now() - chrono::Duration::hours(9 * 24 + 12);
    let cutoff = cutoff.format("%Y-%m-%d %H:%M:%S").to_string();
    let by_clickhouse = run_python_json(
        &script("glue_fixture.py"),
        &[
            "clickhouse_expire",
            &endpoint,
            &endpoint,
            &fx.database,
            &fx.table,
            &cutoff,
        ],
    );
    let theirs = by_clickhouse["read"]["metadata_location"]
        .as_str()
        .expect("a location")
        .to_string();
    let name = theirs.rsplit('/').next().expect("a file name");
    assert!(
        name.starts_with('v') && name.ends_with(".metadata.json"),
        "ClickHouse's name: {theirs}"
    );
    let version: u64 = name[1..name.len() - ".metadata.json".len()]
        .parse()
        .expect("vN");
    same_rows(&before, &by_clickhouse["read"]);
    let mut s = session();
    rows(&mut s, &create_database(&endpoint, "testing")).await;
    let expired = rows(&mut s, &format!("ALTER TABLE {} {EXPIRE}", fx.sql_name())).await;
    assert_eq!(
        metric(&expired, "deleted_data_files_count"),
        1,
        "{expired:?}"
    );
    let after = fx.read();
    same_rows(&before, &after);
    let ours = after["metadata_location"].as_str().expect("a location");
    let ours_name = ours.rsplit('/').next().expect("a file name");
    assert!(
        ours_name.starts_with(&format!("{:05}-", version + 1)),
        "{theirs} -> {ours}"
    );
    assert_eq!(
        after["glue_parameters"]["previous_metadata_location"],
        theirs
    );
    assert_eq!(
        after["snapshot_ids"].as_array().unwrap().len(),
        3,
        "{after}"
    );
}

/// The typed API reaches Glue tables too (`Table::open_catalog`): the same builder, the same
/// commit through Glue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typed_api_expires_a_glue_table() {
    let fx = GlueFixture::build();
    let before = fx.read();
    let endpoint = moto();
    let table = icetrim::Table::open_catalog(
        &endpoint,
        &[
            ("catalog_type", "glue"),
            ("region", "us-east-1"),
            ("aws_access_key_id", "testing"),
            ("aws_secret_access_key", SECRET),
            ("storage_endpoint", &endpoint),
        ],
        &format!("{}.{}", fx.database, fx.table),
    )
    .await
    .expect("open the Glue table");
    let expired = table
        .expire_snapshots()
        .retention_period(std::time::Duration::from_secs(5 * 86_400))
        .execute()
        .await
        .expect("expire");
    assert_eq!(expired.metrics.deleted_data_files_count, 1, "{expired:?}");
    assert_eq!(
        expired.metrics.deleted_manifest_lists_count, 5,
        "{expired:?}"
    );
    let after = fx.read();
    same_rows(&before, &after);
    assert_ne!(after["metadata_location"], before["metadata_location"]);
}
