//! Differential: the same `expire_snapshots` statement on ClickHouse (chdb) and on icetrim, each on
//! its own copy of a table (two fixtures built the same way: metadata paths are absolute).
//! Same seven rows, same remaining snapshots and refs, same remaining files — except icetrim's
//! deliberate difference (icetrim keeps unreferenced snapshots younger than the max age), which
//! is asserted explicitly.

use crate::support::expire as support;

use std::collections::BTreeSet;
use std::path::Path;

use icetrim::internals::plan::ExpireOptions;
use serde_json::Value;
use support::*;

/// Files under the table, relative to it.
fn relative_files(dir: &Path) -> BTreeSet<String> {
    let root = format!("{}/", dir.display());
    files_on_disk(dir)
        .into_iter()
        .map(|f| f.strip_prefix(&root).unwrap_or(&f).to_string())
        .collect()
}

/// The seven ClickHouse rows as numbers.
fn clickhouse_counts(dir: &Path, sql: &str) -> [i64; 7] {
    let rows = fixtures::clickhouse(dir, sql).unwrap_or_else(|e| panic!("ClickHouse: {e}"));
    assert_eq!(rows.len(), 7, "{rows:?}");
    let mut out = [0; 7];
    for (slot, row) in out.iter_mut().zip(&rows) {
        *slot = row[1].parse().unwrap();
    }
    out
}

fn edit_json(path: &Path, edit: impl FnOnce(&mut Value)) {
    let mut json: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    edit(&mut json);
    std::fs::write(path, serde_json::to_vec_pretty(&json).unwrap()).unwrap();
}

/// Run `args` on both copies of a deterministic pyiceberg table and compare everything.
async fn same_on_both(args: &str, opts: ExpireOptions) {
    let now = fixtures::now_ms();
    let ours = make_fixture("py_v2_for_clickhouse", now, false);
    let theirs = make_fixture("py_v2_for_clickhouse", now, false);
    assert_eq!(
        relative_files(&ours.table_dir()),
        relative_files(&theirs.table_dir()),
        "the two builds are identical"
    );
    let sql = format!("ALTER TABLE t EXECUTE expire_snapshots({args})");
    let ch = clickhouse_counts(&theirs.table_dir(), &sql);
    let before = inspect(&ours.table_dir()).await;
    let r = expire_at(&ours.table_dir(), fixtures::now_ms(), opts, false, None)
        .await
        .unwrap();
    let after = inspect(&ours.table_dir()).await;
    assert_whole(&before, &after);
    assert_eq!(counts(&r), ch, "{sql}: the seven rows");
    let ch_after = inspect(&theirs.table_dir()).await;
    assert_eq!(
        snapshot_ids(&after),
        snapshot_ids(&ch_after),
        "{sql}: snapshots"
    );
    assert_eq!(ref_names(&after), ref_names(&ch_after), "{sql}: refs");
    assert_eq!(
        relative_files(&ours.table_dir()),
        relative_files(&theirs.table_dir()),
        "{sql}: remaining files (metadata file names included)"
    );
}

#[tokio::test]
async fn differential_defaults() {
    same_on_both("", ExpireOptions::default()).await;
}

#[tokio::test]
async fn differential_retain_last_and_period() {
    same_on_both(
        "retain_last = 2, retention_period = '0s'",
        policy(Some(2), Some(0)),
    )
    .await;
}

#[tokio::test]
async fn differential_snapshot_ids_and_dry_run() {
    let now = fixtures::now_ms();
    let probe = make_fixture("py_v2_for_clickhouse", now, false);
    let (a2, a3) = (probe.snapshot_id("a2"), probe.snapshot_id("a3"));
    drop(probe);
    same_on_both(&format!("snapshot_ids = [{a2}, {a3}]"), ids(&[a2, a3])).await;
    same_on_both(
        "retain_last = 1, retention_period = '0s', dry_run = 1",
        dry(policy(Some(1), Some(0))),
    )
    .await;
}

/// ClickHouse-written tables: ids and file names are random per build, so compare counts, the
/// number of snapshots, and the remaining files per folder.
async fn same_shape_on_clickhouse_table(scenario: &str) {
    let now = fixtures::now_ms();
    let ours = make_fixture(scenario, now, false);
    let theirs = make_fixture(scenario, now, false);
    let sql = "ALTER TABLE t EXECUTE expire_snapshots(retain_last = 2, retention_period = '0s')";
    let ch = clickhouse_counts(&theirs.table_dir(), sql);
    let before = inspect(&ours.table_dir()).await;
    let r = expire_at(
        &ours.table_dir(),
        fixtures::now_ms(),
        policy(Some(2), Some(0)),
        false,
        None,
    )
    .await
    .unwrap();
    let after = inspect(&ours.table_dir()).await;
    assert_whole(&before, &after);
    assert_eq!(counts(&r), ch, "{scenario}: the seven rows");
    let ch_after = inspect(&theirs.table_dir()).await;
    assert_eq!(snapshot_ids(&after).len(), snapshot_ids(&ch_after).len());
    assert_eq!(ref_names(&after), ref_names(&ch_after));
    let shape = |dir: &Path| -> Vec<(String, usize)> {
        let mut by_folder = std::collections::BTreeMap::new();
        for f in relative_files(dir) {
            let folder = f.rsplit_once('/').map_or("", |(d, _)| d).to_string();
            *by_folder.entry(folder).or_insert(0) += 1;
        }
        by_folder.into_iter().collect()
    };
    assert_eq!(
        shape(&ours.table_dir()),
        shape(&theirs.table_dir()),
        "{scenario}"
    );
}

#[tokio::test]
async fn differential_clickhouse_v2() {
    same_shape_on_clickhouse_table("ch_v2").await;
}

#[tokio::test]
async fn differential_clickhouse_v3() {
    same_shape_on_clickhouse_table("ch_v3").await;
}

/// Unreferenced snapshots (see docs/decisions.md): main rolled back past the DELETE leaves that
/// snapshot on no ref. It is an hour old: icetrim keeps it (Java's rule), ClickHouse expires it and
/// its position-delete file.
#[tokio::test]
async fn deliberate_difference_unreferenced_young_snapshot() {
    let now = fixtures::now_ms();
    let ours = make_fixture("ch_v2", now, false);
    let theirs = make_fixture("ch_v2", now, false);
    for fx in [&ours, &theirs] {
        let i4 = fx.snapshot_id("i4");
        edit_json(&fx.metadata_path(), |json| {
            json["current-snapshot-id"] = i4.into();
            json["refs"]["main"]["snapshot-id"] = i4.into();
        });
    }
    let sql = "ALTER TABLE t EXECUTE expire_snapshots(retain_last = 1)";
    let ch = clickhouse_counts(&theirs.table_dir(), sql);
    let before = inspect(&ours.table_dir()).await;
    let r = expire_at(
        &ours.table_dir(),
        fixtures::now_ms(),
        policy(Some(1), None),
        false,
        None,
    )
    .await
    .unwrap();
    assert_whole(&before, &inspect(&ours.table_dir()).await);
    let kept = snapshot_ids(&inspect(&ours.table_dir()).await);
    let ch_kept = snapshot_ids(&inspect(&theirs.table_dir()).await);
    assert!(
        kept.contains(&ours.snapshot_id("del")),
        "icetrim keeps the young DELETE"
    );
    assert!(
        !ch_kept.contains(&theirs.snapshot_id("del")),
        "ClickHouse expires it"
    );
    assert_eq!(kept.len(), ch_kept.len() + 1);
    assert_eq!(counts(&r)[1], 0);
    assert_eq!(ch[1], 1, "ClickHouse deletes the position-delete file");
    assert!(
        Path::new(ours.facts["delete_files"]["del"].as_str().unwrap()).exists(),
        "icetrim leaves it"
    );
}

/// Each file is counted once (see docs/decisions.md): a merge append rewrote a1..a4's manifests
/// into one that lists their files again as EXISTING. Expiring everything but `compact` deletes the
/// same files on both tools, but ClickHouse counts a data file once per manifest entry that names
/// it; icetrim counts each deleted file once.
#[tokio::test]
async fn deliberate_difference_file_counted_once() {
    let now = fixtures::now_ms();
    let ours = make_fixture("py_v2_compacted", now, false);
    let theirs = make_fixture("py_v2_compacted", now, false);
    let sql = "ALTER TABLE t EXECUTE expire_snapshots(retain_last = 1, retention_period = '0s')";
    let ch = clickhouse_counts(&theirs.table_dir(), sql);
    let before = inspect(&ours.table_dir()).await;
    let r = expire_at(
        &ours.table_dir(),
        fixtures::now_ms(),
        policy(Some(1), Some(0)),
        false,
        None,
    )
    .await
    .unwrap();
    assert_whole(&before, &inspect(&ours.table_dir()).await);
    // The new metadata file's name follows each tool's own scheme; every other file is compared.
    let content = |dir: &Path| -> BTreeSet<String> {
        relative_files(dir)
            .into_iter()
            .filter(|f| !f.ends_with(".metadata.json"))
            .collect()
    };
    assert_eq!(
        content(&ours.table_dir()),
        content(&theirs.table_dir()),
        "the same files remain"
    );
    let ours_counts = counts(&r);
    assert_eq!(
        ours_counts[0], 5,
        "five data files deleted, each counted once"
    );
    assert_eq!(
        ch[0], 9,
        "ClickHouse: four ADDED + four EXISTING + a5's ADDED entry"
    );
    assert_eq!(ours_counts[1..], ch[1..], "every other row agrees");
}

/// Timestamp arguments in a DST gap or fold: icetrim reads them as ClickHouse (chdb, asked live)
/// reads `toDateTime(text, zone)` — the offset after the change in a gap, the earlier instant in a
/// fold. The same values are hard-coded in `src/sql/timestamp.rs`'s unit tests.
#[test]
fn dst_gap_and_fold_timestamps_match_clickhouse() {
    let cases = [
        ("2026-03-08 02:00:00", "America/New_York"),
        ("2026-03-08 02:30:00", "America/New_York"),
        ("2026-03-08 02:59:59", "America/New_York"),
        ("2026-03-08 03:00:00", "America/New_York"),
        ("2026-11-01 01:00:00", "America/New_York"),
        ("2026-11-01 01:30:00", "America/New_York"),
        ("2026-11-01 01:59:59", "America/New_York"),
        ("2026-03-29 02:30:00", "Europe/Berlin"),
        ("2026-10-25 02:30:00", "Europe/Berlin"),
        ("2026-10-04 02:15:00", "Australia/Lord_Howe"),
        ("2026-04-05 01:45:00", "Australia/Lord_Howe"),
        ("2026-09-06 00:00:00", "America/Santiago"),
        ("2026-09-06", "America/Santiago"),
    ];
    let select: Vec<String> = cases
        .iter()
        .map(|(text, zone)| format!("toUnixTimestamp(toDateTime('{text}', '{zone}'))"))
        .collect();
    let script = format!(
        "import chdb; print(chdb.query(\"SELECT {}\", 'CSV').data().strip())",
        select.join(", ")
    );
    let output = std::process::Command::new(fixtures::python())
        .args(["-c", &script])
        .output()
        .expect("python runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).expect("utf-8");
    let clickhouse: Vec<i64> = text
        .trim()
        .split(',')
        .map(|v| v.parse().expect("seconds"))
        .collect();
    assert_eq!(clickhouse.len(), cases.len(), "{text}");
    for ((text, zone), seconds) in cases.iter().zip(clickhouse) {
        let zone = icetrim::internals::sql::SessionTimeZone::from_setting(zone).unwrap();
        let ours = icetrim::internals::sql::parse_timestamp_ms(text, &zone).unwrap();
        assert_eq!(ours, seconds * 1000, "{text} in {zone}");
    }
}
