//! Integration tests: SQL (the grammar, binding, parse/print round trips, property tests, the
//! README's examples) and the typed Rust API beside it (builders, public surface, Send futures).
//!
//! One binary per area; each file of this folder is a module, helpers come from `tests/support`.

#[path = "../support/mod.rs"]
mod support;

mod compaction_where_filter;
mod public_api;
mod send_futures;
mod sql_bind;
mod sql_examples;
mod sql_grammar;
mod sql_limits;
mod sql_props;
mod sql_refs;
mod sql_roundtrip;
mod typed_api;
