//! Every fixture scenario builds, and its facts agree with what pyiceberg and ClickHouse read.
//!
//! Common checks (`build_and_check`): refs and snapshot ids match the oracle, each ref's expected
//! live files equal pyiceberg's `plan_files`, the main row count matches, no referenced file is
//! missing, the history is old (relative to the `now` given) and ordered, and every file's mtime
//! is the fake time of the commit that wrote it. Each test then checks what its scenario is for.

use crate::support::fixtures;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use fixtures::{
    Fixture, clickhouse, clickhouse_script, make_fixture, now_ms, oracle_inspect, sorted_strings,
};
use serde_json::Value;

const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 24 * HOUR_MS;

fn build_and_check(scenario: &str, orphans: bool) -> (Fixture, Value, i64) {
    let now = now_ms();
    let fixture = make_fixture(scenario, now, orphans);
    let oracle = oracle_inspect(&fixture.metadata_path());
    assert!(
        oracle.get("errors").is_none(),
        "{scenario}: oracle errors {}",
        oracle["errors"]
    );
    assert_eq!(
        oracle["missing"],
        Value::Array(vec![]),
        "{scenario}: files missing"
    );
    assert_eq!(
        oracle["rows_main"], fixture.facts["rows_main"],
        "{scenario}: main row count"
    );
    assert_eq!(
        oracle["format_version"], fixture.facts["format_version"],
        "{scenario}"
    );
    check_snapshots(scenario, &fixture, &oracle);
    check_refs_and_live_files(scenario, &fixture, &oracle);
    check_history_is_old(scenario, &oracle, now);
    check_mtimes(scenario, &fixture, now);
    (fixture, oracle, now)
}

fn check_snapshots(scenario: &str, fixture: &Fixture, oracle: &Value) {
    let expected: BTreeMap<i64, i64> = fixture.facts["snapshots"]
        .as_object()
        .expect("snapshots map")
        .iter()
        .map(|(label, id)| {
            let id = id.as_i64().expect("snapshot id");
            (
                id,
                fixture.facts["snapshot_ts"][label]
                    .as_i64()
                    .expect("snapshot ts"),
            )
        })
        .collect();
    let read: BTreeMap<i64, i64> = oracle["snapshots"]
        .as_array()
        .expect("oracle snapshots")
        .iter()
        .map(|s| (s["id"].as_i64().expect("id"), s["ts"].as_i64().expect("ts")))
        .collect();
    assert_eq!(read, expected, "{scenario}: snapshot ids and timestamps");
}

fn check_refs_and_live_files(scenario: &str, fixture: &Fixture, oracle: &Value) {
    let refs = fixture.facts["refs"].as_object().expect("refs");
    let oracle_refs = oracle["refs"].as_object().expect("oracle refs");
    let names: BTreeSet<&String> = refs.keys().collect();
    assert_eq!(names, oracle_refs.keys().collect(), "{scenario}: ref names");
    for (name, fact) in refs {
        let read = &oracle_refs[name];
        assert_eq!(
            read["snapshot"], fact["snapshot_id"],
            "{scenario}: ref {name}"
        );
        assert_eq!(read["type"], fact["type"], "{scenario}: ref {name} type");
        for field in [
            "min_snapshots_to_keep",
            "max_snapshot_age_ms",
            "max_ref_age_ms",
        ] {
            assert_eq!(read[field], fact[field], "{scenario}: ref {name} {field}");
        }
        let planned = &oracle["ref_files"][name];
        assert_eq!(
            sorted_strings(&planned["data"]),
            sorted_strings(&fixture.facts["live_files"][name]),
            "{scenario}: live data files of {name}"
        );
        let expected_deletes = match fixture.facts.get("live_delete_files") {
            Some(deletes) => sorted_strings(&deletes[name]),
            None => Vec::new(),
        };
        assert_eq!(
            sorted_strings(&planned["deletes"]),
            expected_deletes,
            "{scenario}: deletes of {name}"
        );
    }
}

fn timestamps(entries: &Value) -> Vec<i64> {
    let list = entries.as_array().expect("log array");
    list.iter().map(|e| e["ts"].as_i64().expect("ts")).collect()
}

fn check_history_is_old(scenario: &str, oracle: &Value, now: i64) {
    for log in ["snapshot_log", "metadata_log"] {
        let times = timestamps(&oracle[log]);
        assert!(
            times.windows(2).all(|w| w[0] <= w[1]),
            "{scenario}: {log} out of order {times:?}"
        );
        assert!(
            times.iter().all(|&t| t < now - HOUR_MS / 2),
            "{scenario}: {log} not old {times:?}"
        );
    }
    let snapshots = timestamps(&oracle["snapshots"]);
    let newest = snapshots
        .iter()
        .max()
        .copied()
        .expect("at least one snapshot");
    assert!(
        newest < now - HOUR_MS / 2 && newest > now - 2 * DAY_MS,
        "{scenario}: newest snapshot {newest}"
    );
}

fn mtime_ms(path: &Path) -> i64 {
    let modified = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or_else(|e| panic!("mtime of {}: {e}", path.display()));
    let since = modified
        .duration_since(std::time::UNIX_EPOCH)
        .expect("mtime after 1970");
    i64::try_from(since.as_millis()).expect("mtime fits")
}

fn all_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read_dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            all_files(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// Every file is older than `now`; a data or delete file's mtime is its commit's snapshot time.
fn check_mtimes(scenario: &str, fixture: &Fixture, now: i64) {
    let mut files = Vec::new();
    all_files(&fixture.table_dir(), &mut files);
    for path in &files {
        assert!(
            mtime_ms(path) <= now - 30_000,
            "{scenario}: {} has a fresh mtime",
            path.display()
        );
    }
    for kind in ["data_files", "delete_files"] {
        for (label, path) in fixture.facts[kind].as_object().expect("file map") {
            let snapshot = label.split('@').next().expect("label");
            let ts = fixture.facts["snapshot_ts"][snapshot]
                .as_i64()
                .expect("snapshot ts of file");
            let mtime = mtime_ms(Path::new(path.as_str().expect("path")));
            assert!(
                (mtime - ts).abs() < 1_000,
                "{scenario}: {label} mtime {mtime} vs snapshot {ts}"
            );
        }
    }
}

fn operation(oracle: &Value, snapshot_id: i64) -> String {
    let snapshots = oracle["snapshots"].as_array().expect("snapshots");
    let found = snapshots
        .iter()
        .find(|s| s["id"].as_i64() == Some(snapshot_id));
    found
        .and_then(|s| s["operation"].as_str())
        .expect("snapshot operation")
        .to_string()
}

/// Snapshot ids reachable from any ref head through parents.
fn ref_ancestry(oracle: &Value) -> BTreeSet<i64> {
    let parents: BTreeMap<i64, Option<i64>> = oracle["snapshots"]
        .as_array()
        .expect("snapshots")
        .iter()
        .map(|s| (s["id"].as_i64().expect("id"), s["parent"].as_i64()))
        .collect();
    let mut reached = BTreeSet::new();
    for fact in oracle["refs"].as_object().expect("refs").values() {
        let mut next = fact["snapshot"].as_i64();
        while let Some(id) = next.filter(|id| parents.contains_key(id) && reached.insert(*id)) {
            next = parents[&id];
        }
    }
    reached
}

#[test]
fn py_v2_linear_is_six_daily_appends_and_deterministic() {
    let (fixture, oracle, now) = build_and_check("py_v2_linear", false);
    let times = timestamps(&oracle["snapshots"]);
    assert_eq!(times.len(), 6);
    assert!(times.windows(2).all(|w| w[1] - w[0] == DAY_MS), "{times:?}");
    assert_eq!(times[5], now - HOUR_MS);
    let again = make_fixture("py_v2_linear", now, false);
    assert_eq!(
        again.facts["snapshots"], fixture.facts["snapshots"],
        "same seed, same snapshot ids"
    );
    let name = |f: &Fixture| Path::new(f.data_file("a3").file_name().expect("name")).to_path_buf();
    assert_eq!(name(&again), name(&fixture), "same seed, same file names");
}

#[test]
fn py_v1_linear_is_format_version_1() {
    let (_fixture, oracle, _now) = build_and_check("py_v1_linear", false);
    assert_eq!(oracle["format_version"], 1);
    assert_eq!(oracle["snapshots"].as_array().map(Vec::len), Some(6));
}

#[test]
fn py_v2_deletes_has_a_delete_and_an_overwrite() {
    let (fixture, oracle, _now) = build_and_check("py_v2_deletes", false);
    assert_eq!(operation(&oracle, fixture.snapshot_id("del_a2")), "delete");
    assert_eq!(
        operation(&oracle, fixture.snapshot_id("ovw_a3")),
        "overwrite"
    );
    let main = sorted_strings(&fixture.facts["live_files"]["main"]);
    for gone in ["a2", "a3"] {
        assert!(
            !main.contains(&fixture.data_file(gone).display().to_string()),
            "{gone} still live"
        );
    }
    assert!(main.contains(&fixture.data_file("ovw_a3").display().to_string()));
}

#[test]
fn py_v2_branches_tags_has_retention_refs_and_a_file_live_only_on_a_branch() {
    let (fixture, oracle, now) = build_and_check("py_v2_branches_tags", false);
    let refs = &oracle["refs"];
    assert_eq!(refs["audit"]["min_snapshots_to_keep"], 2);
    assert_eq!(refs["audit"]["max_snapshot_age_ms"], 7 * DAY_MS);
    assert_eq!(refs["t_old"]["type"], "tag");
    for stale in ["stale", "t_short"] {
        let head = refs[stale]["snapshot"].as_i64().expect("ref head");
        let head_ts = oracle["snapshots"]
            .as_array()
            .and_then(|all| all.iter().find(|s| s["id"].as_i64() == Some(head)))
            .and_then(|s| s["ts"].as_i64())
            .expect("head timestamp");
        let max_age = refs[stale]["max_ref_age_ms"].as_i64().expect("max-ref-age");
        assert!(
            now - head_ts > max_age,
            "{stale} is not past its max-ref-age"
        );
    }
    let m1 = fixture.data_file("m1").display().to_string();
    assert!(!sorted_strings(&oracle["ref_files"]["main"]["data"]).contains(&m1));
    assert!(sorted_strings(&oracle["ref_files"]["audit"]["data"]).contains(&m1));
}

#[test]
fn py_v2_properties_sets_table_expiry_policy() {
    let (_fixture, oracle, _now) = build_and_check("py_v2_properties", false);
    let properties = &oracle["properties"];
    assert_eq!(properties["history.expire.min-snapshots-to-keep"], "3");
    assert_eq!(
        properties["history.expire.max-snapshot-age-ms"],
        (2 * DAY_MS).to_string()
    );
    assert_eq!(
        properties["history.expire.max-ref-age-ms"],
        (3 * DAY_MS).to_string()
    );
    assert!(oracle["refs"]["old_branch"].is_object());
}

#[test]
fn py_v2_staged_has_snapshots_on_no_ref() {
    let (fixture, oracle, _now) = build_and_check("py_v2_staged", false);
    let reached = ref_ancestry(&oracle);
    for label in ["s_old", "r_young"] {
        assert!(
            !reached.contains(&fixture.snapshot_id(label)),
            "{label} is reachable from a ref"
        );
    }
    assert!(reached.contains(&fixture.snapshot_id("a1")));
    assert_eq!(
        oracle["current_snapshot_id"].as_i64(),
        Some(fixture.snapshot_id("a4"))
    );
}

#[test]
fn py_v2_many_has_sixty_snapshots() {
    let (_fixture, oracle, _now) = build_and_check("py_v2_many", false);
    assert_eq!(oracle["snapshots"].as_array().map(Vec::len), Some(60));
}

#[test]
fn py_v2_partitioned_with_orphans() {
    let (fixture, _oracle, now) = build_and_check("py_v2_partitioned", true);
    let live = sorted_strings(&fixture.facts["live_files"]["main"]);
    assert!(live.iter().any(|p| p.contains("/data/_c=a/")), "{live:?}");
    let orphans = fixture.facts["orphans"].as_array().expect("orphans");
    let kinds: BTreeSet<&str> = orphans.iter().filter_map(|o| o["kind"].as_str()).collect();
    assert_eq!(kinds, BTreeSet::from(["hidden", "old", "young"]));
    for orphan in orphans {
        let path = Path::new(orphan["path"].as_str().expect("path"));
        assert_eq!(
            mtime_ms(path) / 1000,
            orphan["mtime_ms"].as_i64().expect("mtime") / 1000
        );
    }
    let young = orphans
        .iter()
        .find(|o| o["kind"] == "young")
        .expect("young orphan");
    assert!(now - young["mtime_ms"].as_i64().expect("mtime") < 5 * 60_000);
    assert!(
        orphans
            .iter()
            .any(|o| o["kind"] == "old" && o["path"].as_str().is_some_and(|p| p.contains("/_c=")))
    );
    let stray = orphans
        .iter()
        .find(|o| o["category"] == "metadata")
        .expect("stray metadata");
    let version = |path: &str| -> u64 {
        let name = Path::new(path)
            .file_name()
            .and_then(|n| n.to_str())
            .expect("file name");
        name.split('-')
            .next()
            .and_then(|v| v.parse().ok())
            .expect("numbered metadata name")
    };
    let stray_version = version(stray["path"].as_str().expect("path"));
    assert!(
        stray_version < version(fixture.fact_str("metadata_path")),
        "stray metadata looks newest"
    );
}

/// ClickHouse's history of a ClickHouse-written table lists the aged snapshots.
fn check_clickhouse_history(scenario: &str) {
    let (fixture, oracle, _now) = build_and_check(scenario, false);
    let rows = clickhouse_script(
        &fixture.table_dir(),
        &[
            "SELECT snapshot_id, toUnixTimestamp64Milli(made_current_at), (SELECT count() FROM t) \
           FROM system.iceberg_history WHERE table = 't' ORDER BY made_current_at",
        ],
    )
    .expect("ClickHouse reads the aged table");
    let from_clickhouse: Vec<(String, String)> =
        rows.iter().map(|r| (r[0].clone(), r[1].clone())).collect();
    let from_log: Vec<(String, String)> = oracle["snapshot_log"]
        .as_array()
        .expect("snapshot log")
        .iter()
        .map(|e| (e["id"].to_string(), e["ts"].to_string()))
        .collect();
    assert_eq!(
        from_clickhouse, from_log,
        "{scenario}: iceberg_history vs snapshot-log"
    );
    let rows_main = fixture.facts["rows_main"].to_string();
    assert!(
        rows.iter().all(|r| r[2] == rows_main),
        "{scenario}: count()"
    );
    assert_eq!(
        fixture.facts["live_delete_files"]["main"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    let error = clickhouse(
        &fixture.table_dir(),
        "ALTER TABLE t EXECUTE no_such_command()",
    )
    .expect_err("unknown EXECUTE command fails");
    assert!(
        error.contains("Code: 36.") && error.contains("BAD_ARGUMENTS"),
        "{error}"
    );
}

#[test]
fn ch_v2_history_is_aged_and_readable_by_clickhouse() {
    check_clickhouse_history("ch_v2");
}

#[test]
fn ch_v3_history_is_aged_and_readable_by_clickhouse() {
    check_clickhouse_history("ch_v3");
}

#[test]
fn py_v2_for_clickhouse_accepts_execute() {
    let (fixture, oracle, _now) = build_and_check("py_v2_for_clickhouse", false);
    let logged: Vec<String> = oracle["metadata_log"]
        .as_array()
        .expect("metadata log")
        .iter()
        .map(|e| e["file"].as_str().expect("file").to_string())
        .collect();
    assert!(
        logged
            .iter()
            .all(|f| f.ends_with(".metadata.json") && f.contains("/metadata/v")),
        "{logged:?}"
    );
    assert!(logged.iter().all(|f| Path::new(f).exists()), "{logged:?}");
    let rows = clickhouse(
        &fixture.table_dir(),
        "ALTER TABLE t EXECUTE expire_snapshots(dry_run = 1)",
    )
    .expect("ClickHouse runs expire_snapshots on the renamed table");
    let names: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(
        names,
        [
            "deleted_data_files_count",
            "deleted_position_delete_files_count",
            "deleted_equality_delete_files_count",
            "deleted_manifest_files_count",
            "deleted_manifest_lists_count",
            "deleted_statistics_files_count",
            "dry_run",
        ]
    );
    assert_eq!(rows[6][1], "1");
}

fn statistics_paths(entries: &Value) -> BTreeMap<i64, String> {
    let list = entries.as_array().expect("statistics list");
    let pair = |e: &Value| {
        let snapshot = e["snapshot"].as_i64().expect("snapshot");
        (snapshot, e["path"].as_str().expect("path").to_string())
    };
    list.iter().map(pair).collect()
}

/// Also shows the oracle reports files the metadata references but the disk lacks.
#[test]
fn py_v2_statistics_references_stats_files_and_oracle_reports_missing_files() {
    let (fixture, oracle, _now) = build_and_check("py_v2_statistics", false);
    for (key, fact) in [
        ("statistics", "statistics_files"),
        ("partition_statistics", "partition_statistics_files"),
    ] {
        let expected: BTreeMap<i64, String> = fixture.facts[fact]
            .as_object()
            .expect("stats map")
            .iter()
            .map(|(label, path)| {
                (
                    fixture.snapshot_id(label),
                    path.as_str().expect("path").into(),
                )
            })
            .collect();
        assert_eq!(expected.len(), 2, "{fact}");
        assert_eq!(statistics_paths(&oracle[key]), expected, "{key}");
    }
    let manifests_of = |label: &str| {
        let id = fixture.snapshot_id(label).to_string();
        sorted_strings(&oracle["snapshot_files"][id.as_str()]["manifests"])
    };
    let older = manifests_of("a5");
    let added_by_a6: Vec<String> = manifests_of("a6")
        .into_iter()
        .filter(|m| !older.contains(m))
        .collect();
    assert_eq!(added_by_a6.len(), 1, "a fast append adds one manifest");
    let manifest = added_by_a6[0].clone();
    let a2 = fixture.snapshot_id("a2");
    let manifest_list = oracle["snapshots"]
        .as_array()
        .and_then(|all| all.iter().find(|s| s["id"].as_i64() == Some(a2)))
        .and_then(|s| s["manifest_list"].as_str())
        .expect("manifest list of a2")
        .to_string();
    let stats = fixture.facts["statistics_files"]["a6"]
        .as_str()
        .expect("stats")
        .to_string();
    let data = fixture.data_file("a3").display().to_string();
    let mut removed = vec![manifest, manifest_list, stats, data];
    for path in &removed {
        std::fs::remove_file(path).expect("remove a referenced file");
    }
    removed.sort();
    let after = oracle_inspect(&fixture.metadata_path());
    assert_eq!(sorted_strings(&after["missing"]), removed);
}

/// ClickHouse 26.9 counts old strays by name, and (unlike icetrim, which keeps them) also those
/// under `_`/`.` folders; the young stray is inside its default 3-day window.
#[test]
fn py_v2_for_clickhouse_orphans_as_clickhouse_counts_them() {
    let (fixture, _oracle, _now) = build_and_check("py_v2_for_clickhouse", true);
    let mut expected: BTreeMap<String, i64> = BTreeMap::new();
    for orphan in fixture.facts["orphans"].as_array().expect("orphans") {
        if orphan["kind"] != "young" {
            let category = orphan["category"].as_str().expect("category");
            *expected.entry(category.to_string()).or_default() += 1;
        }
    }
    let rows = clickhouse(
        &fixture.table_dir(),
        "ALTER TABLE t EXECUTE remove_orphan_files(dry_run = 1)",
    )
    .expect("ClickHouse runs remove_orphan_files on the renamed table");
    let count = |metric: &str| -> i64 {
        let row = rows.iter().find(|r| r[0] == metric).expect("metric row");
        row[1].parse().expect("integer metric")
    };
    for (category, metric) in [
        ("data", "deleted_data_files_count"),
        ("position_delete", "deleted_position_delete_files_count"),
        ("equality_delete", "deleted_equality_delete_files_count"),
        ("manifest", "deleted_manifest_files_count"),
        ("manifest_list", "deleted_manifest_lists_count"),
        ("metadata", "deleted_metadata_files_count"),
        ("statistics", "deleted_statistics_files_count"),
    ] {
        let want = expected.get(category).copied().unwrap_or(0);
        assert_eq!(count(metric), want, "{metric}");
    }
    assert_eq!(rows.len(), 9);
}

#[test]
fn py_v2_refs_wap_has_staged_wap_snapshots_and_an_evolved_schema() {
    let (fixture, oracle, _now) = build_and_check("py_v2_refs_wap", false);
    let reached = ref_ancestry(&oracle);
    for label in ["w1", "w2"] {
        assert!(
            !reached.contains(&fixture.snapshot_id(label)),
            "{label} is reachable from a ref"
        );
    }
    let parent_of = |label: &str| {
        oracle["snapshots"]
            .as_array()
            .expect("snapshots")
            .iter()
            .find(|s| s["id"].as_i64() == Some(fixture.snapshot_id(label)))
            .and_then(|s| s["parent"].as_i64())
    };
    assert_eq!(parent_of("w1"), Some(fixture.snapshot_id("a5")));
    assert_eq!(parent_of("w2"), Some(fixture.snapshot_id("a7")));
    assert_eq!(parent_of("b1"), Some(fixture.snapshot_id("a5")));
    let metadata: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture.metadata_path()).expect("metadata"))
            .expect("json");
    let wap_of = |label: &str| {
        metadata["snapshots"]
            .as_array()
            .expect("snapshots")
            .iter()
            .find(|s| s["snapshot-id"].as_i64() == Some(fixture.snapshot_id(label)))
            .map(|s| s["summary"]["wap.id"].clone())
    };
    assert_eq!(wap_of("w1"), Some(Value::from("wap-1")));
    assert_eq!(wap_of("w2"), Some(Value::from("wap-2")));
    assert_eq!(wap_of("a6"), Some(Value::Null));
    assert_eq!(
        metadata["schemas"].as_array().map(Vec::len),
        Some(2),
        "a column was added"
    );
    assert_eq!(
        oracle["current_snapshot_id"].as_i64(),
        Some(fixture.snapshot_id("a7"))
    );
}

#[test]
fn py_v2_refs_specs_has_two_partition_specs() {
    let (fixture, oracle, _now) = build_and_check("py_v2_refs_specs", false);
    let metadata: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture.metadata_path()).expect("metadata"))
            .expect("json");
    assert_eq!(
        metadata["partition-specs"].as_array().map(Vec::len),
        Some(2)
    );
    assert_eq!(metadata["default-spec-id"], 1);
    let reached = ref_ancestry(&oracle);
    for label in ["w_old", "w_new"] {
        assert!(!reached.contains(&fixture.snapshot_id(label)), "{label}");
    }
}
