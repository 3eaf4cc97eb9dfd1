//! The one shape of a maintenance procedure, and the one function that runs any of them.
//!
//! A procedure builds a **plan value** from its typed options on the table's newest metadata
//! (reading only; nothing is written), and the statement's intent decides what becomes of it:
//! EXPLAIN prints the plan, a dry run counts it, a run carries it out. `execute` never decides
//! anything the plan did not: it writes, commits through the commit protocol (a conflict re-plans
//! on the new base, by the protocol's rules) and deletes after a confirmed commit. Every outcome
//! is [`Reported`], so the engine renders all of them through one function.
//!
//! Implemented by the unit types [`Expire`], [`RemoveOrphans`], [`Compact`],
//! [`RewriteManifests`], [`ManageSnapshots`] and [`ChangeTable`], beside each procedure's
//! executor.

use std::future::Future;

use super::report::Reported;
use super::target::MaintenanceTarget;
use crate::error::Result;
use crate::progress::Phase;

pub use super::compact::execute::Compact;
pub use super::expire::execute::Expire;
pub use super::manage_snapshots::execute::{ChangeTable, ManageSnapshots};
pub use super::orphans::execute::RemoveOrphans;
pub use super::rewrite_manifests::execute::RewriteManifests;

/// What a statement asks of a procedure's plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    /// `EXPLAIN`: the plan, printed.
    Explain,
    /// `dry_run = 1`: the plan, counted as the metrics a run would report.
    DryRun,
    /// The plan, carried out.
    Run,
}

impl Intent {
    /// The intent of a statement that is (`explain`) or is not EXPLAIN, with `dry_run` set or not.
    pub fn of(explain: bool, dry_run: bool) -> Intent {
        match (explain, dry_run) {
            (true, _) => Intent::Explain,
            (false, true) => Intent::DryRun,
            (false, false) => Intent::Run,
        }
    }
}

/// A maintenance procedure: see the module comment.
pub trait MaintenanceProcedure {
    /// Its typed options (`crate::plan`).
    type Options: Sync;
    /// What it decided: the plan value.
    type Plan: Send;
    /// What it answers.
    type Outcome: Reported;

    /// The progress phases its events go through, in order (a procedure reports a subset).
    const PHASES: &'static [Phase];

    /// Whether a location holding a second table is refused even when this table was chosen by
    /// its metadata file (procedures that delete by listing the location).
    const DELETES_BY_LISTING: bool = false;

    /// The statement's name, for messages.
    fn name(options: &Self::Options) -> String;

    /// Whether `options` ask for a dry run.
    fn dry_run(options: &Self::Options) -> bool;

    /// Read the table and decide: the plan for `intent`. Nothing is written.
    fn plan(
        target: &MaintenanceTarget,
        options: &Self::Options,
        intent: Intent,
    ) -> impl Future<Output = Result<Self::Plan>> + Send;

    /// The plan, printed.
    fn explain(plan: Self::Plan) -> Self::Outcome;

    /// The plan, counted: the outcome a run would report, marked as a dry run.
    fn count(plan: Self::Plan) -> Self::Outcome;

    /// The plan, carried out.
    fn execute(
        target: &MaintenanceTarget,
        options: &Self::Options,
        plan: Self::Plan,
    ) -> impl Future<Output = Result<Self::Outcome>> + Send;
}

/// Run `P` on `target` as the statement asks (`explain`, or `options`' dry run, or for real).
pub async fn run<P: MaintenanceProcedure>(
    target: &MaintenanceTarget,
    options: &P::Options,
    explain: bool,
) -> Result<P::Outcome> {
    let intent = Intent::of(explain, P::dry_run(options));
    let plan = P::plan(target, options, intent).await?;
    match intent {
        Intent::Explain => Ok(P::explain(plan)),
        Intent::DryRun => Ok(P::count(plan)),
        Intent::Run => P::execute(target, options, plan).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explain_wins_over_dry_run() {
        assert_eq!(Intent::of(true, true), Intent::Explain);
        assert_eq!(Intent::of(true, false), Intent::Explain);
        assert_eq!(Intent::of(false, true), Intent::DryRun);
        assert_eq!(Intent::of(false, false), Intent::Run);
    }

    #[test]
    fn phases_are_declared_and_deleting_comes_last() {
        let all: [&[Phase]; 6] = [
            Expire::PHASES,
            RemoveOrphans::PHASES,
            Compact::PHASES,
            RewriteManifests::PHASES,
            ManageSnapshots::PHASES,
            ChangeTable::PHASES,
        ];
        for phases in all {
            if let Some(i) = phases.iter().position(|p| *p == Phase::DeletingFiles) {
                assert_eq!(i, phases.len() - 1);
            }
        }
    }
}
