//! Progress events and cancellation of a running statement.
//!
//! A host subscribes with a [`ProgressSink`] (on [`EngineBuilder::progress`] or
//! [`Session::set_progress`]) and receives [`ProgressEvent`]s: the [`Phase`] a procedure is in,
//! files done out of a total where one is known, and bytes. Events are throttled (at most one
//! every [`EMIT_INTERVAL`] per statement, plus one when each phase starts and one when it ends
//! with its final counts), so the sink may draw directly.
//!
//! A host cancels with a [`CancelToken`] ([`Session::execute_with`]). Before a procedure starts
//! writing, cancelling stops it with `QUERY_WAS_CANCELLED` and nothing is written or deleted;
//! once it writes (the new metadata of `expire_snapshots` is being committed, or
//! `remove_orphan_files` starts deleting), the write stands and only the remaining deletes stop,
//! so leftovers are orphans, never files the table still needs.
//!
//! The executors get the statement's [`Progress`] one way, explicitly: on the
//! [`MaintenanceTarget`], passed on as an argument to the code that reads and deletes. Reporting
//! is a few atomic operations per file, never per manifest entry.
//!
//! A leaf: depends on nothing of icetrim but [`crate::error`]; the engine re-exports it.
//!
//! [`EngineBuilder::progress`]: crate::engine::EngineBuilder::progress
//! [`Session::set_progress`]: crate::engine::Session::set_progress
//! [`Session::execute_with`]: crate::engine::Session::execute_with
//! [`MaintenanceTarget`]: crate::maintain::target::MaintenanceTarget

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::error::{Error, ErrorKind, Result};

/// The least time between two throttled events of one statement.
pub const EMIT_INTERVAL: Duration = Duration::from_millis(100);

/// A stage of a maintenance procedure, in the order the procedures go through them.
///
/// ```
/// use icetrim::progress::Phase;
/// assert_eq!(Phase::ReadingManifests.to_string(), "reading manifests");
/// assert!(Phase::ReadingManifestLists < Phase::DeletingFiles);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Phase {
    /// Reading the snapshots' manifest lists (files: lists).
    ReadingManifestLists,
    /// Reading manifests (files: manifests).
    ReadingManifests,
    /// Rewriting compaction's file groups (`OPTIMIZE TABLE`; units: groups, bytes: input bytes
    /// read, out of the groups' total).
    RewritingFileGroups,
    /// Writing the new manifests of `rewrite_manifests` (units: manifests, bytes: written).
    WritingManifests,
    /// Listing the table's files (`remove_orphan_files`; files: listed, no total).
    ListingFiles,
    /// Deleting files (files: deletes attempted).
    DeletingFiles,
}

impl Phase {
    /// The phase as shown to people: `"reading manifest lists"`, `"reading manifests"`,
    /// `"listing files"`, `"deleting files"`.
    ///
    /// ```
    /// assert_eq!(icetrim::progress::Phase::ListingFiles.name(), "listing files");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Phase::ReadingManifestLists => "reading manifest lists",
            Phase::ReadingManifests => "reading manifests",
            Phase::RewritingFileGroups => "rewriting file groups",
            Phase::WritingManifests => "writing manifests",
            Phase::ListingFiles => "listing files",
            Phase::DeletingFiles => "deleting files",
        }
    }
}

impl Phase {
    /// What the phase counts: `"files"`, `"groups"` or `"manifests"`.
    ///
    /// ```
    /// use icetrim::progress::Phase;
    /// assert_eq!(Phase::RewritingFileGroups.unit(), "groups");
    /// assert_eq!(Phase::ListingFiles.unit(), "files");
    /// ```
    pub fn unit(self) -> &'static str {
        match self {
            Phase::RewritingFileGroups => "groups",
            Phase::WritingManifests => "manifests",
            _ => "files",
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a running statement is.
///
/// ```
/// use icetrim::progress::{Phase, ProgressEvent};
/// let event = ProgressEvent { phase: Phase::ReadingManifests, done: 3, total: Some(4), bytes: 900, total_bytes: None, finished: false };
/// assert_eq!(event.fraction(), Some(0.75));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProgressEvent {
    /// The phase.
    pub phase: Phase,
    /// Files done in this phase.
    pub done: u64,
    /// Files this phase will handle, when known before it starts.
    pub total: Option<u64>,
    /// Bytes read, listed, written or deleted in this phase, where the store tells (0 otherwise).
    pub bytes: u64,
    /// The bytes this phase will handle, when known before it starts.
    pub total_bytes: Option<u64>,
    /// The phase's last event: its final counts.
    pub finished: bool,
}

impl ProgressEvent {
    /// How far the phase is: `bytes / total_bytes` when the phase knows its bytes (units such as
    /// compaction's groups are too coarse for a bar), else `done / total`, when known and not 0.
    ///
    /// ```
    /// use icetrim::progress::{Phase, ProgressEvent};
    /// let event = ProgressEvent { phase: Phase::ListingFiles, done: 10, total: None, bytes: 0, total_bytes: None, finished: false };
    /// assert_eq!(event.fraction(), None);
    /// ```
    pub fn fraction(&self) -> Option<f64> {
        if let Some(total_bytes) = self.total_bytes.filter(|t| *t > 0) {
            return Some(self.bytes as f64 / total_bytes as f64);
        }
        match self.total {
            Some(total) if total > 0 => Some(self.done as f64 / total as f64),
            _ => None,
        }
    }
}

/// Receives a statement's progress events; called from the task running the statement, so it
/// should return quickly.
///
/// ```
/// use std::sync::Arc;
/// use icetrim::progress::{ProgressEvent, ProgressSink};
/// let sink: ProgressSink = Arc::new(|event: &ProgressEvent| eprintln!("{}: {}", event.phase, event.done));
/// # let _ = sink;
/// ```
pub type ProgressSink = Arc<dyn Fn(&ProgressEvent) + Send + Sync>;

/// Cancels statements: clone it, hand a clone to [`Session::execute_with`], call
/// [`cancel`](Self::cancel) from anywhere (another task, a signal handler thread).
///
/// ```
/// use icetrim::progress::CancelToken;
/// let token = CancelToken::new();
/// let handle = token.clone();
/// assert!(!token.is_cancelled());
/// handle.cancel();
/// assert!(token.is_cancelled());
/// ```
///
/// [`Session::execute_with`]: crate::engine::Session::execute_with
#[derive(Debug, Clone, Default)]
pub struct CancelToken {
    inner: Arc<CancelInner>,
}

#[derive(Debug, Default)]
struct CancelInner {
    cancelled: AtomicBool,
    notify: Notify,
}

impl CancelToken {
    /// A token not cancelled yet.
    pub fn new() -> Self {
        CancelToken::default()
    }

    /// Cancels every statement running with this token (and every later one).
    pub fn cancel(&self) {
        self.inner.cancelled.store(true, Ordering::SeqCst);
        self.inner.notify.notify_waiters();
    }

    /// Whether [`cancel`](Self::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::SeqCst)
    }

    /// Completes once the token is cancelled (at once if it already is).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let token = icetrim::progress::CancelToken::new();
    /// let handle = token.clone();
    /// tokio::spawn(async move { handle.cancel() });
    /// token.cancelled().await;
    /// assert!(token.is_cancelled());
    /// # }
    /// ```
    pub async fn cancelled(&self) {
        loop {
            let notified = self.inner.notify.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

/// The error of a statement cancelled before it wrote anything.
///
/// ```
/// assert_eq!(icetrim::progress::cancelled_error().code(), 394);
/// ```
pub fn cancelled_error() -> Error {
    Error::new(
        ErrorKind::QueryWasCancelled,
        "Query was cancelled; nothing was written or deleted",
    )
}

/// One statement's progress reporting and cancellation, as the executors see it. Cheap to clone;
/// the default reports nothing and is never cancelled.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use icetrim::progress::{CancelToken, Phase, Progress, ProgressEvent};
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let log = Arc::clone(&seen);
/// let token = CancelToken::new();
/// let progress = Progress::new(
///     Some(Arc::new(move |e: &ProgressEvent| log.lock().unwrap().push(*e))),
///     Some(token.clone()),
/// );
/// progress.phase(Phase::ReadingManifests, Some(2))?;
/// progress.advance(1, 100);
/// progress.advance(1, 50);
/// progress.finish();
/// let last = *seen.lock().unwrap().last().unwrap();
/// assert_eq!((last.done, last.total, last.bytes, last.finished), (2, Some(2), 150, true));
/// token.cancel();
/// assert_eq!(progress.check().unwrap_err().code(), 394);
/// # Ok::<(), icetrim::Error>(())
/// ```
#[derive(Clone, Default)]
pub struct Progress {
    inner: Option<Arc<Tracker>>,
}

impl fmt::Debug for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Progress")
            .field(
                "reporting",
                &self.inner.as_ref().is_some_and(|t| t.sink.is_some()),
            )
            .field("writing", &self.is_writing())
            .finish()
    }
}

/// The phase under way, its total units and its total bytes (when known).
type OpenPhase = (Phase, Option<u64>, Option<u64>);

struct Tracker {
    sink: Option<ProgressSink>,
    cancel: Option<CancelToken>,
    started: Instant,
    phase: Mutex<Option<OpenPhase>>,
    done: AtomicU64,
    bytes: AtomicU64,
    /// Nanoseconds after `started` of the last throttled event.
    last_emit_ns: AtomicU64,
    writing: AtomicBool,
}

impl Progress {
    /// Reporting to `sink` (if any) and cancelled by `cancel` (if any).
    pub fn new(sink: Option<ProgressSink>, cancel: Option<CancelToken>) -> Self {
        if sink.is_none() && cancel.is_none() {
            return Progress::default();
        }
        Progress {
            inner: Some(Arc::new(Tracker {
                sink,
                cancel,
                started: Instant::now(),
                phase: Mutex::new(None),
                done: AtomicU64::new(0),
                bytes: AtomicU64::new(0),
                last_emit_ns: AtomicU64::new(0),
                writing: AtomicBool::new(false),
            })),
        }
    }

    /// Runs `work` (which reports to `self`); the last phase is finished when `work` completes. Before the procedure writes, cancelling drops `work` where it stands
    /// and returns `QUERY_WAS_CANCELLED`; after, `work` runs on (its deletes stop by themselves).
    pub async fn scope<T>(&self, work: impl Future<Output = Result<T>>) -> Result<T> {
        let scoped = work;
        let outcome = match self.token() {
            None => scoped.await,
            Some(token) => {
                let mut scoped = std::pin::pin!(scoped);
                let mut cancel_seen = false;
                loop {
                    tokio::select! {
                        biased;
                        outcome = &mut scoped => break outcome,
                        () = token.cancelled(), if !cancel_seen => {
                            if !self.is_writing() {
                                break Err(cancelled_error());
                            }
                            cancel_seen = true;
                        }
                    }
                }
            }
        };
        self.finish();
        outcome
    }

    /// A new scope for the next statement of a run of several (`SYSTEM MAINTAIN`'s procedures):
    /// the same sink and cancel token, not yet writing, so that a cancel between two procedures
    /// stops the next one before it writes.
    pub fn next_scope(&self) -> Progress {
        match &self.inner {
            None => Progress::default(),
            Some(t) => Progress::new(t.sink.clone(), t.cancel.clone()),
        }
    }

    fn token(&self) -> Option<&CancelToken> {
        self.inner.as_ref().and_then(|t| t.cancel.as_ref())
    }

    /// Whether the statement was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.token().is_some_and(CancelToken::is_cancelled)
    }

    /// `QUERY_WAS_CANCELLED` when cancelled before the procedure writes; `Ok` otherwise.
    pub fn check(&self) -> Result<()> {
        if self.is_cancelled() && !self.is_writing() {
            return Err(cancelled_error());
        }
        Ok(())
    }

    /// Whether remaining deletes should go on (`false` once cancelled).
    pub fn keep_going(&self) -> bool {
        !self.is_cancelled()
    }

    /// The point of no return, right before the first write: checks cancellation one last time;
    /// from then on cancelling no longer aborts the statement.
    pub fn begin_writes(&self) -> Result<()> {
        self.check()?;
        if let Some(t) = &self.inner {
            t.writing.store(true, Ordering::SeqCst);
        }
        Ok(())
    }

    /// The write did not happen after all (a commit conflict; the procedure plans again).
    pub fn writes_abandoned(&self) {
        if let Some(t) = &self.inner {
            t.writing.store(false, Ordering::SeqCst);
        }
    }

    /// Whether [`begin_writes`](Self::begin_writes) was passed.
    pub fn is_writing(&self) -> bool {
        self.inner
            .as_ref()
            .is_some_and(|t| t.writing.load(Ordering::SeqCst))
    }

    /// Starts `phase` with `total` files (finishing the previous one); fails when cancelled
    /// before the procedure writes.
    pub fn phase(&self, phase: Phase, total: Option<usize>) -> Result<()> {
        self.phase_sized(phase, total, None)
    }

    /// Starts `phase` with `total` units and `total_bytes` bytes (finishing the previous one);
    /// fails when cancelled before the procedure writes.
    pub fn phase_sized(
        &self,
        phase: Phase,
        total: Option<usize>,
        total_bytes: Option<u64>,
    ) -> Result<()> {
        self.check()?;
        self.start_sized(phase, total, total_bytes);
        Ok(())
    }

    /// Starts `phase` with `total` files without checking cancellation (for the deletes after
    /// the point of no return).
    pub fn start(&self, phase: Phase, total: Option<usize>) {
        self.start_sized(phase, total, None);
    }

    /// Starts `phase` with `total` units and `total_bytes` bytes, without checking cancellation.
    pub fn start_sized(&self, phase: Phase, total: Option<usize>, total_bytes: Option<u64>) {
        let Some(t) = &self.inner else {
            return;
        };
        self.finish();
        let total = total.map(|n| u64::try_from(n).unwrap_or(u64::MAX));
        if let Ok(mut current) = t.phase.lock() {
            *current = Some((phase, total, total_bytes));
        }
        t.done.store(0, Ordering::Relaxed);
        t.bytes.store(0, Ordering::Relaxed);
        self.emit(false);
    }

    /// One more file of `bytes` bytes done in the current phase.
    pub fn file_done(&self, bytes: usize) {
        self.advance(1, u64::try_from(bytes).unwrap_or(u64::MAX));
    }

    /// The warning of a statement cancelled after its point of no return, if it was.
    pub fn cancel_warning(&self) -> Option<String> {
        (self.is_cancelled() && self.is_writing()).then(|| {
            "Query was cancelled after it started writing: what was written stands, the \
             remaining deletes were skipped (running the statement again finishes them)"
                .to_string()
        })
    }

    /// `files` more files (and `bytes` more bytes) done in the current phase.
    pub fn advance(&self, files: u64, bytes: u64) {
        let Some(t) = &self.inner else {
            return;
        };
        if t.sink.is_none() {
            return;
        }
        t.done.fetch_add(files, Ordering::Relaxed);
        t.bytes.fetch_add(bytes, Ordering::Relaxed);
        let now = u64::try_from(t.started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let last = t.last_emit_ns.load(Ordering::Relaxed);
        let due = now.saturating_sub(last) >= EMIT_INTERVAL.as_nanos() as u64;
        if due
            && t.last_emit_ns
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.emit(false);
        }
    }

    /// Ends the current phase with its final counts (nothing when no phase is open).
    pub fn finish(&self) {
        self.emit(true);
        if let Some(mut current) = self.inner.as_ref().and_then(|t| t.phase.lock().ok()) {
            *current = None;
        }
    }

    fn emit(&self, finished: bool) {
        let Some(t) = &self.inner else {
            return;
        };
        let Some(sink) = &t.sink else {
            return;
        };
        let Some((phase, total, total_bytes)) = t.phase.lock().ok().and_then(|p| *p) else {
            return;
        };
        sink(&ProgressEvent {
            phase,
            done: t.done.load(Ordering::Relaxed),
            total,
            bytes: t.bytes.load(Ordering::Relaxed),
            total_bytes,
            finished,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorder() -> (ProgressSink, Arc<Mutex<Vec<ProgressEvent>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        let sink: ProgressSink = Arc::new(move |e: &ProgressEvent| log.lock().unwrap().push(*e));
        (sink, seen)
    }

    #[test]
    fn phases_open_and_close_in_order_with_final_counts() {
        let (sink, seen) = recorder();
        let p = Progress::new(Some(sink), None);
        p.phase(Phase::ReadingManifestLists, Some(3)).unwrap();
        for _ in 0..3 {
            p.advance(1, 10);
        }
        p.phase(Phase::ReadingManifests, Some(1)).unwrap();
        p.advance(1, 7);
        p.finish();
        p.finish();
        let seen = seen.lock().unwrap();
        let first = seen.first().unwrap();
        assert_eq!(
            (first.phase, first.done, first.finished),
            (Phase::ReadingManifestLists, 0, false)
        );
        let ends: Vec<_> = seen.iter().filter(|e| e.finished).collect();
        assert_eq!(ends.len(), 2);
        assert_eq!(
            (ends[0].done, ends[0].bytes, ends[0].total),
            (3, 30, Some(3))
        );
        assert_eq!(
            (ends[1].phase, ends[1].done, ends[1].bytes),
            (Phase::ReadingManifests, 1, 7)
        );
        assert!(seen.windows(2).all(|w| w[0].phase <= w[1].phase));
    }

    #[test]
    fn advances_are_throttled() {
        let (sink, seen) = recorder();
        let p = Progress::new(Some(sink), None);
        p.phase(Phase::ListingFiles, None).unwrap();
        for _ in 0..100_000 {
            p.advance(1, 1);
        }
        p.finish();
        let seen = seen.lock().unwrap();
        assert!(seen.len() < 1000, "{} events", seen.len());
        assert_eq!(seen.last().unwrap().done, 100_000);
    }

    #[test]
    fn cancellation_aborts_only_before_writes() {
        let token = CancelToken::new();
        let p = Progress::new(None, Some(token.clone()));
        p.phase(Phase::ReadingManifests, None).unwrap();
        token.cancel();
        assert_eq!(
            p.phase(Phase::ListingFiles, None).unwrap_err().kind(),
            ErrorKind::QueryWasCancelled
        );
        assert!(p.begin_writes().is_err());
        let token = CancelToken::new();
        let p = Progress::new(None, Some(token.clone()));
        p.begin_writes().unwrap();
        token.cancel();
        assert!(p.check().is_ok() && p.phase(Phase::DeletingFiles, Some(1)).is_ok());
        assert!(!p.keep_going());
    }

    #[tokio::test]
    async fn scope_drops_work_before_writes_and_finishes_it_after() {
        let token = CancelToken::new();
        let p = Progress::new(None, Some(token.clone()));
        let canceller = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            canceller.cancel();
        });
        let outcome = p.scope(std::future::pending::<Result<()>>()).await;
        assert_eq!(outcome.unwrap_err().kind(), ErrorKind::QueryWasCancelled);

        let token = CancelToken::new();
        let p = Progress::new(None, Some(token.clone()));
        let inner = p.clone();
        let outcome = p
            .scope(async move {
                inner.begin_writes()?;
                token.cancel();
                tokio::time::sleep(Duration::from_millis(20)).await;
                Ok(inner.keep_going())
            })
            .await;
        assert!(!outcome.unwrap());
    }

    #[test]
    fn silent_progress_by_default() {
        let p = Progress::default();
        assert!(p.phase(Phase::DeletingFiles, Some(1)).is_ok());
        p.advance(1, 1);
        assert!(p.keep_going() && !p.is_writing());
    }
}
