//! icetrim inside an Apache DataFusion host (feature `datafusion`): the host's `SessionContext`
//! sees icetrim's metadata tables as the catalog `icetrim` (`icetrim.system.iceberg_snapshots`,
//! …), reaches its remote tables through the host's registered object stores, and sends its
//! scripts through [`sql`], which runs icetrim's statements (see [`Session::claims`]) and hands
//! every other statement to `ctx.sql` unchanged.
//!
//! ```
//! use icetrim::datafusion::prelude::SessionContext;
//! use icetrim::engine::Engine;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> icetrim::Result<()> {
//! let ctx = SessionContext::new();
//! let engine = Engine::builder().build()?;
//! icetrim::host::install(&ctx, &engine)?;
//! let frames = icetrim::host::sql(
//!     &ctx,
//!     "SET iceberg_metadata_tables_allow_full_scan = 1;
//!      SELECT 40 + 2 AS answer;
//!      SELECT count(*) AS tables FROM icetrim.system.iceberg_refs",
//! )
//! .await?;
//! assert_eq!(frames.len(), 3);
//! let answer = frames[1].clone().collect().await.map_err(icetrim::host::error)?;
//! assert_eq!(answer[0].num_rows(), 1);
//! # Ok(())
//! # }
//! ```
//!
//! Local tables are always read by icetrim itself (it never follows a symbolic link below a
//! table), whatever store the host registered for `file://`.

use std::sync::{Arc, RwLock};

use datafusion::catalog::{CatalogProvider, SchemaProvider};
use datafusion::error::DataFusionError;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::prelude::{DataFrame, SessionContext};
use tokio::sync::Mutex;

use crate::engine::{Engine, QueryResult, Session, live_system_schema, split_statements};
use crate::error::{Error, Result};

/// The name of the catalog icetrim's metadata tables appear under in the host's context.
pub const CATALOG: &str = "icetrim";

/// Installs `engine` in `ctx` with a new session of it (see [`install_session`]).
pub fn install(ctx: &SessionContext, engine: &Engine) -> Result<()> {
    install_session(ctx, engine, engine.session())
}

/// Installs `engine` in `ctx`, running icetrim's statements in `session` (its database,
/// settings and, where the host authenticates users, its principal): registers the catalog
/// [`CATALOG`] holding the `system` schema of metadata tables, and lets the engine reach remote
/// tables through `ctx`'s object stores (unless the engine was built with its own,
/// `EngineBuilder::object_stores`). Installing again replaces the session.
pub fn install_session(ctx: &SessionContext, engine: &Engine, session: Session) -> Result<()> {
    let env = ctx.runtime_env();
    engine
        .runtime()
        .host_stores
        .set(Arc::new(move |url: &url::Url| {
            let root = ObjectStoreUrl::parse(&url[..url::Position::BeforePath]).ok()?;
            env.object_store(&root).ok()
        }));
    let allow_unfiltered = session.settings().metadata_tables_allow_full_scan();
    let session = Arc::new(Mutex::new(session));
    let system = live_system_schema(&session, allow_unfiltered)?;
    let catalog = IcetrimCatalog {
        session,
        system: RwLock::new(system),
    };
    ctx.register_catalog(CATALOG, Arc::new(catalog));
    Ok(())
}

/// Runs the `;`-separated statements of `text` in order: icetrim's in the installed session
/// (each result as a `DataFrame` of its rows, from [`QueryResult::to_record_batch`]), the others
/// through `ctx.sql` (whose `DataFrame` is returned as DataFusion gives it: a query runs when it
/// is collected). The first error stops the script.
pub async fn sql(ctx: &SessionContext, text: &str) -> Result<Vec<DataFrame>> {
    let provider = ctx.catalog(CATALOG);
    let catalog = provider
        .as_ref()
        .and_then(|c| c.downcast_ref::<IcetrimCatalog>())
        .ok_or_else(not_installed)?;
    let mut frames = Vec::new();
    for (statement, line) in split_statements(text) {
        let mut session = catalog.session.lock().await;
        if session.claims(statement).await {
            let result = session.execute_one(statement, line).await?;
            drop(session);
            catalog.refresh().await?;
            frames.push(frame_of(ctx, &result)?);
        } else {
            drop(session);
            frames.push(ctx.sql(statement).await.map_err(error)?);
        }
    }
    Ok(frames)
}

/// A DataFusion error as icetrim's (`Code: N. DB::Exception: …`), for hosts that collect the
/// frames [`sql`] returns.
pub fn error(error: DataFusionError) -> Error {
    crate::query::to_error(error)
}

/// What [`sql`] answers in a context [`install`] did not prepare.
fn not_installed() -> Error {
    Error::logical(format!(
        "icetrim is not installed in this DataFusion context (no catalog `{CATALOG}` of \
         icetrim's): call icetrim::host::install first"
    ))
}

/// A statement's result as a `DataFrame` in `ctx`.
fn frame_of(ctx: &SessionContext, result: &QueryResult) -> Result<DataFrame> {
    ctx.read_batch(result.to_record_batch()?).map_err(error)
}

/// The catalog `icetrim`: the `system` schema over one session's tables.
#[derive(Debug)]
struct IcetrimCatalog {
    session: Arc<Mutex<Session>>,
    /// Rebuilt after each icetrim statement, so that a `SET` of
    /// `iceberg_metadata_tables_allow_full_scan` takes effect.
    system: RwLock<Arc<dyn SchemaProvider>>,
}

impl IcetrimCatalog {
    async fn refresh(&self) -> Result<()> {
        let allow_unfiltered = self
            .session
            .lock()
            .await
            .settings()
            .metadata_tables_allow_full_scan();
        let system = live_system_schema(&self.session, allow_unfiltered)?;
        match self.system.write() {
            Ok(mut slot) => *slot = system,
            Err(poisoned) => *poisoned.into_inner() = system,
        }
        Ok(())
    }
}

impl CatalogProvider for IcetrimCatalog {
    fn schema_names(&self) -> Vec<String> {
        vec!["system".to_string()]
    }

    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        if name != "system" {
            return None;
        }
        match self.system.read() {
            Ok(system) => Some(Arc::clone(&system)),
            Err(poisoned) => Some(Arc::clone(&poisoned.into_inner())),
        }
    }
}
