//! The direct walk against object_store's own local listing, on real folders; links, odd names
//! and the deletes that never go through a link.

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

fn sorted(mut files: Vec<FileInfo>) -> Vec<FileInfo> {
    files.sort_by(|a, b| a.uri.cmp(&b.uri));
    files
}

/// Both listings of `uri`, sorted: the direct walk's and object_store's (a counting layer turns
/// the direct walk off).
async fn both(uri: &str) -> (Result<Vec<FileInfo>>, Result<Vec<FileInfo>>) {
    let direct = FileIO::local().list_concurrent(uri, 4).try_collect().await;
    let store = FileIO::local()
        .with_request_counter(RequestCounter::new())
        .list_concurrent(uri, 4)
        .try_collect()
        .await;
    (direct.map(sorted), store.map(sorted))
}

/// The entries `io` lists under `scan` (below the table folder `root`), split and sorted.
async fn entries(
    io: &FileIO,
    root: &str,
    scan: &str,
) -> (Vec<String>, Vec<String>, Vec<(String, SkipReason)>) {
    let listed: Vec<Listed> = io.list_entries(root, scan, 2).try_collect().await.unwrap();
    let (mut files, mut links, mut skipped) = (Vec::new(), Vec::new(), Vec::new());
    for entry in listed {
        match entry {
            Listed::File(f) | Listed::UnfinishedUpload(f) => files.push(f.uri),
            Listed::Link { uri } => links.push(uri),
            Listed::Skipped { uri, reason } => skipped.push((uri, reason)),
        }
    }
    files.sort();
    links.sort();
    skipped.sort_by(|a, b| a.0.cmp(&b.0));
    (files, links, skipped)
}

fn link(target: &Path, at: &Path) {
    std::os::unix::fs::symlink(target, at).unwrap();
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
    let direct: Vec<FileInfo> = FileIO::local()
        .list_concurrent(path, 2)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(direct.len(), 7 + BATCH + 5);
    let top = direct.iter().find(|f| f.uri.ends_with("/top.txt")).unwrap();
    assert_eq!(top.uri, format!("{path}/top.txt"));
    assert_eq!(
        (top.size, top.last_modified_ms),
        (2, Some(1_700_000_005_000))
    );
}

#[tokio::test]
async fn odd_names_list_as_object_store_spells_them() {
    let dir = tempfile::tempdir().unwrap();
    // The table folder itself has a name object_store might encode.
    let root = dir.path().join("odd table%20x");
    plain_tree(&root);
    write(&root, "data/odd/a b.parquet", 3, 1_700_000_006_000);
    write(&root, "data/odd/x.parquet#12", 3, 1_700_000_006_000);
    write(&root, "data/odd/y.parquet#ab", 3, 1_700_000_006_000);
    write(&root, "data/odd/a%20b.parquet", 3, 1_700_000_006_000);
    write(&root, "data/odd/sub/é.parquet", 4, 1_700_000_007_000);
    write(&root, "data/odd/sub/plain.parquet", 4, 1_700_000_007_000);
    std::fs::create_dir_all(root.join("pipes")).unwrap();
    let _socket = std::os::unix::net::UnixListener::bind(root.join("pipes/s")).unwrap();
    write(&root, "pipes/f.parquet", 1, 1_700_000_009_000);
    let path = root.to_str().unwrap();
    let (direct, store) = both(path).await;
    let direct = direct.unwrap();
    assert_eq!(direct, store.unwrap());
    let names: Vec<&str> = direct.iter().map(|f| f.uri.as_str()).collect();
    assert!(names.contains(&format!("{path}/data/odd/a b.parquet").as_str()));
    assert!(names.contains(&format!("{path}/data/odd/a%20b.parquet").as_str()));
    assert!(names.contains(&format!("{path}/data/odd/y.parquet#ab").as_str()));
    assert!(
        !names.iter().any(|n| n.ends_with("#12")),
        "object_store hides these"
    );
    // What is listed reads and deletes by that URI.
    let io = FileIO::local();
    for uri in [
        format!("{path}/data/odd/a b.parquet"),
        format!("{path}/data/odd/a%20b.parquet"),
    ] {
        assert_eq!(io.read(&uri).await.unwrap().len(), 3, "{uri}");
    }
    let gone = format!("{path}/data/odd/a%20b.parquet");
    let out = io.delete_below(path, std::slice::from_ref(&gone), 2).await;
    assert!(out[0].result.is_ok(), "{:?}", out[0].result);
    assert!(!root.join("data/odd/a%20b.parquet").exists());
    assert!(root.join("data/odd/a b.parquet").exists());
}

#[test]
fn unfinished_upload_names() {
    for name in ["x.parquet#1", "x-compacted-00001.parquet#12", "#7"] {
        assert!(is_unfinished_upload(name), "{name}");
        assert!(!object_store_lists(name), "{name}");
    }
    // object_store splits at the first `#`: `a#b#3` is a name it lists (and so do we).
    for name in [
        "x.parquet",
        "x.parquet#",
        "x.parquet#ab",
        "x#1a",
        "x#-1",
        "x#1.tmp",
        "a#b#3",
    ] {
        assert!(!is_unfinished_upload(name), "{name}");
        assert!(object_store_lists(name), "{name}");
    }
}

/// What a writer killed in the middle of an upload leaves (`<name>#<digits>`) is reported as an
/// unfinished upload by the walk (with its size and time), left out of `list_concurrent` as
/// object_store leaves it out, and removed by `delete_below`; a link of such a name stays a link.
#[tokio::test]
async fn unfinished_uploads_are_reported_apart_and_deletable() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    plain_tree(&root);
    write(
        &root,
        "data/00000-0-compacted-00001.parquet#1",
        9,
        1_700_000_010_000,
    );
    write(&root, "data/a=1/y.parquet#ab", 3, 1_700_000_011_000);
    link(&root.join("top.txt"), &root.join("data/l.parquet#2"));
    let path = root.to_str().unwrap();
    let listed: Vec<Listed> = FileIO::local()
        .list_entries(path, path, 2)
        .try_collect()
        .await
        .unwrap();
    let unfinished: Vec<&FileInfo> = listed
        .iter()
        .filter_map(|e| match e {
            Listed::UnfinishedUpload(f) => Some(f),
            _ => None,
        })
        .collect();
    let staged = format!("{path}/data/00000-0-compacted-00001.parquet#1");
    assert_eq!(
        unfinished,
        [&FileInfo {
            uri: staged.clone(),
            size: 9,
            last_modified_ms: Some(1_700_000_010_000)
        }]
    );
    assert!(listed.contains(&Listed::Link {
        uri: format!("{path}/data/l.parquet#2")
    }));
    assert!(
        listed.iter().any(
            |e| matches!(e, Listed::File(f) if f.uri == format!("{path}/data/a=1/y.parquet#ab"))
        )
    );
    let (direct, store) = both(path).await;
    let direct = direct.unwrap();
    assert_eq!(direct, store.unwrap(), "as object_store lists");
    assert!(!direct.iter().any(|f| f.uri == staged));
    // object_store itself refuses the name; the walk's delete removes it.
    assert!(FileIO::local().delete(&staged).await.is_err());
    let out = FileIO::local()
        .delete_below(path, std::slice::from_ref(&staged), 2)
        .await;
    assert!(out[0].result.is_ok(), "{:?}", out[0].result);
    assert!(!root.join("data/00000-0-compacted-00001.parquet#1").exists());
    assert!(root.join("data/l.parquet#2").is_symlink());
}

#[tokio::test]
async fn links_are_reported_and_never_followed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    let outside = dir.path().join("outside");
    plain_tree(&root);
    write(&outside, "sub/old.parquet", 1, 1_000);
    write(&outside, "single.parquet", 1, 1_000);
    link(&outside.join("sub"), &root.join("data/sub"));
    link(&outside.join("sub"), &root.join("metadata/linked"));
    link(
        &outside.join("single.parquet"),
        &root.join("data/f.parquet"),
    );
    link(&root.join("gone"), &root.join("broken"));
    link(&root.join("data/loop"), &root.join("data/loop"));
    link(&root.join("data"), &root.join("data/a=1/up"));
    let path = root.to_str().unwrap();
    let (files, links, skipped) = entries(&FileIO::local(), path, path).await;
    let expected: Vec<String> = [
        "broken",
        "data/a=1/up",
        "data/f.parquet",
        "data/loop",
        "data/sub",
        "metadata/linked",
    ]
    .iter()
    .map(|rel| format!("{path}/{rel}"))
    .collect();
    assert_eq!(links, expected);
    assert!(skipped.is_empty(), "{skipped:?}");
    assert_eq!(files.len(), 7, "{files:?}");
    let outside_path = outside.to_str().unwrap();
    // object_store's listing (layered store) lists through links; they are reported instead.
    std::fs::remove_file(root.join("data/loop")).unwrap();
    std::fs::remove_file(root.join("data/a=1/up")).unwrap();
    let layered = FileIO::local().with_request_counter(RequestCounter::new());
    let (store_files, store_links, _) = entries(&layered, path, path).await;
    assert_eq!(store_files, files);
    assert_eq!(
        store_links,
        [
            format!("{path}/data/f.parquet"),
            format!("{path}/data/sub"),
            format!("{path}/metadata/linked")
        ]
    );
    assert!(!store_files.iter().any(|f| f.starts_with(outside_path)));
    // list_concurrent gives the files only.
    let (direct, _) = both(path).await;
    let direct: Vec<String> = direct.unwrap().into_iter().map(|f| f.uri).collect();
    assert_eq!(direct, files);
}

#[tokio::test]
async fn a_scan_path_through_a_link_lists_only_the_link_but_a_linked_root_is_walked() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    let shared = dir.path().join("shared");
    plain_tree(&root);
    write(&shared, "x/old.parquet", 1, 1_000);
    link(&shared, &root.join("linked"));
    let path = root.to_str().unwrap();
    let io = FileIO::local();
    for scan in [format!("{path}/linked"), format!("{path}/linked/x")] {
        let (files, links, _) = entries(&io, path, &scan).await;
        assert!(files.is_empty(), "{scan}: {files:?}");
        assert_eq!(links, [format!("{path}/linked")], "{scan}");
    }
    let (files, links, _) = entries(&io, path, &format!("{path}/nope")).await;
    assert!(files.is_empty() && links.is_empty());
    // The table location given as a link is the user's choice: walked, as the link's path.
    let alias = dir.path().join("alias");
    link(&root, &alias);
    let alias = alias.to_str().unwrap();
    let (files, links, _) = entries(&io, alias, alias).await;
    assert_eq!(files.len(), 7);
    assert!(files.iter().all(|f| f.starts_with(&format!("{alias}/"))));
    assert_eq!(links, [format!("{alias}/linked")]);
}

#[tokio::test]
async fn odd_and_unreadable_names_are_skipped_not_fatal() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    plain_tree(root);
    let data = root.join("data");
    std::fs::write(
        data.join(std::ffi::OsStr::from_bytes(b"\xff.parquet")),
        b"x",
    )
    .unwrap();
    std::fs::write(data.join("new\nline.parquet"), b"x").unwrap();
    std::fs::create_dir(data.join(std::ffi::OsStr::from_bytes(b"dir-\xfe"))).unwrap();
    std::fs::write(
        data.join(std::ffi::OsStr::from_bytes(b"dir-\xfe"))
            .join("inner.parquet"),
        b"x",
    )
    .unwrap();
    let path = root.to_str().unwrap();
    let (files, links, skipped) = entries(&FileIO::local(), path, path).await;
    assert_eq!(files.len(), 7, "{files:?}");
    assert!(links.is_empty());
    assert_eq!(
        skipped,
        [
            (
                format!("{path}/data/\\xff.parquet"),
                SkipReason::NotUtf8Name
            ),
            (format!("{path}/data/dir-\\xfe"), SkipReason::NotUtf8Name),
            (
                format!("{path}/data/new\\nline.parquet"),
                SkipReason::ControlCharacterName
            ),
        ]
    );
    // locate's listing of one folder leaves such names out instead of failing.
    let names = FileIO::local().list_names(&format!("{path}/data")).await;
    assert_eq!(names.unwrap(), Vec::<String>::new());
}

#[tokio::test]
async fn missing_roots_and_files_as_roots_list_nothing_as_object_store() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    plain_tree(root);
    for rel in ["nope", "top.txt", "data/a=1/00000-0-x.parquet"] {
        let uri = format!("{}/{rel}", root.to_str().unwrap());
        let (direct, store) = both(&uri).await;
        assert_eq!(direct.unwrap(), store.unwrap(), "{rel}");
    }
}

#[tokio::test]
async fn deletes_never_go_through_a_link_nor_remove_one() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    let outside = dir.path().join("outside");
    write(&root, "data/sub/a.parquet", 1, 1_000);
    write(&root, "data/b.parquet", 1, 1_000);
    write(&root, "data/c.parquet", 1, 1_000);
    write(&outside, "a.parquet", 1, 1_000);
    write(&outside, "c.parquet", 1, 1_000);
    let path = root.to_str().unwrap();
    let uris: Vec<String> = [
        "data/sub/a.parquet",
        "data/b.parquet",
        "data/c.parquet",
        "data/gone",
    ]
    .iter()
    .map(|rel| format!("{path}/{rel}"))
    .collect();
    // Between the listing and the delete, data/sub becomes a link to the outside folder and
    // data/c.parquet a link to an outside file.
    std::fs::remove_dir_all(root.join("data/sub")).unwrap();
    link(&outside, &root.join("data/sub"));
    std::fs::remove_file(root.join("data/c.parquet")).unwrap();
    link(&outside.join("c.parquet"), &root.join("data/c.parquet"));
    for io in [
        FileIO::local(),
        FileIO::local().with_request_counter(RequestCounter::new()),
    ] {
        let out = io.delete_below(path, &uris, 2).await;
        let ok: Vec<bool> = out.iter().map(|o| o.result.is_ok()).collect();
        assert_eq!(ok, [false, true, false, true], "{out:?}");
        let e = out[0].result.as_ref().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::CannotUnlink, "{e}");
        assert!(e.message().contains("link"), "{e}");
        assert!(outside.join("a.parquet").exists(), "deleted through a link");
        assert!(
            outside.join("c.parquet").exists(),
            "deleted a link's target"
        );
        assert!(
            std::fs::symlink_metadata(root.join("data/c.parquet")).is_ok(),
            "link deleted"
        );
        assert!(
            std::fs::symlink_metadata(root.join("data/sub")).is_ok(),
            "link deleted"
        );
        assert!(!root.join("data/b.parquet").exists());
        write(&root, "data/b.parquet", 1, 1_000);
    }
    // A URI outside the root is never deleted.
    let out = FileIO::local()
        .delete_below(path, &[format!("{}/a.parquet", outside.display())], 1)
        .await;
    assert!(out[0].result.is_err());
    assert!(outside.join("a.parquet").exists());
}

#[tokio::test]
async fn a_table_location_that_is_a_link_loop_is_cannot_open_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    link(&root, &root);
    let path = root.to_str().unwrap();
    let listed: Result<Vec<FileInfo>> =
        FileIO::local().list_concurrent(path, 2).try_collect().await;
    let e = listed.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::CannotOpenFile, "{e}");
    assert!(
        e.to_string().contains(path) && e.to_string().contains("(CANNOT_OPEN_FILE)"),
        "{e}"
    );
    let e = FileIO::local()
        .list_names(&format!("{path}/metadata"))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::CannotOpenFile, "{e}");
}
