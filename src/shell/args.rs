//! The command line, parsed by clap.

use std::path::PathBuf;

use clap::Parser;

const EXAMPLES: &str = "\
Examples:
  icetrim --demo                            build a demo table and run the maintenance SQL on it
  icetrim                                   interactive shell (on a terminal)
  icetrim < maintenance.sql                 run a script, results as TabSeparated
  icetrim --path ~/.icetrim -q \"CREATE TABLE t ENGINE = IcebergLocal('/data/t')\"
  icetrim --path ~/.icetrim -q \"ALTER TABLE t EXECUTE expire_snapshots(retention_period = '7d', dry_run = 1)\" -f PrettyCompact
  icetrim -n < script.sql                   go on after errors (--ignore-error)

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

    /// Show progress while a procedure runs.
    #[arg(long, overrides_with = "no_progress")]
    pub progress: bool,

    /// Do not show progress.
    #[arg(long, overrides_with = "progress")]
    pub no_progress: bool,

    /// Build a demo table in a temporary folder and run the maintenance SQL on it.
    #[arg(long)]
    pub demo: bool,

    /// History file of the interactive shell (default: ~/.icetrim_history).
    #[arg(long, value_name = "FILE")]
    pub history_file: Option<PathBuf>,
}

impl Args {
    /// Whether progress is shown: `--progress` asks for it, `--no-progress` (the default) not.
    pub fn show_progress(&self) -> bool {
        self.progress && !self.no_progress
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
        assert!(!args.show_progress());
        let args = Args::try_parse_from(["icetrim", "--no-progress", "--progress"]).unwrap();
        assert!(args.show_progress());
        let args = Args::try_parse_from(["icetrim", "--progress", "--no-progress"]).unwrap();
        assert!(!args.show_progress());
    }
}
