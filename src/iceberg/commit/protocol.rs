//! The commit protocol's one loop: every statement that changes a table commits through [`run`].
//!
//! Where the commit goes is a [`CommitTarget`]: a path table ([`PathTable`], the commit of
//! [`super::commit`]) or, in the maintenance layer, a table opened for a statement (which picks a
//! path or a catalog commit). What is committed is a [`Procedure`]: asked for each attempt's
//! [`Step`] on the newest metadata, and told how each attempt ended.
//!
//! For each attempt, up to the limit: locate the newest metadata; check that it can be written
//! (before planning, unless the procedure may only explain or dry-run on it; always before
//! committing); ask the procedure for this attempt's step (done, or new metadata plus the files
//! it wrote for this attempt only); commit. Then, by outcome:
//! - `Committed`: the procedure gets the committed metadata back; it deletes only after this.
//! - `Conflict`: certainly not applied. The attempt's own files are deleted (never committed, and
//!   never one outside the table location), the procedure is told, and the next attempt plans on
//!   the newest metadata (every attempt after the first re-checks the moved base in its step).
//! - `Unconfirmed`: our file may be read; nothing is deleted. The procedure is told (expiry marks
//!   its journal) and the statement fails with the store's error.
//! - `Unknown`: the commit may or may not have landed; nothing is deleted. The procedure is told
//!   and the statement fails with `NETWORK_ERROR`.
//!
//! After the last attempt conflicted, the procedure is told (it deletes what it kept for a next
//! attempt) and the statement fails with `LIMIT_EXCEEDED`. Storage errors are never retried.
//!
//! The traits use `async fn`: the futures are `Send` exactly when the implementations' are, so
//! every statement future stays spawnable.
#![allow(async_fn_in_trait)]

use crate::error::{Error, ErrorKind, Result};
use crate::iceberg::commit::{CommitOptions, CommitOutcome, Committed, commit};
use crate::iceberg::locate::{LocatedMetadata, MetadataSettings, locate};
use crate::iceberg::metadata::TableMetadata;
use crate::io::{FileIO, is_under, unsettled_write_kind};
use crate::pool::DropLater;

/// Where a commit goes.
pub trait CommitTarget {
    /// The newest committed metadata (`procedure` names the statement in a refusal).
    async fn load_newest(&self, procedure: &str) -> Result<LocatedMetadata>;

    /// Commit `new_metadata` as the metadata that follows `base`.
    async fn commit_on(
        &self,
        base: &LocatedMetadata,
        new_metadata: TableMetadata,
        options: &CommitOptions,
    ) -> Result<CommitOutcome>;

    /// Storage of the table's files.
    fn io(&self) -> &FileIO;

    /// The table location: nothing outside it is deleted.
    fn location(&self) -> &str;

    /// What the errors of `procedure` on this table start with.
    fn subject(&self, procedure: &str) -> String;
}

/// What one attempt commits.
#[derive(Debug, Clone)]
pub struct Attempt {
    /// The new metadata, planned on this attempt's base.
    pub metadata: TableMetadata,
    /// Files this attempt wrote that only this commit references (deleted after a conflict).
    pub written: Vec<String>,
    pub options: CommitOptions,
}

/// What a procedure does on one attempt's base.
#[derive(Debug)]
pub enum Step<T> {
    /// Nothing (more) to write: the loop returns this.
    Done(T),
    /// Another writer moved the table while planning (its newest metadata file): plan again,
    /// as after a conflict.
    Moved(String),
    /// Commit this.
    Commit(Box<Attempt>),
}

/// A statement's side of the loop: see the module comment.
pub trait Procedure {
    type Output;

    /// The statement's name, for messages.
    fn name(&self) -> &str;

    /// Whether the base must be writable before planning (false for a procedure that may
    /// explain or dry-run on any table; the loop checks again before every commit).
    fn plans_only_on_writable(&self) -> bool {
        true
    }

    /// This attempt's step on `base` (`attempt` 0 first; later ones follow a conflict and
    /// re-check the moved base).
    async fn step(&mut self, attempt: u32, base: &LocatedMetadata) -> Result<Step<Self::Output>>;

    /// The attempt's commit landed (`done`): what the statement returns (deletes go here).
    async fn committed(&mut self, base: &LocatedMetadata, done: Committed) -> Result<Self::Output>;

    /// The attempt conflicted; its written files are deleted except `kept` (each with why).
    async fn conflicted(&mut self, kept: Vec<String>) {
        let _ = kept;
    }

    /// The commit of `ours` on `base` is unconfirmed: what the statement did about it (the end
    /// of the error message).
    async fn unconfirmed(&mut self, base: &LocatedMetadata, ours: &str, rival: &str) -> String {
        let _ = (base, ours, rival);
        "remove one of them by hand".to_string()
    }

    /// The commit's outcome is unknown: what the statement did about it, if worth saying.
    async fn unknown(&mut self) -> Option<String> {
        None
    }

    /// Every attempt conflicted: what the statement did about it, if worth saying.
    async fn exhausted(&mut self) -> Option<String> {
        None
    }
}

/// Run `procedure` on `target`: at most `max_attempts` attempts, the first on `first` when
/// given (the metadata the statement already planned on), else on the newest metadata.
pub async fn run<T, P>(
    target: &T,
    procedure: &mut P,
    max_attempts: u32,
    mut first: Option<LocatedMetadata>,
) -> Result<P::Output>
where
    T: CommitTarget,
    P: Procedure,
{
    let mut last_taken: Option<String> = None;
    for attempt in 0..max_attempts {
        let base = match first.take() {
            Some(base) => base,
            None => target.load_newest(procedure.name()).await?,
        };
        let base = DropLater::new(base);
        if procedure.plans_only_on_writable() {
            base.check_writable()?;
        }
        let Attempt {
            metadata,
            written,
            options,
        } = match procedure.step(attempt, &base).await? {
            Step::Done(output) => return Ok(output),
            Step::Moved(newest) => {
                last_taken = Some(newest);
                continue;
            }
            Step::Commit(attempt) => *attempt,
        };
        base.check_writable()?;
        match target.commit_on(&base, metadata, &options).await? {
            CommitOutcome::Committed(done) => return procedure.committed(&base, *done).await,
            CommitOutcome::Conflict { taken } => {
                let kept = delete_uncommitted(target.io(), target.location(), &written).await;
                procedure.conflicted(kept).await;
                last_taken = Some(taken);
            }
            CommitOutcome::Unconfirmed { path, rival, why } => {
                let done = procedure.unconfirmed(&base, &path, &rival).await;
                return Err(Error::new(
                    unsettled_write_kind(&path),
                    format!(
                        "{}: {}; {done}",
                        target.subject(procedure.name()),
                        CommitOutcome::unconfirmed_message(&path, &rival, &why)
                    ),
                ));
            }
            CommitOutcome::Unknown { why } => {
                let done = procedure.unknown().await;
                return Err(Error::new(
                    ErrorKind::NetworkError,
                    format!(
                        "{why}; the commit may or may not have landed{}",
                        tail(done.as_deref())
                    ),
                ));
            }
        }
    }
    let done = procedure.exhausted().await;
    Err(Error::new(
        ErrorKind::LimitExceeded,
        format!(
            "{}: {max_attempts} attempt(s) conflicted with concurrent writers (last taken name: \
             {}){}",
            target.subject(procedure.name()),
            last_taken.as_deref().unwrap_or("none"),
            tail(done.as_deref())
        ),
    ))
}

fn tail(text: Option<&str>) -> String {
    text.map_or_else(String::new, |t| format!("; {t}"))
}

/// Deletes `paths`, files a statement wrote that no commit references, never one outside
/// `location`. Returns those not deleted, each with the reason.
pub async fn delete_uncommitted(io: &FileIO, location: &str, paths: &[String]) -> Vec<String> {
    let (inside, outside): (Vec<String>, Vec<String>) =
        paths.iter().cloned().partition(|p| is_under(location, p));
    let mut kept: Vec<String> = outside
        .into_iter()
        .map(|p| format!("'{p}' (outside the table location)"))
        .collect();
    for outcome in io.delete_many(&inside).await {
        if let Err(e) = outcome.result {
            kept.push(format!("'{}' ({})", outcome.uri, e.message()));
        }
    }
    kept
}

/// A path table: its newest `metadata/` file, committed by [`commit`].
#[derive(Debug, Clone, Copy)]
pub struct PathTable<'a> {
    pub io: &'a FileIO,
    pub location: &'a str,
    pub settings: &'a MetadataSettings,
}

impl CommitTarget for PathTable<'_> {
    async fn load_newest(&self, _procedure: &str) -> Result<LocatedMetadata> {
        locate(self.io, self.location, self.settings).await
    }

    async fn commit_on(
        &self,
        base: &LocatedMetadata,
        new_metadata: TableMetadata,
        options: &CommitOptions,
    ) -> Result<CommitOutcome> {
        commit(self.io, base, new_metadata, options).await
    }

    fn io(&self) -> &FileIO {
        self.io
    }

    fn location(&self) -> &str {
        self.location
    }

    fn subject(&self, _procedure: &str) -> String {
        format!("Cannot commit to Iceberg table at '{}'", self.location)
    }
}

/// A metadata edit that writes no other file: `change` computes the new metadata from the
/// newest (`None`: nothing to write). Returns what was committed.
pub struct Edit<'n, F> {
    pub name: &'n str,
    pub options: CommitOptions,
    pub change: F,
}

impl<F> Procedure for Edit<'_, F>
where
    F: FnMut(&TableMetadata) -> Result<Option<TableMetadata>>,
{
    type Output = Option<Committed>;

    fn name(&self) -> &str {
        self.name
    }

    async fn step(&mut self, _attempt: u32, base: &LocatedMetadata) -> Result<Step<Self::Output>> {
        Ok(match (self.change)(&base.metadata)? {
            None => Step::Done(None),
            Some(metadata) => Step::Commit(Box::new(Attempt {
                metadata,
                written: Vec::new(),
                options: self.options,
            })),
        })
    }

    async fn committed(
        &mut self,
        _base: &LocatedMetadata,
        done: Committed,
    ) -> Result<Self::Output> {
        Ok(Some(done))
    }
}

#[cfg(test)]
#[path = "protocol_tests.rs"]
mod tests;
