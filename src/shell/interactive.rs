//! The interactive shell: rustyline line editing with a history file and Tab completion
//! ([`super::completion`]), statements that may span lines and run at `;` or at `\G` (which prints
//! that result Vertical, as clickhouse-client does), the current database in the prompt, Ctrl-C to
//! drop the line being typed or to cancel the running statement (through its [`CancelToken`]:
//! nothing is written when it is cancelled before its commit; a second Ctrl-C drops it where it
//! stands), Ctrl-D / `exit` / `quit` / `logout` / `q` / `\q` / `:q` to leave, `help` or `\?` for a
//! short help. Progress bars (on by default, `--no-progress`) are cleared before the result prints.
//! Output as clickhouse-client prints it: the result (PrettyCompact unless told otherwise), then
//! "N rows in set. Elapsed: 0.001 sec." ("Ok." first when there is no result set).
//!
//! The history (in memory and in the file) keeps each input as typed except its secrets
//! ([`history_text`]), as clickhouse-client hides secrets of the queries it records.

use std::path::PathBuf;
use std::time::Instant;

use rustyline::Editor;
use rustyline::config::{CompletionType, Config};
use rustyline::error::ReadlineError;
use rustyline::history::DefaultHistory;
use tokio::runtime::Runtime;

use super::completion::ShellHelper;
use super::history::history_text;
use super::output::{Output, OutputError};
use super::statements;
use crate::engine::{QueryResult, Session};
use crate::error::ErrorKind;
use crate::format::OutputFormat;
use crate::progress::CancelToken;

/// What `help` and `\?` print.
pub const HELP: &str = "\
Statements end with ';' (or '\\G' to print the result Vertical) and may span lines.
  SHOW TABLES; SHOW DATABASES; USE db;
  CREATE TABLE t ENGINE = IcebergLocal('/path/to/table');
  SELECT * FROM system.iceberg_snapshots;    also system.iceberg_refs, system.iceberg_history
  EXPLAIN ALTER TABLE t EXECUTE expire_snapshots(retention_period = '7d');
  ALTER TABLE t EXECUTE remove_orphan_files(dry_run = 1);
  OPTIMIZE TABLE t;                           compaction
  SET name = value;                           session settings
Tab completes keywords, procedures and their arguments, databases, tables, columns and settings.
Ctrl-C drops the line or cancels the running statement. Leave with exit, quit, \\q or Ctrl-D.
";

/// How the shell runs.
#[derive(Debug, Clone)]
pub struct ShellOptions {
    /// Format of results without a `FORMAT` clause.
    pub format: OutputFormat,
    /// Where the history is kept (`None`: not kept).
    pub history_file: Option<PathBuf>,
    /// Go on with the remaining statements of an input after an error.
    pub ignore_error: bool,
}

/// Runs the shell until the user leaves; returns the exit code (0).
pub fn run(
    runtime: &Runtime,
    session: &mut Session,
    options: &ShellOptions,
    out: &mut Output,
) -> Result<u8, OutputError> {
    let config = Config::builder()
        .auto_add_history(false)
        .completion_type(CompletionType::List)
        .build();
    let mut editor: Editor<ShellHelper, DefaultHistory> =
        Editor::with_config(config).map_err(readline_error)?;
    editor.set_helper(Some(ShellHelper::default()));
    if let Some(file) = &options.history_file {
        let _ = editor.load_history(file);
    }
    out.print(&format!(
        "icetrim {}. Statements end with ';'. Type help for help; leave with exit, quit or \
         Ctrl-D.\n\n",
        env!("CARGO_PKG_VERSION")
    ))?;
    let mut buffer = String::new();
    loop {
        let names = runtime.block_on(session.known_names());
        if let Some(helper) = editor.helper_mut() {
            helper.set_names(names);
        }
        let prompt = prompt(session.current_database(), !buffer.is_empty());
        match editor.readline(&prompt) {
            Ok(line) => {
                if buffer.is_empty() && is_exit_command(&line) {
                    break;
                }
                if buffer.is_empty() && is_help_command(&line) {
                    out.print(HELP)?;
                    out.print("\n")?;
                    continue;
                }
                if !buffer.is_empty() {
                    buffer.push('\n');
                }
                buffer.push_str(&line);
                if buffer.trim().is_empty() {
                    buffer.clear();
                    continue;
                }
                if !ends_with_terminator(&buffer) {
                    continue;
                }
                let input = std::mem::take(&mut buffer);
                let _ = editor.add_history_entry(history_text(&input).as_str());
                if let Some(file) = &options.history_file {
                    let _ = editor.save_history(file);
                }
                run_input(runtime, session, &input, options, out)?;
            }
            Err(ReadlineError::Interrupted) => buffer.clear(),
            Err(ReadlineError::Eof) => break,
            Err(other) => return Err(readline_error(other)),
        }
    }
    out.print("Bye.\n")?;
    Ok(0)
}

fn readline_error(error: ReadlineError) -> OutputError {
    match error {
        ReadlineError::Io(e) => OutputError::from(e),
        other => OutputError::Io(std::io::Error::other(other.to_string())),
    }
}

/// `icetrim (db) :) `, or `:-] ` aligned under it on continuation lines.
pub fn prompt(database: &str, continuation: bool) -> String {
    let head = format!("icetrim ({database}) ");
    if continuation {
        format!("{}:-] ", " ".repeat(head.chars().count()))
    } else {
        format!("{head}:) ")
    }
}

/// clickhouse-client's words to leave: `exit`, `quit`, `logout`, `q` (any case, optionally with
/// `;`), `\q`, `:q`.
pub fn is_exit_command(line: &str) -> bool {
    let word = line.trim().trim_end_matches(';').trim();
    ["exit", "quit", "q", "logout", "\\q", ":q"]
        .iter()
        .any(|w| word.eq_ignore_ascii_case(w))
}

/// `help` or `\?` (optionally with `;`).
pub fn is_help_command(line: &str) -> bool {
    let word = line.trim().trim_end_matches(';').trim();
    word.eq_ignore_ascii_case("help") || word == "\\?"
}

/// Whether `input` ends with a terminator (`;` or `\G`) outside strings and comments.
pub fn ends_with_terminator(input: &str) -> bool {
    statements::ends_with_terminator(input)
}

fn run_input(
    runtime: &Runtime,
    session: &mut Session,
    input: &str,
    options: &ShellOptions,
    out: &mut Output,
) -> Result<(), OutputError> {
    let prepared = statements::prepare(input);
    for statement in statements::statements(&prepared) {
        let started = Instant::now();
        let token = CancelToken::new();
        let outcome = run_cancellable(
            runtime,
            &token,
            session.execute_one_with(statement.text, statement.line, &token),
        );
        let elapsed = started.elapsed().as_secs_f64();
        out.clear_progress();
        let cancelled =
            matches!(&outcome, Some(Err(e)) if e.kind() == ErrorKind::QueryWasCancelled);
        match outcome {
            None => {
                out.note("Query was cancelled.");
                out.print("\n")?;
                return Ok(());
            }
            Some(Err(_)) if cancelled && token.is_cancelled() => {
                out.note("Query was cancelled.");
                out.print("\n")?;
                return Ok(());
            }
            Some(Ok(result)) if token.is_cancelled() => {
                let format = super::result_format(&result, &statement, options.format);
                print_result(out, session, &result, format, elapsed)?;
                return Ok(());
            }
            Some(Ok(result)) => {
                let format = super::result_format(&result, &statement, options.format);
                print_result(out, session, &result, format, elapsed)?;
                if let Some(error) = super::failed_deletions_error(&result, session.settings()) {
                    out.error(&error);
                    out.print("\n")?;
                    if !options.ignore_error {
                        return Ok(());
                    }
                }
            }
            Some(Err(error)) => {
                out.error(&error);
                out.print("\n")?;
                if !options.ignore_error {
                    return Ok(());
                }
            }
        }
    }
    Ok(())
}

/// Runs `work` to its end. The first Ctrl-C (SIGINT) cancels `token`, and `work` goes on to
/// finish as its statement does when cancelled; a second one drops `work` where it stands
/// (`None`).
pub fn run_cancellable<F: Future>(
    runtime: &Runtime,
    token: &CancelToken,
    work: F,
) -> Option<F::Output> {
    runtime.block_on(async {
        let mut work = std::pin::pin!(work);
        tokio::select! {
            output = &mut work => return Some(output),
            _ = tokio::signal::ctrl_c() => token.cancel(),
        }
        tokio::select! {
            output = work => Some(output),
            _ = tokio::signal::ctrl_c() => None,
        }
    })
}

fn print_result(
    out: &mut Output,
    session: &Session,
    result: &QueryResult,
    format: OutputFormat,
    elapsed: f64,
) -> Result<(), OutputError> {
    let rows = result.rows.len();
    if result.is_empty_set() || rows == 0 {
        for warning in &result.warnings {
            out.note(&format!("Warning: {warning}"));
        }
        return out.print(&format!(
            "Ok.\n\n0 rows in set. Elapsed: {elapsed:.3} sec.\n\n"
        ));
    }
    let layout = super::output::layout(session.settings());
    out.print_result(result, format, elapsed, layout)?;
    let noun = if rows == 1 { "row" } else { "rows" };
    out.print(&format!(
        "\n{rows} {noun} in set. Elapsed: {elapsed:.3} sec.\n\n"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminator_outside_strings_and_comments_only() {
        assert!(ends_with_terminator("SHOW TABLES;"));
        assert!(ends_with_terminator("SHOW\nTABLES ;  "));
        assert!(ends_with_terminator("SET a = 1; SHOW TABLES;"));
        assert!(!ends_with_terminator("SHOW TABLES"));
        assert!(!ends_with_terminator("SET a = 1; SHOW TABLES"));
        assert!(!ends_with_terminator("SET a = 'x;"));
        assert!(!ends_with_terminator("SHOW TABLES -- ;"));
        assert!(!ends_with_terminator("SHOW TABLES /* ; */"));
        assert!(ends_with_terminator("SHOW TABLES\\G"));
    }

    #[test]
    fn ctrl_c_cancels_running_work() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let token = CancelToken::new();
        assert_eq!(run_cancellable(&runtime, &token, async { 5 }), Some(5));
        let interrupt = |after_ms: u64| {
            let pid = std::process::id().to_string();
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(after_ms));
                std::process::Command::new("kill")
                    .args(["-INT", &pid])
                    .status()
            })
        };
        // The first Ctrl-C cancels the token; work that honours it ends by itself.
        let interrupter = interrupt(300);
        let started = Instant::now();
        let watched = token.clone();
        let outcome = run_cancellable(&runtime, &token, async move {
            watched.cancelled().await;
            7
        });
        assert_eq!(outcome, Some(7));
        assert!(token.is_cancelled());
        assert!(interrupter.join().unwrap().unwrap().success());
        // Work that ignores it is dropped at the second.
        let (first, second) = (interrupt(200), interrupt(600));
        let outcome = run_cancellable(&runtime, &CancelToken::new(), std::future::pending::<()>());
        assert_eq!(outcome, None);
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
        assert!(first.join().unwrap().unwrap().success());
        assert!(second.join().unwrap().unwrap().success());
    }

    #[test]
    fn exit_words() {
        for word in [
            "exit", "QUIT", " q ", "exit;", "logout", "\\q", "\\Q;", ":q",
        ] {
            assert!(is_exit_command(word), "{word}");
        }
        for word in ["help", "HELP;", " \\? "] {
            assert!(is_help_command(word), "{word}");
        }
        assert!(!is_help_command("help me"));
        assert!(!is_exit_command("exits"));
        assert!(!is_exit_command("SHOW TABLES"));
    }

    #[test]
    fn prompts_align() {
        assert_eq!(prompt("default", false), "icetrim (default) :) ");
        assert_eq!(prompt("default", true), "                  :-] ");
        assert_eq!(prompt("db", false).len() - 3, prompt("db", true).len() - 4);
    }
}
