//! Integration tests: `expire_snapshots`: the decisions, the files it deletes, differential runs against pyiceberg, and crashes.
//!
//! One binary per area; each file of this folder is a module, helpers come from `tests/support`.

#[path = "../support/mod.rs"]
mod support;

mod catalog_local_files;
mod catalog_rest;
mod catalog_rest_replan;
mod catalog_vended;
mod expire_crash;
mod expire_differential;
mod expire_files;
mod expire_metadata_cleanup;
mod maintain_scenarios;
mod rewrite_manifests;
mod rewrite_manifests_faults;
mod typed_api;
