//! Position delete files that do not apply under the spec, on a real table: pyiceberg writes a
//! table partitioned by `identity(part)`, evolves the spec (`bucket[2](id)` added), ClickHouse
//! deletes rows of older-spec files (its position delete files land in the newest spec, their
//! `file_path` bounds one path), and we add one more such file without bounds (only its rows
//! name the data file). pyiceberg applies them, ClickHouse does not: the readers disagree.
//! Compaction leaves every named data file as it is (EXPLAIN says why, a warning names one),
//! rewrites the rest, and afterwards both readers read exactly what each read before, in every
//! snapshot; the out-of-scope delete files stay.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use icetrim::format::Value as Cell;
use serde_json::Value;

use crate::compaction::{
    commit_deletes, compact_metrics, current_files, engine_sql, newest_metadata, position_delete,
    py_rows,
};
use crate::support::fixtures::{python, run_python_json};

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/py/spec_change_deletes.py")
}

/// The ids (current snapshot) pyiceberg and ClickHouse read.
async fn readers(dir: &Path) -> (Vec<i64>, Vec<i64>) {
    let md = newest_metadata(dir).await;
    let out = run_python_json(&script(), &["read", dir.to_str().unwrap(), &md]);
    let ids = |v: &Value| -> Vec<i64> {
        v.as_array()
            .unwrap_or_else(|| panic!("{out}"))
            .iter()
            .map(|x| x.as_i64().unwrap())
            .collect()
    };
    (ids(&out["pyiceberg"]), ids(&out["clickhouse"]))
}

/// Data files of the first spec (`identity(part)` only) have no `id_bucket=` folder.
fn old_spec(path: &str) -> bool {
    !path.contains("/id_bucket=")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_files_named_by_position_deletes_out_of_their_scope_are_left_alone() {
    let _ = python();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    run_python_json(&script(), &["build", dir.to_str().unwrap()]);
    let (data, ch_deletes, _, _) = current_files(&dir).await;
    assert_eq!(ch_deletes.len(), 3, "ClickHouse's three delete files");
    // The paths ClickHouse's delete files name (their bounds are one path each).
    let ch_named: BTreeSet<String> = ch_deletes
        .iter()
        .map(|d| {
            let lo = &d.lower_bounds.as_ref().unwrap()[&2_147_483_546];
            String::from_utf8(lo.clone()).unwrap()
        })
        .collect();
    let ch_out_of_scope: BTreeSet<&String> = ch_named.iter().filter(|p| old_spec(p)).collect();
    assert_eq!(
        ch_out_of_scope.len(),
        2,
        "two name older-spec files: {ch_named:?}"
    );
    // One more, written directly into a partition of the newest spec, without bounds, naming
    // row 0 of an older-spec file nobody names yet.
    let victim = data
        .iter()
        .map(|f| f.file_path.clone())
        .filter(|p| old_spec(p) && !ch_named.contains(p))
        .min()
        .unwrap();
    let newest_partition = data
        .iter()
        .find(|f| !old_spec(&f.file_path))
        .unwrap()
        .partition
        .clone();
    let mut direct = position_delete(&dir, "direct-deletes.parquet", &[(victim.clone(), 0)]);
    direct.partition = newest_partition;
    assert!(direct.lower_bounds.is_none() && direct.referenced_data_file.is_none());
    commit_deletes(&dir, vec![direct]).await;
    let mut disputed: BTreeSet<String> = ch_out_of_scope.into_iter().cloned().collect();
    disputed.insert(victim);

    let (py_before, ch_before) = readers(&dir).await;
    assert_eq!(
        ch_before.len(),
        19,
        "ClickHouse applies only the in-scope delete"
    );
    assert_eq!(py_before.len(), 16, "pyiceberg applies all four");
    let (snapshots_before, _) = py_rows(&dir).await;
    let (_, _, _, start) = current_files(&dir).await;

    // EXPLAIN: the named files form `skip` groups that say why; the others are rewritten.
    let explain = engine_sql(
        &dir,
        &["EXPLAIN ALTER TABLE t EXECUTE rewrite_data_files(rewrite_all = 1)"],
    )
    .await;
    let text = |c: &Cell| match c {
        Cell::Str(s) => s.clone(),
        other => format!("{other:?}"),
    };
    let count = |c: &Cell| match c {
        Cell::Int(n) => *n,
        Cell::UInt(n) => *n as i64,
        other => panic!("not a count: {other:?}"),
    };
    let mut skipped = 0;
    let mut rewritten = 0;
    for row in &explain[0].rows {
        let reason = text(&row[9]);
        if reason.contains("another spec or partition names its rows") {
            assert_eq!(text(&row[0]), "skip", "{row:?}");
            skipped += count(&row[3]);
        } else if text(&row[0]) == "rewrite" {
            rewritten += count(&row[3]);
        }
    }
    assert_eq!(skipped as usize, disputed.len(), "{:?}", explain[0].rows);
    assert_eq!(rewritten as usize, data.len() - disputed.len());
    assert!(
        explain[0]
            .warnings
            .iter()
            .any(|w| w.contains("readers disagree")),
        "{:?}",
        explain[0].warnings
    );

    let results = engine_sql(
        &dir,
        &["ALTER TABLE t EXECUTE rewrite_data_files(rewrite_all = 1)"],
    )
    .await;
    let m = compact_metrics(&results[0]);
    assert_eq!(
        m.rewritten_data_files_count as usize,
        data.len() - disputed.len(),
        "{m:?}"
    );
    assert_eq!(m.failed_data_files_count, 0);
    let warning = results[0]
        .warnings
        .iter()
        .find(|w| w.contains("readers disagree"))
        .unwrap_or_else(|| panic!("{:?}", results[0].warnings));
    assert!(warning.contains("3 data file(s)"), "{warning}");

    // Every reader reads what it read before, in every snapshot.
    let (py_after, ch_after) = readers(&dir).await;
    assert_eq!(py_after, py_before, "pyiceberg");
    assert_eq!(ch_after, ch_before, "ClickHouse");
    let (snapshots_after, errors) = py_rows(&dir).await;
    for (sid, rows) in &snapshots_before {
        assert_eq!(&snapshots_after[sid], rows, "snapshot {sid}: {errors}");
    }
    let (data_after, deletes_after, op, now) = current_files(&dir).await;
    assert_eq!(op, "replace");
    assert_eq!(
        snapshots_after[&now.to_string()],
        snapshots_before[&start.to_string()]
    );
    // The named files and the delete files that name them are still live.
    let live: BTreeSet<String> = data_after.iter().map(|f| f.file_path.clone()).collect();
    assert!(disputed.is_subset(&live), "{disputed:?} in {live:?}");
    let still: BTreeSet<String> = deletes_after.iter().map(|d| d.file_path.clone()).collect();
    assert_eq!(
        still.len(),
        3,
        "the out-of-scope delete files stay: {still:?}"
    );
    assert!(still.iter().any(|p| p.ends_with("direct-deletes.parquet")));
}
