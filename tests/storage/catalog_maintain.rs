//! `SYSTEM MAINTAIN DATABASE` on a REST catalog database holding tables of different shapes: six
//! small files (compaction and expiry due), `gc.enabled = false` (compaction only, no deletes),
//! and a table whose location holds another catalog table (orphan removal on: the inner table's
//! files stay). One run does what the policy says for each table, and pyiceberg and ClickHouse
//! read every table through the catalog afterwards with the rows they had.

use std::path::PathBuf;

use serde_json::Value;

use crate::support::catalog::{rows, run, session};
use crate::support::fixtures::{self, Fixture};
use crate::support::relocate::{Rewrite, Root, copy_table};
use crate::support::{rest_catalog, s3_emulator};

/// A fixture copied to `root` on the S3 emulator and registered as `ns.<name>` of `warehouse`.
async fn register_copy(fixture: &Fixture, root: &Root, warehouse: &str, name: &str) {
    let dir = fixture.table_dir();
    let dir = dir.to_str().expect("UTF-8 paths");
    copy_table(
        &Root::new(icetrim::internals::io::FileIO::local(), dir),
        root,
        &Rewrite::from_local(dir, &root.root),
        false,
    )
    .await;
    let newest = root.newest_metadata().await;
    rest_catalog::register(warehouse, &["ns"], name, &root.uri(&newest)).await;
}

/// pyiceberg (every ref) and chdb (current rows) reading each `ns.<name>` through the catalog
/// (one process for all of them).
fn read_all(warehouse: &str, names: &[&str]) -> Vec<Value> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/rest_catalog/read.py");
    let endpoint = crate::support::emulator_var("ICETRIM_S3_ENDPOINT");
    let bucket = crate::support::emulator_var("ICETRIM_S3_BUCKET");
    let uri = rest_catalog::uri();
    let tables = names.join(",");
    let args = [
        uri.as_str(),
        warehouse,
        "ns",
        tables.as_str(),
        endpoint.as_str(),
        bucket.as_str(),
    ];
    let out = fixtures::run_python_json(&script, &args);
    assert!(out.get("error").is_none(), "read {tables}: {out}");
    if names.len() == 1 {
        return vec![out];
    }
    names.iter().map(|name| out[*name].clone()).collect()
}

/// The `(table, procedure) -> (status, reason)` of a `SYSTEM MAINTAIN` answer.
fn verdict<'a>(rows: &'a [String], table: &str, procedure: &str) -> (&'a str, &'a str) {
    rows.iter()
        .map(|r| r.split('\t').collect::<Vec<_>>())
        .find(|c| c[1] == table && c[2] == procedure)
        .map(|c| (c[3], c[4]))
        .unwrap_or_else(|| panic!("no row for {table} {procedure} in {rows:#?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_run_maintains_a_catalog_database_by_its_policy() {
    let now = fixtures::now_ms();
    let linear = fixtures::make_fixture("py_v2_linear", now, false);
    let gc_off = fixtures::make_fixture("py_v2_gc_disabled", now, false);
    let warehouse = crate::support::unique("maintain");
    rest_catalog::warehouse(&warehouse, serde_json::json!({})).await;
    let (io, base) = s3_emulator("maintain");
    let small = Root::new(io.clone(), &format!("{base}/small"));
    let no_gc = Root::new(io.clone(), &format!("{base}/no_gc"));
    let outer = Root::new(io.clone(), &format!("{base}/outer"));
    let inner = Root::new(io.clone(), &format!("{base}/outer/inner"));
    register_copy(&linear, &small, &warehouse, "small").await;
    register_copy(&gc_off, &no_gc, &warehouse, "no_gc").await;
    register_copy(&linear, &outer, &warehouse, "outer").await;
    register_copy(&linear, &inner, &warehouse, "inner").await;
    let names = ["small", "no_gc", "outer", "inner"];
    let before = read_all(&warehouse, &names);
    let inner_files = inner.files().await;
    let no_gc_files = no_gc.files().await;

    // The database's own policy layer: orphan removal on for every table of it.
    let mut s = session();
    let with_orphans = rest_catalog::create_database(
        "lake",
        &warehouse,
        "vended_credentials = 0, iceberg_maintain_orphans_enabled = 1",
    );
    run(&mut s, &with_orphans).await;

    let explained = rows(
        &mut s,
        "EXPLAIN SYSTEM MAINTAIN DATABASE lake NAMESPACE 'ns'",
    )
    .await;
    assert_eq!(explained.len(), 16, "{explained:#?}");
    for table in ["ns.small", "ns.outer", "ns.inner"] {
        assert_eq!(verdict(&explained, table, "rewrite_data_files").0, "due");
        assert_eq!(verdict(&explained, table, "expire_snapshots").0, "due");
    }
    assert_eq!(
        verdict(&explained, "ns.no_gc", "rewrite_data_files").0,
        "due"
    );
    let (status, reason) = verdict(&explained, "ns.no_gc", "expire_snapshots");
    assert_eq!(
        (status, reason.contains("gc.enabled = false")),
        ("skipped", true)
    );
    let orphans = explained
        .iter()
        .find(|r| r.contains("ns.small\tremove_orphan_files"))
        .expect("an orphans row");
    assert!(
        orphans.contains("(database lake setting iceberg_maintain_orphans_enabled)"),
        "{orphans}"
    );
    // The outer table's orphan scan protects the inner table (without that it would refuse).
    assert_eq!(
        verdict(&explained, "ns.outer", "remove_orphan_files").0,
        "not due"
    );
    // EXPLAIN changed nothing.
    assert_eq!(inner.files().await, inner_files);

    // The real run, orphan removal off by the statement (it overrides the database).
    let done = rows(
        &mut s,
        "SYSTEM MAINTAIN DATABASE lake SETTINGS iceberg_maintain_orphans_enabled = 0",
    )
    .await;
    for table in ["ns.small", "ns.outer", "ns.inner", "ns.no_gc"] {
        assert_eq!(
            verdict(&done, table, "rewrite_data_files").0,
            "ok",
            "{done:#?}"
        );
    }
    for table in ["ns.small", "ns.outer", "ns.inner"] {
        assert_eq!(
            verdict(&done, table, "expire_snapshots").0,
            "ok",
            "{done:#?}"
        );
    }
    assert_eq!(verdict(&done, "ns.no_gc", "expire_snapshots").0, "skipped");
    assert_eq!(
        verdict(&done, "ns.no_gc", "remove_orphan_files").0,
        "skipped"
    );
    assert_eq!(
        verdict(&done, "ns.small", "remove_orphan_files").0,
        "disabled"
    );
    // The run held each table's lease under the table's location and released it.
    let leases: Vec<String> = small
        .files()
        .await
        .into_iter()
        .map(|f| f.0)
        .filter(|f| f.starts_with("metadata/.icetrim/maintain-lease-"))
        .collect();
    assert_eq!(leases.len(), 1, "one released lease generation: {leases:?}");
    let lease = io
        .read(&format!("{}/{}", small.root, leases[0]))
        .await
        .unwrap();
    let lease: Value = serde_json::from_slice(&lease).unwrap();
    assert_eq!(lease["released"], true, "{lease}");
    // Nothing of the gc.enabled = false table was deleted; the inner table's files that it still
    // lists are all there although they lie under the outer table's location.
    let no_gc_now = no_gc.files().await;
    for file in &no_gc_files {
        assert!(no_gc_now.contains(file), "{file:?} of no_gc deleted");
    }
    let inner_now: Vec<String> = inner.files().await.into_iter().map(|f| f.0).collect();
    run(&mut s, "USE lake").await;
    let inner_live = rows(
        &mut s,
        "SELECT file_path FROM system.iceberg_files WHERE table = 'ns.inner'",
    )
    .await;
    assert!(!inner_live.is_empty());
    for path in &inner_live {
        let relative = path.trim_start_matches(&format!("{}/", inner.root));
        assert!(inner_now.iter().any(|f| f == relative), "{path} gone");
    }
    // Every table reads as before (pyiceberg: the refs it still has; ClickHouse: current rows).
    let after = read_all(&warehouse, &names);
    for ((name, before), after) in names.iter().zip(&before).zip(&after) {
        assert_eq!(before["clickhouse"], after["clickhouse"], "ns.{name}");
        assert_eq!(
            before["pyiceberg"]["main"], after["pyiceberg"]["main"],
            "ns.{name}"
        );
    }
    // A second run finds nothing due.
    let again = rows(
        &mut s,
        "SYSTEM MAINTAIN DATABASE lake SETTINGS iceberg_maintain_orphans_enabled = 0",
    )
    .await;
    assert!(
        again
            .iter()
            .all(|r| !r.contains("\tok\t") && !r.contains("\tdue\t")),
        "{again:#?}"
    );
    // With orphan removal on (the database's setting) the outer table's scan protects the inner
    // table, whose older metadata files name manifest lists its own expiry deleted: it reads what
    // is there and passes over what is gone. A table whose metadata file is gone fails alone: the
    // others run, and the statement fails naming it. The catalog throttles the run's first
    // requests (429 with Retry-After: 1): each is sent again after the wait it asked for.
    let broken = Root::new(io.clone(), &format!("{base}/broken"));
    register_copy(&linear, &broken, &warehouse, "broken").await;
    let newest = broken.newest_metadata().await;
    io.delete(&broken.uri(&newest)).await.expect("delete");
    let throttle = serde_json::json!({"throttle": {"status": 429, "count": 3, "retry_after": 1}});
    rest_catalog::warehouse(&warehouse, throttle).await;
    let seen = rest_catalog::log().await.len();
    let error = s
        .execute("SYSTEM MAINTAIN DATABASE lake")
        .await
        .expect_err("the broken table fails");
    let text = error.to_string();
    assert!(
        text.contains("1 of 5 table(s) failed") && text.contains("lake.ns.broken open"),
        "{text}"
    );
    let log: Vec<Value> = rest_catalog::log()
        .await
        .into_iter()
        .skip(seen)
        .filter(|e| e["path"].as_str().is_some_and(|p| p.starts_with("/v1/")))
        .collect();
    let first = &log[0];
    let resent: Vec<&Value> = log
        .iter()
        .filter(|e| e["path"] == first["path"] && e["method"] == first["method"])
        .collect();
    assert!(resent.len() >= 4, "3 throttled + 1 answered: {resent:#?}");
    for pair in resent[..4].windows(2) {
        let gap = pair[1]["time"].as_f64().unwrap() - pair[0]["time"].as_f64().unwrap();
        assert!(gap >= 0.95, "sent again {gap} s after a Retry-After of 1 s");
    }
    // (Each run leaves the table's maintenance lease at a newer generation: not a table file.)
    let table_files = |files: Vec<String>| -> Vec<String> {
        files
            .into_iter()
            .filter(|f| !f.starts_with("metadata/.icetrim/maintain-lease-"))
            .collect()
    };
    let inner_after: Vec<String> = inner.files().await.into_iter().map(|f| f.0).collect();
    assert_eq!(table_files(inner_after), table_files(inner_now));
    read_all(&warehouse, &names);
}

/// Tables run in parallel up to `iceberg_maintain_max_parallel_tables`. The catalog answers each
/// table load after a second: four at once, every table's first load arrives before the first
/// is answered; one at a time, each arrives after the one before was answered. The answer is
/// the same, in name order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_run_in_parallel_up_to_the_setting() {
    let now = fixtures::now_ms();
    let linear = fixtures::make_fixture("py_v2_linear", now, false);
    let warehouse = crate::support::unique("parallel");
    let slow = serde_json::json!({"delay_loads_ms": 1000});
    rest_catalog::warehouse(&warehouse, slow).await;
    let (io, base) = s3_emulator("parallel");
    let names = ["t1", "t2", "t3", "t4"];
    for name in names {
        let root = Root::new(io.clone(), &format!("{base}/{name}"));
        register_copy(&linear, &root, &warehouse, name).await;
    }
    let mut s = session();
    let database = rest_catalog::create_database("lake", &warehouse, "vended_credentials = 0");
    run(&mut s, &database).await;
    let prefix = format!("/v1/{warehouse}/namespaces/ns/tables/");
    let mut answers = Vec::new();
    for parallel in [4, 1] {
        let seen = rest_catalog::log().await.len();
        let statement = format!(
            "EXPLAIN SYSTEM MAINTAIN DATABASE lake \
             SETTINGS iceberg_maintain_max_parallel_tables = {parallel}"
        );
        answers.push(rows(&mut s, &statement).await);
        let mut first_loads = std::collections::BTreeMap::new();
        for entry in rest_catalog::log().await.into_iter().skip(seen) {
            let path = entry["path"].as_str().unwrap_or_default();
            let Some(table) = path.strip_prefix(&prefix) else {
                continue;
            };
            if entry["method"] == "GET" && !table.contains('/') {
                let time = entry["time"].as_f64().expect("time");
                first_loads.entry(table.to_string()).or_insert(time);
            }
        }
        let mut times: Vec<f64> = first_loads.into_values().collect();
        assert_eq!(times.len(), 4, "parallel {parallel}");
        times.sort_by(f64::total_cmp);
        if parallel == 4 {
            let spread = times[3] - times[0];
            assert!(spread < 0.9, "loads {spread} s apart: not in parallel");
        } else {
            for pair in times.windows(2) {
                let gap = pair[1] - pair[0];
                assert!(
                    gap >= 0.95,
                    "a table loaded {gap} s after the one before: {:#?}",
                    rest_catalog::log()
                        .await
                        .into_iter()
                        .skip(seen)
                        .collect::<Vec<_>>()
                );
            }
        }
    }
    assert_eq!(answers[0], answers[1]);
    assert_eq!(answers[0].len(), 16, "{:#?}", answers[0]);
    for (i, name) in names.iter().enumerate() {
        assert!(
            answers[0][i * 4].contains(&format!("ns.{name}\t")),
            "{:#?}",
            answers[0]
        );
    }
    let zero = s
        .execute("SYSTEM MAINTAIN DATABASE lake SETTINGS iceberg_maintain_max_parallel_tables = 0")
        .await
        .expect_err("0 tables at once");
    assert!(zero.to_string().contains("at least 1"), "{zero}");
}
