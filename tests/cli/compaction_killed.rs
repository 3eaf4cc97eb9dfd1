//! A compaction killed with SIGKILL while it writes an output file: object_store's local upload
//! file (`<name>#<digits>`, renamed to `<name>` only when the upload completes) stays behind,
//! nothing was committed, and `remove_orphan_files` finds the file (EXPLAIN reason
//! `unfinished_upload`) and deletes it; the table then compacts as before.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::compaction_memory::{generate, live_files, metric};

const BIN: &str = env!("CARGO_BIN_EXE_icetrim");

/// How long the compaction may take to start writing before the test gives up.
const START_LIMIT: Duration = Duration::from_secs(300);

/// Every regular file under `dir` named `<name>#<digits>`.
pub(super) fn unfinished_uploads(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => folders.push(path),
                Ok(t) if t.is_file() => {
                    let name = entry.file_name().to_string_lossy().to_string();
                    let digits = name.rsplit_once('#').map(|(_, d)| d);
                    if digits
                        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
                    {
                        found.push(path);
                    }
                }
                _ => {}
            }
        }
    }
    found.sort();
    found
}

/// Runs `sql` in a child `icetrim` (TabSeparated), expecting success: its standard output.
fn icetrim(sql: &str) -> String {
    let out = Command::new(BIN)
        .args(["--format", "TabSeparated", "-q", sql])
        .output()
        .expect("icetrim runs");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{sql}: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_compaction_leaves_uploads_that_remove_orphan_files_finds_and_deletes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    generate(&dir, 8, 50_000);
    let before = live_files(&dir).await;
    assert_eq!(before.len(), 8);
    let table = format!("CREATE TABLE t ENGINE = IcebergLocal('{}');", dir.display());

    // Kill the compaction (SIGKILL) as soon as it writes an output file.
    let mut child = Command::new(BIN)
        .args(["-q", &format!("{table} OPTIMIZE TABLE t")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("icetrim starts");
    let started = Instant::now();
    let seen = loop {
        let found = unfinished_uploads(&dir);
        if !found.is_empty() {
            break found;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the compaction ended ({status}) before it was seen writing");
        }
        assert!(
            started.elapsed() < START_LIMIT,
            "no upload after {START_LIMIT:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    child.kill().expect("SIGKILL");
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status}");
    eprintln!("killed after {:?}, writing {seen:?}", started.elapsed());
    let left = unfinished_uploads(&dir);
    assert!(!left.is_empty(), "the killed upload stays: {seen:?}");
    assert_eq!(live_files(&dir).await, before, "nothing was committed");

    // `older_than` compares whole seconds: wait until the files are older than "now".
    std::thread::sleep(Duration::from_millis(2100));
    let now = chrono::Utc::now().format("%Y-%m-%d %H:%M:%S");
    let setup = format!("SET session_timezone = 'UTC'; {table}");
    let call = format!("ALTER TABLE t EXECUTE remove_orphan_files(older_than = '{now}')");
    // EXPLAIN: item, path, category, reason, files, size_bytes, last_modified.
    let explain = icetrim(&format!("{setup} EXPLAIN {call}"));
    let mut unfinished: Vec<PathBuf> = explain
        .lines()
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .filter(|row| row.get(3) == Some(&"unfinished_upload"))
        .map(|row| {
            assert_eq!((row[0], row[2]), ("orphan", "data"), "{row:?}");
            PathBuf::from(row[1])
        })
        .collect();
    unfinished.sort();
    assert_eq!(unfinished, left, "{explain}");

    let removed = icetrim(&format!("{setup} {call}"));
    let deleted = metric(&removed, "deleted_data_files_count");
    assert!(deleted >= left.len() as i64, "{removed}");
    assert_eq!(metric(&removed, "failed_deletions_count"), 0, "{removed}");
    assert!(
        unfinished_uploads(&dir).is_empty(),
        "{:?}",
        unfinished_uploads(&dir)
    );
    let after = live_files(&dir).await;
    assert_eq!(after, before, "the table's files are untouched");
    assert!(after.iter().all(|(p, _)| Path::new(p).exists()));

    // The table compacts as if nothing had happened.
    let optimized = icetrim(&format!("{table} OPTIMIZE TABLE t"));
    assert_eq!(
        metric(&optimized, "rewritten_data_files_count"),
        8,
        "{optimized}"
    );
    assert!(unfinished_uploads(&dir).is_empty());
}
