//! The command line, parsed by clap.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Parser;

use crate::error::Error;

/// Why the command line was not accepted.
#[derive(Debug)]
pub enum ArgsError {
    /// A flag clap refused (usage, `--help`, `--version` too): clap prints it and exits 2 (0 for
    /// help and version).
    Clap(clap::Error),
    /// A `--param_` argument as clickhouse-client refuses it: a ClickHouse error
    /// (`Code: 36. DB::Exception: Parameter requires value. (BAD_ARGUMENTS)`).
    Param(Error),
}

impl From<clap::Error> for ArgsError {
    fn from(error: clap::Error) -> Self {
        ArgsError::Clap(error)
    }
}

const EXAMPLES: &str = "\
Examples:
  icetrim --demo                            build a demo table and run the maintenance SQL on it
  icetrim                                   interactive shell (on a terminal)
  icetrim < maintenance.sql                 run a script, results as TabSeparated
  icetrim --path ~/.icetrim -q \"CREATE TABLE t ENGINE = IcebergLocal('/data/t')\"
  icetrim --path ~/.icetrim -q \"ALTER TABLE t EXECUTE expire_snapshots(retention_period = '7d', dry_run = 1)\" -f PrettyCompact
  icetrim -n < script.sql                   go on after errors (--ignore-error)
  icetrim --param_keep=5 -q \"ALTER TABLE t EXECUTE expire_snapshots(retain_last = {keep:UInt64})\"

Exit status: 0 on success; after an error, its ClickHouse code modulo 256 (1 if that is 0).";

/// A ClickHouse-style SQL procedure engine that keeps Apache Iceberg tables lean.
#[derive(Debug, Clone, Parser)]
#[command(name = "icetrim", version, after_help = EXAMPLES)]
pub struct Args {
    /// Run these statements (separated by `;`) instead of reading standard input.
    #[arg(short, long)]
    pub query: Option<String>,

    /// Output format of results without a FORMAT clause (default: TabSeparated in scripts,
    /// PrettyCompact in the interactive shell).
    #[arg(short, long, value_name = "NAME")]
    pub format: Option<String>,

    /// Remember registered tables in DIR across runs (default: in memory only).
    #[arg(long, value_name = "DIR")]
    pub path: Option<PathBuf>,

    /// Print each statement's elapsed time in seconds to standard error.
    #[arg(short, long)]
    pub time: bool,

    /// Go on with the next statement after an error.
    #[arg(short = 'n', long)]
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

    /// Build a demo table in a temporary folder and run the maintenance SQL on it.
    #[arg(long)]
    pub demo: bool,

    /// History file of the interactive shell (default: ~/.icetrim_history).
    #[arg(long, value_name = "FILE")]
    pub history_file: Option<PathBuf>,
}

impl Args {
    /// Parses a command line whose `--param_<name>=<value>` / `--param_<name> <value>` arguments
    /// (which clap cannot declare) are taken out first.
    ///
    /// ```
    /// use icetrim::internals::shell::Args;
    /// let args = Args::parse_with_params(["icetrim", "--param_n=5", "--param_s", "a b", "-q", "SELECT {n:UInt8}"]).unwrap();
    /// assert_eq!(args.params, [("n".to_string(), "5".to_string()), ("s".to_string(), "a b".to_string())]);
    /// assert_eq!(args.query.as_deref(), Some("SELECT {n:UInt8}"));
    /// ```
    pub fn parse_with_params<I, T>(command_line: I) -> Result<Args, ArgsError>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString>,
    {
        let mut rest: Vec<OsString> = Vec::new();
        let mut params = Vec::new();
        let mut items = command_line.into_iter().map(Into::into);
        while let Some(item) = items.next() {
            let Some(param) = item.to_str().and_then(|s| s.strip_prefix("--param_")) else {
                rest.push(item);
                continue;
            };
            // clickhouse-client's rules and texts (ClientBase::parseAndCheckOptions).
            let (name, value) = match param.split_once('=') {
                Some((name, value)) => (name.to_string(), value.to_string()),
                None => {
                    let value = items.next().ok_or_else(|| {
                        ArgsError::Param(Error::bad_arguments("Parameter requires value"))
                    })?;
                    (param.to_string(), value.to_string_lossy().into_owned())
                }
            };
            if name.is_empty() {
                return Err(ArgsError::Param(Error::bad_arguments(
                    "Parameter name cannot be empty",
                )));
            }
            params.push((name, value));
        }
        let mut args = Args::try_parse_from(rest)?;
        args.params = params;
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

#[cfg(test)]
mod tests {
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
            "-n",
        ])
        .unwrap();
        assert_eq!(args.query.as_deref(), Some("SHOW TABLES"));
        assert_eq!(args.format.as_deref(), Some("JSON"));
        assert!(args.time && args.ignore_error);
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
        assert!(args.ignore_error);
        let param_error = |line: &[&str]| match Args::parse_with_params(line.iter().copied()) {
            Err(ArgsError::Param(e)) => (e.kind(), e.message().to_string()),
            other => panic!("{line:?}: {other:?}"),
        };
        let bad = crate::ErrorKind::BadArguments;
        assert_eq!(
            param_error(&["icetrim", "--param_b"]),
            (bad, "Parameter requires value".into())
        );
        assert_eq!(
            param_error(&["icetrim", "--param_=1"]),
            (bad, "Parameter name cannot be empty".into())
        );
        assert!(matches!(
            Args::parse_with_params(["icetrim", "--nope"]),
            Err(ArgsError::Clap(_))
        ));
    }
}
