//! Integration tests: The `.test` scenario files of this folder, run through the engine on every backend.
//!
//! One binary per area; each file of this folder is a module, helpers come from `tests/support`.

#[path = "../support/mod.rs"]
mod support;

mod session_text;
mod sessions;
