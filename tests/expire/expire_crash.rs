//! `expire_snapshots` under failure: a crash after every k-th mutation (the table stays readable
//! and a second run converges to exactly the files of an uninterrupted run, through the journal), failed deletes (a warning; the manifests naming a surviving file
//! stay), and a concurrent writer committing between planning and commit (recompute from scratch;
//! the other writer's snapshot and files survive; bounded retries end in LIMIT_EXCEEDED).

use crate::support::copy_dir;
use crate::support::expire as support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use icetrim::ErrorKind;
use icetrim::Settings;
use icetrim::internals::io::{Fault, FaultInjector, FaultyStore, FileIO, HookFn, Op, StoreHook};
use icetrim::internals::sql::ast::Literal;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use support::*;

fn restore(backup: &Path, dir: &Path) {
    std::fs::remove_dir_all(dir).unwrap();
    copy_dir(backup, dir);
}

/// Files other than metadata JSON (whose names carry random uuids per commit) and expiry
/// journals (checked apart).
fn content_files(dir: &Path) -> BTreeSet<String> {
    files_on_disk(dir)
        .into_iter()
        .filter(|f| !f.ends_with(".metadata.json") && !f.contains("/.icetrim/"))
        .collect()
}

fn journals(dir: &Path) -> usize {
    files_on_disk(dir)
        .iter()
        .filter(|f| f.contains("/metadata/.icetrim/expiry-"))
        .count()
}

fn faulty_local(injector: &Arc<FaultInjector>) -> FileIO {
    let store = FaultyStore::new(Arc::new(LocalFileSystem::new()), Arc::clone(injector));
    FileIO::from_store("/", Arc::new(store)).unwrap()
}

#[tokio::test]
async fn crash_after_every_mutation_leaves_a_readable_table_and_a_rerun_converges() {
    let fx = make_fixture("py_v2_deletes", NOW, false);
    let dir = fx.table_dir();
    let backup = fx.dir.path().join("backup");
    copy_dir(&dir, &backup);
    let opts = policy(Some(1), Some(0));
    let before = inspect(&dir).await;
    let original = content_files(&dir);
    let (_, reference) = expire_checked(&dir, opts.clone()).await;
    let reference_snapshots = snapshot_ids(&reference);
    let reference_files = content_files(&dir);
    let deleted_by_reference: BTreeSet<&String> = original.difference(&reference_files).collect();
    assert!(deleted_by_reference.len() >= 4);
    let mut completed = false;
    for k in 0..200u64 {
        restore(&backup, &dir);
        let injector = FaultInjector::new();
        injector.fail_after(k, Fault::Crash);
        let result = expire_at(
            &dir,
            NOW,
            opts.clone(),
            false,
            Some(faulty_local(&injector)),
        )
        .await;
        if !injector.crashed() {
            assert!(result.is_ok(), "run without a crash failed: {result:?}");
            assert!(
                k as usize > deleted_by_reference.len(),
                "the run has {k} mutations"
            );
            completed = true;
            break;
        }
        let after_crash = inspect(&dir).await;
        assert_whole(&before, &after_crash);
        expire(&dir, opts.clone()).await;
        let after = inspect(&dir).await;
        assert_whole(&before, &after);
        assert_eq!(snapshot_ids(&after), reference_snapshots, "k = {k}");
        // The journal lets the second run finish the first one's deletes: the same files as
        // an uninterrupted run, and no journal left behind.
        let files = content_files(&dir);
        assert_eq!(files, reference_files, "k = {k}: the second run converges");
        assert_eq!(journals(&dir), 0, "k = {k}: a journal was left behind");
    }
    assert!(completed, "the run never completed");
}

#[tokio::test]
async fn failed_deletes_warn_and_keep_the_manifests_naming_survivors() {
    let fx = make_fixture("py_v2_deletes", NOW, false);
    let dir = fx.table_dir();
    let before = inspect(&dir).await;
    let original = content_files(&dir);
    let planned = counts(&expire(&dir, dry(policy(Some(1), Some(0)))).await);
    // The journal is mutation 1, the commit mutation 2; the first content delete fails once.
    let injector = FaultInjector::new();
    injector.fail_after(2, Fault::FailOnce);
    let r = expire_at(
        &dir,
        NOW,
        policy(Some(1), Some(0)),
        false,
        Some(faulty_local(&injector)),
    )
    .await
    .unwrap();
    assert_whole(&before, &inspect(&dir).await);
    let warning = r.warnings.join("\n");
    assert!(
        warning.contains("1 file(s) could not be deleted"),
        "{warning}"
    );
    assert!(warning.contains("kept"), "{warning}");
    // The shell ends a script with an error on it (the rows stay ClickHouse's).
    assert_eq!(r.failed_deletions, 1);
    let done = counts(&r);
    assert_eq!(
        done[0] + done[1] + done[2],
        planned[0] + planned[1] + planned[2] - 1
    );
    assert!(
        done[3] < planned[3],
        "the manifest naming the survivor is kept"
    );
    let gone = original.difference(&content_files(&dir)).count() as i64;
    assert_eq!(gone, done[..6].iter().sum::<i64>());
    // The journal stays, so the next run finishes the deletes (a warning; its own rows are
    // zeros: nothing more expires).
    assert_eq!(journals(&dir), 1);
    let again = expire(&dir, policy(Some(1), Some(0))).await;
    assert_eq!(counts(&again)[..6], [0; 6]);
    assert!(
        again
            .warnings
            .iter()
            .any(|w| w.contains("interrupted expire_snapshots")),
        "{:?}",
        again.warnings
    );
    assert_eq!(
        original.difference(&content_files(&dir)).count() as i64,
        planned[..6].iter().sum::<i64>()
    );
    assert_eq!(journals(&dir), 0);
    assert_whole(&before, &inspect(&dir).await);
}

#[tokio::test]
async fn all_deletes_failing_still_succeeds_with_a_warning() {
    let fx = make_fixture("py_v2_deletes", NOW, false);
    let dir = fx.table_dir();
    let before = inspect(&dir).await;
    let original = content_files(&dir);
    // Mutations 1 and 2 (journal, commit) succeed; every delete fails.
    let injector = FaultInjector::new();
    injector.fail_after(2, Fault::FailMutations);
    let r = expire_at(
        &dir,
        NOW,
        policy(Some(1), Some(0)),
        false,
        Some(faulty_local(&injector)),
    )
    .await
    .unwrap();
    assert_eq!(counts(&r), [0; 7]);
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("could not be deleted"))
    );
    assert_eq!(content_files(&dir), original);
    assert_eq!(journals(&dir), 1, "the journal stays for the next run");
    let after = inspect(&dir).await;
    assert_whole(&before, &after);
    assert_eq!(snapshot_ids(&after).len(), 1, "the commit happened");
}

/// Local storage that runs a ClickHouse INSERT into `dir` once, just before the first
/// create-if-absent of a metadata file: another writer committing between our planning and our
/// commit.
fn io_with_concurrent_insert(dir: &Path, fired: &Arc<AtomicBool>) -> FileIO {
    let (dir, fired) = (dir.to_path_buf(), Arc::clone(fired));
    let started = AtomicBool::new(false);
    let hook = HookFn(
        move |op: Op, path: Option<&ObjectPath>| -> object_store::Result<()> {
            let commit = op == (Op::Put { create: true })
                && path.is_some_and(|p| p.as_ref().ends_with(".metadata.json"));
            if commit && !started.swap(true, Ordering::SeqCst) {
                fixtures::clickhouse(&dir, "INSERT INTO t VALUES (100, 'concurrent')")
                    .expect("the concurrent INSERT");
                fired.store(true, Ordering::SeqCst);
            }
            Ok(())
        },
    );
    let store = FaultyStore::hooked(Arc::new(LocalFileSystem::new()), Arc::new(hook));
    FileIO::from_store("/", Arc::new(store)).unwrap()
}

fn data_files(dir: &Path) -> BTreeSet<PathBuf> {
    std::fs::read_dir(dir.join("data"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect()
}

#[tokio::test]
async fn concurrent_writer_conflict_recomputes_and_keeps_its_snapshot() {
    let now = fixtures::now_ms();
    let fx = make_fixture("ch_v2", now, false);
    let dir = fx.table_dir();
    let original_ids: BTreeSet<i64> = snapshot_ids(&inspect(&dir).await);
    let opts = policy(Some(1), Some(0));

    // One attempt only: the conflict ends in LIMIT_EXCEEDED and nothing is deleted.
    let mut settings = Settings::new();
    settings
        .set("iceberg_commit_max_attempts", &Literal::Number("1".into()))
        .unwrap();
    let fired = Arc::new(AtomicBool::new(false));
    let data_before = data_files(&dir);
    let err = expire_with(
        &dir,
        now,
        opts.clone(),
        false,
        Some(io_with_concurrent_insert(&dir, &fired)),
        &settings,
    )
    .await
    .unwrap_err();
    assert!(fired.load(Ordering::SeqCst));
    assert_eq!(err.kind(), ErrorKind::LimitExceeded, "{err}");
    let after_insert = inspect(&dir).await;
    assert_eq!(snapshot_ids(&after_insert).len(), original_ids.len() + 1);
    assert!(
        data_files(&dir).is_superset(&data_before),
        "nothing deleted"
    );

    // Default attempts: the retry re-reads, keeps the other writer's snapshot and files.
    let fired = Arc::new(AtomicBool::new(false));
    let data_before = data_files(&dir);
    // "Now" after the first INSERT, so it is old enough for `retention_period = 0`.
    let r = expire_at(
        &dir,
        fixtures::now_ms(),
        opts,
        false,
        Some(io_with_concurrent_insert(&dir, &fired)),
    )
    .await
    .unwrap();
    assert!(fired.load(Ordering::SeqCst));
    let after = inspect(&dir).await;
    assert_eq!(
        after["missing"],
        serde_json::json!([]),
        "nothing referenced is missing"
    );
    let kept = snapshot_ids(&after);
    assert_eq!(kept.len(), 1);
    let current = after["current_snapshot_id"].as_i64().unwrap();
    assert!(kept.contains(&current));
    assert!(!original_ids.contains(&current));
    assert!(
        !snapshot_ids(&after_insert).contains(&current),
        "the second INSERT is current"
    );
    let new_files: Vec<PathBuf> = data_files(&dir).difference(&data_before).cloned().collect();
    assert_eq!(new_files.len(), 1, "the concurrent INSERT's data file");
    let mut expected = fixtures::sorted_strings(&after_insert["ref_files"]["main"]["data"]);
    expected.push(new_files[0].to_string_lossy().into_owned());
    expected.sort();
    assert_eq!(
        fixtures::sorted_strings(&after["ref_files"]["main"]["data"]),
        expected
    );
    assert_eq!(
        after["ref_files"]["main"]["deletes"],
        after_insert["ref_files"]["main"]["deletes"]
    );
    assert_eq!(
        after["rows_main"].as_i64(),
        after_insert["rows_main"].as_i64().map(|n| n + 1)
    );
    assert!(counts(&r)[4] >= 6, "every older list goes");
}

// ---- A pinned older metadata file, writers racing on one version ----

/// The `metadata/*.metadata.json` files of the table in `dir` by version number (any naming).
fn metadata_versions(dir: &Path) -> std::collections::BTreeMap<u64, Vec<String>> {
    let mut out: std::collections::BTreeMap<u64, Vec<String>> = Default::default();
    for entry in std::fs::read_dir(dir.join("metadata")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if let Some(v) =
            icetrim::internals::iceberg::locate::parse_file_name(&name).and_then(|n| n.version)
        {
            out.entry(v).or_default().push(name);
        }
    }
    out
}

fn assert_one_file_per_version(dir: &Path) {
    for (v, names) in metadata_versions(dir) {
        assert_eq!(names.len(), 1, "version {v} has several files: {names:?}");
    }
}

fn newest_json(dir: &Path) -> serde_json::Value {
    let versions = metadata_versions(dir);
    let (_, names) = versions.iter().next_back().expect("a metadata file");
    let bytes = std::fs::read(dir.join("metadata").join(&names[0])).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

async fn expire_def(
    def: &icetrim::internals::engine::TableDef,
    opts: icetrim::internals::plan::ExpireOptions,
    io: Option<FileIO>,
) -> icetrim::Result<icetrim::engine::QueryResult> {
    let runtime = icetrim::internals::engine::Runtime {
        clock: icetrim::FixedClock::new(NOW),
        io_override: io,
        before_commit: None,
        host_stores: Default::default(),
    };
    icetrim::internals::engine::run_procedure(
        &runtime,
        &Settings::new(),
        def,
        icetrim::internals::plan::ProcedureCall::Expire(opts),
        false,
    )
    .await
}

#[tokio::test]
async fn a_pinned_older_metadata_file_refuses_expiry_and_changes_nothing() {
    let fx = make_fixture("py_v2_linear", NOW, false);
    let dir = fx.table_dir();
    let before = inspect(&dir).await;
    let files_before = files_on_disk(&dir);
    let versions = metadata_versions(&dir);
    assert!(versions.len() >= 3, "{versions:?}");
    let (_, older) = versions.iter().rev().nth(1).unwrap();
    let rel = format!("metadata/{}", older[0]);
    let mut def = table_def(&dir);
    def.settings
        .insert("iceberg_metadata_file_path".into(), rel.clone());
    for opts in [dry(policy(Some(1), Some(0))), policy(Some(1), Some(0))] {
        let err = expire_def(&def, opts, None).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::BadArguments, "{err}");
        let message = err.message();
        assert!(
            message.contains("iceberg_metadata_file_path") && message.contains(&older[0]),
            "{message}"
        );
        assert_eq!(
            files_on_disk(&dir),
            files_before,
            "nothing written or deleted"
        );
    }
    assert_one_file_per_version(&dir);
    assert_whole(&before, &inspect(&dir).await);
}

/// A local store on which, right after our first create-if-absent of a versioned metadata file,
/// another writer commits a file of the same version (a pyiceberg-style `<N>-<uuid>` name, so no
/// name collides): the base metadata with the property `written-by = rival`. Optionally the
/// first `fail_metadata_deletes` deletes of metadata files fail.
#[derive(Debug)]
struct RivalStore {
    dir: PathBuf,
    armed: AtomicBool,
    fired: AtomicBool,
    fail_metadata_deletes: std::sync::atomic::AtomicU32,
}

impl RivalStore {
    fn new(dir: &Path, fail_metadata_deletes: u32) -> Arc<Self> {
        Arc::new(RivalStore {
            dir: dir.to_path_buf(),
            armed: AtomicBool::new(true),
            fired: AtomicBool::new(false),
            fail_metadata_deletes: fail_metadata_deletes.into(),
        })
    }

    fn io(self: &Arc<Self>) -> FileIO {
        let hook = Arc::clone(self) as Arc<dyn StoreHook>;
        let store = FaultyStore::hooked(Arc::new(LocalFileSystem::new()), hook);
        FileIO::from_store("/", Arc::new(store)).unwrap()
    }

    /// Write the rival of version `version`, built on the newest file below it.
    fn write_rival(&self, version: u64) {
        let versions = metadata_versions(&self.dir);
        let (_, base) = versions.range(..version).next_back().expect("a base file");
        let bytes = std::fs::read(self.dir.join("metadata").join(&base[0])).unwrap();
        let mut doc: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        doc["properties"]["written-by"] = serde_json::json!("rival");
        let name = format!("{version:05}-{}.metadata.json", uuid::Uuid::new_v4());
        std::fs::write(
            self.dir.join("metadata").join(name),
            serde_json::to_vec(&doc).unwrap(),
        )
        .unwrap();
        self.fired.store(true, Ordering::SeqCst);
    }
}

#[async_trait::async_trait]
impl StoreHook for RivalStore {
    async fn before(&self, op: Op, path: Option<&ObjectPath>) -> object_store::Result<()> {
        let metadata = path.is_some_and(|p| p.as_ref().ends_with(".metadata.json"));
        if matches!(op, Op::Delete { .. })
            && metadata
            && self
                .fail_metadata_deletes
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
        {
            return Err(object_store::Error::Generic {
                store: "RivalStore",
                source: "deleting metadata files is refused".into(),
            });
        }
        Ok(())
    }

    async fn after(&self, op: Op, path: Option<&ObjectPath>, ok: bool) {
        let version = path
            .and_then(|p| icetrim::internals::iceberg::locate::parse_file_name(p.as_ref()))
            .and_then(|n| n.version);
        if let Some(version) = version.filter(|_| ok && op == (Op::Put { create: true }))
            && self.armed.swap(false, Ordering::SeqCst)
        {
            self.write_rival(version);
        }
    }
}

#[tokio::test]
async fn a_rival_file_of_our_version_is_a_conflict_and_the_retry_keeps_its_commit() {
    let fx = make_fixture("py_v2_linear", NOW, false);
    let dir = fx.table_dir();
    let before = inspect(&dir).await;
    let base_version = *metadata_versions(&dir).keys().next_back().unwrap();
    let store = RivalStore::new(&dir, 0);
    let r = expire_at(&dir, NOW, policy(Some(1), Some(0)), false, Some(store.io()))
        .await
        .unwrap();
    assert!(store.fired.load(Ordering::SeqCst), "the rival wrote");
    assert_one_file_per_version(&dir);
    assert_eq!(
        *metadata_versions(&dir).keys().next_back().unwrap(),
        base_version + 2,
        "ours follows the rival's file"
    );
    assert_eq!(
        newest_json(&dir)["properties"]["written-by"],
        "rival",
        "the rival's commit is kept"
    );
    let after = inspect(&dir).await;
    assert_whole(&before, &after);
    assert_eq!(snapshot_ids(&after).len(), 1);
    assert!(counts(&r)[4] > 0, "the retry expired: {:?}", counts(&r));
    assert_eq!(journals(&dir), 0);
}

#[tokio::test]
async fn an_unconfirmed_commit_deletes_nothing_and_the_next_run_converges() {
    let fx = make_fixture("py_v2_linear", NOW, false);
    let dir = fx.table_dir();
    let before = inspect(&dir).await;
    let content_before = content_files(&dir);
    // The rival appears after our write and our file cannot be removed: unconfirmed.
    // The outcome is not known: the statement fails saying so (as every procedure does).
    let store = RivalStore::new(&dir, 1);
    let e = expire_at(&dir, NOW, policy(Some(1), Some(0)), false, Some(store.io()))
        .await
        .unwrap_err();
    assert!(store.fired.load(Ordering::SeqCst));
    // A local table: the local-disk code of a write (S3 would say S3_ERROR, Azure
    // AZURE_BLOB_STORAGE_ERROR).
    assert_eq!(e.kind(), ErrorKind::CannotWriteToFileDescriptor, "{e}");
    assert!(e.message().contains("is unconfirmed"), "{e}");
    assert!(e.message().contains("no file was deleted"), "{e}");
    assert_eq!(content_files(&dir), content_before, "no file deleted");
    assert_eq!(journals(&dir), 1, "the journal stays");
    // The next run retracts the unconfirmed file, re-plans on the rival and finishes.
    let again = expire(&dir, policy(Some(1), Some(0))).await;
    assert_one_file_per_version(&dir);
    assert_eq!(newest_json(&dir)["properties"]["written-by"], "rival");
    let after = inspect(&dir).await;
    assert_whole(&before, &after);
    assert_eq!(snapshot_ids(&after).len(), 1);
    assert!(counts(&again)[4] > 0, "{:?}", counts(&again));
    assert_ne!(content_files(&dir), content_before);
    assert_eq!(journals(&dir), 0);
}

#[tokio::test]
async fn two_expiries_racing_on_a_sequenced_table_never_fork_it() {
    let fx = make_fixture("py_v2_linear", NOW, false);
    let dir = fx.table_dir();
    let before = inspect(&dir).await;
    // Both run concurrently on this task, interleaving at every storage call.
    let (a, b) = tokio::join!(
        expire_at(&dir, NOW, policy(Some(1), Some(0)), false, None),
        expire_at(&dir, NOW, policy(Some(2), Some(0)), false, None)
    );
    assert!(a.is_ok() || b.is_ok(), "{a:?} {b:?}");
    for r in [&a, &b] {
        if let Err(e) = r {
            assert_eq!(e.kind(), ErrorKind::LimitExceeded, "{e}");
        }
    }
    assert_one_file_per_version(&dir);
    let after = inspect(&dir).await;
    assert_whole(&before, &after);
    assert!(snapshot_ids(&after).len() <= 2);
    assert_eq!(journals(&dir), 0);
}

/// Runs a whole other expiry (`retain_last = 1`) at the moment ours first reads a manifest list:
/// the other one commits and deletes the lists of the snapshots it expires, some of which our plan
/// still has to read.
#[derive(Debug)]
struct ExpiryDuringOurReads {
    dir: PathBuf,
    fired: AtomicBool,
}

#[async_trait::async_trait]
impl StoreHook for ExpiryDuringOurReads {
    async fn before(&self, op: Op, path: Option<&ObjectPath>) -> object_store::Result<()> {
        let manifest_list = path.is_some_and(|p| {
            let p = p.as_ref();
            p.contains("/metadata/snap-") && p.ends_with(".avro")
        });
        if op == Op::Get && manifest_list && !self.fired.swap(true, Ordering::SeqCst) {
            // Another process, as far as ours can tell: its own thread and runtime.
            let dir = self.dir.clone();
            let (done, answer) = tokio::sync::oneshot::channel();
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime");
                let other =
                    runtime.block_on(expire_at(&dir, NOW, policy(Some(1), Some(0)), false, None));
                let _ = done.send(other.map(|_| ()).map_err(|e| e.to_string()));
            });
            let other = answer.await.expect("the other expiry answers");
            assert!(other.is_ok(), "the other expiry: {other:?}");
        }
        Ok(())
    }
}

/// A concurrent expiry that committed and deleted a manifest list our plan reads is a conflict:
/// ours re-plans on the newest metadata instead of failing on the missing file.
#[tokio::test]
async fn a_list_deleted_by_a_concurrent_expiry_makes_ours_replan_not_fail() {
    let fx = make_fixture("py_v2_linear", NOW, false);
    let dir = fx.table_dir();
    let before = inspect(&dir).await;
    assert!(
        snapshot_ids(&before).len() > 2,
        "the fixture has history to expire"
    );
    let hook = Arc::new(ExpiryDuringOurReads {
        dir: dir.clone(),
        fired: AtomicBool::new(false),
    });
    let store = FaultyStore::hooked(Arc::new(LocalFileSystem::new()), hook.clone());
    let io = FileIO::from_store("/", Arc::new(store)).unwrap();
    // One read at a time: the reads after the hook's meet the lists the other expiry deleted.
    let mut settings = Settings::new();
    settings
        .set(
            "iceberg_metadata_read_concurrency",
            &Literal::Number("1".into()),
        )
        .unwrap();
    let ours = expire_with(
        &dir,
        NOW,
        policy(Some(2), Some(0)),
        false,
        Some(io),
        &settings,
    )
    .await;
    assert!(hook.fired.load(Ordering::SeqCst), "the other expiry ran");
    let ours = ours.expect("ours re-plans after the other expiry's commit");
    assert_eq!(
        counts(&ours)[..6],
        [0; 6],
        "nothing left for ours to delete"
    );
    assert_one_file_per_version(&dir);
    let after = inspect(&dir).await;
    assert_whole(&before, &after);
    assert_eq!(snapshot_ids(&after).len(), 1);
    assert_eq!(journals(&dir), 0);
}
