//! icetrim: a ClickHouse-style SQL procedure engine that keeps Apache Iceberg tables lean.
//!
//! Layers, each importing only the ones below it (checked by a unit test, `src/layers.rs`):
//!
//! ```text
//! shell ──▶ engine ──┬──▶ sql ──────────────────▶ plan
//!                    ├──▶ format
//!                    └──▶ maintain ──▶ iceberg ──▶ io
//!                                 └─────────────▶ plan
//! settings: used by engine and maintain; imports only leaves
//! leaves, usable from any layer: error, clock, pool (CPU work, buffers), progress (events,
//! cancellation), literal (SQL constants), time_zone (session time zone)
//! ```
//!
//! (The engine also opens storage, `iceberg` and `io`, to build a table's target; `generate/`
//! writes test tables with `iceberg` and `io`.)
//!
//! `sql/` parses and binds statements into `plan/`'s typed options; `maintain/` runs the
//! procedures (one folder each) and returns typed outcomes; `iceberg/` is the spec model, metadata
//! JSON, Avro manifests, commits; `io/` is object storage. `engine/` ties them into sessions and
//! turns outcomes into rows; `format/` renders results; `shell/` is the binary's front.

pub mod clock;
pub mod engine;
pub mod error;
pub mod format;
pub mod generate;
pub mod iceberg;
pub mod io;
#[cfg(test)]
mod layers;
mod literal;
pub mod maintain;
pub mod plan;
mod pool;
pub mod progress;
pub mod settings;
pub mod shell;
pub mod sql;
mod time_zone;

pub use error::{Error, ErrorKind, Result};
