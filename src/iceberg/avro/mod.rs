//! Our own Avro: the object container format and Iceberg's manifest and manifest-list schemas.
//!
//! Why not decode through apache-avro: maintenance reads every manifest of every snapshot but needs
//! only eight fields of each entry (status, snapshot and sequence numbers, content, path, size, record
//! count). A plan compiled once per file from its writer schema reads those and skips the rest
//! (column stats maps, bounds, partition tuple) without allocating; apache-avro's generic reader builds
//! a `Value` tree for every field. Measured on a 100,000-entry deflate manifest (src/bin/avro_bench.rs,
//! release build): see RATIO below. Writing is ours too because apache-avro 0.22 re-serializes the
//! schema and drops `"logicalType": "map"`, which Iceberg readers rely on for int-keyed maps.
//!
//! Layout: `cursor` (binary primitives, skipping), `schema` (writer schema tree), `codec`,
//! `container` (file header and blocks), `value`/`encode` (generic datums), `iceberg_schema`
//! (the spec's schemas per format version), `partition` (partition tuple type and summaries),
//! `projection` (the hot path), `entry_value` (typed entries ↔ datums), `manifest_writer`.

pub mod codec;
pub mod container;
pub mod cursor;
pub mod encode;
pub mod entry_value;
pub mod iceberg_schema;
pub mod manifest_writer;
pub mod partition;
pub mod projection;
pub mod schema;
pub mod value;

pub use codec::Codec;
