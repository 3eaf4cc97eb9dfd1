//! Tables that live in a catalog (ClickHouse's `DataLakeCatalog` database engine): the catalog,
//! not a `metadata/` folder, holds the pointer to a table's current metadata, and commits go
//! through it.
//!
//! Layers: `maintain → catalog → iceberg → io`. The engine builds a catalog from a database
//! definition ([`CatalogConfig::from_definition`], then [`open`]); maintenance reaches it only
//! through `MaintenanceTarget` (`src/maintain/target.rs`: `locate_newest`, `commit`,
//! `commit_edit`), which holds a [`CatalogTable`] as its table source.
//!
//! **How a catalog type plugs in** (REST is [`rest`]; Glue is the next one):
//! 1. Add a variant to [`CatalogType`] (its `catalog_type` spelling in [`CatalogType::parse`]).
//! 2. Write a module `src/catalog/<type>/` with a struct implementing [`Catalog`]:
//!    - `endpoint()`: what messages name (never a secret);
//!    - `check()`: reach the catalog once with the credentials (run by `CREATE DATABASE`);
//!    - `list_tables()`: every table as a [`TableIdent`] (`SHOW TABLES FROM db`, system tables);
//!    - `load_table(ident)`: the current metadata location, the parsed metadata and the
//!      [`FileIO`] that reads and deletes the table's files (vended credentials or the database's
//!      storage settings, see [`CatalogConfig::storage_options`]); an unknown table is
//!      `UNKNOWN_TABLE` naming the endpoint and the table; a metadata file storage lacks is
//!      `FILE_DOESNT_EXIST` naming both;
//!    - `commit(ident, base, new)`: commit `new` (computed from the loaded `base`) and answer a
//!      [`CatalogCommit`]: `Committed` with the metadata the catalog now holds (its returned or
//!      re-read metadata and location), `Conflict` when someone else changed the table first
//!      (the caller reloads and re-plans), `Unknown` when the outcome cannot be known (the caller
//!      deletes nothing). Implementations settle "did it land?" themselves after a lost answer
//!      (reload and compare: [`landed`] is the shared test).
//! 3. Construct it in [`open`] from the [`CatalogConfig`] (settings it needs are already parsed
//!    there; add new setting names to [`DATABASE_SETTINGS`], marking secrets so `SHOW CREATE
//!    DATABASE` masks them).
//!
//! Table names are ClickHouse's: `` db.`namespace.table` ``, nested namespaces `a.b.t` (the last
//! dot separates the table name).

#[cfg(feature = "glue")]
pub mod glue;
pub mod local_root;
pub mod rest;
mod settings;

use settings::check_catalog_url;
pub use settings::{DATABASE_SETTINGS, database_setting, normalize_setting, shown_setting};

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, ErrorKind, Result};
use crate::iceberg::metadata::TableMetadata;
use crate::io::{FileIO, S3Options, StorageOptions};

/// The database engine name.
pub const ENGINE: &str = "DataLakeCatalog";

/// A table in a catalog: its namespace levels and its name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TableIdent {
    pub namespace: Vec<String>,
    pub name: String,
}

impl TableIdent {
    /// `ns.t` / `a.b.t` as ClickHouse names a catalog table (the last dot separates the table).
    pub fn parse(text: &str, database: &str) -> Result<TableIdent> {
        let bad = || {
            Error::new(
                ErrorKind::UnknownTable,
                format!(
                    "Table {database}.`{text}` does not exist: a table of a {ENGINE} database is \
                     named `namespace.table`"
                ),
            )
        };
        let (namespace, name) = text.rsplit_once('.').ok_or_else(bad)?;
        let levels: Vec<String> = namespace.split('.').map(str::to_string).collect();
        if name.is_empty() || levels.iter().any(String::is_empty) {
            return Err(bad());
        }
        Ok(TableIdent {
            namespace: levels,
            name: name.to_string(),
        })
    }
}

impl fmt::Display for TableIdent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.namespace.join("."), self.name)
    }
}

/// A table as the catalog holds it now.
#[derive(Debug, Clone)]
pub struct LoadedTable {
    pub ident: TableIdent,
    /// The current metadata file.
    pub metadata_location: String,
    pub metadata: TableMetadata,
    /// Reads and deletes the table's files.
    pub io: FileIO,
}

/// What a catalog commit did.
#[derive(Debug, Clone)]
pub enum CatalogCommit {
    /// The catalog holds the new metadata: `metadata` as it answered (or as re-read).
    Committed {
        metadata_location: String,
        metadata: Box<TableMetadata>,
    },
    /// A requirement failed (someone else committed first): reload and re-plan.
    Conflict { reason: String },
    /// The outcome cannot be known: delete nothing.
    Unknown { reason: String },
}

/// A catalog: see the module comment for the contract.
#[async_trait::async_trait]
pub trait Catalog: Send + Sync + fmt::Debug {
    /// What messages name (never a secret).
    fn endpoint(&self) -> &str;
    /// Reach the catalog with the configured credentials (`CREATE DATABASE` does, as ClickHouse
    /// does): an unreachable catalog or refused credentials fail here.
    async fn check(&self) -> Result<()>;
    /// Every table of the catalog (of its warehouse).
    async fn list_tables(&self) -> Result<Vec<TableIdent>>;
    /// The table's current metadata and the storage that reaches its files.
    async fn load_table(&self, ident: &TableIdent) -> Result<LoadedTable>;
    /// The maintenance the catalog does itself on the table (an AWS Glue table optimizer that
    /// is on). Empty when it does none, or when it cannot be told (the caller then maintains
    /// the table: a concurrent commit of the catalog's own maintenance is a conflict, never a
    /// lost change).
    async fn own_maintenance(&self, _ident: &TableIdent) -> Vec<OwnMaintenance> {
        Vec::new()
    }
    /// Commit `new`, computed from `base` (the metadata [`Catalog::load_table`] returned, at
    /// `base_location`).
    async fn commit(
        &self,
        ident: &TableIdent,
        base_location: &str,
        base: &TableMetadata,
        new: &TableMetadata,
    ) -> Result<CatalogCommit>;
}

/// Maintenance a catalog does itself on a table, and who does it (for messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OwnMaintenance {
    pub kind: OwnMaintenanceKind,
    pub by: &'static str,
}

/// What a catalog's own maintenance does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnMaintenanceKind {
    /// Rewrites small data files (a Glue `compaction` optimizer).
    Compaction,
    /// Expires snapshots (a Glue `retention` optimizer).
    SnapshotRetention,
    /// Deletes orphan files (a Glue `orphan_file_deletion` optimizer).
    OrphanFiles,
}

/// A table of a catalog database, as a maintenance target holds it.
#[derive(Debug, Clone)]
pub struct CatalogTable {
    pub catalog: Arc<dyn Catalog>,
    pub ident: TableIdent,
}

/// Whether `now` (re-read after an unknown outcome) shows the commit of `new` on `base`: the
/// entry before `now` in its `metadata-log` is `base`'s file, and `now` has exactly `new`'s
/// snapshots and refs.
pub fn landed(base_location: &str, new: &TableMetadata, now: &TableMetadata) -> bool {
    let follows_base = now.metadata_log().last().is_some_and(|e| {
        crate::io::path_key(&e.metadata_file) == crate::io::path_key(base_location)
    });
    follows_base && same_history(new, now)
}

/// Same snapshot ids, the same refs (name, kind, snapshot) and the same statistics files.
pub fn same_history(a: &TableMetadata, b: &TableMetadata) -> bool {
    let stats = |m: &TableMetadata| {
        let mut s: Vec<(i64, String, bool)> = m
            .statistics()
            .iter()
            .map(|s| (s.snapshot_id, s.path.clone(), s.partition_statistics))
            .collect();
        s.sort();
        s
    };
    let ids = |m: &TableMetadata| {
        let mut ids: Vec<i64> = m.snapshots().iter().map(|s| s.snapshot_id).collect();
        ids.sort_unstable();
        ids
    };
    let refs = |m: &TableMetadata| {
        let mut refs: Vec<(String, &'static str, i64)> = m
            .refs()
            .iter()
            .map(|r| (r.name.clone(), r.kind.as_str(), r.snapshot_id))
            .collect();
        refs.sort();
        refs
    };
    ids(a) == ids(b) && refs(a) == refs(b) && stats(a) == stats(b)
}

/// The catalog types ClickHouse's `catalog_type` names; icetrim implements those with a module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CatalogType {
    Rest,
    Glue,
    /// Named by ClickHouse, not implemented here (`NOT_IMPLEMENTED` when used).
    Other(&'static str),
}

/// ClickHouse 26.9's `catalog_type` values, in its error's order.
const CLICKHOUSE_TYPES: &[&str] = &[
    "paimon_rest",
    "biglake",
    "glue",
    "onelake",
    "horizon",
    "hive",
    "unity",
    "delta_sharing",
    "s3tables",
    "rest",
];

impl CatalogType {
    /// `catalog_type = '...'`; an unknown value is ClickHouse's `BAD_ARGUMENTS`.
    pub fn parse(text: &str) -> Result<CatalogType> {
        match text {
            "rest" => Ok(CatalogType::Rest),
            "glue" => Ok(CatalogType::Glue),
            other => match CLICKHOUSE_TYPES.iter().find(|t| **t == other) {
                Some(known) => Ok(CatalogType::Other(known)),
                None => Err(Error::bad_arguments(format!(
                    "Unexpected value of DatabaseDataLakeCatalogType: '{other}'. Must be one of [{}]",
                    CLICKHOUSE_TYPES
                        .iter()
                        .map(|t| format!("'{t}'"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))),
            },
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            CatalogType::Rest => "rest",
            CatalogType::Glue => "glue",
            CatalogType::Other(name) => name,
        }
    }
}

/// The default timeouts of catalog requests.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// A catalog database's configuration, parsed from its definition.
#[derive(Clone)]
pub struct CatalogConfig {
    /// The database name, for messages.
    pub database: String,
    pub catalog_type: CatalogType,
    /// The first engine argument (optional for Glue).
    pub endpoint: Option<String>,
    pub user: Option<String>,
    pub password: Option<String>,
    pub settings: BTreeMap<String, String>,
    pub connect_timeout: Duration,
    pub request_timeout: Duration,
}

impl fmt::Debug for CatalogConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let masked: BTreeMap<&str, String> = self
            .settings
            .iter()
            .map(|(k, v)| (k.as_str(), shown_setting(k, v)))
            .collect();
        f.debug_struct("CatalogConfig")
            .field("database", &self.database)
            .field("catalog_type", &self.catalog_type)
            .field(
                "endpoint",
                &self.endpoint.as_deref().map(crate::io::mask_url),
            )
            .field("user", &self.user)
            .field("settings", &masked)
            .finish()
    }
}

impl CatalogConfig {
    /// From a database definition: engine arguments (`url [, user, password]`) and settings as
    /// stored (validated again: a definition file may have been edited). ClickHouse's checks:
    /// arguments required, `catalog_type` required, `warehouse` required for REST.
    pub fn from_definition(
        database: &str,
        args: &[String],
        settings: &BTreeMap<String, String>,
    ) -> Result<CatalogConfig> {
        if args.is_empty() && settings.get("catalog_type").is_none_or(|t| t != "glue") {
            return Err(Error::bad_arguments(format!(
                "Engine `{ENGINE}` must have arguments"
            )));
        }
        if args.len() > 3 || args.len() == 2 {
            return Err(Error::bad_arguments(format!(
                "Engine `{ENGINE}` takes (catalog_endpoint[, user, password]), got {} argument(s)",
                args.len()
            )));
        }
        let mut normalized = BTreeMap::new();
        for (name, value) in settings {
            normalized.insert(name.clone(), normalize_setting(name, value)?);
        }
        let catalog_type = match normalized.get("catalog_type") {
            Some(t) => CatalogType::parse(t)?,
            None => {
                return Err(Error::bad_arguments(format!(
                    "Unspecified catalog type. Add SETTINGS catalog_type = 'rest' (an Iceberg REST \
                     catalog) or catalog_type = 'glue' (AWS Glue); ClickHouse also names {}",
                    CLICKHOUSE_TYPES
                        .iter()
                        .filter(|t| !matches!(**t, "rest" | "glue"))
                        .map(|t| format!("'{t}'"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
        };
        if catalog_type == CatalogType::Rest
            && normalized.get("warehouse").is_none_or(|w| w.is_empty())
        {
            return Err(Error::bad_arguments(
                "`warehouse` setting cannot be empty. Please specify 'SETTINGS \
                 warehouse=<warehouse_name>' in the CREATE DATABASE query",
            ));
        }
        if let Some(endpoint) = args.first() {
            check_catalog_url(ENGINE, endpoint)?;
        }
        for setting in DATABASE_SETTINGS.iter().filter(|s| s.url) {
            if let Some(value) = normalized.get(setting.name) {
                check_catalog_url(&format!("{ENGINE} setting {}", setting.name), value)?;
            }
        }
        Ok(CatalogConfig {
            database: database.to_string(),
            catalog_type,
            endpoint: args.first().cloned().filter(|e| !e.is_empty()),
            user: args.get(1).cloned(),
            password: args.get(2).cloned(),
            settings: normalized,
            connect_timeout: CONNECT_TIMEOUT,
            request_timeout: REQUEST_TIMEOUT,
        })
    }

    /// A setting's value, `None` when not given or empty.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.settings
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// A boolean setting, `default` when not given.
    pub fn flag(&self, name: &str, default: bool) -> bool {
        self.get(name).map_or(default, |v| v == "1")
    }

    /// The storage options of the database's own settings (`storage_endpoint`,
    /// `aws_access_key_id`, `aws_secret_access_key`, `aws_session_token`, `region`): what reaches
    /// the tables' files when the catalog vends no credentials.
    pub fn storage_options(&self) -> StorageOptions {
        let endpoint = self.get("storage_endpoint").map(endpoint_origin);
        StorageOptions {
            s3: S3Options {
                access_key_id: self.get("aws_access_key_id").map(str::to_string),
                secret_access_key: self.get("aws_secret_access_key").map(str::to_string),
                session_token: self.get("aws_session_token").map(str::to_string),
                region: self.get("region").map(str::to_string),
                allow_http: endpoint
                    .as_deref()
                    .is_some_and(|e| e.starts_with("http://")),
                endpoint,
                ..S3Options::default()
            },
            ..StorageOptions::default()
        }
    }
}

/// `http(s)://host[:port]` of an endpoint URL that may carry a bucket path
/// (`http://minio:9000/lakehouse` → `http://minio:9000`).
pub fn endpoint_origin(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(parsed) if parsed.has_host() => parsed.origin().ascii_serialization(),
        _ => url.trim_end_matches('/').to_string(),
    }
}

/// Open the catalog `config` describes.
pub fn open(config: &CatalogConfig) -> Result<Arc<dyn Catalog>> {
    match config.catalog_type {
        CatalogType::Rest => Ok(Arc::new(rest::RestCatalog::new(config)?)),
        #[cfg(feature = "glue")]
        CatalogType::Glue => Ok(Arc::new(glue::GlueDatabase::new(config)?)),
        #[cfg(not(feature = "glue"))]
        CatalogType::Glue => Err(Error::new(
            ErrorKind::SupportIsDisabled,
            format!(
                "Database {}: catalog_type 'glue' needs icetrim built with the cargo feature \
                 `glue`",
                config.database
            ),
        )),
        other => Err(Error::not_implemented(format!(
            "Database {}: catalog_type '{}' is not supported by icetrim (supported: rest, glue)",
            config.database,
            other.as_str()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names_split_at_the_last_dot() {
        let t = TableIdent::parse("a.b.t", "lake").unwrap();
        assert_eq!(t.namespace, vec!["a", "b"]);
        assert_eq!(t.name, "t");
        assert_eq!(t.to_string(), "a.b.t");
        for bad in ["t", ".t", "ns.", "a..t"] {
            let e = TableIdent::parse(bad, "lake").unwrap_err();
            assert_eq!(e.kind(), ErrorKind::UnknownTable, "{bad}");
        }
    }

    #[test]
    fn definitions_check_like_clickhouse() {
        let settings = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>()
        };
        let url = vec!["http://127.0.0.1:8181/v1".to_string()];
        let e = CatalogConfig::from_definition("lake", &url, &settings(&[("warehouse", "w")]))
            .unwrap_err();
        assert!(
            e.message().starts_with(
                "Unspecified catalog type. Add SETTINGS catalog_type = 'rest' (an Iceberg REST \
                 catalog) or catalog_type = 'glue' (AWS Glue); ClickHouse also names 'paimon_rest'"
            ),
            "{e}"
        );
        let e =
            CatalogConfig::from_definition("lake", &url, &settings(&[("catalog_type", "rest")]))
                .unwrap_err();
        assert!(
            e.message()
                .starts_with("`warehouse` setting cannot be empty")
        );
        let e = CatalogConfig::from_definition("lake", &[], &settings(&[("catalog_type", "rest")]))
            .unwrap_err();
        assert_eq!(e.message(), "Engine `DataLakeCatalog` must have arguments");
        let config = CatalogConfig::from_definition(
            "lake",
            &url,
            &settings(&[
                ("catalog_type", "rest"),
                ("warehouse", "w"),
                ("aws_secret_access_key", "S3CR3T"),
                ("storage_endpoint", "http://127.0.0.1:9000/bucket"),
            ]),
        )
        .unwrap();
        assert!(!format!("{config:?}").contains("S3CR3T"));
        let s3 = config.storage_options().s3;
        assert_eq!(s3.endpoint.as_deref(), Some("http://127.0.0.1:9000"));
        assert!(s3.allow_http);
    }

    /// A query string, a fragment or credentials in any catalog URL are refused before anything
    /// is stored, the URL shown masked; the secret is never repeated.
    #[test]
    fn catalog_urls_carry_no_secret() {
        let rest = |pairs: &[(&str, &str)]| {
            let mut settings: BTreeMap<String, String> =
                [("catalog_type", "rest"), ("warehouse", "w")]
                    .iter()
                    .chain(pairs)
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect();
            settings.retain(|_, v| !v.is_empty());
            settings
        };
        let ok = vec!["http://127.0.0.1:8181/v1".to_string()];
        for (url, pairs, shown) in [
            ("http://h/v1?token=S3CR3T", vec![], "'http://h/v1?[HIDDEN]'"),
            (
                "http://h/v1?api_key=S3CR3T",
                vec![],
                "'http://h/v1?[HIDDEN]'",
            ),
            ("http://h/v1#S3CR3T", vec![], "'http://h/v1#[HIDDEN]'"),
            ("http://u:S3CR3T@h/v1", vec![], "'http://[HIDDEN]@h/v1'"),
            (
                "",
                vec![("oauth_server_uri", "http://h/token?client_secret=S3CR3T")],
                "setting oauth_server_uri: the url 'http://h/token?[HIDDEN]'",
            ),
            (
                "",
                vec![("storage_endpoint", "http://k:S3CR3T@minio:9000/b")],
                "setting storage_endpoint: the url 'http://[HIDDEN]@minio:9000/b'",
            ),
            (
                "",
                vec![(
                    "storage_endpoint",
                    "http://minio:9000/b?X-Amz-Signature=S3CR3T",
                )],
                "'http://minio:9000/b?[HIDDEN]'",
            ),
        ] {
            let args = if url.is_empty() {
                ok.clone()
            } else {
                vec![url.to_string()]
            };
            let e = CatalogConfig::from_definition("lake", &args, &rest(&pairs)).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::BadArguments, "{e}");
            assert!(!e.to_string().contains("S3CR3T"), "{e}");
            assert!(e.message().contains(shown), "{e}");
        }
        let config = CatalogConfig::from_definition(
            "lake",
            &ok,
            &rest(&[
                ("oauth_server_uri", "http://h/token"),
                ("storage_endpoint", "http://m:9/b"),
            ]),
        )
        .unwrap();
        assert_eq!(config.get("oauth_server_uri"), Some("http://h/token"));
        assert_eq!(shown_setting("catalog_credential", "id:S3CR3T"), "[HIDDEN]");
        assert_eq!(
            shown_setting("storage_endpoint", "http://m:9/b?x=S3CR3T"),
            "http://m:9/b?[HIDDEN]"
        );
        assert_eq!(shown_setting("warehouse", "w"), "w");
    }
}
