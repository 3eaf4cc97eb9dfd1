//! Process-wide resources for CPU work, a leaf below every layer that decodes:
//! - [`Pool`]: a bounded, process-wide free list of reusable values (decompressor states, read and
//!   decode buffers). Process-wide rather than thread-local because decoding runs on tokio's
//!   blocking pool, whose threads come and go; reuse matters because fresh buffers are page
//!   faults, the costliest part of reading a thousand manifest lists on a small VM.
//! - [`off_task`]: CPU work on the blocking pool, at most one piece per core at once.
//! - [`DropLater`]: a value whose slow drop happens on another thread.

use std::sync::Mutex;

use crate::error::{Error, Result};

pub(crate) struct Pool<T> {
    free: Mutex<Vec<T>>,
    max_items: usize,
}

impl<T> Pool<T> {
    /// A pool keeping at most `max_items` values.
    pub(crate) const fn new(max_items: usize) -> Self {
        Pool {
            free: Mutex::new(Vec::new()),
            max_items,
        }
    }

    /// A value given back earlier, if any.
    pub(crate) fn take(&self) -> Option<T> {
        self.free.lock().unwrap_or_else(|p| p.into_inner()).pop()
    }

    /// Keep `item` for a later [`Pool::take`]; dropped when the pool is full.
    pub(crate) fn give_back(&self, item: T) {
        let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
        if free.len() < self.max_items {
            free.push(item);
        }
    }
}

/// Run CPU work on the blocking pool (so files decode in parallel), or inline outside a runtime.
/// At most one piece of work per core runs at once, however many reads are in flight: more
/// decoding threads than cores only add context switches, and each new thread starts with cold
/// buffers and its own allocator arena (on 2 cores, 32 decoding threads spent a third of a
/// 1,000-snapshot expiry faulting in fresh pages).
pub(crate) async fn off_task<T, F>(work: F) -> Result<T>
where
    F: FnOnce() -> Result<T> + Send + 'static,
    T: Send + 'static,
{
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return work();
    };
    let permit = cpu_permits()
        .acquire_owned()
        .await
        .map_err(|e| Error::logical(format!("decoding permits closed: {e}")))?;
    handle
        .spawn_blocking(move || {
            let out = work();
            drop(permit);
            out
        })
        .await
        .map_err(|e| Error::logical(format!("decoding task failed: {e}")))?
}

/// Holds a value whose drop is slow (a parsed 100,000-snapshot metadata document, a large file
/// graph: most of a second of `free`) and drops it on a short-lived thread instead of making the
/// statement wait; dereferences to the value.
pub(crate) struct DropLater<T: Send + 'static>(Option<T>);

impl<T: Send + 'static> DropLater<T> {
    pub(crate) fn new(value: T) -> Self {
        DropLater(Some(value))
    }
}

impl<T: Send + 'static> std::ops::Deref for DropLater<T> {
    type Target = T;

    fn deref(&self) -> &T {
        // Only `Drop` takes the value out.
        self.0
            .as_ref()
            .unwrap_or_else(|| unreachable!("DropLater is emptied only by drop"))
    }
}

impl<T: Send + 'static> Drop for DropLater<T> {
    fn drop(&mut self) {
        if let Some(value) = self.0.take() {
            // When no thread can be started, the closure (and the value) drops here.
            let _ = std::thread::Builder::new()
                .name("icetrim-drop".into())
                .spawn(move || drop(value));
        }
    }
}

/// One permit per core, shared by every statement in the process.
fn cpu_permits() -> std::sync::Arc<tokio::sync::Semaphore> {
    static PERMITS: std::sync::OnceLock<std::sync::Arc<tokio::sync::Semaphore>> =
        std::sync::OnceLock::new();
    PERMITS
        .get_or_init(|| {
            let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
            std::sync::Arc::new(tokio::sync::Semaphore::new(cores))
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_at_most_max_items() {
        let pool = Pool::new(2);
        assert_eq!(pool.take(), None::<u8>);
        for i in 0..3 {
            pool.give_back(i);
        }
        let mut got = [pool.take(), pool.take(), pool.take()];
        got.sort();
        assert_eq!(got, [None, Some(0), Some(1)]);
    }
}
