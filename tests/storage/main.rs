//! Integration tests: the storage layer against local disk and the S3/Azure emulators, and
//! catalog tables (REST, vended credentials, Glue) over them.
//!
//! One binary per area; each file of this folder is a module, helpers come from `tests/support`.

#[path = "../support/mod.rs"]
mod support;

mod access_requests;
mod azure_sas;
#[cfg(feature = "glue")]
mod catalog_glue;
#[cfg(feature = "glue")]
mod catalog_glue_failures;
mod catalog_local_files;
mod catalog_maintain;
mod catalog_maintain_fleet;
mod catalog_rest;
mod catalog_rest_replan;
mod catalog_vended;
mod compaction_cloud;
#[cfg(feature = "glue")]
mod glue_support;
#[cfg(feature = "datafusion")]
mod host_stores;
mod local_errors;
mod maintain_lease;
mod metadata_cloud;
mod refs_base_moved;
mod refs_base_moved_cases;
mod statement_cache;
mod storage_conformance;
