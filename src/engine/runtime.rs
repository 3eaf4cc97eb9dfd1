//! What statements run with beyond the session: the clock, and (as the storage layer grows) the
//! object stores and progress hooks. One `Runtime` per `Engine`, shared by its sessions.

use std::sync::Arc;

use crate::clock::{Clock, SystemClock};

/// Shared services for executing statements.
#[derive(Debug, Clone)]
pub struct Runtime {
    pub clock: Arc<dyn Clock>,
}

impl Runtime {
    /// A runtime on `clock`.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Runtime { clock }
    }
}

impl Default for Runtime {
    fn default() -> Self {
        Runtime::new(Arc::new(SystemClock))
    }
}
