//! `remove_orphan_files` under concurrency and failure: a commit that lands during the scan
//! aborts the deletion; a crash at any delete leaves the table intact and a re-run converges.

use crate::support::fixtures;
use crate::support::orphans as orphans_support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use fixtures::{Fixture, make_fixture, now_ms, oracle_inspect};
use icetrim::ErrorKind;
use icetrim::OrphanMetrics;
use icetrim::internals::io::{Fault, FaultInjector, FaultyStore, FileIO, HookFn, Op};
use object_store::ObjectStore;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use orphans_support::*;
use serde_json::Value;

fn assert_oracle_clean(fixture: &Fixture) {
    let oracle = oracle_inspect(&fixture.metadata_path());
    assert_eq!(oracle["missing"], Value::Array(vec![]), "files missing");
    assert!(
        oracle.get("errors").is_none(),
        "oracle errors: {}",
        oracle["errors"]
    );
}

/// A local store that, on the first delimited listing (the orphan scan's first request; finding
/// the metadata uses plain listings), commits: copies the newest metadata file to the next
/// version's name, as a concurrent writer would.
fn commit_during_scan(newest: PathBuf, next: PathBuf) -> FaultyStore {
    let fired = AtomicBool::new(false);
    let hook = HookFn(
        move |op: Op, _: Option<&ObjectPath>| -> object_store::Result<()> {
            if op == Op::ListWithDelimiter && !fired.swap(true, Ordering::SeqCst) {
                std::fs::copy(&newest, &next).expect("concurrent commit");
            }
            Ok(())
        },
    );
    FaultyStore::hooked(local_store(), Arc::new(hook))
}

/// `<N>-<uuid>.metadata.json` → `<N+1>-<new uuid>.metadata.json`, same width.
fn next_metadata_name(newest: &Path) -> PathBuf {
    let name = newest.file_name().and_then(|n| n.to_str()).expect("name");
    let (digits, _) = name.split_once('-').expect("pyiceberg naming");
    let version: u64 = digits.parse().expect("version");
    let next = format!(
        "{:0width$}-{}.metadata.json",
        version + 1,
        uuid::Uuid::new_v4(),
        width = digits.len()
    );
    newest.with_file_name(next)
}

fn local_store() -> Arc<dyn ObjectStore> {
    Arc::new(LocalFileSystem::new())
}

#[tokio::test]
async fn a_commit_during_the_scan_aborts_the_deletion() {
    let now = now_ms();
    let fixture = make_fixture("py_v2_linear", now, true);
    let dir = fixture.table_dir();
    let newest = fixture.metadata_path();
    let next = next_metadata_name(&newest);
    let store = commit_during_scan(newest.clone(), next.clone());
    let io = FileIO::from_store("/", Arc::new(store)).unwrap();
    let rt = runtime(now, Some(io));
    let table = local_table(&dir, &[]);
    let e = run_on(&rt, &table, options(None, false), false)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::QueryWasCancelled);
    assert_eq!(
        e.message(),
        format!(
            "Current metadata file changed during orphan scan (was '{}', now '{}'); nothing was \
             deleted",
            newest.display(),
            next.display()
        )
    );
    assert!(next.exists());
    for stray in strays(&fixture.facts) {
        assert!(Path::new(&stray.path).exists(), "{} deleted", stray.path);
    }
    // A re-run after the commit proceeds (the copied file is too young to matter).
    let r = run_on(&rt, &table, options(None, false), false)
        .await
        .unwrap();
    assert_eq!(metrics(&r), expected_old(&fixture.facts, |_| true));
    assert_table_files_exist(&fixture.facts);
    assert_oracle_clean(&fixture);
}

async fn crash_at_every_delete(fault: Fault) {
    let now = now_ms();
    let fixture = make_fixture("py_v2_linear", now, true);
    let dir = fixture.table_dir();
    let injector = FaultInjector::new();
    let store = FaultyStore::new(local_store(), Arc::clone(&injector));
    let io = FileIO::from_store("/", Arc::new(store)).unwrap();
    let rt = runtime(now, Some(io));
    let table = local_table(&dir, &[]);
    let expected = expected_old(&fixture.facts, |_| true);
    let total = expected.deleted_data_files_count
        + expected.deleted_position_delete_files_count
        + expected.deleted_equality_delete_files_count
        + expected.deleted_manifest_files_count
        + expected.deleted_manifest_lists_count
        + expected.deleted_metadata_files_count
        + expected.deleted_statistics_files_count;
    let mut gone = 0;
    let mut runs = 0;
    // Each run may delete one file, then the store crashes; the next run starts healed.
    while gone < total {
        runs += 1;
        assert!(runs <= total + 1, "no convergence after {runs} runs");
        injector.heal();
        injector.fail_after(1, fault);
        let r = run_on(&rt, &table, options(None, false), false)
            .await
            .unwrap();
        let m = metrics(&r);
        let deleted = m.deleted_data_files_count
            + m.deleted_position_delete_files_count
            + m.deleted_equality_delete_files_count
            + m.deleted_manifest_files_count
            + m.deleted_manifest_lists_count
            + m.deleted_metadata_files_count
            + m.deleted_statistics_files_count;
        let left = total - gone;
        let applied = usize::from(fault == Fault::CrashAfterApplying && left > 1);
        assert_eq!(deleted, 1.min(left), "run {runs}: {m:?}");
        assert_eq!(m.failed_deletions_count, left - 1, "run {runs}: {m:?}");
        if m.failed_deletions_count > 0 {
            assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
        }
        // CrashAfterApplying deletes the second file but reports it failed.
        gone += deleted + i64::try_from(applied).unwrap_or(0);
        assert_table_files_exist(&fixture.facts);
    }
    injector.heal();
    let r = run_on(&rt, &table, options(None, false), false)
        .await
        .unwrap();
    assert_eq!(metrics(&r), OrphanMetrics::default());
    for stray in strays(&fixture.facts).iter().filter(|s| s.kind == "old") {
        assert!(!Path::new(&stray.path).exists(), "{} survived", stray.path);
    }
    assert_oracle_clean(&fixture);
}

#[tokio::test]
async fn crash_at_each_delete_then_rerun_converges() {
    crash_at_every_delete(Fault::Crash).await;
}

#[tokio::test]
async fn lost_delete_responses_then_rerun_converges() {
    crash_at_every_delete(Fault::CrashAfterApplying).await;
}
