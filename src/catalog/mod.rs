//! Catalogs that hold the pointer to a table's current metadata.

#[cfg(feature = "glue")]
pub mod glue;
