//! The Iceberg model over Arrow: an Iceberg schema as an Arrow schema with field ids (`schema.rs`),
//! batches adapted to it, and the partition and sort transforms over Arrow arrays
//! (`transform.rs`). Pure; compaction reads and writes Parquet through these.

pub mod schema;
pub mod transform;
