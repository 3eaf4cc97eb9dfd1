//! Script mode (`-q`, or standard input that is not a terminal): every statement in order, each
//! result printed as it comes, the first error ends the run unless `--ignore-error`.

use std::time::Instant;

use tokio::runtime::Runtime;

use super::output::{Output, OutputError};
use crate::engine::Session;
use crate::format::OutputFormat;
use crate::sql::split_statements;

/// How a script runs.
#[derive(Debug, Clone, Copy)]
pub struct ScriptOptions {
    /// Format of results without a `FORMAT` clause.
    pub format: OutputFormat,
    /// Print each statement's elapsed seconds to standard error.
    pub time: bool,
    /// Go on after an error.
    pub ignore_error: bool,
}

/// Runs `sql`; returns the exit code: 0, or the exit code of the last error (see
/// [`super::exit_code`]).
pub fn run(
    runtime: &Runtime,
    session: &mut Session,
    sql: &str,
    options: ScriptOptions,
    out: &mut Output,
) -> Result<u8, OutputError> {
    let mut exit = 0;
    for (text, line) in split_statements(sql) {
        let started = Instant::now();
        let outcome = runtime.block_on(session.execute_one(text, line));
        let elapsed = started.elapsed().as_secs_f64();
        out.clear_progress();
        match outcome {
            Ok(result) => {
                let format = result.format.unwrap_or(options.format);
                out.print_result(&result, format, elapsed)?;
            }
            Err(error) => {
                out.error(&error);
                exit = super::exit_code(&error);
                if !options.ignore_error {
                    return Ok(exit);
                }
            }
        }
        if options.time {
            out.note(&format!("{elapsed:.3}"));
        }
    }
    Ok(exit)
}
