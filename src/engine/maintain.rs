//! `SYSTEM MAINTAIN` on one opened table: the table's effective policy
//! ([`crate::maintain::upkeep`]), then, procedure by procedure in the safe order (compact →
//! rewrite manifests → expire → orphans), the policy's gate, the decision (a dry run of the
//! procedure through the same executor SQL uses: due when it finds anything to do), and for a
//! real run the procedure itself ([`run_procedure_on`]). Before the first procedure a real run
//! finds due, it takes the table's maintenance lease ([`super::maintain_lease`]): a run that
//! finds nothing due writes nothing at all; a table another maintainer holds ends with one
//! `skipped` `lease` row, and a run whose lease was lost stops before its next procedure.
//! Cancellation stops between procedures (every commit made so far stands): the procedure that
//! was running and those that did not start get `cancelled` rows. A procedure that fails ends
//! that table's run (its later procedures are skipped); the caller goes on with the next table.

use std::collections::BTreeMap;

use super::catalog_db::scrub;
use super::maintain_lease::{self, LeaseTaken};
use super::procedures::{check_gates, run_procedure_on};
use super::registry::DatabaseDef;
use super::result::QueryResult;
use crate::catalog::OwnMaintenance;
use crate::error::{Error, ErrorKind, Result};
use crate::format::{Column, Value};
use crate::maintain::expire::retention::table_retention;
use crate::maintain::target::{MaintenanceTarget, TableSource};
use crate::maintain::upkeep::{
    self, Gate, KNOBS, ORPHANS_MIN_OLDER_THAN_MS, PolicyLayers, UpkeepPolicy, UpkeepProcedure,
};
use crate::plan::{
    CompactOptions, ExpireOptions, OrphanOptions, ProcedureCall, RewriteManifestsOptions,
};
use crate::progress::{CancelToken, Progress, cancelled_error};
use crate::settings::{MAINTAIN_MAX_PARALLEL_TABLES, Settings};

/// The settings a `SYSTEM MAINTAIN` statement takes besides the `iceberg_maintain_*` knobs.
pub const DRY_RUN: &str = "dry_run";

/// How a `SYSTEM MAINTAIN` runs, from its `SETTINGS` (checked by [`MaintainRun::from_settings`]).
#[derive(Debug, Clone, Default)]
pub struct MaintainRun {
    /// The statement's `iceberg_maintain_*` values, as text.
    pub statement: BTreeMap<String, String>,
    /// The session's changed `iceberg_maintain_*` values, as text.
    pub session: BTreeMap<String, String>,
    pub dry_run: bool,
    pub explain: bool,
    /// Tables maintained at once (the statement's setting, else the session's; at least 1).
    pub max_parallel_tables: u64,
    /// Once cancelled, the run stops before its next procedure (the one running finishes): how
    /// `icetrim maintain` stops on SIGTERM.
    pub stop: Option<CancelToken>,
}

impl MaintainRun {
    /// The run of a statement with `settings` (`name`, value as text) in a session with
    /// `session_settings`: an unknown name is `UNKNOWN_SETTING`, a bad value or an orphan
    /// threshold under 24 hours is `BAD_ARGUMENTS`, before any table is touched.
    pub fn from_settings(
        settings: &[(String, String)],
        session_settings: &Settings,
        explain: bool,
    ) -> Result<MaintainRun> {
        let mut run = MaintainRun {
            explain,
            max_parallel_tables: session_settings.maintain_max_parallel_tables(),
            ..Default::default()
        };
        for (name, text) in settings {
            if name == DRY_RUN {
                run.dry_run = upkeep::parse_value(upkeep::KnobKind::Bool, name, text)? != 0;
                continue;
            }
            if name == MAINTAIN_MAX_PARALLEL_TABLES {
                let n = upkeep::parse_value(upkeep::KnobKind::UInt, name, text)?;
                if n == 0 {
                    return Err(Error::bad_arguments(format!(
                        "{MAINTAIN_MAX_PARALLEL_TABLES} must be at least 1"
                    )));
                }
                run.max_parallel_tables = n;
                continue;
            }
            let Some(knob) = upkeep::knob_of_setting(name) else {
                return Err(Error::new(
                    ErrorKind::UnknownSetting,
                    format!(
                        "Unknown setting '{name}' for SYSTEM MAINTAIN: it takes {DRY_RUN} and \
                         the iceberg_maintain_* settings"
                    ),
                ));
            };
            upkeep::parse_value(knob.kind, name, text)?;
            run.statement.insert(name.clone(), text.clone());
        }
        for knob in KNOBS {
            let text = session_settings.get_text(knob.setting);
            if let Some(text) = text
                && text != knob.default.to_string()
            {
                run.session.insert(knob.setting.to_string(), text);
            }
        }
        // The statement's own threshold is refused before anything runs.
        let named = run.statement.get(upkeep::ORPHANS_OLDER_THAN_MS.setting);
        if let Some(ms) = named.and_then(|t| t.trim().parse::<i64>().ok())
            && ms < ORPHANS_MIN_OLDER_THAN_MS
        {
            upkeep::effective_upkeep(&PolicyLayers {
                statement: Some(&run.statement),
                session: Some(&run.session),
                properties: Some(&orphans_on()),
                database: None,
            })?;
        }
        Ok(run)
    }
}

fn orphans_on() -> BTreeMap<String, String> {
    BTreeMap::from([(
        upkeep::ORPHANS_ENABLED.property.to_string(),
        "1".to_string(),
    )])
}

/// One table to maintain, opened.
pub struct TableToMaintain {
    /// The database as the user names it (`default` for a path table of the default database).
    pub database: String,
    /// The table as the user names it.
    pub table: String,
    pub target: MaintenanceTarget,
    /// The catalog database the table is in (its settings are a policy layer; its secrets are
    /// scrubbed from errors).
    pub catalog_database: Option<DatabaseDef>,
}

/// One row of the answer: a procedure on a table.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MaintainRow {
    pub database: String,
    pub table: String,
    pub procedure: String,
    /// EXPLAIN: `due`, `not due`, `skipped`, `disabled`; a run: `ok`, `failed`, `skipped`,
    /// `disabled`, `not due` (a dry run: `due` for what a run would do).
    pub status: String,
    /// Why, or the procedure's non-zero metrics.
    pub reason: String,
    /// EXPLAIN: the effective knobs and their sources; a run: the error text of a failure.
    pub detail: String,
    /// A failure's kind.
    pub error: Option<ErrorKind>,
    /// When the procedure's decision started and when its run (or the decision alone) ended, in
    /// milliseconds since the epoch: the statement's "now" plus the time elapsed since the
    /// table's maintenance began (equal for a row nothing ran for).
    pub started_ms: i64,
    pub ended_ms: i64,
    /// The procedure's non-zero metrics as numbers (`reason` shows them as text): what a run did
    /// (`ok`) or what a dry run found due (`due`); empty otherwise.
    pub metrics: Vec<(String, i64)>,
    /// What a run's deletes freed, in bytes, as far as the procedure knows (`expire_snapshots`:
    /// the sizes the metadata records; `remove_orphan_files`: the listed sizes); `None` when
    /// nothing ran, for a dry run, and for procedures that delete nothing.
    pub freed_bytes: Option<i64>,
}

impl MaintainRow {
    pub fn failed(&self) -> bool {
        self.error.is_some()
    }

    /// A procedure a cancellation stopped or kept from starting.
    pub fn cancelled(&self) -> bool {
        self.status == CANCELLED
    }
}

/// The rows of `table`'s maintenance under `run`. A table's failure is a `failed` row; a
/// cancellation ends it with `cancelled` rows for the procedures that did not run (every
/// commit so far stands).
pub async fn maintain_table(
    table: TableToMaintain,
    run: &MaintainRun,
    progress: &Progress,
) -> Vec<MaintainRow> {
    let whole_table = table
        .catalog_database
        .as_ref()
        .and_then(|def| upkeep::catalog_maintainer(&def.args, def.settings.get("warehouse")));
    let own = match (&table.target.source, whole_table) {
        (TableSource::Catalog(t), None) => t.catalog.own_maintenance(&t.ident).await,
        _ => Vec::new(),
    };
    let clock = Stopwatch::new(table.target.now_ms);
    // A real run decides each procedure by a dry run, then runs it: both (and the procedures
    // after) read each manifest list and manifest once. EXPLAIN and dry runs keep no cache.
    let table = if run.explain || run.dry_run {
        table
    } else {
        TableToMaintain {
            target: table.target.with_table_cache(),
            ..table
        }
    };
    let (policy, retention) = match policy_of(&table, run).await {
        Ok(policy) => policy,
        Err(e) => {
            let failed = failure_row(&table, "policy", String::new(), &e);
            return vec![clock.stamp(failed, clock.base_ms)];
        }
    };
    let mut runner = TableRunner {
        table: &table,
        run,
        progress,
        clock,
        policy,
        retention,
        maintained_by: (whole_table, own),
        lease: LeaseTaken::NotNeeded,
        halted: None,
        rows: Vec::new(),
    };
    for procedure in UpkeepProcedure::ORDER {
        if !runner.step(procedure).await {
            break;
        }
    }
    // Released after a failure or a cancellation too: the next run need not wait for it.
    maintain_lease::give_back(runner.lease).await;
    runner.rows
}

const NOT_DUE: &str = "not due";
/// The status of a procedure a cancellation stopped (or kept from starting).
pub const CANCELLED: &str = "cancelled";

/// One table's run in progress: its policy, its lease (taken before the first procedure that
/// changes the table) and the rows so far.
struct TableRunner<'a> {
    table: &'a TableToMaintain,
    run: &'a MaintainRun,
    progress: &'a Progress,
    clock: Stopwatch,
    policy: UpkeepPolicy,
    /// Expiry's retention, as EXPLAIN shows it.
    retention: String,
    /// A catalog that maintains the whole table, and the catalog's own maintenance of it.
    maintained_by: (Option<&'static str>, Vec<OwnMaintenance>),
    lease: LeaseTaken,
    /// Once set, every later procedure gets this `(status, reason)` row without running.
    halted: Option<(&'static str, String)>,
    rows: Vec<MaintainRow>,
}

impl TableRunner<'_> {
    /// A row of this table.
    fn row(&self, procedure: &str, status: &str, reason: String, detail: String) -> MaintainRow {
        MaintainRow {
            database: self.table.database.clone(),
            table: self.table.table.clone(),
            procedure: procedure.to_string(),
            status: status.to_string(),
            reason,
            detail,
            ..Default::default()
        }
    }

    fn push(&mut self, row: MaintainRow, started_ms: i64) {
        let row = self.clock.stamp(row, started_ms);
        self.rows.push(row);
    }

    /// Decide and (unless explaining or dry) run `procedure`; `false` when the table's run ends
    /// here (its lease is another maintainer's, or could not be taken).
    async fn step(&mut self, procedure: UpkeepProcedure) -> bool {
        let started = self.clock.now_ms();
        let name = procedure.name();
        // Between procedures: every commit so far stands, the next one does not start.
        if self.halted.is_none() && stop_if_cancelled(self.progress, self.run).is_err() {
            self.halted = Some((CANCELLED, cancelled_reason(false)));
        }
        if self.halted.is_none() {
            let lost = maintain_lease::lost(&self.lease);
            self.halted = lost.map(|reason| ("skipped", reason));
        }
        if let Some((status, reason)) = self.halted.clone() {
            let row = self.row(name, status, reason, String::new());
            self.push(row, started);
            return true;
        }
        let knobs = match procedure {
            UpkeepProcedure::Expire => {
                format!(
                    "{}, {}",
                    self.retention,
                    self.policy.describe_for(procedure)
                )
            }
            _ => self.policy.describe_for(procedure),
        };
        let detail = if self.run.explain {
            knobs
        } else {
            String::new()
        };
        let gate = match check_gates(name, &self.table.target.settings) {
            Err(e) => Gate::Skipped(e.message().to_string()),
            Ok(()) => {
                let (whole, own) = &self.maintained_by;
                upkeep::gate(
                    &self.policy,
                    procedure,
                    upkeep::maintainer_of(procedure, *whole, own),
                )
            }
        };
        let row = match gate {
            Gate::Disabled(reason) => self.row(name, "disabled", reason, detail),
            Gate::Skipped(reason) => self.row(name, "skipped", reason, detail),
            Gate::Plan => match self.decide_and_run(procedure).await {
                Step::Done(NOT_DUE, _) => self.row(name, NOT_DUE, "nothing to do".into(), detail),
                Step::Done(status, work) => MaintainRow {
                    metrics: work.metrics.clone(),
                    freed_bytes: work.freed_bytes,
                    ..self.row(name, status, work.reason(), detail)
                },
                Step::Failed(work, e) if e.kind() == ErrorKind::QueryWasCancelled => {
                    self.halted = Some((CANCELLED, cancelled_reason(false)));
                    let reason = if work.metrics.is_empty() {
                        cancelled_reason(true)
                    } else {
                        format!("{}; {}", cancelled_reason(true), work.reason())
                    };
                    self.row(name, CANCELLED, reason, String::new())
                }
                Step::Failed(work, e) => {
                    self.halted = Some((
                        "skipped",
                        "an earlier procedure of this table failed".to_string(),
                    ));
                    failure_row(self.table, name, work.reason(), &e)
                }
                Step::Lease(row) => {
                    self.push(row, started);
                    return false;
                }
            },
        };
        self.push(row, started);
        true
    }

    /// Decide `procedure` by a dry run through the executor SQL uses; unless explaining or dry,
    /// run it when due, holding the table's lease.
    async fn decide_and_run(&mut self, procedure: UpkeepProcedure) -> Step {
        let planned = match self.attempt(procedure, true).await {
            Ok(result) => result,
            Err(e) => return Step::Failed(Work::default(), e),
        };
        let work = Work::of(&planned);
        if work.metrics.is_empty() {
            return Step::Done(NOT_DUE, work);
        }
        if self.run.explain || self.run.dry_run {
            return Step::Done("due", work);
        }
        if let Some(row) = self.hold_lease().await {
            return Step::Lease(row);
        }
        match self.attempt(procedure, false).await {
            // Another writer did the work between the decision and the run.
            Ok(done) if Work::of(&done).metrics.is_empty() => Step::Done(NOT_DUE, Work::of(&done)),
            Ok(done) => Step::Done("ok", Work::of(&done)),
            Err(e) => Step::Failed(work, e),
        }
    }

    /// One attempt of `procedure` (a dry run when `dry_run`), its own progress scope: a cancel
    /// after one procedure wrote still stops the next.
    async fn attempt(&self, procedure: UpkeepProcedure, dry_run: bool) -> Result<QueryResult> {
        let target = &self.table.target;
        let call = call_of(procedure, &self.policy, target, dry_run);
        let scope = self.progress.next_scope();
        run_procedure_on(target.clone(), call, false, &scope).await
    }

    /// Take the table's lease unless held: `None` once held, else the `lease` row that ends the
    /// table's run (another maintainer holds it, or it could not be taken).
    async fn hold_lease(&mut self) -> Option<MaintainRow> {
        if matches!(self.lease, LeaseTaken::Held(_)) {
            return None;
        }
        match maintain_lease::take(&self.table.target, &self.policy, self.run).await {
            Ok(LeaseTaken::Busy(reason)) => {
                Some(self.row("lease", "skipped", reason, String::new()))
            }
            Ok(lease) => {
                self.lease = lease;
                None
            }
            Err(e) => Some(failure_row(self.table, "lease", String::new(), &e)),
        }
    }
}

/// A `failed` row of `table` (a catalog database's secrets scrubbed from the error).
fn failure_row(table: &TableToMaintain, procedure: &str, reason: String, e: &Error) -> MaintainRow {
    let e = match &table.catalog_database {
        Some(def) => scrub(e.clone(), def),
        None => e.clone(),
    };
    MaintainRow {
        database: table.database.clone(),
        table: table.table.clone(),
        procedure: procedure.to_string(),
        status: "failed".to_string(),
        reason,
        detail: e.to_string(),
        error: Some(e.kind()),
        ..Default::default()
    }
}

/// Why a procedure has a `cancelled` row: it was running (`true`), or never started.
fn cancelled_reason(running: bool) -> String {
    if running {
        "cancelled while running: what it committed stands, nothing else was changed".to_string()
    } else {
        "the run was cancelled before it started".to_string()
    }
}

/// What a procedure found due or did: its non-zero metrics, and the bytes its deletes freed.
#[derive(Debug, Clone, Default)]
struct Work {
    metrics: Vec<(String, i64)>,
    freed_bytes: Option<i64>,
}

impl Work {
    fn of(result: &QueryResult) -> Work {
        Work {
            metrics: nonzero_metrics(result),
            freed_bytes: result.freed_bytes,
        }
    }

    /// A row's reason: the metrics as `name=value, …`.
    fn reason(&self) -> String {
        let parts: Vec<String> = self
            .metrics
            .iter()
            .map(|(name, value)| format!("{name}={value}"))
            .collect();
        parts.join(", ")
    }
}

/// How one procedure of a table's run ended.
enum Step {
    /// `due` / `not due` (a decision) or `ok` (a run).
    Done(&'static str, Work),
    /// The procedure failed or was cancelled (the work it was due for, and the error).
    Failed(Work, Error),
    /// The table's lease is another maintainer's or could not be taken: the row that says so.
    Lease(MaintainRow),
}

/// Wall-clock times of a table's run: the statement's "now" plus the time elapsed since.
struct Stopwatch {
    base_ms: i64,
    began: std::time::Instant,
}

impl Stopwatch {
    fn new(base_ms: i64) -> Self {
        Stopwatch {
            base_ms,
            began: std::time::Instant::now(),
        }
    }

    fn now_ms(&self) -> i64 {
        let elapsed = i64::try_from(self.began.elapsed().as_millis()).unwrap_or(i64::MAX);
        self.base_ms.saturating_add(elapsed)
    }

    /// `row`, started at `started_ms` and ended now.
    fn stamp(&self, row: MaintainRow, started_ms: i64) -> MaintainRow {
        MaintainRow {
            started_ms,
            ended_ms: self.now_ms(),
            ..row
        }
    }
}

/// `QUERY_WAS_CANCELLED` once the run's token is cancelled, or the run was asked to stop between
/// procedures ([`MaintainRun::stop`]), whatever an earlier procedure wrote.
pub fn stop_if_cancelled(progress: &Progress, run: &MaintainRun) -> Result<()> {
    if progress.is_cancelled() || run.stop.as_ref().is_some_and(|t| t.is_cancelled()) {
        return Err(cancelled_error());
    }
    Ok(())
}

/// The table's effective policy, from its newest metadata's properties, and its expiry
/// retention as EXPLAIN shows it (each value with its source).
async fn policy_of(table: &TableToMaintain, run: &MaintainRun) -> Result<(UpkeepPolicy, String)> {
    let located = table.target.locate_newest("SYSTEM MAINTAIN").await?;
    let properties = located.metadata.properties();
    let retention = table_retention(&table.target.settings, properties, &[])?;
    let (p, s) = (&retention.policy, &retention.sources);
    let retention = format!(
        "min_snapshots_to_keep={} ({}), max_snapshot_age_ms={} ({}), max_ref_age_ms={} ({})",
        p.min_snapshots_to_keep,
        s.min_snapshots_to_keep,
        p.max_snapshot_age_ms,
        s.max_snapshot_age_ms,
        p.max_ref_age_ms,
        s.max_ref_age_ms
    );
    let policy = upkeep::effective_upkeep(&PolicyLayers {
        statement: Some(&run.statement),
        properties: Some(properties),
        database: table
            .catalog_database
            .as_ref()
            .map(|def| (table.database.as_str(), &def.settings)),
        session: Some(&run.session),
    })?;
    Ok((policy, retention))
}

/// The procedure call the policy makes for `procedure` (a dry run when `dry_run`).
fn call_of(
    procedure: UpkeepProcedure,
    policy: &UpkeepPolicy,
    target: &MaintenanceTarget,
    dry_run: bool,
) -> ProcedureCall {
    match procedure {
        UpkeepProcedure::Compact => ProcedureCall::Compact(CompactOptions {
            min_input_files: Some(policy.compact_min_input_files()),
            dry_run,
            ..Default::default()
        }),
        UpkeepProcedure::RewriteManifests => {
            ProcedureCall::RewriteManifests(RewriteManifestsOptions {
                min_manifest_count: Some(policy.manifests_min_count()),
                dry_run,
                ..Default::default()
            })
        }
        UpkeepProcedure::Expire => ProcedureCall::Expire(ExpireOptions {
            dry_run,
            clean_expired_metadata: policy.expire_clean_metadata(),
            ..Default::default()
        }),
        UpkeepProcedure::Orphans => ProcedureCall::Orphans(OrphanOptions {
            older_than_ms: Some(target.now_ms.saturating_sub(policy.orphans_older_than_ms())),
            dry_run,
            protect_other_tables: true,
            ..Default::default()
        }),
    }
}

/// The procedure's metrics that are not zero (`dry_run` left out).
fn nonzero_metrics(result: &QueryResult) -> Vec<(String, i64)> {
    let Some(metrics) = &result.metrics else {
        return Vec::new();
    };
    metrics
        .named_values()
        .into_iter()
        .filter(|(name, value)| *name != DRY_RUN && *value != 0)
        .map(|(name, value)| (name.to_string(), value))
        .collect()
}

/// The answer's columns: EXPLAIN's or a run's.
pub fn columns(explain: bool) -> Vec<Column> {
    let last = if explain { "policy" } else { "error" };
    let status = if explain { "decision" } else { "status" };
    ["database", "table", "procedure", status, "reason", last]
        .into_iter()
        .map(|name| Column::new(name, "String"))
        .collect()
}

/// The answer: one row per table and procedure.
pub fn result_of(rows: &[MaintainRow], explain: bool) -> QueryResult {
    let values = rows
        .iter()
        .map(|r| {
            [
                &r.database,
                &r.table,
                &r.procedure,
                &r.status,
                &r.reason,
                &r.detail,
            ]
            .into_iter()
            .map(|s| Value::Str(s.clone()))
            .collect()
        })
        .collect();
    QueryResult::table(columns(explain), values)
}

/// A run where some table failed: an error after every table ran, naming each failure (the
/// first failure's code).
pub fn failures_error(rows: &[MaintainRow], tables: usize) -> Option<Error> {
    let failed: Vec<&MaintainRow> = rows.iter().filter(|r| r.failed()).collect();
    let first = failed.first()?;
    let mut failed_tables: Vec<(&str, &str)> = failed
        .iter()
        .map(|r| (r.database.as_str(), r.table.as_str()))
        .collect();
    failed_tables.dedup();
    let list: Vec<String> = failed
        .iter()
        .map(|r| format!("{}.{} {}: {}", r.database, r.table, r.procedure, r.detail))
        .collect();
    let code = first.error.unwrap_or(ErrorKind::BadArguments);
    Some(Error::new(
        code,
        format!(
            "SYSTEM MAINTAIN: {} of {tables} table(s) failed (the others ran; every commit \
             stands): {}",
            failed_tables.len(),
            list.join("; ")
        ),
    ))
}
