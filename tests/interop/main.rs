//! Integration tests: Interoperability with pyiceberg: Avro, metadata, transactions and generated tables read by pyiceberg.
//!
//! One binary per area; each file of this folder is a module, helpers come from `tests/support`.

#[path = "../support/mod.rs"]
mod support;

mod avro_interop;
mod base_moved;
mod compaction;
mod compaction_disputed;
mod compaction_specs;
mod describe_interop;
mod fixture_smoke;
mod generate_interop;
#[cfg(feature = "datafusion")]
mod inspect_interop;
mod metadata_interop;
mod moved_base;
mod moved_base_checks;
mod moved_base_compaction;
mod moved_base_manifests;
mod snapshots_interop;
mod txn_interop;
