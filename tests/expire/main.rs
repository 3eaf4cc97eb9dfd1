//! Integration tests: `expire_snapshots` (the decisions, the files it deletes, differential runs
//! against pyiceberg, crashes) and `rewrite_manifests`, which shares its metadata-cleanup fixtures.
//!
//! One binary per area; each file of this folder is a module, helpers come from `tests/support`.

#[path = "../support/mod.rs"]
mod support;

mod expire_crash;
mod expire_differential;
mod expire_files;
mod expire_metadata_cleanup;
mod incremental_fixtures;
mod maintain_scenarios;
mod rewrite_manifests;
mod rewrite_manifests_faults;
