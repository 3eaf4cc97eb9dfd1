//! icetrim: a ClickHouse-style SQL procedure engine that keeps Apache Iceberg tables lean.
//!
//! Layers, each importing only the ones below it (checked by a unit test, `src/layers.rs`):
//!
//! ```text
//! shell ──▶ engine ──┬──▶ sql ──────────────────────────────▶ plan
//! host ───┘          ├──▶ query (SELECT on DataFusion)
//!                    ├──▶ inspect (metadata tables) ──▶ iceberg ──▶ io
//!                    ├──▶ format
//!                    ├──▶ catalog (builds catalogs from DataLakeCatalog databases)
//!                    └──▶ maintain ──▶ catalog ──▶ iceberg ──▶ io
//!                                 └─────────────────────────▶ plan
//! settings: used by engine and maintain; imports only leaves
//! leaves, usable from any layer: error, clock, pool (CPU work, buffers), progress (events,
//! cancellation), literal (SQL constants), time_zone (session time zone)
//! ```
//!
//! (The engine also opens storage, `iceberg` and `io`, and builds catalogs (`catalog/`: the
//! `DataLakeCatalog` database engine, REST and Glue) to build a table's target; `generate/`
//! writes test tables with `iceberg` and `io`.)
//!
//! `sql/` parses and binds statements into `plan/`'s typed options; `maintain/` runs the
//! procedures (one folder each) and returns typed outcomes; `iceberg/` is the spec model, metadata
//! JSON, Avro manifests, commits; `io/` is object storage. `engine/` ties them into sessions and
//! turns outcomes into rows; `format/` renders results; `shell/` is the binary's front. The
//! design, with the reasons behind it, is in the repository's `docs/` folder.
//!
//! # The public surface
//!
//! Each item has one path: the public module that owns it (`engine`, `error`, `format`,
//! `progress`), or the crate root for what is defined in a private module. [`Table`],
//! [`Error`], [`ErrorKind`] and [`Result`] are also at the crate root, where the examples
//! take them from. `public-api.txt` lists every path; `tests/sql/public_api.rs` keeps it true.
//!
//! - The typed API: [`Table`] (open from a location and [`StorageOptions`], or [`Table::with_io`]),
//!   its builders [`engine::ExpireSnapshots`], [`engine::RemoveOrphanFiles`],
//!   [`engine::RewriteDataFiles`], [`engine::RewriteManifests`], [`engine::ManageSnapshots`] (the
//!   six snapshot procedures) and [`engine::AlterRefs`] (branches and tags),
//!   [`engine::Timestamp`]; what they return: [`ExpireOutcome`], [`OrphanOutcome`],
//!   [`CompactOutcome`], [`RewriteManifestsOutcome`], [`SnapshotOutcome`] with their metrics
//!   ([`ExpireMetrics`], [`OrphanMetrics`], [`CompactMetrics`], [`RewriteManifestsMetrics`],
//!   [`SnapshotMetrics`]; `named_values()` in ClickHouse's row order), their EXPLAIN rows
//!   ([`ExpireExplainRow`], [`OrphanExplainRow`], [`CompactExplainRow`],
//!   [`RewriteManifestsExplainRow`], [`SnapshotExplainRow`]) and warnings; the typed options they
//!   fill ([`ExpireOptions`], [`OrphanOptions`], [`CompactOptions`], [`SnapshotProcedure`],
//!   [`TableChange`] and their parts).
//! - The SQL engine: [`engine`] ([`engine::Engine`], [`engine::EngineBuilder`],
//!   [`engine::Session`], [`engine::QueryResult`], [`engine::StatementOutput`] and
//!   [`engine::SelectRows`] (a `SELECT`'s rows as a stream), [`engine::handles`],
//!   [`engine::Statement`], [`engine::split_statements`]) and [`format`] (rendering results in
//!   ClickHouse's formats). `host` (feature `datafusion`): icetrim inside an Apache DataFusion
//!   host's `SessionContext`. [`Table::write_demo`] writes the demo table the examples run on.
//! - Shared: [`error`] ([`Error`] / [`ErrorKind`] / [`Result`], with an optional
//!   [`source`](std::error::Error::source)); [`progress`] ([`progress::Progress`],
//!   [`progress::ProgressSink`], [`progress::ProgressEvent`], [`progress::Phase`],
//!   [`progress::CancelToken`]); storage: [`StorageOptions`] (with [`S3Options`],
//!   [`AzureOptions`], [`GcsOptions`]), [`FileIO`] and [`StoreResolver`] (a host's stores);
//!   [`Settings`]; [`MetadataSettings`]; clocks
//!   ([`Clock`], [`SystemClock`], [`FixedClock`]).
//! - Enums are `#[non_exhaustive]`: a `match` outside icetrim needs a `_` arm.
//! - `internals` (hidden from the docs, no stability promise): the modules the tests, benchmarks,
//!   the `icetrim-generate` and `avro_bench` binaries and the fuzz targets reach into. Everything
//!   else is crate-private.
//!
//! # The typed API
//!
//! ```
//! use std::time::{Duration, SystemTime};
//! use icetrim::{StorageOptions, Table};
//!
//! # tokio::runtime::Runtime::new()?.block_on(async {
//! // A small Iceberg table on local disk: 20 snapshots over ten days and four orphan files.
//! let dir = tempfile::tempdir()?;
//! let location = dir.path().join("t").to_string_lossy().into_owned();
//! let demo = Table::write_demo(&location).await?;
//!
//! let table = Table::open(&location, StorageOptions::default())?;
//!
//! // What would go: nothing changes.
//! let planned = table
//!     .expire_snapshots()
//!     .retention_period(Duration::from_secs(86_400))
//!     .retain_last(1)
//!     .dry_run(true)
//!     .execute()
//!     .await?;
//! assert!(planned.metrics.dry_run);
//! assert!(planned.metrics.deleted_manifest_lists_count > 0);
//!
//! // Expire for real: the same counts, now deleted.
//! let expired = table
//!     .expire_snapshots()
//!     .retention_period(Duration::from_secs(86_400))
//!     .retain_last(1)
//!     .execute()
//!     .await?;
//! let would = icetrim::ExpireMetrics { dry_run: false, ..planned.metrics };
//! assert_eq!(expired.metrics, would);
//! // The metric rows of SQL, in ClickHouse's order.
//! let (name, count) = expired.metrics.named_values()[0];
//! assert_eq!((name, count), ("deleted_data_files_count", would.deleted_data_files_count));
//!
//! // The orphan files (written before the history began) go; the table's own files stay.
//! assert!(demo.orphans.iter().all(|file| std::path::Path::new(file).exists()));
//! let removed = table
//!     .remove_orphan_files()
//!     .older_than(SystemTime::now() - Duration::from_secs(3_600))
//!     .execute()
//!     .await?;
//! let deleted: i64 = removed.metrics.named_values().iter()
//!     .filter(|(name, _)| name.starts_with("deleted_"))
//!     .map(|(_, count)| count)
//!     .sum();
//! assert_eq!(deleted, demo.orphans.len() as i64);
//! assert!(demo.orphans.iter().all(|file| !std::path::Path::new(file).exists()));
//! assert_eq!(removed.metrics.failed_deletions_count, 0);
//!
//! // The plan, as EXPLAIN gives it; a check SQL makes holds here too.
//! let plan = table.expire_snapshots().retain_last(1).explain().await?;
//! assert!(plan.explain.is_some());
//! let refused = table.expire_snapshots().retain_last(1).snapshot_ids([1]).execute().await;
//! assert_eq!(refused.unwrap_err().kind(), icetrim::ErrorKind::BadArguments);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! `examples/embed.rs` shows the other way in: a host routes `ALTER TABLE … EXECUTE` statements to
//! an [`engine::Engine`] session; `examples/datafusion_host.rs` installs icetrim in a DataFusion
//! host.

mod catalog;
mod clock;
pub mod engine;
pub mod error;
pub mod format;
mod generate;
mod hints;
#[cfg(feature = "datafusion")]
pub mod host;
mod iceberg;
#[cfg(feature = "datafusion")]
mod inspect;
mod io;
#[cfg(test)]
mod layers;
mod literal;
mod maintain;
mod plan;
mod pool;
pub mod progress;
#[cfg(feature = "datafusion")]
mod query;
mod settings;
#[cfg(feature = "cli")]
mod shell;
mod sql;
mod time_zone;

pub use clock::{Clock, FixedClock, SystemClock};
/// Apache DataFusion, as icetrim builds it (its Arrow types are those of the metadata tables).
#[cfg(feature = "datafusion")]
pub use datafusion;
pub use engine::Table;
pub use error::{Error, ErrorKind, Result};
pub use iceberg::locate::MetadataSettings;
#[cfg(feature = "datafusion")]
pub use inspect::MetadataTable;
pub use io::{AzureOptions, FileIO, GcsOptions, S3Options, StorageOptions, StoreResolver};
pub use maintain::compact::CompactExplainRow;
pub use maintain::expire::ExpireExplainRow;
pub use maintain::manage_snapshots::SnapshotExplainRow;
pub use maintain::orphans::OrphanExplainRow;
pub use maintain::rewrite_manifests::RewriteManifestsExplainRow;
pub use maintain::{
    CompactMetrics, CompactOutcome, ExpireMetrics, ExpireOutcome, OrphanMetrics, OrphanOutcome,
    RewriteManifestsMetrics, RewriteManifestsOutcome, SnapshotMetrics, SnapshotOutcome,
};
pub use plan::{
    CompactOptions, CreateMode, ExpireOptions, OrphanOptions, RefRetention, RefType,
    SnapshotProcedure, SnapshotSelector, TableChange,
};
pub use settings::Settings;

/// What the tests, benchmarks, the `icetrim-generate` and `avro_bench` binaries and the fuzz
/// targets reach into beyond the public surface. Not part of the API: no stability promise.
#[doc(hidden)]
pub mod internals {
    /// The engine's pieces the tests call directly (see `src/engine/`).
    pub mod engine {
        pub use crate::engine::catalog_db::open_table as open_catalog_table;
        pub use crate::engine::params::{setting_value_text, substitute};
        pub use crate::engine::procedures::{
            check_gates, run_procedure, run_procedure_on, run_procedure_with,
        };
        pub use crate::engine::registry::{DatabaseDef, EngineArg, TableDef};
        pub use crate::engine::render::render;
        pub use crate::engine::runtime::Runtime;
    }
    /// See `src/generate/`.
    pub mod generate {
        pub use crate::generate::{
            DemoFacts, GenerateOptions, Generated, Mix, demo_table, generate, io_for,
        };
    }
    /// See `src/iceberg/`.
    pub mod iceberg {
        pub use crate::iceberg::{
            avro, commit, locate, manifest, manifest_list, metadata, spec, txn,
        };
    }
    /// See `src/inspect/` (cargo feature `datafusion`).
    #[cfg(feature = "datafusion")]
    pub mod inspect {
        pub use crate::inspect::{InspectedTable, MetadataTable, Scope, collect};
    }
    /// See `src/io/`.
    pub mod io {
        pub use crate::io::{
            AZURE_EMULATOR_ACCOUNT, AZURE_EMULATOR_KEY, AzureOptions, CountingStore, Fault,
            FaultInjector, FaultyStore, FileIO, HookFn, Latency, LatencyProfile, LatencyStats,
            LatencyStore, Op, ReadCache, ReadCacheStats, RequestCounter, RequestCounts, S3Options,
            StorageOptions, StoreHook, WriteOutcome, is_under, path_key,
        };
    }
    /// See `src/maintain/`.
    pub mod maintain {
        pub use crate::maintain::{
            compact, expire, file_graph, lease, manage_snapshots, report, rewrite_manifests, shape,
            target,
        };
    }
    /// See `src/plan/`.
    pub mod plan {
        pub use crate::plan::{
            CmpOp, CompactOptions, ExpireOptions, OrphanOptions, Predicate, ProcedureCall,
            RewriteManifestsOptions, SnapshotProcedure, TableChange, TimeUnit,
        };
    }
    /// See `src/shell/` (cargo feature `cli`).
    #[cfg(feature = "cli")]
    pub mod shell {
        pub use crate::shell::{Args, main, output, progress_bar};
    }
    /// See `src/sql/`.
    pub mod sql {
        pub use crate::sql::{
            AlterAction, AlterExecute, AlterTable, Arg, ArgValue, BindContext,
            DEFAULT_MAX_PARSER_DEPTH, DEFAULT_MAX_QUERY_SIZE, EngineArg, EngineName, Literal,
            LiteralList, MAX_PARSER_DEPTH_CEILING, ParseLimits, Select, SessionTimeZone, Statement,
            TableName, ast, bind, format_duration_ms, parse_duration_ms, parse_statement,
            parse_statement_at, parse_statement_with, parse_timestamp_ms, parse_where_with,
            split_statements,
        };
    }
}
