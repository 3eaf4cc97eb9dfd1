//! `expire_snapshots`: the executor. It chains the pure decisions of
//! [`policy`], [`retention`] and [`keepset`] with storage.
//!
//! Algorithm, in order (each attempt starts from scratch):
//! 1. Locate the newest committed metadata ([`MaintenanceTarget::locate_newest`](crate::maintain::target::MaintenanceTarget::locate_newest)): a table
//!    setting `iceberg_metadata_file_path` pinning a file that is not the newest refuses the
//!    statement (`BAD_ARGUMENTS`), dry runs and EXPLAIN included (planning on an older file
//!    forks the table). A real run first settles journals of unconfirmed commits
//!    ([`retract_unconfirmed`]) and refuses an ambiguous table before recovering anything.
//! 2. [`plan::plan_expiry`]: refuse unless `gc.enabled` is true (Java `RemoveSnapshots`: "GC is
//!    disabled"; `BAD_ARGUMENTS`, as a table setting forbids the call) → effective policy
//!    (settings < table properties < `retain_last`/`retention_period`) → `decide_expiry` (policy or
//!    id mode, the `expire_before` fuse) → when something expires: read every manifest list
//!    ([`crate::maintain::file_graph::graph`]; a retained snapshot's unreadable list fails) → phase A (which manifests
//!    to read) → read them (a retained one must be readable; a gone candidate is skipped with a
//!    warning) → phase B (keep set, candidates); on one line of main history whose manifest
//!    lists vouch for it, only the candidate manifests that delete files are read instead of
//!    all of them ([`incremental`], the same files; EXPLAIN's `cleanup` row says which ran and
//!    why) → refuse when a candidate lies outside the table
//!    location (`NOT_IMPLEMENTED`, naming up to 10). All of this also runs for dry runs and
//!    EXPLAIN, so they fail exactly where the real run would.
//! 3. EXPLAIN returns the plan ([`explain`]); nothing expires and no ref is removed → nothing is
//!    written, all counts 0; a dry run returns the counts of the plan.
//! 4. Commit `v<N+1>` ([`commit`](crate::iceberg::commit::commit), create-if-absent, through the
//!    one commit loop [`run`](crate::iceberg::commit::protocol::run)): kept snapshots in original order, removed
//!    refs dropped, snapshot-log trimmed after the last expired entry, statistics of expired
//!    snapshots dropped; the commit appends to and trims metadata-log and sets last-updated-ms.
//!    On [`CommitOutcome::Conflict`](crate::iceberg::commit::CommitOutcome::Conflict) go back to 1 (another writer may have added snapshots and
//!    files: nothing of the old plan is reused), at most `iceberg_commit_max_attempts` times, then
//!    `LIMIT_EXCEEDED`. An outcome that is not known ends the statement with an error (one rule
//!    for every procedure) saying what was and was not done: on
//!    [`CommitOutcome::Unconfirmed`](crate::iceberg::commit::CommitOutcome::Unconfirmed) (another
//!    file of our version appeared after we wrote and ours could not be taken back; `S3_ERROR`)
//!    nothing is deleted and the journal is marked, so the next run retracts our file and plans
//!    again; on [`CommitOutcome::Unknown`](crate::iceberg::commit::CommitOutcome::Unknown) (a
//!    catalog's 5xx, a timeout or a lost answer that a reload does not settle; `NETWORK_ERROR`)
//!    nothing is deleted and the journal stays, so the next run finishes the deletes if the
//!    commit landed.
//!    Before the commit, when the plan has files to delete, a journal records the base metadata
//!    and the expired snapshot ids ([`journal`]); it is removed after a conflict and after the
//!    deletes. The first attempt of every real run first finishes what earlier, interrupted runs
//!    journaled ([`recover`]), so a crash between commit and deletes converges on the next run.
//!    Those deletions are a warning, not part of the rows: the rows are this statement's own
//!    expiry (as in ClickHouse), so a dry run's rows still equal the real run's.
//! 5. Only after the commit, delete leaf first ([`delete`]): content files, manifests, manifest
//!    lists, statistics files (Java `ReachableFileCleanup`'s order; a crash in between leaves
//!    orphans, never dangling metadata). Failures are a warning, not an error; the counts are of
//!    files actually deleted (a file already gone counts as deleted), so a dry run's counts equal
//!    a real run's whenever every delete succeeds.
//!
//! Deliberate differences from ClickHouse 26.9 (see docs/decisions.md): unreferenced snapshots
//! younger than the table max age are kept (Java's rule); candidates outside the location and
//! `gc.enabled=false` refuse the statement. Old metadata files are not deleted by expiry itself;
//! every path-table commit (this one too) deletes those that left `metadata-log` when the table
//! sets `write.metadata.delete-after-commit.enabled` ([`crate::maintain::old_metadata`]).
//!
//! `clean_expired_metadata = 1` (Apache Iceberg 1.10): the commit also drops the schemas and
//! partition specs no retained snapshot uses ([`cleanup`]); two rows follow the seven.

//!
//! Files: decisions (pure, no I/O): [`policy`], [`retention`], [`keepset`], [`incremental`]
//! (the cheaper cleanup of one line of history, provably the same files), [`cleanup`]'s
//! `decide_cleanup`, [`explain`] (the
//! EXPLAIN rows), [`metrics`]. Execution: [`execute`] (the loop above), [`plan`] (reads the file
//! graph), [`journal`], [`recover`], [`delete`].

pub mod cleanup;
mod delete;
pub mod execute;
pub mod explain;
pub mod incremental;
pub mod journal;
pub mod keepset;
pub mod metrics;
mod plan;
pub mod policy;
mod reasons;
mod recover;
pub mod retention;

pub use delete::DeleteReport;
pub use execute::{Expire, ExpireOutcome};
pub use explain::{ExpireExplainRow, category_name, format_ts};
pub use metrics::ExpireMetrics;
pub use plan::{
    CleanupMode, ExpiryPlan, PROP_GC_ENABLED, new_metadata, plan_expiry, plan_files, plan_files_in,
};
pub use recover::{Recovered, finish_pending, retract_unconfirmed};
