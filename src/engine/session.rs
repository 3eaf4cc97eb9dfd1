//! The embedding API: an [`Engine`] (the table registry and the runtime, shared) and its
//! [`Session`]s (current database and settings, each its own), which run statements.
//!
//! A script runs statement by statement and stops at the first error. Each statement fails before
//! any I/O when its text, `FORMAT`, table, gates or arguments are wrong. Databases: there is no
//! `CREATE DATABASE`; a database exists when it is `default`, the session's current one, or holds a
//! table (`CREATE TABLE db.t` brings `db` into being). `USE` and `SHOW TABLES FROM` of any other name
//! fail with `UNKNOWN_DATABASE` as in ClickHouse.
//!
//! Hosts follow procedures with a [`ProgressSink`] ([`EngineBuilder::progress`],
//! [`Session::set_progress`]), cancel them with a [`CancelToken`] ([`Session::execute_with`]),
//! and fill `{name:Type}` placeholders with [`Session::set_param`] (see [`super::params`]).

use std::collections::BTreeMap;
use std::fmt;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::Mutex;

use super::catalog_db;
use super::ddl;
use super::introspect::system_table_rows;
use super::params::{PARAM_SETTING_PREFIX, setting_value_text, substitute};
use super::procedures::{OPTIMIZE_DISABLED, check_gates, run_procedure_on, run_table_change_on};
use super::registry::Registry;
use super::result::QueryResult;
use super::runtime::Runtime;
use super::select_eval;
use super::table::open_table;
use crate::clock::Clock;
use crate::error::{Error, ErrorKind, Result};
use crate::format::{Column, OutputFormat, Value};
use crate::maintain::target::BeforeCommit;
use crate::plan::{CompactOptions, ProcedureCall, RewriteManifestsOptions, TableChange};
use crate::progress::{CancelToken, Progress, ProgressSink, cancelled_error};
use crate::settings::Settings;
use crate::sql::ast::OptimizeTable;
use crate::sql::bind_snapshots::bind_alter;
use crate::sql::lexer::{Kind, Lexer, Punct, Token as LexToken};
use crate::sql::parser::parse_checked;
use crate::sql::{
    AlterExecute, AlterTable, BindContext, Literal, OptimizeManifest, ParseLimits, Select,
    Statement, TableName, bind_noted, split_statements,
};

fn unknown_database(database: &str) -> Error {
    Error::new(
        ErrorKind::UnknownDatabase,
        format!("Database {database} does not exist"),
    )
}

/// Where a statement's table is: a catalog database's table, or a registered path table.
enum TablePlace {
    Catalog(super::registry::DatabaseDef),
    Path(super::registry::TableDef),
}

/// What a statement runs on its table.
enum TableWork {
    Procedure(ProcedureCall),
    Change(TableChange),
}

/// The database a session starts in.
pub const DEFAULT_DATABASE: &str = "default";

/// What the sessions of one engine share.
#[derive(Debug)]
struct Shared {
    registry: Mutex<Registry>,
    runtime: Runtime,
    defaults: Settings,
    progress: Sink,
}

/// An optional progress sink that prints as `set` / `none` in `Debug`.
#[derive(Clone, Default)]
struct Sink(Option<ProgressSink>);

impl fmt::Debug for Sink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() { "set" } else { "none" })
    }
}

/// An icetrim engine: the registered tables and the runtime (clock) its sessions share.
///
/// ```
/// use icetrim::engine::Engine;
/// use icetrim::format::Value;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> icetrim::Result<()> {
/// let engine = Engine::builder().setting("session_timezone", "UTC").build()?;
/// let mut session = engine.session();
/// session
///     .execute("SET iceberg_delete_concurrency = 4; CREATE TABLE t ENGINE = IcebergLocal('/tmp/x')")
///     .await?;
/// let results = engine.session().execute("SHOW TABLES").await?;
/// assert_eq!(results[0].rows, vec![vec![Value::Str("t".into())]]);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Engine {
    shared: Arc<Shared>,
}

/// Builds an [`Engine`]: where tables are remembered, the clock, default settings.
#[derive(Debug, Default)]
pub struct EngineBuilder {
    data_path: Option<PathBuf>,
    clock: Option<Arc<dyn Clock>>,
    settings: Vec<(String, String)>,
    progress: Sink,
    before_commit: Option<BeforeCommit>,
}

impl EngineBuilder {
    /// Report the progress of every session's procedures to `sink` (a session may replace it
    /// with [`Session::set_progress`]).
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// use icetrim::engine::Engine;
    /// use icetrim::progress::ProgressEvent;
    ///
    /// let events = Arc::new(AtomicUsize::new(0));
    /// let counter = Arc::clone(&events);
    /// let engine = Engine::builder()
    ///     .progress(move |_: &ProgressEvent| {
    ///         counter.fetch_add(1, Ordering::Relaxed);
    ///     })
    ///     .build()?;
    /// # let _ = engine;
    /// # Ok::<(), icetrim::Error>(())
    /// ```
    pub fn progress(
        mut self,
        sink: impl Fn(&crate::progress::ProgressEvent) + Send + Sync + 'static,
    ) -> Self {
        self.progress = Sink(Some(std::sync::Arc::new(sink)));
        self
    }

    /// Persist the table registry under `dir` (created if missing). Without it, tables live in
    /// memory only.
    pub fn data_path(mut self, dir: impl Into<PathBuf>) -> Self {
        self.data_path = Some(dir.into());
        self
    }

    /// Use `clock` for "now" (default: the system clock).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// A default for session setting `name`, given as text the way a command line gives it
    /// (`"1"`, `"true"`, `"UTC"`); validated by [`build`](Self::build).
    pub fn setting(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.settings.push((name.into(), value.into()));
        self
    }

    /// Run `hook` before every commit attempt of every statement ([`BeforeCommit`]: tests that
    /// put another writer's commit between a plan and its commit).
    #[doc(hidden)]
    pub fn before_commit(mut self, hook: BeforeCommit) -> Self {
        self.before_commit = Some(hook);
        self
    }

    /// The engine. Fails on an unknown or invalid setting, or a data path that cannot be read.
    pub fn build(self) -> Result<Engine> {
        let mut defaults = Settings::new();
        for (name, value) in &self.settings {
            defaults.set(name, &Literal::String(value.clone()))?;
        }
        let registry = match &self.data_path {
            Some(dir) => Registry::open(dir)?,
            None => Registry::in_memory(),
        };
        let mut runtime = match self.clock {
            Some(clock) => Runtime::new(clock),
            None => Runtime::default(),
        };
        runtime.before_commit = self.before_commit;
        Ok(Engine {
            shared: Arc::new(Shared {
                registry: Mutex::new(registry),
                runtime,
                defaults,
                progress: self.progress,
            }),
        })
    }
}

impl Engine {
    /// A builder with an in-memory registry, the system clock and default settings.
    pub fn builder() -> EngineBuilder {
        EngineBuilder::default()
    }

    /// A new session in database `default` with the engine's default settings.
    pub fn session(&self) -> Session {
        Session {
            shared: Arc::clone(&self.shared),
            settings: self.shared.defaults.clone(),
            database: DEFAULT_DATABASE.to_string(),
            progress: self.shared.progress.clone(),
            cancel: None,
            params: BTreeMap::new(),
            catalogs: catalog_db::OpenCatalogs::default(),
        }
    }

    /// The runtime the sessions share.
    pub fn runtime(&self) -> &Runtime {
        &self.shared.runtime
    }
}

/// Whether `sql` (one statement) is for icetrim when it sits beside a host engine: `ALTER TABLE …
/// EXECUTE …`, the ref and property statements (`ALTER TABLE … CREATE|REPLACE|DROP BRANCH|TAG`,
/// `… SET|UNSET TBLPROPERTIES`), `[EXPLAIN] OPTIMIZE TABLE [db.]t [MANIFEST]`, or their `EXPLAIN`,
/// well-formed or not (so that icetrim reports the errors in its own statements). Everything else
/// (another `OPTIMIZE` too) belongs to the host.
///
/// ```
/// assert!(icetrim::engine::handles("ALTER TABLE t EXECUTE expire_snapshots()"));
/// assert!(icetrim::engine::handles("explain alter table db.t execute nonsense("));
/// assert!(icetrim::engine::handles("OPTIMIZE TABLE db.t MANIFEST"));
/// assert!(icetrim::engine::handles("OPTIMIZE TABLE db.t"));
/// assert!(!icetrim::engine::handles("OPTIMIZE TABLE t FINAL"));
/// assert!(!icetrim::engine::handles("ALTER TABLE t DROP COLUMN c"));
/// assert!(icetrim::engine::handles("ALTER TABLE db.t CREATE OR REPLACE BRANCH b"));
/// assert!(icetrim::engine::handles("alter table t unset tblproperties ('k')"));
/// assert!(!icetrim::engine::handles("SELECT 1"));
/// ```
pub fn handles(sql: &str) -> bool {
    let mut lexer = Lexer::new(sql);
    let mut tokens: Vec<LexToken> = Vec::with_capacity(8);
    while tokens.len() < 8 {
        let token = lexer.next_significant();
        if token.start == token.end {
            break;
        }
        tokens.push(token);
    }
    let keyword = |i: usize, word: &str| tokens.get(i).is_some_and(|t| t.is_word(sql, word));
    let is_name = |i: usize| matches!(tokens.get(i), Some(t) if matches!(t.kind, Kind::Word | Kind::QuotedIdent));
    let mut at = usize::from(keyword(0, "EXPLAIN"));
    let optimize = keyword(at, "OPTIMIZE");
    if !((optimize || keyword(at, "ALTER")) && keyword(at + 1, "TABLE") && is_name(at + 2)) {
        return false;
    }
    at += 3;
    if matches!(tokens.get(at), Some(t) if t.kind == Kind::Punct(Punct::Period)) && is_name(at + 1)
    {
        at += 2;
    }
    if optimize {
        // `OPTIMIZE TABLE t [MANIFEST] [FORMAT f] [;]`; MergeTree's clauses belong to the host.
        let ends = match tokens.get(at) {
            None => true,
            Some(t) => t.kind == Kind::Punct(Punct::Semicolon),
        };
        return ends || keyword(at, "MANIFEST") || keyword(at, "FORMAT");
    }
    let ref_kind = |i: usize| keyword(i, "BRANCH") || keyword(i, "TAG");
    keyword(at, "EXECUTE")
        || (keyword(at, "CREATE") && (ref_kind(at + 1) || keyword(at + 1, "OR")))
        || (keyword(at, "REPLACE") && ref_kind(at + 1))
        || (keyword(at, "DROP") && ref_kind(at + 1))
        || ((keyword(at, "SET") || keyword(at, "UNSET")) && keyword(at + 1, "TBLPROPERTIES"))
}

/// A connection-like context: the current database and settings, over an [`Engine`]'s tables.
///
/// ```
/// use icetrim::engine::Engine;
/// use icetrim::ErrorKind;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> icetrim::Result<()> {
/// let mut session = Engine::builder().build()?.session();
/// session
///     .execute("CREATE TABLE s3t ENGINE = IcebergS3('s3://b/t/', 'AKIA', 'secret')")
///     .await?;
/// let shown = session.execute("SHOW CREATE TABLE s3t").await?;
/// assert_eq!(
///     shown[0].rows[0][0].to_string(),
///     "CREATE TABLE default.s3t\nENGINE = IcebergS3('s3://b/t/', 'AKIA', '[HIDDEN]')"
/// );
/// let error = session.execute("SET no_such_setting = 1").await.unwrap_err();
/// assert_eq!(error.kind(), ErrorKind::UnknownSetting);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Session {
    shared: Arc<Shared>,
    settings: Settings,
    database: String,
    progress: Sink,
    /// The token of the running [`Session::execute_with`], if any.
    cancel: Option<CancelToken>,
    params: BTreeMap<String, String>,
    /// The catalog of each catalog database, opened once for the session.
    catalogs: catalog_db::OpenCatalogs,
}

impl Session {
    /// Report this session's procedures to `sink` (`None`: no reporting), replacing the engine's.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use icetrim::engine::Engine;
    /// use icetrim::progress::ProgressEvent;
    /// let mut session = Engine::builder().build()?.session();
    /// session.set_progress(Some(Arc::new(|e: &ProgressEvent| eprintln!("{} {}", e.phase, e.done))));
    /// session.set_progress(None);
    /// # Ok::<(), icetrim::Error>(())
    /// ```
    pub fn set_progress(&mut self, sink: Option<ProgressSink>) {
        self.progress = Sink(sink);
    }

    /// Sets query parameter `name` (for `{name:Type}` placeholders) to `value`, as
    /// `--param_<name>=<value>` or `SET param_<name> = '<value>'` do.
    ///
    /// ```
    /// use icetrim::engine::Engine;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> icetrim::Result<()> {
    /// let mut session = Engine::builder().build()?.session();
    /// session.set_param("n", "4");
    /// session.execute("SET iceberg_delete_concurrency = {n:UInt64}").await?;
    /// assert_eq!(session.settings().delete_concurrency(), 4);
    /// let missing = session.execute("SET iceberg_delete_concurrency = {m:UInt64}").await.unwrap_err();
    /// assert_eq!(missing.code(), 456);
    /// # Ok(())
    /// # }
    /// ```
    pub fn set_param(&mut self, name: impl Into<String>, value: impl Into<String>) {
        self.params.insert(name.into(), value.into());
    }

    /// The query parameters set so far.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> icetrim::Result<()> {
    /// let mut session = icetrim::engine::Engine::builder().build()?.session();
    /// session.execute("SET param_period = '7d'").await?;
    /// assert_eq!(session.params().get("period").map(String::as_str), Some("7d"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn params(&self) -> &BTreeMap<String, String> {
        &self.params
    }

    /// [`execute`](Self::execute), cancelled by `token`: a statement cancelled before it writes
    /// fails with `QUERY_WAS_CANCELLED` (394) and has written and deleted nothing; one cancelled
    /// after its commit keeps the commit, stops its remaining deletes (they stay as orphans) and
    /// says so in a warning. Statements after a cancelled one do not run.
    ///
    /// ```
    /// use icetrim::engine::Engine;
    /// use icetrim::progress::CancelToken;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> icetrim::Result<()> {
    /// let mut session = Engine::builder().build()?.session();
    /// let token = CancelToken::new();
    /// assert_eq!(session.execute_with("SHOW TABLES", &token).await?.len(), 1);
    /// token.cancel();
    /// let error = session.execute_with("SHOW TABLES", &token).await.unwrap_err();
    /// assert_eq!(error.code(), 394);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn execute_with(
        &mut self,
        sql: &str,
        token: &CancelToken,
    ) -> Result<Vec<QueryResult>> {
        let previous = self.cancel.replace(token.clone());
        let outcome = self.execute(sql).await;
        self.cancel = previous;
        outcome
    }

    /// [`execute_one`](Self::execute_one), cancelled by `token` as in
    /// [`execute_with`](Self::execute_with).
    ///
    /// ```
    /// use icetrim::engine::Engine;
    /// use icetrim::progress::CancelToken;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> icetrim::Result<()> {
    /// let mut session = Engine::builder().build()?.session();
    /// let result = session.execute_one_with("SHOW TABLES", 1, &CancelToken::new()).await?;
    /// assert!(result.rows.is_empty());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn execute_one_with(
        &mut self,
        text: &str,
        first_line: usize,
        token: &CancelToken,
    ) -> Result<QueryResult> {
        let previous = self.cancel.replace(token.clone());
        let outcome = self.execute_one(text, first_line).await;
        self.cancel = previous;
        outcome
    }

    /// The current database (`USE db` changes it).
    pub fn current_database(&self) -> &str {
        &self.database
    }

    /// The session's settings (`SET` changes them).
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Runs every statement of `sql` in order; the first error stops the script and is returned
    /// (the results before it are dropped: use [`execute_each`](Self::execute_each) to keep them).
    pub async fn execute(&mut self, sql: &str) -> Result<Vec<QueryResult>> {
        let mut results = Vec::new();
        let mut failure = None;
        let _stopped = self
            .execute_each(sql, |_, result| match result {
                Ok(result) => {
                    results.push(result);
                    ControlFlow::Continue(())
                }
                Err(error) => {
                    failure = Some(error);
                    ControlFlow::Break(())
                }
            })
            .await;
        match failure {
            Some(error) => Err(error),
            None => Ok(results),
        }
    }

    /// Runs the statements of `sql` in order, handing each statement's text and outcome to
    /// `on_result`, which decides whether to go on (errors included: return `Continue` to ignore
    /// one). Returns `Break` when `on_result` stopped the script.
    pub async fn execute_each<F>(&mut self, sql: &str, mut on_result: F) -> ControlFlow<()>
    where
        F: FnMut(&str, Result<QueryResult>) -> ControlFlow<()>,
    {
        for (text, line) in split_statements(sql) {
            let result = self.execute_one(text, line).await;
            on_result(text, result)?;
        }
        ControlFlow::Continue(())
    }

    /// Parses and runs one statement whose text starts on line `first_line` of its script (for
    /// syntax error positions).
    /// `{name:Type}` placeholders are replaced by the session's parameters first.
    /// The text is checked against `max_query_size` and `max_parser_depth` as written (before
    /// the parameters, as ClickHouse does).
    pub async fn execute_one(&mut self, text: &str, first_line: usize) -> Result<QueryResult> {
        self.parse_limits().check(text, first_line)?;
        let text = substitute(text, &self.params)?;
        let statement = parse_checked(&text, first_line)?;
        self.execute_statement(&statement).await
    }

    /// The parser's limits of this session's settings.
    fn parse_limits(&self) -> ParseLimits {
        ParseLimits {
            max_query_size: self.settings.max_query_size(),
            max_parser_depth: self.settings.max_parser_depth(),
        }
    }

    /// Runs `sql` when it is an icetrim statement ([`handles`]); `None` leaves it to the host.
    pub async fn try_handle(&mut self, sql: &str) -> Option<Result<QueryResult>> {
        if !handles(sql) {
            return None;
        }
        Some(self.execute_one(sql.trim(), 1).await)
    }

    /// Runs a parsed statement.
    pub async fn execute_statement(&mut self, statement: &Statement) -> Result<QueryResult> {
        if self.cancel.as_ref().is_some_and(CancelToken::is_cancelled) {
            return Err(cancelled_error());
        }
        let format = statement
            .format()
            .map(OutputFormat::from_name)
            .transpose()?;
        let mut result = match statement {
            Statement::AlterExecute(alter) => self.alter_execute(alter, false).await?,
            Statement::Explain(inner) => self.explain(inner).await?,
            Statement::Optimize(o) => self.optimize(o, false).await?,
            Statement::CreateTable(create) => {
                let def = ddl::table_def(create, &self.database)?;
                self.refuse_in_catalog(&def.database, "CREATE TABLE")
                    .await?;
                self.shared
                    .registry
                    .lock()
                    .await
                    .create(def, create.if_not_exists)?;
                QueryResult {
                    warnings: ddl::create_warnings(create),
                    ..QueryResult::empty()
                }
            }
            Statement::DropTable { if_exists, name } => {
                let database = self.database_of(name);
                self.refuse_in_catalog(&database, "DROP TABLE").await?;
                self.shared
                    .registry
                    .lock()
                    .await
                    .drop_table(&database, &name.table, *if_exists)?;
                QueryResult::empty()
            }
            Statement::ShowTables { from_db, .. } => self.show_tables(from_db.as_deref()).await?,
            Statement::ShowCreateTable { name, .. } => {
                self.refuse_in_catalog(&self.database_of(name), "SHOW CREATE TABLE")
                    .await?;
                let registry = self.shared.registry.lock().await;
                let def = registry.get(&self.database_of(name), &name.table)?;
                QueryResult::table(
                    vec![Column::new("statement", "String")],
                    vec![vec![Value::Str(ddl::show_create(def))]],
                )
            }
            Statement::Use(database) => {
                self.check_database(database).await?;
                self.database = database.clone();
                QueryResult::empty()
            }
            Statement::Set(pairs) => {
                let mut settings = self.settings.clone();
                let mut params = self.params.clone();
                for (name, value) in pairs {
                    match name.strip_prefix(PARAM_SETTING_PREFIX) {
                        Some(param) if !param.is_empty() => {
                            params.insert(param.to_string(), setting_value_text(value));
                        }
                        _ => settings.set(name, value)?,
                    }
                }
                self.settings = settings;
                self.params = params;
                QueryResult::empty()
            }
            Statement::Select(select) => self.select(select).await?,
            Statement::AlterTable(alter) => self.alter_table(alter, false).await?,
            Statement::OptimizeManifest(optimize) => {
                self.optimize_manifest(optimize, false).await?
            }
            Statement::CreateDatabase(create) => {
                let def = catalog_db::database_def(create)?;
                if def
                    .settings
                    .get("catalog_type")
                    .is_some_and(|t| t == "rest")
                    && !self.settings.allow_database_iceberg()
                {
                    return Err(Error::new(
                        ErrorKind::SupportIsDisabled,
                        "DatabaseDataLake with Iceberg Rest catalog is beta. To allow its usage, \
                         enable setting allow_database_iceberg",
                    ));
                }
                if def
                    .settings
                    .get("catalog_type")
                    .is_some_and(|t| t == "glue")
                    && !self.settings.allow_database_glue_catalog()
                {
                    return Err(Error::new(
                        ErrorKind::SupportIsDisabled,
                        "DatabaseDataLake with Glue catalog is beta. To allow its usage, enable \
                         setting allow_database_glue_catalog",
                    ));
                }
                let exists = self.database_exists(&def.name).await;
                if exists && create.if_not_exists {
                    return Ok(QueryResult::empty());
                }
                if !exists {
                    // As ClickHouse: the catalog must answer with these credentials.
                    let progress = Progress::new(None, self.cancel.clone());
                    let catalog = self.catalogs.get(&def)?;
                    let check = catalog_db::check_reachable(&def, catalog.as_ref());
                    catalog_db::cancellable(&progress, check).await?;
                }
                self.shared
                    .registry
                    .lock()
                    .await
                    .create_database(def, create.if_not_exists)?;
                QueryResult::empty()
            }
            Statement::DropDatabase { if_exists, name } => {
                let mut registry = self.shared.registry.lock().await;
                let dropped = registry.drop_database(name)?;
                self.catalogs.forget(name);
                let tables: Vec<String> = registry
                    .tables_in(name)
                    .into_iter()
                    .map(|d| d.name.clone())
                    .collect();
                for table in &tables {
                    registry.drop_table(name, table, true)?;
                }
                if !dropped && tables.is_empty() && !*if_exists {
                    return Err(unknown_database(name));
                }
                if self.database == *name {
                    self.database = DEFAULT_DATABASE.to_string();
                }
                QueryResult::empty()
            }
            Statement::ShowDatabases { .. } => {
                let registry = self.shared.registry.lock().await;
                let mut names: Vec<String> = registry.table_databases();
                names.extend(registry.databases().map(|d| d.name.clone()));
                names.push(DEFAULT_DATABASE.to_string());
                names.push(self.database.clone());
                names.sort();
                names.dedup();
                QueryResult::table(
                    vec![Column::new("name", "String")],
                    names.into_iter().map(|n| vec![Value::Str(n)]).collect(),
                )
            }
            Statement::ShowCreateDatabase { name, .. } => {
                let text = match self.catalog_database(name).await {
                    Some(def) => catalog_db::show_create(&def),
                    None => {
                        self.check_database(name).await?;
                        format!(
                            "CREATE DATABASE {}\nENGINE = Atomic",
                            TableName {
                                database: None,
                                table: name.clone()
                            }
                        )
                    }
                };
                QueryResult::table(
                    vec![Column::new("statement", "String")],
                    vec![vec![Value::Str(text)]],
                )
            }
        };
        result.format = format;
        Ok(result)
    }

    fn database_of(&self, name: &TableName) -> String {
        name.database
            .clone()
            .unwrap_or_else(|| self.database.clone())
    }

    async fn database_exists(&self, database: &str) -> bool {
        let registry = self.shared.registry.lock().await;
        registry.database(database).is_some() || !registry.tables_in(database).is_empty()
    }

    async fn check_database(&self, database: &str) -> Result<()> {
        let known = database == DEFAULT_DATABASE
            || database == self.database
            || self.database_exists(database).await;
        if known {
            return Ok(());
        }
        Err(unknown_database(database))
    }

    /// The catalog database `name`, if it is one.
    async fn catalog_database(&self, name: &str) -> Option<super::registry::DatabaseDef> {
        self.shared.registry.lock().await.database(name).cloned()
    }

    /// Catalog databases hold only their catalog's tables: `what` is refused there.
    async fn refuse_in_catalog(&self, database: &str, what: &str) -> Result<()> {
        if self.catalog_database(database).await.is_none() {
            return Ok(());
        }
        Err(Error::new(
            ErrorKind::QueryIsProhibited,
            format!(
                "{what} is not allowed in database {database}: its tables are its catalog's \
                 ({})",
                crate::catalog::ENGINE
            ),
        ))
    }

    async fn show_tables(&self, from_db: Option<&str>) -> Result<QueryResult> {
        let database = from_db.unwrap_or(&self.database);
        self.check_database(database).await?;
        if let Some(def) = self.catalog_database(database).await {
            let progress = Progress::new(None, self.cancel.clone());
            let catalog = self.catalogs.get(&def)?;
            let listed = catalog_db::table_names(&def, catalog.as_ref());
            let names = catalog_db::cancellable(&progress, listed).await?;
            return Ok(QueryResult::table(
                vec![Column::new("name", "String")],
                names.into_iter().map(|n| vec![Value::Str(n)]).collect(),
            ));
        }
        let registry = self.shared.registry.lock().await;
        let mut names: Vec<String> = registry
            .tables_in(database)
            .into_iter()
            .map(|def| def.name.clone())
            .collect();
        names.sort();
        Ok(QueryResult::table(
            vec![Column::new("name", "String")],
            names.into_iter().map(|n| vec![Value::Str(n)]).collect(),
        ))
    }

    async fn select(&self, select: &Select) -> Result<QueryResult> {
        let wanted = |column: &str| {
            select
                .filter
                .iter()
                .find(|c| c.column == column && c.op == crate::sql::CompareOp::Eq)
                .and_then(|c| match &c.value {
                    Literal::String(s) => Some(s.clone()),
                    _ => None,
                })
        };
        let (only_db, only_table) = (wanted("database"), wanted("table"));
        let (defs, catalogs) = {
            let registry = self.shared.registry.lock().await;
            let defs: Vec<_> = registry
                .all()
                .filter(|d| only_db.as_ref().is_none_or(|db| *db == d.database))
                .cloned()
                .collect();
            let catalogs: Vec<_> = registry
                .databases()
                .filter(|d| only_db.as_ref().is_none_or(|db| *db == d.name))
                .cloned()
                .collect();
            (defs, catalogs)
        };
        let (columns, mut rows) =
            system_table_rows(&self.shared.runtime, &self.settings, select.table, &defs).await?;
        let progress = Progress::new(None, self.cancel.clone());
        for def in &catalogs {
            let catalog = self.catalogs.get(def)?;
            let names = match &only_table {
                Some(name) => vec![name.clone()],
                None => {
                    let listed = catalog_db::table_names(def, catalog.as_ref());
                    catalog_db::cancellable(&progress, listed).await?
                }
            };
            for name in names {
                let runtime = &self.shared.runtime;
                let catalog = Arc::clone(&catalog);
                let open = catalog_db::open_table_in(runtime, &self.settings, def, catalog, &name);
                let target = catalog_db::cancellable(&progress, open).await?;
                super::introspect::target_rows(
                    &self.settings,
                    select.table,
                    &target,
                    (&def.name, &name),
                    &mut rows,
                )
                .await
                .map_err(|e| catalog_db::scrub(e, def))?;
            }
        }
        let (columns, rows) = select_eval::evaluate(select, columns, rows)?;
        Ok(QueryResult::table(columns, rows))
    }

    /// `ALTER TABLE` on refs or properties (or its `EXPLAIN`): table, gate and statement are
    /// checked before storage is touched.
    async fn alter_table(&self, alter: &AlterTable, explain: bool) -> Result<QueryResult> {
        let place = self.place_of(&alter.table).await?;
        check_gates("ALTER TABLE", &self.settings)?;
        let change = bind_alter(&alter.action)?;
        self.run_at(
            &place,
            &alter.table.table,
            TableWork::Change(change),
            explain,
        )
        .await
    }

    /// `OPTIMIZE TABLE t` (or its `EXPLAIN`): `rewrite_data_files` with `delete_file_threshold = 1`,
    /// behind ClickHouse's gate `allow_experimental_iceberg_compaction`; path and catalog tables.
    async fn optimize(&self, o: &OptimizeTable, explain: bool) -> Result<QueryResult> {
        let place = self.place_of(&o.table).await?;
        check_gates("rewrite_data_files", &self.settings)?;
        let call = ProcedureCall::Compact(CompactOptions::optimize());
        self.run_at(&place, &o.table.table, TableWork::Procedure(call), explain)
            .await
    }

    /// `EXPLAIN <statement>`: the plan of a statement that changes a table, nothing changed.
    async fn explain(&self, inner: &Statement) -> Result<QueryResult> {
        match inner {
            Statement::AlterExecute(alter) => self.alter_execute(alter, true).await,
            Statement::Optimize(o) => self.optimize(o, true).await,
            Statement::AlterTable(alter) => self.alter_table(alter, true).await,
            Statement::OptimizeManifest(optimize) => self.optimize_manifest(optimize, true).await,
            other => Err(Error::new(
                ErrorKind::NotImplemented,
                format!("EXPLAIN is not supported for {other}"),
            )),
        }
    }

    /// `OPTIMIZE TABLE t MANIFEST` (ClickHouse 26.9): `rewrite_manifests` with the table's
    /// defaults, acting only above `iceberg_manifest_min_count_to_compact` manifests; no rows, as
    /// in ClickHouse (warnings still reach the result). `EXPLAIN` gives the plan.
    async fn optimize_manifest(
        &self,
        optimize: &OptimizeManifest,
        explain: bool,
    ) -> Result<QueryResult> {
        let place = self.place_of(&optimize.table).await?;
        if !self.settings.allow_experimental_iceberg_compaction() {
            return Err(Error::bad_arguments(OPTIMIZE_DISABLED));
        }
        let call = ProcedureCall::RewriteManifests(RewriteManifestsOptions {
            min_manifest_count: Some(self.settings.manifest_min_count_to_compact()),
            ..Default::default()
        });
        let work = TableWork::Procedure(call);
        let result = self
            .run_at(&place, &optimize.table.table, work, explain)
            .await?;
        if explain {
            return Ok(result);
        }
        Ok(QueryResult {
            warnings: result.warnings,
            ..QueryResult::empty()
        })
    }

    /// `ALTER TABLE … EXECUTE` (or its `EXPLAIN`): table, gates and arguments are checked before the
    /// procedure touches storage.
    async fn alter_execute(&self, alter: &AlterExecute, explain: bool) -> Result<QueryResult> {
        let place = self.place_of(&alter.table).await?;
        check_gates(&alter.procedure, &self.settings)?;
        let context = BindContext {
            now_ms: self.shared.runtime.clock.now_ms(),
            time_zone: self.settings.session_time_zone(),
            limits: self.parse_limits(),
        };
        let (call, notes) = bind_noted(&alter.procedure, &alter.args, &context)?;
        let work = TableWork::Procedure(call);
        let mut result = self
            .run_at(&place, &alter.table.table, work, explain)
            .await?;
        // The arguments' warnings (a DST gap or fold) come before the run's own.
        result.warnings.splice(0..0, notes);
        Ok(result)
    }

    /// Where the table `name` is, the one routing of every statement on a table: a catalog
    /// database's table (its catalog is the session's, see [`Self::run_at`]), or a registered path table
    /// (`UNKNOWN_DATABASE` for a named database that does not exist, `UNKNOWN_TABLE` when there
    /// is no such table).
    async fn place_of(&self, name: &TableName) -> Result<TablePlace> {
        let database = self.database_of(name);
        if let Some(def) = self.catalog_database(&database).await {
            return Ok(TablePlace::Catalog(def));
        }
        if name.database.is_some() {
            self.check_database(&database).await?;
        }
        let registry = self.shared.registry.lock().await;
        Ok(TablePlace::Path(
            registry.get(&database, &name.table)?.clone(),
        ))
    }

    /// Runs `work` on `table` at `place` within the statement's progress scope: a catalog table is
    /// loaded through its catalog (cancellable; errors scrubbed of the catalog's secrets).
    async fn run_at(
        &self,
        place: &TablePlace,
        table: &str,
        work: TableWork,
        explain: bool,
    ) -> Result<QueryResult> {
        let progress = Progress::new(self.progress.0.clone(), self.cancel.clone());
        let runtime = &self.shared.runtime;
        let target = match place {
            TablePlace::Catalog(def) => {
                let catalog = self.catalogs.get(def)?;
                let open = catalog_db::open_table_in(runtime, &self.settings, def, catalog, table);
                // Loading the table is cancellable too (the catalog may be slow).
                catalog_db::cancellable(&progress, open).await?
            }
            TablePlace::Path(def) => open_table(runtime, &self.settings, def)?,
        };
        let result = match work {
            TableWork::Procedure(call) => run_procedure_on(target, call, explain, &progress).await,
            TableWork::Change(change) => {
                run_table_change_on(target, &change, explain, &progress).await
            }
        };
        match place {
            TablePlace::Catalog(def) => result.map_err(|e| catalog_db::scrub(e, def)),
            TablePlace::Path(_) => result,
        }
    }
}
