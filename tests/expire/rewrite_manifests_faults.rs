//! `rewrite_manifests` under failure: a crash at every mutation leaves a readable
//! table with the same rows and entries, and a re-run converges; a concurrent append between
//! planning and commit is kept (our manifests reused, Java's rule); a concurrent manifest rewrite
//! makes us plan again on the new list.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use icetrim::internals::io::{Fault, FaultInjector, FaultyStore, FileIO, HookFn, Op};
use icetrim::internals::plan::RewriteManifestsOptions;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;

use crate::rewrite_manifests::{
    build, build_with, ch_rows, groups, metrics, own_view, pyread, rewrite, rewrite_with,
};
use crate::support::copy_dir;
use crate::support::fixtures;

/// Put `dir` back as `backup` holds it. A failed run may leave a write of its own in flight (the
/// local store writes on blocking threads): wait for the folder to settle.
pub(crate) fn reset(dir: &Path, backup: &Path) {
    for _ in 0..50 {
        std::thread::sleep(std::time::Duration::from_millis(20));
        if std::fs::remove_dir_all(dir).is_ok() {
            copy_dir(backup, dir);
            return;
        }
    }
    panic!("cannot reset {}", dir.display());
}

#[tokio::test]
async fn crash_at_every_mutation_leaves_a_readable_table_and_a_rerun_converges() {
    let (_tmp, dir) = build(2, 6);
    let backup = dir.with_file_name("backup");
    copy_dir(&dir, &backup);
    let before = pyread(&dir).await;
    let (old_manifests, old_entries) = own_view(&dir).await;
    let mut completed = false;
    for k in 0..20u64 {
        reset(&dir, &backup);
        let injector = FaultInjector::new();
        injector.fail_after(k, Fault::Crash);
        let store = FaultyStore::new(Arc::new(LocalFileSystem::new()), Arc::clone(&injector));
        let io = FileIO::from_store("/", Arc::new(store)).unwrap();
        let result = rewrite_with(&dir, RewriteManifestsOptions::default(), false, Some(io)).await;
        // Readable, same rows and entries, whatever happened.
        let (_, entries) = own_view(&dir).await;
        assert_eq!(entries, old_entries, "crash after {k} mutations");
        assert_eq!(
            pyread(&dir).await["refs"],
            before["refs"],
            "crash after {k}"
        );
        if result.is_ok() && !injector.crashed() {
            completed = true;
            break;
        }
        // A re-run converges: one manifest per group, same entries.
        rewrite(&dir).await;
        let (manifests, entries) = own_view(&dir).await;
        assert_eq!(entries, old_entries);
        assert_eq!(manifests.len(), groups(&old_manifests).len(), "after {k}");
    }
    assert!(completed, "some k lets the run finish");
}

/// Local storage that runs `statements` on ClickHouse once, just before our first metadata commit.
fn io_with_concurrent(
    dir: &Path,
    statements: &'static [&'static str],
    fired: &Arc<AtomicBool>,
) -> FileIO {
    let (dir, fired) = (dir.to_path_buf(), Arc::clone(fired));
    let started = AtomicBool::new(false);
    let hook = HookFn(
        move |op: Op, path: Option<&ObjectPath>| -> object_store::Result<()> {
            let commit = op == (Op::Put { create: true })
                && path.is_some_and(|p| p.as_ref().ends_with(".metadata.json"));
            if commit && !started.swap(true, Ordering::SeqCst) {
                fixtures::clickhouse_script(&dir, statements).expect("the concurrent writer");
                fired.store(true, Ordering::SeqCst);
            }
            Ok(())
        },
    );
    let store = FaultyStore::hooked(Arc::new(LocalFileSystem::new()), Arc::new(hook));
    FileIO::from_store("/", Arc::new(store)).unwrap()
}

#[tokio::test]
async fn concurrent_append_between_plan_and_commit_is_kept() {
    let (_tmp, dir) = build(2, 6);
    let fired = Arc::new(AtomicBool::new(false));
    let io = io_with_concurrent(
        &dir,
        &[
            "INSERT INTO t (id, name, cat, score, region) VALUES (1000, 'late', 'c1', 1.0, 'r0')",
            "SELECT 1",
        ],
        &fired,
    );
    let (old_manifests, _) = own_view(&dir).await;
    let r = rewrite_with(&dir, RewriteManifestsOptions::default(), false, Some(io))
        .await
        .unwrap();
    assert!(fired.load(Ordering::SeqCst));
    assert!(
        r.warnings.is_empty(),
        "reused, not planned again: {:?}",
        r.warnings
    );
    // Our manifests were reused on the new parent (every replaced one still listed); the
    // concurrent append's manifest is carried.
    assert_eq!(
        metrics(&r).rewritten_manifests_count,
        old_manifests.len() as i64
    );
    let rows = ch_rows(&dir);
    assert_eq!(rows[0][0], "15", "{rows:?}");
    let refs = pyread(&dir).await["refs"]["main"].clone();
    assert!(refs.to_string().contains("late"), "{refs}");
}

#[tokio::test]
async fn concurrent_manifest_rewrite_makes_us_plan_again() {
    let (_tmp, dir) = build_with(2, 6, &["one_spec"]);
    let before = ch_rows(&dir);
    let fired = Arc::new(AtomicBool::new(false));
    let io = io_with_concurrent(
        &dir,
        &[
            "SET allow_experimental_iceberg_compaction = 1",
            "SET iceberg_manifest_min_count_to_compact = 1",
            "OPTIMIZE TABLE t MANIFEST",
            "SELECT 1",
        ],
        &fired,
    );
    let r = rewrite_with(&dir, RewriteManifestsOptions::default(), false, Some(io))
        .await
        .unwrap();
    assert!(fired.load(Ordering::SeqCst));
    assert!(
        r.warnings.iter().any(|w| w.contains("planned again")),
        "the written manifests were not reused: {:?}",
        r.warnings
    );
    let (manifests, _) = own_view(&dir).await;
    // Planned again on ClickHouse's manifests: nothing of the old list came back.
    assert_eq!(ch_rows(&dir), before);
    assert!(
        manifests.len() <= groups(&manifests).len() * 2,
        "{manifests:?}"
    );
    let written: i64 = metrics(&r).added_manifests_count;
    assert!(written <= groups(&manifests).len() as i64);
}
