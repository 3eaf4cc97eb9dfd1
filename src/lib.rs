//! icetrim: a ClickHouse-style SQL procedure engine that keeps Apache Iceberg tables lean.
//!
//! The pipeline, one folder a stage:
//! `sql/` (parse and bind statements) → `plan/` (procedure call → typed options and plans) →
//! `maintain/` (retention policy, keep set, orphans: pure decisions, and their execution) →
//! `iceberg/` (the spec model, metadata JSON, Avro manifests, commits) → `io/` (object storage).
//! `engine/` ties them into sessions; `format/` renders results; `shell/` is the binary's front.

pub mod clock;
pub mod engine;
pub mod error;
pub mod format;
pub mod generate;
pub mod iceberg;
pub mod io;
pub mod maintain;
pub mod plan;
mod pool;
pub mod settings;
pub mod shell;
pub mod sql;

pub use error::{Error, ErrorKind, Result};
