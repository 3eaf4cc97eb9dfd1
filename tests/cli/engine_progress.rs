//! Progress events and cancellation of procedures on real local tables (made by the generator):
//! the events come in phase order and their counts reach their totals; cancelling (with a token,
//! or by dropping the future) at each phase leaves the table readable with every live file in
//! place, and before the commit writes and deletes nothing at all.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use icetrim::ErrorKind;
use icetrim::FixedClock;
use icetrim::engine::{Engine, QueryResult, Session};
use icetrim::internals::generate::{GenerateOptions, generate};
use icetrim::internals::iceberg::locate::{MetadataSettings, locate};
use icetrim::internals::iceberg::spec::FormatVersion;
use icetrim::internals::io::{FileIO, path_key};
use icetrim::internals::maintain::file_graph::reachable::{Lookup, collect_reachable};
use icetrim::progress::{CancelToken, Phase, ProgressEvent};

const DAY: i64 = 86_400_000;
const EXPIRE: &str =
    "ALTER TABLE t EXECUTE expire_snapshots(retain_last = 2, retention_period = '0s')";
const ORPHANS: &str = "ALTER TABLE t EXECUTE remove_orphan_files()";

/// A generated table (40 snapshots, orphans) and an engine whose clock stands 10 days after the
/// files were written, so every orphan is old enough.
async fn table() -> (tempfile::TempDir, String, Engine) {
    let dir = tempfile::tempdir().expect("tempdir");
    let location = dir.path().join("t").display().to_string();
    let now = chrono::Utc::now().timestamp_millis();
    let mut options = GenerateOptions::new(&location, FormatVersion::V2, 40, 3, 11, now);
    options.orphans = 25;
    generate(&FileIO::local(), &options)
        .await
        .expect("generate");
    let engine = Engine::builder()
        .clock(FixedClock::new(now + 10 * DAY))
        .build()
        .expect("engine");
    engine
        .session()
        .execute(&format!(
            "CREATE TABLE t ENGINE = IcebergLocal('{location}')"
        ))
        .await
        .expect("create");
    (dir, location, engine)
}

type Events = Arc<Mutex<Vec<ProgressEvent>>>;

/// A session recording its events; `on_event` runs on each (after recording).
fn recording(
    engine: &Engine,
    on_event: impl Fn(&ProgressEvent) + Send + Sync + 'static,
) -> (Session, Events) {
    let events: Events = Arc::default();
    let log = Arc::clone(&events);
    let mut session = engine.session();
    session.set_progress(Some(Arc::new(move |e: &ProgressEvent| {
        log.lock().unwrap().push(*e);
        on_event(e);
    })));
    (session, events)
}

/// Every file under `dir`: path → (size, modified). A file deleted while the listing runs (a
/// delete handed off before the future was dropped runs to its end) is not listed.
fn files(dir: &Path) -> BTreeMap<String, (u64, std::time::SystemTime)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = match std::fs::read_dir(&d) {
            Ok(entries) => entries,
            Err(_) if d != dir => continue,
            Err(e) => panic!("{}: {e}", dir.display()),
        };
        for entry in entries {
            let Ok(entry) = entry else { continue };
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                out.insert(
                    entry.path().display().to_string(),
                    (meta.len(), meta.modified().unwrap()),
                );
            }
        }
    }
    out
}

/// The newest metadata reads completely, and no file gone since `before` is reachable from it.
async fn readable_and_nothing_live_gone(
    location: &str,
    before: &BTreeMap<String, (u64, std::time::SystemTime)>,
) {
    let io = FileIO::local();
    let located = locate(&io, location, &MetadataSettings::default())
        .await
        .expect("newest metadata");
    let reachable = collect_reachable(&io, &located.metadata, &located.path, location, 4)
        .await
        .expect("every manifest list and manifest reads");
    let after = files(Path::new(location));
    for gone in before.keys().filter(|p| !after.contains_key(*p)) {
        assert_eq!(
            reachable.lookup(&path_key(gone)),
            Lookup::Unreachable,
            "a live file was deleted: {gone}"
        );
    }
}

fn phases(events: &[ProgressEvent]) -> Vec<Phase> {
    let mut seen: Vec<Phase> = events.iter().map(|e| e.phase).collect();
    seen.dedup();
    seen
}

/// Phases never go back, and every phase ends with a final event whose count reaches its total.
fn check_stream(events: &[ProgressEvent]) {
    assert!(!events.is_empty());
    assert!(
        events.windows(2).all(|w| w[0].phase <= w[1].phase),
        "{events:?}"
    );
    for phase in phases(events) {
        let of_phase: Vec<&ProgressEvent> = events.iter().filter(|e| e.phase == phase).collect();
        assert!(
            of_phase.windows(2).all(|w| w[0].done <= w[1].done),
            "{of_phase:?}"
        );
        let last = of_phase.last().unwrap();
        assert!(last.finished, "{phase} has no final event: {of_phase:?}");
        if let Some(total) = last.total {
            assert_eq!(last.done, total, "{phase}");
        }
    }
}

#[tokio::test]
async fn expire_reports_its_phases_with_counts_reaching_totals() {
    let (_dir, _location, engine) = table().await;
    let (mut session, events) = recording(&engine, |_| {});
    let result = session.execute(EXPIRE).await.expect("expire");
    let events = events.lock().unwrap().clone();
    check_stream(&events);
    assert_eq!(
        phases(&events),
        [
            Phase::ReadingManifestLists,
            Phase::ReadingManifests,
            Phase::DeletingFiles
        ]
    );
    let lists = events
        .iter()
        .find(|e| e.phase == Phase::ReadingManifestLists && e.finished)
        .unwrap();
    assert_eq!(lists.total, Some(40));
    assert!(lists.bytes > 0);
    let deletes = events
        .iter()
        .rfind(|e| e.phase == Phase::DeletingFiles)
        .unwrap();
    let deleted: i64 = result[0]
        .rows
        .iter()
        .filter_map(|r| match &r[1] {
            icetrim::format::Value::Int(n) => Some(*n),
            _ => None,
        })
        .sum();
    assert!(deletes.done > 0);
    assert_eq!(deletes.done as i64, deleted, "{:?}", result[0].rows);
}

#[tokio::test]
async fn orphan_removal_reports_listing_then_deleting() {
    let (_dir, _location, engine) = table().await;
    let (mut session, events) = recording(&engine, |_| {});
    session.execute(ORPHANS).await.expect("orphans");
    let events = events.lock().unwrap().clone();
    check_stream(&events);
    assert_eq!(
        phases(&events),
        [
            Phase::ReadingManifestLists,
            Phase::ReadingManifests,
            Phase::ListingFiles,
            Phase::DeletingFiles
        ]
    );
    let listed = events
        .iter()
        .find(|e| e.phase == Phase::ListingFiles && e.finished)
        .unwrap();
    assert_eq!(listed.total, None);
    assert!(listed.done > 25 && listed.bytes > 0, "{listed:?}");
    let deleted = events
        .iter()
        .rfind(|e| e.phase == Phase::DeletingFiles)
        .unwrap();
    assert_eq!(deleted.total, Some(25));
}

/// `OPTIMIZE TABLE` reports its file groups, sized by their input bytes, and `rewrite_manifests`
/// the manifests it writes; both in phase order with counts reaching their totals.
#[tokio::test]
async fn compaction_and_manifest_rewrite_report_groups_bytes_and_manifests() {
    let dir = tempfile::tempdir().expect("tempdir");
    let location = dir.path().join("p").display().to_string();
    let now = chrono::Utc::now().timestamp_millis();
    let mut options = GenerateOptions::new(&location, FormatVersion::V2, 12, 4, 3, now);
    options.parquet_data = true;
    options.partitions = 3;
    generate(&FileIO::local(), &options)
        .await
        .expect("generate");
    let engine = Engine::builder().build().expect("engine");
    engine
        .session()
        .execute(&format!(
            "CREATE TABLE p ENGINE = IcebergLocal('{location}')"
        ))
        .await
        .expect("create");

    let (mut session, events) = recording(&engine, |_| {});
    session
        .execute("ALTER TABLE p EXECUTE rewrite_manifests()")
        .await
        .expect("rewrite_manifests");
    let events = events.lock().unwrap().clone();
    check_stream(&events);
    assert_eq!(
        phases(&events),
        [Phase::ReadingManifests, Phase::WritingManifests]
    );
    let written = events.last().unwrap();
    assert!(written.done > 0 && written.bytes > 0, "{written:?}");
    assert_eq!(written.total, Some(written.done));

    let (mut session, events) = recording(&engine, |_| {});
    let result = session.execute("OPTIMIZE TABLE p").await.expect("optimize");
    let events = events.lock().unwrap().clone();
    check_stream(&events);
    assert_eq!(phases(&events), [Phase::RewritingFileGroups]);
    let last = events.last().unwrap();
    assert_eq!(last.total, Some(3), "one group per partition: {last:?}");
    let rewritten_bytes = result[0]
        .rows
        .iter()
        .find(|r| matches!(&r[0], icetrim::format::Value::Str(n) if n == "rewritten_bytes_count"))
        .and_then(|r| match &r[1] {
            icetrim::format::Value::Int(n) => Some(*n as u64),
            _ => None,
        })
        .expect("rewritten_bytes_count");
    assert_eq!(
        last.total_bytes,
        Some(rewritten_bytes),
        "{:?}",
        result[0].rows
    );
    assert_eq!(last.bytes, rewritten_bytes);
    assert_eq!(last.fraction(), Some(1.0));
}

/// Runs `sql` with a token cancelled at the start of `phase`; returns the outcome.
async fn cancelled_at(
    engine: &Engine,
    sql: &str,
    phase: Phase,
) -> icetrim::Result<Vec<QueryResult>> {
    let token = CancelToken::new();
    let canceller = token.clone();
    let (mut session, _events) = recording(engine, move |e| {
        if e.phase == phase {
            canceller.cancel();
        }
    });
    session.execute_with(sql, &token).await
}

#[tokio::test]
async fn cancelling_before_the_commit_writes_and_deletes_nothing() {
    for (sql, phase) in [
        (EXPIRE, Phase::ReadingManifestLists),
        (EXPIRE, Phase::ReadingManifests),
        (ORPHANS, Phase::ReadingManifestLists),
        (ORPHANS, Phase::ReadingManifests),
        (ORPHANS, Phase::ListingFiles),
    ] {
        let (_dir, location, engine) = table().await;
        let before = files(Path::new(&location));
        let error = cancelled_at(&engine, sql, phase).await.unwrap_err();
        assert_eq!(
            error.kind(),
            ErrorKind::QueryWasCancelled,
            "{sql} at {phase}: {error}"
        );
        assert_eq!(error.code(), 394);
        assert_eq!(
            files(Path::new(&location)),
            before,
            "{sql} at {phase} changed the table"
        );
    }
}

#[tokio::test]
async fn cancelling_while_deleting_keeps_the_commit_and_every_live_file() {
    for sql in [EXPIRE, ORPHANS] {
        let (_dir, location, engine) = table().await;
        let before = files(Path::new(&location));
        let results = cancelled_at(&engine, sql, Phase::DeletingFiles)
            .await
            .expect(sql);
        let warnings = &results[0].warnings;
        assert!(
            warnings.iter().any(|w| w.contains("cancelled")),
            "{sql}: {warnings:?}"
        );
        let after = files(Path::new(&location));
        if sql == EXPIRE {
            let new_files: Vec<&String> =
                after.keys().filter(|p| !before.contains_key(*p)).collect();
            let journals = new_files
                .iter()
                .filter(|p| p.contains("/.icetrim/"))
                .count();
            assert_eq!(
                new_files.len() - journals,
                1,
                "the expiry's new metadata file stands"
            );
            assert_eq!(
                journals, 1,
                "the journal stays for the next run to finish the deletes"
            );
        }
        readable_and_nothing_live_gone(&location, &before).await;
        let again = engine
            .session()
            .execute(ORPHANS)
            .await
            .expect("table still works");
        assert!(again[0].warnings.is_empty(), "{:?}", again[0].warnings);
    }
}

#[tokio::test]
async fn dropping_the_future_at_any_phase_is_safe() {
    for (sql, phase) in [
        (EXPIRE, Phase::ReadingManifests),
        (EXPIRE, Phase::DeletingFiles),
        (ORPHANS, Phase::ListingFiles),
        (ORPHANS, Phase::DeletingFiles),
    ] {
        let (_dir, location, engine) = table().await;
        let before = files(Path::new(&location));
        let (signal, reached) = tokio::sync::watch::channel(false);
        let (mut session, events) = recording(&engine, move |e| {
            if e.phase == phase {
                let _ = signal.send(true);
            }
        });
        let seen = reached.clone();
        let mut reached = reached;
        tokio::select! {
            biased;
            _ = reached.wait_for(|r| *r) => {}
            // The statement may finish within the very poll that reached the phase.
            outcome = session.execute(sql) => assert!(*seen.borrow(), "{sql} ended before {phase}: {outcome:?}"),
        }
        // A blocking read, listing, commit or delete already handed off runs to its end after the
        // future is dropped, so "nothing changed" holds when the drop landed inside the phase: no
        // later phase began and the phase had not finished (then the commit had not started).
        let dropped_inside = events
            .lock()
            .unwrap()
            .iter()
            .all(|e| e.phase < phase || (e.phase == phase && !e.finished));
        if phase < Phase::DeletingFiles && dropped_inside {
            assert_eq!(
                files(Path::new(&location)),
                before,
                "{sql} dropped at {phase}"
            );
        }
        readable_and_nothing_live_gone(&location, &before).await;
    }
}

#[tokio::test]
async fn a_cancelled_token_stops_the_script_before_its_next_statement() {
    let (_dir, location, engine) = table().await;
    let before = files(Path::new(&location));
    let token = CancelToken::new();
    token.cancel();
    let mut session = engine.session();
    let error = session
        .execute_with(&format!("{EXPIRE}; {ORPHANS}"), &token)
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::QueryWasCancelled);
    assert_eq!(files(Path::new(&location)), before);
    assert!(
        session.execute("SHOW TABLES").await.is_ok(),
        "the session outlives the token"
    );
}
