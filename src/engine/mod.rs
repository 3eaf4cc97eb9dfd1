//! Sessions over the pipeline: the table registry, statement execution, results.

pub mod introspect;
pub mod procedures;
pub mod registry;
pub mod result;
pub mod runtime;

pub use result::{ExpireMetrics, Metrics, OrphanMetrics, QueryResult};
pub use runtime::Runtime;
