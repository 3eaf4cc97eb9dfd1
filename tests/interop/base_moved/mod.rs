//! A property test of "the base moved between plan and commit", over random histories, on path,
//! REST and Glue tables.
//!
//! Each history is a generated v2 table of real Parquet files (appends, merge appends,
//! merge-on-read position deletes, copy-on-write deletes, overwrites, sometimes a branch, a tag, a
//! staged snapshot, two partitions; often a position delete on main's head). icetrim runs one
//! statement on it (compaction, rewrite_manifests, rollback_to_snapshot / _timestamp,
//! set_current_snapshot, fast_forward, cherrypick_snapshot, REPLACE BRANCH) and, through the
//! before-commit hook, exactly once between the statement's plan and its commit, another writer
//! commits (a rollback of main, main set to another snapshot, a branch moved, a position delete,
//! an append, an upgrade to format v3; not on REST: the test catalog is pyiceberg 0.12, which
//! cannot write v3 metadata). Then every invariant of [`invariants`] is checked, whether the
//! statement succeeded or failed. The writer commits as icetrim does (path tables through
//! `metadata/`, catalog tables through the catalog); Glue commits go through
//! `tests/py/glue_proxy.py`, since moto ignores `UpdateTable`'s `VersionId`.
//!
//! Layout: [`cases`] draws a history's kinds from its seed, [`setup`] builds what the statement
//! needs and picks the arguments, [`writer`] is the other writer, [`runner`] runs one history,
//! [`invariants`] checks it; [`backend`] places the table, [`parquet_files`] writes the writer's
//! files.
//!
//! `ICETRIM_BASE_MOVED_CASES` histories per backend (default 50: every (statement, writer) pair at
//! least once); `ICETRIM_BASE_MOVED_SEED` fixes the first seed (default: drawn and printed). A
//! failing history is reported with its seed and pair; `ICETRIM_BASE_MOVED_SEED=<seed>
//! ICETRIM_BASE_MOVED_CASES=1` replays it. Every backend prints
//! `base_moved[<backend>]: N histories: P passed, F failed` (`scripts/base-moved.sh` sums them).
//! The test fails when any history violates an invariant, or when the writer ran in fewer than
//! half of the histories (the race would not be tested).

mod backend;
mod cases;
mod invariants;
mod parquet_files;
mod runner;
mod setup;
mod writer;

use backend::Shared;
use cases::{Backend, Case};
use runner::{Report, run_case};

use crate::support::pyserver::PyServer;

fn env_number(name: &str) -> Option<u64> {
    let text = std::env::var(name).ok()?;
    Some(
        text.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={text} is not a number")),
    )
}

/// The first seed of every backend's run: drawn from the clock once per test binary (small
/// enough to type), unless `ICETRIM_BASE_MOVED_SEED` gives it.
fn first_seed() -> u64 {
    static FIRST: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *FIRST.get_or_init(|| {
        env_number("ICETRIM_BASE_MOVED_SEED").unwrap_or_else(|| {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            u64::from(nanos % 1_000_000_000)
        })
    })
}

async fn run_backend(backend: Backend) {
    let cases = env_number("ICETRIM_BASE_MOVED_CASES").unwrap_or(50);
    let first = first_seed();
    let name = backend.name();
    eprintln!("base_moved[{name}]: {cases} histories from seed {first}");
    let verbose = std::env::var_os("ICETRIM_BASE_MOVED_VERBOSE").is_some();
    let shared = Shared::new(backend).await;
    let mut py = PyServer::start();
    let mut reports: Vec<Report> = Vec::new();
    for seed in first..first + cases {
        let report = run_case(Case::new(seed, backend), &shared, &mut py).await;
        if !report.violations.is_empty() || verbose {
            eprintln!("{}", describe(name, &report));
        }
        reports.push(report);
    }
    let failed: Vec<&Report> = reports
        .iter()
        .filter(|r| !r.violations.is_empty())
        .collect();
    let fired = reports.iter().filter(|r| r.fired).count();
    let seconds = |i: usize| -> f64 { reports.iter().map(|r| r.timings[i].as_secs_f64()).sum() };
    println!(
        "base_moved[{name}]: {cases} histories: {} passed, {} failed ({fired} with the other \
         writer between plan and commit; {:.0} s building, {:.0} s in statements, {:.0} s \
         checking)",
        reports.len() - failed.len(),
        failed.len(),
        seconds(0),
        seconds(1),
        seconds(2)
    );
    let text: Vec<String> = failed.iter().map(|r| describe(name, r)).collect();
    assert!(
        failed.is_empty(),
        "{} of {cases} histories on {name} broke an invariant:\n{}",
        failed.len(),
        text.join("\n")
    );
    assert!(
        fired * 2 >= reports.len(),
        "the other writer ran in only {fired} of {cases} histories on {name}"
    );
}

fn describe(backend: &str, r: &Report) -> String {
    format!(
        "[{backend}] seed {} ({}): {}\n    {}",
        r.seed,
        r.pair,
        r.detail,
        r.violations.join("\n    ")
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn base_moved_on_path_tables() {
    run_backend(Backend::Path).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn base_moved_on_rest_tables() {
    run_backend(Backend::Rest).await;
}

#[cfg(feature = "glue")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn base_moved_on_glue_tables() {
    run_backend(Backend::Glue).await;
}
