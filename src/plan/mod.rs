//! Procedure calls as typed options: what the SQL binder (`sql::bind`) produces and the maintenance
//! code consumes. No I/O here.

pub mod compact;
pub mod options;

pub use compact::{CmpOp, CompactOptions, Predicate};
pub use options::{
    ExpireOptions, OrphanOptions, ProcedureCall, check_older_than, normalize_location,
    retain_last_count,
};
