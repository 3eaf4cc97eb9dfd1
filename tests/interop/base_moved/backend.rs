//! The table of one history on its backend: generated in a fresh place (a local folder, or a
//! fresh prefix of the S3 emulator registered in the test REST catalog or in moto's Glue), the
//! other writer's `MaintenanceTarget` on it, the statement's `Table` (with the before-commit hook)
//! and how the Python readers find it. Glue commits (the statement's and the writer's) go through
//! `tests/py/glue_proxy.py`, which enforces `VersionId` as AWS Glue does; the readers read moto.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use icetrim::internals::engine::{DatabaseDef, Runtime};
use icetrim::internals::generate::generate;
use icetrim::internals::iceberg::locate::MetadataSettings;
use icetrim::internals::io::FileIO;
use icetrim::internals::maintain::target::{BeforeCommit, MaintenanceTarget, TableSource};
use icetrim::{Settings, StorageOptions, Table};
use serde_json::{Value, json};

use super::cases::{Backend, Case};
use crate::support::catalog::{catalog_database, open_target};
use crate::support::fixtures::python;
use crate::support::{emulator_var, glue_catalog, rest_catalog, s3_emulator, unique};

/// What one backend's run shares: the REST warehouse every history registers its table in, the
/// Glue proxy every Glue commit goes through.
pub struct Shared {
    pub backend: Backend,
    warehouse: String,
    glue: Option<GlueProxy>,
}

impl Shared {
    pub async fn new(backend: Backend) -> Shared {
        let warehouse = unique("base-moved");
        if backend == Backend::Rest {
            rest_catalog::warehouse(&warehouse, json!({})).await;
        }
        let glue = (backend == Backend::Glue).then(GlueProxy::start);
        Shared {
            backend,
            warehouse,
            glue,
        }
    }

    fn glue_endpoint(&self) -> &str {
        &self.glue.as_ref().expect("the Glue proxy").url
    }
}

/// `tests/py/glue_proxy.py` in front of moto's Glue: moto ignores `UpdateTable`'s `VersionId`
/// (every conditional update lands), the proxy enforces it as AWS Glue does, so a commit on a
/// stale base is refused (`ConcurrentModificationException`). Stopped when dropped.
struct GlueProxy {
    child: Child,
    url: String,
}

impl GlueProxy {
    fn start() -> GlueProxy {
        let moto = emulator_var("ICETRIM_S3_ENDPOINT");
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/py/glue_proxy.py");
        let mut child = Command::new(python())
            .arg(&script)
            .arg(&moto)
            .arg(&moto)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", script.display()));
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("the proxy's stdout"))
            .read_line(&mut line)
            .expect("the proxy's port");
        let port: u16 = line.trim().parse().expect("the proxy prints its port");
        GlueProxy {
            child,
            url: format!("http://127.0.0.1:{port}"),
        }
    }
}

impl Drop for GlueProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One history's table.
pub struct TableUnderTest {
    pub location: String,
    pub io: FileIO,
    /// The other writer's target: commits like icetrim's, without the hook.
    pub writer: MaintenanceTarget,
    /// The catalog database (REST, Glue), `None` for a path table.
    catalog: Option<(DatabaseDef, String)>,
    /// `snapshot_digests`' table spec, without the local metadata file.
    reader: Value,
    _dir: Option<tempfile::TempDir>,
}

impl TableUnderTest {
    /// Generate the case's history. Until [`Self::register`], the writer commits it as a path
    /// table (`metadata/` on its storage), whatever the backend: the setup commits cost no
    /// catalog round trips.
    pub async fn generate(case: &mut Case, shared: &Shared) -> TableUnderTest {
        let now_ms = icetrim::Clock::now_ms(&icetrim::SystemClock) - 3_600_000;
        let (io, location, dir) = match shared.backend {
            Backend::Path => {
                let dir = tempfile::tempdir().expect("a temporary folder");
                let location = dir.path().join("t").to_str().expect("UTF-8").to_string();
                (FileIO::local(), location, Some(dir))
            }
            Backend::Rest | Backend::Glue => {
                let (io, root) = s3_emulator("base-moved");
                (io, root, None)
            }
        };
        let options = case.history(&location, now_ms);
        generate(&io, &options)
            .await
            .unwrap_or_else(|e| panic!("seed {}: generate: {e}", case.seed));
        TableUnderTest {
            writer: path_target(&io, &location),
            reader: json!({"kind": "local", "dir": location}),
            location,
            io,
            catalog: None,
            _dir: dir,
        }
    }

    /// Register the table, as it now stands, in the backend's catalog (REST, Glue); from here on
    /// the writer commits through the catalog.
    pub async fn register(&mut self, shared: &Shared) {
        let metadata = match self.writer.locate_newest("base-moved test").await {
            Ok(located) => located.path,
            Err(e) => panic!("locate {}: {e}", self.location),
        };
        let (def, name, reader) = match shared.backend {
            Backend::Path => return,
            Backend::Rest => {
                let name = format!("t{}", uuid::Uuid::new_v4().simple());
                rest_catalog::register(&shared.warehouse, &["ns"], &name, &metadata).await;
                let endpoint = format!("{}/v1", rest_catalog::uri());
                let settings = [
                    ("catalog_type", "rest"),
                    ("warehouse", shared.warehouse.as_str()),
                    ("vended_credentials", "0"),
                ];
                let def = catalog_database("lake", &endpoint, &settings);
                let reader = json!({"kind": "rest", "uri": rest_catalog::uri(),
                    "warehouse": shared.warehouse, "namespace": "ns", "name": name});
                (def, format!("ns.{name}"), reader)
            }
            Backend::Glue => {
                let database = unique("base_moved").replace('-', "_");
                glue_catalog::register(&database, "t", &self.location, &metadata).await;
                let def =
                    catalog_database("lake", shared.glue_endpoint(), &[("catalog_type", "glue")]);
                let reader = json!({"kind": "glue", "database": database, "name": "t"});
                (def, format!("{database}.t"), reader)
            }
        };
        self.writer = open_target(&Runtime::default(), &Settings::new(), &def, &name).await;
        self.reader = reader;
        self.catalog = Some((def, name));
    }

    /// The statement's table: the same table opened through the typed API, with `hook` run
    /// before each of its commit attempts.
    pub async fn statement_table(&self, hook: BeforeCommit) -> Table {
        let table = match &self.catalog {
            None => Table::open(&self.location, StorageOptions::default())
                .unwrap_or_else(|e| panic!("open {}: {e}", self.location)),
            Some((def, name)) => {
                let settings: Vec<(&str, &str)> = def
                    .settings
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect();
                Table::open_catalog(&def.args[0], &settings, name)
                    .await
                    .unwrap_or_else(|e| panic!("open the catalog table {name}: {e}"))
            }
        };
        table.before_commit(hook)
    }

    /// `snapshot_digests`' table spec; a path table's names its metadata file `metadata`.
    pub fn reader(&self, metadata: &str) -> Value {
        let mut reader = self.reader.clone();
        if reader["kind"] == "local" {
            reader["metadata"] = json!(metadata);
        }
        reader
    }
}

/// A path table's target, as the engine builds one for `IcebergLocal`.
fn path_target(io: &FileIO, location: &str) -> MaintenanceTarget {
    MaintenanceTarget {
        source: TableSource::Path,
        io: io.clone(),
        location: location.to_string(),
        metadata_settings: MetadataSettings::default(),
        table_name: location.to_string(),
        settings: Settings::new(),
        now_ms: icetrim::Clock::now_ms(&icetrim::SystemClock),
        progress: Default::default(),
        before_commit: None,
    }
}
