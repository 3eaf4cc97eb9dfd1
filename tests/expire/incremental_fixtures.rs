//! Both expiry cleanups on every fixture table pyiceberg builds (`scripts/fixtures`): for each
//! table and several policies, the plan with the cleanup `expire_snapshots` chooses and the plan
//! with the full keep set expire the same snapshots, remove the same refs and delete the same
//! files, each with its category and size. The plain linear tables must take the incremental
//! path (else this compares the full keep set with itself).

use std::collections::BTreeMap;

use icetrim::Settings;
use icetrim::internals::iceberg::locate::{MetadataSettings, locate};
use icetrim::internals::io::FileIO;
use icetrim::internals::maintain::expire::incremental::CleanupRan;
use icetrim::internals::maintain::expire::keepset::FileDecision;
use icetrim::internals::maintain::expire::{CleanupMode, ExpiryPlan, plan_expiry, plan_files_in};
use icetrim::internals::maintain::target::MaintenanceTarget;
use icetrim::internals::plan::ExpireOptions;

use crate::support::fixtures::{make_fixture, now_ms};

/// Every pyiceberg scenario of `scripts/fixtures/make_table.py` that expiry can plan on.
const SCENARIOS: &[&str] = &[
    "py_v2_linear",
    "py_v1_linear",
    "py_v2_deletes",
    "py_v2_branches_tags",
    "py_v2_properties",
    "py_v2_staged",
    "py_v2_many",
    "py_v2_partitioned",
    "py_v2_statistics",
    "py_v2_for_clickhouse",
    "py_v2_int_partitioned",
    "py_v2_aggressive",
    "py_v2_recent",
    "py_v2_ref_ages",
    "py_v2_shared_list",
    "py_v2_statistics_shared",
    "py_v2_readd",
    "py_v2_compacted",
    "py_v2_delete_files",
    "py_v2_cherry_pick",
    "py_v2_empty",
    "py_v2_metadata_log",
    "py_v2_refs_wap",
    "py_v2_refs_specs",
];

/// Tables whose history is one line on main (the incremental path must run on them).
const LINEAR: &[&str] = &[
    "py_v2_linear",
    "py_v2_deletes",
    "py_v2_many",
    "py_v2_readd",
    "py_v2_compacted",
];

fn policies() -> Vec<ExpireOptions> {
    let day = 86_400_000;
    let mut out = Vec::new();
    for retain_last in [1, 2, 4] {
        out.push(ExpireOptions {
            retain_last: Some(retain_last),
            retention_period_ms: Some(0),
            ..Default::default()
        });
    }
    for days in [1, 3, 7] {
        out.push(ExpireOptions {
            retention_period_ms: Some(days * day),
            ..Default::default()
        });
    }
    out.push(ExpireOptions::default());
    out
}

fn named(plan: &ExpiryPlan) -> BTreeMap<String, Vec<(String, Option<i64>)>> {
    FileDecision::DELETION_ORDER
        .iter()
        .map(|c| {
            let mut files: Vec<(String, Option<i64>)> = plan
                .delete
                .files(*c)
                .iter()
                .map(|f| (plan.uri(f.path).unwrap_or("?").to_string(), f.size))
                .collect();
            files.sort();
            (format!("{c:?}"), files)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_cleanups_delete_the_same_files_on_every_fixture() {
    let now = now_ms();
    let mut summary = Vec::new();
    for scenario in SCENARIOS {
        let fixture = make_fixture(scenario, now, false);
        let location = fixture.table_dir().to_string_lossy().into_owned();
        let io = FileIO::local();
        let located = locate(&io, &location, &MetadataSettings::default())
            .await
            .unwrap_or_else(|e| panic!("{scenario}: {e}"));
        let target = MaintenanceTarget {
            source: Default::default(),
            io,
            location: location.clone(),
            metadata_settings: MetadataSettings::default(),
            table_name: "default.t".into(),
            settings: Settings::new(),
            now_ms: now,
            progress: Default::default(),
            before_commit: None,
        };
        let (mut incremental, mut deleting) = (0, 0);
        for options in policies() {
            let auto = match plan_expiry(&target, &located.metadata, &options).await {
                Ok(plan) => plan,
                // A table expiry refuses (gc.enabled, a file outside the location) refuses on
                // both paths: the full plan below would fail the same way.
                Err(e) => {
                    summary.push(format!("{scenario}: refused ({e})"));
                    continue;
                }
            };
            let full = plan_files_in(
                &target,
                &located.metadata,
                auto.decision.clone(),
                CleanupMode::Full,
            )
            .await
            .unwrap_or_else(|e| panic!("{scenario} {options:?}: full plan: {e}"));
            let context = format!("{scenario} {options:?}: {:?}", auto.cleanup);
            assert_eq!(auto.decision, full.decision, "{context}");
            assert_eq!(named(&auto), named(&full), "{context}");
            assert_eq!(auto.delete.counts(), full.delete.counts(), "{context}");
            if let Some(CleanupRan::Incremental(_)) = auto.cleanup {
                incremental += 1;
                deleting += usize::from(!auto.delete.data_files.is_empty());
            }
        }
        if LINEAR.contains(scenario) {
            assert!(
                incremental > 0,
                "{scenario}: the incremental path never ran"
            );
        }
        summary.push(format!(
            "{scenario}: incremental {incremental} (deleting data files {deleting}) of {}",
            policies().len()
        ));
    }
    eprintln!("{}", summary.join("\n"));
}

/// EXPLAIN's `cleanup` row names the path and why; a dry run counts the same files on both
/// paths, and `iceberg_expire_incremental_cleanup = 0` forces the full keep set.
#[tokio::test]
async fn explain_names_the_cleanup_and_both_count_the_same() {
    use crate::support::expire::{NOW, counts, dry, expire_with, policy};
    use icetrim::format::Value as Cell;
    use icetrim::internals::sql::ast::Literal;

    let fx = make_fixture("py_v2_deletes", NOW, false);
    let dir = fx.table_dir();
    let mut full = Settings::new();
    full.set(
        "iceberg_expire_incremental_cleanup",
        &Literal::Number("0".into()),
    )
    .expect("a Bool setting");
    let text = |c: &Cell| match c {
        Cell::Str(s) => s.clone(),
        other => format!("{other:?}"),
    };
    let mut dry_counts = Vec::new();
    for (settings, path, why) in [
        (
            Settings::new(),
            "incremental",
            "main only, one line of history",
        ),
        (full, "full", "iceberg_expire_incremental_cleanup = 0"),
    ] {
        let opts = policy(Some(1), Some(0));
        let explain = expire_with(&dir, NOW, opts.clone(), true, None, &settings)
            .await
            .expect("explain");
        let rows: Vec<Vec<String>> = explain
            .rows
            .iter()
            .map(|r| r.iter().map(text).collect())
            .collect();
        let cleanup: Vec<&Vec<String>> = rows.iter().filter(|r| r[0] == "cleanup").collect();
        assert_eq!(cleanup.len(), 1, "{rows:?}");
        assert_eq!(cleanup[0][1], path, "{rows:?}");
        assert!(cleanup[0][3].contains(why), "{rows:?}");
        // After the totals, before any warning.
        let at = rows.iter().position(|r| r[0] == "cleanup").unwrap_or(0);
        assert_eq!(rows[at - 1][0], "total", "{rows:?}");
        let dry_run = expire_with(&dir, NOW, dry(opts), false, None, &settings)
            .await
            .expect("dry run");
        dry_counts.push(counts(&dry_run));
    }
    assert_eq!(dry_counts[0], dry_counts[1]);
    assert!(
        dry_counts[0][0] > 0,
        "py_v2_deletes deletes data files: {dry_counts:?}"
    );
}
