//! Commits of new metadata files on the local and in-memory stores: next names per scheme,
//! create-if-absent conflicts, gzip kept, version hint advanced, bounded retries.

use crate::support::metadata as metadata_support;

use std::collections::HashSet;

use icetrim::ErrorKind;
use icetrim::internals::iceberg::commit::{CommitOptions, CommitOutcome, commit};
use icetrim::internals::iceberg::locate::{MetadataSettings, locate};
use icetrim::internals::iceberg::metadata::TableMetadata;
use icetrim::internals::io::FileIO;
use metadata_support::*;

fn opts(now: i64) -> CommitOptions {
    CommitOptions {
        now_ms: Some(now),
        ..CommitOptions::default()
    }
}

/// The current metadata minus its first snapshot.
fn drop_first(m: &TableMetadata) -> TableMetadata {
    let mut next = m.clone();
    let keep: HashSet<i64> = m
        .snapshots()
        .iter()
        .skip(1)
        .map(|s| s.snapshot_id)
        .collect();
    next.retain_snapshots(&keep).expect("retain");
    next
}

async fn committed(outcome: CommitOutcome) -> icetrim::internals::iceberg::commit::Committed {
    match outcome {
        CommitOutcome::Committed(c) => *c,
        CommitOutcome::Conflict { taken } => panic!("unexpected conflict on {taken}"),
        other => panic!("unexpected outcome {other:?}"),
    }
}

#[tokio::test]
async fn writes_next_version_with_metadata_log_and_timestamp() {
    for (io, loc, _dir) in stores() {
        put_doc(
            &io,
            &loc,
            "v1.metadata.json",
            &doc(&loc, UUID_A, 1000, &[1, 2]),
        )
        .await;
        let located = locate(&io, &loc, &MetadataSettings::default())
            .await
            .expect("located");
        let done = committed(
            commit(&io, &located, drop_first(&located.metadata), &opts(5000))
                .await
                .expect("ok"),
        )
        .await;
        assert_eq!(done.path, format!("{loc}/metadata/v2.metadata.json"));
        assert!(!done.version_hint_written);
        let again = locate(&io, &loc, &MetadataSettings::default())
            .await
            .expect("located");
        assert_eq!(again.version, Some(2));
        let m = &again.metadata;
        assert_eq!(m.snapshots().len(), 1);
        assert_eq!(m.last_updated_ms(), 5000);
        let log: Vec<_> = m
            .metadata_log()
            .iter()
            .map(|e| (e.metadata_file.clone(), e.timestamp_ms))
            .collect();
        assert_eq!(log, [(format!("{loc}/metadata/v1.metadata.json"), 1000)]);
        assert_eq!(m.json()["x-vendor"], serde_json::json!({"keep": 1.0}));
        // A clock behind the previous file still moves last-updated-ms forward.
        let next = committed(
            commit(&io, &again, again.metadata.clone(), &opts(10))
                .await
                .expect("ok"),
        )
        .await;
        assert_eq!(next.metadata.last_updated_ms(), 5001);
    }
}

#[tokio::test]
async fn metadata_log_can_be_left_alone() {
    for (io, loc, _dir) in stores() {
        put_doc(
            &io,
            &loc,
            "v1.metadata.json",
            &doc(&loc, UUID_A, 1000, &[1]),
        )
        .await;
        let located = locate(&io, &loc, &MetadataSettings::default())
            .await
            .expect("located");
        let options = CommitOptions {
            update_metadata_log: false,
            now_ms: Some(2000),
        };
        let done = committed(
            commit(&io, &located, located.metadata.clone(), &options)
                .await
                .expect("ok"),
        )
        .await;
        assert!(done.metadata.metadata_log().is_empty());
    }
}

#[tokio::test]
async fn racing_commits_one_wins_one_conflicts() {
    for (io, loc, _dir) in stores() {
        put_doc(
            &io,
            &loc,
            "v1.metadata.json",
            &doc(&loc, UUID_A, 1000, &[1, 2]),
        )
        .await;
        let located = locate(&io, &loc, &MetadataSettings::default())
            .await
            .expect("located");
        let o = opts(2000);
        let (a, b) = tokio::join!(
            commit(&io, &located, drop_first(&located.metadata), &o),
            commit(&io, &located, located.metadata.clone(), &o),
        );
        let outcomes = [a.expect("a"), b.expect("b")];
        let conflicts = outcomes
            .iter()
            .filter(|o| matches!(o, CommitOutcome::Conflict { .. }))
            .count();
        assert_eq!(conflicts, 1, "{outcomes:?}");
        // The loser did not overwrite the winner's file.
        let now = locate(&io, &loc, &MetadataSettings::default())
            .await
            .expect("located");
        let winner = outcomes.iter().find_map(|o| match o {
            CommitOutcome::Committed(c) => Some(c.metadata.to_json_bytes()),
            _ => None,
        });
        assert_eq!(Some(now.metadata.to_json_bytes()), winner);
    }
}

#[tokio::test]
async fn gzip_table_stays_gzip() {
    for (io, loc, _dir) in stores() {
        for (name, expected) in [
            ("v1.gz.metadata.json", "v2.gz.metadata.json"),
            ("v1.metadata.json.gz", "v2.metadata.json.gz"),
        ] {
            let loc = format!("{loc}/{}", name.replace('.', "_"));
            put(
                &io,
                &format!("{loc}/metadata/{name}"),
                gzip(doc(&loc, UUID_A, 1, &[1]).to_string().as_bytes()),
            )
            .await;
            let located = locate(&io, &loc, &MetadataSettings::default())
                .await
                .expect("located");
            let done = committed(
                commit(&io, &located, located.metadata.clone(), &opts(9))
                    .await
                    .expect("ok"),
            )
            .await;
            assert_eq!(done.path, format!("{loc}/metadata/{expected}"));
            let bytes = io.read(&done.path).await.expect("read back");
            assert_eq!(&bytes[..2], &[0x1f, 0x8b], "gzip magic");
            assert_eq!(
                TableMetadata::parse(&bytes, &done.path).expect("parses"),
                done.metadata
            );
        }
    }
}

#[tokio::test]
async fn pyiceberg_scheme_gets_next_padded_name() {
    for (io, loc, _dir) in stores() {
        put_doc(
            &io,
            &loc,
            &format!("00007-{UUID_A}.metadata.json"),
            &doc(&loc, UUID_A, 1, &[1]),
        )
        .await;
        let located = locate(&io, &loc, &MetadataSettings::default())
            .await
            .expect("located");
        let done = committed(
            commit(&io, &located, located.metadata.clone(), &opts(9))
                .await
                .expect("ok"),
        )
        .await;
        let name = done.path.rsplit('/').next().unwrap_or_default().to_string();
        assert!(
            name.starts_with("00008-") && name.ends_with(".metadata.json"),
            "{name}"
        );
        assert!(
            uuid::Uuid::try_parse(&name["00008-".len()..name.len() - ".metadata.json".len()])
                .is_ok()
        );
    }
}

#[tokio::test]
async fn version_hint_advanced_when_present_or_asked() {
    for (io, loc, _dir) in stores() {
        let hint = format!("{loc}/metadata/version-hint.text");
        put_doc(&io, &loc, "v1.metadata.json", &doc(&loc, UUID_A, 1, &[1])).await;
        put(&io, &hint, b"1".to_vec()).await;
        let located = locate(&io, &loc, &MetadataSettings::default())
            .await
            .expect("located");
        let done = committed(
            commit(&io, &located, located.metadata.clone(), &opts(9))
                .await
                .expect("ok"),
        )
        .await;
        assert!(done.version_hint_written);
        assert_eq!(&io.read(&hint).await.expect("hint")[..], b"2");

        // A hint naming a version that does not exist is never the basis of a commit: it is
        // advanced like any other (a faster writer's real v7 would have made ours conflict).
        put(&io, &hint, b"7".to_vec()).await;
        let located = locate(&io, &loc, &MetadataSettings::default())
            .await
            .expect("located");
        let done = committed(
            commit(&io, &located, located.metadata.clone(), &opts(9))
                .await
                .expect("ok"),
        )
        .await;
        assert_eq!(done.version, 3);
        assert!(done.version_hint_written);
        assert_eq!(&io.read(&hint).await.expect("hint")[..], b"3");

        // No hint and not asked: none is created; asked: one is.
        let other = format!("{loc}-nohint");
        put_doc(
            &io,
            &other,
            "v1.metadata.json",
            &doc(&other, UUID_A, 1, &[1]),
        )
        .await;
        let located = locate(&io, &other, &MetadataSettings::default())
            .await
            .expect("located");
        committed(
            commit(&io, &located, located.metadata.clone(), &opts(9))
                .await
                .expect("ok"),
        )
        .await;
        assert!(
            io.read(&format!("{other}/metadata/version-hint.text"))
                .await
                .is_err()
        );
        let asked = MetadataSettings {
            use_version_hint: true,
            ..MetadataSettings::default()
        };
        let located = locate(&io, &other, &asked).await.expect("located");
        committed(
            commit(&io, &located, located.metadata.clone(), &opts(9))
                .await
                .expect("ok"),
        )
        .await;
        assert_eq!(
            &io.read(&format!("{other}/metadata/version-hint.text"))
                .await
                .expect("hint")[..],
            b"3"
        );
    }
}

/// Write `name` into the table from synchronous code (the retry callback), as a rival writer would.
fn rival_write(io: &FileIO, path: String, body: String) {
    let io = io.clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        rt.block_on(async { put(&io, &path, body.into_bytes()).await });
    })
    .join()
    .expect("rival writer");
}

#[tokio::test(flavor = "multi_thread")]
async fn retries_recompute_after_a_conflict() {
    for (io, loc, _dir) in stores() {
        put_doc(
            &io,
            &loc,
            "v1.metadata.json",
            &doc(&loc, UUID_A, 1, &[1, 2, 3]),
        )
        .await;
        let mut calls = 0;
        let done = crate::support::commit::edit_path_table(
            &io,
            &loc,
            &MetadataSettings::default(),
            3,
            &opts(9),
            |current| {
                calls += 1;
                if calls == 1 {
                    // Another writer commits v2 (dropping snapshot 1) while we compute.
                    let rival = doc(&loc, UUID_A, 5, &[2, 3]).to_string();
                    rival_write(&io, format!("{loc}/metadata/v2.metadata.json"), rival);
                }
                Ok(Some(drop_first(current)))
            },
        )
        .await
        .expect("committed")
        .expect("something written");
        assert_eq!(calls, 2);
        assert_eq!(done.version, 3);
        let ids: Vec<_> = done
            .metadata
            .snapshots()
            .iter()
            .map(|s| s.snapshot_id)
            .collect();
        assert_eq!(ids, [3], "recomputed from the rival's v2");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn retries_are_bounded_and_nothing_to_do_writes_nothing() {
    for (io, loc, _dir) in stores() {
        put_doc(&io, &loc, "v1.metadata.json", &doc(&loc, UUID_A, 1, &[1])).await;
        let mut next = 2;
        let err = crate::support::commit::edit_path_table(
            &io,
            &loc,
            &MetadataSettings::default(),
            3,
            &opts(9),
            |current| {
                rival_write(
                    &io,
                    format!("{loc}/metadata/v{next}.metadata.json"),
                    doc(&loc, UUID_A, 1, &[1]).to_string(),
                );
                next += 1;
                Ok(Some(current.clone()))
            },
        )
        .await
        .expect_err("always beaten");
        assert_eq!(err.kind(), ErrorKind::LimitExceeded);
        assert!(err.message().contains("3 attempt"), "{err}");

        let before = locate(&io, &loc, &MetadataSettings::default())
            .await
            .expect("located")
            .version;
        let none = crate::support::commit::edit_path_table(
            &io,
            &loc,
            &MetadataSettings::default(),
            3,
            &opts(9),
            |_| Ok(None),
        )
        .await
        .expect("ok");
        assert!(none.is_none());
        let after = locate(&io, &loc, &MetadataSettings::default())
            .await
            .expect("located")
            .version;
        assert_eq!(before, after);
    }
}

#[tokio::test]
async fn ambiguous_tables_refuse_commits() {
    for (io, loc, _dir) in stores() {
        put_doc(&io, &loc, "v1.metadata.json", &doc(&loc, UUID_A, 1, &[1])).await;
        put_doc(
            &io,
            &loc,
            &format!("00001-{UUID_B}.metadata.json"),
            &doc(&loc, UUID_A, 1, &[1]),
        )
        .await;
        let located = locate(&io, &loc, &MetadataSettings::default())
            .await
            .expect("reads still work");
        let err = commit(&io, &located, located.metadata.clone(), &opts(9))
            .await
            .expect_err("refused");
        assert_eq!(err.kind(), ErrorKind::NotImplemented);
        let err = crate::support::commit::edit_path_table(
            &io,
            &loc,
            &MetadataSettings::default(),
            3,
            &opts(9),
            |m| Ok(Some(m.clone())),
        )
        .await
        .expect_err("refused");
        assert_eq!(err.kind(), ErrorKind::NotImplemented);
    }
}

/// Store requests per operation (what an S3 bill sees): locating reads one file after one listing;
/// a commit is one conditional PUT (plus a GET and a PUT of the hint when there is one).
#[tokio::test]
async fn request_counts_of_locate_and_commit() {
    let io = FileIO::memory();
    let loc = "memory://bucket/counted";
    for v in 1..=20 {
        put_doc(
            &io,
            loc,
            &format!("v{v}.metadata.json"),
            &doc(loc, UUID_A, v, &[v]),
        )
        .await;
    }
    let counter = icetrim::internals::io::RequestCounter::new();
    let io = io.with_request_counter(counter.clone());
    let located = locate(&io, loc, &MetadataSettings::default())
        .await
        .expect("located");
    let c = counter.snapshot();
    assert_eq!((c.list, c.get, c.put), (1, 1, 0), "{c:?}");
    counter.reset();
    committed(
        commit(&io, &located, located.metadata.clone(), &opts(99))
            .await
            .expect("ok"),
    )
    .await;
    // One listing before writing and one after (no other file of the new version, in any
    // naming scheme), and the write.
    let c = counter.snapshot();
    assert_eq!((c.list, c.get, c.put), (2, 0, 1), "{c:?}");
    counter.reset();
    let by_uuid = MetadataSettings {
        table_uuid: Some(UUID_A.into()),
        ..MetadataSettings::default()
    };
    locate(&io, loc, &by_uuid).await.expect("located");
    assert_eq!(
        counter.snapshot().get,
        21,
        "the uuid filter reads every candidate"
    );
}

/// A failed write is an error, not a conflict; a write that landed but reported failure is found by
/// the next locate (the caller must treat an error as "outcome unknown" and delete nothing).
#[tokio::test]
async fn storage_failures_during_commit() {
    use icetrim::internals::io::{Fault, FaultInjector, FaultyStore};
    use std::sync::Arc;
    let injector = FaultInjector::new();
    let store = FaultyStore::new(
        Arc::new(object_store::memory::InMemory::new()),
        injector.clone(),
    );
    let io = FileIO::from_store("memory://", Arc::new(store)).expect("io");
    let loc = "memory://bucket/faulty";
    put_doc(&io, loc, "v1.metadata.json", &doc(loc, UUID_A, 1, &[1])).await;
    let located = locate(&io, loc, &MetadataSettings::default())
        .await
        .expect("located");

    injector.fail_after(0, Fault::FailOnce);
    let err = commit(&io, &located, located.metadata.clone(), &opts(9))
        .await
        .expect_err("failed PUT");
    assert_ne!(err.kind(), ErrorKind::FileAlreadyExists);
    injector.heal();
    injector.fail_after(0, Fault::FailOnce);
    let settings = MetadataSettings::default();
    let retried = crate::support::commit::edit_path_table(&io, loc, &settings, 3, &opts(9), |m| {
        Ok(Some(m.clone()))
    })
    .await;
    assert!(
        retried.is_err(),
        "a storage error is not retried as a conflict"
    );
    injector.heal();

    injector.fail_after(0, Fault::CrashAfterApplying);
    assert!(
        commit(&io, &located, located.metadata.clone(), &opts(9))
            .await
            .is_err()
    );
    injector.heal();
    let after = locate(&io, loc, &MetadataSettings::default())
        .await
        .expect("located");
    assert_eq!(after.version, Some(2), "the write landed despite the error");
}
