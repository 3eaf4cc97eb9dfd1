//! `EXPLAIN ALTER TABLE t EXECUTE remove_orphan_files()` on a local fixture with strays: each
//! orphan and each kept file with its reason, the totals, each reachable file read once, nothing
//! changed. What the statement deletes and keeps is walked through in the SQL sessions
//! `tests/sessions/orphans_*.test`.

#[path = "common/fixtures.rs"]
mod fixtures;
mod orphans_support;

use std::path::Path;

use fixtures::{make_fixture, now_ms, oracle_inspect};
use orphans_support::*;

#[tokio::test]
async fn explain_lists_orphans_and_kept_files_reads_each_file_once_and_changes_nothing() {
    use icetrim::format::Value as Cell;
    use icetrim::io::{FileIO, RequestCounter};
    let now = now_ms();
    let fixture = make_fixture("py_v2_linear", now, true);
    let dir = fixture.table_dir();
    let counter = RequestCounter::new();
    let io = FileIO::local().with_request_counter(counter.clone());
    let rt = runtime(now, Some(io));
    let r = run_on(&rt, &local_table(&dir, &[]), options(None, false), true)
        .await
        .unwrap();
    let counts = counter.snapshot();
    let oracle = oracle_inspect(&fixture.metadata_path());
    let snapshots = oracle["snapshot_files"]
        .as_object()
        .expect("snapshot_files");
    let mut lists = std::collections::BTreeSet::new();
    let mut manifests = std::collections::BTreeSet::new();
    for s in snapshots.values() {
        lists.insert(s["manifest_list"].as_str().expect("list").to_string());
        manifests.extend(fixtures::sorted_strings(&s["manifests"]));
    }
    assert!(manifests.len() >= 2, "{manifests:?}");
    // The first bytes of each versioned metadata file (their table-uuid: one table in
    // metadata/) and of each orphan metadata file of a lower version (its last-updated-ms), the
    // metadata file once, then each distinct manifest list and manifest once.
    let old_metadata_strays = strays(&fixture.facts)
        .iter()
        .filter(|s| s.category == "metadata" && s.kind == "old")
        .count();
    let heads = versioned_metadata(&dir).len() + old_metadata_strays;
    let reads = u64::try_from(heads + 1 + lists.len() + manifests.len()).unwrap_or(u64::MAX);
    assert_eq!(counts.get, reads, "{counts}");
    assert_eq!((counts.put, counts.delete), (0, 0), "{counts}");
    for stray in strays(&fixture.facts) {
        assert!(
            Path::new(&stray.path).exists(),
            "EXPLAIN deleted {}",
            stray.path
        );
    }
    let text = |row: &Vec<Cell>, i: usize| match &row[i] {
        Cell::Str(s) => s.clone(),
        other => panic!("column {i} is not text: {other:?}"),
    };
    let int = |row: &Vec<Cell>, i: usize| match &row[i] {
        Cell::Int(v) => *v,
        other => panic!("column {i} is not Int64: {other:?}"),
    };
    let names: Vec<&str> = r.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "item",
            "path",
            "category",
            "reason",
            "files",
            "size_bytes",
            "last_modified"
        ]
    );
    let mut orphan_paths: Vec<String> = r
        .rows
        .iter()
        .filter(|row| text(row, 0) == "orphan")
        .map(|row| text(row, 1))
        .collect();
    orphan_paths.sort();
    let mut old: Vec<String> = strays(&fixture.facts)
        .into_iter()
        .filter(|s| s.kind == "old")
        .map(|s| s.path)
        .collect();
    old.sort();
    assert_eq!(orphan_paths, old);
    let kept: Vec<(String, String)> = r
        .rows
        .iter()
        .filter(|row| text(row, 0) == "kept")
        .map(|row| (text(row, 1), text(row, 3)))
        .collect();
    for stray in strays(&fixture.facts).iter().filter(|s| s.kind != "old") {
        let reason = if stray.kind == "young" {
            "too_young"
        } else {
            "hidden"
        };
        assert!(
            kept.contains(&(stray.path.clone(), reason.to_string())),
            "{} not kept as {reason}: {kept:?}",
            stray.path
        );
    }
    let total = |name: &str| {
        r.rows
            .iter()
            .find(|row| text(row, 0) == "total" && text(row, 1) == name)
            .map(|row| int(row, 4))
            .unwrap_or_else(|| panic!("no total {name}"))
    };
    let expected = expected_old(&fixture.facts, |_| true);
    assert_eq!(
        total("deleted_data_files_count"),
        expected.deleted_data_files_count
    );
    assert_eq!(total("deleted_metadata_files_count"), 1);
    assert_eq!(total("kept_hidden_count"), 4);
    assert_eq!(total("kept_too_young_count"), 1);
    // Every reachable file is on disk except the version hint, which this table lacks.
    assert_eq!(
        total("reachable_files_count"),
        total("reachable_listed_count") + 1
    );
}

// ---- issue 15 §3 and §1: metadata files newer than the plan, two tables in one metadata/ ----

/// `(version, file name)` of the versioned metadata files of the table in `dir`, by version.
fn versioned_metadata(dir: &Path) -> Vec<(u64, String)> {
    let mut out: Vec<(u64, String)> = std::fs::read_dir(dir.join("metadata"))
        .expect("metadata folder")
        .filter_map(|e| {
            let name = e.expect("entry").file_name().to_string_lossy().into_owned();
            let v = icetrim::iceberg::locate::parse_file_name(&name)?.version?;
            Some((v, name))
        })
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn a_higher_version_metadata_file_is_never_deleted_when_planning_by_last_updated_ms() {
    let now = now_ms();
    let fixture = make_fixture("py_v2_linear", now, false);
    let dir = fixture.table_dir();
    let files = versioned_metadata(&dir);
    let (_, newest) = files.last().expect("metadata").clone();
    let (_, previous) = files[files.len() - 2].clone();
    let read = |name: &str| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(dir.join("metadata").join(name)).unwrap()).unwrap()
    };
    // The real newest commit carries a lower last-updated-ms than its predecessor (another
    // writer's clock, or the fork of issue 15): selection by last-updated-ms plans on the older.
    let mut doc = read(&newest);
    let lower = read(&previous)["last-updated-ms"].as_i64().unwrap() - 1;
    doc["last-updated-ms"] = serde_json::json!(lower);
    let path = dir.join("metadata").join(&newest);
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    set_mtime(&path, now - 10 * DAY_MS);
    let before: Vec<String> = table_files(&fixture.facts);
    let table = local_table(
        &dir,
        &[("iceberg_recent_metadata_file_by_last_updated_ms_field", "1")],
    );
    let outcome = run_on(&runtime(now, None), &table, options(None, false), false).await;
    assert!(
        path.exists(),
        "the newest metadata file was deleted: {outcome:?}"
    );
    let lost: Vec<&String> = before.iter().filter(|f| !Path::new(f).exists()).collect();
    assert!(lost.is_empty(), "files of the newest commit lost: {lost:?}");
    let e = outcome.expect_err("a newer metadata file than the plan's refuses");
    assert!(e.message().contains(&newest), "{e}");
}

/// Writes a second pyiceberg table (its own `table-uuid`, one append) at the location `dir`.
fn second_pyiceberg_table_at(dir: &Path) {
    let script = r#"
import sys, tempfile
import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField
location = "file://" + sys.argv[1]
catalog = SqlCatalog("other", uri="sqlite:///:memory:", warehouse=location)
catalog.create_namespace("o")
t = catalog.create_table("o.t", schema=Schema(NestedField(1, "id", LongType(), required=False)), location=location)
t.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
print(t.metadata.table_uuid)
"#;
    let output = std::process::Command::new(fixtures::python())
        .args(["-c", script, dir.to_str().unwrap()])
        .output()
        .expect("run python");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test]
async fn two_table_uuids_in_one_metadata_folder_refuse_every_procedure_unless_one_is_chosen() {
    use icetrim::engine::procedures::run_procedure;
    use icetrim::plan::{ExpireOptions, ProcedureCall};
    let now = now_ms();
    let fixture = make_fixture("py_v2_linear", now, false);
    let dir = fixture.table_dir();
    let ours = oracle_inspect(&fixture.metadata_path());
    second_pyiceberg_table_at(&dir);
    let our_uuid = serde_json::from_slice::<serde_json::Value>(
        &std::fs::read(fixture.metadata_path()).unwrap(),
    )
    .unwrap()["table-uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let rt = runtime(now + DAY_MS, None);
    let expire = ProcedureCall::Expire(ExpireOptions {
        retain_last: Some(1),
        retention_period_ms: Some(0),
        ..Default::default()
    });
    let settings = icetrim::settings::Settings::new();
    let everything = |dir: &Path| -> std::collections::BTreeSet<String> {
        let mut out = std::collections::BTreeSet::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    out.insert(p.to_string_lossy().into_owned());
                }
            }
        }
        out
    };
    let files_before = everything(&dir);
    let plain = local_table(&dir, &[]);
    for (call, explain) in [
        (ProcedureCall::Orphans(options(None, false)), false),
        (ProcedureCall::Orphans(options(None, true)), false),
        (ProcedureCall::Orphans(options(None, false)), true),
        (expire.clone(), false),
        (expire.clone(), true),
    ] {
        let e = run_procedure(&rt, &settings, &plain, call, explain)
            .await
            .expect_err("two tables in one metadata folder refuse");
        let message = e.message();
        assert!(
            message.contains(&our_uuid) && message.contains("iceberg_metadata_table_uuid"),
            "{message}"
        );
        assert_eq!(everything(&dir), files_before, "nothing changed");
    }
    // With the table chosen, both procedures run on it.
    let chosen = local_table(&dir, &[("iceberg_metadata_table_uuid", our_uuid.as_str())]);
    run_procedure(&rt, &settings, &chosen, expire, false)
        .await
        .expect("expiry on the chosen table");
    let after = oracle_inspect(&std::path::PathBuf::from(
        icetrim::iceberg::locate::locate(
            &icetrim::io::FileIO::local(),
            dir.to_str().unwrap(),
            &icetrim::iceberg::locate::MetadataSettings {
                table_uuid: Some(our_uuid.clone()),
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .path,
    ));
    assert_eq!(after["rows_main"], ours["rows_main"]);
    assert_eq!(after["missing"], serde_json::json!([]));
}
