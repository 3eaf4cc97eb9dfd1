//! The cases of the base-moved property test, drawn from one seed: the shape of the generated
//! history, the icetrim statement and the other writer that commits between the statement's plan
//! and its commit. The (statement, writer) pair is not drawn but taken in turn from the seed
//! (`seed % pairs`), so that any run of as many cases as there are pairs covers every pair.
//!
//! Kinds are chosen here; their concrete arguments (snapshot ids, branch names) are chosen later
//! from the table as it stands right before the statement (`choose_statement`, `choose_writer`).

use std::collections::BTreeSet;

use icetrim::internals::generate::{GenerateOptions, Mix};
use icetrim::internals::iceberg::metadata::TableMetadata;
use icetrim::internals::iceberg::spec::{FormatVersion, MAIN_BRANCH, RefKind};
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};

/// Where the table lives and how commits reach it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// A path table on local disk (commits write `metadata/` directly).
    Path,
    /// A table on the S3 emulator registered in the test REST catalog.
    Rest,
    /// A table on the S3 emulator registered in moto's Glue.
    Glue,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Path => "path",
            Backend::Rest => "rest",
            Backend::Glue => "glue",
        }
    }
}

/// The icetrim statement, by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatementKind {
    Compact,
    RewriteManifests,
    RollbackToSnapshot,
    RollbackToTimestamp,
    SetCurrentSnapshot,
    FastForward,
    Cherrypick,
    ReplaceBranch,
}

const STATEMENTS: [StatementKind; 8] = [
    StatementKind::Compact,
    StatementKind::RewriteManifests,
    StatementKind::RollbackToSnapshot,
    StatementKind::RollbackToTimestamp,
    StatementKind::SetCurrentSnapshot,
    StatementKind::FastForward,
    StatementKind::Cherrypick,
    StatementKind::ReplaceBranch,
];

/// The other writer, by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriterKind {
    Rollback,
    SetCurrent,
    ReplaceBranch,
    Delete,
    Append,
    UpgradeFormat,
}

const WRITERS: [WriterKind; 6] = [
    WriterKind::Rollback,
    WriterKind::SetCurrent,
    WriterKind::ReplaceBranch,
    WriterKind::Delete,
    WriterKind::Append,
    WriterKind::UpgradeFormat,
];

/// Writers a backend can run: the test REST catalog is pyiceberg 0.12's `SqlCatalog`, which
/// refuses `upgrade-format-version` to 3 (it cannot write v3 metadata), so REST has no upgrade.
fn writers(backend: Backend) -> Vec<WriterKind> {
    WRITERS
        .into_iter()
        .filter(|w| backend != Backend::Rest || *w != WriterKind::UpgradeFormat)
        .collect()
}

/// How a compaction is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactMode {
    /// `OPTIMIZE TABLE t` (every file with a delete file, groups of 5 files or more).
    Optimize,
    /// `OPTIMIZE` with `min_input_files = 2`.
    OptimizeSmallGroups,
    /// `rewrite_data_files(rewrite_all = 1)`.
    RewriteAll,
}

/// One history: everything is drawn from `seed`.
#[derive(Debug, Clone)]
pub struct Case {
    pub seed: u64,
    pub statement: StatementKind,
    pub writer: WriterKind,
    /// Commit a position delete on main's head before the statement (so that main's head is a
    /// merge-on-read delete whose parent lacks it, the shape a rollback race needs).
    pub delete_on_head: bool,
    pub compact_mode: CompactMode,
    pub rng: StdRng,
}

impl Case {
    pub fn new(seed: u64, backend: Backend) -> Case {
        let writers = writers(backend);
        let pairs = STATEMENTS.len() * writers.len();
        let pair = (seed % pairs as u64) as usize;
        let mut rng = StdRng::seed_from_u64(seed);
        let compact_mode = *[
            CompactMode::Optimize,
            CompactMode::OptimizeSmallGroups,
            CompactMode::RewriteAll,
        ]
        .choose(&mut rng)
        .expect("three modes");
        Case {
            seed,
            statement: STATEMENTS[pair / writers.len()],
            writer: writers[pair % writers.len()],
            delete_on_head: rng.random_bool(0.75),
            compact_mode,
            rng,
        }
    }

    /// `statement × writer`, for messages.
    pub fn pair(&self) -> String {
        format!("{:?} × {:?}", self.statement, self.writer)
    }

    /// The generated history: a v2 table of real Parquet files (position deletes included),
    /// 3 to 6 main snapshots, sometimes a branch, a tag, a staged snapshot and two partitions.
    pub fn history(&mut self, location: &str, now_ms: i64) -> GenerateOptions {
        let rng = &mut self.rng;
        let main = rng.random_range(3..=6);
        let branches = rng.random_range(0..=1);
        let branch_commits = rng.random_range(1..=2);
        let staged = rng.random_range(0..=1);
        let snapshots = main + branches * branch_commits + staged;
        let files = rng.random_range(1..=3);
        let mut o = GenerateOptions::new(
            location,
            FormatVersion::V2,
            snapshots,
            files,
            rng.random(),
            now_ms,
        );
        o.parquet_data = true;
        o.rows_per_file = Some(rng.random_range(3..=12));
        o.partitions = if rng.random_bool(0.3) { 2 } else { 0 };
        o.branches = branches;
        o.branch_commits = branch_commits;
        o.staged = staged;
        o.tags = rng.random_range(0..=1);
        o.span_ms = 86_400_000;
        // No generated `replace`: the generator's stand-in compaction writes new rows, and every
        // `replace` snapshot must read as its parent (the first invariant).
        o.mix = Mix::parse("append=45,merge=10,delete=35,overwrite=10").expect("a mix");
        o
    }
}

/// The statement, with its arguments.
#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    Compact(CompactMode),
    RewriteManifests,
    RollbackToSnapshot(i64),
    /// Main back to its newest ancestor strictly older than this timestamp.
    RollbackToTimestamp(i64),
    SetCurrentSnapshot(i64),
    /// `fast_forward('main', branch)`.
    FastForward(String),
    Cherrypick(i64),
    /// `REPLACE BRANCH name AS OF VERSION id`.
    ReplaceBranch(String, i64),
}

impl Statement {
    /// Whether the statement rolls main back (its meaning is to undo main's newer commits).
    pub fn is_rollback(&self) -> bool {
        matches!(
            self,
            Statement::RollbackToSnapshot(_) | Statement::RollbackToTimestamp(_)
        )
    }

    /// Whether the statement may move a ref forward onto a snapshot that already exists
    /// (`fast_forward`, a cherry-pick of a snapshot whose parent is main's head).
    pub fn fast_forwards(&self) -> bool {
        matches!(self, Statement::FastForward(_) | Statement::Cherrypick(_))
    }

    /// The snapshot a rollback must leave main at, given main's ancestry (head first) when the
    /// rollback commits: the snapshot asked for, or main's newest ancestor strictly older than
    /// the timestamp. `None`: the rollback must fail.
    pub fn rollback_target(&self, md: &TableMetadata, line: &[i64]) -> Option<i64> {
        match self {
            Statement::RollbackToSnapshot(id) => line.contains(id).then_some(*id),
            Statement::RollbackToTimestamp(at) => line
                .iter()
                .copied()
                .find(|id| md.snapshot(*id).is_some_and(|s| s.timestamp_ms < *at)),
            _ => None,
        }
    }

    /// The branch the statement moves besides main, if any.
    pub fn branch(&self) -> Option<&str> {
        match self {
            Statement::ReplaceBranch(name, _) | Statement::FastForward(name) => Some(name),
            _ => None,
        }
    }
}

/// What the other writer does, with its arguments.
#[derive(Debug, Clone, PartialEq)]
pub enum Writer {
    /// Main back to this ancestor.
    Rollback(i64),
    /// Main to this snapshot.
    SetCurrent(i64),
    /// This branch (main included) to this snapshot.
    ReplaceBranch(String, i64),
    /// A position delete file on main's head.
    Delete,
    /// A data file appended to main.
    Append,
    /// Format version 2 → 3.
    UpgradeFormat,
}

/// Main's ancestry, head first.
pub fn ancestors(md: &TableMetadata, head: Option<i64>) -> Vec<i64> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    let mut at = head;
    while let Some(id) = at.filter(|id| seen.insert(*id)) {
        out.push(id);
        at = md.snapshot(id).and_then(|s| s.parent_snapshot_id);
    }
    out
}

pub fn main_head(md: &TableMetadata) -> Option<i64> {
    md.ref_named(MAIN_BRANCH).map(|r| r.snapshot_id)
}

/// Branches other than main.
pub fn side_branches(md: &TableMetadata) -> Vec<String> {
    md.refs()
        .iter()
        .filter(|r| r.kind == RefKind::Branch && r.name != MAIN_BRANCH)
        .map(|r| r.name.clone())
        .collect()
}

/// A snapshot other than `not`, any of the table's.
pub fn other_snapshot(md: &TableMetadata, not: Option<i64>, rng: &mut StdRng) -> Option<i64> {
    let ids: Vec<i64> = md
        .snapshots()
        .iter()
        .map(|s| s.snapshot_id)
        .filter(|id| Some(*id) != not)
        .collect();
    ids.choose(rng).copied()
}

/// A proper ancestor of main's head: mostly its parent (after a delete on the head, the shape in
/// which every data file a compaction read is still live after the rollback).
pub fn older_ancestor(md: &TableMetadata, rng: &mut StdRng) -> Option<i64> {
    let line = ancestors(md, main_head(md));
    let older = line.get(1..).unwrap_or_default();
    if older.is_empty() {
        return None;
    }
    if rng.random_bool(0.8) {
        return Some(older[0]);
    }
    older.choose(rng).copied()
}

/// The writer's arguments on the table as it stands before the statement. A writer that cannot
/// act here (a rollback with no ancestor) falls back to moving main to another snapshot.
pub fn choose_writer(case: &mut Case, md: &TableMetadata, statement: &Statement) -> Writer {
    let rng = &mut case.rng;
    let head = main_head(md);
    match case.writer {
        WriterKind::Rollback => match older_ancestor(md, rng) {
            Some(id) => Writer::Rollback(id),
            None => Writer::SetCurrent(other_snapshot(md, head, rng).unwrap_or_default()),
        },
        WriterKind::SetCurrent => {
            Writer::SetCurrent(other_snapshot(md, head, rng).unwrap_or_default())
        }
        WriterKind::ReplaceBranch => {
            let mut names = side_branches(md);
            names.push(MAIN_BRANCH.to_string());
            // The statement's own branch most of the time: the contested ref.
            let name = match statement.branch() {
                Some(b) if rng.random_bool(0.8) => b.to_string(),
                _ => names.choose(rng).cloned().unwrap_or_default(),
            };
            let at = md.ref_named(&name).map(|r| r.snapshot_id);
            Writer::ReplaceBranch(name, other_snapshot(md, at, rng).unwrap_or_default())
        }
        WriterKind::Delete => Writer::Delete,
        WriterKind::Append => Writer::Append,
        WriterKind::UpgradeFormat => Writer::UpgradeFormat,
    }
}
