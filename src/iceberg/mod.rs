//! The Iceberg table format: the domain model, `metadata.json`, Avro manifests and manifest lists,
//! finding the current metadata, and commits.

pub mod arrow;
pub mod avro;
pub mod commit;
pub mod guard;
pub mod locate;
pub mod manifest;
pub mod manifest_list;
pub mod metadata;
pub mod metadata_peek;
pub mod ownership;
pub mod partition_tuple;
pub mod spec;
mod summary;
pub mod txn;
