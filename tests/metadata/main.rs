//! Integration tests: Table metadata and Avro: lossless round trips, locating and committing metadata, corrupt input.
//!
//! One binary per area; each file of this folder is a module, helpers come from `tests/support`.

#[path = "../support/mod.rs"]
mod support;

mod avro_corrupt;
mod avro_roundtrip;
mod metadata_commit;
mod metadata_locate;
mod metadata_lossless;
mod metadata_scale;
