//! Sessions over the pipeline: the table registry, statement execution, results.
//!
//! [`Engine`] and [`Session`] are the embedding API; [`handles`] tells a host engine which
//! statements to route to icetrim.

pub mod api;
pub mod ddl;
pub mod introspect;
pub mod params;
pub mod procedures;
pub mod registry;
pub mod render;
pub mod result;
pub mod runtime;
pub mod select_eval;
pub mod session;
pub mod table;

pub use crate::progress;
pub use api::{ExpireSnapshots, RemoveOrphanFiles, Table, Timestamp};
pub use progress::{CancelToken, Phase, Progress, ProgressEvent, ProgressSink, cancelled_error};
pub use result::{ExpireMetrics, Metrics, OrphanMetrics, QueryResult};
pub use runtime::Runtime;
pub use session::{DEFAULT_DATABASE, Engine, EngineBuilder, Session, handles};
