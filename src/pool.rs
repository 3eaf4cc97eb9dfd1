//! [`Pool`]: a bounded, process-wide free list of reusable values (decompressor states, read and
//! decode buffers). Process-wide rather than thread-local because decoding runs on tokio's
//! blocking pool, whose threads come and go; reuse matters because fresh buffers are page faults,
//! the costliest part of reading a thousand manifest lists on a small VM.

use std::sync::Mutex;

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
