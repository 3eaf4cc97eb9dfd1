//! The recursive listing of a plain local folder (see `FileIO::list_concurrent`): `readdir` and one
//! `fstatat` per file (relative to the open folder), folders shared out to a few blocking workers,
//! files sent back in batches through a bounded channel.
//!
//! object_store's local listing walks with `walkdir` and, per file, `lstat`s, `stat`s twice more
//! by full path and converts the path through a URL: most of the listing time of a million-file
//! table. This walk gives the same files with the same size and last-modified time, for the folders
//! it can vouch for: a folder is walked here only when every entry has a plain name (see
//! `local_fs::is_plain`: object_store keeps such names as they are) and is a regular file or a
//! folder. A folder holding anything else (a symlink, a name object_store may decode, skip or
//! refuse, a device or pipe, a folder met again through a bind mount, or a folder it cannot read)
//! is listed by object_store itself, with everything below it; when that is the scan root, the
//! whole listing is object_store's.
//!
//! Each folder is read twice: once to vouch for its names (nothing is sent before that, so a
//! folder is never half-listed by both), once to `stat` and send its files. An entry that appears
//! between the two reads and is not plain is not listed: a listing is no snapshot, and an unlisted
//! file is never deleted.

use std::fs::DirEntry;
use std::os::unix::fs::MetadataExt;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use tokio::sync::mpsc;

use super::FileIO;
use super::local_fs::is_plain;
use super::location::Location;
use super::ops::FileInfo;
use crate::error::{Error, ErrorKind, Result};

/// Files per batch sent to the listing stream.
const BATCH: usize = 1024;

/// Blocking workers for a listing allowed `max_in_flight` folders at once: no more than the
/// cores (each `stat` is CPU time in the kernel when the folder is cached).
fn workers(max_in_flight: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    max_in_flight.clamp(1, cores)
}

/// What the walk sends.
#[derive(Debug)]
pub(super) enum Walked {
    Files(Vec<FileInfo>),
    /// A folder (object path, no leading slash) to list through object_store, recursively.
    Elsewhere(String),
    /// Every folder was walked (or handed over).
    Done,
}

/// A folder to walk: its object path and the `(device, inode)` of its ancestors.
struct Folder {
    path: String,
    ancestors: Arc<Vec<(u64, u64)>>,
}

/// The walk's shared state.
struct Walk {
    /// `scheme://authority/` or `/`: a file's URI is this followed by its object path.
    base: String,
    queue: Mutex<Queue>,
    changed: Condvar,
    sender: mpsc::Sender<Result<Walked>>,
}

#[derive(Default)]
struct Queue {
    folders: Vec<Folder>,
    /// Workers holding a folder.
    busy: usize,
    /// Set when the receiver is gone or an error was sent, or once everything is walked.
    stopped: bool,
}

/// How a folder's first read went.
enum Survey {
    /// Every entry is a plain regular file or folder; these are the folders.
    Plain(Vec<String>),
    /// Something object_store should decide on.
    Unusual,
    /// The folder does not exist (any more).
    Gone,
}

/// Start walking the plain local folder `/<root>` with `workers` blocking workers; `base` spells
/// the files' URIs. The stream ends with [`Walked::Done`] unless a worker stopped early.
pub(super) fn walk(
    base: String,
    root: String,
    workers: usize,
) -> BoxStream<'static, Result<Walked>> {
    let workers = workers.max(1);
    let (sender, receiver) = mpsc::channel(2 * workers);
    let walk = Arc::new(Walk {
        base,
        queue: Mutex::new(Queue {
            folders: vec![Folder {
                path: root,
                ancestors: Arc::new(Vec::new()),
            }],
            ..Queue::default()
        }),
        changed: Condvar::new(),
        sender,
    });
    let start = async move {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            let e = Error::logical("the local listing needs a tokio runtime");
            return futures::stream::once(async move { Err(e) }).boxed();
        };
        for _ in 0..workers {
            let walk = Arc::clone(&walk);
            drop(runtime.spawn_blocking(move || walk.work()));
        }
        futures::stream::unfold(receiver, |mut receiver| async move {
            receiver.recv().await.map(|item| (item, receiver))
        })
        .boxed()
    };
    futures::stream::once(start).flatten().boxed()
}

/// `io.list_concurrent(prefix_uri, max_in_flight)` for the plain local folder `location`: walked
/// here, the folders this walk cannot vouch for listed by object_store (the scan root as
/// `list_concurrent` would, any other folder recursively).
pub(super) fn list_local(
    io: &FileIO,
    location: Location,
    prefix_uri: &str,
    max_in_flight: usize,
) -> BoxStream<'static, Result<FileInfo>> {
    let (io, root, uri) = (io.clone(), location.path.clone(), prefix_uri.to_string());
    let base = location.base.clone();
    let elsewhere = move |folder: String| match folder == root {
        true => io.list_concurrent_store(&uri, max_in_flight),
        false => io.list(&format!("{base}{folder}")),
    };
    list(
        location.base,
        location.path,
        workers(max_in_flight),
        elsewhere,
    )
}

/// Every file under the plain local folder `/<root>`, as [`walk`] finds them, with the folders it
/// hands over listed by `elsewhere` (given the folder's object path). A walk that ends without
/// [`Walked::Done`] is an error (never a silently shorter listing).
pub(super) fn list<F>(
    base: String,
    root: String,
    workers: usize,
    elsewhere: F,
) -> BoxStream<'static, Result<FileInfo>>
where
    F: Fn(String) -> BoxStream<'static, Result<FileInfo>> + Send + 'static,
{
    let uri = format!("{base}{root}");
    let ended = futures::stream::once(async move {
        Err(Error::new(
            ErrorKind::StorageError,
            format!("Cannot list '{uri}': the local listing stopped early"),
        ))
    });
    walk(base, root, workers)
        .chain(ended)
        .take_while(|item| futures::future::ready(!matches!(item, Ok(Walked::Done))))
        .map_ok(move |walked| match walked {
            Walked::Files(files) => futures::stream::iter(files.into_iter().map(Ok)).boxed(),
            Walked::Elsewhere(folder) => elsewhere(folder),
            Walked::Done => futures::stream::empty().boxed(),
        })
        .try_flatten()
        .boxed()
}

impl Walk {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Take folders until none is left (or the walk stopped).
    fn work(&self) {
        while let Some(folder) = self.next() {
            let outcome = self.walk_folder(&folder);
            let mut queue = self.lock();
            queue.busy = queue.busy.saturating_sub(1);
            match outcome {
                Ok(subfolders) => queue.folders.extend(subfolders),
                Err(()) => queue.stopped = true,
            }
            let finished = !queue.stopped && queue.busy == 0 && queue.folders.is_empty();
            if finished {
                queue.stopped = true;
            }
            drop(queue);
            self.changed.notify_all();
            if finished {
                // The receiver may be gone; then nobody is waiting for the end either.
                let _ = self.sender.blocking_send(Ok(Walked::Done));
            }
        }
    }

    /// The next folder to walk; `None` once the walk is over.
    fn next(&self) -> Option<Folder> {
        let mut queue = self.lock();
        loop {
            if queue.stopped {
                return None;
            }
            if let Some(folder) = queue.folders.pop() {
                queue.busy += 1;
                return Some(folder);
            }
            queue = self
                .changed
                .wait(queue)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// Send one message; `Err` when the listing is no longer wanted.
    fn send(&self, item: Result<Walked>) -> std::result::Result<(), ()> {
        let failed = item.is_err();
        match self.sender.blocking_send(item) {
            Ok(()) if !failed => Ok(()),
            _ => Err(()),
        }
    }

    /// Walk one folder: its subfolders to walk next, or `Err` when the walk must stop.
    fn walk_folder(&self, folder: &Folder) -> std::result::Result<Vec<Folder>, ()> {
        let dir = format!("/{}", folder.path);
        let identity = match std::fs::metadata(&dir) {
            Ok(meta) => (meta.dev(), meta.ino()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(_) => {
                return self
                    .send(Ok(Walked::Elsewhere(folder.path.clone())))
                    .map(|()| Vec::new());
            }
        };
        let subfolders = match survey(&dir) {
            Survey::Gone => return Ok(Vec::new()),
            Survey::Plain(_) if folder.ancestors.contains(&identity) => None,
            Survey::Plain(subfolders) => Some(subfolders),
            Survey::Unusual => None,
        };
        let Some(subfolders) = subfolders else {
            return self
                .send(Ok(Walked::Elsewhere(folder.path.clone())))
                .map(|()| Vec::new());
        };
        let mut ancestors = Vec::with_capacity(folder.ancestors.len() + 1);
        ancestors.extend(folder.ancestors.iter().copied());
        ancestors.push(identity);
        let ancestors = Arc::new(ancestors);
        let next = subfolders
            .into_iter()
            .map(|name| Folder {
                path: format!("{}/{name}", folder.path),
                ancestors: Arc::clone(&ancestors),
            })
            .collect();
        self.send_files(&dir, &folder.path)?;
        Ok(next)
    }

    /// Second read of a vouched-for folder: `stat` each plain regular file, send them in batches.
    fn send_files(&self, dir: &str, path: &str) -> std::result::Result<(), ()> {
        let fail = |e: std::io::Error| {
            let uri = format!("{}{path}", self.base);
            Error::new(ErrorKind::StorageError, format!("Cannot list '{uri}': {e}"))
        };
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return self.send(Err(fail(e))),
        };
        let mut batch = Vec::with_capacity(BATCH);
        for entry in entries {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => return self.send(Err(fail(e))),
            };
            match self.file_info(&entry, path) {
                Ok(Some(file)) => batch.push(file),
                Ok(None) => continue,
                Err(e) => return self.send(Err(fail(e))),
            }
            if batch.len() == BATCH {
                let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                self.send(Ok(Walked::Files(full)))?;
            }
        }
        if batch.is_empty() {
            return Ok(());
        }
        self.send(Ok(Walked::Files(batch)))
    }

    /// The listed form of one entry of a vouched-for folder; `None` for a folder (walked on its
    /// own), a file gone since the `readdir`, or an entry that was not there when the folder was
    /// vouched for and is not a plain regular file.
    fn file_info(&self, entry: &DirEntry, path: &str) -> std::io::Result<Option<FileInfo>> {
        let name = entry.file_name();
        let Some(name) = name.to_str().filter(|n| is_plain(n)) else {
            return Ok(None);
        };
        let meta = match entry.metadata() {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        if !meta.is_file() {
            return Ok(None);
        }
        let last_modified_ms = meta
            .modified()
            .ok()
            .map(|t| chrono::DateTime::<chrono::Utc>::from(t).timestamp_millis());
        Ok(Some(FileInfo {
            uri: format!("{}{path}/{name}", self.base),
            size: meta.len(),
            last_modified_ms,
        }))
    }
}

/// First read of a folder: whether this walk can vouch for all of it, and its subfolders.
fn survey(dir: &str) -> Survey {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Survey::Gone,
        Err(_) => return Survey::Unusual,
    };
    let mut subfolders = Vec::new();
    for entry in entries {
        let Ok(entry) = entry else {
            return Survey::Unusual;
        };
        let name = entry.file_name();
        let Some(name) = name.to_str().filter(|n| is_plain(n)) else {
            return Survey::Unusual;
        };
        match entry.file_type() {
            Ok(kind) if kind.is_file() => {}
            Ok(kind) if kind.is_dir() => subfolders.push(name.to_string()),
            _ => return Survey::Unusual,
        }
    }
    Survey::Plain(subfolders)
}

#[cfg(test)]
#[path = "local_walk_tests.rs"]
mod tests;
