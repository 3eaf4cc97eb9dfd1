//! `icetrim-generate`: write a deterministic Iceberg table with a planned history and print a JSON
//! summary of what was written (see `icetrim::internals::generate`).
//!
//! ```text
//! icetrim-generate --location DIR --format-version 2 --snapshots N --files-per-snapshot K --seed S
//!   [--mix append=70,merge=10,delete=10,overwrite=5,replace=5] [--branches B] [--tags T]
//!   [--staged W] [--statistics X] [--orphans O] [--no-data-files] [--span 30d]
//!   [--now '2026-01-01 00:00:00'] [--codec deflate|null|snappy|zstandard]
//!   [--max-manifests M] [--target-manifest-entries E] [--merge-fan-in F]
//! ```
//!
//! The flags are parsed by clap (`--help` lists them with their defaults); a flag given twice
//! takes its last value. `--location`, `--snapshots` and `--files-per-snapshot` are required (the
//! generator refuses zero snapshots or files). A command-line mistake is clap's message and
//! status 2.
//!
//! A closed standard output (`icetrim-generate ... | head -c 10`) ends the program quietly with
//! status 0, as `icetrim` does: the table is written by then.

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use icetrim::internals::generate::{GenerateOptions, Mix, generate, io_for};
use icetrim::internals::iceberg::avro::Codec;
use icetrim::internals::iceberg::spec::FormatVersion;

/// Write a deterministic Iceberg table with a planned history (snapshots, branches, tags, staged
/// commits, statistics, orphans) and print a JSON summary of what was written.
#[derive(Debug, Parser)]
#[command(name = "icetrim-generate", version, args_override_self = true)]
struct Args {
    /// Table root to write: a local path or an object-store URL (a trailing '/' is dropped).
    #[arg(long, value_name = "DIR")]
    location: String,

    /// Iceberg format version of the table: 1, 2 or 3.
    #[arg(long, value_name = "1|2|3", default_value = "2", value_parser = parse_format_version)]
    format_version: FormatVersion,

    /// Snapshots in all (main, branch commits and staged ones).
    #[arg(long, value_name = "N")]
    snapshots: usize,

    /// Files each snapshot adds or changes (at least 1).
    #[arg(long, value_name = "K")]
    files_per_snapshot: usize,

    /// Seed of the random history: the same flags and seed write the same table.
    #[arg(long, value_name = "S", default_value_t = 0)]
    seed: u64,

    /// Weights of the main-branch operations; names left out weigh 0
    /// [default: append=70,merge=10,delete=10,overwrite=5,replace=5].
    #[arg(long, value_name = "WEIGHTS", value_parser = parse_mix)]
    mix: Option<Mix>,

    /// Branches, each forked from main and given two commits.
    #[arg(long, value_name = "B", default_value_t = 0)]
    branches: usize,

    /// Tags, each on a main snapshot.
    #[arg(long, value_name = "T", default_value_t = 0)]
    tags: usize,

    /// Snapshots added on no ref (write-audit-publish).
    #[arg(long, value_name = "W", default_value_t = 0)]
    staged: usize,

    /// Main snapshots with a statistics file (every other one also a partition-statistics file).
    #[arg(long, value_name = "X", default_value_t = 0)]
    statistics: usize,

    /// Orphan files among the table's files, referenced by nothing (on local disk dated a day
    /// before the span).
    #[arg(long, value_name = "O", default_value_t = 0)]
    orphans: usize,

    /// Do not write the data files (the metadata still names them): for large histories.
    #[arg(long)]
    no_data_files: bool,

    /// Write the data files (and position delete files) as real Parquet with rows (`id`, `data`),
    /// so that the table can be compacted.
    #[arg(long)]
    parquet: bool,

    /// Partition the table: N > 0 adds the column `part` (int) and the spec `identity(part)`;
    /// new data files take part = 0 .. N-1 in turn and lie under `data/part=<value>/`
    /// (`--files-per-snapshot 10000 --partitions 100`: 100 partitions of 100 files).
    #[arg(long, value_name = "N", default_value_t = 0)]
    partitions: usize,

    /// Parquet mode: every new data file holds N rows (default: 1 to 1,000, drawn per file).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(i64).range(1..))]
    rows_per_file: Option<i64>,

    /// Parquet mode: the `data` values are padded to B bytes with incompressible characters
    /// (default: `row-<id>`), for large real files.
    #[arg(long, value_name = "B", default_value_t = 0)]
    row_bytes: usize,

    /// Snapshot timestamps are spread over [now - span, now) (humantime: 30d, 12h, 90s).
    #[arg(long, value_name = "DURATION", default_value = "30d", value_parser = parse_span)]
    span: Duration,

    /// The end of the history, UTC, 'YYYY-MM-DD hh:mm:ss' [default: the current time].
    #[arg(long, value_name = "TIME", value_parser = parse_now)]
    now: Option<i64>,

    /// Avro codec of manifests and manifest lists: deflate, null, snappy or zstandard.
    #[arg(long, value_name = "CODEC", default_value = "deflate", value_parser = parse_codec)]
    codec: Codec,

    /// A manifest list longer than this triggers a size-tiered merge of its manifests.
    #[arg(long, value_name = "M", default_value_t = 32)]
    max_manifests: usize,

    /// Manifests this large (entries) are never merged again.
    #[arg(long, value_name = "E", default_value_t = 50_000)]
    target_manifest_entries: usize,

    /// Manifests of one size tier merged together.
    #[arg(long, value_name = "F", default_value_t = 4)]
    merge_fan_in: usize,
}

impl Args {
    /// The generator's options; `now_ms` stands for the current time when `--now` is not given.
    fn options(&self, now_ms: i64) -> Result<GenerateOptions, String> {
        let mut opts = GenerateOptions::new(
            &self.location,
            self.format_version,
            self.snapshots,
            self.files_per_snapshot,
            self.seed,
            self.now.unwrap_or(now_ms),
        );
        if let Some(mix) = self.mix {
            opts.mix = mix;
        }
        opts.branches = self.branches;
        opts.tags = self.tags;
        opts.staged = self.staged;
        opts.statistics = self.statistics;
        opts.orphans = self.orphans;
        opts.write_data_files = !self.no_data_files;
        opts.parquet_data = self.parquet;
        opts.partitions = self.partitions;
        opts.rows_per_file = self.rows_per_file;
        opts.row_bytes = self.row_bytes;
        opts.span_ms =
            i64::try_from(self.span.as_millis()).map_err(|_| "--span is too long".to_string())?;
        opts.codec = self.codec;
        opts.max_manifests = self.max_manifests;
        opts.target_manifest_entries = self.target_manifest_entries;
        opts.merge_fan_in = self.merge_fan_in;
        Ok(opts)
    }
}

fn parse_format_version(text: &str) -> Result<FormatVersion, String> {
    text.trim()
        .parse()
        .ok()
        .and_then(FormatVersion::from_number)
        .ok_or_else(|| "must be 1, 2 or 3".to_string())
}

fn parse_mix(text: &str) -> Result<Mix, String> {
    Mix::parse(text).map_err(|e| e.message().to_string())
}

fn parse_span(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text).map_err(|e| e.to_string())
}

fn parse_now(text: &str) -> Result<i64, String> {
    let parsed = chrono::NaiveDateTime::parse_from_str(text.trim(), "%Y-%m-%d %H:%M:%S")
        .map_err(|e| format!("not 'YYYY-MM-DD hh:mm:ss' ({e})"))?;
    Ok(parsed.and_utc().timestamp_millis())
}

fn parse_codec(text: &str) -> Result<Codec, String> {
    Codec::from_name(Some(text))
}

fn main() -> ExitCode {
    let args = Args::parse();
    let opts = match args.options(chrono::Utc::now().timestamp_millis()) {
        Ok(opts) => opts,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let started = Instant::now();
    let io = io_for(&opts.location);
    match runtime.block_on(generate(&io, &opts)) {
        Ok(generated) => {
            let mut summary = generated.to_json();
            summary["seconds"] = serde_json::json!(started.elapsed().as_secs_f64());
            let mut out = std::io::stdout().lock();
            match writeln!(out, "{summary}").and_then(|()| out.flush()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("cannot write the summary: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    const REQUIRED: [&str; 6] = [
        "--location",
        "/a",
        "--snapshots",
        "5",
        "--files-per-snapshot",
        "1",
    ];

    fn parse(args: &[&str]) -> Result<Args, clap::Error> {
        Args::try_parse_from(std::iter::once("icetrim-generate").chain(args.iter().copied()))
    }

    #[test]
    fn the_command_is_well_formed() {
        Args::command().debug_assert();
    }

    /// The defaults are the library's: the required flags alone give `GenerateOptions::new`'s
    /// options (format 2, seed 0, zero counts, 30 days, deflate, 32 manifests, fan-in 4, 50,000
    /// entries).
    #[test]
    fn defaults_are_the_library_defaults() {
        let required = ["--snapshots", "5", "--files-per-snapshot", "3"];
        let args = parse(&[&["--location", "/tmp/t/"][..], &required].concat()).expect("parses");
        let got = args.options(1_000).expect("options");
        let want = GenerateOptions::new("/tmp/t", FormatVersion::V2, 5, 3, 0, 1_000);
        assert_eq!(format!("{got:?}"), format!("{want:?}"));
    }

    /// Every flag the benchmarks and tests pass (benches/vs_clickhouse/scenarios.rs,
    /// tests/cli/cli_tty.rs, tests/cli/cli_script.rs) parses to its old meaning.
    #[test]
    fn every_flag_keeps_its_meaning() {
        let args = parse(&[
            "--location",
            "s3://bucket/t",
            "--format-version",
            "3",
            "--seed",
            "7",
            "--span",
            "2d",
            "--now",
            "2026-01-01 00:00:00",
            "--snapshots",
            "100",
            "--files-per-snapshot",
            "10",
            "--mix",
            "append=1",
            "--max-manifests",
            "1000000",
            "--branches",
            "4",
            "--tags",
            "10",
            "--staged",
            "2",
            "--statistics",
            "3",
            "--orphans",
            "5",
            "--no-data-files",
            "--codec",
            "zstandard",
            "--target-manifest-entries",
            "9",
            "--merge-fan-in",
            "2",
        ])
        .expect("parses");
        let o = args.options(0).expect("options");
        assert_eq!(o.location, "s3://bucket/t");
        assert_eq!(o.format_version, FormatVersion::V3);
        assert_eq!((o.seed, o.snapshots, o.files_per_snapshot), (7, 100, 10));
        assert_eq!(o.span_ms, 2 * 86_400_000);
        assert_eq!(o.now_ms, 1_767_225_600_000);
        assert_eq!(o.mix, Mix::parse("append=1").expect("mix"));
        assert_eq!((o.branches, o.tags, o.staged), (4, 10, 2));
        assert_eq!((o.statistics, o.orphans), (3, 5));
        assert!(!o.write_data_files);
        assert_eq!(o.codec, Codec::Zstandard);
        assert_eq!(
            (o.max_manifests, o.target_manifest_entries, o.merge_fan_in),
            (1_000_000, 9, 2)
        );
    }

    #[test]
    fn the_last_of_a_repeated_flag_wins() {
        let args =
            parse(&[&REQUIRED[..], &["--seed", "1", "--seed", "2"]].concat()).expect("parses");
        assert_eq!(args.seed, 2);
    }

    #[test]
    fn bad_values_are_refused() {
        for bad in [
            &["--format-version", "4"][..],
            &["--snapshots", "many"],
            &["--span", "soon"],
            &["--now", "2026-01-01"],
            &["--codec", "lz4"],
            &["--mix", "append=x"],
        ] {
            let args = [&REQUIRED[..], bad].concat();
            let e = parse(&args).expect_err(&format!("{bad:?}"));
            assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation, "{bad:?}");
        }
        for missing in [0, 2, 4] {
            let mut args = REQUIRED.to_vec();
            args.drain(missing..missing + 2);
            let e = parse(&args).expect_err(REQUIRED[missing]);
            assert_eq!(e.kind(), clap::error::ErrorKind::MissingRequiredArgument);
        }
    }
}
