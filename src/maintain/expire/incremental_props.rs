//! Both cleanups on tables the generator writes (real manifests and lists, in memory): random
//! operation mixes (fast and merge appends, deletes, overwrites, compactions), v1 and v2,
//! position deletes, branches, tags, staged snapshots and statistics files, expired by random
//! policies. For each, the plan with the cleanup chosen by [`super::choose_cleanup`] and the plan
//! with the full keep set must expire the same snapshots, remove the same refs and delete the
//! same files (each with its category and size), and plain histories must take the incremental
//! path.
//!
//! `ICETRIM_INCREMENTAL_CASES` sets the number of tables (500 by default, what CI runs);
//! `ICETRIM_INCREMENTAL_SEED` the first seed (`scripts/incremental-check.sh N` runs N).

use std::collections::BTreeMap;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::CleanupRan;
use crate::Settings;
use crate::generate::{GenerateOptions, Mix, generate};
use crate::iceberg::locate::{MetadataSettings, locate};
use crate::iceberg::spec::FormatVersion;
use crate::io::FileIO;
use crate::maintain::expire::keepset::FileDecision;
use crate::maintain::expire::plan::{CleanupMode, ExpiryPlan, plan_expiry, plan_files_in};
use crate::maintain::target::MaintenanceTarget;
use crate::plan::ExpireOptions;

const DAY_MS: i64 = 86_400_000;
const NOW_MS: i64 = 1_780_000_000_000;

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// A random table and a random expiry of it.
fn case(seed: u64) -> (GenerateOptions, ExpireOptions) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let version = if rng.random_bool(0.3) {
        FormatVersion::V1
    } else {
        FormatVersion::V2
    };
    let snapshots = rng.random_range(2..=40);
    let files = rng.random_range(1..=6);
    let mut o = GenerateOptions::new(
        &format!("memory://t{seed}"),
        version,
        snapshots,
        files,
        seed,
        NOW_MS,
    );
    o.write_data_files = false;
    o.mix = Mix {
        append: rng.random_range(1..=10),
        merge: rng.random_range(0..=4),
        delete: rng.random_range(0..=4),
        overwrite: rng.random_range(0..=3),
        replace: rng.random_range(0..=3),
    };
    o.max_manifests = rng.random_range(3..=12);
    o.merge_fan_in = rng.random_range(2..=4);
    o.span_ms = rng.random_range(1..=30) * DAY_MS;
    // Most histories on main alone (the incremental path), the others with refs of all kinds.
    if rng.random_bool(0.35) {
        o.branches = rng.random_range(0..=2);
        o.tags = rng.random_range(0..=3);
        o.staged = rng.random_range(0..=2);
        o.statistics = rng.random_range(0..=3);
        o.snapshots = o
            .snapshots
            .max(o.branches * o.branch_commits + o.staged + 3);
    }
    let mut expire = ExpireOptions::default();
    match rng.random_range(0..4) {
        0 => {
            expire.retain_last = Some(rng.random_range(1..=i32::try_from(snapshots).unwrap_or(1)));
            expire.retention_period_ms = Some(0);
        }
        1 => expire.retention_period_ms = Some(rng.random_range(0..=o.span_ms)),
        2 => expire.expire_before_ms = Some(NOW_MS - rng.random_range(0..=o.span_ms)),
        _ => {
            expire.retain_last = Some(rng.random_range(1..=5));
            expire.retention_period_ms = Some(rng.random_range(0..=o.span_ms));
        }
    }
    (o, expire)
}

/// Each category's files as (uri, size), sorted (`sorted`) or in deletion order.
fn named(plan: &ExpiryPlan, sorted: bool) -> BTreeMap<String, Vec<(String, Option<i64>)>> {
    FileDecision::DELETION_ORDER
        .iter()
        .map(|c| {
            let mut files: Vec<(String, Option<i64>)> = plan
                .delete
                .files(*c)
                .iter()
                .map(|f| (plan.uri(f.path).unwrap_or("?").to_string(), f.size))
                .collect();
            if sorted {
                files.sort();
            }
            (format!("{c:?}"), files)
        })
        .collect()
}

/// Plans `seed`'s expiry both ways and compares; returns the cleanup that ran and whether the
/// history was plain (main alone, no delete files).
async fn compare(seed: u64) -> (Option<CleanupRan>, usize) {
    let (o, options) = case(seed);
    let io = FileIO::memory();
    generate(&io, &o).await.expect("generate");
    let located = locate(&io, &o.location, &MetadataSettings::default())
        .await
        .expect("locate");
    let target = MaintenanceTarget {
        source: Default::default(),
        io,
        location: o.location.clone(),
        metadata_settings: MetadataSettings::default(),
        table_name: "default.t".into(),
        settings: Settings::new(),
        now_ms: NOW_MS,
        progress: Default::default(),
        before_commit: None,
    };
    let metadata = &located.metadata;
    let auto = plan_expiry(&target, metadata, &options)
        .await
        .expect("plan");
    let full = plan_files_in(&target, metadata, auto.decision.clone(), CleanupMode::Full)
        .await
        .expect("full plan");
    let context = format!("seed {seed}: {o:?} {options:?} cleanup {:?}", auto.cleanup);
    assert_eq!(auto.decision.expired, full.decision.expired, "{context}");
    assert_eq!(auto.decision.refs, full.decision.refs, "{context}");
    assert_eq!(named(&auto, true), named(&full, true), "{context}");
    assert_eq!(auto.delete.counts(), full.delete.counts(), "{context}");
    assert_eq!(auto.files.warnings, full.files.warnings, "{context}");
    if matches!(auto.cleanup, Some(CleanupRan::Full(_))) {
        assert_eq!(named(&auto, false), named(&full, false), "{context}");
    }
    (auto.cleanup, auto.delete.data_files.len())
}

#[test]
fn both_cleanups_delete_the_same_files_on_generated_tables() {
    let cases = env_number("ICETRIM_INCREMENTAL_CASES", 500);
    let first = env_number("ICETRIM_INCREMENTAL_SEED", 1);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (mut incremental, mut with_data, mut full) = (0u64, 0u64, BTreeMap::<String, u64>::new());
    for seed in first..first + cases {
        match runtime.block_on(compare(seed)) {
            (Some(CleanupRan::Incremental(_)), data) => {
                incremental += 1;
                with_data += u64::from(data > 0);
            }
            (Some(CleanupRan::Full(reason)), _) => {
                // The reason without its ids and names, to count reasons.
                let head = reason.split(&[':', '(']).next().unwrap_or("");
                let kind: Vec<&str> = head
                    .split(' ')
                    .filter(|w| !w.is_empty() && !w.starts_with(|c: char| c.is_ascii_digit()))
                    .collect();
                *full.entry(kind.join(" ")).or_default() += 1;
            }
            (None, _) => {}
        }
    }
    eprintln!(
        "{cases} generated tables: incremental {incremental} ({with_data} deleting data files), \
         full {full:?}"
    );
    // The comparison means something only if both paths ran, deleting data files too.
    assert!(
        incremental * 4 >= cases,
        "incremental only {incremental} of {cases}"
    );
    assert!(
        with_data * 10 >= cases,
        "data files deleted in {with_data} of {cases}"
    );
    assert!(full.values().sum::<u64>() * 10 >= cases, "full: {full:?}");
}
