//! Sessions over the pipeline: the table registry, statement execution, results.
//!
//! [`Engine`] and [`Session`] are the embedding API; [`handles`] tells a host engine which
//! statements to route to icetrim.

pub(crate) mod api;
pub(crate) mod api_snapshots;
pub(crate) mod catalog_db;
pub(crate) mod ddl;
pub(crate) mod introspect;
pub(crate) mod params;
pub(crate) mod procedures;
pub(crate) mod registry;
pub(crate) mod render;
pub(crate) mod result;
pub(crate) mod runtime;
pub(crate) mod select_eval;
pub(crate) mod session;
pub(crate) mod table;

pub use crate::progress;
pub use api::{
    ExpireSnapshots, RemoveOrphanFiles, RewriteDataFiles, RewriteManifests, Table, Timestamp,
};
pub use api_snapshots::{AlterRefs, ManageSnapshots};
pub use progress::{CancelToken, Phase, Progress, ProgressEvent, ProgressSink, cancelled_error};
pub use result::{
    CompactMetrics, ExpireMetrics, Metrics, OrphanMetrics, QueryResult, RewriteManifestsMetrics,
};
pub use runtime::Runtime;
pub use session::{DEFAULT_DATABASE, Engine, EngineBuilder, Session, handles};
