//! Locating and committing metadata on the S3 (moto) and Azure (azurite) emulators: the listing
//! forms, conditional create and conflicts there. Needs `scripts/test.sh` (the emulators); fails,
//! never skips, without them.

use crate::support as common;
use crate::support::metadata as metadata_support;

use icetrim::internals::iceberg::commit::{CommitOptions, CommitOutcome, commit};
use icetrim::internals::iceberg::locate::{MetadataSettings, NamingScheme, locate};
use icetrim::internals::iceberg::metadata::MetadataCompression;
use icetrim::internals::io::FileIO;
use metadata_support::*;

async fn locate_commit_conflict(io: &FileIO, loc: &str) {
    let settings = MetadataSettings::default();
    put_doc(io, loc, "v1.metadata.json", &doc(loc, UUID_A, 1, &[1])).await;
    put_doc(io, loc, "v2.metadata.json", &doc(loc, UUID_A, 2, &[1, 2])).await;
    put(
        io,
        &format!("{loc}/metadata/version-hint.text"),
        b"2".to_vec(),
    )
    .await;
    let located = locate(io, loc, &settings).await.expect("located");
    assert_eq!(located.version, Some(2));
    assert_eq!(located.naming, NamingScheme::Versioned);
    assert_eq!(located.path, format!("{loc}/metadata/v2.metadata.json"));

    let options = CommitOptions::default();
    let (a, b) = tokio::join!(
        commit(io, &located, located.metadata.clone(), &options),
        commit(io, &located, located.metadata.clone(), &options),
    );
    let outcomes = [a.expect("a"), b.expect("b")];
    let conflicts = outcomes
        .iter()
        .filter(|o| matches!(o, CommitOutcome::Conflict { .. }))
        .count();
    assert_eq!(conflicts, 1, "{outcomes:?}");
    let hint = io
        .read(&format!("{loc}/metadata/version-hint.text"))
        .await
        .expect("hint");
    assert_eq!(&hint[..], b"3");

    let done = crate::support::commit::edit_path_table(io, loc, &settings, 3, &options, |m| {
        Ok(Some(m.clone()))
    })
    .await
    .expect("committed")
    .expect("written");
    assert_eq!(done.version, 4);
    let again = locate(io, loc, &settings).await.expect("located");
    assert_eq!(again.version, Some(4));
    let logged: Vec<_> = again
        .metadata
        .metadata_log()
        .iter()
        .map(|e| e.metadata_file.clone())
        .collect();
    assert_eq!(
        logged,
        [
            format!("{loc}/metadata/v2.metadata.json"),
            format!("{loc}/metadata/v3.metadata.json")
        ]
    );
}

async fn gzip_sequenced(io: &FileIO, loc: &str) {
    let name = format!("00001-{UUID_A}.gz.metadata.json");
    let body = gzip(doc(loc, UUID_A, 1, &[1]).to_string().as_bytes());
    put(io, &format!("{loc}/metadata/{name}"), body).await;
    let located = locate(io, loc, &MetadataSettings::default())
        .await
        .expect("located");
    assert_eq!(located.compression, MetadataCompression::GzipInfix);
    let outcome = commit(
        io,
        &located,
        located.metadata.clone(),
        &CommitOptions::default(),
    )
    .await
    .expect("commit");
    let CommitOutcome::Committed(done) = outcome else {
        panic!("conflict on a fresh name");
    };
    assert!(done.path.contains("/metadata/00002-") && done.path.ends_with(".gz.metadata.json"));
    let bytes = io.read(&done.path).await.expect("read back");
    assert_eq!(&bytes[..2], &[0x1f, 0x8b]);
}

/// Three writers commit version 2 of a pyiceberg-named (`<N>-<uuid>`) table at once: the names
/// never collide, yet at most one commit stands and one file carries version 2.
async fn sequenced_race(io: &FileIO, loc: &str) {
    let name = format!("00001-{UUID_A}.metadata.json");
    put_doc(io, loc, &name, &doc(loc, UUID_A, 1, &[1])).await;
    let located = locate(io, loc, &MetadataSettings::default())
        .await
        .expect("located");
    let options = CommitOptions::default();
    let (a, b, c) = tokio::join!(
        commit(io, &located, located.metadata.clone(), &options),
        commit(io, &located, located.metadata.clone(), &options),
        commit(io, &located, located.metadata.clone(), &options),
    );
    let outcomes = [a.expect("a"), b.expect("b"), c.expect("c")];
    let committed = outcomes
        .iter()
        .filter(|o| matches!(o, CommitOutcome::Committed(_)))
        .count();
    assert!(committed <= 1, "{outcomes:?}");
    assert!(
        outcomes.iter().all(|o| matches!(
            o,
            CommitOutcome::Committed(_) | CommitOutcome::Conflict { .. }
        )),
        "{outcomes:?}"
    );
    let mut versions: Vec<u64> = io
        .list_names(&format!("{loc}/metadata"))
        .await
        .expect("listed")
        .iter()
        .filter_map(|n| icetrim::internals::iceberg::locate::parse_file_name(n)?.version)
        .collect();
    versions.sort();
    let expected: Vec<u64> = (1..=1 + committed as u64).collect();
    assert_eq!(versions, expected, "one file per version: {outcomes:?}");
    let done = crate::support::commit::edit_path_table(
        io,
        loc,
        &MetadataSettings::default(),
        3,
        &options,
        |m| Ok(Some(m.clone())),
    )
    .await
    .expect("committed")
    .expect("written");
    assert_eq!(done.version, 2 + committed as u64);
}

#[tokio::test]
async fn s3_emulator_sequenced_race() {
    let (io, root) = common::s3_emulator("meta-race");
    sequenced_race(&io, &root).await;
}

#[tokio::test]
async fn azure_emulator_sequenced_race() {
    let (io, root) = common::azure_emulator("meta-race");
    sequenced_race(&io, &root).await;
}

#[tokio::test]
async fn s3_emulator() {
    let (io, root) = common::s3_emulator("meta");
    locate_commit_conflict(&io, &root).await;
    let (io, root) = common::s3_emulator("meta-gz");
    gzip_sequenced(&io, &root).await;
}

#[tokio::test]
async fn azure_emulator() {
    let (io, root) = common::azure_emulator("meta");
    locate_commit_conflict(&io, &root).await;
    let (io, root) = common::azure_emulator("meta-gz");
    gzip_sequenced(&io, &root).await;
}
