//! Integration tests: The command-line shell (scripts and a pseudo-terminal), the embedding example and the engine's sessions and progress.
//!
//! One binary per area; each file of this folder is a module, helpers come from `tests/support`.

#[path = "../support/mod.rs"]
mod support;

mod catalog_owned;
mod cli_grants;
mod cli_habits;
mod cli_limits;
mod cli_maintenance_log;
mod cli_script;
mod cli_secrets;
mod cli_tty;
mod cli_tty_habits;
mod compaction_killed;
mod compaction_memory;
mod embed_example;
mod engine_limits;
mod engine_progress;
mod engine_session;
#[cfg(feature = "datafusion")]
mod host_example;
mod maintain_unattended;
mod readme_tour;
mod storage_mistakes;
