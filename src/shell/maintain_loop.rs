//! `icetrim maintain`: `SYSTEM MAINTAIN` unattended, once (for cron or a Kubernetes CronJob) or in
//! a loop (`--every 1h`).
//!
//! ```text
//! icetrim maintain [--every DURATION] [--table NAME]... [-q SQL] [any global option]
//! ```
//!
//! What a round runs: `-q SQL` when given (any statements, e.g. `SYSTEM MAINTAIN DATABASE lake
//! NAMESPACE 'ns' SETTINGS …`); else `SYSTEM MAINTAIN TABLE NAME` for each `--table NAME`; else
//! `SYSTEM MAINTAIN DATABASE` of the current database (`-d NAME`, default `default`). Every global
//! option works as for `icetrim` itself (`--path`, `-u`, `-f`, `--<setting>=<value>`, …);
//! `--queries-file`, `--demo` and the interactive shell do not apply.
//!
//! Each round prints its rows as a script does, and a table that failed as an error on standard
//! error; the loop goes on. Policies are re-read every round (they are table properties, read by
//! each `SYSTEM MAINTAIN`). Between rounds it sleeps until `DURATION` after the previous round
//! started (at once when a round took longer).
//!
//! **Stopping.** SIGTERM or SIGINT asks the run to stop: the procedure running finishes, no other
//! starts (every commit stands, the table's lease is released), and the program exits with 0 —
//! a stop that was asked for is no failure, so a Kubernetes Job or a systemd unit stopped this way
//! does not count as failed. A second signal ends the program at once with 128 + the signal
//! number (what a crash leaves is safe: an unfinished commit is never visible, leftovers are
//! orphans, an interrupted expiry finishes on the next run, the lease expires).
//!
//! **Exit status** of a run that was not stopped (without `--every`): 0, or the error's exit code
//! when a table failed (see [`super::exit_code`]).

use std::ffi::OsString;
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::args::{Args, ArgsError};
use super::output::{Output, OutputError};
use super::script::{self, ScriptOptions};
use crate::error::Error;
use crate::format::OutputFormat;
use crate::progress::CancelToken;
use crate::sql::parse_duration_ms;

/// The subcommand's name, the first argument.
pub const SUBCOMMAND: &str = "maintain";

/// The options of `icetrim maintain` besides the global ones.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MaintainOptions {
    /// Time between the starts of two rounds; `None`: one round.
    pub every: Option<Duration>,
    /// Tables to maintain, as written in SQL.
    pub tables: Vec<String>,
}

/// Whether the command line (program name first) is `icetrim maintain …`.
pub fn is_maintain(command_line: &[OsString]) -> bool {
    command_line.get(1).is_some_and(|a| a == SUBCOMMAND)
}

/// Split `icetrim maintain …` into its own options and the global command line (the program name
/// first, `maintain` taken out), parsed as `icetrim`'s.
pub fn parse(command_line: Vec<OsString>) -> Result<(MaintainOptions, Args), ArgsError> {
    let mut options = MaintainOptions::default();
    let mut rest: Vec<OsString> = Vec::new();
    let mut items = command_line.into_iter().enumerate().peekable();
    while let Some((index, item)) = items.next() {
        if index == 1 {
            continue; // `maintain`
        }
        let text = item.to_string_lossy().into_owned();
        let (name, inline) = match text.split_once('=') {
            Some((name, value)) => (name.to_string(), Some(value.to_string())),
            None => (text.clone(), None),
        };
        if name != "--every" && name != "--table" {
            rest.push(item);
            continue;
        }
        let value = match inline {
            Some(value) => value,
            None => match items.next() {
                Some((_, value)) => value.to_string_lossy().into_owned(),
                None => return Err(invalid(&format!("{name} requires a value"))),
            },
        };
        if name == "--table" {
            options.tables.push(value);
        } else if options.every.replace(every(&value)?).is_some() {
            return Err(invalid("--every cannot be used multiple times"));
        }
    }
    let args = Args::parse_with_params(rest)?;
    if !args.queries_files.is_empty() || args.demo {
        return Err(invalid(
            "icetrim maintain takes -q or --table, not --queries-file or --demo",
        ));
    }
    if args.query.is_some() && !options.tables.is_empty() {
        return Err(invalid("icetrim maintain takes -q or --table, not both"));
    }
    Ok((options, args))
}

fn invalid(message: &str) -> ArgsError {
    ArgsError::Invalid(Error::bad_arguments(message))
}

/// `--every`'s value: a duration as `retention_period` takes it (`1h`, `30m`, `90` seconds), at
/// least one second.
fn every(text: &str) -> Result<Duration, ArgsError> {
    let ms = parse_duration_ms(text)
        .map_err(|e| invalid(&format!("--every: {e} '{text}' (e.g. 1h, 30m, 90s)")))?;
    if ms < 1000 {
        return Err(invalid(&format!(
            "--every must be at least 1s, got '{text}'"
        )));
    }
    Ok(Duration::from_millis(ms.unsigned_abs()))
}

/// The SQL of one round.
pub fn round_sql(options: &MaintainOptions, args: &Args) -> String {
    if let Some(query) = &args.query {
        return query.clone();
    }
    if !options.tables.is_empty() {
        let statements: Vec<String> = options
            .tables
            .iter()
            .map(|t| format!("SYSTEM MAINTAIN TABLE {t}"))
            .collect();
        return statements.join(";\n");
    }
    let database = args.database.as_deref().unwrap_or("default");
    let quoted = database.replace('\\', "\\\\").replace('`', "\\`");
    format!("SYSTEM MAINTAIN DATABASE `{quoted}`")
}

/// `icetrim maintain …`: runs and returns the exit status.
pub fn main(command_line: Vec<OsString>) -> u8 {
    let mut out = Output::new();
    let (options, args) = match parse(command_line) {
        Ok(parsed) => parsed,
        Err(ArgsError::Print(help)) => help.exit(),
        Err(ArgsError::Invalid(error)) => {
            out.error(&error);
            return super::exit_code(&error);
        }
    };
    match run(&options, &args, &mut out) {
        Ok(code) => code,
        Err(error) => {
            out.error(&error);
            super::exit_code(&error)
        }
    }
}

fn run(options: &MaintainOptions, args: &Args, out: &mut Output) -> Result<u8, Error> {
    let format = args
        .format
        .as_deref()
        .map(OutputFormat::from_name)
        .transpose()?;
    let format = format.unwrap_or(if std::io::stdout().is_terminal() {
        OutputFormat::PrettyCompact
    } else {
        OutputFormat::TabSeparated
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(super::blocking_threads())
        .build()
        .map_err(|e| Error::logical(format!("Cannot start the async runtime: {e}")))?;
    let engine = super::engine_of(args)?;
    let mut session = engine.session();
    session.set_early_warnings(Some(Arc::new(|warning: &str| {
        eprintln!("Warning: {warning}");
    })));
    for (name, value) in &args.params {
        session.set_param(name, value);
    }
    if let Some(database) = &args.database {
        super::use_database(&runtime, &mut session, database)?;
    }
    let stop = CancelToken::new();
    session.set_maintain_stop(Some(stop.clone()));
    let stopped_by = Arc::new(AtomicBool::new(false));
    runtime.spawn(watch_signals(stop.clone(), stopped_by.clone()));
    let sql = round_sql(options, args);
    let script_options = ScriptOptions {
        format,
        time: args.time,
        ignore_error: true,
        echo: args.echo,
        located: None,
    };
    let mut round = 0u64;
    loop {
        round += 1;
        let started = Instant::now();
        if options.every.is_some() {
            let at = chrono::Utc::now().format("%Y-%m-%d %H:%M:%S UTC");
            out.note(&format!("icetrim maintain: round {round} at {at}"));
        }
        let code = match script::run(&runtime, &mut session, &sql, script_options, out) {
            Ok(code) => code,
            // A closed standard output (`| head`) ends the program quietly, as in `icetrim`.
            Err(OutputError::BrokenPipe) => return Ok(0),
            Err(OutputError::Io(e)) => {
                return Err(Error::logical(format!("Cannot write output: {e}")));
            }
        };
        if stop.is_cancelled() {
            out.note("icetrim maintain: stopped between procedures as asked; every commit stands");
            return Ok(0);
        }
        let Some(every) = options.every else {
            return Ok(code);
        };
        let next = started + every;
        let wait = next.saturating_duration_since(Instant::now());
        let stopped = runtime.block_on(async {
            tokio::select! {
                _ = tokio::time::sleep(wait) => false,
                _ = stop.cancelled() => true,
            }
        });
        if stopped {
            out.note("icetrim maintain: stopped between rounds as asked");
            return Ok(0);
        }
    }
}

/// The first SIGTERM or SIGINT cancels `stop` (the run ends before its next procedure); a
/// second ends the process at once with 128 + the signal number.
async fn watch_signals(stop: CancelToken, stopped: Arc<AtomicBool>) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return;
    };
    loop {
        let number = tokio::select! {
            _ = term.recv() => 15,
            _ = int.recv() => 2,
        };
        if stopped.swap(true, Ordering::SeqCst) {
            std::process::exit(128 + number);
        }
        eprintln!(
            "icetrim maintain: stopping after the running procedure (a second signal stops at once)"
        );
        stop.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(items: &[&str]) -> Vec<OsString> {
        items.iter().map(OsString::from).collect()
    }

    #[test]
    fn maintain_options_are_taken_out_and_the_rest_is_icetrims() {
        let command = line(&[
            "icetrim",
            "maintain",
            "--every",
            "1h",
            "--path",
            "/p",
            "--table",
            "lake.a",
            "--table=b",
            "-f",
            "JSON",
            "--iceberg_maintain_lease_seconds=30",
        ]);
        assert!(is_maintain(&command));
        let (options, args) = parse(command).unwrap();
        assert_eq!(options.every, Some(Duration::from_secs(3600)));
        assert_eq!(options.tables, ["lake.a", "b"]);
        assert_eq!(args.path.as_deref(), Some(std::path::Path::new("/p")));
        assert_eq!(args.format.as_deref(), Some("JSON"));
        assert_eq!(
            args.settings,
            [("iceberg_maintain_lease_seconds".into(), "30".into())]
        );
        assert_eq!(
            round_sql(&options, &args),
            "SYSTEM MAINTAIN TABLE lake.a;\nSYSTEM MAINTAIN TABLE b"
        );
    }

    #[test]
    fn one_round_of_the_current_database_without_options() {
        let (options, args) = parse(line(&["icetrim", "maintain", "-d", "la`ke"])).unwrap();
        assert_eq!(options.every, None);
        assert_eq!(
            round_sql(&options, &args),
            "SYSTEM MAINTAIN DATABASE `la\\`ke`"
        );
        let (options, args) = parse(line(&["icetrim", "maintain", "-q", "SELECT 1"])).unwrap();
        assert_eq!(round_sql(&options, &args), "SELECT 1");
        assert!(!is_maintain(&line(&["icetrim", "-q", "maintain"])));
    }

    #[test]
    fn mistakes_are_bad_arguments() {
        let error = |items: &[&str]| match parse(line(items)) {
            Err(ArgsError::Invalid(e)) => e.to_string(),
            other => panic!("{items:?}: {other:?}"),
        };
        assert!(error(&["icetrim", "maintain", "--every", "0s"]).contains("at least 1s"));
        assert!(error(&["icetrim", "maintain", "--every", "soon"]).contains("invalid duration"));
        assert!(error(&["icetrim", "maintain", "--every"]).contains("requires a value"));
        assert!(error(&["icetrim", "maintain", "--every=1h", "--every=2h"]).contains("multiple"));
        assert!(error(&["icetrim", "maintain", "--demo"]).contains("not --queries-file"));
        assert!(error(&["icetrim", "maintain", "-q", "x", "--table", "t"]).contains("not both"));
        assert!(error(&["icetrim", "maintain", "--evry", "1h"]).contains("UNRECOGNIZED"));
    }
}
