//! Integration tests: The storage layer against local disk and the S3/Azure emulators.
//!
//! One binary per area; each file of this folder is a module, helpers come from `tests/support`.

#[path = "../support/mod.rs"]
mod support;

mod compaction_cloud;
mod metadata_cloud;
mod storage_conformance;
