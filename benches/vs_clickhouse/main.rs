//! icetrim against ClickHouse (chdb 4.4) on the same generated tables, in one run.
//!
//! ```text
//! scripts/bench.sh [--quick] [--only 1,2,3,4,5,6,7,8] [--large-orphans] [--dir DIR] [--keep]
//!                  [--ch-timeout SECONDS] [--fleet-sizes 50,500]
//! ```
//!
//! Every table is built by icetrim's generator (`icetrim-generate`), twice with the same seed at two
//! locations (metadata paths are absolute), so icetrim and ClickHouse each work on their own
//! identical copy. icetrim runs as a child process (a script on stdin: attach, one statement);
//! ClickHouse runs in Python with chdb, the statement alone timed inside the session. Peak memory
//! is each child's own `ru_maxrss` (`wait4`). Scenarios (sizes with `--quick` in brackets):
//! 1. expire on 1,000 [200] fast-append snapshots whose manifest lists grow to 1,000 entries; plus
//!    the floor: the time just to read the files the expiry must read;
//! 2. expire on a 10,000 [1,000]-snapshot mixed history (appends, merges, deletes, overwrites,
//!    compactions, branches, tags); ClickHouse is stopped after `--ch-timeout` (900 s) and
//!    reported as a lower bound;
//! 3. expire on 100,000 [10,000] mixed snapshots, 1,000,000 [100,000] data files (not written:
//!    only metadata), icetrim alone: dry run and real run, time and peak memory; and every row
//!    of its `system.iceberg_all_files` streamed to TSV (rows a second, peak memory);
//! 4. remove_orphan_files on about 100,000 [10,000] files, 10% orphans (`--large-orphans`: also
//!    about 1,000,000 files);
//! 5. expire on the S3 emulator (moto; `scripts/emulators.sh start` and source
//!    `target/emulators.env` first, else skipped) at two history sizes: requests by kind, and
//!    ClickHouse's for the same statement on its own copy, through a counting proxy;
//! 6. and 7. icetrim alone over simulated object-store latency (`latency`): the expiry of
//!    scenario 2's table and the orphan scan of scenario 4's, each against its latency floor;
//! 8. a catalog's tables (`fleet`): `SYSTEM MAINTAIN DATABASE` over 50 and 500 [10, 50] tables
//!    of the test REST catalog over the same latency, against one statement at a time (needs
//!    the emulators, as 5 does); `--fleet-sizes` picks other sizes (`--fleet-sizes 500`).
//!
//! Both tools get the same SQL text; the result rows are compared and a difference is printed.

mod fleet;
mod inproc;
mod latency;
mod measure;
mod report;
mod scenarios;
mod tools;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Command-line options.
pub struct Args {
    pub quick: bool,
    pub only: Option<Vec<u32>>,
    pub large_orphans: bool,
    pub dir: PathBuf,
    pub keep: bool,
    pub ch_timeout: Duration,
    /// Scenario 8's table counts, when not the default ones.
    pub fleet_sizes: Option<Vec<usize>>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        quick: false,
        only: None,
        large_orphans: false,
        dir: std::env::temp_dir().join("icetrim-bench"),
        keep: false,
        ch_timeout: Duration::from_secs(900),
        fleet_sizes: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--quick" => args.quick = true,
            "--large-orphans" => args.large_orphans = true,
            "--keep" => args.keep = true,
            // `cargo bench` passes this to every bench target.
            "--bench" => {}
            "--dir" => args.dir = PathBuf::from(value()?),
            "--ch-timeout" => {
                let secs: u64 = value()?.parse().map_err(|e| format!("--ch-timeout: {e}"))?;
                args.ch_timeout = Duration::from_secs(secs);
            }
            "--only" => args.only = Some(list("--only", &value()?)?),
            "--fleet-sizes" => args.fleet_sizes = Some(list("--fleet-sizes", &value()?)?),
            other => return Err(format!("unknown argument '{other}'")),
        }
    }
    Ok(args)
}

/// A comma-separated list of numbers, the value of `flag`.
fn list<T: std::str::FromStr>(flag: &str, text: &str) -> Result<Vec<T>, String>
where
    T::Err: std::fmt::Display,
{
    text.split(',')
        .map(|s| s.trim().parse::<T>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{flag} {text}: {e}"))
}

fn main() -> ExitCode {
    // A child of the benchmark measuring a floor (see `inproc::floor_in_child`).
    if let Some(code) = inproc::floor_child_main() {
        return code;
    }
    // `cargo bench` passes `--bench`; `cargo test --all-targets` builds and runs bench targets
    // without it (whatever `test = false` says). The benchmark takes tens of minutes: only run it
    // when asked for.
    if !std::env::args().any(|a| a == "--bench") {
        println!("vs_clickhouse: built; run it with scripts/bench.sh (cargo bench)");
        return ExitCode::SUCCESS;
    }
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!(
                "{e}\nusage: scripts/bench.sh [--quick] [--only 1,2,3,4,5,6,7,8] [--large-orphans] [--dir DIR] [--keep] [--ch-timeout SECONDS] [--fleet-sizes 50,500]"
            );
            return ExitCode::from(2);
        }
    };
    match scenarios::run_all(&args) {
        Ok(report) => {
            println!("\n{}", report.markdown());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("benchmark failed: {e}");
            ExitCode::FAILURE
        }
    }
}
