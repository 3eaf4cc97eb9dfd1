//! The command line, parsed by clap, every mistake reported in ClickHouse's form.
//!
//! Besides clap's options: `--param_<name>=<value>` (or `--param_<name> <value>`) sets a query
//! parameter, and `--<setting>=<value>` (or `--<setting> <value>`) a session setting's default, as
//! clickhouse-client takes them. A mistake is a ClickHouse error printed as
//! `Code: N. DB::Exception: … (NAME)` with the program's exit-code rule: an unknown option is
//! `UNRECOGNIZED_ARGUMENTS` (552, "Unrecognized option '--x'", with a hint when an option is
//! close), a positional argument is "Positional options are not supported", any other mistake
//! (a missing value, a repeated option) is `BAD_ARGUMENTS` (36) with clap's description.
//! `--param_x` followed by another option (an argument starting with `-` that is no number) is
//! "Parameter requires value": it never swallows the option. `--help` and `--version` print as
//! usual and exit with 0.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Parser;
use clap::error::{ContextKind, ContextValue, ErrorKind as ClapErrorKind};

use crate::error::{Error, ErrorKind};
use crate::settings::SESSION_SETTINGS;

/// Why the command line was not run.
#[derive(Debug)]
pub enum ArgsError {
    /// `--help` or `--version`: clap prints it (standard output, exit status 0).
    Print(clap::Error),
    /// A mistake, as ClickHouse reports it.
    Invalid(Error),
}

const EXAMPLES: &str = "\
Examples:
  icetrim --demo                            build a demo table and run the maintenance SQL on it
  icetrim                                   interactive shell (on a terminal)
  icetrim < maintenance.sql                 run a script, results as TabSeparated
  icetrim --queries-file a.sql --queries-file b.sql --echo   run files in order, echo statements
  icetrim --path ~/.icetrim -q \"CREATE TABLE t ENGINE = IcebergLocal('/data/t')\"
  icetrim --path ~/.icetrim -q \"ALTER TABLE t EXECUTE expire_snapshots(retention_period = '7d', dry_run = 1)\" -f PrettyCompact
  icetrim --ignore-error < script.sql       go on after errors
  icetrim -d lake -q \"SHOW TABLES\"          start in database lake
  icetrim --param_keep=5 -q \"ALTER TABLE t EXECUTE expire_snapshots(retain_last = {keep:UInt64})\"
  icetrim --max_query_size=1048576 < big.sql  any session setting, as --<name>=<value>
  icetrim maintain --every 1h --path ~/.icetrim -d lake   SYSTEM MAINTAIN DATABASE lake every hour
                                            (without --every: once, for cron; --table NAME, -q SQL)

Exit status: 0 on success; after an error (a command-line mistake too), its ClickHouse code
modulo 256 (1 if that is 0); a procedure whose planned deletes partly failed ends with
CANNOT_UNLINK (202) unless iceberg_error_on_failed_deletions = 0.";

/// A ClickHouse-style SQL procedure engine that keeps Apache Iceberg tables lean.
#[derive(Debug, Clone, Parser)]
#[command(name = "icetrim", version, after_help = EXAMPLES)]
pub struct Args {
    /// Run these statements (separated by `;`) instead of reading standard input.
    #[arg(short, long)]
    pub query: Option<String>,

    /// Run the statements of FILE instead of reading standard input; repeat it (or name several
    /// files) to run files in order.
    #[arg(long = "queries-file", value_name = "FILE", num_args = 1.., conflicts_with = "query")]
    pub queries_files: Vec<PathBuf>,

    /// Start in database NAME (as `USE NAME` would).
    #[arg(short, long, value_name = "NAME")]
    pub database: Option<String>,

    /// Print each statement before its result (scripts, `-q`, `--queries-file`).
    #[arg(long)]
    pub echo: bool,

    /// clickhouse-client's `--multiquery`: accepted, no effect (statements separated by `;`
    /// always run).
    #[arg(short = 'n', long)]
    pub multiquery: bool,

    /// Output format of results without a FORMAT clause (default: PrettyCompact when standard
    /// output is a terminal, TabSeparated otherwise).
    #[arg(short, long, value_name = "NAME")]
    pub format: Option<String>,

    /// Remember registered tables in DIR across runs (default: in memory only).
    #[arg(long, value_name = "DIR")]
    pub path: Option<PathBuf>,

    /// After every SYSTEM MAINTAIN, write the maintenance metrics (Prometheus text) to FILE,
    /// atomically (FILE.tmp renamed over FILE), for node_exporter's textfile collector.
    #[arg(long, value_name = "FILE")]
    pub metrics_file: Option<PathBuf>,

    /// Also append every maintenance log row to FILE as one JSON line (for log shippers).
    #[arg(long, value_name = "FILE")]
    pub maintenance_log_file: Option<PathBuf>,

    /// Run as user NAME (default `default`, which holds every privilege): each statement is
    /// checked against NAME's grants, kept under --path. A name, not a login.
    #[arg(short = 'u', long, value_name = "NAME")]
    pub user: Option<String>,

    /// Print each statement's elapsed time in seconds to standard error.
    #[arg(short, long)]
    pub time: bool,

    /// Go on with the next statement after an error (the exit status is the last error's).
    #[arg(long)]
    pub ignore_error: bool,

    /// Show progress bars on standard error while a procedure runs, when it is a terminal
    /// (default in the interactive shell).
    #[arg(long, overrides_with = "no_progress")]
    pub progress: bool,

    /// Do not show progress bars (default in scripts and with -q).
    #[arg(long, overrides_with = "progress")]
    pub no_progress: bool,

    /// Query parameters from `--param_<name>=<value>` (or `--param_<name> <value>`), for
    /// `{name:Type}` placeholders.
    #[arg(skip)]
    pub params: Vec<(String, String)>,

    /// Session settings from `--<setting>=<value>` (or `--<setting> <value>`), in order.
    #[arg(skip)]
    pub settings: Vec<(String, String)>,

    /// Build a demo table in a temporary folder and run the maintenance SQL on it.
    #[arg(long)]
    pub demo: bool,

    /// History file of the interactive shell (default: ~/.icetrim_history).
    #[arg(long, value_name = "FILE")]
    pub history_file: Option<PathBuf>,
}

impl Args {
    /// Parses a command line whose `--param_<name>` and `--<setting>` arguments (which clap
    /// cannot declare) are taken out first; see the module comment for the errors.
    pub fn parse_with_params<I, T>(command_line: I) -> Result<Args, ArgsError>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString>,
    {
        let mut rest: Vec<OsString> = Vec::new();
        let mut params = Vec::new();
        let mut settings = Vec::new();
        let mut items = command_line.into_iter().map(Into::into).peekable();
        while let Some(item) = items.next() {
            let Some(option) = item.to_str().and_then(|s| s.strip_prefix("--")) else {
                rest.push(item);
                continue;
            };
            let (name, inline) = match option.split_once('=') {
                Some((name, value)) => (name, Some(value.to_string())),
                None => (option, None),
            };
            let (param, setting) = (name.strip_prefix("param_"), is_session_setting(name));
            if param.is_none() && !setting {
                rest.push(item);
                continue;
            }
            if param == Some("") {
                return Err(invalid("Parameter name cannot be empty"));
            }
            // clickhouse-client's rules and texts (ClientBase::parseAndCheckOptions), except
            // that an option after `--param_x` is never taken as its value.
            let value = match inline {
                Some(value) => value,
                None => match items.next_if(|next| !looks_like_option(next)) {
                    Some(value) => value.to_string_lossy().into_owned(),
                    None if param.is_some() => return Err(invalid("Parameter requires value")),
                    None => {
                        return Err(invalid(&format!(
                            "the required argument for option '--{name}' is missing"
                        )));
                    }
                },
            };
            match param {
                Some(param) => params.push((param.to_string(), value)),
                None => settings.push((name.to_string(), value)),
            }
        }
        let mut args = Args::try_parse_from(rest).map_err(clap_error)?;
        args.params = params;
        args.settings = settings;
        Ok(args)
    }

    /// Whether progress is shown (on a terminal): the last of `--progress` / `--no-progress`
    /// decides; without either, on in the interactive shell and off in scripts, as
    /// clickhouse-client does.
    pub fn show_progress(&self, interactive: bool) -> bool {
        if self.no_progress {
            return false;
        }
        self.progress || interactive
    }
}

fn invalid(message: &str) -> ArgsError {
    ArgsError::Invalid(Error::bad_arguments(message))
}

fn is_session_setting(name: &str) -> bool {
    SESSION_SETTINGS.iter().any(|def| def.name == name)
}

/// Whether a command-line argument is an option rather than a value: it starts with `-` and is
/// no number (`-5` and `-1.5` are values).
fn looks_like_option(argument: &OsString) -> bool {
    let text = argument.to_string_lossy();
    match text.strip_prefix('-') {
        Some(rest) => !rest.starts_with(|c: char| c.is_ascii_digit() || c == '.'),
        None => false,
    }
}

/// clap's outcome as [`ArgsError`]: help and version print; mistakes are ClickHouse errors.
fn clap_error(error: clap::Error) -> ArgsError {
    let context = |kind: ContextKind| match error.get(kind) {
        Some(ContextValue::String(value)) => Some(value.clone()),
        _ => None,
    };
    match error.kind() {
        ClapErrorKind::DisplayHelp
        | ClapErrorKind::DisplayVersion
        | ClapErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => ArgsError::Print(error),
        ClapErrorKind::UnknownArgument => {
            let argument = context(ContextKind::InvalidArg).unwrap_or_default();
            if !argument.starts_with('-') {
                return invalid("Positional options are not supported");
            }
            let hint = closest_option(&argument)
                .map(|name| format!(". Maybe you meant ['{name}']"))
                .unwrap_or_default();
            ArgsError::Invalid(Error::new(
                ErrorKind::UnrecognizedArguments,
                format!("Unrecognized option '{argument}'{hint}"),
            ))
        }
        _ => {
            let rendered = error.render().to_string();
            let first = rendered.lines().next().unwrap_or_default();
            invalid(first.strip_prefix("error: ").unwrap_or(first))
        }
    }
}

/// The long option or session setting nearest to `argument` (at most two edits away), as
/// ClickHouse names a hint: without its dashes.
fn closest_option(argument: &str) -> Option<String> {
    use clap::CommandFactory;
    let typed = argument.trim_start_matches('-');
    let typed = typed.split_once('=').map_or(typed, |(name, _)| name);
    let command = Args::command();
    let options = command
        .get_arguments()
        .filter_map(|arg| arg.get_long().map(str::to_string));
    let settings = SESSION_SETTINGS.iter().map(|def| def.name.to_string());
    options
        .chain(settings)
        .chain(["help".to_string(), "version".to_string()])
        .map(|name| (edit_distance(typed, &name), name))
        .filter(|(distance, _)| *distance <= 2)
        .min()
        .map(|(_, name)| name)
}

/// Levenshtein distance (bytes; option names are ASCII).
fn edit_distance(a: &str, b: &str) -> usize {
    let b = b.as_bytes();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, x) in a.bytes().enumerate() {
        let mut current = vec![i + 1];
        for (j, y) in b.iter().enumerate() {
            let substitute = previous[j] + usize::from(x != *y);
            current.push(substitute.min(previous[j + 1] + 1).min(current[j] + 1));
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    #[test]
    fn params_and_query_from_a_command_line() {
        use crate::shell::Args;
        let args = Args::parse_with_params([
            "icetrim",
            "--param_n=5",
            "--param_s",
            "a b",
            "-q",
            "SELECT {n:UInt8}",
        ])
        .unwrap();
        assert_eq!(
            args.params,
            [
                ("n".to_string(), "5".to_string()),
                ("s".to_string(), "a b".to_string())
            ]
        );
        assert_eq!(args.query.as_deref(), Some("SELECT {n:UInt8}"));
    }

    use super::*;

    #[test]
    fn flags_parse() {
        let args = Args::try_parse_from([
            "icetrim",
            "-q",
            "SHOW TABLES",
            "-f",
            "JSON",
            "--path",
            "/tmp/p",
            "--time",
            "--ignore-error",
            "-d",
            "lake",
            "--echo",
        ])
        .unwrap();
        assert_eq!(args.query.as_deref(), Some("SHOW TABLES"));
        assert_eq!(args.format.as_deref(), Some("JSON"));
        assert_eq!(args.database.as_deref(), Some("lake"));
        assert!(args.time && args.ignore_error && args.echo && !args.multiquery);
        assert!(!args.show_progress(false) && args.show_progress(true));
        let args = Args::try_parse_from(["icetrim", "--no-progress", "--progress"]).unwrap();
        assert!(args.show_progress(false));
        let args = Args::try_parse_from(["icetrim", "--progress", "--no-progress"]).unwrap();
        assert!(!args.show_progress(true));
    }

    #[test]
    fn params_are_taken_out_before_clap() {
        let args =
            Args::parse_with_params(["icetrim", "--param_a=x=y", "-n", "--param_b", "2"]).unwrap();
        assert_eq!(
            args.params,
            [("a".into(), "x=y".into()), ("b".into(), "2".into())]
        );
        assert!(args.multiquery && !args.ignore_error, "-n is --multiquery");
        let error = |line: &[&str]| match Args::parse_with_params(line.iter().copied()) {
            Err(ArgsError::Invalid(e)) => (e.kind(), e.message().to_string()),
            other => panic!("{line:?}: {other:?}"),
        };
        let bad = crate::ErrorKind::BadArguments;
        assert_eq!(
            error(&["icetrim", "--param_b"]),
            (bad, "Parameter requires value".into())
        );
        assert_eq!(
            error(&["icetrim", "--param_b", "-q", "SELECT 1"]),
            (bad, "Parameter requires value".into()),
            "an option is never a parameter's value"
        );
        for empty in [
            &["icetrim", "--param_=1"][..],
            &["icetrim", "--param_", "-q", "x"],
        ] {
            assert_eq!(error(empty), (bad, "Parameter name cannot be empty".into()));
        }
        let args =
            Args::parse_with_params(["icetrim", "--param_n", "-5", "--param_f", "-.5"]).unwrap();
        assert_eq!(
            args.params,
            [("n".into(), "-5".into()), ("f".into(), "-.5".into())]
        );
    }

    /// `--queries-file` repeats or takes several files, in order; it cannot go with `-q`.
    #[test]
    fn queries_files_in_order() {
        let args = Args::parse_with_params([
            "icetrim",
            "--queries-file",
            "a.sql",
            "--queries-file=b.sql",
            "--queries-file",
            "c.sql",
            "d.sql",
            "--multiquery",
        ])
        .unwrap();
        let names: Vec<_> = args
            .queries_files
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        assert_eq!(names, ["a.sql", "b.sql", "c.sql", "d.sql"]);
        match Args::parse_with_params(["icetrim", "-q", "SELECT 1", "--queries-file", "a.sql"]) {
            Err(ArgsError::Invalid(e)) => {
                assert_eq!(e.kind(), crate::ErrorKind::BadArguments);
                assert!(e.message().contains("cannot be used with"), "{e}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn settings_are_options_as_in_clickhouse_client() {
        let args = Args::parse_with_params([
            "icetrim",
            "--max_query_size=1000",
            "--max_parser_depth",
            "20",
            "-q",
            "SELECT 1",
        ])
        .unwrap();
        assert_eq!(
            args.settings,
            [
                ("max_query_size".into(), "1000".into()),
                ("max_parser_depth".into(), "20".into())
            ]
        );
        assert_eq!(args.query.as_deref(), Some("SELECT 1"));
        match Args::parse_with_params(["icetrim", "--max_query_size", "--time"]) {
            Err(ArgsError::Invalid(e)) => assert_eq!(
                e.message(),
                "the required argument for option '--max_query_size' is missing"
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn clap_mistakes_are_clickhouse_errors() {
        let error = |line: &[&str]| match Args::parse_with_params(line.iter().copied()) {
            Err(ArgsError::Invalid(e)) => e.to_string(),
            other => panic!("{line:?}: {other:?}"),
        };
        assert_eq!(
            error(&["icetrim", "--nope"]),
            "Code: 552. DB::Exception: Unrecognized option '--nope'. (UNRECOGNIZED_ARGUMENTS)"
        );
        assert_eq!(
            error(&["icetrim", "--qeury", "x"]),
            "Code: 552. DB::Exception: Unrecognized option '--qeury'. Maybe you meant \
             ['query']. (UNRECOGNIZED_ARGUMENTS)"
        );
        assert_eq!(
            error(&["icetrim", "--max_query_sise=1"]),
            "Code: 552. DB::Exception: Unrecognized option '--max_query_sise'. Maybe you meant \
             ['max_query_size']. (UNRECOGNIZED_ARGUMENTS)"
        );
        assert_eq!(
            error(&["icetrim", "stray"]),
            "Code: 36. DB::Exception: Positional options are not supported. (BAD_ARGUMENTS)"
        );
        let missing = error(&["icetrim", "-q"]);
        assert!(
            missing.starts_with("Code: 36. DB::Exception: a value is required for '--query"),
            "{missing}"
        );
        let twice = error(&["icetrim", "-q", "a", "-q", "b"]);
        assert!(twice.contains("cannot be used multiple times"), "{twice}");
        for print in [&["icetrim", "--help"][..], &["icetrim", "-V"]] {
            assert!(matches!(
                Args::parse_with_params(print.iter().copied()),
                Err(ArgsError::Print(_))
            ));
        }
    }
}
