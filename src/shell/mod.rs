//! The `icetrim` binary's front: the command line, script mode (`-q` or piped standard input) and
//! the interactive shell (standard input on a terminal).
//!
//! Exit status: 0 on success; after an error, its ClickHouse code modulo 256 as clickhouse-client
//! does (1 when that would be 0); with `--ignore-error`, the last error's. A procedure whose
//! planned deletes partly failed prints its rows and then fails with `CANNOT_UNLINK` (458, exit
//! status 202) unless `iceberg_error_on_failed_deletions = 0` ([`failed_deletions_error`]). A
//! closed standard output (`| head`) ends the program quietly with 0. Command-line mistakes are
//! ClickHouse errors too ([`args`]: `UNRECOGNIZED_ARGUMENTS`, `BAD_ARGUMENTS`) under the same
//! rule; `--help` and `--version` print and exit with 0.
//!
//! `icetrim maintain …` runs `SYSTEM MAINTAIN` unattended, once or in a loop ([`maintain_loop`]).
//!
//! Results without a `FORMAT` clause print as PrettyCompact when standard output is a terminal
//! (the interactive shell, `-q`, a script), as TabSeparated otherwise, as clickhouse-client
//! prints them.

pub mod args;
pub mod completion;
pub mod demo;
pub mod history;
pub mod interactive;
pub mod maintain_loop;
pub mod output;
pub mod progress_bar;
pub mod script;
pub mod statements;

use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::process::ExitCode;

pub use args::Args;
use output::{Output, OutputError};

use crate::engine::{Engine, QueryResult, Session};
use crate::error::{Error, ErrorKind};
use crate::format::OutputFormat;
use crate::settings::Settings;
use statements::ShellStatement;

/// The binary's `main`: parses the command line, runs, and turns the outcome into the exit status.
pub fn main() -> ExitCode {
    let command_line: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if maintain_loop::is_maintain(&command_line) {
        return ExitCode::from(maintain_loop::main(command_line));
    }
    match Args::parse_with_params(command_line) {
        Ok(args) => ExitCode::from(run(args)),
        Err(args::ArgsError::Print(help)) => help.exit(),
        Err(args::ArgsError::Invalid(error)) => {
            Output::new().error(&error);
            ExitCode::from(exit_code(&error))
        }
    }
}

/// Runs icetrim as the command line `args` asks; returns the exit status.
pub fn run(args: Args) -> u8 {
    let mut out = Output::new();
    match try_main(&args, &mut out) {
        Ok(code) => code,
        Err(Failure::Error(error)) => {
            out.error(&error);
            exit_code(&error)
        }
        Err(Failure::Output(OutputError::BrokenPipe)) => 0,
        Err(Failure::Output(OutputError::Io(error))) => {
            out.note(&format!("Cannot write output: {error}"));
            1
        }
    }
}

/// The exit status for `error`: its code modulo 256, never 0.
pub fn exit_code(error: &Error) -> u8 {
    match u8::try_from(error.code().rem_euclid(256)) {
        Ok(0) | Err(_) => 1,
        Ok(code) => code,
    }
}

/// The error that ends a procedure whose planned deletes partly failed (its rows printed first),
/// unless the session's `iceberg_error_on_failed_deletions` is 0: then its warning is all.
pub fn failed_deletions_error(result: &QueryResult, settings: &Settings) -> Option<Error> {
    let failed = result.failed_deletions;
    if failed <= 0 || !settings.get_bool("iceberg_error_on_failed_deletions") {
        return None;
    }
    Some(Error::new(
        ErrorKind::CannotUnlink,
        format!(
            "{failed} of the planned deletions failed (the warning above names them). \
             SET iceberg_error_on_failed_deletions = 0 to only warn"
        ),
    ))
}

/// The format a statement's result prints in: Vertical after `\G`, else its `FORMAT` clause's,
/// else `default`.
pub fn result_format(
    result: &QueryResult,
    statement: &ShellStatement<'_>,
    default: OutputFormat,
) -> OutputFormat {
    if statement.vertical {
        return OutputFormat::Vertical;
    }
    result.format.unwrap_or(default)
}

/// Why the program stops early.
#[derive(Debug)]
enum Failure {
    Error(Error),
    Output(OutputError),
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Failure::Error(error)
    }
}

impl From<OutputError> for Failure {
    fn from(error: OutputError) -> Self {
        Failure::Output(error)
    }
}

/// Threads for blocking work (local file I/O, decoding). Tokio's default allows 512, and a
/// 1,000-file local delete then started ~300 threads; starting one costs more than the unlink it
/// runs. Reads and deletes stay concurrent (queued on these threads), and remote stores do not
/// use them for network I/O. `ICETRIM_BLOCKING_THREADS` overrides.
/// The engine the command-line options ask for: settings, `--path`, `--user`, and the
/// maintenance log's and metrics' files (the shell and `icetrim maintain` alike).
fn engine_of(args: &Args) -> crate::error::Result<Engine> {
    let mut builder = Engine::builder();
    for (name, value) in &args.settings {
        builder = builder.setting(name, value);
    }
    if let Some(path) = &args.path {
        builder = builder.data_path(path);
    }
    if let Some(user) = &args.user {
        builder = builder.user(user);
    }
    if let Some(file) = &args.metrics_file {
        builder = builder.metrics_file(file);
    }
    if let Some(file) = &args.maintenance_log_file {
        builder = builder.maintenance_log_file(file);
    }
    builder.build()
}

fn blocking_threads() -> usize {
    std::env::var("ICETRIM_BLOCKING_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(16)
}

fn try_main(args: &Args, out: &mut Output) -> Result<u8, Failure> {
    let format = args
        .format
        .as_deref()
        .map(OutputFormat::from_name)
        .transpose()?;
    if format == Some(OutputFormat::Prometheus) {
        return Err(crate::format::prometheus::needs_a_select().into());
    }
    let terminal_default = if std::io::stdout().is_terminal() {
        OutputFormat::PrettyCompact
    } else {
        OutputFormat::TabSeparated
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(blocking_threads())
        .build()
        .map_err(|e| Error::logical(format!("Cannot start the async runtime: {e}")))?;
    if args.demo {
        let piped = if terminal_default == OutputFormat::TabSeparated {
            OutputFormat::TabSeparatedWithNames
        } else {
            terminal_default
        };
        return match runtime.block_on(demo::run(out, format.unwrap_or(piped))) {
            Ok(()) => Ok(0),
            Err(demo::DemoFailure::Error(e)) => Err(Failure::Error(e)),
            Err(demo::DemoFailure::Output(e)) => Err(Failure::Output(e)),
        };
    }
    let engine = engine_of(args)?;
    let mut session = engine.session();
    // A warning that must come before a commit is printed at once, not after the result.
    session.set_early_warnings(Some(std::sync::Arc::new(|warning: &str| {
        eprintln!("Warning: {warning}");
    })));
    for (name, value) in &args.params {
        session.set_param(name, value);
    }
    if let Some(database) = &args.database {
        use_database(&runtime, &mut session, database)?;
    }
    let scripted = args.query.is_some() || !args.queries_files.is_empty();
    let interactive = !scripted && std::io::stdin().is_terminal();
    let progress = args.show_progress(interactive) && std::io::stderr().is_terminal();
    if progress {
        let bar = progress_bar::ProgressBar::new();
        session.set_progress(Some(bar.sink()));
        out.attach_progress(bar);
    }
    if interactive {
        let options = interactive::ShellOptions {
            format: format.unwrap_or(OutputFormat::PrettyCompact),
            history_file: args.history_file.clone().or_else(default_history_file),
            ignore_error: args.ignore_error,
        };
        return Ok(interactive::run(&runtime, &mut session, &options, out)?);
    }
    let options = script::ScriptOptions {
        format: format.unwrap_or(terminal_default),
        time: args.time,
        ignore_error: args.ignore_error,
        echo: args.echo,
        located: None,
    };
    if let Some(query) = &args.query {
        return Ok(script::run(&runtime, &mut session, query, options, out)?);
    }
    if args.queries_files.is_empty() {
        let sql = read_stdin()?;
        let options = script::ScriptOptions {
            located: Some(""),
            ..options
        };
        return Ok(script::run(&runtime, &mut session, &sql, options, out)?);
    }
    let mut exit = 0;
    for file in &args.queries_files {
        let sql = read_queries_file(file)?;
        let name = file.display().to_string();
        let options = script::ScriptOptions {
            located: Some(&name),
            ..options
        };
        let code = script::run(&runtime, &mut session, &sql, options, out)?;
        if code != 0 {
            exit = code;
            if !args.ignore_error {
                break;
            }
        }
    }
    Ok(exit)
}

/// `-d NAME`: the session starts in database `NAME`, as `USE NAME` would (an unknown one is
/// `UNKNOWN_DATABASE`).
fn use_database(
    runtime: &tokio::runtime::Runtime,
    session: &mut Session,
    name: &str,
) -> Result<(), Error> {
    let quoted = format!("`{}`", name.replace('\\', "\\\\").replace('`', "\\`"));
    runtime.block_on(session.execute_one(&format!("USE {quoted}"), 1))?;
    Ok(())
}

fn read_queries_file(file: &std::path::Path) -> Result<String, Error> {
    std::fs::read_to_string(file).map_err(|e| {
        Error::new(
            ErrorKind::CannotOpenFile,
            format!("Cannot open queries file {}: {e}", file.display()),
        )
    })
}

fn read_stdin() -> Result<String, Error> {
    let mut sql = String::new();
    std::io::stdin().read_to_string(&mut sql).map_err(|e| {
        Error::new(
            ErrorKind::BadArguments,
            format!("Cannot read statements from standard input: {e}"),
        )
    })?;
    Ok(sql)
}

fn default_history_file() -> Option<PathBuf> {
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".icetrim_history"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_deletions_fail_unless_the_setting_says_warn() {
        use crate::engine::render::render;
        use crate::maintain::{ExpireOutcome, OrphanMetrics, OrphanOutcome};
        let failed = |n: i64| {
            render(OrphanOutcome {
                metrics: OrphanMetrics {
                    failed_deletions_count: n,
                    ..Default::default()
                },
                ..Default::default()
            })
        };
        let mut settings = Settings::new();
        // Expiry's failed deletes count too, though ClickHouse's rows have no place for them.
        let expired = render(ExpireOutcome {
            failed_deletions: 2,
            ..Default::default()
        });
        assert!(failed_deletions_error(&expired, &settings).is_some());
        let error = failed_deletions_error(&failed(3), &settings).expect("an error");
        assert_eq!(error.kind(), ErrorKind::CannotUnlink);
        assert_eq!(exit_code(&error), 202);
        assert!(
            error
                .message()
                .starts_with("3 of the planned deletions failed")
        );
        assert!(failed_deletions_error(&failed(0), &settings).is_none());
        assert!(failed_deletions_error(&QueryResult::empty(), &settings).is_none());
        settings
            .set(
                "iceberg_error_on_failed_deletions",
                &crate::literal::Literal::Bool(false),
            )
            .unwrap();
        assert!(failed_deletions_error(&failed(3), &settings).is_none());
    }

    #[test]
    fn exit_codes_are_clickhouse_codes_modulo_256() {
        assert_eq!(exit_code(&Error::bad_arguments("x")), 36);
        assert_eq!(
            exit_code(&Error::new(ErrorKind::SupportIsDisabled, "x")),
            (344 % 256) as u8
        );
        assert_eq!(exit_code(&Error::new(ErrorKind::StorageError, "x")), 243);
    }
}
