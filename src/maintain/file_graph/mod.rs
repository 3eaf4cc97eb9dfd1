//! Reading a table's file graph, shared by the procedures: manifest lists, manifests and
//! statistics entries read from storage ([`graph`] for expiry, [`reachable`] for orphan removal),
//! through one reading pipeline ([`pipeline`]: both cores decoding, a batch per hand-off), decoded
//! off the async task ([`decoded`]); the graph as plain data ([`model`]); interned path
//! keys, bitsets and fingerprints ([`paths`]).
//!
//! [`model`], [`paths`] and the fingerprint set are data structures (no I/O); [`graph`] and
//! [`reachable`] read storage.

mod decoded;
mod fingerprint_set;
pub mod graph;
pub mod model;
pub mod paths;
mod pipeline;
pub mod reachable;
