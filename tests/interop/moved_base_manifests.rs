//! `rewrite_manifests` when the table moves between the plan and the commit (see
//! `moved_base.rs`), on a path table, a REST catalog table and a Glue catalog table. The rewrite
//! plans from `D` (five data manifests merged into one; `D`'s delete manifest kept) and the other
//! writer commits right before its first commit attempt:
//! - `main` rolled back to `P`: the manifests written for `D` are deleted (never committed), the
//!   rewrite plans again from `P` (a warning with Java's history message says so) and commits a
//!   `replace` on `P` listing exactly `P`'s live files;
//! - the table upgraded from v2 to v3: the v2 manifests are deleted and the rewrite plans again,
//!   writing v3 manifests (path, Glue); the REST catalog refuses a v2-built snapshot on a v3
//!   table itself;
//! - the delete file removed by an overwrite, or an append: the written manifests still serve
//!   (the head descends from `D` and lists every manifest they replace), and the `replace` lists
//!   exactly its parent's live files.
//!
//! Every `replace` snapshot reads exactly its parent's rows (pyiceberg by snapshot id), ClickHouse
//! reads the current rows. Also the outcomes no other test reaches: unknown (REST answers 500) and
//! unconfirmed (a rival metadata file): the statement fails and deletes nothing.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use icetrim::RewriteManifestsMetrics;
use icetrim::engine::{Metrics, QueryResult};
use icetrim::internals::iceberg::manifest::read_manifest;
use icetrim::internals::iceberg::manifest_list::read_manifest_list;
use icetrim::internals::io::{FaultyStore, FileIO};
use icetrim::internals::plan::{ProcedureCall, RewriteManifestsOptions};
use object_store::local::LocalFileSystem;

use crate::moved_base::{Injection, Kind, Listing, Moved, kinds};
use crate::moved_base_checks::{rest_refuses_the_v2_snapshot, warnings_of};
use crate::moved_base_compaction::RivalMetadata;
use crate::support::rest_catalog;

fn rewrite() -> ProcedureCall {
    ProcedureCall::RewriteManifests(RewriteManifestsOptions::default())
}

fn metrics(r: &QueryResult) -> RewriteManifestsMetrics {
    match r.metrics {
        Some(Metrics::RewriteManifests(m)) => m,
        ref other => panic!("not a rewrite_manifests result: {other:?}"),
    }
}

/// The committed `replace` (the current snapshot) lists exactly its parent's live files, and reads
/// its parent's rows (pyiceberg; ClickHouse the current rows). Returns (replace, parent).
async fn assert_same_files_as_parent(moved: &Moved, label: &str) -> (i64, i64) {
    let state = moved.state().await;
    let head = state.current();
    assert_eq!(state.operation(head), "replace", "{label}: {}", state.0);
    let parent = state.parent(head).expect("a parent");
    assert_eq!(
        moved.live(head).await,
        moved.live(parent).await,
        "{label}: the replace lists other live files than its parent {parent}"
    );
    state.assert_consistent(label);
    (head, parent)
}

/// The manifests snapshot `id` added, with the `format-version` of their Avro header.
async fn added_manifests(moved: &Moved, id: i64) -> Vec<(String, Option<String>)> {
    let md = moved.metadata().await;
    let snapshot = md.snapshot(id).expect("a listed snapshot");
    let io = &moved.writer.io;
    let list_path = snapshot.manifest_list.clone().expect("a manifest list");
    let bytes = io.read(&list_path).await.expect("the list");
    let list = read_manifest_list(&bytes, &list_path).expect("a list");
    let mut out = Vec::new();
    for m in list.iter().filter(|m| m.added_snapshot_id == id) {
        let bytes = io.read(&m.manifest_path).await.expect("a manifest");
        let manifest = read_manifest(&bytes, &m.manifest_path).expect("a manifest");
        let version = manifest.meta_str("format-version").map(str::to_string);
        out.push((m.manifest_path.clone(), version));
    }
    out
}

/// What the statement wrote before its first commit attempt (the listing right before the
/// injection, less what was there before the statement).
fn ours(before: &Listing, injected: &Option<(Listing, Listing)>) -> Listing {
    let (at_injection, _) = injected.as_ref().expect("the injection ran");
    at_injection.difference(before).cloned().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollback_makes_the_rewrite_plan_again_from_the_new_head() {
    for kind in kinds() {
        let label = format!("{kind:?}");
        let moved = Moved::new(kind).await;
        let before = moved.writer.files().await;
        let (result, injected) = moved.run(rewrite(), Injection::Rollback(moved.p)).await;
        let r = result.unwrap_or_else(|e| panic!("{label}: {e}"));
        let history = format!(
            "Cannot determine history between starting snapshot {} and the last known ancestor",
            moved.d
        );
        assert!(
            r.warnings.iter().any(|w| w.contains(&history)
                && w.contains("deleted (never committed)")
                && w.contains(&format!("planned again from snapshot {}", moved.p))),
            "{label}: {}",
            warnings_of(&r)
        );
        let m = metrics(&r);
        assert_eq!(
            (m.rewritten_manifests_count, m.added_manifests_count),
            (5, 1),
            "{label}: {m:?}"
        );
        let (head, parent) = assert_same_files_as_parent(&moved, &label).await;
        assert_eq!(parent, moved.p, "{label}: the replace follows the rollback");
        let state = moved.state().await;
        assert_eq!(state.ids(head).len(), 15, "{label}: P's rows");
        let injected_listing = injected.clone().expect("the injection ran");
        assert_only_theirs_added_but(&moved, &before, &injected_listing, head, &label).await;
        let first = ours(&before, &injected);
        let now = moved.writer.files().await;
        let left: Vec<&String> = first.intersection(&now).collect();
        assert!(
            left.is_empty(),
            "{label}: the manifests written for D stay: {left:?}"
        );
    }
}

/// Like [`assert_only_theirs_added`], but the files `head` (the committed `replace`) references are
/// expected too.
async fn assert_only_theirs_added_but(
    moved: &Moved,
    before: &Listing,
    injected: &(Listing, Listing),
    head: i64,
    label: &str,
) {
    let committed: Vec<String> = added_manifests(moved, head)
        .await
        .into_iter()
        .map(|(path, _)| path)
        .collect();
    let list = moved
        .metadata()
        .await
        .snapshot(head)
        .and_then(|s| s.manifest_list.clone())
        .expect("a list");
    let now = moved.writer.files().await;
    let theirs: Listing = injected.1.difference(&injected.0).cloned().collect();
    let left: Vec<&String> = now
        .difference(before)
        .filter(|f| !theirs.contains(*f))
        .filter(|f| !f.ends_with(".metadata.json"))
        .filter(|f| {
            !committed
                .iter()
                .chain([&list])
                .any(|c| c.ends_with(f.as_str()))
        })
        .collect();
    assert!(
        left.is_empty(),
        "{label}: uncommitted files of the statement are left: {left:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_format_version_upgrade_makes_the_rewrite_plan_again_in_v3() {
    for kind in kinds().into_iter().filter(|k| *k != Kind::Rest) {
        let label = format!("{kind:?}");
        let moved = Moved::new(kind).await;
        let before = moved.writer.files().await;
        let (result, injected) = moved.run(rewrite(), Injection::UpgradeV3).await;
        let r = result.unwrap_or_else(|e| panic!("{label}: {e}"));
        assert!(
            r.warnings.iter().any(
                |w| w.contains("the table's format version changed from 2 to 3")
                    && w.contains(&format!("planned again from snapshot {}", moved.d))
            ),
            "{label}: {}",
            warnings_of(&r)
        );
        let (head, parent) = assert_same_files_as_parent(&moved, &label).await;
        assert_eq!(parent, moved.d, "{label}");
        let added = added_manifests(&moved, head).await;
        assert!(!added.is_empty(), "{label}");
        for (path, version) in &added {
            assert_eq!(
                version.as_deref(),
                Some("3"),
                "{label}: {path} is a v3 table's manifest"
            );
        }
        let first = ours(&before, &injected);
        let now = moved.writer.files().await;
        let left: Vec<&String> = first.intersection(&now).collect();
        assert!(
            left.is_empty(),
            "{label}: the v2 manifests written first stay: {left:?}"
        );
        assert_eq!(moved.state().await.format_version(), 3, "{label}");
    }
    // REST: the catalog refuses a snapshot without row lineage on the v3 table.
    rest_refuses_the_v2_snapshot(rewrite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_harmless_concurrent_commit_keeps_the_written_manifests() {
    for kind in kinds() {
        for injection in [Injection::Append(100), Injection::DropDelete(String::new())] {
            let label = format!("{kind:?} {injection:?}");
            let moved = Moved::new(kind).await;
            let injection = match injection {
                Injection::DropDelete(_) => Injection::DropDelete(moved.delete_path.clone()),
                other => other,
            };
            let before = moved.writer.files().await;
            let (result, injected) = moved.run(rewrite(), injection.clone()).await;
            let r = result.unwrap_or_else(|e| panic!("{label}: {e}"));
            assert!(r.warnings.is_empty(), "{label}: {}", warnings_of(&r));
            let (head, parent) = assert_same_files_as_parent(&moved, &label).await;
            let state = moved.state().await;
            assert_eq!(state.parent(parent), Some(moved.d), "{label}");
            assert_eq!(state.ids(head).len(), 15, "{label}");
            // The manifest written before the other commit is the one committed.
            let first = ours(&before, &injected);
            let committed = added_manifests(&moved, head).await;
            assert_eq!(committed.len(), 1, "{label}: {committed:?}");
            assert!(
                first.iter().any(|f| committed[0].0.ends_with(f.as_str())),
                "{label}: reused {first:?} / {committed:?}"
            );
            let injected = injected.expect("the injection ran");
            assert_only_theirs_added_but(&moved, &before, &injected, head, &label).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_commit_outcome_deletes_nothing() {
    let moved = Moved::new(Kind::Rest).await;
    let before = moved.writer.files().await;
    rest_catalog::fail_next(moved.writer.warehouse(), &["ns"], "t", "500").await;
    let e = moved
        .run_plain(rewrite())
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
        added.iter().any(|f| f.contains("snap-")) && added.iter().any(|f| f.ends_with("-m0.avro")),
        "the manifest and the list stay: {added:?}"
    );
    let state = moved.state().await;
    assert_eq!(state.current(), moved.d);
    state.assert_consistent("unknown outcome");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unconfirmed_commit_deletes_nothing() {
    let moved = Moved::new(Kind::Path).await;
    let before = moved.writer.files().await;
    let hook = Arc::new(RivalMetadata {
        dir: PathBuf::from(&moved.writer.location),
        fired: AtomicBool::new(false),
    });
    let store = FaultyStore::hooked(Arc::new(LocalFileSystem::new()), hook.clone());
    let io = FileIO::from_store("/", Arc::new(store)).expect("a FileIO");
    let e = moved
        .run_with_io(rewrite(), io)
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
        added.iter().any(|f| f.contains("snap-")) && added.iter().any(|f| f.ends_with("-m0.avro")),
        "the manifest and the list stay: {added:?}"
    );
    assert_eq!(
        added
            .iter()
            .filter(|f| f.ends_with(".metadata.json"))
            .count(),
        2,
        "ours and the rival: {added:?}"
    );
}
