//! Sessions over the pipeline: the table registry, statement execution, results.
//!
//! [`Engine`] and [`Session`] are the embedding API; [`handles`] tells a host engine which
//! statements to route to icetrim.

pub(crate) mod access;
pub(crate) mod api;
pub(crate) mod api_demo;
#[cfg(feature = "datafusion")]
pub(crate) mod api_inspect;
pub(crate) mod api_maintain;
pub(crate) mod api_procedures;
pub(crate) mod api_snapshots;
pub(crate) mod catalog_db;
pub(crate) mod ddl;
pub(crate) mod describe;
pub(crate) mod maintain;
pub(crate) mod maintain_lease;
pub(crate) mod maintain_log;
#[cfg(feature = "datafusion")]
pub(crate) mod maintain_log_tables;
pub(crate) mod maintain_metrics;
pub(crate) mod params;
pub(crate) mod procedures;
pub(crate) mod registry;
pub(crate) mod render;
pub(crate) mod result;
pub(crate) mod runtime;
pub(crate) mod session;
pub(crate) mod table;

pub use crate::sql::{Statement, split_statements};
pub use access::{Authorizer, DEFAULT_USER, GrantObject, Privilege};
pub use api::{Table, Timestamp};
pub use api_demo::DemoTable;
#[cfg(feature = "datafusion")]
pub use api_inspect::MetadataScan;
pub use api_maintain::{Maintain, MaintainRow};
pub use api_procedures::{ExpireSnapshots, RemoveOrphanFiles, RewriteDataFiles, RewriteManifests};
pub use api_snapshots::{AlterRefs, ManageSnapshots};
pub use maintain_log::{LOG_CAPACITY, LOG_FILE, LogEntry};
pub use result::{Metrics, QueryResult, SelectRows, StatementOutput};
#[cfg(feature = "datafusion")]
pub(crate) use session::live_system_schema;
pub use session::{
    DEFAULT_DATABASE, Engine, EngineBuilder, KnownNames, Session, WarningSink, handles,
};

#[cfg(test)]
mod tests {
    use crate::settings::{self, Settings};
    use crate::sql::{self, ParseLimits};

    /// The settings and the SQL front end do not import each other: their limits are tied here.
    #[test]
    fn the_parser_limits_of_settings_and_sql_agree() {
        let defaults = Settings::new();
        assert_eq!(
            ParseLimits {
                max_query_size: defaults.max_query_size(),
                max_parser_depth: defaults.max_parser_depth(),
            },
            ParseLimits::default()
        );
        assert_eq!(
            settings::MAX_PARSER_DEPTH_CEILING,
            sql::MAX_PARSER_DEPTH_CEILING
        );
    }
}
