//! Snapshot and ref management (issue #19 §3) read back by pyiceberg and ClickHouse (chdb): after
//! every statement both engines read every ref of the table (`scan(snapshot_id)` /
//! `SETTINGS iceberg_snapshot_id`), their rows agree, a ref's rows are the rows its snapshot had
//! before the statement (nothing but refs moved), a cherry-pick's new head holds exactly its
//! parent's rows plus the picked snapshot's own, and pyiceberg's refs and `inspect.refs()` agree
//! with `system.iceberg_refs`.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use icetrim::FixedClock;
use icetrim::engine::{Engine, Session};
use icetrim::format::Value as Cell;
use serde_json::Value;

use crate::support::expire::current_metadata;
use crate::support::fixtures::{Fixture, make_fixture, now_ms, run_python_json};

/// name → (type, snapshot id, min-snapshots-to-keep, max-snapshot-age-ms, max-ref-age-ms).
type RefTable = BTreeMap<String, (String, i64, Option<i64>, Option<i64>, Option<i64>)>;

fn refs_rows(dir: &Path, metadata: &Path) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/refs_rows.py");
    run_python_json(
        &script,
        &[
            dir.to_str().expect("utf-8 path"),
            metadata.to_str().expect("utf-8 path"),
        ],
    )
}

fn ids(v: &Value) -> Vec<i64> {
    v.as_array()
        .unwrap_or_else(|| panic!("expected rows, got {v}"))
        .iter()
        .map(|x| x.as_i64().expect("an id"))
        .collect()
}

struct Check<'a> {
    fx: &'a Fixture,
    session: Session,
    /// Rows of each snapshot seen at a ref head so far.
    known: HashMap<i64, Vec<i64>>,
}

impl Check<'_> {
    async fn run(&mut self, sql: &str) -> Vec<Vec<Cell>> {
        let results = self
            .session
            .execute(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        results.into_iter().flat_map(|r| r.rows).collect()
    }

    async fn icetrim_refs(&mut self) -> RefTable {
        let rows = self
            .run(
                "SELECT name, type, snapshot_id, min_snapshots_to_keep, max_snapshot_age_ms, \
                 max_ref_age_ms FROM system.iceberg_refs",
            )
            .await;
        let int = |c: &Cell| match c {
            Cell::Int(i) => Some(*i),
            Cell::Null => None,
            other => panic!("not an integer: {other:?}"),
        };
        rows.iter()
            .map(|r| {
                (
                    r[0].to_string(),
                    (
                        r[1].to_string(),
                        int(&r[2]).expect("id"),
                        int(&r[3]),
                        int(&r[4]),
                        int(&r[5]),
                    ),
                )
            })
            .collect()
    }

    /// Read every ref with both engines and check the rules of the module comment; `expect`
    /// overrides the rows expected of a ref. Returns pyiceberg's report.
    async fn read(&mut self, step: &str, expect: &[(&str, Vec<i64>)]) -> Value {
        let dir = self.fx.table_dir();
        let metadata = current_metadata(&dir).await;
        let report = refs_rows(&dir, &metadata);
        let ours = self.icetrim_refs().await;
        let theirs: RefTable = report["refs"]
            .as_object()
            .expect("refs")
            .iter()
            .map(|(name, r)| {
                (
                    name.clone(),
                    (
                        r["type"].as_str().expect("type").to_string(),
                        r["snapshot_id"].as_i64().expect("id"),
                        r["min_snapshots_to_keep"].as_i64(),
                        r["max_snapshot_age_ms"].as_i64(),
                        r["max_ref_age_ms"].as_i64(),
                    ),
                )
            })
            .collect();
        assert_eq!(
            ours, theirs,
            "{step}: system.iceberg_refs vs pyiceberg refs"
        );
        for r in report["inspect_refs"].as_array().expect("inspect_refs") {
            let name = r["name"].as_str().expect("name");
            let (kind, id, min_keep, max_age, max_ref_age) = &ours[name];
            assert_eq!(
                r["type"].as_str().map(str::to_lowercase).as_deref(),
                Some(kind.as_str()),
                "{step}: {name}"
            );
            assert_eq!(r["snapshot_id"].as_i64(), Some(*id), "{step}: {name}");
            assert_eq!(
                r["min_snapshots_to_keep"].as_i64(),
                *min_keep,
                "{step}: {name}"
            );
            assert_eq!(
                r["max_snapshot_age_in_ms"].as_i64(),
                *max_age,
                "{step}: {name}"
            );
            assert_eq!(
                r["max_reference_age_in_ms"].as_i64(),
                *max_ref_age,
                "{step}: {name}"
            );
        }
        assert_eq!(
            report["inspect_refs"].as_array().map(Vec::len),
            Some(ours.len()),
            "{step}: inspect.refs() lists every ref"
        );
        for (name, (_, id, ..)) in &ours {
            let py = ids(&report["pyiceberg"][name]);
            let ch = ids(&report["clickhouse"][name]);
            assert_eq!(
                py, ch,
                "{step}: ref {name}: pyiceberg and ClickHouse read different rows"
            );
            if let Some((_, rows)) = expect.iter().find(|(n, _)| n == name) {
                assert_eq!(&py, rows, "{step}: ref {name} holds the expected rows");
            } else if let Some(rows) = self.known.get(id) {
                assert_eq!(&py, rows, "{step}: ref {name} (snapshot {id}) changed rows");
            }
            self.known.insert(*id, py);
        }
        report
    }

    fn rows_of(&self, label: &str) -> Vec<i64> {
        self.known
            .get(&self.fx.snapshot_id(label))
            .unwrap_or_else(|| panic!("rows of {label} not read yet"))
            .clone()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_ref_reads_the_same_in_pyiceberg_and_clickhouse_after_each_statement() {
    let now = now_ms();
    let fx = make_fixture("py_v2_refs_wap", now, false);
    let dir = fx.table_dir();
    let engine = Engine::builder()
        .clock(FixedClock::new(now))
        .setting("session_timezone", "UTC")
        .build()
        .expect("engine");
    let mut check = Check {
        fx: &fx,
        session: engine.session(),
        known: HashMap::new(),
    };
    let id = |label: &str| fx.snapshot_id(label);
    check
        .run(&format!(
            "CREATE TABLE t ENGINE = IcebergLocal('{}')",
            dir.display()
        ))
        .await;
    check.read("fixture", &[]).await;

    // Tags and branches on the staged snapshots and older ones, to learn their rows.
    for sql in [
        format!("ALTER TABLE t CREATE BRANCH dev AS OF VERSION {}", id("a5")),
        format!(
            "ALTER TABLE t CREATE TAG t6 AS OF VERSION {} RETAIN 30 DAYS",
            id("a6")
        ),
        format!("ALTER TABLE t CREATE TAG wtag AS OF VERSION {}", id("w1")),
        format!(
            "ALTER TABLE t CREATE OR REPLACE TAG w2tag AS OF VERSION {}",
            id("w2")
        ),
    ] {
        check.run(&sql).await;
        check.read(&sql, &[]).await;
    }

    // Fast-forward publish of wap-2: main is w2 itself.
    let sql = "ALTER TABLE t EXECUTE publish_changes('wap-2')";
    check.run(sql).await;
    let w2 = check.rows_of("w2");
    check.read(sql, &[("main", w2.clone())]).await;

    // wap-1 re-applied on top of w2: w2's rows plus w1's own.
    let a5 = check.rows_of("a5");
    let w1_own: Vec<i64> = check
        .rows_of("w1")
        .into_iter()
        .filter(|r| !a5.contains(r))
        .collect();
    assert_eq!(w1_own.len(), 3, "w1 appended three rows");
    let mut expected: Vec<i64> = w2.iter().copied().chain(w1_own).collect();
    expected.sort_unstable();
    let sql = "ALTER TABLE t EXECUTE cherrypick_snapshot(snapshot_id => ".to_string()
        + &id("w1").to_string()
        + ")";
    let result = check.run(&sql).await;
    assert_eq!(result[0][1], Cell::Int(id("w2")), "previous_snapshot_id");
    let report = check.read(&sql, &[("main", expected)]).await;
    let head = report["current_snapshot_id"].as_i64().expect("current");
    assert_eq!(result[1][1], Cell::Int(head), "current_snapshot_id");
    let summary = &report["summaries"][head.to_string()];
    assert_eq!(summary["operation"], "append");
    assert_eq!(summary["source-snapshot-id"], id("w1").to_string());
    assert_eq!(summary["published-wap-id"], "wap-1");
    assert_eq!(summary["added-data-files"], "1");
    assert_eq!(report["parents"][head.to_string()], id("w2"));

    // Moves of main: every ref keeps its snapshot's rows.
    for sql in [
        format!("ALTER TABLE t EXECUTE rollback_to_snapshot({})", id("a6")),
        "ALTER TABLE t EXECUTE set_current_snapshot(ref = 'audit')".to_string(),
        format!(
            "ALTER TABLE t EXECUTE rollback_to_timestamp('{}')",
            chrono::DateTime::from_timestamp_millis(
                fx.facts["snapshot_ts"]["a5"].as_i64().expect("ts") + 60_000
            )
            .expect("time")
            .format("%Y-%m-%d %H:%M:%S")
        ),
        "ALTER TABLE t EXECUTE fast_forward('main', 'audit')".to_string(),
        format!(
            "ALTER TABLE t EXECUTE set_current_snapshot(snapshot_id = {})",
            id("a7")
        ),
        format!(
            "ALTER TABLE t REPLACE BRANCH audit AS OF VERSION {}",
            id("a5")
        ),
        "ALTER TABLE t DROP TAG wtag".to_string(),
        "ALTER TABLE t DROP BRANCH IF EXISTS dev".to_string(),
        "ALTER TABLE t SET TBLPROPERTIES ('history.expire.min-snapshots-to-keep' = '3')"
            .to_string(),
    ] {
        check.run(&sql).await;
        check.read(&sql, &[]).await;
    }
    let refs = check.icetrim_refs().await;
    assert_eq!(refs["main"].1, id("a7"));
    assert_eq!(refs["audit"].1, id("a5"));
    assert!(!refs.contains_key("wtag") && !refs.contains_key("dev"));
}

/// The typed API runs the same statements as SQL: builders, explain without writing, errors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_api_manages_snapshots_and_refs() {
    use std::time::Duration;

    use icetrim::{ErrorKind, StorageOptions, Table};

    let now = now_ms();
    let fx = make_fixture("py_v2_refs_wap", now, false);
    let dir = fx.table_dir();
    let id = |label: &str| fx.snapshot_id(label);
    let table = Table::open(dir.to_str().expect("utf-8"), StorageOptions::default())
        .expect("open")
        .clock(FixedClock::new(now));
    let before = current_metadata(&dir).await;

    let explained = table
        .create_branch("dev")
        .as_of_version(id("a5"))
        .explain()
        .await
        .expect("explain");
    let rows = explained.explain.expect("rows");
    assert_eq!(rows[0].name, "dev");
    assert_eq!(
        rows[0].after.as_deref(),
        Some(format!("branch {}", id("a5")).as_str())
    );
    assert_eq!(
        current_metadata(&dir).await,
        before,
        "explain writes nothing"
    );

    table
        .create_branch("dev")
        .as_of_version(id("a5"))
        .retain(Duration::from_secs(86_400))
        .min_snapshots_to_keep(4)
        .execute()
        .await
        .expect("create branch");
    let moved = table
        .fast_forward("dev", "audit")
        .execute()
        .await
        .expect("fast-forward");
    let m = moved.metrics.expect("metrics");
    assert_eq!(
        (m.previous_snapshot_id, m.current_snapshot_id),
        (Some(id("a5")), Some(id("b2")))
    );
    let rolled = table
        .rollback_to_timestamp(icetrim::Timestamp::Millis(
            fx.facts["snapshot_ts"]["a4"].as_i64().expect("ts") + 1,
        ))
        .execute()
        .await
        .expect("rollback");
    assert_eq!(
        rolled.metrics.expect("metrics").current_snapshot_id,
        Some(id("a4"))
    );
    let published = table
        .publish_changes("wap-1")
        .execute()
        .await
        .expect("publish");
    let head = published
        .metrics
        .expect("metrics")
        .current_snapshot_id
        .expect("head");
    let report = refs_rows(&dir, &current_metadata(&dir).await);
    assert_eq!(report["current_snapshot_id"], head);
    assert_eq!(report["parents"][head.to_string()], id("a4"));
    assert_eq!(report["refs"]["dev"]["snapshot_id"], id("b2"));
    assert_eq!(report["refs"]["dev"]["min_snapshots_to_keep"], 4);
    assert_eq!(report["refs"]["dev"]["max_ref_age_ms"], 86_400_000);
    assert_eq!(report["pyiceberg"]["main"], report["clickhouse"]["main"]);

    let written = current_metadata(&dir).await;
    let e = table
        .set_properties([("history.expire.min-snapshots-to-keep", "0")])
        .execute()
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadArguments);
    assert!(
        e.message().contains("history.expire.min-snapshots-to-keep"),
        "{e}"
    );
    let e = table
        .create_tag("t")
        .min_snapshots_to_keep(2)
        .execute()
        .await
        .unwrap_err();
    assert!(
        e.message().contains("does not apply") || e.message().contains("snapshot retention"),
        "{e}"
    );
    let e = table.drop_branch("main").execute().await.unwrap_err();
    assert_eq!(
        e.message(),
        format!(
            "DROP BRANCH on {}: Cannot remove main branch",
            dir.display()
        )
    );
    assert_eq!(
        current_metadata(&dir).await,
        written,
        "refused statements write nothing"
    );
    table
        .unset_properties(["nope"])
        .if_exists()
        .execute()
        .await
        .expect("unset if exists");
    assert_eq!(
        current_metadata(&dir).await,
        written,
        "a no-op writes nothing"
    );
}
