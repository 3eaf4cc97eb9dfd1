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

use super::access::{Authorizer, DEFAULT_USER, store::GrantStore};
use super::catalog_db;
use super::ddl;
use super::params::{PARAM_SETTING_PREFIX, setting_value_text, substitute};
use super::procedures::{OPTIMIZE_DISABLED, check_gates, run_procedure_on, run_table_change_on};
use super::registry::Registry;
use super::result::{QueryResult, SelectRows, StatementOutput};
use super::runtime::Runtime;
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
    AlterExecute, AlterTable, BindContext, Literal, OptimizeManifest, ParseLimits, Statement,
    TableName, bind_noted, split_statements,
};

mod access_statements;
mod claims;
use access_statements::Access;
mod databases;
pub use databases::KnownNames;
mod dispatch;
mod maintain;
mod maintain_logged;
#[cfg(feature = "datafusion")]
mod metadata_query;
#[cfg(feature = "datafusion")]
pub(crate) use metadata_query::live_system_schema;
mod newest;
mod show;
mod table_statements;

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
    access: Access,
    /// The user of a new session.
    default_user: String,
    /// Every `SYSTEM MAINTAIN` run's rows (`system.iceberg_maintenance_log`).
    maintenance_log: Arc<super::maintain_log::MaintenanceLog>,
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
    object_stores: super::runtime::HostStores,
    authorizer: Option<Arc<dyn Authorizer>>,
    user: Option<String>,
    io_override: Option<crate::io::FileIO>,
    log_outputs: super::maintain_log::LogOutputs,
}

impl EngineBuilder {
    /// Also append every maintenance log entry to `file`, one JSON line each (for log
    /// shippers; the shell's `--maintenance-log-file`). See `system.iceberg_maintenance_log`.
    pub fn maintenance_log_file(mut self, file: impl Into<PathBuf>) -> Self {
        self.log_outputs.shipper_file = Some(file.into());
        self
    }

    /// After every `SYSTEM MAINTAIN` run, write the maintenance metrics as Prometheus text to
    /// `file` (to `file.tmp`, then renamed over it: for node_exporter's textfile collector; the
    /// shell's `--metrics-file`).
    pub fn metrics_file(mut self, file: impl Into<PathBuf>) -> Self {
        self.log_outputs.metrics_file = Some(file.into());
        self
    }

    /// Decide every privilege with `authorizer` instead of icetrim's own grant store (users and
    /// grants persisted under the data path). With it, `CREATE USER`, `DROP USER`, `GRANT`,
    /// `REVOKE`, `SHOW GRANTS` and `SHOW USERS` are refused: the host manages its users. See
    /// [`Authorizer`].
    pub fn authorizer(mut self, authorizer: Arc<dyn Authorizer>) -> Self {
        self.authorizer = Some(authorizer);
        self
    }

    /// The user new sessions run as (default `default`, which holds every privilege);
    /// [`build`](Self::build) fails with `UNKNOWN_USER` when icetrim's grant store does not know
    /// it. A name, not a login: see [`Session::set_user`].
    pub fn user(mut self, name: impl Into<String>) -> Self {
        self.user = Some(name.into());
        self
    }

    /// Serve every table from `io` instead of the storage its engine names (tests that count or
    /// fail requests). Not part of the API.
    #[doc(hidden)]
    pub fn io_override(mut self, io: crate::io::FileIO) -> Self {
        self.io_override = Some(io);
        self
    }

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

    /// Reach remote tables (S3, Azure, GCS) through the host's stores where `resolver` has one
    /// for the bucket or container, instead of a client icetrim builds from the table's engine
    /// arguments (a DataFusion host gets this from `icetrim::host::install`). Local tables are
    /// always read by icetrim itself.
    pub fn object_stores(mut self, resolver: crate::io::StoreResolver) -> Self {
        self.object_stores = super::runtime::HostStores::default();
        self.object_stores.set(resolver);
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
        let maintenance_log =
            super::maintain_log::open(self.data_path.as_deref(), self.log_outputs)?;
        let mut runtime = match self.clock {
            Some(clock) => Runtime::new(clock),
            None => Runtime::default(),
        };
        runtime.before_commit = self.before_commit;
        runtime.host_stores = self.object_stores;
        runtime.io_override = self.io_override;
        let access = match self.authorizer {
            Some(host) => Access::Host(host),
            None => Access::Store(Arc::new(GrantStore::open(self.data_path.as_deref())?)),
        };
        let default_user = self.user.unwrap_or_else(|| DEFAULT_USER.to_string());
        if let Access::Store(store) = &access
            && !store.exists(&default_user)
        {
            return Err(super::access::store::unknown_user(&default_user));
        }
        Ok(Engine {
            shared: Arc::new(Shared {
                registry: Mutex::new(registry),
                runtime,
                defaults,
                progress: self.progress,
                access,
                default_user,
                maintenance_log: Arc::new(maintenance_log),
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
            warned_catalog_owned: Arc::default(),
            early_warnings: EarlyWarnings::default(),
            user: self.shared.default_user.clone(),
            maintain_stop: None,
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
/// assert!(icetrim::engine::handles("SYSTEM MAINTAIN DATABASE lake SETTINGS dry_run = 1"));
/// assert!(!icetrim::engine::handles("SYSTEM FLUSH LOGS"));
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
    // icetrim's own `SYSTEM MAINTAIN …` (no host has it).
    if keyword(at, "SYSTEM") && keyword(at + 1, "MAINTAIN") {
        return true;
    }
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
    /// Tables already warned about as looking catalog-owned (the warning shows once per table).
    warned_catalog_owned: Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
    /// Where warnings that must be read before a statement changes anything go at once.
    early_warnings: EarlyWarnings,
    /// Whose privileges every statement is checked against.
    user: String,
    /// Once cancelled, `SYSTEM MAINTAIN` stops before its next procedure.
    maintain_stop: Option<CancelToken>,
}

/// An optional [`WarningSink`] that prints as `set` / `none` in `Debug`.
#[derive(Clone, Default)]
struct EarlyWarnings(Option<WarningSink>);

impl std::fmt::Debug for EarlyWarnings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "set" } else { "none" })
    }
}

/// Receives a warning as soon as it is known (see [`Session::set_early_warnings`]).
pub type WarningSink = Arc<dyn Fn(&str) + Send + Sync>;

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

    /// Send the warnings a reader must see before a statement changes anything (a path table
    /// whose metadata looks catalog-written, before the statement's first commit) to `sink` as
    /// soon as they are known, instead of with the statement's result (`None`: with the
    /// result). The `icetrim` shell prints them on standard error at once.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use icetrim::engine::Engine;
    /// let mut session = Engine::builder().build()?.session();
    /// session.set_early_warnings(Some(Arc::new(|w: &str| eprintln!("Warning: {w}"))));
    /// # Ok::<(), icetrim::Error>(())
    /// ```
    pub fn set_early_warnings(&mut self, sink: Option<WarningSink>) {
        self.early_warnings = EarlyWarnings(sink);
    }

    /// `SYSTEM MAINTAIN` stops before its next procedure once `token` is cancelled (the
    /// procedure running finishes; every commit stands), with `QUERY_WAS_CANCELLED`. This is how
    /// `icetrim maintain` stops on SIGTERM; [`execute_with`](Self::execute_with)'s token instead
    /// stops the running procedure too.
    pub fn set_maintain_stop(&mut self, token: Option<CancelToken>) {
        self.maintain_stop = token;
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

    /// As [`Session::execute_one`], but a `SELECT` hands back its rows as a stream
    /// ([`StatementOutput::Rows`]) instead of reading them all first: what a script printing a
    /// large result uses.
    pub async fn execute_one_streaming(
        &mut self,
        text: &str,
        first_line: usize,
    ) -> Result<StatementOutput> {
        self.parse_limits().check(text, first_line)?;
        let text = substitute(text, &self.params)?;
        let statement = parse_checked(&text, first_line)?;
        if let Statement::Select(select) = &statement {
            if self.cancel.as_ref().is_some_and(CancelToken::is_cancelled) {
                return Err(cancelled_error());
            }
            return Ok(StatementOutput::Rows(self.select_rows(select).await?));
        }
        Ok(StatementOutput::Done(
            self.execute_statement(&statement).await?,
        ))
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
}
