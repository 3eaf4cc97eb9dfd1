//! `icetrim-generate`: write a deterministic Iceberg table with a planned history and print a JSON
//! summary of what was written (see `icetrim::generate`).
//!
//! ```text
//! icetrim-generate --location DIR --format-version 2 --snapshots N --files-per-snapshot K --seed S
//!   [--mix append=70,merge=10,delete=10,overwrite=5,replace=5] [--branches B] [--tags T]
//!   [--staged W] [--statistics X] [--orphans O] [--no-data-files] [--span 30d]
//!   [--now '2026-01-01 00:00:00'] [--codec deflate|null|snappy|zstandard]
//!   [--max-manifests M] [--target-manifest-entries E] [--merge-fan-in F]
//! ```
//!
//! A closed standard output (`icetrim-generate ... | head -c 10`) ends the program quietly with
//! status 0, as `icetrim` does: the table is written by then.

use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;

use icetrim::error::{Error, Result};
use icetrim::generate::{GenerateOptions, Mix, generate, io_for};
use icetrim::iceberg::avro::Codec;
use icetrim::iceberg::spec::FormatVersion;

fn usage() -> &'static str {
    "usage: icetrim-generate --location DIR --format-version 1|2|3 --snapshots N \
     --files-per-snapshot K --seed S [--mix append=70,merge=10,delete=10,overwrite=5,replace=5] \
     [--branches B] [--tags T] [--staged W] [--statistics X] [--orphans O] [--no-data-files] \
     [--span 30d] [--now '2026-01-01 00:00:00'] [--codec deflate] [--max-manifests 32] \
     [--target-manifest-entries 50000] [--merge-fan-in 4]"
}

fn number<T: std::str::FromStr>(flag: &str, value: &str) -> Result<T> {
    value
        .parse()
        .map_err(|_| Error::bad_arguments(format!("{flag}: '{value}' is not a valid number")))
}

fn parse_now(text: &str) -> Result<i64> {
    let parsed =
        chrono::NaiveDateTime::parse_from_str(text.trim(), "%Y-%m-%d %H:%M:%S").map_err(|e| {
            Error::bad_arguments(format!(
                "--now: '{text}' is not 'YYYY-MM-DD hh:mm:ss' ({e})"
            ))
        })?;
    Ok(parsed.and_utc().timestamp_millis())
}

fn parse_args(args: &[String]) -> Result<GenerateOptions> {
    let mut opts = GenerateOptions::new(
        "",
        FormatVersion::V2,
        0,
        0,
        0,
        chrono::Utc::now().timestamp_millis(),
    );
    let mut location = None;
    let mut i = 0;
    while i < args.len() {
        let flag = args[i].as_str();
        if flag == "--no-data-files" {
            opts.write_data_files = false;
            i += 1;
            continue;
        }
        let value = args
            .get(i + 1)
            .ok_or_else(|| Error::bad_arguments(format!("{flag} needs a value\n{}", usage())))?;
        match flag {
            "--location" => location = Some(value.trim_end_matches('/').to_string()),
            "--format-version" => {
                opts.format_version = FormatVersion::from_number(number(flag, value)?)
                    .ok_or_else(|| Error::bad_arguments("--format-version must be 1, 2 or 3"))?;
            }
            "--snapshots" => opts.snapshots = number(flag, value)?,
            "--files-per-snapshot" => opts.files_per_snapshot = number(flag, value)?,
            "--seed" => opts.seed = number(flag, value)?,
            "--mix" => opts.mix = Mix::parse(value)?,
            "--branches" => opts.branches = number(flag, value)?,
            "--tags" => opts.tags = number(flag, value)?,
            "--staged" => opts.staged = number(flag, value)?,
            "--statistics" => opts.statistics = number(flag, value)?,
            "--orphans" => opts.orphans = number(flag, value)?,
            "--max-manifests" => opts.max_manifests = number(flag, value)?,
            "--merge-fan-in" => opts.merge_fan_in = number(flag, value)?,
            "--target-manifest-entries" => opts.target_manifest_entries = number(flag, value)?,
            "--span" => {
                let span = humantime::parse_duration(value)
                    .map_err(|e| Error::bad_arguments(format!("--span: {e}")))?;
                opts.span_ms = i64::try_from(span.as_millis())
                    .map_err(|_| Error::bad_arguments("--span is too long"))?;
            }
            "--now" => opts.now_ms = parse_now(value)?,
            "--codec" => {
                opts.codec = Codec::from_name(Some(value)).map_err(Error::bad_arguments)?;
            }
            other => {
                return Err(Error::bad_arguments(format!(
                    "unknown argument '{other}'\n{}",
                    usage()
                )));
            }
        }
        i += 2;
    }
    opts.location = location
        .ok_or_else(|| Error::bad_arguments(format!("--location is required\n{}", usage())))?;
    Ok(opts)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opts = match parse_args(&args) {
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
