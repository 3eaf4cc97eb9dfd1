//! Procedure calls as typed options: what the SQL binder (`sql::bind`) produces and the maintenance
//! code consumes. No I/O here.

pub mod compact;
pub mod options;
pub mod procedures;
pub mod snapshots;

pub use compact::{CmpOp, CompactOptions, Predicate};
pub use options::{
    ExpireOptions, OrphanOptions, ProcedureCall, RewriteManifestsOptions, check_older_than,
    normalize_location, retain_last_count,
};
pub use snapshots::{
    CreateMode, RefRetention, RefType, SnapshotProcedure, SnapshotSelector, TableChange, TimeUnit,
};
