//! Compaction's memory bound, measured: `OPTIMIZE TABLE` in a child `icetrim` process on a table
//! whose real Parquet input is several times `iceberg_compaction_max_memory_bytes`; the child's
//! own peak RSS (`wait4`'s `ru_maxrss`) stays under the setting plus a stated baseline, and the
//! rows are the same before and after. A resource bound, not a timing.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, RecordBatch};
use icetrim::internals::iceberg::locate::{MetadataSettings, locate};
use icetrim::internals::iceberg::manifest::{inherit, read_manifest};
use icetrim::internals::iceberg::manifest_list::read_manifest_list;
use icetrim::internals::iceberg::spec::DataContent;
use icetrim::internals::io::FileIO;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

const BIN: &str = env!("CARGO_BIN_EXE_icetrim");
const GENERATE: &str = env!("CARGO_BIN_EXE_icetrim-generate");
const MIB: u64 = 1 << 20;
/// The setting under test.
const SETTING: u64 = 64 * MIB;
/// What the process holds besides compaction's budget: the binary and its libraries, the Tokio
/// runtime and its threads' stacks, the table's metadata, and the allocator's slack. Measured at
/// 23 MiB (debug build, `EXPLAIN OPTIMIZE` on this table); 48 MiB leaves room for the
/// allocator's two arenas and for this test process's own high-water mark (see below).
const BASELINE: u64 = 48 * MIB;

/// Generates a v2 table of `files` Parquet data files of `rows` rows each (`data` padded to 256
/// bytes of incompressible text), appends only.
pub(super) fn generate(dir: &Path, files: usize, rows: i64) {
    let out = Command::new(GENERATE)
        .args(["--location", dir.to_str().unwrap(), "--parquet"])
        .args([
            "--snapshots",
            &(files / 2).to_string(),
            "--files-per-snapshot",
            "2",
        ])
        .args(["--rows-per-file", &rows.to_string(), "--row-bytes", "256"])
        .args(["--mix", "append=1", "--seed", "3"])
        .output()
        .expect("icetrim-generate runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The live data files of the current snapshot: (path, bytes).
pub(super) async fn live_files(dir: &Path) -> Vec<(String, i64)> {
    let io = FileIO::local();
    let location = dir.to_str().unwrap();
    let located = locate(&io, location, &MetadataSettings::default())
        .await
        .unwrap();
    let snap = located.metadata.current_snapshot().unwrap();
    let list_path = snap.manifest_list.clone().unwrap();
    let list = read_manifest_list(&io.read(&list_path).await.unwrap(), &list_path).unwrap();
    let mut out = Vec::new();
    for m in &list {
        let bytes = io.read(&m.manifest_path).await.unwrap();
        let mut manifest = read_manifest(&bytes, &m.manifest_path).unwrap();
        inherit(&mut manifest.entries, m);
        for e in manifest.entries {
            assert_ne!(e.data_file.content, DataContent::EqualityDeletes);
            if e.status.is_live() && e.data_file.content == DataContent::Data {
                out.push((e.data_file.file_path, e.data_file.file_size_in_bytes));
            }
        }
    }
    out.sort();
    out
}

/// The rows of `files` as a multiset summary: the sorted ids (unique in generated tables) and,
/// per id, a hash of its `data`; plus whether each file is sorted by `id` descending.
fn rows(files: &[(String, i64)]) -> (HashMap<i64, u64>, Vec<bool>) {
    let mut by_id = HashMap::new();
    let mut sorted = Vec::new();
    for (path, _) in files {
        let file = std::fs::File::open(path).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .build()
            .unwrap();
        let mut last = i64::MAX;
        let mut descending = true;
        for batch in reader {
            let batch: RecordBatch = batch.unwrap();
            let ids = batch.column(0).as_primitive::<Int64Type>();
            let data = batch.column(1).as_string::<i32>();
            for i in 0..batch.num_rows() {
                let id = ids.value(i);
                descending &= id <= last;
                last = id;
                let h = if data.is_null(i) {
                    0
                } else {
                    fxhash(data.value(i).as_bytes())
                };
                assert!(by_id.insert(id, h).is_none(), "id {id} twice");
            }
        }
        sorted.push(descending);
    }
    (by_id, sorted)
}

fn fxhash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// Runs `sql` in a child `icetrim`; its stdout and its own peak RSS in bytes.
fn icetrim(sql: &str) -> (String, u64) {
    let child = Command::new(BIN)
        .args(["--format", "TabSeparated", "-q", sql])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("icetrim starts");
    let pid = i32::try_from(child.id()).unwrap();
    let mut status = 0;
    // SAFETY: rusage is plain old data, filled by wait4 for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // Read the output first (a full pipe would block the child), then reap it with wait4.
    let output_thread = std::thread::spawn(move || {
        let mut child = child;
        let mut out = String::new();
        let mut err = String::new();
        use std::io::Read;
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        (out, err)
    });
    // The child's own high-water mark, polled from /proc while it runs: `ru_maxrss` after exec
    // also carries this test process's own high-water mark, which other tests of this binary
    // (running beside it) raise.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let hwm_thread = {
        let done = std::sync::Arc::clone(&done);
        std::thread::spawn(move || {
            let file = format!("/proc/{pid}/status");
            let mut peak = 0u64;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                if let Ok(status) = std::fs::read_to_string(&file) {
                    let kb = status
                        .lines()
                        .find_map(|l| l.strip_prefix("VmHWM:"))
                        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
                    peak = peak.max(kb.unwrap_or(0) * 1024);
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            peak
        })
    };
    loop {
        // SAFETY: valid pointers to locals; pid is our child, not reaped elsewhere.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            break;
        }
        assert_eq!(
            std::io::Error::last_os_error().kind(),
            std::io::ErrorKind::Interrupted
        );
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let polled = hwm_thread.join().unwrap();
    let (out, err) = output_thread.join().unwrap();
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "icetrim failed: {err}\n{out}"
    );
    // The polled peak misses at most the last poll interval; never more than `ru_maxrss`.
    let carried = u64::try_from(usage.ru_maxrss).unwrap() * 1024;
    assert!(polled > 0, "VmHWM was read");
    (out, polled.min(carried))
}

pub(super) fn metric(out: &str, name: &str) -> i64 {
    out.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}\t")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in:\n{out}"))
}

/// Gives the table (its one metadata file) the sort order `id DESC`.
fn sort_by_id_descending(dir: &Path) {
    let meta_dir = dir.join("metadata");
    let path = std::fs::read_dir(&meta_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".metadata.json"))
        .unwrap();
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    json["sort-orders"] = serde_json::json!([
        {"order-id": 0, "fields": []},
        {"order-id": 1, "fields": [{"transform": "identity", "source-id": 1,
            "direction": "desc", "null-order": "nulls-last"}]}
    ]);
    json["default-sort-order-id"] = serde_json::json!(1);
    std::fs::write(&path, serde_json::to_vec(&json).unwrap()).unwrap();
}

fn optimize(dir: &Path) -> (String, u64) {
    icetrim(&format!(
        "SET iceberg_compaction_max_memory_bytes = {SETTING}; \
         CREATE TABLE t ENGINE = IcebergLocal('{}'); OPTIMIZE TABLE t",
        dir.display()
    ))
}

/// 16 files of 100,000 rows (about 290 MiB of Parquet, 440 MB decoded) compacted under a 64 MiB
/// setting: peak RSS under setting + baseline, same rows; and a sorted table (6 files of 50,000
/// rows) whose rows cannot be sorted in one buffer: sorted runs spilled and merged into one
/// sorted output file (the target size is 512 MiB), same bound.
///
/// The figure is the child's own high-water mark (`VmHWM`, polled while it runs), not `ru_maxrss`,
/// which after exec also carries this test process's high-water mark. Rows are read afterwards,
/// the inputs from their files (still on disk: compaction deletes nothing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn optimize_stays_under_the_memory_setting_on_inputs_far_larger() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("big");
    let sorted_dir = tmp.path().join("sorted");
    generate(&dir, 16, 100_000);
    generate(&sorted_dir, 6, 50_000);
    sort_by_id_descending(&sorted_dir);
    let before = live_files(&dir).await;
    let sorted_before = live_files(&sorted_dir).await;
    let input: i64 = before.iter().map(|f| f.1).sum();
    assert_eq!(before.len(), 16);
    assert!(
        input as u64 > 4 * SETTING,
        "the input ({input} bytes) is several times the setting"
    );

    let (out, rss) = optimize(&dir);
    eprintln!(
        "OPTIMIZE on {} MiB of Parquet with a {} MiB setting: peak RSS {} MiB",
        input as u64 / MIB,
        SETTING / MIB,
        rss / MIB
    );
    assert_eq!(metric(&out, "rewritten_data_files_count"), 16, "{out}");
    assert!(
        rss < SETTING + BASELINE,
        "peak RSS {rss} bytes is over the setting {SETTING} + baseline {BASELINE}"
    );
    // Sorted: every output file sorted by id descending, several of them (the sort buffer is a
    // share of the setting), the same bound.
    let (sorted_out, sorted_rss) = optimize(&sorted_dir);
    eprintln!("sorted OPTIMIZE: peak RSS {} MiB", sorted_rss / MIB);
    assert_eq!(
        metric(&sorted_out, "rewritten_data_files_count"),
        6,
        "{sorted_out}"
    );
    assert!(
        sorted_rss < SETTING + BASELINE,
        "sorted: peak RSS {sorted_rss} bytes"
    );

    let after = live_files(&dir).await;
    assert!(after.len() < before.len(), "{after:?}");
    let (rows_before, _) = rows(&before);
    assert_eq!(rows_before.len(), 1_600_000);
    let (rows_after, _) = rows(&after);
    assert!(rows_before == rows_after, "rows changed");

    let (rows_before, ascending) = rows(&sorted_before);
    assert!(ascending.iter().all(|s| !s), "inputs are ascending");
    let after = live_files(&sorted_dir).await;
    let (rows_after, sorted_after) = rows(&after);
    // The sort buffer's runs are spilled and merged: one file, as the target size says.
    assert_eq!(after.len(), 1, "one sorted file: {after:?}");
    assert!(
        sorted_after.iter().all(|s| *s),
        "every output file is sorted"
    );
    assert!(rows_before == rows_after, "sorted: rows changed");
}

/// A setting below what one file group needs is refused with a clear error; nothing changes.
#[test]
fn a_setting_too_small_for_one_group_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    generate(&dir, 2, 10);
    let metadata_before: Vec<_> = std::fs::read_dir(dir.join("metadata"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    let out = Command::new(BIN)
        .args([
            "-q",
            &format!(
                "SET iceberg_compaction_max_memory_bytes = 6400; \
                 CREATE TABLE t ENGINE = IcebergLocal('{}'); OPTIMIZE TABLE t",
                dir.display()
            ),
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(36), "{err}");
    assert!(
        err.contains("iceberg_compaction_max_memory_bytes = 6400 is below"),
        "{err}"
    );
    let metadata_after: Vec<_> = std::fs::read_dir(dir.join("metadata"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(metadata_before.len(), metadata_after.len());
}

/// Generates a partitioned v2 table (`identity(part)`, `partitions` values) of `files` files.
fn generate_partitioned(dir: &Path, files: usize, rows: i64, partitions: usize) {
    let out = Command::new(GENERATE)
        .args(["--location", dir.to_str().unwrap(), "--parquet"])
        .args(["--snapshots", &(files / partitions).to_string()])
        .args(["--files-per-snapshot", &partitions.to_string()])
        .args(["--partitions", &partitions.to_string()])
        .args(["--rows-per-file", &rows.to_string(), "--row-bytes", "256"])
        .args(["--mix", "append=1", "--seed", "5"])
        .output()
        .expect("icetrim-generate runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The first and last id of each file (ids read in file order).
fn id_ranges(files: &[(String, i64)]) -> Vec<(String, i64, i64)> {
    files
        .iter()
        .map(|(path, _)| {
            let reader =
                ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(path).unwrap())
                    .unwrap()
                    .build()
                    .unwrap();
            let ids: Vec<i64> = reader
                .flat_map(|b| {
                    let b: RecordBatch = b.unwrap();
                    b.column(0).as_primitive::<Int64Type>().values().to_vec()
                })
                .collect();
            (path.clone(), ids[0], ids[ids.len() - 1])
        })
        .collect()
}

/// The brief's case: a sorted table compacted with the memory setting at its minimum (32 MiB),
/// where the sort buffer holds under a megabyte of rows. Rows are sorted in runs spilled to
/// local disk and merged, so each partition gives about `size / target` files (before: one file
/// per buffer, hundreds), every file sorted, the files of a partition in order one after the
/// other; the rows are the same and peak RSS stays under setting + baseline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sorted_group_larger_than_the_sort_buffer_gives_target_size_files() {
    const SMALL: u64 = 32 * MIB;
    const TARGET: u64 = 8 * MIB;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sorted");
    generate_partitioned(&dir, 12, 25_000, 2);
    sort_by_id_descending(&dir);
    let before = live_files(&dir).await;
    assert_eq!(before.len(), 12);
    let bytes: i64 = before.iter().map(|f| f.1).sum();
    let (out, rss) = icetrim(&format!(
        "SET iceberg_compaction_max_memory_bytes = {SMALL}; \
         CREATE TABLE t ENGINE = IcebergLocal('{}'); \
         ALTER TABLE t EXECUTE rewrite_data_files(target_file_size_bytes = {TARGET}, \
         min_input_files = 2)",
        dir.display()
    ));
    eprintln!(
        "sorted rewrite of {} MiB with a {} MiB setting: peak RSS {} MiB",
        bytes as u64 / MIB,
        SMALL / MIB,
        rss / MIB
    );
    assert_eq!(metric(&out, "rewritten_data_files_count"), 12, "{out}");
    assert!(
        rss < SMALL + BASELINE,
        "peak RSS {rss} bytes is over the setting {SMALL} + baseline {BASELINE}"
    );
    let after = live_files(&dir).await;
    eprintln!(
        "{} output files ({} bytes at a {TARGET}-byte target, 2 partitions)",
        after.len(),
        bytes
    );
    let partitions = 2;
    let bound = (bytes as u64).div_ceil(TARGET) as usize + partitions;
    assert!(
        after.len() <= bound && after.len() >= partitions,
        "{} files for {bytes} bytes at a {TARGET}-byte target (at most {bound}): {out}",
        after.len()
    );
    assert_eq!(metric(&out, "added_data_files_count") as usize, after.len());
    let (rows_before, _) = rows(&before);
    let (rows_after, sorted) = rows(&after);
    assert!(rows_before == rows_after, "rows changed");
    assert!(sorted.iter().all(|s| *s), "every output file is sorted");
    // Within a partition the files follow one another: sorted by their first id (descending),
    // each file's last id is above the next file's first.
    for p in 0..partitions {
        let mut ranges: Vec<(String, i64, i64)> = id_ranges(&after)
            .into_iter()
            .filter(|(path, _, _)| path.contains(&format!("/part={p}/")))
            .collect();
        assert!(!ranges.is_empty(), "partition {p}");
        ranges.sort_by_key(|r| std::cmp::Reverse(r.1));
        for pair in ranges.windows(2) {
            assert!(
                pair[0].2 > pair[1].1,
                "files of partition {p} overlap: {pair:?}"
            );
        }
    }
}
