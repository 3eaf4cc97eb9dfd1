//! Where a SQL session runs: the local disk, or a copy of the fixture table on the S3 (moto) or
//! Azure (azurite) emulator, and what a session needs to know about that place (the table location
//! icetrim sees, the `ENGINE = ...` clause that registers it, how a fixture's local paths read there).
//!
//! A fixture is built once on local disk; each emulator gets a relocated copy in a fresh folder
//! (`relocate::copy_table`) before any session touches the original. The oracle reads an emulator
//! table by copying it back to a local folder and relocating it there.
//!
//! A module of `tests/support/` (`crate::support::backends`): it reaches the emulators as
//! `crate::support` and the relocation as `crate::support::relocate`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use icetrim::internals::io::FileIO;

use crate::support as common;
use crate::support::relocate::{Rewrite, Root, copy_table};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    Local,
    S3,
    Azure,
    /// A copy on the S3 emulator registered in the test REST catalog
    /// (`tests/rest_catalog/server.py`): sessions reach it through a `DataLakeCatalog` database.
    Rest,
    /// A copy on the S3 emulator registered in moto's Glue (a fresh Glue database); sessions
    /// reach it through a `DataLakeCatalog` database with `catalog_type = 'glue'`. Runs only in
    /// builds with the cargo feature `glue` (scripts/test.sh), see [`Backend::available`].
    Glue,
}

impl Backend {
    pub fn parse(name: &str) -> Option<Backend> {
        match name {
            "local" => Some(Backend::Local),
            "s3" => Some(Backend::S3),
            "azure" => Some(Backend::Azure),
            "rest" => Some(Backend::Rest),
            "glue" => Some(Backend::Glue),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Backend::Local => "local",
            Backend::S3 => "s3",
            Backend::Azure => "azure",
            Backend::Rest => "rest",
            Backend::Glue => "glue",
        }
    }

    /// Whether this build can run the backend: `glue` needs the cargo feature `glue` (without it
    /// icetrim has no Glue client, so there is nothing to run).
    pub fn available(self) -> bool {
        self != Backend::Glue || cfg!(feature = "glue")
    }
}

/// A fixture table on one backend.
pub struct Place {
    pub backend: Backend,
    /// The store and the table location as icetrim sees it.
    pub root: Root,
    /// `IcebergLocal(...)`, `IcebergS3(...)` or `IcebergAzure(...)` for this table.
    pub engine: String,
    /// The fixture's local table folder: fact paths under it map to this place.
    source_dir: String,
    /// How the table spells local paths (`file://` or bare), for copies back to local disk.
    local_style_uri: bool,
    /// REST and Glue: the table's namespace in the catalog (the table is `<namespace>.t`).
    pub namespace: Option<String>,
    /// REST only: the catalog warehouse (a fresh one per copy).
    pub warehouse: Option<String>,
}

impl Place {
    /// The original fixture folder itself.
    pub fn local(table_dir: &Path, location: &str) -> Place {
        let dir = table_dir.to_str().expect("UTF-8 paths").to_string();
        Place {
            backend: Backend::Local,
            root: Root::new(FileIO::local(), &dir),
            engine: format!("IcebergLocal('{dir}')"),
            source_dir: dir,
            local_style_uri: location.starts_with("file:"),
            namespace: None,
            warehouse: None,
        }
    }

    /// A relocated copy of `original` in a fresh folder on the emulator `backend`.
    pub async fn copy_of(original: &Place, backend: Backend) -> Place {
        let (io, root, engine) = match backend {
            Backend::Local => panic!("the local pass runs on the original fixture"),
            Backend::S3 | Backend::Rest | Backend::Glue => {
                let (io, root) = common::s3_emulator("session");
                let endpoint = common::emulator_var("ICETRIM_S3_ENDPOINT");
                let key = root.trim_start_matches("s3://");
                let engine = format!("IcebergS3('{endpoint}/{key}', 'testing', 'testing')");
                (io, root, engine)
            }
            Backend::Azure => {
                let (io, root) = common::azure_emulator("session");
                let container = common::emulator_var("ICETRIM_AZURE_CONTAINER");
                let folder = root.rsplit('/').next().expect("a folder").to_string();
                let engine = format!(
                    "IcebergAzure('{}', '{container}', '{folder}')",
                    common::azure_emulator_connection_string()
                );
                (io, root, engine)
            }
        };
        let place = Place {
            backend,
            root: Root::new(io, &root),
            engine,
            source_dir: original.source_dir.clone(),
            local_style_uri: original.local_style_uri,
            namespace: None,
            warehouse: None,
        };
        let target = place.spelled_root();
        let rewrite = Rewrite::from_local(&original.source_dir, &target);
        copy_table(&original.root, &place.root, &rewrite, false).await;
        let mut place = place;
        if backend == Backend::Rest {
            place.register_in_rest_catalog().await;
        }
        if backend == Backend::Glue {
            place.register_in_glue().await;
        }
        place
    }

    /// A relocated copy of the local `original` in the local folder `dir` (tests that need a fresh
    /// table per case from one fixture build).
    pub async fn local_copy(original: &Place, dir: &Path) -> Place {
        let dir = dir.to_str().expect("UTF-8 paths").to_string();
        let place = Place {
            backend: Backend::Local,
            root: Root::new(FileIO::local(), &dir),
            engine: format!("IcebergLocal('{dir}')"),
            source_dir: original.source_dir.clone(),
            local_style_uri: original.local_style_uri,
            namespace: None,
            warehouse: None,
        };
        let rewrite = Rewrite::from_local(&original.source_dir, &place.spelled_root());
        copy_table(&original.root, &place.root, &rewrite, true).await;
        place
    }

    /// Register the copy in moto's Glue as `<fresh glue database>.t`; the session's database
    /// shows that Glue database only (`namespaces`).
    async fn register_in_glue(&mut self) {
        let newest = self.root.newest_metadata().await;
        let namespace = common::unique("sessions").replace('-', "_");
        let root = self.root.root.clone();
        common::glue_catalog::register(&namespace, "t", &root, &self.root.uri(&newest)).await;
        self.engine = common::glue_catalog::create_database("lake", &namespace);
        self.namespace = Some(namespace);
    }

    /// Register the copy in the test REST catalog (a fresh warehouse), as `ns.t`.
    async fn register_in_rest_catalog(&mut self) {
        let files = self.root.files().await;
        let newest = common::rest_catalog::newest_metadata_name(
            files
                .iter()
                .map(|(rel, _, _)| rel.as_str())
                .filter(|rel| rel.starts_with("metadata/") && !rel[9..].contains('/')),
        )
        .expect("a metadata file in the copy")
        .to_string();
        // A warehouse of its own: the session's SHOW TABLES and system tables see this table only.
        let warehouse = common::unique("sessions");
        let namespace = "ns".to_string();
        common::rest_catalog::warehouse(&warehouse, serde_json::json!({})).await;
        common::rest_catalog::register(&warehouse, &[&namespace], "t", &self.root.uri(&newest))
            .await;
        self.engine =
            common::rest_catalog::create_database("lake", &warehouse, "vended_credentials = 0");
        self.namespace = Some(namespace);
        self.warehouse = Some(warehouse);
    }

    /// The root as the table's metadata spells it here.
    fn spelled_root(&self) -> String {
        match self.backend {
            Backend::Local if self.local_style_uri => format!("file://{}", self.root.root),
            _ => self.root.root.clone(),
        }
    }

    /// The table location icetrim reports (`${TABLE}`).
    pub fn location(&self) -> &str {
        &self.root.root
    }

    /// A fixture fact's local path as a path or URI of this place.
    pub fn path_of(&self, local: &str) -> String {
        Rewrite::from_local(&self.source_dir, &self.root.root)
            .apply(local)
            .unwrap_or_else(|| panic!("{local} is not in the fixture table {}", self.source_dir))
    }

    /// Writes a stray file at `relative` under the table (an orphan to be): its URI.
    pub async fn write_stray(&self, relative: &str, content: &'static [u8]) -> String {
        let uri = self.root.uri(relative);
        self.root
            .io
            .write_if_absent(&uri, bytes::Bytes::from_static(content))
            .await
            .unwrap_or_else(|e| panic!("write {uri}: {e}"));
        uri
    }

    /// Whether the file exists here. On local disk the file system says: object_store refuses
    /// the names it keeps for its own unfinished uploads (`<name>#<digits>`), which orphan
    /// tests look for.
    pub async fn exists(&self, path: &str) -> bool {
        let local = path.strip_prefix("file://").unwrap_or(path);
        if self.backend == Backend::Local && local.starts_with('/') {
            return std::fs::symlink_metadata(local).is_ok();
        }
        self.root.io.head(path).await.is_ok()
    }

    /// The table as a local folder the oracle can read: the folder itself on local disk, else a
    /// copy in `scratch` relocated there.
    pub async fn local_view(&self, scratch: &Path) -> PathBuf {
        if self.backend == Backend::Local {
            return PathBuf::from(&self.root.root);
        }
        let dir = scratch.join(common::unique("oracle"));
        let dir_text = dir.to_str().expect("UTF-8 paths").to_string();
        let target = if self.local_style_uri {
            format!("file://{dir_text}")
        } else {
            dir_text.clone()
        };
        let local = Root::new(FileIO::local(), &dir_text);
        copy_table(
            &self.root,
            &local,
            &Rewrite::from_uri(&self.root.root, &target),
            true,
        )
        .await;
        dir
    }
}
