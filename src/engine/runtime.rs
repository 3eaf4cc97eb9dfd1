//! What statements run with beyond the session: the clock and an optional storage override. One
//! `Runtime` per `Engine`, shared by its sessions (progress sinks and cancellation are per session
//! and per statement: see [`crate::progress`]).

use std::sync::{Arc, OnceLock};

use crate::clock::{Clock, SystemClock};
use crate::io::{FileIO, StoreResolver};
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
    /// A host's object stores, asked first for a remote table's bucket (set once: by
    /// `EngineBuilder::object_stores` or when installed in a DataFusion context).
    pub host_stores: HostStores,
}

/// A host's object stores ([`StoreResolver`]), set at most once and shared by every clone of
/// the runtime.
#[derive(Clone, Default)]
pub struct HostStores(Arc<OnceLock<StoreResolver>>);

impl HostStores {
    /// Uses `resolver` from now on; false (and nothing changes) when one is already set.
    pub fn set(&self, resolver: StoreResolver) -> bool {
        self.0.set(resolver).is_ok()
    }
}

impl std::fmt::Debug for HostStores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "HostStores(set)"
        } else {
            "HostStores(unset)"
        })
    }
}

impl Runtime {
    /// A runtime on `clock`.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Runtime {
            clock,
            io_override: None,
            before_commit: None,
            host_stores: HostStores::default(),
        }
    }

    /// The host's object stores, if a host supplied them.
    pub fn host_stores(&self) -> Option<&StoreResolver> {
        self.host_stores.0.get()
    }
}

impl Default for Runtime {
    fn default() -> Self {
        Runtime::new(Arc::new(SystemClock))
    }
}
