//! `SYSTEM MAINTAIN` on one opened table: the table's effective policy
//! ([`crate::maintain::upkeep`]), then, procedure by procedure in the safe order (compact →
//! rewrite manifests → expire → orphans), the policy's gate, the decision (a dry run of the
//! procedure through the same executor SQL uses: due when it finds anything to do), and for a
//! real run the procedure itself ([`run_procedure_on`]). Cancellation stops between procedures;
//! every commit made so far stands. Before the first procedure of a run that can change the table,
//! the run takes the table's maintenance lease ([`super::maintain_lease`]); a table another
//! maintainer holds is one `skipped` row, and a run whose lease was lost stops before its next
//! procedure. A procedure that fails ends that table's run (its later
//! procedures are skipped); the caller goes on with the next table.

use std::collections::BTreeMap;

use super::catalog_db::scrub;
use super::maintain_lease::{self, LeaseTaken};
use super::procedures::{check_gates, run_procedure_on};
use super::registry::DatabaseDef;
use super::result::QueryResult;
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
}

impl MaintainRow {
    pub fn failed(&self) -> bool {
        self.error.is_some()
    }
}

/// The rows of `table`'s maintenance under `run`. `Err` only for cancellation (every commit so
/// far stands); a table's failure is a `failed` row.
pub async fn maintain_table(
    table: TableToMaintain,
    run: &MaintainRun,
    progress: &Progress,
) -> Result<Vec<MaintainRow>> {
    let row = |procedure: &str, status: &str, reason: String, detail: String| MaintainRow {
        database: table.database.clone(),
        table: table.table.clone(),
        procedure: procedure.to_string(),
        status: status.to_string(),
        reason,
        detail,
        ..Default::default()
    };
    let failure = |procedure: &str, reason: String, e: &Error| {
        let e = match &table.catalog_database {
            Some(def) => scrub(e.clone(), def),
            None => e.clone(),
        };
        MaintainRow {
            error: Some(e.kind()),
            ..row(procedure, "failed", reason, e.to_string())
        }
    };
    let whole_table = table
        .catalog_database
        .as_ref()
        .and_then(|def| upkeep::catalog_maintainer(&def.args, def.settings.get("warehouse")));
    let own = match (&table.target.source, whole_table) {
        (TableSource::Catalog(t), None) => t.catalog.own_maintenance(&t.ident).await,
        _ => Vec::new(),
    };
    stop_if_cancelled(progress, run)?;
    let clock = Stopwatch::new(table.target.now_ms);
    let policy = match policy_of(&table, run).await {
        Ok(policy) => policy,
        Err(e) => {
            return Ok(vec![
                clock.stamp(failure("policy", String::new(), &e), clock.base_ms),
            ]);
        }
    };
    let (policy, retention) = policy;
    // Two maintainers never work on one table at once (see `maintain_lease`).
    let lease = match maintain_lease::take(&table.target, &policy, run).await {
        Ok(LeaseTaken::Busy(reason)) => {
            let busy = row("lease", "skipped", reason, String::new());
            return Ok(vec![clock.stamp(busy, clock.base_ms)]);
        }
        Ok(lease) => lease,
        Err(e) => {
            let failed = failure("lease", String::new(), &e);
            return Ok(vec![clock.stamp(failed, clock.base_ms)]);
        }
    };
    let mut rows = Vec::new();
    let mut failed = false;
    let mut stopped: Option<String> = None;
    let mut outcome = Ok(());
    for procedure in UpkeepProcedure::ORDER {
        // Between procedures: every commit so far stands, the next one does not start.
        if let Err(e) = stop_if_cancelled(progress, run) {
            outcome = Err(e);
            break;
        }
        let started = clock.now_ms();
        let name = procedure.name();
        let knobs = match procedure {
            UpkeepProcedure::Expire => retention.clone(),
            _ => policy.describe_for(procedure),
        };
        let detail = |error: String| if run.explain { knobs.clone() } else { error };
        if stopped.is_none() {
            stopped = maintain_lease::lost(&lease);
        }
        if let Some(reason) = &stopped {
            let skipped = row(name, "skipped", reason.clone(), String::new());
            rows.push(clock.stamp(skipped, started));
            continue;
        }
        if failed {
            let reason = "an earlier procedure of this table failed".to_string();
            rows.push(clock.stamp(row(name, "skipped", reason, String::new()), started));
            continue;
        }
        let gate = match check_gates(name, &table.target.settings) {
            Err(e) => Gate::Skipped(e.message().to_string()),
            Ok(()) => {
                let by = upkeep::maintainer_of(procedure, whole_table, &own);
                upkeep::gate(&policy, procedure, by)
            }
        };
        let done = match gate {
            Gate::Disabled(reason) => row(name, "disabled", reason, detail(String::new())),
            Gate::Skipped(reason) => row(name, "skipped", reason, detail(String::new())),
            Gate::Plan => {
                match plan_and_run(&table.target, run, &policy, procedure, progress).await {
                    Ok(Step::Done(NOT_DUE, _)) => {
                        row(name, NOT_DUE, "nothing to do".into(), detail(String::new()))
                    }
                    Ok(Step::Done(status, metrics)) => MaintainRow {
                        metrics: metrics.clone(),
                        ..row(name, status, reason_of(&metrics), detail(String::new()))
                    },
                    Ok(Step::Failed(work, e)) => {
                        failed = true;
                        failure(name, reason_of(&work), &e)
                    }
                    Err(e) => {
                        outcome = Err(e);
                        break;
                    }
                }
            }
        };
        rows.push(clock.stamp(done, started));
    }
    // Released after a cancellation too: the next run need not wait for it to expire.
    maintain_lease::give_back(lease).await;
    outcome.map(|()| rows)
}

const NOT_DUE: &str = "not due";

/// How one procedure of a table's run ended.
enum Step {
    /// `due` / `not due` (a decision) or `ok` (a run), with the non-zero metrics (none: nothing
    /// to do).
    Done(&'static str, Vec<(String, i64)>),
    /// The procedure failed (the work it was due for, and the error).
    Failed(Vec<(String, i64)>, Error),
}

/// A row's reason: the metrics as `name=value, …`.
fn reason_of(metrics: &[(String, i64)]) -> String {
    let parts: Vec<String> = metrics
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect();
    parts.join(", ")
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

/// Decide `procedure` by a dry run through the executor SQL uses; unless explaining or dry, run
/// it when due. `Err` only for cancellation.
async fn plan_and_run(
    target: &MaintenanceTarget,
    run: &MaintainRun,
    policy: &UpkeepPolicy,
    procedure: UpkeepProcedure,
    progress: &Progress,
) -> Result<Step> {
    // Each attempt its own progress scope: a cancel after one procedure wrote still stops the next.
    let attempt = |dry_run: bool| {
        let call = call_of(procedure, policy, target, dry_run);
        let scope = progress.next_scope();
        async move { run_procedure_on(target.clone(), call, false, &scope).await }
    };
    let planned = match attempt(true).await {
        Ok(result) => result,
        Err(e) if e.kind() == ErrorKind::QueryWasCancelled => return Err(e),
        Err(e) => return Ok(Step::Failed(Vec::new(), e)),
    };
    let work = nonzero_metrics(&planned);
    if work.is_empty() {
        return Ok(Step::Done(NOT_DUE, work));
    }
    if run.explain || run.dry_run {
        return Ok(Step::Done("due", work));
    }
    match attempt(false).await {
        Ok(done) => Ok(Step::Done("ok", nonzero_metrics(&done))),
        Err(e) if e.kind() == ErrorKind::QueryWasCancelled => Err(e),
        Err(e) => Ok(Step::Failed(work, e)),
    }
}

/// `QUERY_WAS_CANCELLED` once the run's token is cancelled, or the run was asked to stop between
/// procedures ([`MaintainRun::stop`]), whatever an earlier procedure wrote.
fn stop_if_cancelled(progress: &Progress, run: &MaintainRun) -> Result<()> {
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
