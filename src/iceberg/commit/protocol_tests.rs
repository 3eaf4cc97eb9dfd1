//! The loop's arms, one test each, on a scripted [`CommitTarget`] (answers given in advance, the
//! table in memory) and a recording [`Procedure`].

use std::collections::VecDeque;
use std::sync::Mutex;

use bytes::Bytes;
use serde_json::json;

use super::*;
use crate::error::ErrorKind;

const LOCATION: &str = "memory://bucket/t";

fn metadata(version: u64) -> TableMetadata {
    let doc = json!({
        "format-version": 2,
        "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
        "location": LOCATION,
        "last-sequence-number": 0,
        "last-updated-ms": 1000 + version,
        "last-column-id": 1,
        "current-schema-id": 0,
        "schemas": [{"type": "struct", "schema-id": 0, "fields": []}],
        "default-spec-id": 0,
        "partition-specs": [{"spec-id": 0, "fields": []}],
        "properties": {"version": version.to_string()},
    });
    let file = format!("v{version}.metadata.json");
    TableMetadata::parse(doc.to_string().as_bytes(), &file).expect("metadata")
}

fn located(version: u64) -> LocatedMetadata {
    let path = format!("{LOCATION}/metadata/v{version}.metadata.json");
    LocatedMetadata::from_catalog(&path, metadata(version))
}

/// What the scripted target answers to a commit.
#[derive(Debug, Clone, Copy)]
enum Answer {
    Committed,
    Conflict,
    Unconfirmed,
    Unknown,
}

/// A table whose version grows by one on every load (another writer committed meanwhile) and
/// whose commits answer from a script.
struct Scripted {
    io: FileIO,
    answers: Mutex<VecDeque<Answer>>,
    loads: Mutex<u64>,
    commits: Mutex<Vec<String>>,
}

impl Scripted {
    fn new(answers: &[Answer]) -> Self {
        Scripted {
            io: FileIO::memory(),
            answers: Mutex::new(answers.iter().copied().collect()),
            loads: Mutex::new(0),
            commits: Mutex::new(Vec::new()),
        }
    }

    fn commits(&self) -> Vec<String> {
        self.commits.lock().expect("lock").clone()
    }
}

impl CommitTarget for Scripted {
    async fn load_newest(&self, _procedure: &str) -> Result<LocatedMetadata> {
        let mut loads = self.loads.lock().expect("lock");
        *loads += 1;
        Ok(located(*loads))
    }

    async fn commit_on(
        &self,
        base: &LocatedMetadata,
        new_metadata: TableMetadata,
        _options: &CommitOptions,
    ) -> Result<CommitOutcome> {
        let version = base.version.unwrap_or(0) + 1;
        let path = format!("{LOCATION}/metadata/v{version}.metadata.json");
        self.commits.lock().expect("lock").push(path.clone());
        let answer = self.answers.lock().expect("lock").pop_front();
        Ok(match answer.expect("a scripted answer") {
            Answer::Committed => CommitOutcome::Committed(Box::new(Committed {
                path,
                version,
                metadata: new_metadata,
                version_hint_written: false,
            })),
            Answer::Conflict => CommitOutcome::Conflict {
                taken: format!("{LOCATION}/metadata/v{version}-rival.metadata.json"),
            },
            Answer::Unconfirmed => CommitOutcome::Unconfirmed {
                rival: format!("{LOCATION}/metadata/v{version}-rival.metadata.json"),
                path,
                why: "and ours could not be removed: denied".into(),
            },
            Answer::Unknown => CommitOutcome::Unknown {
                why: "the catalog answered 503".into(),
            },
        })
    }

    fn io(&self) -> &FileIO {
        &self.io
    }

    fn location(&self) -> &str {
        LOCATION
    }

    fn subject(&self, procedure: &str) -> String {
        format!("{procedure} on db.t")
    }
}

/// A procedure writing one file per attempt (inside the table) and naming one outside it;
/// it records what the loop asked and told it.
#[derive(Default)]
struct Recording {
    /// `None`: write a file and commit; `Some(n)`: nothing to write from attempt `n` on.
    done_from: Option<u32>,
    /// (attempt, base version) of every step.
    steps: Vec<(u32, u64)>,
    conflicts: Vec<Vec<String>>,
    told: Vec<&'static str>,
}

fn written_by(attempt: u32) -> String {
    format!("{LOCATION}/metadata/attempt-{attempt}.avro")
}

const OUTSIDE: &str = "memory://bucket/elsewhere/x.avro";

impl Procedure for Recording {
    type Output = Option<String>;

    fn name(&self) -> &str {
        "test_procedure"
    }

    async fn step(&mut self, attempt: u32, base: &LocatedMetadata) -> Result<Step<Self::Output>> {
        self.steps.push((attempt, base.version.unwrap_or(0)));
        if self.done_from.is_some_and(|n| attempt >= n) {
            return Ok(Step::Done(None));
        }
        Ok(Step::Commit(Box::new(Attempt {
            metadata: base.metadata.clone(),
            written: vec![written_by(attempt), OUTSIDE.to_string()],
            options: CommitOptions::default(),
        })))
    }

    async fn committed(
        &mut self,
        _base: &LocatedMetadata,
        done: Committed,
    ) -> Result<Self::Output> {
        self.told.push("committed");
        Ok(Some(done.path))
    }

    async fn conflicted(&mut self, kept: Vec<String>) {
        self.conflicts.push(kept);
    }

    async fn unconfirmed(&mut self, _base: &LocatedMetadata, _ours: &str, _rival: &str) -> String {
        self.told.push("unconfirmed");
        "journal marked".into()
    }

    async fn unknown(&mut self) -> Option<String> {
        self.told.push("unknown");
        Some("journal kept".into())
    }

    async fn exhausted(&mut self) -> Option<String> {
        self.told.push("exhausted");
        Some("outputs deleted".into())
    }
}

/// Writes the files every attempt of `attempts` would write, so the test sees which the loop
/// deleted.
async fn write_attempt_files(io: &FileIO, attempts: u32) {
    for attempt in 0..attempts {
        io.overwrite(&written_by(attempt), Bytes::from_static(b"x"))
            .await
            .expect("written");
    }
    io.overwrite(OUTSIDE, Bytes::from_static(b"x"))
        .await
        .expect("written");
}

async fn exists(io: &FileIO, path: &str) -> bool {
    match io.read(path).await {
        Ok(_) => true,
        Err(e) if e.kind() == ErrorKind::FileDoesntExist => false,
        Err(e) => panic!("{e}"),
    }
}

#[tokio::test]
async fn a_conflict_deletes_the_attempts_files_and_plans_again_on_the_newest() {
    let target = Scripted::new(&[Answer::Conflict, Answer::Committed]);
    write_attempt_files(&target.io, 2).await;
    let mut procedure = Recording::default();
    let done = run(&target, &mut procedure, 4, Some(located(7)))
        .await
        .expect("committed");
    // The first attempt planned on the given base, the second on the newest after the conflict.
    assert_eq!(procedure.steps, [(0, 7), (1, 1)]);
    assert_eq!(done.as_deref(), Some(target.commits()[1].as_str()));
    assert_eq!(procedure.told, ["committed"]);
    assert_eq!(
        procedure.conflicts,
        [vec![format!("'{OUTSIDE}' (outside the table location)")]],
        "the file outside the location is never deleted, and the procedure is told"
    );
    assert!(
        !exists(&target.io, &written_by(0)).await,
        "conflicted: deleted"
    );
    assert!(exists(&target.io, &written_by(1)).await, "committed: kept");
    assert!(exists(&target.io, OUTSIDE).await);
}

#[tokio::test]
async fn every_attempt_conflicting_ends_in_limit_exceeded() {
    let target = Scripted::new(&[Answer::Conflict; 3]);
    write_attempt_files(&target.io, 3).await;
    let mut procedure = Recording::default();
    let e = run(&target, &mut procedure, 3, None)
        .await
        .expect_err("beaten every time");
    assert_eq!(e.kind(), ErrorKind::LimitExceeded, "{e}");
    assert_eq!(
        e.message(),
        format!(
            "test_procedure on db.t: 3 attempt(s) conflicted with concurrent writers (last \
             taken name: {LOCATION}/metadata/v4-rival.metadata.json); outputs deleted"
        )
    );
    assert_eq!(procedure.steps.len(), 3);
    assert_eq!(procedure.conflicts.len(), 3);
    assert_eq!(procedure.told, ["exhausted"]);
    for attempt in 0..3 {
        assert!(!exists(&target.io, &written_by(attempt)).await);
    }
}

#[tokio::test]
async fn an_unconfirmed_commit_deletes_nothing_and_fails_with_the_stores_error() {
    let target = Scripted::new(&[Answer::Unconfirmed]);
    write_attempt_files(&target.io, 1).await;
    let mut procedure = Recording::default();
    let e = run(&target, &mut procedure, 4, None)
        .await
        .expect_err("unconfirmed");
    let ours = &target.commits()[0];
    assert_eq!(e.kind(), crate::io::unsettled_write_kind(ours), "{e}");
    let m = e.message();
    assert!(m.starts_with("test_procedure on db.t: "), "{m}");
    assert!(
        m.contains(&format!("the commit of '{ours}' is unconfirmed")),
        "{m}"
    );
    assert!(m.ends_with("; journal marked"), "{m}");
    assert_eq!(procedure.told, ["unconfirmed"]);
    assert!(procedure.conflicts.is_empty());
    assert_eq!(procedure.steps.len(), 1, "never retried");
    assert!(exists(&target.io, &written_by(0)).await, "nothing deleted");
}

#[tokio::test]
async fn an_unknown_outcome_deletes_nothing_and_fails_with_network_error() {
    let target = Scripted::new(&[Answer::Unknown]);
    write_attempt_files(&target.io, 1).await;
    let mut procedure = Recording::default();
    let e = run(&target, &mut procedure, 4, None)
        .await
        .expect_err("unknown");
    assert_eq!(e.kind(), ErrorKind::NetworkError, "{e}");
    assert_eq!(
        e.message(),
        "the catalog answered 503; the commit may or may not have landed; journal kept"
    );
    assert_eq!(procedure.told, ["unknown"]);
    assert_eq!(procedure.steps.len(), 1, "never retried");
    assert!(exists(&target.io, &written_by(0)).await, "nothing deleted");
}

#[tokio::test]
async fn nothing_to_write_commits_nothing() {
    let target = Scripted::new(&[Answer::Conflict]);
    let mut procedure = Recording {
        done_from: Some(1),
        ..Recording::default()
    };
    // The first attempt conflicts; on the newest metadata there is nothing left to write.
    let done = run(&target, &mut procedure, 4, None).await.expect("ok");
    assert_eq!(done, None);
    assert_eq!(
        target.commits().len(),
        1,
        "only the first attempt committed"
    );
    assert_eq!(procedure.steps, [(0, 1), (1, 2)]);
    assert!(procedure.told.is_empty());
}

#[tokio::test]
async fn a_base_that_cannot_be_written_is_refused_before_planning() {
    let target = Scripted::new(&[]);
    let mut base = located(3);
    base.version = None;
    base.path = format!("{LOCATION}/metadata/current.metadata.json");
    let unversioned = LocatedMetadata::from_catalog(&base.path, base.metadata.clone());
    assert!(unversioned.check_writable().is_ok(), "a catalog names it");
    let mut procedure = Recording::default();
    let path_like = LocatedMetadata {
        from_catalog: false,
        ..base
    };
    let e = run(&target, &mut procedure, 4, Some(path_like))
        .await
        .expect_err("refused");
    assert_eq!(e.kind(), ErrorKind::NotImplemented, "{e}");
    assert!(procedure.steps.is_empty(), "never planned");
    assert!(target.commits().is_empty());
}
