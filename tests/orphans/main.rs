//! Integration tests: `remove_orphan_files`: local tables, referenced files, storage faults and the S3/Azure emulators.
//!
//! One binary per area; each file of this folder is a module, helpers come from `tests/support`.

#[path = "../support/mod.rs"]
mod support;

mod orphans_emulators;
mod orphans_faults;
mod orphans_local;
mod orphans_references;
