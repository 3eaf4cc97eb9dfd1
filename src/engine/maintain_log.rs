//! The maintenance log: one [`LogEntry`] per table and procedure of every `SYSTEM MAINTAIN` run
//! (dry runs too, marked; `EXPLAIN` is not a run), kept by the engine ([`MaintenanceLog`]) and
//! read through `system.iceberg_maintenance_log` and `system.iceberg_maintenance_metrics`.
//!
//! With a data path (`--path`) the log is persisted as JSON lines in [`LOG_FILE`] under it,
//! appended after every run and reloaded when the engine opens; the newest [`LOG_CAPACITY`]
//! entries are kept (the file is rewritten, to a temporary file renamed over it, once it holds a
//! quarter more). A line that cannot be read (a write cut short by a crash) is skipped. Besides,
//! an embedder or the shell may name a file every entry is also appended to as one JSON line, for
//! log shippers ([`LogOutputs::shipper_file`]), and a file the metrics are written to after every
//! run, to a temporary file renamed over it, for node_exporter's textfile collector
//! ([`LogOutputs::metrics_file`]).
//!
//! Every text an entry holds went through [`mask_urls_in`]: no URL user, password, query string
//! (a SAS token, a presigned query) or fragment reaches the log, its files or the metrics' labels.

use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::maintain::MaintainRow;
use super::maintain_metrics;
use super::registry::io_error;
use crate::error::{Error, Result};
use crate::io::mask_urls_in;

/// The file of the persisted log under the data path.
pub const LOG_FILE: &str = "maintenance_log.jsonl";

/// How many entries the log keeps (the newest).
pub const LOG_CAPACITY: usize = 10_000;

/// One procedure on one table in one `SYSTEM MAINTAIN` run, as the log keeps it (and as one JSON
/// line of its files: times in milliseconds since the epoch, `metrics` an object).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogEntry {
    /// When the run's statement ended.
    pub event_time_ms: i64,
    /// The run (one per statement).
    pub run_id: String,
    pub dry_run: bool,
    pub database: String,
    pub table: String,
    pub procedure: String,
    /// As the statement answered: `ok`, `failed`, `skipped`, `disabled`, `not due`, `due` (dry).
    pub status: String,
    pub reason: String,
    pub start_time_ms: i64,
    pub end_time_ms: i64,
    /// The procedure's non-zero metrics, in the procedure's order.
    #[serde(with = "metrics_object")]
    pub metrics: Vec<(String, i64)>,
    /// Bytes the procedure's deletes freed, as far as known (`expire_snapshots`: the sizes the
    /// metadata records and the manifest lists' as read; `remove_orphan_files`: the listed
    /// sizes). `None`: a dry run, nothing ran, or a procedure that deletes nothing.
    pub bytes_freed: Option<i64>,
    /// The ClickHouse name of a failure's code (`CANNOT_OPEN_FILE`).
    pub error_code: Option<String>,
    /// A failure's message.
    pub error: String,
}

impl LogEntry {
    /// The entry of `row` in run `run_id` that ended at `event_time_ms` (a row nothing timed, a
    /// table that could not be opened, starts and ends then).
    pub fn of(row: &MaintainRow, run_id: &str, dry_run: bool, event_time_ms: i64) -> LogEntry {
        let (start, end) = match row.started_ms {
            0 => (event_time_ms, event_time_ms),
            started => (started, row.ended_ms.max(started)),
        };
        LogEntry {
            event_time_ms,
            run_id: run_id.to_string(),
            dry_run,
            database: row.database.clone(),
            table: row.table.clone(),
            procedure: row.procedure.clone(),
            status: row.status.clone(),
            reason: mask_urls_in(&row.reason),
            start_time_ms: start,
            end_time_ms: end,
            metrics: row.metrics.clone(),
            bytes_freed: row.freed_bytes,
            error_code: row.error.map(|kind| kind.name().to_string()),
            error: match row.error {
                Some(_) => mask_urls_in(&row.detail),
                None => String::new(),
            },
        }
    }

    pub fn duration_ms(&self) -> i64 {
        self.end_time_ms.saturating_sub(self.start_time_ms)
    }

    pub fn failed(&self) -> bool {
        self.error_code.is_some()
    }
}

/// `metrics` as a JSON object (`{"name": value, …}`), in order.
mod metrics_object {
    use serde::de::{Deserializer, MapAccess, Visitor};
    use serde::ser::{SerializeMap, Serializer};

    pub fn serialize<S: Serializer>(metrics: &[(String, i64)], s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(metrics.len()))?;
        for (name, value) in metrics {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, i64)>, D::Error> {
        struct Pairs;
        impl<'de> Visitor<'de> for Pairs {
            type Value = Vec<(String, i64)>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object of integer metrics")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut out = Vec::new();
                while let Some(entry) = map.next_entry::<String, i64>()? {
                    out.push(entry);
                }
                Ok(out)
            }
        }
        d.deserialize_map(Pairs)
    }
}

/// Files besides the data path's log that every run writes.
#[derive(Debug, Clone, Default)]
pub struct LogOutputs {
    /// Every entry appended as one JSON line (for log shippers).
    pub shipper_file: Option<PathBuf>,
    /// The metrics' exposition text, rewritten after every run (`<file>.tmp`, then renamed).
    pub metrics_file: Option<PathBuf>,
}

/// The engine's maintenance log.
#[derive(Debug)]
pub struct MaintenanceLog {
    state: Mutex<State>,
    capacity: usize,
    /// The persisted log (under the data path), if any.
    file: Option<PathBuf>,
    outputs: LogOutputs,
}

#[derive(Debug, Default)]
struct State {
    entries: VecDeque<LogEntry>,
    /// Lines in the persisted file (entries dropped from memory may still be there).
    lines_in_file: usize,
}

impl MaintenanceLog {
    /// A log in memory only.
    pub fn in_memory(capacity: usize, outputs: LogOutputs) -> MaintenanceLog {
        MaintenanceLog {
            state: Mutex::new(State::default()),
            capacity: capacity.max(1),
            file: None,
            outputs,
        }
    }

    /// The log persisted in `dir`/[`LOG_FILE`], with what it holds.
    pub fn open(dir: &Path, capacity: usize, outputs: LogOutputs) -> Result<MaintenanceLog> {
        let file = dir.join(LOG_FILE);
        let mut state = State::default();
        match std::fs::read_to_string(&file) {
            Ok(text) => {
                for line in text.lines().filter(|l| !l.trim().is_empty()) {
                    state.lines_in_file += 1;
                    // A line cut short by a crash is skipped: the log is a record, not state.
                    if let Ok(entry) = serde_json::from_str::<LogEntry>(line) {
                        state.entries.push_back(entry);
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_error("read", &file, e)),
        }
        let log = MaintenanceLog {
            capacity: capacity.max(1),
            file: Some(file),
            outputs,
            state: Mutex::new(State::default()),
        };
        trim(&mut state.entries, log.capacity);
        *log.lock() = state;
        Ok(log)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic elsewhere while holding the lock leaves whole entries: go on with them.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The entries, oldest first.
    pub fn entries(&self) -> Vec<LogEntry> {
        self.lock().entries.iter().cloned().collect()
    }

    /// Appends `entries` (one run): in memory, to the persisted log, to the shipper file, then
    /// rewrites the metrics file. An error names the file that could not be written; the
    /// entries are kept in memory all the same.
    pub fn append(&self, entries: Vec<LogEntry>) -> Result<()> {
        let lines = json_lines(&entries)?;
        let mut state = self.lock();
        state.entries.extend(entries);
        trim(&mut state.entries, self.capacity);
        let mut result = Ok(());
        if let Some(file) = &self.file {
            result = result.and(self.persist(&mut state, file, &lines));
        }
        if let Some(file) = &self.outputs.shipper_file {
            result = result.and(append_private(file, &lines));
        }
        if let Some(file) = &self.outputs.metrics_file {
            let all: Vec<LogEntry> = state.entries.iter().cloned().collect();
            result = result.and(write_replacing(file, &maintain_metrics::exposition(&all)));
        }
        result
    }

    fn persist(&self, state: &mut State, file: &Path, lines: &str) -> Result<()> {
        let added = lines.lines().count();
        if state.lines_in_file + added > self.capacity + self.capacity / 4 {
            let kept: Vec<LogEntry> = state.entries.iter().cloned().collect();
            write_replacing(file, &json_lines(&kept)?)?;
            state.lines_in_file = kept.len();
            return Ok(());
        }
        append_private(file, lines)?;
        state.lines_in_file += added;
        Ok(())
    }
}

/// The engine's log: persisted under `data_path` when there is one.
pub fn open(data_path: Option<&Path>, outputs: LogOutputs) -> Result<MaintenanceLog> {
    match data_path {
        Some(dir) => MaintenanceLog::open(dir, LOG_CAPACITY, outputs),
        None => Ok(MaintenanceLog::in_memory(LOG_CAPACITY, outputs)),
    }
}

fn trim(entries: &mut VecDeque<LogEntry>, capacity: usize) {
    while entries.len() > capacity {
        entries.pop_front();
    }
}

fn json_lines(entries: &[LogEntry]) -> Result<String> {
    let mut out = String::new();
    for entry in entries {
        let line = serde_json::to_string(entry).map_err(|e| {
            Error::logical(format!("Cannot serialize a maintenance log entry: {e}"))
        })?;
        out.push_str(&line);
        out.push('\n');
    }
    Ok(out)
}

/// Appends `text` to `file` (created with mode 0600 where there are modes).
fn append_private(file: &Path, text: &str) -> Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.append(true).create(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut f = options.open(file).map_err(|e| io_error("open", file, e))?;
    f.write_all(text.as_bytes())
        .map_err(|e| io_error("write", file, e))
}

/// Writes `text` to `<file>.tmp` and renames it over `file`: a reader sees the old text or the
/// new, never a part.
fn write_replacing(file: &Path, text: &str) -> Result<()> {
    let mut tmp = file.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written = options.open(&tmp).and_then(|mut f| {
        f.write_all(text.as_bytes())?;
        f.sync_all()
    });
    written.map_err(|e| io_error("write", &tmp, e))?;
    std::fs::rename(&tmp, file).map_err(|e| io_error("rename", file, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn entry(run: &str, table: &str, status: &str) -> LogEntry {
        LogEntry {
            event_time_ms: 1_000,
            run_id: run.into(),
            dry_run: false,
            database: "default".into(),
            table: table.into(),
            procedure: "expire_snapshots".into(),
            status: status.into(),
            reason: String::new(),
            start_time_ms: 900,
            end_time_ms: 950,
            metrics: vec![("deleted_data_files_count".into(), 2), ("a".into(), 1)],
            bytes_freed: None,
            error_code: None,
            error: String::new(),
        }
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("icetrim-log-{name}-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn an_entry_round_trips_as_one_json_line_with_metrics_in_order() {
        let e = entry("r1", "t", "ok");
        let line = json_lines(std::slice::from_ref(&e)).unwrap();
        assert_eq!(line.lines().count(), 1);
        assert!(
            line.contains(r#""metrics":{"deleted_data_files_count":2,"a":1}"#),
            "{line}"
        );
        let back: LogEntry = serde_json::from_str(line.trim()).unwrap();
        assert_eq!(back, e);
    }

    #[test]
    fn the_persisted_log_keeps_the_newest_entries_across_reopens() {
        let dir = temp_dir("bounded");
        let capacity = 4;
        for run in 0..7 {
            let log = MaintenanceLog::open(&dir, capacity, LogOutputs::default()).unwrap();
            log.append(vec![entry(&format!("r{run}"), "t", "ok")])
                .unwrap();
        }
        let log = MaintenanceLog::open(&dir, capacity, LogOutputs::default()).unwrap();
        let runs: Vec<String> = log.entries().into_iter().map(|e| e.run_id).collect();
        assert_eq!(runs, ["r3", "r4", "r5", "r6"]);
        // The file never grows past a quarter over the capacity.
        let lines = std::fs::read_to_string(dir.join(LOG_FILE))
            .unwrap()
            .lines()
            .count();
        assert!(lines <= capacity + capacity / 4, "{lines} lines");
        assert!(!dir.join(format!("{LOG_FILE}.tmp")).exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_torn_line_is_skipped_on_reload() {
        let dir = temp_dir("torn");
        let log = MaintenanceLog::open(&dir, 10, LogOutputs::default()).unwrap();
        log.append(vec![entry("r1", "t", "ok")]).unwrap();
        append_private(&dir.join(LOG_FILE), "{\"event_time_ms\":12,\"run").unwrap();
        let reopened = MaintenanceLog::open(&dir, 10, LogOutputs::default()).unwrap();
        assert_eq!(reopened.entries(), vec![entry("r1", "t", "ok")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn shipper_and_metrics_files_are_written_after_each_append() {
        let dir = temp_dir("outputs");
        let outputs = LogOutputs {
            shipper_file: Some(dir.join("ship.jsonl")),
            metrics_file: Some(dir.join("icetrim.prom")),
        };
        let log = MaintenanceLog::in_memory(10, outputs);
        log.append(vec![entry("r1", "t", "ok")]).unwrap();
        log.append(vec![entry("r2", "u", "ok")]).unwrap();
        let shipped = std::fs::read_to_string(dir.join("ship.jsonl")).unwrap();
        assert_eq!(shipped.lines().count(), 2);
        let metrics = std::fs::read_to_string(dir.join("icetrim.prom")).unwrap();
        assert!(
            metrics.contains("icetrim_maintain_runs{dry_run=\"0\",status=\"ok\"} 2\n"),
            "{metrics}"
        );
        assert!(!dir.join("icetrim.prom.tmp").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_that_cannot_be_written_is_an_error_naming_it_and_the_entries_stay() {
        let dir = temp_dir("unwritable");
        let missing = dir.join("no_such_folder").join("icetrim.prom");
        let outputs = LogOutputs {
            metrics_file: Some(missing.clone()),
            ..Default::default()
        };
        let log = MaintenanceLog::in_memory(10, outputs);
        let error = log.append(vec![entry("r1", "t", "ok")]).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::FileDoesntExist);
        assert!(error.message().contains("no_such_folder"), "{error}");
        assert_eq!(log.entries().len(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failed_row_keeps_its_code_name_and_loses_url_secrets() {
        let row = MaintainRow {
            database: "lake".into(),
            table: "ns.t".into(),
            procedure: "open".into(),
            status: "failed".into(),
            reason: String::new(),
            detail: "GET https://acct.blob.core.windows.net/c/t?sv=2024&sig=SECRET failed; \
                     catalog http://user:pw@rest:8181/v1?token=T"
                .into(),
            error: Some(ErrorKind::CannotOpenFile),
            ..Default::default()
        };
        let e = LogEntry::of(&row, "run", false, 5_000);
        assert_eq!(e.error_code.as_deref(), Some("CANNOT_OPEN_FILE"));
        assert_eq!((e.start_time_ms, e.end_time_ms), (5_000, 5_000));
        for secret in ["SECRET", "sig=", "pw@", "token=T"] {
            assert!(!e.error.contains(secret), "{secret} in {}", e.error);
        }
        assert!(
            e.error
                .contains("https://acct.blob.core.windows.net/c/t?[HIDDEN]")
        );
    }
}
