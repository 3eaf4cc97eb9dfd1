//! What connects `SYSTEM MAINTAIN` to the engine's maintenance log: each run's rows appended as
//! entries (not `EXPLAIN`'s), and the entries a session may read (those of tables it holds some
//! privilege on) for `system.iceberg_maintenance_log` and `system.iceberg_maintenance_metrics`.

use super::*;
use crate::engine::access::GrantObject;
use crate::engine::maintain::{MaintainRow, MaintainRun};
use crate::engine::maintain_log::LogEntry;

impl Session {
    /// Appends the rows of `run` to the log, one run id for them all. An error names the log
    /// file that could not be written (the entries stay in memory).
    pub(super) fn log_maintenance(&self, run: &MaintainRun, rows: &[MaintainRow]) -> Result<()> {
        if run.explain || rows.is_empty() {
            return Ok(());
        }
        // The run ended when its last procedure did (the clock may stand still: tests, replays).
        let ended = rows.iter().map(|r| r.ended_ms).max().unwrap_or(0);
        let now = self.shared.runtime.clock.now_ms().max(ended);
        let run_id = uuid::Uuid::new_v4().to_string();
        let entries = rows
            .iter()
            .map(|row| LogEntry::of(row, &run_id, run.dry_run, now))
            .collect();
        self.shared.maintenance_log.append(entries).map_err(|e| {
            Error::new(
                e.kind(),
                format!(
                    "SYSTEM MAINTAIN ran (every commit stands) but its log could not be \
                     written: {}",
                    e.message()
                ),
            )
        })
    }

    /// The log's entries about tables this session's user holds some privilege on (a host's
    /// context reads them through this; a session's own query through its table source).
    pub(crate) fn visible_log_entries(&self) -> Vec<LogEntry> {
        let authorizer = self.shared.access.authorizer();
        self.shared
            .maintenance_log
            .entries()
            .into_iter()
            .filter(|e| {
                authorizer.allows_any(&self.user, &GrantObject::table(&e.database, &e.table))
            })
            .collect()
    }
}

impl Engine {
    /// Every row the maintenance log holds, oldest first, whoever ran it (a session's
    /// `system.iceberg_maintenance_log` shows only the tables its user sees).
    pub fn maintenance_log(&self) -> Vec<LogEntry> {
        self.shared.maintenance_log.entries()
    }
}
