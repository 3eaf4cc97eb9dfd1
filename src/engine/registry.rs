//! The table registry: which tables a session knows, by `database.name`, with their engine
//! (where the table lives and how to reach it) and table settings.
//!
//! In memory by default; with a data path, persisted as one JSON file per table
//! (`<path>/tables/<db>/<name>.json`, mode 0600 since it can hold credentials). `DROP TABLE`
//! forgets a table and never touches its files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind, Result};
pub use crate::io::HIDDEN;
use crate::io::mask_target;

/// An engine argument: a string literal, or the bare keyword `NOSIGN`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum EngineArg {
    Str(String),
    NoSign,
}

/// A registered table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableDef {
    pub database: String,
    pub name: String,
    /// `IcebergLocal`, `IcebergS3` or `IcebergAzure`.
    pub engine: String,
    pub args: Vec<EngineArg>,
    /// Table settings (`SETTINGS name = value`), values as text.
    pub settings: BTreeMap<String, String>,
    /// The column list as written, if any (kept for `SHOW CREATE TABLE`).
    pub columns: Option<String>,
}

impl TableDef {
    /// The engine arguments with secrets replaced by `[HIDDEN]` (as ClickHouse does): see
    /// [`mask_engine_arg`].
    pub fn masked_args(&self) -> Vec<EngineArg> {
        self.args
            .iter()
            .enumerate()
            .map(|(i, a)| match a {
                EngineArg::Str(s) => EngineArg::Str(mask_engine_arg(&self.engine, i, s)),
                EngineArg::NoSign => EngineArg::NoSign,
            })
            .collect()
    }
}

/// Engine argument `index` (0-based) of `engine` as `SHOW CREATE TABLE` and the shell's history
/// show it: the S3 secret key and session token and the Azure account key become `[HIDDEN]`, as do
/// `AccountKey=` / `SharedAccessSignature=` in a connection string, and a URL's `user:password@`
/// and its whole query and fragment (a SAS token, a presigned query; [`crate::io::mask_url`]).
pub fn mask_engine_arg(engine: &str, index: usize, arg: &str) -> String {
    let engine = engine.to_ascii_lowercase();
    match (engine.as_str(), index) {
        ("icebergs3", 2..) | ("icebergazure", 4) | ("datalakecatalog", 2) => HIDDEN.to_string(),
        (_, 0) => mask_target(arg),
        _ => arg.to_string(),
    }
}

/// A database created with `CREATE DATABASE … ENGINE = DataLakeCatalog(…)`: its tables live in a
/// catalog (see [`crate::catalog`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DatabaseDef {
    pub name: String,
    /// `DataLakeCatalog`.
    pub engine: String,
    /// `url [, user, password]`.
    pub args: Vec<String>,
    /// Database settings, values as text (booleans `1`/`0`).
    pub settings: BTreeMap<String, String>,
    /// The setting names in the order they were written (`SHOW CREATE DATABASE` keeps it, as
    /// ClickHouse does).
    #[serde(default)]
    pub setting_order: Vec<String>,
}

impl DatabaseDef {
    /// The engine arguments with the password `[HIDDEN]` and the URL masked.
    pub fn masked_args(&self) -> Vec<String> {
        self.args
            .iter()
            .enumerate()
            .map(|(i, a)| match i {
                0 => mask_target(a),
                2 => HIDDEN.to_string(),
                _ => a.clone(),
            })
            .collect()
    }

    /// The settings with secret values `[HIDDEN]` and URLs masked.
    pub fn masked_settings(&self) -> BTreeMap<String, String> {
        self.settings
            .iter()
            .map(|(k, v)| (k.clone(), crate::catalog::shown_setting(k, v)))
            .collect()
    }

    /// Every secret value of the definition (to scrub from messages).
    pub fn secrets(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .settings
            .iter()
            // The key id is masked in SHOW CREATE DATABASE (as ClickHouse does) but is no secret
            // to scrub from messages.
            .filter(|(k, v)| {
                !v.is_empty()
                    && k.as_str() != "aws_access_key_id"
                    && crate::catalog::database_setting(k).is_some_and(|s| s.secret)
            })
            .map(|(_, v)| v.clone())
            .collect();
        if let Some(password) = self.args.get(2).filter(|p| !p.is_empty()) {
            out.push(password.clone());
        }
        // The secret half of `client_id:client_secret` and of `Name: value` headers.
        for name in ["catalog_credential", "auth_header"] {
            if let Some((_, tail)) = self.settings.get(name).and_then(|v| v.split_once(':')) {
                let tail = tail.trim();
                // `Bearer <token>`: the token alone is secret too.
                let last = tail.rsplit(' ').next().unwrap_or(tail);
                for part in [tail, last] {
                    if part.len() >= 4 && !out.iter().any(|o| o == part) {
                        out.push(part.to_string());
                    }
                }
            }
        }
        out
    }
}

/// Whether the database setting `name` is masked wherever statements are shown: a secret
/// (`catalog_credential`, `auth_header`, `aws_secret_access_key`, …) or a URL
/// (`oauth_server_uri`, `storage_endpoint`); [`crate::catalog::shown_setting`] masks it.
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub fn is_masked_setting(name: &str) -> bool {
    crate::catalog::database_setting(name).is_some_and(|s| s.secret || s.url)
}

/// Where tables are remembered.
#[derive(Debug, Default)]
pub struct Registry {
    tables: BTreeMap<(String, String), TableDef>,
    databases: BTreeMap<String, DatabaseDef>,
    dir: Option<PathBuf>,
    db_dir: Option<PathBuf>,
}

impl Registry {
    /// A registry that lives in memory only.
    pub fn in_memory() -> Self {
        Registry::default()
    }

    /// A registry persisted under `data_path`, loading what is there.
    pub fn open(data_path: &Path) -> Result<Self> {
        if std::fs::metadata(data_path).is_ok_and(|m| !m.is_dir()) {
            return Err(Error::new(
                ErrorKind::CannotCreateDirectory,
                format!(
                    "Cannot use '{}' as the data path (--path): it is not a folder",
                    data_path.display()
                ),
            ));
        }
        let dir = data_path.join("tables");
        std::fs::create_dir_all(&dir).map_err(|e| io_error("create", &dir, e))?;
        let db_dir = data_path.join("databases");
        std::fs::create_dir_all(&db_dir).map_err(|e| io_error("create", &db_dir, e))?;
        let mut databases = BTreeMap::new();
        for file in read_dir(&db_dir)? {
            if file.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            let text = std::fs::read(&file).map_err(|e| io_error("read", &file, e))?;
            let def: DatabaseDef = serde_json::from_slice(&text).map_err(|e| {
                Error::incorrect_data(format!(
                    "Cannot read database definition {}: {e}",
                    file.display()
                ))
            })?;
            databases.insert(def.name.clone(), def);
        }
        let mut tables = BTreeMap::new();
        for db in read_dir(&dir)? {
            if !db.is_dir() {
                continue;
            }
            for file in read_dir(&db)? {
                if file.extension().and_then(|e| e.to_str()) != Some("json") {
                    continue;
                }
                let text = std::fs::read(&file).map_err(|e| io_error("read", &file, e))?;
                let def: TableDef = serde_json::from_slice(&text).map_err(|e| {
                    Error::incorrect_data(format!(
                        "Cannot read table definition {}: {e}",
                        file.display()
                    ))
                })?;
                tables.insert((def.database.clone(), def.name.clone()), def);
            }
        }
        Ok(Registry {
            tables,
            databases,
            dir: Some(dir),
            db_dir: Some(db_dir),
        })
    }

    /// The table `db.name`.
    pub fn get(&self, database: &str, name: &str) -> Result<&TableDef> {
        self.tables
            .get(&(database.to_string(), name.to_string()))
            .ok_or_else(|| self.unknown_table(database, name))
    }

    /// `UNKNOWN_TABLE` for `database.name`: ClickHouse's "Maybe you meant" for a near name of
    /// the same database, else the statement that registers a table under that name.
    fn unknown_table(&self, database: &str, name: &str) -> Error {
        let names = self
            .tables
            .keys()
            .filter(|(d, _)| d == database)
            .map(|(_, n)| n.as_str());
        let hint = match crate::hints::closest(name, names, 1).first() {
            Some(near) => format!(". Maybe you meant {database}.{near}?"),
            None => format!(
                ". Register it first: CREATE TABLE {database}.{name} ENGINE = \
                 IcebergLocal('/path/to/table') \
                 (IcebergS3('s3://bucket/path/to/table') or IcebergAzure(...) for object \
                 storage), or reach a catalog's tables with CREATE DATABASE ... ENGINE = \
                 DataLakeCatalog(...)"
            ),
        };
        Error::new(
            ErrorKind::UnknownTable,
            format!("Table {database}.{name} does not exist{hint}"),
        )
    }

    /// Register a table. `if_not_exists` makes a taken name a no-op instead of an error.
    pub fn create(&mut self, def: TableDef, if_not_exists: bool) -> Result<()> {
        let key = (def.database.clone(), def.name.clone());
        if self.tables.contains_key(&key) {
            if if_not_exists {
                return Ok(());
            }
            return Err(Error::new(
                ErrorKind::TableAlreadyExists,
                format!("Table {}.{} already exists", def.database, def.name),
            ));
        }
        if let Some(dir) = &self.dir {
            persist(dir, &def)?;
        }
        self.tables.insert(key, def);
        Ok(())
    }

    /// Forget a table (its files are never touched). `if_exists` makes a missing name a no-op.
    pub fn drop_table(&mut self, database: &str, name: &str, if_exists: bool) -> Result<()> {
        let key = (database.to_string(), name.to_string());
        if self.tables.remove(&key).is_none() {
            if if_exists {
                return Ok(());
            }
            return Err(Error::new(
                ErrorKind::UnknownTable,
                format!("Table {database}.{name} does not exist"),
            ));
        }
        if let Some(dir) = &self.dir {
            let file = table_file(dir, database, name);
            match std::fs::remove_file(&file) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_error("remove", &file, e)),
            }
        }
        Ok(())
    }

    /// Tables of `database`, by name.
    pub fn tables_in(&self, database: &str) -> Vec<&TableDef> {
        self.tables
            .values()
            .filter(|d| d.database == database)
            .collect()
    }

    /// Every table.
    pub fn all(&self) -> impl Iterator<Item = &TableDef> {
        self.tables.values()
    }

    /// The catalog database `name`, if one was created.
    pub fn database(&self, name: &str) -> Option<&DatabaseDef> {
        self.databases.get(name)
    }

    /// Every catalog database.
    pub fn databases(&self) -> impl Iterator<Item = &DatabaseDef> {
        self.databases.values()
    }

    /// Every database name that holds a table.
    pub fn table_databases(&self) -> Vec<String> {
        let mut names: Vec<String> = self.tables.keys().map(|(d, _)| d.clone()).collect();
        names.dedup();
        names
    }

    /// Register a catalog database; `if_not_exists` makes a taken name a no-op.
    pub fn create_database(&mut self, def: DatabaseDef, if_not_exists: bool) -> Result<()> {
        let taken = self.databases.contains_key(&def.name) || !self.tables_in(&def.name).is_empty();
        if taken {
            if if_not_exists {
                return Ok(());
            }
            return Err(Error::new(
                ErrorKind::DatabaseAlreadyExists,
                format!("Database {} already exists", def.name),
            ));
        }
        if let Some(dir) = &self.db_dir {
            let file = dir.join(format!("{}.json", encode_component(&def.name)));
            let text = serde_json::to_vec_pretty(&def).map_err(|e| {
                Error::logical(format!("Cannot serialize database definition: {e}"))
            })?;
            write_private(&file, &text).map_err(|e| io_error("write", &file, e))?;
        }
        self.databases.insert(def.name.clone(), def);
        Ok(())
    }

    /// Forget a catalog database (the catalog is never touched). `false` when there was none.
    pub fn drop_database(&mut self, name: &str) -> Result<bool> {
        if self.databases.remove(name).is_none() {
            return Ok(false);
        }
        if let Some(dir) = &self.db_dir {
            let file = dir.join(format!("{}.json", encode_component(name)));
            match std::fs::remove_file(&file) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_error("remove", &file, e)),
            }
        }
        Ok(true)
    }
}

fn table_file(dir: &Path, database: &str, name: &str) -> PathBuf {
    dir.join(encode_component(database))
        .join(format!("{}.json", encode_component(name)))
}

/// Table and database names may hold any character; file names may not hold `/` or start with `.`.
fn encode_component(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

fn persist(dir: &Path, def: &TableDef) -> Result<()> {
    let file = table_file(dir, &def.database, &def.name);
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io_error("create", parent, e))?;
    }
    let text = serde_json::to_vec_pretty(def)
        .map_err(|e| Error::logical(format!("Cannot serialize table definition: {e}")))?;
    write_private(&file, &text).map_err(|e| io_error("write", &file, e))
}

#[cfg(unix)]
pub(crate) fn write_private(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = file.with_extension("json.tmp");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, file)
}

#[cfg(not(unix))]
pub(crate) fn write_private(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::write(file, bytes)
}

fn read_dir(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir).map_err(|e| io_error("list", dir, e))?;
    let mut out = Vec::new();
    for entry in entries {
        out.push(entry.map_err(|e| io_error("list", dir, e))?.path());
    }
    out.sort();
    Ok(out)
}

/// A local-disk error of the registry, under ClickHouse's name for its cause.
pub(crate) fn io_error(op: &str, path: &Path, e: std::io::Error) -> Error {
    let kind = match (op, e.kind()) {
        ("create", _) => ErrorKind::CannotCreateDirectory,
        ("remove", _) => ErrorKind::CannotUnlink,
        (_, std::io::ErrorKind::NotFound) => ErrorKind::FileDoesntExist,
        _ => ErrorKind::CannotOpenFile,
    };
    let op = match op {
        "create" => "create directory",
        other => other,
    };
    let message = format!("Cannot {op} {}: {e}", path.display());
    Error::with_source(kind, message, e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(db: &str, name: &str) -> TableDef {
        TableDef {
            database: db.into(),
            name: name.into(),
            engine: "IcebergS3".into(),
            args: vec![
                EngineArg::Str("s3://b/t/".into()),
                EngineArg::Str("AKIA".into()),
                EngineArg::Str("secret".into()),
            ],
            settings: BTreeMap::new(),
            columns: None,
        }
    }

    #[test]
    fn create_get_drop_in_memory() {
        let mut r = Registry::in_memory();
        r.create(def("default", "t"), false).unwrap();
        assert_eq!(r.get("default", "t").unwrap().name, "t");
        let e = r.create(def("default", "t"), false).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TableAlreadyExists);
        r.create(def("default", "t"), true).unwrap();
        r.drop_table("default", "t", false).unwrap();
        assert_eq!(
            r.get("default", "t").unwrap_err().kind(),
            ErrorKind::UnknownTable
        );
        r.create(def("default", "orders"), false).unwrap();
        assert_eq!(
            r.get("default", "order").unwrap_err().message(),
            "Table default.order does not exist. Maybe you meant default.orders?"
        );
        assert!(r.get("default", "t").unwrap_err().message().contains(
            "Table default.t does not exist. Register it first: CREATE TABLE default.t ENGINE = \
             IcebergLocal('/path/to/table')"
        ));
        r.drop_table("default", "orders", false).unwrap();
        assert_eq!(
            r.drop_table("default", "t", false).unwrap_err().kind(),
            ErrorKind::UnknownTable
        );
        r.drop_table("default", "t", true).unwrap();
    }

    #[test]
    fn persists_privately_and_reloads() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = Registry::open(dir.path()).unwrap();
        r.create(def("db/x", "we.ird"), false).unwrap();
        let again = Registry::open(dir.path()).unwrap();
        assert_eq!(again.get("db/x", "we.ird").unwrap(), &def("db/x", "we.ird"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let f = table_file(&dir.path().join("tables"), "db/x", "we.ird");
            let mode = std::fs::metadata(f).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let mut again = again;
        again.drop_table("db/x", "we.ird", false).unwrap();
        assert!(
            Registry::open(dir.path())
                .unwrap()
                .get("db/x", "we.ird")
                .is_err()
        );
    }

    #[test]
    fn databases_persist_privately_with_secrets_masked() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = Registry::open(dir.path()).unwrap();
        let def = DatabaseDef {
            name: "lake".into(),
            engine: "DataLakeCatalog".into(),
            args: vec![
                "http://u:pw@127.0.0.1/v1".into(),
                "user".into(),
                "PASSW0RD".into(),
            ],
            settings: BTreeMap::from([
                ("catalog_type".to_string(), "rest".to_string()),
                ("catalog_credential".to_string(), "id:S3CR3T".to_string()),
            ]),
            setting_order: Vec::new(),
        };
        r.create_database(def.clone(), false).unwrap();
        assert_eq!(
            r.create_database(def.clone(), false).unwrap_err().kind(),
            ErrorKind::DatabaseAlreadyExists
        );
        r.create_database(def.clone(), true).unwrap();
        let again = Registry::open(dir.path()).unwrap();
        assert_eq!(again.database("lake"), Some(&def));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let f = dir.path().join("databases/lake.json");
            let mode = std::fs::metadata(f).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let shown = format!("{:?} {:?}", def.masked_args(), def.masked_settings());
        assert!(
            !shown.contains("S3CR3T") && !shown.contains("PASSW0RD"),
            "{shown}"
        );
        assert!(def.secrets().contains(&"S3CR3T".to_string()));
        let mut again = again;
        assert!(again.drop_database("lake").unwrap());
        assert!(!again.drop_database("lake").unwrap());
        assert!(
            Registry::open(dir.path())
                .unwrap()
                .database("lake")
                .is_none()
        );
    }

    #[test]
    fn masks_secrets() {
        let masked = def("d", "t").masked_args();
        assert_eq!(masked[0], EngineArg::Str("s3://b/t/".into()));
        assert_eq!(masked[1], EngineArg::Str("AKIA".into()));
        assert_eq!(masked[2], EngineArg::Str(HIDDEN.into()));
        let az = TableDef {
            engine: "IcebergAzure".into(),
            args: vec![EngineArg::Str(
                "DefaultEndpointsProtocol=http;AccountName=a;AccountKey=k==;".into(),
            )],
            ..def("d", "t")
        };
        assert_eq!(
            az.masked_args()[0],
            EngineArg::Str(format!(
                "DefaultEndpointsProtocol=http;AccountName=a;AccountKey={HIDDEN};"
            ))
        );
    }
}
