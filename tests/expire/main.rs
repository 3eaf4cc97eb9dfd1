//! Integration tests: `expire_snapshots`: the decisions, the files it deletes, differential runs against pyiceberg, and crashes.
//!
//! One binary per area; each file of this folder is a module, helpers come from `tests/support`.

#[path = "../support/mod.rs"]
mod support;

mod catalog_rest;
mod expire_crash;
mod expire_differential;
mod expire_files;
mod maintain_scenarios;
mod typed_api;
