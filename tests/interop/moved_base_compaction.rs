//! `OPTIMIZE TABLE` when the table moves between the plan and the commit (see `moved_base.rs`),
//! on a path table, a REST catalog table and a Glue catalog table. The compaction plans from `D`
//! (five small files and a position delete that applies to them: one group of five) and the other
//! writer commits right before its first commit attempt:
//! - `main` rolled back to `P`, before the delete: every group fails with Java's history message,
//!   `failed_data_files_count` counts the files, no `replace` is committed, and every file the
//!   compaction wrote is gone; pyiceberg and ClickHouse read `P`'s rows;
//! - the delete file removed by an overwrite: the group fails the same way;
//! - the table upgraded from v2 to v3: every group fails (path, Glue); the REST catalog refuses the
//!   commit of a snapshot without row lineage itself, so nothing is committed there either;
//! - an append: the compaction commits on it, and its `replace` reads its parent's rows.
//!
//! Every `replace` snapshot in the table reads exactly its parent's rows (pyiceberg by snapshot
//! id), and ClickHouse reads the current snapshot's rows. Also the commit outcomes no other test
//! reaches: unknown (REST answers 500) and unconfirmed (a rival metadata file of our version that
//! cannot be retracted): both fail the statement and delete nothing.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use icetrim::CompactMetrics;
use icetrim::engine::{Metrics, QueryResult};
use icetrim::internals::io::{FaultyStore, FileIO, Op, StoreHook};
use icetrim::internals::plan::{CompactOptions, ProcedureCall};
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;

use crate::moved_base::{Injection, Kind, Moved, kinds};
use crate::moved_base_checks::{
    assert_only_theirs_added, rest_refuses_the_v2_snapshot, snapshot_ids, warnings_of,
};
use crate::support::rest_catalog;

fn optimize() -> ProcedureCall {
    ProcedureCall::Compact(CompactOptions::optimize())
}

fn metrics(r: &QueryResult) -> CompactMetrics {
    match r.metrics {
        Some(Metrics::Compact(m)) => m,
        ref other => panic!("no compaction metrics: {other:?}"),
    }
}

/// Runs `OPTIMIZE TABLE` on a `kind` table with `what` injected, expecting every group refused
/// for `reason`: the metrics, the warning, no `replace`, nothing of ours left, the rows read.
async fn refused(kind: Kind, what: fn(&Moved) -> Injection, reason: fn(&Moved) -> String) {
    let label = format!("{kind:?}");
    let moved = Moved::new(kind).await;
    let before = moved.writer.files().await;
    let injection = what(&moved);
    let (result, injected) = moved.run(optimize(), injection.clone()).await;
    let r = result.unwrap_or_else(|e| panic!("{label} {injection:?}: {e}"));
    // The rows first: no `replace` may read other rows than its parent, whatever else happened.
    let state = moved.state().await;
    state.assert_consistent(&label);
    assert!(
        state.replaces().is_empty(),
        "{label}: no replace: {}",
        state.0
    );
    let m = metrics(&r);
    assert_eq!(
        m.failed_data_files_count,
        5,
        "{label} {injection:?}: {m:?} {}",
        warnings_of(&r)
    );
    assert_eq!(m.rewritten_data_files_count, 0, "{label}: {m:?}");
    assert_eq!(m.added_data_files_count, 0, "{label}: {m:?}");
    let reason = reason(&moved);
    assert!(
        r.warnings.iter().any(|w| w.contains(&reason)
            && w.contains("5 data files")
            && w.contains("deleted (never committed)")),
        "{label}: no warning with {reason:?}: {}",
        warnings_of(&r)
    );
    let injected = injected.unwrap_or_else(|| panic!("{label}: the injection never ran"));
    assert_only_theirs_added(&moved, &before, &injected, &label).await;
    match injection {
        Injection::Rollback(p) => {
            assert_eq!(
                state.current(),
                p,
                "{label}: main stays where it was rolled back"
            );
            assert_eq!(state.ids(p).len(), 15, "{label}: P's rows");
        }
        Injection::DropDelete(_) => {
            let head = state.current();
            assert_eq!(state.parent(head), Some(moved.d), "{label}");
            assert_eq!(
                state.ids(head).len(),
                15,
                "{label}: the deleted row is back"
            );
        }
        Injection::UpgradeV3 => {
            assert_eq!(state.current(), moved.d, "{label}");
            assert_eq!(state.format_version(), 3, "{label}");
            assert_eq!(state.ids(moved.d).len(), 14, "{label}");
        }
        Injection::Append(_) => unreachable!("an append is harmless"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollback_past_the_applied_delete_fails_every_group() {
    for kind in kinds() {
        refused(
            kind,
            |m| Injection::Rollback(m.p),
            |m| {
                format!(
                    "Cannot determine history between starting snapshot {} and the last known \
                     ancestor",
                    m.d
                )
            },
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vanished_applied_delete_file_fails_the_group() {
    for kind in kinds() {
        refused(
            kind,
            |m| Injection::DropDelete(m.delete_path.clone()),
            |m| {
                let name = m.delete_path.rsplit('/').next().unwrap_or_default();
                format!("{name}', applied to")
            },
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_format_version_upgrade_fails_every_group() {
    for kind in kinds().into_iter().filter(|k| *k != Kind::Rest) {
        refused(
            kind,
            |_| Injection::UpgradeV3,
            |_| "the table's format version changed from 2 to 3".to_string(),
        )
        .await;
    }
    // REST: the catalog applies our updates on its newest metadata (no requirement covers the
    // format version) and refuses a snapshot without row lineage on a v3 table.
    rest_refuses_the_v2_snapshot(optimize()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrent_append_is_harmless_and_the_compaction_commits() {
    for kind in kinds() {
        let label = format!("{kind:?}");
        let moved = Moved::new(kind).await;
        let (result, injected) = moved.run(optimize(), Injection::Append(100)).await;
        assert!(injected.is_some(), "{label}: the injection ran");
        let r = result.unwrap_or_else(|e| panic!("{label}: {e}"));
        let m = metrics(&r);
        assert_eq!(
            (m.rewritten_data_files_count, m.failed_data_files_count),
            (5, 0),
            "{label}: {m:?} {}",
            warnings_of(&r)
        );
        assert_eq!(m.removed_delete_files_count, 1, "{label}: {m:?}");
        let state = moved.state().await;
        let head = state.current();
        assert_eq!(state.operation(head), "replace", "{label}");
        let appended = state.parent(head).expect("a parent");
        assert_eq!(state.operation(appended), "append", "{label}");
        assert_eq!(state.parent(appended), Some(moved.d), "{label}");
        assert_eq!(state.ids(head).len(), 15, "{label}: 14 + the appended row");
        assert!(state.ids(head).contains(&100), "{label}");
        state.assert_consistent(&label);
    }
}

/// The catalog answers our commit with 500 and did not apply it: the outcome is unknown to us,
/// the statement fails and deletes nothing (the catalog might hold our commit).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_commit_outcome_deletes_nothing() {
    let moved = Moved::new(Kind::Rest).await;
    let before = moved.writer.files().await;
    let warehouse = moved.writer.warehouse().to_string();
    rest_catalog::fail_next(&warehouse, &["ns"], "t", "500").await;
    let e = moved
        .run_plain(optimize())
        .await
        .expect_err("an unknown outcome fails the statement");
    assert_eq!(e.kind(), icetrim::ErrorKind::NetworkError, "{e}");
    assert!(e.message().contains("unknown outcome"), "{e}");
    let added: Vec<String> = moved
        .writer
        .files()
        .await
        .difference(&before)
        .cloned()
        .collect();
    assert!(
        added.iter().any(|f| f.contains("-compacted-")),
        "the outputs stay: {added:?}"
    );
    assert!(
        added.iter().any(|f| f.contains("snap-")),
        "the manifest list stays: {added:?}"
    );
    let state = moved.state().await;
    assert_eq!(state.current(), moved.d);
    state.assert_consistent("unknown outcome");
}

/// A rival metadata file of our version appears right after ours, and ours cannot be removed:
/// the commit is unconfirmed, the statement fails and deletes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unconfirmed_commit_deletes_nothing() {
    let moved = Moved::new(Kind::Path).await;
    let before = moved.writer.files().await;
    let dir = PathBuf::from(&moved.writer.location);
    let hook = Arc::new(RivalMetadata {
        dir: dir.clone(),
        fired: AtomicBool::new(false),
    });
    let store = FaultyStore::hooked(Arc::new(LocalFileSystem::new()), hook.clone());
    let io = FileIO::from_store("/", Arc::new(store)).expect("a FileIO");
    let e = moved
        .run_with_io(optimize(), io)
        .await
        .expect_err("an unconfirmed commit fails the statement");
    assert!(hook.fired.load(Ordering::SeqCst), "the rival was written");
    assert!(e.message().contains("unconfirmed"), "{e}");
    let added: Vec<String> = moved
        .writer
        .files()
        .await
        .difference(&before)
        .cloned()
        .collect();
    assert!(
        added.iter().any(|f| f.contains("-compacted-")),
        "the outputs stay: {added:?}"
    );
    assert_eq!(
        added
            .iter()
            .filter(|f| f.ends_with(".metadata.json"))
            .count(),
        2,
        "ours and the rival: {added:?}"
    );
    // Nothing was retracted: the table still lists what it listed (either file is readable).
    let md = moved.metadata().await;
    assert!(snapshot_ids(&md).contains(&moved.d));
}

/// Right after a metadata file is created, writes a rival of the same version (a copy of the
/// newest file below it); every delete of a metadata file then fails.
#[derive(Debug)]
pub(crate) struct RivalMetadata {
    pub dir: PathBuf,
    pub fired: AtomicBool,
}

#[async_trait::async_trait]
impl StoreHook for RivalMetadata {
    async fn before(&self, op: Op, path: Option<&ObjectPath>) -> object_store::Result<()> {
        let metadata = path.is_some_and(|p| p.as_ref().ends_with(".metadata.json"));
        if matches!(op, Op::Delete { .. }) && metadata && self.fired.load(Ordering::SeqCst) {
            return Err(object_store::Error::Generic {
                store: "RivalMetadata",
                source: "deleting metadata files is refused".into(),
            });
        }
        Ok(())
    }

    async fn after(&self, op: Op, path: Option<&ObjectPath>, ok: bool) {
        let version = path
            .and_then(|p| icetrim::internals::iceberg::locate::parse_file_name(p.as_ref()))
            .and_then(|n| n.version);
        let Some(version) = version.filter(|_| ok && op == (Op::Put { create: true })) else {
            return;
        };
        if self.fired.swap(true, Ordering::SeqCst) {
            return;
        }
        let metadata = self.dir.join("metadata");
        let base = std::fs::read_dir(&metadata)
            .expect("the metadata folder")
            .filter_map(|e| {
                let name = e.ok()?.file_name().into_string().ok()?;
                let v = icetrim::internals::iceberg::locate::parse_file_name(&name)?.version?;
                (v < version).then_some((v, name))
            })
            .max()
            .expect("a base file")
            .1;
        let bytes = std::fs::read(metadata.join(&base)).expect("the base file");
        let name = format!("{version:05}-{}.metadata.json", uuid::Uuid::new_v4());
        std::fs::write(metadata.join(name), bytes).expect("the rival");
    }
}
