//! Direct local-disk I/O for a plain local store: whole-file reads into reused buffers, folder
//! listings by `readdir`, and unlinks in bulk (see `FileIO::read`, `FileIO::list_names` and
//! `FileIO::delete_many_with`).
//!
//! object_store's local `get` reads each file into a fresh, zero-filled buffer. A maintenance run
//! reads a thousand manifest lists of a few hundred KiB each; fresh buffers meant a page fault per
//! 4 KiB of every file (on the 2-core VM, zeroing pages was the largest single cost after
//! inflating). Here a file is read into a pooled buffer that returns to the pool when the last
//! `Bytes` of it is dropped. Used only for a plain local store (no counting or fault layers, see
//! `FileIO::reads_local_directly`) and plain paths (no `%`, which object_store would decode), so
//! what is read, and every error kind, stays what object_store would give.

use std::collections::{HashMap, HashSet};
use std::io::Read;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt, TryStreamExt};

use bytes::Bytes;

use super::location::Location;
use super::ops::{FileInfo, Listed};
use crate::error::{Error, ErrorKind, Result};
use crate::pool::Pool;

/// A buffer larger than this is freed rather than pooled.
const POOLED_BUFFER_BYTES: usize = 16 << 20;

/// Buffers kept for reuse: about the reads in flight of one statement.
static POOL: Pool<Vec<u8>> = Pool::new(32);

/// A pooled buffer holding one file; goes back to the pool when dropped.
struct PooledFile(Vec<u8>);

impl AsRef<[u8]> for PooledFile {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for PooledFile {
    fn drop(&mut self) {
        let mut buf = std::mem::take(&mut self.0);
        if buf.capacity() > POOLED_BUFFER_BYTES {
            return;
        }
        buf.clear();
        POOL.give_back(buf);
    }
}

/// Whether `object_path` (a local object path, no leading slash) can be read as `/<object_path>`
/// without any decoding: only characters object_store keeps as they are.
pub(super) fn is_plain(object_path: &str) -> bool {
    !object_path.is_empty()
        && object_path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'.' | b'-' | b'_' | b'='))
}

/// Read `/<object_path>` whole; `uri` names it in errors.
pub(super) async fn read(uri: &str, object_path: &str) -> Result<Bytes> {
    let file = format!("/{object_path}");
    let uri = uri.to_string();
    tokio::task::spawn_blocking(move || read_blocking(&uri, &file))
        .await
        .map_err(|e| Error::logical(format!("local read task failed: {e}")))?
}

pub(super) fn read_blocking(uri: &str, file: &str) -> Result<Bytes> {
    let fail = |otherwise: ErrorKind| {
        move |e: std::io::Error| {
            let kind = match e.kind() {
                std::io::ErrorKind::NotFound | std::io::ErrorKind::IsADirectory => {
                    ErrorKind::FileDoesntExist
                }
                _ => otherwise,
            };
            Error::new(kind, format!("Cannot read '{uri}': {e}"))
        }
    };
    let mut f = std::fs::File::open(file).map_err(fail(ErrorKind::CannotOpenFile))?;
    let len = f
        .metadata()
        .map_err(fail(ErrorKind::CannotReadFromFileDescriptor))?
        .len();
    let mut buf = POOL.take().unwrap_or_default();
    buf.reserve(usize::try_from(len).unwrap_or(0));
    let read = f.read_to_end(&mut buf);
    let pooled = PooledFile(buf);
    read.map_err(fail(ErrorKind::CannotReadFromFileDescriptor))?;
    Ok(Bytes::from_owner(pooled))
}

/// The names of the regular files directly inside `dir` (not recursive). A symbolic link is not
/// a regular file here, whatever it points to: a linked `*.metadata.json` is never taken for a
/// version of this table. Names object_store would not list (not UTF-8, a control character,
/// `<name>#<digits>`) are left out rather than failing the listing. A missing folder has no
/// files; `uri` names it in errors.
pub(super) fn file_names(uri: &str, dir: &str) -> Result<Vec<String>> {
    let fail = |kind: ErrorKind, e: std::io::Error| {
        Error::with_source(kind, format!("Cannot list '{uri}': {e}"), e)
    };
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => return Ok(Vec::new()),
        Err(e) => return Err(fail(ErrorKind::CannotOpenFile, e)),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| fail(ErrorKind::CannotReadFromFileDescriptor, e))?;
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            continue;
        };
        if name.chars().any(|c| c.is_ascii_control())
            || !super::local_walk::object_store_lists(&name)
        {
            continue;
        }
        match entry.file_type() {
            Ok(kind) if kind.is_file() => names.push(name),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(fail(ErrorKind::CannotReadFromFileDescriptor, e)),
        }
    }
    Ok(names)
}

/// The names of the folders directly inside `dir`, at most `limit` (a symbolic link is no
/// folder here); a missing folder or a file has none. For hints only: an unreadable entry is
/// left out.
pub(super) fn folder_names(dir: &str, limit: usize) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
        .filter_map(|entry| entry.file_name().to_str().map(str::to_string))
        .take(limit)
        .collect();
    names.sort();
    names
}

/// object_store's listing of local files under `prefix` (at or below the table folder `root`),
/// with every file whose path below `root` passes through a symbolic link (object_store follows
/// links) replaced by that link, reported once.
pub(super) fn drop_linked(
    files: BoxStream<'static, Result<FileInfo>>,
    root: Location,
    prefix: Location,
) -> BoxStream<'static, Result<Listed>> {
    let root = match super::local_walk::below(&root, &prefix) {
        Some(_) => root,
        None => prefix,
    };
    let mut verdicts: HashMap<String, Option<String>> = HashMap::new();
    let mut reported: HashSet<String> = HashSet::new();
    files
        .try_filter_map(move |file| {
            let listed = linked_part(&root, &file.uri, &mut verdicts).map_or(
                Some(Listed::File(file)),
                |link| {
                    reported
                        .insert(link.clone())
                        .then_some(Listed::Link { uri: link })
                },
            );
            futures::future::ready(Ok(listed))
        })
        .boxed()
}

/// The URI of the first symbolic link on `uri`'s path below `root` (the file itself included),
/// if any; `folders` caches each folder's answer (the file itself is checked every time).
fn linked_part(
    root: &Location,
    uri: &str,
    folders: &mut HashMap<String, Option<String>>,
) -> Option<String> {
    let location = Location::parse(uri).ok()?;
    let rel = super::local_walk::below(root, &location)?;
    let base = match root.path.is_empty() {
        true => root.base.clone(),
        false => format!("{}{}/", root.base, root.path),
    };
    let is_link = |rel: &str| {
        std::fs::symlink_metadata(format!("/{}{rel}", &base[root.base.len()..]))
            .is_ok_and(|m| m.file_type().is_symlink())
    };
    let parent = rel.rsplit_once('/').map_or("", |(parent, _)| parent);
    if !parent.is_empty() {
        if !folders.contains_key(parent) {
            let mut found = None;
            for (i, _) in parent.match_indices('/').chain([(parent.len(), "")]) {
                let folder = &parent[..i];
                if let Some(known) = folders.get(folder) {
                    found = known.clone();
                } else if is_link(folder) {
                    found = Some(format!("{base}{folder}"));
                }
                if found.is_some() {
                    break;
                }
            }
            folders.insert(parent.to_string(), found);
        }
        if let Some(link) = folders.get(parent).cloned().flatten() {
            return Some(link);
        }
    }
    is_link(&rel).then(|| format!("{base}{rel}"))
}

/// Plain local files unlinked per blocking call (a task per file cost more than the unlink:
/// 100,000 deletes took 3.8–4.2 s through object_store, 2.0–2.5 s this way).
const DELETES_PER_CALL: usize = 256;

/// The deletes of `files` (`(index into uris, local file)`), a blocking call per chunk, as a
/// stream of futures each answering its chunk's outcomes by index.
pub(super) fn unlink_in_chunks(
    files: Vec<(usize, String)>,
    uris: &[String],
) -> impl futures::Stream<Item = BoxFuture<'static, Vec<(usize, Result<()>)>>> + use<> {
    let uri_of = |index: usize| uris.get(index).map_or("", |u| u.as_str());
    let chunks: Vec<Vec<(usize, String, String)>> = files
        .chunks(DELETES_PER_CALL)
        .map(|chunk| {
            chunk
                .iter()
                .map(|(index, file)| (*index, file.clone(), uri_of(*index).to_string()))
                .collect()
        })
        .collect();
    type Unlinking = BoxFuture<'static, Vec<(usize, Result<()>)>>;
    // The closure's types are spelled out: inferred, the boxed future's lifetime is one of its
    // own and the caller's future is not `Send` for every lifetime (a host's `tokio::spawn`).
    futures::stream::iter(chunks).map(|chunk: Vec<(usize, String, String)>| -> Unlinking {
        async move {
            let named: Vec<(usize, String)> = chunk
                .iter()
                .map(|(index, _, uri)| (*index, uri.clone()))
                .collect();
            match tokio::task::spawn_blocking(move || remove_files(&chunk)).await {
                Ok(outcomes) => outcomes,
                Err(e) => named
                    .into_iter()
                    .map(|(index, uri)| {
                        let message = format!("Cannot delete '{uri}': {e}");
                        (index, Err(Error::new(ErrorKind::CannotUnlink, message)))
                    })
                    .collect(),
            }
        }
        .boxed()
    })
}

/// Unlink each `(index, file, uri)`; a file already gone counts as deleted (as object_store's
/// local delete answers). One outcome per file, with its index.
pub(super) fn remove_files(files: &[(usize, String, String)]) -> Vec<(usize, Result<()>)> {
    files
        .iter()
        .map(|(index, file, uri)| {
            let outcome = match std::fs::remove_file(file) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(Error::new(
                    ErrorKind::CannotUnlink,
                    format!("Cannot delete '{uri}': {e}"),
                )),
            };
            (*index, outcome)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_paths_only() {
        assert!(is_plain("work/t/metadata/snap-1-0-a1b2.avro"));
        assert!(is_plain("t/data/d=2026-01-01/x_1.parquet"));
        assert!(!is_plain("t/a%20b.avro"));
        assert!(!is_plain("t/a b.avro"));
        assert!(!is_plain("t/é.avro"));
        assert!(!is_plain(""));
    }

    #[tokio::test]
    async fn reads_whole_files_and_reuses_buffers() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.bin");
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&a, &data).unwrap();
        let object_path = a.to_str().unwrap().trim_start_matches('/').to_string();
        for _ in 0..3 {
            let got = read("file:///a.bin", &object_path).await.unwrap();
            assert_eq!(&got[..], &data[..]);
        }
        let empty = dir.path().join("empty");
        std::fs::write(&empty, b"").unwrap();
        let empty_path = empty.to_str().unwrap().trim_start_matches('/');
        assert!(read("e", empty_path).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn missing_files_and_folders_are_file_doesnt_exist() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir
            .path()
            .to_str()
            .unwrap()
            .trim_start_matches('/')
            .to_string();
        for path in [format!("{folder}/gone.avro"), folder.clone()] {
            let err = read("file:///x", &path).await.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::FileDoesntExist, "{path}: {err}");
            assert!(err.to_string().contains("Cannot read 'file:///x'"), "{err}");
        }
    }

    #[test]
    fn file_names_lists_direct_regular_files_only() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("v1.metadata.json"), b"{}").unwrap();
        std::fs::write(root.join("version-hint.text"), b"1").unwrap();
        std::fs::create_dir(root.join("v2.metadata.json")).unwrap();
        std::fs::write(root.join("v2.metadata.json").join("inner"), b"x").unwrap();
        // A linked metadata file is never taken for a version of this table.
        std::os::unix::fs::symlink(root.join("v1.metadata.json"), root.join("v3.metadata.json"))
            .unwrap();
        std::os::unix::fs::symlink(root.join("gone"), root.join("v4.metadata.json")).unwrap();
        std::fs::write(root.join("odd name%20.json"), b"").unwrap();
        std::fs::write(
            root.join(std::ffi::OsStr::from_bytes(b"v9\xff.metadata.json")),
            b"",
        )
        .unwrap();
        std::fs::write(root.join("v5.metadata.json#12"), b"").unwrap();
        let d = root.to_str().unwrap();
        let mut names = file_names("file:///x", d).unwrap();
        names.sort();
        assert_eq!(
            names,
            ["odd name%20.json", "v1.metadata.json", "version-hint.text"]
        );
        let missing = root.join("missing");
        assert_eq!(
            file_names("file:///x", missing.to_str().unwrap()).unwrap(),
            Vec::<String>::new()
        );
    }

    #[test]
    fn remove_files_counts_gone_files_as_deleted_and_reports_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.avro");
        std::fs::write(&file, b"x").unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let entry = |i: usize, p: &std::path::Path| {
            (
                i,
                p.to_str().unwrap().to_string(),
                format!("file://{}", p.display()),
            )
        };
        let out = remove_files(&[
            entry(7, &file),
            entry(8, &dir.path().join("never-there")),
            entry(9, &sub),
        ]);
        assert!(!file.exists());
        assert_eq!(out.len(), 3);
        assert!(matches!(out[0], (7, Ok(()))) && matches!(out[1], (8, Ok(()))));
        let (index, err) = (&out[2].0, out[2].1.as_ref().unwrap_err());
        assert_eq!(*index, 9);
        assert_eq!(err.kind(), ErrorKind::CannotUnlink);
        assert!(err.message().contains("sub"), "{err}");
        assert!(sub.exists(), "a folder is never removed");
    }
}
