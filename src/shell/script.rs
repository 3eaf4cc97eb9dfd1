//! Script mode (`-q`, `--queries-file`, or standard input that is not a terminal): every
//! statement in order, each result printed as it comes, the first error ends the run unless
//! `--ignore-error`. An error of a statement read from standard input or a file is followed by a
//! line naming where the statement is (its line and first words); `--echo` prints each statement
//! before its result, as clickhouse-client does. Both mask secrets as the history does. A procedure whose planned deletes partly failed
//! prints its rows, then fails (see [`super::failed_deletions_error`]). A `SELECT` in a row-by-row
//! format (TSV, CSV, JSONEachRow) is printed a chunk at a time as it is read, never held whole.

use std::time::Instant;

use tokio::runtime::Runtime;

use super::output::{Output, OutputError};
use super::statements::{self, ShellStatement};
use crate::engine::{Session, StatementOutput};
use crate::format::OutputFormat;

/// How a script runs.
#[derive(Debug, Clone, Copy)]
pub struct ScriptOptions<'a> {
    /// Format of results without a `FORMAT` clause.
    pub format: OutputFormat,
    /// Print each statement's elapsed seconds to standard error.
    pub time: bool,
    /// Go on after an error.
    pub ignore_error: bool,
    /// Print each statement before its result.
    pub echo: bool,
    /// Name the failing statement's line under its error, with this script name (`Some("")`:
    /// standard input, no name); `None`: not located (`-q`).
    pub located: Option<&'a str>,
}

/// Runs `sql`; returns the exit code: 0, or the exit code of the last error (see
/// [`super::exit_code`]).
pub fn run(
    runtime: &Runtime,
    session: &mut Session,
    sql: &str,
    options: ScriptOptions<'_>,
    out: &mut Output,
) -> Result<u8, OutputError> {
    let mut exit = 0;
    let prepared = statements::prepare(sql);
    for statement in statements::statements(&prepared) {
        if options.echo {
            out.print(&format!("{}\n", echoed(&statement)))?;
        }
        let started = Instant::now();
        let outcome =
            runtime.block_on(session.execute_one_streaming(statement.text, statement.line));
        let outcome = match outcome {
            Ok(StatementOutput::Rows(rows)) => {
                let format = if statement.vertical {
                    OutputFormat::Vertical
                } else {
                    rows.format.unwrap_or(options.format)
                };
                if out.streams(format) {
                    out.clear_progress();
                    out.stream_rows(runtime, rows, format)?.map(|()| None)
                } else {
                    runtime.block_on(rows.into_result()).map(Some)
                }
            }
            Ok(StatementOutput::Done(result)) => Ok(Some(result)),
            Err(error) => Err(error),
        };
        let elapsed = started.elapsed().as_secs_f64();
        out.clear_progress();
        let failure = match outcome {
            Ok(None) => None,
            Ok(Some(result)) => {
                let format = super::result_format(&result, &statement, options.format);
                let layout = super::output::layout(session.settings());
                out.print_result(&result, format, elapsed, layout)?;
                super::failed_deletions_error(&result, session.settings())
            }
            Err(error) => Some(error),
        };
        if let Some(error) = failure {
            out.error(&error);
            if let Some(name) = options.located {
                let name = (!name.is_empty()).then_some(name);
                out.note(&statements::location(&statement, name));
            }
            exit = super::exit_code(&error);
            if !options.ignore_error {
                return Ok(exit);
            }
        }
        if options.time {
            out.note(&format!("{elapsed:.3}"));
        }
    }
    Ok(exit)
}

/// A statement as `--echo` prints it: its text (secrets masked as the history masks them) and its
/// terminator.
fn echoed(statement: &ShellStatement<'_>) -> String {
    let text = super::history::history_text(statement.text);
    match (statement.terminated, statement.vertical) {
        (true, true) => format!("{text}\\G"),
        (true, false) => format!("{text};"),
        (false, _) => text,
    }
}
