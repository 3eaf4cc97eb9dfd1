//! Catalog databases (`CREATE DATABASE … ENGINE = DataLakeCatalog(…)`): their definitions, their
//! `SHOW CREATE DATABASE` text, and opening one of their tables for maintenance.
//!
//! A session opens each catalog database's catalog ([`crate::catalog::open`]) once, from the
//! stored definition, and keeps it for its later statements ([`OpenCatalogs`]: `GET /v1/config`
//! and an OAuth2 token are fetched once per database and session, not per statement); a table
//! name of such a database is `namespace.table`. Secrets (the password
//! argument, `catalog_credential`, `auth_header`, `aws_secret_access_key`, …) are `[HIDDEN]` in
//! `SHOW CREATE DATABASE`, and [`scrub`] removes them from any message a catalog error carries.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex};

use super::registry::DatabaseDef;
use super::runtime::Runtime;
use crate::catalog::{self, Catalog, CatalogConfig, CatalogTable, TableIdent};
use crate::error::{Error, Result};
use crate::io::HIDDEN;
use crate::literal::Literal;
use crate::maintain::target::{MaintenanceTarget, TableSource};
use crate::settings::Settings;
use crate::sql::ast::CreateDatabase;

/// The definition `create` registers; checked as ClickHouse checks it (engine name, arguments,
/// setting names and values, `catalog_type`, `warehouse`).
pub fn database_def(create: &CreateDatabase) -> Result<DatabaseDef> {
    if create.engine != catalog::ENGINE {
        return Err(Error::not_implemented(format!(
            "Database engine {} is not supported by icetrim; use {}",
            create.engine,
            catalog::ENGINE
        )));
    }
    let args = create
        .args
        .iter()
        .enumerate()
        .map(|(i, a)| match a {
            Literal::String(s) => Ok(s.clone()),
            other => Err(Error::bad_arguments(format!(
                "Argument {} of {} must be a string literal, got {other}",
                i + 1,
                catalog::ENGINE
            ))),
        })
        .collect::<Result<Vec<_>>>()?;
    let mut settings = BTreeMap::new();
    let mut setting_order = Vec::new();
    for (name, value) in &create.settings {
        let text = match value {
            Literal::String(s) => s.clone(),
            Literal::Number(n) => n.clone(),
            Literal::Bool(b) => if *b { "1" } else { "0" }.to_string(),
            other => {
                return Err(Error::bad_arguments(format!(
                    "Setting {name} of {} must be a literal string, number or bool, got {other}",
                    catalog::ENGINE
                )));
            }
        };
        settings.insert(name.clone(), catalog::normalize_setting(name, &text)?);
        if !setting_order.contains(name) {
            setting_order.push(name.clone());
        }
    }
    let def = DatabaseDef {
        name: create.name.clone(),
        engine: create.engine.clone(),
        args,
        settings,
        setting_order,
    };
    config(&def)?;
    Ok(def)
}

/// The catalog configuration of `def`.
pub fn config(def: &DatabaseDef) -> Result<CatalogConfig> {
    CatalogConfig::from_definition(&def.name, &def.args, &def.settings)
}

/// The catalog of `def`.
pub fn open_catalog(def: &DatabaseDef) -> Result<Arc<dyn Catalog>> {
    catalog::open(&config(def)?).map_err(|e| scrub(e, def))
}

/// The catalogs a session opened, one per catalog database, each kept while the database's
/// definition stays the one it was opened from (a database dropped and created again with other
/// settings is opened anew).
#[derive(Default)]
pub struct OpenCatalogs(Mutex<HashMap<String, OpenCatalog>>);

/// A catalog and the database definition it was opened from.
type OpenCatalog = (DatabaseDef, Arc<dyn Catalog>);

impl fmt::Debug for OpenCatalogs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Database names only: a definition holds secrets.
        let names: Vec<String> = match self.0.lock() {
            Ok(open) => open.keys().cloned().collect(),
            Err(_) => Vec::new(),
        };
        f.debug_tuple("OpenCatalogs").field(&names).finish()
    }
}

impl OpenCatalogs {
    /// The catalog of `def`: the one opened before for this definition, else a new one (kept).
    pub fn get(&self, def: &DatabaseDef) -> Result<Arc<dyn Catalog>> {
        if let Ok(open) = self.0.lock()
            && let Some((held, catalog)) = open.get(&def.name)
            && held == def
        {
            return Ok(Arc::clone(catalog));
        }
        let catalog = open_catalog(def)?;
        if let Ok(mut open) = self.0.lock() {
            open.insert(def.name.clone(), (def.clone(), Arc::clone(&catalog)));
        }
        Ok(catalog)
    }

    /// Forget the catalog of database `name` (dropped).
    pub fn forget(&self, name: &str) {
        if let Ok(mut open) = self.0.lock() {
            open.remove(name);
        }
    }
}

/// The `SHOW CREATE DATABASE` text, secrets `[HIDDEN]`.
pub fn show_create(def: &DatabaseDef) -> String {
    let args: Vec<String> = def
        .masked_args()
        .into_iter()
        .map(|a| Literal::String(a).to_string())
        .collect();
    let mut out = format!(
        "CREATE DATABASE {}\nENGINE = {}({})",
        crate::sql::TableName {
            database: None,
            table: def.name.clone()
        },
        def.engine,
        args.join(", ")
    );
    let settings = def.masked_settings();
    if !settings.is_empty() {
        // Written order (as ClickHouse prints them), then any the order does not name.
        let mut names: Vec<&String> = def
            .setting_order
            .iter()
            .filter(|n| settings.contains_key(*n))
            .collect();
        names.extend(settings.keys().filter(|k| !def.setting_order.contains(k)));
        let shown: Vec<String> = names
            .into_iter()
            .map(|k| (k, &settings[k]))
            .map(|(k, v)| {
                let flag = catalog::database_setting(k).is_some_and(|s| s.boolean);
                if flag {
                    format!("{k} = {v}")
                } else {
                    format!("{k} = {}", Literal::String(v.clone()))
                }
            })
            .collect();
        out.push_str(&format!("\nSETTINGS {}", shown.join(", ")));
    }
    out
}

/// `e` with every secret of `def` replaced by `[HIDDEN]`.
pub fn scrub(e: Error, def: &DatabaseDef) -> Error {
    let mut message = e.message().to_string();
    let mut changed = false;
    for secret in def.secrets() {
        if message.contains(&secret) {
            message = message.replace(&secret, HIDDEN);
            changed = true;
        }
    }
    if changed {
        Error::new(e.kind(), message)
    } else {
        e
    }
}

/// The table `name` (`namespace.table`) of the catalog database `def`, loaded once (its storage
/// and location) through a catalog opened for it alone, ready for a procedure run with
/// `settings` (the typed API's [`super::api::Table::open_catalog`]).
pub async fn open_table(
    runtime: &Runtime,
    settings: &Settings,
    def: &DatabaseDef,
    name: &str,
) -> Result<MaintenanceTarget> {
    open_table_in(runtime, settings, def, open_catalog(def)?, name).await
}

/// [`open_table`] through `catalog`, the catalog of `def` a session keeps ([`OpenCatalogs`]).
pub async fn open_table_in(
    runtime: &Runtime,
    settings: &Settings,
    def: &DatabaseDef,
    catalog: Arc<dyn Catalog>,
    name: &str,
) -> Result<MaintenanceTarget> {
    let ident = TableIdent::parse(name, &def.name)?;
    let loaded = catalog
        .load_table(&ident)
        .await
        .map_err(|e| scrub(e, def))?;
    let io = runtime.io_override.clone().unwrap_or(loaded.io);
    Ok(MaintenanceTarget {
        source: TableSource::Catalog(CatalogTable { catalog, ident }),
        io,
        location: loaded.metadata.location().trim_end_matches('/').to_string(),
        metadata_settings: Default::default(),
        table_name: format!("{}.`{name}`", def.name),
        settings: settings.clone(),
        now_ms: runtime.clock.now_ms(),
        progress: Default::default(),
        before_commit: runtime.before_commit.clone(),
    })
}

/// `work`, abandoned with `QUERY_WAS_CANCELLED` when `progress` is cancelled (before anything
/// is written: loading and listing only).
pub async fn cancellable<T>(
    progress: &crate::progress::Progress,
    work: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    let mut work = std::pin::pin!(work);
    loop {
        tokio::select! {
            outcome = &mut work => return outcome,
            () = tokio::time::sleep(std::time::Duration::from_millis(50)) => progress.check()?,
        }
    }
}

/// The tables of the catalog database `def` (its `catalog`), as `namespace.table` names, sorted.
pub async fn table_names(def: &DatabaseDef, catalog: &dyn Catalog) -> Result<Vec<String>> {
    let mut names: Vec<String> = catalog
        .list_tables()
        .await
        .map_err(|e| scrub(e, def))?
        .iter()
        .map(ToString::to_string)
        .collect();
    names.sort();
    Ok(names)
}

/// What `CREATE DATABASE` checks by reaching the catalog (as ClickHouse does): its config
/// endpoint answers with these credentials.
pub async fn check_reachable(def: &DatabaseDef, catalog: &dyn Catalog) -> Result<()> {
    catalog.check().await.map_err(|e| scrub(e, def))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::{Statement, parse_statement};

    fn create(sql: &str) -> CreateDatabase {
        match parse_statement(sql).unwrap() {
            Statement::CreateDatabase(c) => c,
            other => panic!("{other}"),
        }
    }

    #[test]
    fn show_create_is_clickhouses() {
        // As chdb (ClickHouse 26.9) prints the same statement.
        let def = database_def(&create(
            "CREATE DATABASE lake ENGINE = DataLakeCatalog('http://127.0.0.1:1/v1', 'user', 'pw') \
             SETTINGS catalog_type='rest', warehouse='chk', aws_secret_access_key='S', \
             aws_access_key_id='AK', vended_credentials=0, region='us-east-1', auth_scope='s', \
             storage_endpoint='http://127.0.0.1:9/b', auth_header='Authorization: Bearer x'",
        ))
        .unwrap();
        assert_eq!(
            show_create(&def),
            "CREATE DATABASE lake\nENGINE = DataLakeCatalog('http://127.0.0.1:1/v1', 'user', \
             '[HIDDEN]')\nSETTINGS catalog_type = 'rest', warehouse = 'chk', \
             aws_secret_access_key = '[HIDDEN]', aws_access_key_id = '[HIDDEN]', \
             vended_credentials = 0, region = 'us-east-1', auth_scope = 's', \
             storage_endpoint = 'http://127.0.0.1:9/b', auth_header = '[HIDDEN]'"
        );
    }

    #[test]
    fn show_create_hides_secrets() {
        let def = database_def(&create(
            "CREATE DATABASE lake ENGINE = DataLakeCatalog('http://127.0.0.1:8181/v1', 'u', 'PW1') \
             SETTINGS catalog_type = 'rest', warehouse = 'wh', catalog_credential = 'id:S3CR3T', \
             vended_credentials = 0, aws_secret_access_key = 'AWSSECRET', auth_header = 'Authorization: Bearer TOK3N'",
        ))
        .unwrap();
        let text = show_create(&def);
        for secret in ["PW1", "S3CR3T", "AWSSECRET", "TOK3N"] {
            assert!(!text.contains(secret), "{text}");
        }
        assert!(text.starts_with(
            "CREATE DATABASE lake\nENGINE = DataLakeCatalog('http://127.0.0.1:8181/v1', 'u', '[HIDDEN]')\nSETTINGS "
        ));
        assert!(text.contains("vended_credentials = 0"), "{text}");
        let e = scrub(Error::bad_arguments("token S3CR3T and TOK3N"), &def);
        assert_eq!(e.message(), "token [HIDDEN] and [HIDDEN]");
    }

    #[test]
    fn clickhouse_errors() {
        let e = database_def(&create(
            "CREATE DATABASE lake ENGINE = DataLakeCatalog('http://x/v1') SETTINGS catalog_type = 'rest', nope = 1",
        ))
        .unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::UnknownSetting);
        let e = database_def(&create(
            "CREATE DATABASE lake ENGINE = DataLakeCatalog('http://x/v1') SETTINGS catalog_type = 'bogus', warehouse = 'w'",
        ))
        .unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::BadArguments);
        let e = database_def(&create("CREATE DATABASE lake ENGINE = Atomic")).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::NotImplemented);
    }
}
