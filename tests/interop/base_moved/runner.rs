//! One history: build the table, set it up and choose the statement and the writer (`setup`),
//! arm the other writer in the before-commit hook (it runs once, between the statement's plan and its first commit attempt),
//! run the statement, then check every invariant on the final table.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use icetrim::Table;
use icetrim::engine::{ManageSnapshots, Timestamp};
use icetrim::internals::maintain::target::{BeforeCommit, MaintenanceTarget};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::backend::{Shared, TableUnderTest};
use super::cases::{Case, CompactMode, Statement, Writer, main_head};
use super::invariants::{
    State, check_files, check_outcome, check_rows, check_writer_kept, replace_pairs,
};
use super::setup::prepare;
use super::writer::{self, Effect};
use crate::support::pyserver::PyServer;

/// What one history showed.
pub struct Report {
    pub seed: u64,
    pub pair: String,
    /// Whether the other writer committed between the plan and the commit.
    pub fired: bool,
    pub violations: Vec<String>,
    /// The statement and writer with their arguments, and the statement's outcome.
    pub detail: String,
    /// Time spent building the history, running the statement (and the writer), checking.
    pub timings: [Duration; 3],
}

impl Report {
    fn new(case: &Case) -> Report {
        Report {
            seed: case.seed,
            pair: case.pair(),
            fired: false,
            violations: Vec::new(),
            detail: String::new(),
            timings: Default::default(),
        }
    }
}

/// What the other writer did (or its error), and the table's state right after it.
type WriterRun = (Result<Effect, String>, Option<State>);

/// The other writer, armed: the hook runs it on its first call only.
struct Race {
    target: MaintenanceTarget,
    writer: Writer,
    seed: u64,
    fired: AtomicBool,
    result: Mutex<Option<WriterRun>>,
}

impl Race {
    /// The hook: the writer runs on a thread and runtime of its own while the statement waits
    /// (its futures need not be `Send`, as the hook's must).
    fn hook(self: &Arc<Self>) -> BeforeCommit {
        let race = self.clone();
        BeforeCommit(Arc::new(move || {
            let race = race.clone();
            Box::pin(async move {
                let ran = tokio::task::spawn_blocking(move || {
                    tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .expect("a runtime for the other writer")
                        .block_on(race.fire());
                })
                .await;
                ran.expect("the other writer's thread");
            })
        }))
    }

    async fn fire(&self) {
        if self.fired.swap(true, Ordering::SeqCst) {
            return;
        }
        let mut rng = StdRng::seed_from_u64(self.seed);
        let effect = writer::apply(&self.target, &self.writer, &mut rng).await;
        let after = writer::newest(&self.target)
            .await
            .ok()
            .map(|md| State::of(&md));
        *self.result.lock().expect("race result") = Some((effect, after));
    }

    fn result(&self) -> Option<WriterRun> {
        self.result.lock().expect("race result").clone()
    }
}

/// Run one history; see the module comment.
pub async fn run_case(mut case: Case, shared: &Shared, py: &mut PyServer) -> Report {
    let mut report = Report::new(&case);
    let clock = Instant::now();
    let mut table = TableUnderTest::generate(&mut case, shared).await;
    let prepared = prepare(&mut case, &table.writer).await;
    table.register(shared).await;
    let (statement, writer_plan, before) = match prepared {
        Ok(p) => p,
        Err(e) => {
            let why = format!("the test could not set the history up: {e}");
            report.violations.push(why);
            return report;
        }
    };
    report.timings[0] = clock.elapsed();
    let race = Arc::new(Race {
        target: table.writer.clone(),
        writer: writer_plan.clone(),
        seed: case.rng.random(),
        fired: AtomicBool::new(false),
        result: Mutex::new(None),
    });
    let handle = table.statement_table(race.hook()).await;
    let result = run_statement(&handle, &statement).await;
    report.timings[1] = clock.elapsed() - report.timings[0];
    report.detail = format!("{statement:?} racing {writer_plan:?} → {result:?}");
    let mut writer_left = None;
    if let Some((effect, after)) = race.result() {
        report.fired = true;
        match (effect, after) {
            (Ok(effect), Some(after)) => writer_left = Some((effect, after)),
            (effect, after) => report.violations.push(format!(
                "the test's other writer failed: {effect:?} (state after it: {after:?})"
            )),
        }
    }
    let found = check(
        &table,
        &statement,
        &result,
        &before,
        writer_left.as_ref(),
        py,
    )
    .await;
    report.violations.extend(found);
    report.timings[2] = clock.elapsed() - report.timings[0] - report.timings[1];
    report
}

/// Every invariant on the table as the statement left it. `before`: the table before the
/// statement; `writer_left`: what the other writer did and the table as it left it, if it ran.
async fn check(
    table: &TableUnderTest,
    statement: &Statement,
    result: &Result<String, String>,
    before: &State,
    writer_left: Option<&(Effect, State)>,
    py: &mut PyServer,
) -> Vec<String> {
    let located = match writer::located(&table.writer).await {
        Ok(located) => located,
        Err(e) => {
            return vec![format!(
                "the table cannot be loaded after the statement: {e}"
            )];
        }
    };
    let last = &located.metadata;
    let mut violations = Vec::new();
    let mut unchanged = before;
    if let Some((effect, after_writer)) = writer_left {
        violations.extend(check_writer_kept(effect, statement, after_writer, last));
        unchanged = after_writer;
    }
    violations.extend(check_outcome(statement, result, unchanged, last));
    violations.extend(check_files(&table.io, &table.location, last).await);
    let pairs = replace_pairs(last);
    let mut read: Vec<i64> = pairs.iter().flat_map(|(r, p)| [*r, *p]).collect();
    read.extend(main_head(last));
    read.sort_unstable();
    read.dedup();
    let digests = py.snapshot_digests(table.reader(&located.path), &read);
    violations.extend(check_rows(&pairs, &digests));
    violations
}

/// Run the statement through the typed API: its metrics in short, or its error.
async fn run_statement(table: &Table, statement: &Statement) -> Result<String, String> {
    let shown = |metrics: String| Ok(metrics);
    let done = match statement {
        Statement::Compact(mode) => {
            let builder = table.rewrite_data_files();
            let builder = match mode {
                CompactMode::Optimize => builder.optimize(),
                CompactMode::OptimizeSmallGroups => builder.optimize().min_input_files(2),
                CompactMode::RewriteAll => builder.rewrite_all(true),
            };
            let o = builder.execute().await;
            o.and_then(|o| shown(format!("{:?} {:?}", o.metrics, o.warnings)))
        }
        Statement::RewriteManifests => {
            let o = table.rewrite_manifests().execute().await;
            o.and_then(|o| shown(format!("{:?}", o.metrics)))
        }
        Statement::RollbackToSnapshot(id) => metrics(table.rollback_to_snapshot(*id)).await,
        Statement::RollbackToTimestamp(at) => {
            metrics(table.rollback_to_timestamp(Timestamp::Millis(*at))).await
        }
        Statement::SetCurrentSnapshot(id) => metrics(table.set_current_snapshot(*id)).await,
        Statement::FastForward(branch) => metrics(table.fast_forward("main", branch)).await,
        Statement::Cherrypick(id) => metrics(table.cherrypick_snapshot(*id)).await,
        Statement::ReplaceBranch(branch, id) => {
            let o = table
                .replace_branch(branch)
                .as_of_version(*id)
                .execute()
                .await;
            o.and_then(|o| shown(format!("{:?}", o.metrics)))
        }
    };
    done.map_err(|e| e.to_string())
}

async fn metrics(procedure: ManageSnapshots<'_>) -> icetrim::Result<String> {
    Ok(format!("{:?}", procedure.execute().await?.metrics))
}
