//! What statements run with beyond the session: the clock and an optional storage override. One
//! `Runtime` per `Engine`, shared by its sessions (progress sinks and cancellation are per session
//! and per statement: see [`crate::progress`]).

use std::sync::Arc;

use crate::clock::{Clock, SystemClock};
use crate::io::FileIO;
use crate::maintain::target::BeforeCommit;

/// Shared services for executing statements.
#[derive(Debug, Clone)]
pub struct Runtime {
    pub clock: Arc<dyn Clock>,
    /// Storage to use for every table instead of the one its engine names (embedders that bring
    /// their own object store; tests that inject faults).
    pub io_override: Option<FileIO>,
    /// Run before every commit attempt of every statement (tests that put another writer's
    /// commit between a plan and its commit; see [`BeforeCommit`]).
    pub before_commit: Option<BeforeCommit>,
}

impl Runtime {
    /// A runtime on `clock`.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Runtime {
            clock,
            io_override: None,
            before_commit: None,
        }
    }
}

impl Default for Runtime {
    fn default() -> Self {
        Runtime::new(Arc::new(SystemClock))
    }
}
