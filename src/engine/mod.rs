pub mod registry;
pub mod result;

pub use result::{ExpireMetrics, Metrics, OrphanMetrics, QueryResult};
