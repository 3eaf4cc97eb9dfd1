//! The maintenance lease's I/O on real stores (local disk, the S3 and Azure emulators): eight
//! maintainers racing for one table's lease, then eight racing to take over the expired lease;
//! each time exactly one holds it and the others are told who does. The race rests on
//! create-if-absent alone (no overwrite is ever made).

use icetrim::internals::io::FileIO;
use icetrim::internals::maintain::lease::store::{Acquired, HeldLease, acquire, list, release};

use crate::support::{azure_emulator, s3_emulator};

const CONTENDERS: usize = 8;
const LEASE_MS: i64 = 60_000;

/// `CONTENDERS` acquisitions at once at `now_ms`: the one that holds, and the holders the others
/// were told about.
async fn race(io: &FileIO, location: &str, now_ms: i64, round: &str) -> (HeldLease, Vec<String>) {
    let attempts = (0..CONTENDERS).map(|i| {
        let (io, location) = (io.clone(), location.to_string());
        let holder = format!("{round}-{i}");
        tokio::spawn(async move { acquire(&io, &location, &holder, now_ms, LEASE_MS).await })
    });
    let outcomes = futures::future::join_all(attempts).await;
    let mut held = Vec::new();
    let mut busy = Vec::new();
    for outcome in outcomes {
        match outcome.expect("the task ran").expect("no storage error") {
            Acquired::Held(lease) => held.push(lease),
            Acquired::Busy { holder, until_ms } => {
                assert_eq!(until_ms, now_ms + LEASE_MS, "{round}: the winner's expiry");
                busy.push(holder);
            }
        }
    }
    assert_eq!(held.len(), 1, "{round}: exactly one holder, got {held:?}");
    (held.remove(0), busy)
}

async fn one_holder_then_one_take_over(io: FileIO, location: &str) {
    let (first, busy) = race(&io, location, 1_000, "first").await;
    assert_eq!(first.generation, 1);
    assert_eq!(busy.len(), CONTENDERS - 1);
    assert!(busy.iter().all(|h| *h == first.holder), "{busy:?}");

    // The holder crashed: its lease expired. Eight take it over at once; one wins.
    let later = 1_000 + LEASE_MS;
    let (second, busy) = race(&io, location, later, "second").await;
    assert_eq!(second.generation, 2, "the take-over is the next generation");
    assert!(busy.iter().all(|h| *h == second.holder), "{busy:?}");
    let listed = list(&io, location).await.unwrap();
    let generations: Vec<u64> = listed.iter().map(|l| l.generation).collect();
    assert_eq!(
        generations,
        [2],
        "the winner removed the crashed holder's generation"
    );

    release(&io, &second, later + 5).await.unwrap();
    let listed = list(&io, location).await.unwrap();
    let newest = listed
        .last()
        .and_then(|l| l.record.clone())
        .expect("a lease");
    assert!(newest.released && newest.generation == 3, "{newest:?}");
    assert_eq!(listed.len(), 1);
    let (third, _) = race(&io, location, later + 6, "third").await;
    assert_eq!(third.generation, 4, "a released lease is free at once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_maintainers_on_local_disk() {
    let tmp = tempfile::tempdir().unwrap();
    let location = tmp.path().join("t");
    std::fs::create_dir_all(&location).unwrap();
    one_holder_then_one_take_over(FileIO::local(), location.to_str().unwrap()).await;
    let names: Vec<String> = std::fs::read_dir(location.join("metadata/.icetrim"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["maintain-lease-00000000000000000004.json"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_maintainers_on_s3() {
    let (io, root) = s3_emulator("lease");
    one_holder_then_one_take_over(io, &root).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_maintainers_on_azure() {
    let (io, root) = azure_emulator("lease");
    one_holder_then_one_take_over(io, &root).await;
}
