//! The setup of one history before its statement: main given live rows when the generated
//! deletes left none, often a position delete on main's head, what the statement needs (a branch
//! ahead of main for `fast_forward`, a staged append for `cherrypick_snapshot`, a branch for
//! `REPLACE BRANCH`), then the statement's and the writer's arguments, drawn from the table as it
//! then stands. Every setup commit goes through the other writer's target.

use icetrim::internals::maintain::target::MaintenanceTarget;
use rand::seq::IndexedRandom;

use super::cases::{
    Case, Statement, StatementKind, Writer, choose_writer, main_head, older_ancestor,
    other_snapshot, side_branches,
};
use super::invariants::State;
use super::writer;

/// Set the history up for the statement (a delete on main's head, a branch ahead of main, a
/// staged append), then choose the statement's and the writer's arguments on the table as it
/// now stands: the statement, the writer, the state before the statement.
pub async fn prepare(
    case: &mut Case,
    target: &MaintenanceTarget,
) -> Result<(Statement, Writer, State), String> {
    writer::ensure_main_has_data(target, &mut case.rng).await?;
    if case.delete_on_head {
        writer::delete_on_main(target, &mut case.rng).await?;
    }
    let statement = choose_statement(case, target).await?;
    let md = writer::newest(target).await?;
    let writer_plan = choose_writer(case, &md, &statement);
    Ok((statement, writer_plan, State::of(&md)))
}

async fn choose_statement(
    case: &mut Case,
    target: &MaintenanceTarget,
) -> Result<Statement, String> {
    let md = writer::newest(target).await?;
    let rng = &mut case.rng;
    let head = main_head(&md);
    Ok(match case.statement {
        StatementKind::Compact => Statement::Compact(case.compact_mode),
        StatementKind::RewriteManifests => Statement::RewriteManifests,
        StatementKind::RollbackToSnapshot => {
            Statement::RollbackToSnapshot(older_ancestor(&md, rng).ok_or("main has no ancestor")?)
        }
        StatementKind::RollbackToTimestamp => {
            let to = older_ancestor(&md, rng).ok_or("main has no ancestor")?;
            let at = md
                .snapshot(to)
                .map(|s| s.timestamp_ms + 1)
                .unwrap_or_default();
            Statement::RollbackToTimestamp(at)
        }
        StatementKind::SetCurrentSnapshot => {
            Statement::SetCurrentSnapshot(other_snapshot(&md, head, rng).ok_or("one snapshot")?)
        }
        StatementKind::FastForward => {
            let branch = "ahead";
            writer::branch_at(target, branch, head.ok_or("no main")?).await?;
            writer::branch_append(target, branch, rng).await?;
            Statement::FastForward(branch.into())
        }
        StatementKind::Cherrypick => {
            Statement::Cherrypick(writer::staged_append(target, rng).await?)
        }
        StatementKind::ReplaceBranch => {
            let branch = match side_branches(&md).choose(rng) {
                Some(b) => b.clone(),
                None => {
                    let at = older_ancestor(&md, rng).or(head).ok_or("no main")?;
                    writer::branch_at(target, "replaced", at).await?;
                    "replaced".to_string()
                }
            };
            let md = writer::newest(target).await?;
            let at = md.ref_named(&branch).map(|r| r.snapshot_id);
            Statement::ReplaceBranch(branch, other_snapshot(&md, at, rng).ok_or("one snapshot")?)
        }
    })
}
