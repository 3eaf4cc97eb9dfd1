//! The table moves between a statement's plan and its commit: the scaffolding of
//! `moved_base_compaction.rs` and `moved_base_manifests.rs`.
//!
//! A [`Moved`] table is pyiceberg's `simple` table (five appends of three rows: snapshot `P`)
//! with a merge-on-read position delete committed on top (`D`, one row deleted), on a path, in the
//! test REST catalog or in moto's Glue (a relocated copy on the S3 emulator). A statement runs on
//! it with [`BeforeCommit`] set: right before its first commit attempt another writer commits an
//! [`Injection`] (a rollback of `main` to `P`, a commit that removes `D`'s delete file, a format
//! version 2 → 3 upgrade, or a plain append). The readers are pyiceberg (every snapshot by its id)
//! and ClickHouse (chdb, the current snapshot), through the catalog for catalog tables.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Schema};
use icetrim::engine::{Engine, QueryResult};
use icetrim::internals::engine::{DatabaseDef, Runtime, open_catalog_table, run_procedure_on};
use icetrim::internals::iceberg::commit::{CommitOptions, CommitOutcome};
use icetrim::internals::iceberg::manifest::DataFile;
use icetrim::internals::iceberg::metadata::TableMetadata;
use icetrim::internals::iceberg::spec::DataContent;
use icetrim::internals::iceberg::txn::{
    FileChanges, Operation, PrepareOptions, Summary, prepare_commit_with,
};
use icetrim::internals::io::FileIO;
use icetrim::internals::maintain::compact::read::{TableState, read_state};
use icetrim::internals::maintain::target::{BeforeCommit, MaintenanceTarget, TableSource};
use icetrim::internals::plan::ProcedureCall;
use parquet::arrow::ArrowWriter;
use serde_json::{Value, json};

use crate::compaction::with_id;
use crate::moved_base_checks::State;
use crate::support::backends::{Backend, Place};
use crate::support::catalog::catalog_database;
use crate::support::fixtures::run_python_json;
use crate::support::glue_catalog::Proxy;
use crate::support::relocate::Root;
use crate::support::{emulator_var, rest_catalog};

/// Where the table lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Path,
    Rest,
    Glue,
}

/// Every kind this build can run (Glue needs the cargo feature `glue`).
pub(crate) fn kinds() -> Vec<Kind> {
    let mut kinds = vec![Kind::Path, Kind::Rest];
    if cfg!(feature = "glue") {
        kinds.push(Kind::Glue);
    }
    kinds
}

/// What the other writer commits between the plan and the commit.
#[derive(Debug, Clone)]
pub(crate) enum Injection {
    /// `main` rolled back to this snapshot: icetrim's `rollback_to_snapshot` on a path table,
    /// pyiceberg's `manage_snapshots().rollback_to_snapshot` through a catalog.
    Rollback(i64),
    /// An overwrite that removes this delete file (the rows it deleted are live again).
    DropDelete(String),
    /// The table's format version goes from 2 to 3 (nothing else changes).
    UpgradeV3,
    /// pyiceberg appends the row `(id, 'row-<id>')`.
    Append(i64),
}

/// The files under the table location right before and right after the injection.
pub(crate) type Listing = BTreeSet<String>;

/// What the other writer needs: how to reach the table (storage, catalog) and read it.
#[derive(Clone)]
pub(crate) struct Writer {
    pub kind: Kind,
    /// The table location as icetrim sees it.
    pub location: String,
    pub io: FileIO,
    /// Catalog tables: the database and the table name (`ns.t`, `<glue database>.t`).
    catalog: Option<(DatabaseDef, String)>,
    /// REST: the warehouse.
    warehouse: Option<String>,
    /// The table as `tests/py/moved_base.py` takes it.
    pub where_json: String,
}

impl Writer {
    /// The table opened for maintenance, without a hook (the other writer's own view).
    pub async fn target(&self) -> MaintenanceTarget {
        match &self.catalog {
            None => MaintenanceTarget {
                source: TableSource::Path,
                io: self.io.clone(),
                location: self.location.clone(),
                metadata_settings: Default::default(),
                table_name: "t".into(),
                settings: icetrim::Settings::new(),
                now_ms: crate::support::fixtures::now_ms(),
                progress: Default::default(),
                before_commit: None,
            },
            Some((def, name)) => {
                open_catalog_table(&Runtime::default(), &icetrim::Settings::new(), def, name)
                    .await
                    .unwrap_or_else(|e| panic!("open {name}: {e}"))
            }
        }
    }

    /// REST: the table's warehouse.
    pub fn warehouse(&self) -> &str {
        self.warehouse.as_deref().expect("a REST table")
    }

    /// Every file under the table location (relative paths).
    pub async fn files(&self) -> Listing {
        Root::new(self.io.clone(), &self.location)
            .files()
            .await
            .into_iter()
            .map(|(rel, _, _)| rel)
            .collect()
    }

    /// `tests/py/moved_base.py <command> <table> args…`, on a blocking thread.
    pub async fn python(&self, args: &[&str]) -> Value {
        let mut all = vec![args[0].to_string(), self.where_json.clone()];
        all.extend(args[1..].iter().map(|a| a.to_string()));
        tokio::task::spawn_blocking(move || {
            let refs: Vec<&str> = all.iter().map(String::as_str).collect();
            run_python_json(&script(), &refs)
        })
        .await
        .expect("python")
    }

    /// Commits `changes` as `operation` on the newest metadata (no retry: nothing else writes).
    pub async fn commit_files(&self, operation: Operation, changes: FileChanges) {
        let target = self.target().await;
        let located = target.locate_newest("test").await.expect("locate");
        let prepared = prepare_commit_with(
            &target.io,
            &located.metadata,
            operation,
            changes,
            Summary::new(),
            &PrepareOptions::default(),
        )
        .await
        .expect("prepare");
        let outcome = target
            .commit(&located, prepared.metadata, &CommitOptions::default())
            .await
            .expect("commit");
        assert!(
            matches!(outcome, CommitOutcome::Committed(_)),
            "the other writer's commit: {outcome:?}"
        );
    }

    /// The other writer's commit.
    pub async fn inject(&self, what: &Injection) {
        match (what, self.kind) {
            (Injection::Rollback(id), Kind::Path) => {
                let engine = Engine::builder().build().expect("engine");
                let mut s = engine.session();
                for sql in [
                    format!("CREATE TABLE t ENGINE = IcebergLocal('{}')", self.location),
                    format!("ALTER TABLE t EXECUTE rollback_to_snapshot({id})"),
                ] {
                    s.execute(&sql)
                        .await
                        .unwrap_or_else(|e| panic!("{sql}: {e}"));
                }
            }
            (Injection::Rollback(id), _) => {
                self.python(&["rollback", &id.to_string()]).await;
            }
            (Injection::Append(id), _) => {
                self.python(&["append", &id.to_string()]).await;
            }
            (Injection::DropDelete(path), _) => {
                let changes = FileChanges {
                    removed: vec![path.clone()],
                    ..Default::default()
                };
                self.commit_files(Operation::Overwrite, changes).await;
            }
            (Injection::UpgradeV3, Kind::Rest) => self.upgrade_through_admin().await,
            (Injection::UpgradeV3, _) => {
                self.target()
                    .await
                    .commit_edit("upgrade", |m| upgraded(m).map(Some))
                    .await
                    .expect("upgrade")
                    .expect("a commit");
            }
        }
    }

    /// REST: pyiceberg's catalog cannot upgrade to v3, so the test catalog is pointed at a v3
    /// metadata file written here (another writer's commit, as a v3-capable catalog makes it).
    async fn upgrade_through_admin(&self) {
        let target = self.target().await;
        let located = target.locate_newest("test").await.expect("locate");
        let version = located.version.unwrap_or(0) + 1;
        let path = format!(
            "{}/metadata/{version:05}-{}.metadata.json",
            self.location,
            uuid::Uuid::new_v4()
        );
        let mut md = upgraded(&located.metadata).expect("upgrade");
        md.set_file(&path);
        self.io
            .overwrite(&path, bytes::Bytes::from(md.to_json_bytes()))
            .await
            .expect("write the v3 metadata");
        rest_catalog::set_metadata(self.warehouse(), &["ns"], "t", &path).await;
    }
}

/// `m` at format version 3 (its rows get lineage from `next-row-id` 0 on), nothing else changed.
fn upgraded(m: &TableMetadata) -> icetrim::Result<TableMetadata> {
    let mut json = m.json();
    json.insert("format-version".into(), json!(3));
    json.insert("next-row-id".into(), json!(0));
    TableMetadata::from_json(json, m.file())
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/py/moved_base.py")
}

/// The table: `P` (five appends), then `D` (a position delete of the first row of the first data
/// file).
pub(crate) struct Moved {
    _tmp: tempfile::TempDir,
    _place: Place,
    _proxy: Option<Proxy>,
    pub writer: Arc<Writer>,
    /// The five appends' snapshot.
    pub p: i64,
    /// The position delete's snapshot (the current one).
    pub d: i64,
    /// The position delete file.
    pub delete_path: String,
}

impl Moved {
    pub async fn new(kind: Kind) -> Moved {
        let tmp = tempfile::tempdir().expect("a temporary folder");
        let dir = tmp.path().join("t");
        let compaction =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/py/compaction_fixture.py");
        run_python_json(&compaction, &["simple", dir.to_str().expect("UTF-8"), "5"]);
        let original = Place::local(&dir, &format!("file://{}", dir.display()));
        let place = match kind {
            Kind::Path => original,
            Kind::Rest => Place::copy_of(&original, Backend::Rest).await,
            Kind::Glue => Place::copy_of(&original, Backend::Glue).await,
        };
        // Glue through the proxy: moto alone does not enforce `VersionId`.
        let proxy = (kind == Kind::Glue).then(Proxy::start);
        let writer = Arc::new(writer_of(kind, &place, &dir, proxy.as_ref()));
        let target = writer.target().await;
        let located = target.locate_newest("test").await.expect("locate");
        let p = located.metadata.current_snapshot_id().expect("P");
        let state = live_files(&target, &located.metadata, p).await;
        let mut data: Vec<&str> = state.data.iter().map(|f| f.path()).collect();
        data.sort_unstable();
        assert_eq!(data.len(), 5, "five data files");
        let delete_path = format!(
            "{}/data/pos-{}.parquet",
            writer.location,
            uuid::Uuid::new_v4()
        );
        let bytes = position_delete(data[0], 0);
        writer
            .io
            .overwrite(&delete_path, bytes::Bytes::from(bytes.clone()))
            .await
            .expect("write the delete file");
        let delete = DataFile::new(
            DataContent::PositionDeletes,
            &delete_path,
            1,
            bytes.len() as i64,
        );
        let changes = FileChanges {
            added_deletes: vec![delete],
            ..Default::default()
        };
        writer.commit_files(Operation::Delete, changes).await;
        let d = writer
            .target()
            .await
            .locate_newest("test")
            .await
            .expect("locate")
            .metadata
            .current_snapshot_id()
            .expect("D");
        Moved {
            _tmp: tmp,
            _place: place,
            _proxy: proxy,
            writer,
            p,
            d,
            delete_path,
        }
    }

    /// Runs `call` with `what` injected right before its first commit attempt: the result and
    /// the listings taken right before and right after the injection (`None`: never reached).
    pub async fn run(
        &self,
        call: ProcedureCall,
        what: Injection,
    ) -> (icetrim::Result<QueryResult>, Option<(Listing, Listing)>) {
        let seen: Arc<Mutex<Option<(Listing, Listing)>>> = Arc::new(Mutex::new(None));
        let fired = Arc::new(AtomicBool::new(false));
        let hook = {
            let (writer, seen) = (Arc::clone(&self.writer), Arc::clone(&seen));
            BeforeCommit(Arc::new(move || {
                let (writer, seen, fired) =
                    (Arc::clone(&writer), Arc::clone(&seen), Arc::clone(&fired));
                let what = what.clone();
                Box::pin(async move {
                    if fired.swap(true, Ordering::SeqCst) {
                        return;
                    }
                    // The other writer on a thread and runtime of its own, as another process.
                    tokio::task::spawn_blocking(move || {
                        let rt = tokio::runtime::Builder::new_current_thread()
                            .enable_all()
                            .build()
                            .expect("a runtime");
                        rt.block_on(async {
                            let before = writer.files().await;
                            writer.inject(&what).await;
                            let after = writer.files().await;
                            *seen.lock().expect("listing") = Some((before, after));
                        });
                    })
                    .await
                    .expect("the other writer");
                })
            }))
        };
        let mut target = self.writer.target().await;
        target.before_commit = Some(hook);
        let result = run_procedure_on(target, call, false, &Default::default()).await;
        let listings = seen.lock().expect("listing").clone();
        (result, listings)
    }

    /// Runs `call` with nothing injected.
    pub async fn run_plain(&self, call: ProcedureCall) -> icetrim::Result<QueryResult> {
        let target = self.writer.target().await;
        run_procedure_on(target, call, false, &Default::default()).await
    }

    /// Runs `call` with nothing injected, through `io` instead of the table's storage.
    pub async fn run_with_io(
        &self,
        call: ProcedureCall,
        io: FileIO,
    ) -> icetrim::Result<QueryResult> {
        let mut target = self.writer.target().await;
        target.io = io;
        run_procedure_on(target, call, false, &Default::default()).await
    }

    /// Every snapshot as pyiceberg reads it by id, and the current rows as ClickHouse reads them.
    pub async fn state(&self) -> State {
        State(self.writer.python(&["state"]).await)
    }

    /// The live data and delete files of snapshot `id`, read by icetrim.
    pub async fn live(&self, id: i64) -> (BTreeSet<String>, BTreeSet<String>) {
        let target = self.writer.target().await;
        let located = target.locate_newest("test").await.expect("locate");
        let state = live_files(&target, &located.metadata, id).await;
        let paths = |files: &[icetrim::internals::maintain::compact::model::LiveFile]| {
            files.iter().map(|f| f.path().to_string()).collect()
        };
        (paths(&state.data), paths(&state.deletes))
    }

    /// The current metadata as icetrim locates it.
    pub async fn metadata(&self) -> TableMetadata {
        self.writer
            .target()
            .await
            .locate_newest("test")
            .await
            .expect("locate")
            .metadata
    }
}

async fn live_files(target: &MaintenanceTarget, md: &TableMetadata, id: i64) -> TableState {
    let snapshot = md.snapshot(id).expect("a listed snapshot");
    read_state(&target.io, md, snapshot, 8)
        .await
        .expect("read the snapshot")
}

fn writer_of(kind: Kind, place: &Place, dir: &Path, proxy: Option<&Proxy>) -> Writer {
    let s3 = emulator_var("ICETRIM_S3_ENDPOINT");
    let (catalog, warehouse, where_json) = match kind {
        Kind::Path => (None, None, json!({"kind": "path", "dir": dir}).to_string()),
        Kind::Rest => {
            let warehouse = place.warehouse.clone().expect("a warehouse");
            let def = catalog_database(
                "lake",
                &format!("{}/v1", rest_catalog::uri()),
                &[
                    ("catalog_type", "rest"),
                    ("warehouse", warehouse.as_str()),
                    ("vended_credentials", "0"),
                ],
            );
            let where_json = json!({"kind": "rest", "uri": rest_catalog::uri(),
                "warehouse": warehouse, "s3": s3,
                "bucket": emulator_var("ICETRIM_S3_BUCKET")})
            .to_string();
            (Some((def, "ns.t".to_string())), Some(warehouse), where_json)
        }
        Kind::Glue => {
            let database = place.namespace.clone().expect("a Glue database");
            let endpoint = proxy.map_or_else(|| s3.clone(), |p| p.url.clone());
            let def = catalog_database("lake", &endpoint, &[("catalog_type", "glue")]);
            let where_json =
                json!({"kind": "glue", "endpoint": s3, "database": database}).to_string();
            (Some((def, format!("{database}.t"))), None, where_json)
        }
    };
    Writer {
        kind,
        location: place.location().to_string(),
        io: place.root.io.clone(),
        catalog,
        warehouse,
        where_json,
    }
}

/// A position delete file deleting row `pos` of `data_path`.
fn position_delete(data_path: &str, pos: i64) -> Vec<u8> {
    let schema = Arc::new(Schema::new(vec![
        with_id("file_path", DataType::Utf8, 2_147_483_546),
        with_id("pos", DataType::Int64, 2_147_483_545),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(StringArray::from(vec![data_path])) as ArrayRef,
            Arc::new(Int64Array::from(vec![pos])) as ArrayRef,
        ],
    )
    .expect("a batch");
    let mut w = ArrowWriter::try_new(Vec::new(), schema, None).expect("a writer");
    w.write(&batch).expect("write");
    w.into_inner().expect("parquet bytes")
}
