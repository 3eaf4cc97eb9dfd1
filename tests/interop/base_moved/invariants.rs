//! The invariants checked after every history, whether the statement succeeded or failed. Each
//! check returns the violations it found, as sentences naming snapshots and files.
//!
//! 1. Every `replace` snapshot reads the same rows as its parent: pyiceberg (row count and an
//!    order-free digest of the rows) and ClickHouse (`count()`, `sum(cityHash64(*))`) each read
//!    both by snapshot id ([`replace_pairs`], [`check_rows`]); both readers read every snapshot
//!    asked for, and agree on its row count.
//! 2. The other writer's last commit is an ancestor of (or is) the final head of the ref it wrote,
//!    and that head is the writer's snapshot or one committed after it: a statement may build on
//!    the writer's commit, not move the ref over it to a snapshot that already existed (only a
//!    fast-forward may, by its meaning). A v3 upgrade stays, and every snapshot committed after
//!    it carries `first-row-id` ([`check_writer_kept`]). When the statement is itself a rollback
//!    of main, instead: it either failed, or main is at the snapshot it names (the one asked for,
//!    or main's newest ancestor older than the timestamp) in main's ancestry as the writer left
//!    it ([`check_outcome`]).
//! 3. Every file a snapshot references (manifest list, manifests, live data and delete files,
//!    statistics) exists, and every ref names a listed snapshot ([`check_files`]).
//!
//! Beside them: a statement that failed changed nothing ([`check_outcome`]).

use std::collections::{BTreeMap, BTreeSet, HashSet};

use futures::{StreamExt, TryStreamExt};
use icetrim::internals::iceberg::manifest::read_manifest;
use icetrim::internals::iceberg::manifest_list::read_manifest_list;
use icetrim::internals::iceberg::metadata::TableMetadata;
use icetrim::internals::iceberg::spec::{FormatVersion, MAIN_BRANCH};
use icetrim::internals::io::{FileIO, path_key};
use serde_json::Value;

use super::cases::{Statement, ancestors};
use super::writer::Effect;

/// The refs, snapshots and format version of one metadata: what "changed nothing" compares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    pub refs: BTreeMap<String, i64>,
    pub snapshots: BTreeSet<i64>,
    pub format_version: u8,
}

impl State {
    pub fn of(md: &TableMetadata) -> State {
        State {
            refs: md
                .refs()
                .iter()
                .map(|r| (r.name.clone(), r.snapshot_id))
                .collect(),
            snapshots: md.snapshots().iter().map(|s| s.snapshot_id).collect(),
            format_version: match md.format_version() {
                FormatVersion::V1 => 1,
                FormatVersion::V2 => 2,
                _ => 3,
            },
        }
    }
}

/// A failed statement changed nothing (the table is as `before` it: as the writer left it, or
/// as it was when the writer never ran); a rollback that succeeded put main at its target, an
/// ancestor of main as it stood before the statement's commit.
pub fn check_outcome(
    statement: &Statement,
    result: &Result<String, String>,
    before: &State,
    last: &TableMetadata,
) -> Vec<String> {
    let now = State::of(last);
    let mut out = Vec::new();
    match result {
        Err(e) if now != *before => out.push(format!(
            "the statement failed ({e}) but changed the table: {before:?} became {now:?}"
        )),
        Ok(_) if statement.is_rollback() => {
            let line = ancestors(last, before.refs.get(MAIN_BRANCH).copied());
            let main = now.refs.get(MAIN_BRANCH).copied();
            match statement.rollback_target(last, &line) {
                Some(target) if main == Some(target) => {}
                Some(target) => out.push(format!(
                    "the rollback succeeded but main is at {main:?}, not at {target}"
                )),
                None => out.push(format!(
                    "the rollback succeeded (main at {main:?}) though main's ancestry when it \
                     committed, {line:?}, holds no such target"
                )),
            }
        }
        Ok(_) => {}
        Err(_) => {}
    }
    out
}

/// Nothing the other writer did was undone (see the module comment for a rollback statement).
pub fn check_writer_kept(
    effect: &Effect,
    statement: &Statement,
    after_writer: &State,
    last: &TableMetadata,
) -> Vec<String> {
    match effect {
        Effect::RefAt { name, .. } if name == MAIN_BRANCH && statement.is_rollback() => Vec::new(),
        Effect::RefAt { name, snapshot } => {
            let head = last.ref_named(name).map(|r| r.snapshot_id);
            let Some(head) = head.filter(|h| ancestors(last, Some(*h)).contains(snapshot)) else {
                return vec![format!(
                    "the writer's commit ({name} at {snapshot}) was undone: {name} is now at \
                     {head:?}, whose ancestry does not hold {snapshot}"
                )];
            };
            let moved_back = head != *snapshot && after_writer.snapshots.contains(&head);
            if moved_back && !statement.fast_forwards() {
                return vec![format!(
                    "the writer's commit ({name} at {snapshot}) was undone: the statement moved \
                     {name} on to {head}, a snapshot that existed before the writer's commit"
                )];
            }
            Vec::new()
        }
        Effect::FormatV3 => {
            let mut out = Vec::new();
            if last.format_version() != FormatVersion::V3 {
                out.push(format!(
                    "the writer's upgrade to v3 was undone: format version {:?}",
                    last.format_version()
                ));
            }
            for s in last.snapshots() {
                let new = !after_writer.snapshots.contains(&s.snapshot_id);
                if new && (s.first_row_id.is_none() || s.added_rows.is_none()) {
                    out.push(format!(
                        "snapshot {} was committed to the v3 table without first-row-id / \
                         added-rows",
                        s.snapshot_id
                    ));
                }
            }
            out
        }
    }
}

/// Every file the metadata references exists under the table (one listing, then every manifest
/// list and manifest read once, concurrently); every ref names a snapshot of the table.
pub async fn check_files(io: &FileIO, location: &str, md: &TableMetadata) -> Vec<String> {
    let listed: Vec<_> = match io.list(location).try_collect().await {
        Ok(files) => files,
        Err(e) => return vec![format!("cannot list {location}: {e}")],
    };
    let present: HashSet<String> = listed.iter().map(|f| path_key(&f.uri)).collect();
    let mut out = Vec::new();
    // The paths among `paths` (with their snapshot) that exist; a violation for each other one.
    let kept = |what: &str, paths: Vec<(String, i64)>, out: &mut Vec<String>| {
        let (here, gone): (Vec<_>, Vec<_>) = paths
            .into_iter()
            .partition(|(p, _)| present.contains(&path_key(p)));
        out.extend(
            gone.iter()
                .map(|(p, owner)| format!("{what} {p} of snapshot {owner} is missing")),
        );
        here
    };
    for r in md
        .refs()
        .iter()
        .filter(|r| md.snapshot(r.snapshot_id).is_none())
    {
        out.push(format!(
            "ref {} names snapshot {}, which the table does not list",
            r.name, r.snapshot_id
        ));
    }
    let statistics = md
        .statistics()
        .iter()
        .map(|s| (s.path.clone(), s.snapshot_id));
    kept("statistics file", statistics.collect(), &mut out);
    let lists = md
        .snapshots()
        .iter()
        .filter_map(|s| s.manifest_list.clone().map(|l| (l, s.snapshot_id)));
    let lists = kept("manifest list", lists.collect(), &mut out);
    let mut manifests = BTreeMap::new();
    for (read, owner) in read_all(io, lists, read_manifest_list).await {
        match read {
            Ok(list) => manifests.extend(list.into_iter().map(|m| (m.manifest_path, owner))),
            Err(e) => out.push(e),
        }
    }
    let manifests = kept("manifest", manifests.into_iter().collect(), &mut out);
    for (read, owner) in read_all(io, manifests, read_manifest).await {
        match read {
            Ok(manifest) => {
                let live = manifest.entries.into_iter().filter(|e| e.status.is_live());
                let files = live.map(|e| (e.data_file.file_path, owner)).collect();
                kept("file", files, &mut out);
            }
            Err(e) => out.push(e),
        }
    }
    out
}

/// Read and parse each of `paths` (16 at once): the parsed file or why not, with its snapshot.
async fn read_all<T>(
    io: &FileIO,
    paths: Vec<(String, i64)>,
    parse: impl Fn(&[u8], &str) -> icetrim::Result<T> + Copy,
) -> Vec<(Result<T, String>, i64)> {
    futures::stream::iter(paths)
        .map(|(path, owner)| async move {
            let read = match io.read(&path).await {
                Ok(bytes) => parse(&bytes, &path).map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            (read.map_err(|e| format!("cannot read {path}: {e}")), owner)
        })
        .buffer_unordered(16)
        .collect()
        .await
}

/// Each `replace` snapshot with its parent.
pub fn replace_pairs(md: &TableMetadata) -> Vec<(i64, i64)> {
    md.snapshots()
        .iter()
        .filter(|s| s.operation() == Some("replace"))
        .filter_map(|s| s.parent_snapshot_id.map(|p| (s.snapshot_id, p)))
        .collect()
}

/// Invariant 1 on the readers' answers (`snapshot_digests`), plus: every snapshot read by both,
/// with the same row count.
pub fn check_rows(pairs: &[(i64, i64)], digests: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let Some(by_id) = digests.as_object() else {
        return vec![format!("no digests: {digests}")];
    };
    for (sid, entry) in by_id {
        for (reader, key) in [("pyiceberg", "py"), ("ClickHouse", "ch")] {
            if entry[key].is_null() {
                let why = &entry[format!("{key}_error")];
                out.push(format!("{reader} cannot read snapshot {sid}: {why}"));
            }
        }
        let (py, ch) = (&entry["py"][0], &entry["ch"][0]);
        if !py.is_null() && !ch.is_null() && py != ch {
            out.push(format!(
                "snapshot {sid}: pyiceberg reads {py} rows, ClickHouse {ch}"
            ));
        }
    }
    for (replace, parent) in pairs {
        let (r, p) = (&digests[replace.to_string()], &digests[parent.to_string()]);
        for (reader, key) in [("pyiceberg", "py"), ("ClickHouse", "ch")] {
            let (a, b) = (&r[key], &p[key]);
            if !a.is_null() && !b.is_null() && a != b {
                out.push(format!(
                    "replace snapshot {replace} reads other rows than its parent {parent} \
                     ({reader}: [rows, digest] {a} vs {b})"
                ));
            }
        }
    }
    out
}

/// Each check can fail: it sees the violation it is about on a table broken on purpose.
mod checks_can_fail {
    use icetrim::internals::generate::{GenerateOptions, generate};
    use icetrim::internals::iceberg::locate::{MetadataSettings, locate};
    use icetrim::internals::iceberg::txn::refs::set_current_snapshot;
    use serde_json::json;

    use super::*;

    async fn generated() -> (tempfile::TempDir, String, TableMetadata) {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let location = dir.path().join("t").to_str().expect("UTF-8").to_string();
        let mut o = GenerateOptions::new(&location, FormatVersion::V2, 4, 2, 7, 1_767_225_600_000);
        o.parquet_data = true;
        generate(&FileIO::local(), &o).await.expect("generate");
        let md = locate(&FileIO::local(), &location, &MetadataSettings::default())
            .await
            .expect("locate")
            .metadata;
        (dir, location, md)
    }

    #[tokio::test]
    async fn a_missing_data_file_is_seen() {
        let (_dir, location, md) = generated().await;
        assert_eq!(
            check_files(&FileIO::local(), &location, &md).await,
            Vec::<String>::new()
        );
        let data = std::fs::read_dir(format!("{location}/data"))
            .expect("data/")
            .map(|e| e.expect("an entry").path())
            .find(|p| p.extension().is_some_and(|e| e == "parquet"))
            .expect("a data file");
        std::fs::remove_file(&data).expect("remove it");
        let found = check_files(&FileIO::local(), &location, &md).await;
        let name = data.file_name().and_then(|n| n.to_str()).expect("a name");
        assert!(
            found
                .iter()
                .any(|v| v.contains(name) && v.contains("missing")),
            "{found:?}"
        );
    }

    #[tokio::test]
    async fn an_undone_commit_is_seen() {
        let (_dir, _location, md) = generated().await;
        let head = md.current_snapshot().expect("a head").clone();
        let parent = head.parent_snapshot_id.expect("a parent");
        let rolled_back = set_current_snapshot(&md, parent, head.timestamp_ms + 1).expect("edit");
        let effect = Effect::RefAt {
            name: MAIN_BRANCH.into(),
            snapshot: head.snapshot_id,
        };
        let after = State::of(&md);
        let compact = Statement::RewriteManifests;
        assert!(check_writer_kept(&effect, &compact, &after, &md).is_empty());
        let found = check_writer_kept(&effect, &compact, &after, &rolled_back);
        assert!(found.iter().any(|v| v.contains("undone")), "{found:?}");
        // A rollback statement may do exactly that, when it names the parent.
        let rollback = Statement::RollbackToSnapshot(parent);
        assert!(check_writer_kept(&effect, &rollback, &after, &rolled_back).is_empty());
        let ok: Result<String, String> = Ok(String::new());
        assert!(check_outcome(&rollback, &ok, &after, &rolled_back).is_empty());
        let failed: Result<String, String> = Err("refused".into());
        let found = check_outcome(&rollback, &failed, &after, &rolled_back);
        assert!(
            found.iter().any(|v| v.contains("changed the table")),
            "{found:?}"
        );
    }

    #[test]
    fn a_replace_with_other_rows_is_seen() {
        let same = json!({"1": {"py": [3, 10], "ch": [3, "77"]},
                          "2": {"py": [3, 10], "ch": [3, "77"]}});
        assert_eq!(check_rows(&[(2, 1)], &same), Vec::<String>::new());
        let lost = json!({"1": {"py": [3, 10], "ch": [3, "77"]},
                          "2": {"py": [2, 11], "ch": [2, "78"]}});
        let found = check_rows(&[(2, 1)], &lost);
        assert_eq!(found.len(), 2, "{found:?}");
        let unreadable = json!({"1": {"py": null, "py_error": "boom", "ch": [3, "77"]}});
        assert_eq!(check_rows(&[], &unreadable).len(), 1);
    }
}
