//! The direct walk against object_store's own local listing, on real folders.

use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use futures::TryStreamExt;

use super::*;
use crate::io::{FileIO, RequestCounter};

fn write(root: &Path, rel: &str, len: usize, mtime_ms: u64) {
    let path = root.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&path, vec![b'x'; len]).unwrap();
    let file = std::fs::File::options().write(true).open(&path).unwrap();
    file.set_modified(UNIX_EPOCH + Duration::from_millis(mtime_ms))
        .unwrap();
}

/// A table-like tree of plain names only.
fn plain_tree(root: &Path) {
    write(root, "metadata/v1.metadata.json", 10, 1_700_000_000_123);
    write(root, "metadata/snap-1-0-a.avro", 20, 1_700_000_001_999);
    write(root, "data/a=1/00000-0-x.parquet", 30, 1_700_000_002_000);
    write(root, "data/a=1/b=2/00000-1-y.parquet", 0, 1_000);
    write(root, "data/_tmp/stray.parquet", 5, 1_700_000_003_001);
    write(root, ".hidden/f", 1, 1_700_000_004_500);
    write(root, "top.txt", 2, 1_700_000_005_000);
    std::fs::create_dir_all(root.join("empty/deeper")).unwrap();
}

/// Both listings of `uri`, sorted: the direct walk's and object_store's (a counting layer turns
/// the direct walk off).
async fn both(uri: &str) -> (Result<Vec<FileInfo>>, Result<Vec<FileInfo>>) {
    let sorted = |mut files: Vec<FileInfo>| {
        files.sort_by(|a, b| a.uri.cmp(&b.uri));
        files
    };
    let direct = FileIO::local().list_concurrent(uri, 4).try_collect().await;
    let store = FileIO::local()
        .with_request_counter(RequestCounter::new())
        .list_concurrent(uri, 4)
        .try_collect()
        .await;
    (direct.map(sorted), store.map(sorted))
}

/// What [`walk`] sends for `/<root>`, files flattened and sorted by URI.
async fn walked(root: &Path) -> (Vec<String>, Vec<String>, bool) {
    let object_path = root.to_str().unwrap().trim_start_matches('/').to_string();
    let items: Vec<Walked> = walk("/".into(), object_path, 2)
        .try_collect()
        .await
        .unwrap();
    let (mut files, mut elsewhere, mut done) = (Vec::new(), Vec::new(), false);
    for item in items {
        match item {
            Walked::Files(batch) => files.extend(batch.into_iter().map(|f| f.uri)),
            Walked::Elsewhere(folder) => elsewhere.push(folder),
            Walked::Done => done = true,
        }
    }
    files.sort();
    elsewhere.sort();
    (files, elsewhere, done)
}

#[tokio::test]
async fn a_plain_tree_lists_as_object_store_does() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    plain_tree(root);
    for i in 0..(BATCH + 5) {
        write(
            root,
            &format!("data/many/f-{i}.parquet"),
            i % 7,
            1_600_000_000_000 + i as u64,
        );
    }
    let path = root.to_str().unwrap();
    for uri in [
        path.to_string(),
        format!("file://{path}"),
        format!("{path}/data"),
    ] {
        let (direct, store) = both(&uri).await;
        let direct = direct.unwrap();
        assert_eq!(direct, store.unwrap(), "{uri}");
        assert!(direct.len() > BATCH, "{uri}");
    }
    let (files, elsewhere, done) = walked(root).await;
    assert!(elsewhere.is_empty(), "{elsewhere:?}");
    assert!(done);
    assert_eq!(files.len(), 7 + BATCH + 5);
    let direct: Vec<FileInfo> = FileIO::local()
        .list_concurrent(path, 2)
        .try_collect()
        .await
        .unwrap();
    let top = direct.iter().find(|f| f.uri.ends_with("/top.txt")).unwrap();
    assert_eq!(top.uri, format!("{path}/top.txt"));
    assert_eq!(
        (top.size, top.last_modified_ms),
        (2, Some(1_700_000_005_000))
    );
}

#[tokio::test]
async fn unusual_folders_are_left_to_object_store() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    plain_tree(root);
    write(root, "data/odd/a b.parquet", 3, 1_700_000_006_000);
    write(root, "data/odd/x.parquet#12", 3, 1_700_000_006_000);
    write(root, "data/odd/sub/é.parquet", 4, 1_700_000_007_000);
    write(root, "data/odd/sub/plain.parquet", 4, 1_700_000_007_000);
    write(root, "links/target.parquet", 6, 1_700_000_008_000);
    std::os::unix::fs::symlink(
        root.join("links/target.parquet"),
        root.join("links/l.parquet"),
    )
    .unwrap();
    std::os::unix::fs::symlink(root.join("gone"), root.join("links/broken")).unwrap();
    std::os::unix::fs::symlink(root.join("metadata"), root.join("links/dir")).unwrap();
    std::fs::create_dir_all(root.join("pipes")).unwrap();
    let _socket = std::os::unix::net::UnixListener::bind(root.join("pipes/s")).unwrap();
    write(root, "pipes/f.parquet", 1, 1_700_000_009_000);
    let path = root.to_str().unwrap();
    let (direct, store) = both(path).await;
    let direct = direct.unwrap();
    assert_eq!(direct, store.unwrap());
    assert!(
        direct
            .iter()
            .any(|f| f.uri.ends_with("/data/odd/a b.parquet"))
    );
    assert!(
        direct
            .iter()
            .any(|f| f.uri.ends_with("/links/dir/v1.metadata.json"))
    );
    let (files, elsewhere, done) = walked(root).await;
    let prefix = path.trim_start_matches('/');
    let expected: Vec<String> = ["data/odd", "links", "pipes"]
        .iter()
        .map(|rel| format!("{prefix}/{rel}"))
        .collect();
    assert_eq!(elsewhere, expected);
    assert!(done);
    assert!(
        files
            .iter()
            .all(|f| !f.contains("/odd/") && !f.contains("/links/"))
    );
    assert!(files.contains(&format!("{path}/data/a=1/b=2/00000-1-y.parquet")));
}

#[tokio::test]
async fn an_unusual_root_is_all_object_store() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    plain_tree(root);
    write(root, "a b", 1, 1_700_000_000_000);
    let (files, elsewhere, done) = walked(root).await;
    assert!(files.is_empty() && done);
    assert_eq!(elsewhere, [root.to_str().unwrap().trim_start_matches('/')]);
    let (direct, store) = both(root.to_str().unwrap()).await;
    let direct = direct.unwrap();
    assert_eq!(direct, store.unwrap());
    assert_eq!(direct.len(), 8);
}

#[tokio::test]
async fn missing_roots_files_as_roots_and_undecodable_names_agree() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    plain_tree(root);
    for rel in ["nope", "top.txt", "data/a=1/00000-0-x.parquet"] {
        let uri = format!("{}/{rel}", root.to_str().unwrap());
        let (direct, store) = both(&uri).await;
        assert_eq!(direct.unwrap(), store.unwrap(), "{rel}");
    }
    use std::os::unix::ffi::OsStrExt;
    let bad = root
        .join("data")
        .join(std::ffi::OsStr::from_bytes(b"\xff.parquet"));
    std::fs::write(bad, b"x").unwrap();
    let (direct, store) = both(root.to_str().unwrap()).await;
    assert!(
        store.is_err(),
        "object_store refuses a name it cannot decode"
    );
    assert!(
        direct.is_err(),
        "so does the direct listing, through object_store"
    );
}
