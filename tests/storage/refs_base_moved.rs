//! Snapshot and ref statements when another writer commits between their plan and their commit.
//! The `before_commit` seam fires the other writer once, right before the statement's first
//! commit attempt; the statement's commit then conflicts (a path table's next version is taken,
//! the REST catalog answers 409, Glue refuses the stale `VersionId`) or, where the catalog can
//! apply it on the newer state (REST, nothing the statement asserts moved), lands there.
//!
//! The same scenarios run on a path table, a REST catalog table and a Glue table (moto behind
//! `tests/py/glue_proxy.py`, which enforces Glue's `VersionId` as AWS does; moto alone ignores
//! it), each on its own copy of the `py_v2_refs_wap` fixture (main a1..a7, branch `audit` at b2
//! forked at a5, tag `v1` on a3, staged WAP snapshots w1 on a5 and w2 on a7). Each asserts the
//! final refs, that the other writer's commit was not undone (a rollback's meaning is to move
//! `main` back; its snapshot stays listed), a refusal's code and text and that it changed
//! nothing; the scenarios that write a snapshot on the moved head are read back by pyiceberg and
//! ClickHouse (chdb).

use std::collections::{BTreeMap, HashMap};
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use icetrim::engine::Timestamp;
use icetrim::internals::engine::Runtime;
use icetrim::internals::iceberg::metadata::TableMetadata;
use icetrim::internals::maintain::target::BeforeCommit;
use icetrim::{Settings, StorageOptions, Table};

use crate::refs_base_moved_cases::{At, Gone, L, Other, Ours, SCENARIOS, Scenario, Stmt, Stmt::*};
use crate::support::backends::{Backend, Place};
use crate::support::expire::current_metadata;
use crate::support::fixtures::{self, run_python_json};
use crate::support::{catalog, emulator_var, rest_catalog, unique};

/// The fixture's snapshot ids by label and their timestamps.
#[derive(Clone)]
struct Ids {
    by_label: HashMap<String, i64>,
    timestamps: HashMap<i64, i64>,
}

impl Ids {
    fn id(&self, label: &str) -> i64 {
        *self
            .by_label
            .get(label)
            .unwrap_or_else(|| panic!("no snapshot labelled {label}"))
    }

    fn between(&self, a: &str, b: &str) -> i64 {
        (self.timestamps[&self.id(a)] + self.timestamps[&self.id(b)]) / 2
    }

    /// `text` with `{label}` and `{other}` replaced by ids.
    fn fill(&self, text: &str, other: Option<i64>) -> String {
        let mut out = text.to_string();
        for (label, id) in &self.by_label {
            out = out.replace(&format!("{{{label}}}"), &id.to_string());
        }
        if let Some(id) = other {
            out = out.replace("{other}", &id.to_string());
        }
        out
    }
}

/// Run `stmt` on `table`: the procedure's `current_snapshot_id` (none for the DDL).
async fn exec(table: &Table, stmt: Stmt, ids: &Ids) -> icetrim::Result<Option<i64>> {
    let id = |label| ids.id(label);
    let procedure = match stmt {
        Rollback(l) => table.rollback_to_snapshot(id(l)),
        RollbackBetween(a, b) => table.rollback_to_timestamp(Timestamp::Millis(ids.between(a, b))),
        SetCurrent(l) => table.set_current_snapshot(id(l)),
        FastForward(branch, to) => table.fast_forward(branch, to),
        Cherrypick(l) => table.cherrypick_snapshot(id(l)),
        Publish(wap) => table.publish_changes(wap),
        ddl => {
            let alter = match ddl {
                CreateBranch(n, l) => table.create_branch(n).as_of_version(id(l)),
                ReplaceBranch(n, l) => table.replace_branch(n).as_of_version(id(l)),
                CreateOrReplaceBranch(n, l) => {
                    table.create_branch(n).or_replace().as_of_version(id(l))
                }
                ReplaceTag(n, l) => table.replace_tag(n).as_of_version(id(l)),
                DropBranch(n) => table.drop_branch(n),
                DropTag(n) => table.drop_tag(n),
                SetProperty(k, v) => table.set_properties([(k, v)]),
                UnsetProperty(k) => table.unset_properties([k]),
                procedure => unreachable!("{procedure:?} is a procedure"),
            };
            return alter.execute().await.map(|_| None);
        }
    };
    let done = procedure.execute().await?;
    Ok(done.metrics.and_then(|m| m.current_snapshot_id))
}

/// One scenario's own copy of the fixture, and how to reach it.
struct Copy {
    place: Place,
    /// Glue: the endpoint (the proxy in front of moto).
    glue_endpoint: Option<String>,
}

impl Copy {
    fn name(&self) -> String {
        format!(
            "{}.t",
            self.place.namespace.as_deref().expect("a catalog table")
        )
    }

    fn catalog(&self) -> (String, Vec<(&'static str, String)>) {
        match self.place.backend {
            Backend::Rest => (
                format!("{}/v1", rest_catalog::uri()),
                vec![
                    ("catalog_type", "rest".to_string()),
                    (
                        "warehouse",
                        self.place.warehouse.clone().expect("a warehouse"),
                    ),
                    ("vended_credentials", "0".to_string()),
                ],
            ),
            Backend::Glue => (
                self.glue_endpoint.clone().expect("the Glue endpoint"),
                vec![("catalog_type", "glue".to_string())],
            ),
            other => panic!("{other:?} is not a catalog"),
        }
    }

    async fn table(&self) -> Table {
        if self.place.backend == Backend::Local {
            return Table::open(self.place.location(), StorageOptions::default())
                .expect("open the path table");
        }
        let (endpoint, mut settings) = self.catalog();
        let storage = emulator_var("ICETRIM_S3_ENDPOINT");
        settings.extend([
            ("storage_endpoint", storage),
            ("aws_access_key_id", "testing".to_string()),
            ("aws_secret_access_key", "testing".to_string()),
            ("region", "us-east-1".to_string()),
        ]);
        let pairs: Vec<(&str, &str)> = settings.iter().map(|(k, v)| (*k, v.as_str())).collect();
        Table::open_catalog(&endpoint, &pairs, &self.name())
            .await
            .unwrap_or_else(|e| panic!("open {}: {e}", self.name()))
    }

    /// The table's current metadata (through the catalog for catalog tables).
    async fn metadata(&self) -> TableMetadata {
        if self.place.backend == Backend::Local {
            let path = current_metadata(Path::new(self.place.location())).await;
            let bytes = std::fs::read(&path).expect("read the metadata");
            return TableMetadata::parse(&bytes, &path.to_string_lossy()).expect("metadata");
        }
        let (endpoint, settings) = self.catalog();
        let pairs: Vec<(&str, &str)> = settings.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let def = catalog::catalog_database("lake", &endpoint, &pairs);
        let target =
            catalog::open_target(&Runtime::default(), &Settings::new(), &def, &self.name()).await;
        target
            .locate_newest("test")
            .await
            .unwrap_or_else(|e| panic!("load {}: {e}", self.name()))
            .metadata
    }
}

fn refs_of(md: &TableMetadata) -> BTreeMap<String, i64> {
    md.refs()
        .iter()
        .map(|r| (r.name.clone(), r.snapshot_id))
        .collect()
}

/// The other writer's statement, run once by the seam: its outcome lands in the returned slot.
type Slot = Arc<Mutex<Option<Result<Option<i64>, String>>>>;

fn fire_once(other: Table, stmt: Stmt, ids: Ids) -> (BeforeCommit, Slot) {
    let slot: Slot = Arc::default();
    let fired = Arc::new(AtomicBool::new(false));
    let out = Arc::clone(&slot);
    let hook = BeforeCommit(Arc::new(move || {
        let (other, ids, fired, out) = (other.clone(), ids.clone(), fired.clone(), out.clone());
        Box::pin(async move {
            if fired.swap(true, Ordering::SeqCst) {
                return;
            }
            // On a blocking thread of its own: the seam's future must be `Send`, and the
            // compiler cannot prove that of every statement's future.
            let runtime = tokio::runtime::Handle::current();
            let done = tokio::task::spawn_blocking(move || {
                runtime
                    .block_on(exec(&other, stmt, &ids))
                    .map_err(|e| e.to_string())
            })
            .await
            .expect("the other writer's thread");
            *out.lock().expect("the slot") = Some(done);
        })
    }));
    (hook, slot)
}

async fn run_scenario(s: &Scenario, copy: &Copy, ids: &Ids, scratch: &Path) {
    let label = format!("{} [{}]", s.name, copy.place.backend.name());
    let plain = copy.table().await;
    for step in s.setup {
        exec(&plain, *step, ids)
            .await
            .unwrap_or_else(|e| panic!("{label}: setup {step:?}: {e}"));
    }
    let before = copy.metadata().await;
    let (hook, slot) = fire_once(copy.table().await, s.other, ids.clone());
    let ours = copy.table().await.before_commit(hook);
    let result = exec(&ours, s.statement, ids).await;
    let other = slot
        .lock()
        .expect("the slot")
        .take()
        .unwrap_or_else(|| panic!("{label}: the other writer never ran"))
        .unwrap_or_else(|e| panic!("{label}: the other writer failed: {e}"));
    let after = copy.metadata().await;
    let resolve = |at: At, ours: Option<i64>| match at {
        L(l) => Some(ids.id(l)),
        Other => Some(other.unwrap_or_else(|| panic!("{label}: the other writer made none"))),
        Ours => Some(ours.unwrap_or_else(|| panic!("{label}: the statement wrote none"))),
        Gone => None,
    };
    let (code, refusal) = match s.rest_refusal {
        Some(tail) if copy.place.backend == Backend::Rest => (86, Some(tail)),
        _ => (290, s.refusal),
    };
    let ours_id = match (&result, refusal.map(|tail| ids.fill(tail, other))) {
        (Ok(id), None) => *id,
        (Err(e), Some(tail)) => {
            assert_eq!(e.code(), code, "{label}: {e}");
            assert!(
                e.message().ends_with(&tail),
                "{label}:\n{e}\nexpected …{tail}"
            );
            if !matches!(s.other, SetProperty(..) | UnsetProperty(_)) {
                assert_eq!(after.properties(), before.properties(), "{label}");
            }
            None
        }
        (Ok(_), Some(tail)) => panic!("{label}: committed, expected the refusal …{tail}"),
        (Err(e), None) => panic!("{label}: {e}"),
    };
    let mut expected = refs_of(&before);
    for (name, at) in s.refs {
        match resolve(*at, ours_id) {
            Some(id) => expected.insert(name.to_string(), id),
            None => expected.remove(*name),
        };
    }
    assert_eq!(refs_of(&after), expected, "{label}: the refs at the end");
    // The other writer's snapshot is never removed; ours is there when it wrote one.
    let new_snapshot = other.filter(|id| before.snapshot(*id).is_none());
    let written = usize::from(new_snapshot.is_some()) + usize::from(s.ours_parent.is_some());
    assert_eq!(
        after.snapshots().len(),
        before.snapshots().len() + written,
        "{label}: snapshots at the end"
    );
    if let Some(id) = new_snapshot {
        assert!(after.snapshot(id).is_some(), "{label}: {id} was removed");
    }
    if let Some(parent) = s.ours_parent {
        let mine = after
            .snapshot(ours_id.expect("our snapshot"))
            .expect("our snapshot is listed");
        assert_eq!(mine.parent_snapshot_id, resolve(parent, ours_id), "{label}");
    }
    for (key, value) in s.properties {
        assert_eq!(after.property(key), *value, "{label}: property {key}");
    }
    if s.interop {
        both_engines_read_every_ref(&copy.place, scratch, &label).await;
    }
}

/// pyiceberg and ClickHouse (chdb) read every ref of the table with the same rows.
async fn both_engines_read_every_ref(place: &Place, scratch: &Path, label: &str) {
    let dir = place.local_view(scratch).await;
    let metadata = current_metadata(&dir).await;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/refs_rows.py");
    let report = run_python_json(
        &script,
        &[
            dir.to_str().expect("UTF-8 paths"),
            metadata.to_str().expect("UTF-8 paths"),
        ],
    );
    let refs = report["refs"].as_object().expect("refs");
    assert!(refs.contains_key("main"), "{label}: {report}");
    for name in refs.keys() {
        let py = &report["pyiceberg"][name];
        assert!(
            py.as_array().is_some_and(|rows| !rows.is_empty()),
            "{label}: pyiceberg read no rows of {name}: {report}"
        );
        assert_eq!(
            py, &report["clickhouse"][name],
            "{label}: ref {name}: pyiceberg and ClickHouse differ"
        );
    }
}

/// Every scenario on its own copy of one fixture build on `backend`.
async fn run_all(backend: Backend, glue_endpoint: Option<String>) {
    let fx = fixtures::make_fixture("py_v2_refs_wap", fixtures::now_ms(), false);
    let original = Place::local(&fx.table_dir(), fx.fact_str("location"));
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let snapshots = fx.facts["snapshots"].as_object().expect("snapshots");
    let by_label: HashMap<String, i64> = snapshots
        .iter()
        .map(|(label, id)| (label.clone(), id.as_i64().expect("an id")))
        .collect();
    let metadata_path = current_metadata(&fx.table_dir()).await;
    let md = TableMetadata::parse(
        &std::fs::read(&metadata_path).expect("read the fixture metadata"),
        &metadata_path.to_string_lossy(),
    )
    .expect("the fixture metadata");
    let timestamps = md
        .snapshots()
        .iter()
        .map(|s| (s.snapshot_id, s.timestamp_ms))
        .collect();
    let ids = Ids {
        by_label,
        timestamps,
    };
    let mut failures = Vec::new();
    for scenario in SCENARIOS {
        let place = match backend {
            Backend::Local => {
                Place::local_copy(&original, &scratch.path().join(unique("table"))).await
            }
            other => Place::copy_of(&original, other).await,
        };
        let copy = Copy {
            place,
            glue_endpoint: glue_endpoint.clone(),
        };
        let ran = AssertUnwindSafe(run_scenario(scenario, &copy, &ids, scratch.path()))
            .catch_unwind()
            .await;
        if let Err(panic) = ran {
            let text = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failures.push(text);
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} scenarios failed on {}:\n{}",
        failures.len(),
        SCENARIOS.len(),
        backend.name(),
        failures.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ref_statements_recheck_a_moved_base_on_a_path_table() {
    run_all(Backend::Local, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ref_statements_recheck_a_moved_base_on_a_rest_catalog_table() {
    run_all(Backend::Rest, None).await;
}

#[cfg(feature = "glue")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ref_statements_recheck_a_moved_base_on_a_glue_table() {
    let proxy = crate::glue_support::Proxy::start();
    run_all(Backend::Glue, Some(proxy.url.clone())).await;
}
