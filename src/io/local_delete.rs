//! Deletes below a table location on local disk that never go through a symbolic link and never
//! remove one (`FileIO::delete_below`): a path inside the location by name can lead outside it
//! through a link.
//!
//! The local store a `FileIO` builds itself ([`unlink_below`]): each file's folder is opened
//! relative to the table folder without following links (`local_walk::open_below`), the entry is
//! checked to be a regular file (`fstatat` without following) and removed with `unlinkat`
//! relative to that folder. A folder swapped for a link since the listing fails to open, so
//! nothing outside the table is reached. What remains: an entry swapped for a link between the
//! check and the `unlinkat` loses the link itself (never what it points to), and a table location
//! that is itself a link is resolved again at delete time. An injected or layered local store
//! checks each path with `lstat` ([`check_no_link`]) and then deletes through the store: there a
//! swap between the check and the delete is not caught.

use std::os::fd::OwnedFd;

use futures::StreamExt;
use rustix::fs::{AtFlags, FileType};
use rustix::io::Errno;

use super::FileIO;
use super::deletes::DeleteOutcome;
use super::local_walk::{open_below, open_root};
use super::location::{Family, Location};
use crate::error::{Error, ErrorKind, Result};

impl FileIO {
    /// Delete files under `root_uri` (see [`FileIO::delete_many_with`]). On local disk a file is
    /// deleted only when no folder on its path below `root_uri` is a symbolic link and it is a
    /// regular file itself (links are never deleted): the local store a `FileIO` builds itself
    /// unlinks relative to folders opened without following links; an injected or layered local
    /// store checks each path with `lstat` first, then deletes through the store. A URI that is
    /// not below `root_uri` is not deleted (an error outcome).
    pub async fn delete_below(
        &self,
        root_uri: &str,
        uris: &[String],
        in_flight: usize,
    ) -> Vec<DeleteOutcome> {
        let root = match Location::parse(root_uri) {
            Ok(root) if root.store.family == Family::File => root,
            _ => return self.delete_many_with(uris, in_flight).await,
        };
        let mut results: Vec<Option<Result<()>>> = vec![None; uris.len()];
        let mut direct: Vec<(usize, String, String)> = Vec::new();
        let mut checked: Vec<(usize, String)> = Vec::new();
        for (index, uri) in uris.iter().enumerate() {
            let rel = Location::parse(uri)
                .ok()
                .and_then(|l| super::local_walk::below(&root, &l).filter(|rel| !rel.is_empty()));
            let Some(rel) = rel else {
                let message = format!("Cannot delete '{uri}': not below '{root_uri}'");
                results[index] = Some(Err(Error::new(ErrorKind::BadArguments, message)));
                continue;
            };
            match self.lists_local_directly(&root) {
                true => direct.push((index, rel, uri.clone())),
                false => checked.push((index, rel)),
            }
        }
        direct.sort_by(|a, b| a.1.cmp(&b.1));
        let root_path = root.path.clone();
        let unlinked =
            futures::stream::iter(direct.chunks(256).map(<[_]>::to_vec).collect::<Vec<_>>())
                .map(|chunk| {
                    let root_path = root_path.clone();
                    async move {
                        let indices: Vec<usize> = chunk.iter().map(|(i, _, _)| *i).collect();
                        match tokio::task::spawn_blocking(move || unlink_below(&root_path, &chunk))
                            .await
                        {
                            Ok(outcomes) => outcomes,
                            Err(e) => indices
                                .into_iter()
                                .map(|i| {
                                    (
                                        i,
                                        Err(Error::logical(format!(
                                            "local delete task failed: {e}"
                                        ))),
                                    )
                                })
                                .collect(),
                        }
                    }
                })
                .buffer_unordered(in_flight.max(1))
                .collect::<Vec<_>>()
                .await;
        for (index, outcome) in unlinked.into_iter().flatten() {
            results[index] = Some(outcome);
        }
        let mut through_store = Vec::new();
        for (index, rel) in checked {
            match check_no_link(&root.path, &rel) {
                Ok(()) => through_store.push(index),
                Err(message) => {
                    let uri = &uris[index];
                    let e = Error::new(
                        ErrorKind::CannotUnlink,
                        format!("Cannot delete '{uri}': {message}"),
                    );
                    results[index] = Some(Err(e));
                }
            }
        }
        let store_uris: Vec<String> = through_store.iter().map(|&i| uris[i].clone()).collect();
        let deleted = self.delete_many_with(&store_uris, in_flight).await;
        for (index, outcome) in through_store.into_iter().zip(deleted) {
            results[index] = Some(outcome.result);
        }
        DeleteOutcome::for_each(uris, results, "no answer")
    }
}

/// Whether the local file `/<root>/<rel>` may be deleted: no folder on its path below `/<root>`
/// is a symbolic link, and it is a regular file (or gone). `Err` says why not. Checked with
/// `lstat` right before an object_store delete (the stores a `FileIO` builds itself unlink
/// relative to folders opened without following links instead, see `local_walk`).
pub(super) fn check_no_link(root: &str, rel: &str) -> std::result::Result<(), String> {
    let mut path = std::path::PathBuf::from(format!("/{root}"));
    let components: Vec<&str> = rel.split('/').filter(|c| !c.is_empty()).collect();
    for (i, component) in components.iter().enumerate() {
        path.push(component);
        let last = i + 1 == components.len();
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(format!(
                    "'{}' is a symbolic link; links are never followed or deleted",
                    path.display()
                ));
            }
            Ok(meta) if !last && !meta.is_dir() => {
                return Err(format!("'{}' is not a folder", path.display()));
            }
            Ok(meta) if last && !meta.is_file() => return Err("not a regular file".into()),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(())
}

/// Unlink each `(index, object path below root, uri)` under the table folder `/<root>`: each
/// file's folder opened without following links below the table folder, the entry unlinked only
/// when it is a regular file (a link is never deleted). A file already gone counts as deleted.
pub(super) fn unlink_below(
    root: &str,
    files: &[(usize, String, String)],
) -> Vec<(usize, Result<()>)> {
    let fail = |uri: &str, message: String| {
        Error::new(
            ErrorKind::CannotUnlink,
            format!("Cannot delete '{uri}': {message}"),
        )
    };
    let root_fd = match open_root(root) {
        Ok(fd) => Some(fd),
        Err(Errno::NOENT | Errno::NOTDIR) => None,
        Err(e) => {
            let message = std::io::Error::from(e).to_string();
            return files
                .iter()
                .map(|(index, _, uri)| (*index, Err(fail(uri, message.clone()))))
                .collect();
        }
    };
    let mut open: Option<(String, OwnedFd)> = None;
    let mut outcomes = Vec::with_capacity(files.len());
    for (index, rel, uri) in files {
        let Some(root_fd) = &root_fd else {
            outcomes.push((*index, Ok(())));
            continue;
        };
        let (parent, name) = rel.rsplit_once('/').unwrap_or(("", rel.as_str()));
        if name.is_empty() {
            outcomes.push((*index, Err(fail(uri, "not a file".into()))));
            continue;
        }
        if open.as_ref().is_none_or(|(p, _)| p != parent) {
            open = match open_below(root_fd, parent) {
                Ok(fd) => Some((parent.to_string(), fd)),
                Err(Errno::NOENT) => {
                    outcomes.push((*index, Ok(())));
                    continue;
                }
                Err(Errno::LOOP | Errno::NOTDIR) => {
                    let message = "a folder on its path is a symbolic link or no folder; links are never followed";
                    outcomes.push((*index, Err(fail(uri, message.into()))));
                    continue;
                }
                Err(e) => {
                    outcomes.push((*index, Err(fail(uri, std::io::Error::from(e).to_string()))));
                    continue;
                }
            };
        }
        let Some((_, dir)) = &open else {
            continue;
        };
        let outcome = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Err(Errno::NOENT) => Ok(()),
            Err(e) => Err(fail(uri, std::io::Error::from(e).to_string())),
            Ok(st) => match FileType::from_raw_mode(st.st_mode) {
                FileType::RegularFile => match rustix::fs::unlinkat(dir, name, AtFlags::empty()) {
                    Ok(()) | Err(Errno::NOENT) => Ok(()),
                    Err(e) => Err(fail(uri, std::io::Error::from(e).to_string())),
                },
                FileType::Symlink => Err(fail(
                    uri,
                    "it is a symbolic link; links are never deleted".into(),
                )),
                _ => Err(fail(uri, "not a regular file".into())),
            },
        };
        outcomes.push((*index, outcome));
    }
    outcomes
}
