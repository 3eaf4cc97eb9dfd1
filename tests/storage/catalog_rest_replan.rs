//! Issue #19 on REST tables: a concurrent change through the catalog between our load and our
//! commit (the test catalog's `append-first`: another writer appends to `main` just before our
//! commit is applied) fails our requirements with 409, and every kind of #19 statement re-plans on
//! the new state instead of overwriting it: the second commit asserts the appended snapshot as
//! `main`'s head, the appended snapshot survives, and pyiceberg reads every ref afterwards.

use serde_json::Value;

use crate::catalog_rest::{RestTable, rows, run, session};
use crate::support::rest_catalog;

const T: &str = "lake.`ns.t`";

/// `name\tsnapshot_id` of every ref.
async fn refs(s: &mut icetrim::engine::Session) -> Vec<(String, i64)> {
    rows(
        s,
        "SELECT name, snapshot_id FROM system.iceberg_refs WHERE database = 'lake' AND table = \
         'ns.t' ORDER BY name",
    )
    .await
    .iter()
    .map(|r| {
        let (name, id) = r.split_once('\t').expect("two columns");
        (name.to_string(), id.parse().expect("an id"))
    })
    .collect()
}

fn ref_of(refs: &[(String, i64)], name: &str) -> Option<i64> {
    refs.iter().find(|(n, _)| n == name).map(|(_, id)| *id)
}

/// `(snapshot id, parent id or -1 (`\\N`), operation)` of every snapshot.
async fn snapshots(s: &mut icetrim::engine::Session) -> Vec<(i64, i64, String)> {
    rows(
        s,
        "SELECT snapshot_id, parent_id, operation FROM system.iceberg_snapshots WHERE \
         database = 'lake' AND table = 'ns.t' ORDER BY timestamp",
    )
    .await
    .iter()
    .map(|r| {
        let cols: Vec<&str> = r.split('\t').collect();
        (
            cols[0].parse().expect("an id"),
            cols[1].parse().unwrap_or(-1),
            cols[2].to_string(),
        )
    })
    .collect()
}

/// The commit bodies this table's warehouse received, in order.
async fn commits(table: &RestTable) -> Vec<Value> {
    rest_catalog::log()
        .await
        .into_iter()
        .filter(|e| {
            e["method"] == "POST"
                && e["path"]
                    .as_str()
                    .is_some_and(|p| p.contains(table.warehouse()) && p.ends_with("/tables/t"))
        })
        .map(|e| serde_json::from_str(e["body"].as_str().expect("a body")).expect("JSON"))
        .collect()
}

fn asserted_main(body: &Value) -> Option<i64> {
    body["requirements"]
        .as_array()?
        .iter()
        .find(|r| r["type"] == "assert-ref-snapshot-id" && r["ref"] == "main")
        .and_then(|r| r["snapshot-id"].as_i64())
}

/// What a statement saw: main's head, the first snapshot, audit's head.
struct Before {
    head: i64,
    first: i64,
    audit: i64,
}

/// Run `sql_of(before)` on a fresh `py_v2_refs_wap` REST table with a concurrent append injected
/// before its commit; checks the 409 and the re-planned commit, returns the session, the
/// appended snapshot's id and the table.
async fn replanned(
    what: &str,
    sql_of: impl FnOnce(&Before) -> String,
) -> (icetrim::engine::Session, i64, RestTable) {
    let table = RestTable::new("py_v2_refs_wap").await;
    let mut s = session();
    run(&mut s, &table.create("vended_credentials = 0")).await;
    let before_refs = refs(&mut s).await;
    let before_snaps = snapshots(&mut s).await;
    let before = Before {
        head: ref_of(&before_refs, "main").expect("main"),
        first: before_snaps[0].0,
        audit: ref_of(&before_refs, "audit").expect("audit"),
    };
    let sql = sql_of(&before);
    rest_catalog::fail_next(table.warehouse(), &["ns"], "t", "append-first").await;
    run(&mut s, &sql).await;
    let after_snaps = snapshots(&mut s).await;
    let appended = after_snaps
        .iter()
        .find(|(id, parent, op)| {
            *parent == before.head && op == "append" && before_snaps.iter().all(|b| b.0 != *id)
        })
        .unwrap_or_else(|| panic!("{what}: the concurrent append is gone: {after_snaps:?}"))
        .0;
    let bodies = commits(&table).await;
    assert_eq!(
        bodies.len(),
        2,
        "{what}: one refused and one re-planned commit"
    );
    assert_eq!(asserted_main(&bodies[0]), Some(before.head), "{what}");
    assert_eq!(
        asserted_main(&bodies[1]),
        Some(appended),
        "{what}: the second commit is planned on the appended snapshot"
    );
    // pyiceberg and chdb read every ref through the catalog.
    let read = table.read(None);
    let read_refs = read["pyiceberg"].as_object().expect("refs");
    let ours = refs(&mut s).await;
    assert_eq!(read_refs.len(), ours.len(), "{what}: {read}");
    (s, appended, table)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ref_ddl_replans_on_a_concurrent_append() {
    let (mut s, appended, _t) = replanned("CREATE BRANCH", |_| {
        format!("ALTER TABLE {T} CREATE BRANCH nb")
    })
    .await;
    let after = refs(&mut s).await;
    assert_eq!(ref_of(&after, "nb"), Some(appended), "{after:?}");
    assert_eq!(ref_of(&after, "main"), Some(appended));
    let (mut s, appended, _t) =
        replanned("DROP TAG", |_| format!("ALTER TABLE {T} DROP TAG v1")).await;
    let after = refs(&mut s).await;
    assert_eq!(ref_of(&after, "v1"), None, "{after:?}");
    assert_eq!(ref_of(&after, "main"), Some(appended));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tblproperties_replan_on_a_concurrent_append() {
    let (mut s, appended, table) = replanned("SET TBLPROPERTIES", |_| {
        format!("ALTER TABLE {T} SET TBLPROPERTIES ('icetrim.test' = 'x')")
    })
    .await;
    assert_eq!(ref_of(&refs(&mut s).await, "main"), Some(appended));
    let bodies = commits(&table).await;
    assert!(
        bodies[1]["updates"]
            .as_array()
            .expect("updates")
            .iter()
            .any(|u| { u["action"] == "set-properties" && u["updates"]["icetrim.test"] == "x" }),
        "{}",
        bodies[1]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_replans_on_a_concurrent_append() {
    let mut first = 0;
    let (mut s, _appended, _t) = replanned("rollback_to_snapshot", |b| {
        first = b.first;
        format!("ALTER TABLE {T} EXECUTE rollback_to_snapshot({})", b.first)
    })
    .await;
    assert_eq!(ref_of(&refs(&mut s).await, "main"), Some(first));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cherry_pick_and_rewrite_manifests_replan_on_a_concurrent_append() {
    for (what, make) in [
        (
            "cherrypick_snapshot",
            (|b: &Before| format!("ALTER TABLE {T} EXECUTE cherrypick_snapshot({})", b.audit))
                as fn(&Before) -> String,
        ),
        (
            "rewrite_manifests",
            (|_: &Before| format!("ALTER TABLE {T} EXECUTE rewrite_manifests()"))
                as fn(&Before) -> String,
        ),
    ] {
        let (mut s, appended, _t) = replanned(what, make).await;
        let head = ref_of(&refs(&mut s).await, "main").expect("main");
        let snaps = snapshots(&mut s).await;
        let new = snaps
            .iter()
            .find(|(id, _, _)| *id == head)
            .expect("main's head");
        assert_eq!(
            new.1, appended,
            "{what}: the new snapshot follows the append: {snaps:?}"
        );
    }
}

/// The storage GETs of one `expire_snapshots` on a REST table (`settings` for the statement)
/// whose first commit meets a concurrent append through the catalog (409, re-plan): the paths in
/// request order, the expiry's result, and the table.
async fn expiry_reads_with_a_conflict(
    settings: &icetrim::Settings,
) -> (Vec<String>, icetrim::engine::QueryResult, RestTable) {
    use std::sync::{Arc, Mutex};

    use icetrim::internals::engine::{Runtime, run_procedure_on};
    use icetrim::internals::io::{FileIO, HookFn, Op};
    use icetrim::internals::plan::{ExpireOptions, ProcedureCall};
    use object_store::path::Path as ObjectPath;

    let table = RestTable::new("py_v2_linear").await;
    let gets = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&gets);
    let hook = HookFn(
        move |op: Op, path: Option<&ObjectPath>| -> object_store::Result<()> {
            if let (Op::Get, Some(path)) = (op, path) {
                seen.lock().expect("log").push(path.to_string());
            }
            Ok(())
        },
    );
    let io = FileIO::new(crate::support::s3_emulator_options()).with_hook(Arc::new(hook));
    let runtime = Runtime {
        clock: Arc::new(icetrim::SystemClock),
        io_override: Some(io),
        before_commit: None,
        host_stores: Default::default(),
    };
    let target = table.open_target(&runtime, settings).await;
    rest_catalog::fail_next(table.warehouse(), &["ns"], "t", "append-first").await;
    let options = ExpireOptions {
        retention_period_ms: Some(0),
        retain_last: Some(2),
        ..ExpireOptions::default()
    };
    let progress = icetrim::progress::Progress::default();
    let result = run_procedure_on(target, ProcedureCall::Expire(options), false, &progress)
        .await
        .expect("the expiry re-plans and commits");
    assert_eq!(commits(&table).await.len(), 2, "a 409, then the re-plan");
    let gets = gets.lock().expect("log").clone();
    (gets, result, table)
}

/// A 409 re-plans on the new metadata reading only what the first plan had not: every manifest
/// list and manifest is read once over both attempts, the appended snapshot's list and manifest
/// included; both commits stay and every engine reads the rows. With the cache off
/// (`iceberg_statement_cache_max_bytes = 0`) the second attempt reads the old files again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replan_after_a_409_reads_only_the_new_files() {
    let (gets, result, table) = expiry_reads_with_a_conflict(&icetrim::Settings::new()).await;
    let mut distinct = gets.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), gets.len(), "a file read twice: {gets:#?}");
    let session_rows = |r: &icetrim::engine::QueryResult| -> Vec<String> {
        r.rows
            .iter()
            .map(|row| {
                row.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("\t")
            })
            .collect()
    };
    let metrics = session_rows(&result);
    assert!(
        metrics
            .iter()
            .any(|r| r.starts_with("deleted_manifest_lists_count\t") && !r.ends_with("\t0")),
        "{metrics:?}"
    );
    let mut s = session();
    run(&mut s, &table.create("vended_credentials = 0")).await;
    let lists = rows(
        &mut s,
        "SELECT manifest_list FROM system.iceberg_snapshots WHERE database = 'lake' AND \
         table = 'ns.t' ORDER BY timestamp",
    )
    .await;
    // Both commits stay (the append and its parent); the re-plan read the appended list.
    assert_eq!(lists.len(), 2, "the append and its parent stay: {lists:?}");
    for list in &lists {
        let key = list
            .split_once("://")
            .map_or(list.as_str(), |(_, rest)| rest);
        let key = key.split_once('/').map_or(key, |(_, k)| k);
        assert!(
            gets.iter().any(|g| g == key),
            "the retained list {list} was read: {gets:#?}"
        );
    }
    let read = table.read(None);
    assert_eq!(
        read["pyiceberg"]["main"][0].as_i64(),
        read["clickhouse"][0].as_i64(),
        "{read}"
    );
    // The same statement without the cache reads files again: what the cache saves.
    let mut off = icetrim::Settings::new();
    off.set(
        "iceberg_statement_cache_max_bytes",
        &icetrim::internals::sql::Literal::Number("0".into()),
    )
    .expect("a setting");
    let (again, _, _) = expiry_reads_with_a_conflict(&off).await;
    let mut distinct = again.clone();
    distinct.sort();
    distinct.dedup();
    assert!(
        again.len() > distinct.len(),
        "without the cache the re-plan reads old files again: {again:#?}"
    );
    assert_eq!(
        distinct.len(),
        gets.len(),
        "with the cache the statement reads exactly the files it reads without, each once"
    );
}
