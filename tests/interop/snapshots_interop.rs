//! Snapshot and ref management read back by pyiceberg and ClickHouse (chdb): after
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
        .rollback_to_timestamp(icetrim::engine::Timestamp::Millis(
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
    // Cancelled before the commit: QUERY_WAS_CANCELLED, nothing written.
    let token = icetrim::progress::CancelToken::new();
    token.cancel();
    let e = table
        .rollback_to_snapshot(id("a3"))
        .cancel_token(&token)
        .execute()
        .await
        .unwrap_err();
    assert_eq!(e.code(), 394, "{e}");
    let e = table
        .create_tag("cancelled")
        .cancel_token(&token)
        .execute()
        .await
        .unwrap_err();
    assert_eq!(e.code(), 394, "{e}");
    assert_eq!(
        current_metadata(&dir).await,
        written,
        "a cancelled statement writes nothing"
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

mod dynamic_overwrite {
    //! Java's `testCherryPickDynamicOverwrite`, `...Conflict` and `...DeleteConflict` on a
    //! partitioned pyiceberg table, the staged `replace-partitions` overwrites written by our own
    //! commit code (pyiceberg 0.12 writes a dynamic overwrite as a delete and an append).

    use std::collections::BTreeMap;
    use std::path::Path;

    use icetrim::FixedClock;
    use icetrim::engine::Engine;
    use icetrim::format::Value as Cell;
    use icetrim::internals::iceberg::locate::MetadataSettings;
    use icetrim::internals::iceberg::manifest::{DataFile, inherit, read_manifest};
    use icetrim::internals::iceberg::manifest_list::read_manifest_list;
    use icetrim::internals::iceberg::metadata::TableMetadata;
    use icetrim::internals::iceberg::spec::EntryStatus;
    use icetrim::internals::iceberg::txn::{
        CommitRequest, FileChanges, Operation, PrepareOptions, Target,
    };
    use icetrim::internals::io::FileIO;

    use super::{ids, refs_rows};
    use crate::support::expire::current_metadata;
    use crate::support::fixtures::{make_fixture, now_ms};

    /// The live data files of the current snapshot, by local path.
    pub(super) async fn live_files(dir: &Path) -> BTreeMap<String, DataFile> {
        let io = FileIO::local();
        let path = current_metadata(dir).await;
        let md =
            TableMetadata::parse(&std::fs::read(&path).expect("metadata"), "m").expect("parse");
        let list_path = md
            .current_snapshot()
            .expect("current")
            .manifest_list
            .clone()
            .expect("list");
        let list = read_manifest_list(&io.read(&list_path).await.expect("read"), &list_path)
            .expect("list");
        let mut out = BTreeMap::new();
        for m in list {
            let mut manifest = read_manifest(&io.read(&m.manifest_path).await.expect("read"), "m")
                .expect("manifest");
            inherit(&mut manifest.entries, &m);
            for e in manifest.entries {
                if e.status != EntryStatus::Deleted {
                    let local = e
                        .data_file
                        .file_path
                        .trim_start_matches("file://")
                        .to_string();
                    out.insert(local, e.data_file);
                }
            }
        }
        out
    }

    /// A copy of the data file at `from` (local path) at `to`, described as its original is.
    fn copy(live: &BTreeMap<String, DataFile>, from: &Path, to: &Path) -> DataFile {
        std::fs::copy(from, to).expect("copy a data file");
        let mut file = live[from.to_str().expect("utf-8")].clone();
        file.file_path = format!("file://{}", to.display());
        file.first_row_id = None;
        file
    }

    pub(super) async fn commit(
        dir: &Path,
        op: Operation,
        changes: FileChanges,
        target: Target,
        replace: bool,
    ) -> i64 {
        let mut request = CommitRequest::new(op, changes);
        request.options = PrepareOptions {
            target,
            ..PrepareOptions::default()
        };
        if replace {
            request
                .extra_summary
                .insert("replace-partitions".into(), "true".into());
        }
        let done = crate::support::commit::commit_request(
            &FileIO::local(),
            dir.to_str().expect("utf-8"),
            &MetadataSettings::default(),
            3,
            &request,
        )
        .await
        .expect("commit");
        done.metadata
            .snapshots()
            .last()
            .expect("snapshot")
            .snapshot_id
    }

    fn uri(path: &Path) -> String {
        format!("file://{}", path.display())
    }

    /// `a` with the rows of `b` removed once each (multisets).
    fn minus(a: &[i64], b: &[i64]) -> Vec<i64> {
        let mut left = a.to_vec();
        for x in b {
            if let Some(i) = left.iter().position(|y| y == x) {
                left.remove(i);
            }
        }
        left
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn cherry_picking_a_dynamic_overwrite() {
        let now = now_ms();
        let fx = make_fixture("py_v2_partitioned", now, false);
        let dir = fx.table_dir();
        let p4 = fx.snapshot_id("p4");
        let live = live_files(&dir).await;
        // Stage an overwrite of partition b on p4 (main's head).
        let replacement = copy(
            &live,
            &fx.data_file("p2@_c=b"),
            &dir.join("data/_c=b/replacement.parquet"),
        );
        let staged = commit(
            &dir,
            Operation::Overwrite,
            FileChanges {
                added_data: vec![replacement],
                removed: vec![uri(&fx.data_file("p1@_c=b")), uri(&fx.data_file("p2@_c=b"))],
                ..FileChanges::default()
            },
            Target::Staged,
            true,
        )
        .await;
        // An append to partition d on main, so the overwrite cannot fast-forward.
        let extra_d = copy(
            &live,
            &fx.data_file("p4@_c=d"),
            &dir.join("data/_c=d/extra.parquet"),
        );
        let appended = commit(
            &dir,
            Operation::Append,
            FileChanges {
                added_data: vec![extra_d],
                ..FileChanges::default()
            },
            Target::Main,
            false,
        )
        .await;

        let engine = Engine::builder()
            .clock(FixedClock::new(now))
            .build()
            .expect("engine");
        let mut session = engine.session();
        let run = |sql: String| sql;
        session
            .execute(&format!(
                "CREATE TABLE t ENGINE = IcebergLocal('{}')",
                dir.display()
            ))
            .await
            .expect("create");
        for sql in [
            run(format!(
                "ALTER TABLE t CREATE TAG staged AS OF VERSION {staged}"
            )),
            run(format!("ALTER TABLE t CREATE TAG base AS OF VERSION {p4}")),
        ] {
            session.execute(&sql).await.expect("tag");
        }
        let before = refs_rows(&dir, &current_metadata(&dir).await);
        let staged_rows = ids(&before["pyiceberg"]["staged"]);
        let base_rows = ids(&before["pyiceberg"]["base"]);
        let main_rows = ids(&before["pyiceberg"]["main"]);
        assert_eq!(ids(&before["clickhouse"]["staged"]), staged_rows);

        let result = session
            .execute(&format!(
                "ALTER TABLE t EXECUTE cherrypick_snapshot({staged})"
            ))
            .await
            .expect("cherry-pick");
        assert_eq!(
            result[0].rows[0][1],
            Cell::Int(appended),
            "previous_snapshot_id"
        );
        let after = refs_rows(&dir, &current_metadata(&dir).await);
        let head = after["current_snapshot_id"].as_i64().expect("head");
        assert_ne!(head, staged, "not a fast-forward");
        assert_eq!(after["parents"][head.to_string()], appended);
        let summary = &after["summaries"][head.to_string()];
        assert_eq!(summary["operation"], "overwrite");
        assert_eq!(summary["source-snapshot-id"], staged.to_string());
        assert!(summary.get("published-wap-id").is_none());
        let mut expected: Vec<i64> = staged_rows
            .iter()
            .copied()
            .chain(minus(&main_rows, &base_rows))
            .collect();
        expected.sort_unstable();
        assert_eq!(
            ids(&after["pyiceberg"]["main"]),
            expected,
            "partition b replaced, d's append kept"
        );
        assert_eq!(ids(&after["clickhouse"]["main"]), expected);

        // A second overwrite, of partition a, staged on the new head; then an append to partition
        // a on main: the partition changed, the cherry-pick is refused and writes nothing.
        let live = live_files(&dir).await;
        let replacement_a = copy(
            &live,
            &fx.data_file("p3@_c=a"),
            &dir.join("data/_c=a/replacement.parquet"),
        );
        let staged_a = commit(
            &dir,
            Operation::Overwrite,
            FileChanges {
                added_data: vec![replacement_a],
                removed: vec![uri(&fx.data_file("p1@_c=a")), uri(&fx.data_file("p3@_c=a"))],
                ..FileChanges::default()
            },
            Target::Staged,
            true,
        )
        .await;
        let conflict = copy(
            &live,
            &fx.data_file("p3@_c=a"),
            &dir.join("data/_c=a/conflict.parquet"),
        );
        commit(
            &dir,
            Operation::Append,
            FileChanges {
                added_data: vec![conflict],
                ..FileChanges::default()
            },
            Target::Main,
            false,
        )
        .await;
        let written = current_metadata(&dir).await;
        let e = session
            .execute(&format!(
                "ALTER TABLE t EXECUTE cherrypick_snapshot({staged_a})"
            ))
            .await
            .unwrap_err();
        assert!(
            e.message()
                .contains("Cannot cherry-pick replace partitions with changed partition"),
            "{e}"
        );
        assert_eq!(current_metadata(&dir).await, written, "nothing written");

        // A third, of partition d, staged; then main deletes d's files: what the overwrite removes
        // is no longer live, refused (Java's "Missing required files to delete").
        let live = live_files(&dir).await;
        let replacement_d = copy(
            &live,
            &fx.data_file("p4@_c=d"),
            &dir.join("data/_c=d/replacement.parquet"),
        );
        let d_file = uri(&fx.data_file("p4@_c=d"));
        let staged_d = commit(
            &dir,
            Operation::Overwrite,
            FileChanges {
                added_data: vec![replacement_d],
                removed: vec![d_file.clone()],
                ..FileChanges::default()
            },
            Target::Staged,
            true,
        )
        .await;
        commit(
            &dir,
            Operation::Delete,
            FileChanges {
                removed: vec![d_file],
                ..FileChanges::default()
            },
            Target::Main,
            false,
        )
        .await;
        let written = current_metadata(&dir).await;
        let e = session
            .execute(&format!(
                "ALTER TABLE t EXECUTE cherrypick_snapshot({staged_d})"
            ))
            .await
            .unwrap_err();
        assert!(e.message().contains("is not a live file"), "{e}");
        assert_eq!(current_metadata(&dir).await, written, "nothing written");
    }
}

mod conflict {
    //! A cherry-pick that loses its commit to a concurrent writer: the manifests it wrote for the
    //! lost attempt are deleted, the decision is re-made on the new metadata, and the second
    //! attempt commits on top of the other writer's snapshot.

    use std::collections::BTreeSet;
    use std::path::Path;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use icetrim::internals::iceberg::spec::DataContent;
    use icetrim::internals::iceberg::txn::{FileChanges, Operation, Target};
    use icetrim::internals::io::{FaultyStore, FileIO, HookFn, Op};
    use icetrim::{FixedClock, Table};
    use object_store::local::LocalFileSystem;
    use object_store::path::Path as ObjectPath;

    use super::dynamic_overwrite::{commit, live_files};
    use super::{ids, refs_rows};
    use crate::support::expire::current_metadata;
    use crate::support::fixtures::{self, make_fixture, now_ms};

    fn avro_files(dir: &Path) -> BTreeSet<String> {
        std::fs::read_dir(dir.join("metadata"))
            .expect("metadata folder")
            .map(|e| e.expect("entry").path().display().to_string())
            .filter(|p| p.ends_with(".avro"))
            .collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lost_commit_deletes_its_manifests_and_re_plans() {
        let now = now_ms();
        let fx = make_fixture("ch_v2", now, false);
        let dir = fx.table_dir();
        // Stage an append on main's head, then move main on, so picking it writes a new snapshot.
        let live = live_files(&dir).await;
        let (source, file) = live
            .iter()
            .find(|(_, f)| f.content == DataContent::Data)
            .expect("a data file");
        let mut staged_file = file.clone();
        let staged_path = dir.join("data/staged-copy.parquet");
        std::fs::copy(source, &staged_path).expect("copy");
        staged_file.file_path = staged_path.display().to_string();
        staged_file.first_row_id = None;
        let staged = commit(
            &dir,
            Operation::Append,
            FileChanges {
                added_data: vec![staged_file.clone()],
                ..FileChanges::default()
            },
            Target::Staged,
            false,
        )
        .await;
        let mut main_file = file.clone();
        let main_path = dir.join("data/main-copy.parquet");
        std::fs::copy(source, &main_path).expect("copy");
        main_file.file_path = main_path.display().to_string();
        main_file.first_row_id = None;
        let moved_on = commit(
            &dir,
            Operation::Append,
            FileChanges {
                added_data: vec![main_file],
                ..FileChanges::default()
            },
            Target::Main,
            false,
        )
        .await;
        let avro_before = avro_files(&dir);
        let before = refs_rows(&dir, &current_metadata(&dir).await);
        let main_before = ids(&before["pyiceberg"]["main"]);

        // ClickHouse inserts a row just before our first metadata create.
        let fired = Arc::new(AtomicBool::new(false));
        let (hook_dir, hook_fired) = (dir.clone(), Arc::clone(&fired));
        let hook = HookFn(
            move |op: Op, path: Option<&ObjectPath>| -> object_store::Result<()> {
                let commit = op == (Op::Put { create: true })
                    && path.is_some_and(|p| p.as_ref().ends_with(".metadata.json"));
                if commit && !hook_fired.swap(true, Ordering::SeqCst) {
                    fixtures::clickhouse(&hook_dir, "INSERT INTO t VALUES (100, 'concurrent')")
                        .expect("the concurrent INSERT");
                }
                Ok(())
            },
        );
        let store = FaultyStore::hooked(Arc::new(LocalFileSystem::new()), Arc::new(hook));
        let io = FileIO::from_store("/", Arc::new(store)).expect("io");
        let table = Table::with_io(dir.display().to_string(), io).clock(FixedClock::new(now));
        let outcome = table
            .cherrypick_snapshot(staged)
            .execute()
            .await
            .expect("cherry-pick");
        assert!(fired.load(Ordering::SeqCst), "the concurrent writer ran");
        let metrics = outcome.metrics.expect("metrics");
        assert_ne!(
            metrics.previous_snapshot_id,
            Some(moved_on),
            "re-planned on ClickHouse's snapshot"
        );

        let after = refs_rows(&dir, &current_metadata(&dir).await);
        let head = after["current_snapshot_id"].as_i64().expect("head");
        assert_eq!(Some(head), metrics.current_snapshot_id);
        let parent = after["parents"][head.to_string()].as_i64().expect("parent");
        assert_eq!(Some(parent), metrics.previous_snapshot_id);
        assert_eq!(
            after["parents"][parent.to_string()],
            moved_on,
            "ClickHouse's snapshot is the parent"
        );
        let mut expected = main_before.clone();
        expected.push(100);
        let main_after = ids(&after["pyiceberg"]["main"]);
        assert_eq!(main_after, ids(&after["clickhouse"]["main"]));
        assert_eq!(
            main_after.len(),
            expected.len() + staged_file.record_count as usize,
            "main's rows, ClickHouse's row and the picked file's rows"
        );
        assert!(main_after.contains(&100));

        // Every manifest file on disk is one some snapshot references: the lost attempt's are gone.
        let report = fixtures::oracle_inspect(&current_metadata(&dir).await);
        let mut referenced = BTreeSet::new();
        for (_, snapshot) in report["snapshot_files"]
            .as_object()
            .expect("snapshot files")
        {
            referenced.insert(
                snapshot["manifest_list"]
                    .as_str()
                    .expect("list")
                    .to_string(),
            );
            for m in snapshot["manifests"].as_array().expect("manifests") {
                referenced.insert(m.as_str().expect("manifest").to_string());
            }
        }
        let on_disk = avro_files(&dir);
        let stray: Vec<&String> = on_disk.difference(&referenced).collect();
        assert!(
            stray.is_empty(),
            "unreferenced manifests left behind: {stray:?}"
        );
        assert!(on_disk.len() > avro_before.len());
    }
}

/// Partition evolution across staged snapshots: both engines read every ref as main moves between
/// snapshots of two specs; a staged snapshot of the old spec cannot be re-applied (refused, nothing
/// written), one of the current spec is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refs_across_partition_evolution() {
    let now = now_ms();
    let fx = make_fixture("py_v2_refs_specs", now, false);
    let dir = fx.table_dir();
    let engine = Engine::builder()
        .clock(FixedClock::new(now))
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
    for (tag, label) in [
        ("old", "w_old"),
        ("new", "w_new"),
        ("t2", "a2"),
        ("t4", "a4"),
    ] {
        let sql = format!("ALTER TABLE t CREATE TAG {tag} AS OF VERSION {}", id(label));
        check.run(&sql).await;
        check.read(&sql, &[]).await;
    }

    let written = current_metadata(&dir).await;
    let e = check
        .session
        .execute("ALTER TABLE t EXECUTE publish_changes('wap-old')")
        .await
        .unwrap_err();
    assert_eq!(e.code(), 48, "{e}");
    assert!(e.message().contains("partition spec 0"), "{e}");
    assert_eq!(current_metadata(&dir).await, written, "nothing written");

    let a4 = check.rows_of("a4");
    let new_own: Vec<i64> = check
        .rows_of("w_new")
        .into_iter()
        .filter(|r| !a4.contains(r))
        .collect();
    let mut expected: Vec<i64> = check.rows_of("a5").into_iter().chain(new_own).collect();
    expected.sort_unstable();
    let sql = "ALTER TABLE t EXECUTE publish_changes('wap-new')";
    check.run(sql).await;
    check.read(sql, &[("main", expected)]).await;

    for sql in [
        format!("ALTER TABLE t EXECUTE rollback_to_snapshot({})", id("a2")),
        "ALTER TABLE t EXECUTE set_current_snapshot(ref = 'old')".to_string(),
        "ALTER TABLE t EXECUTE fast_forward('main', 'new')".to_string(),
    ] {
        let result = check.session.execute(&sql).await;
        match result {
            Ok(_) => {
                check.read(&sql, &[]).await;
            }
            // old (w_old, on a2) is not an ancestor of new (w_new, on a4): refused.
            Err(e) => assert!(
                sql.contains("fast_forward") && e.message().contains("not an ancestor"),
                "{sql}: {e}"
            ),
        }
    }
}
