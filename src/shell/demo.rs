//! `icetrim --demo`: the main job on an embedded default. Builds a demo table in a fresh temporary
//! folder (a history of appends, a delete, an overwrite, a compaction, a branch with its own
//! retention, a tag, a staged snapshot, a statistics file and a few old stray files), then runs the
//! maintenance SQL a user would run on it (expiry, compaction, manifest rewrite, a tag, orphan
//! removal), printing each statement and its rows. The data files are real Parquet with rows, so
//! `OPTIMIZE TABLE` rewrites them. It ends with what to try next on the same table. Piped to a
//! file (standard output not a terminal) its default format is TabSeparatedWithNames: the column
//! names stay with the rows, and a file gets no frame-drawing characters to grep through.

use std::path::PathBuf;
use std::sync::Arc;

use super::output::{Output, OutputError};
use crate::clock::{Clock, SystemClock};
use crate::engine::Engine;
use crate::error::{Error, ErrorKind};
use crate::format::OutputFormat;
use crate::generate::demo_table;
use crate::io::FileIO;

/// The session the demo runs, in order. `{TABLE}` is the demo table's folder.
pub const DEMO_SQL: &[&str] = &[
    "CREATE TABLE events ENGINE = IcebergLocal('{TABLE}')",
    "SHOW TABLES",
    "SELECT name, type, snapshot_id, min_snapshots_to_keep, max_snapshot_age_ms, max_ref_age_ms FROM system.iceberg_refs",
    "SELECT snapshot_id, timestamp, operation, is_current_ancestor, refs FROM system.iceberg_snapshots ORDER BY timestamp",
    "EXPLAIN ALTER TABLE events EXECUTE expire_snapshots(retention_period = '3d', retain_last = 5)",
    "ALTER TABLE events EXECUTE expire_snapshots(retention_period = '3d', retain_last = 5, dry_run = 1)",
    "ALTER TABLE events EXECUTE expire_snapshots(retention_period = '3d', retain_last = 5)",
    "SELECT snapshot_id, timestamp, operation, refs FROM system.iceberg_snapshots ORDER BY timestamp",
    "EXPLAIN OPTIMIZE TABLE events",
    "OPTIMIZE TABLE events",
    "ALTER TABLE events EXECUTE rewrite_manifests()",
    "ALTER TABLE events CREATE TAG compacted",
    "SELECT name, type, snapshot_id FROM system.iceberg_refs",
    "EXPLAIN ALTER TABLE events EXECUTE remove_orphan_files()",
    "ALTER TABLE events EXECUTE remove_orphan_files()",
    "ALTER TABLE events EXECUTE remove_orphan_files()",
];

/// What the demo suggests trying next; `{TABLE}` is the demo table's folder.
pub const NEXT_STEPS: &[&str] = &[
    "icetrim -q \"CREATE TABLE events ENGINE = IcebergLocal('{TABLE}'); SELECT snapshot_id, operation, refs FROM system.iceberg_snapshots\"",
    "icetrim -q \"CREATE TABLE events ENGINE = IcebergLocal('{TABLE}'); EXPLAIN ALTER TABLE events EXECUTE expire_snapshots(retain_last = 1, retention_period = '0s')\"",
    "icetrim --path ~/.icetrim -q \"CREATE TABLE events ENGINE = IcebergLocal('{TABLE}')\"   then: icetrim --path ~/.icetrim   (the shell; type help)",
];

/// Why the demo stopped.
#[derive(Debug)]
pub enum DemoFailure {
    Error(Error),
    Output(OutputError),
}

impl From<Error> for DemoFailure {
    fn from(e: Error) -> Self {
        DemoFailure::Error(e)
    }
}

impl From<OutputError> for DemoFailure {
    fn from(e: OutputError) -> Self {
        DemoFailure::Output(e)
    }
}

fn demo_dir(now_ms: i64) -> Result<PathBuf, Error> {
    let dir = std::env::temp_dir().join(format!("icetrim-demo-{}-{now_ms}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| {
        Error::new(
            ErrorKind::StorageError,
            format!("Cannot create demo folder {}: {e}", dir.display()),
        )
    })?;
    Ok(dir)
}

/// Build the demo table and run [`DEMO_SQL`] on it, printing in `format`.
pub async fn run(out: &mut Output, format: OutputFormat) -> Result<(), DemoFailure> {
    let clock = Arc::new(SystemClock);
    let now_ms = clock.now_ms();
    let table = demo_dir(now_ms)?.join("events");
    let location = table.display().to_string();
    let facts = demo_table(&FileIO::local(), &location, now_ms).await?;
    out.print(&format!(
        "-- icetrim demo: table {location}\n-- {} snapshots, branch {}, tag {}, {} staged, {} stray file(s)\n\n",
        facts.generated.snapshots,
        facts.branch,
        facts.tag,
        facts.staged.len(),
        facts.orphans.len()
    ))?;
    let engine = Engine::builder().clock(clock).build()?;
    let mut session = engine.session();
    for template in DEMO_SQL {
        let sql = template.replace("{TABLE}", &location);
        out.print(&format!("icetrim :) {sql};\n\n"))?;
        let started = std::time::Instant::now();
        for result in session.execute(&sql).await? {
            out.print_result(
                &result,
                result.format.unwrap_or(format),
                started.elapsed().as_secs_f64(),
                super::output::layout(session.settings()),
            )?;
        }
        out.print("\n")?;
    }
    out.print(&format!(
        "-- The demo table stays in {location}; delete it when done.\n-- Try next:\n"
    ))?;
    for step in NEXT_STEPS {
        out.print(&format!("--   {}\n", step.replace("{TABLE}", &location)))?;
    }
    Ok(())
}
