//! The registry of known settings: each name with its type, default and a doc line (session
//! settings for `SET`, table settings for `CREATE TABLE … SETTINGS`). [`super::Settings`] holds
//! their values.

/// A setting's value type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingType {
    Bool,
    UInt,
    String,
}

/// A known setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SettingDef {
    pub name: &'static str,
    pub ty: SettingType,
    /// The default, as a value of `ty`.
    pub default: SettingValue,
    pub doc: &'static str,
}

/// A setting's default value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingValue {
    Bool(bool),
    UInt(u64),
    /// The empty string (the default of every String setting).
    EmptyString,
}

/// Session settings icetrim knows.
pub const SESSION_SETTINGS: &[SettingDef] = &[
    SettingDef {
        name: "session_timezone",
        ty: SettingType::String,
        default: SettingValue::EmptyString,
        doc: "IANA time zone for timestamp arguments; '' means the process zone (TZ, else system)",
    },
    SettingDef {
        name: "allow_insert_into_iceberg",
        ty: SettingType::Bool,
        default: SettingValue::Bool(true),
        doc: "ClickHouse gate for every Iceberg EXECUTE command",
    },
    SettingDef {
        name: "allow_experimental_expire_snapshots",
        ty: SettingType::Bool,
        default: SettingValue::Bool(true),
        doc: "ClickHouse gate for expire_snapshots",
    },
    SettingDef {
        name: "allow_iceberg_remove_orphan_files",
        ty: SettingType::Bool,
        default: SettingValue::Bool(true),
        doc: "ClickHouse gate for remove_orphan_files",
    },
    SettingDef {
        name: "allow_experimental_iceberg_compaction",
        ty: SettingType::Bool,
        default: SettingValue::Bool(true),
        doc: "ClickHouse gate for OPTIMIZE TABLE, rewrite_data_files and rewrite_manifests",
    },
    SettingDef {
        name: "iceberg_compaction_max_memory_bytes",
        ty: SettingType::UInt,
        default: SettingValue::UInt(2 * 1024 * 1024 * 1024),
        doc: "memory compaction may hold at once (inputs, decoded batches, output row groups and uploads, sorting, delete files); at least 32 MiB",
    },
    SettingDef {
        name: "iceberg_manifest_min_count_to_compact",
        ty: SettingType::UInt,
        default: SettingValue::UInt(100),
        doc: "OPTIMIZE TABLE ... MANIFEST acts only when the current snapshot has more manifests than this",
    },
    SettingDef {
        name: "allow_database_iceberg",
        ty: SettingType::Bool,
        default: SettingValue::Bool(true),
        doc: "ClickHouse gate for CREATE DATABASE … ENGINE = DataLakeCatalog with catalog_type = 'rest'",
    },
    SettingDef {
        name: "allow_database_glue_catalog",
        ty: SettingType::Bool,
        default: SettingValue::Bool(true),
        doc: "ClickHouse gate for CREATE DATABASE … ENGINE = DataLakeCatalog with catalog_type = 'glue'",
    },
    SettingDef {
        name: "iceberg_warn_catalog_owned_tables",
        ty: SettingType::Bool,
        default: SettingValue::Bool(true),
        doc: "warn (once per table per session) before a commit by path to a table whose metadata looks catalog-written (NNNNN-<uuid>.metadata.json, no version-hint.text)",
    },
    SettingDef {
        name: "iceberg_expire_default_min_snapshots_to_keep",
        ty: SettingType::UInt,
        default: SettingValue::UInt(1),
        doc: "snapshots each branch keeps when neither table nor ref says (history.expire.min-snapshots-to-keep)",
    },
    SettingDef {
        name: "iceberg_expire_default_max_snapshot_age_ms",
        ty: SettingType::UInt,
        default: SettingValue::UInt(432_000_000),
        doc: "max snapshot age when neither table nor ref says (history.expire.max-snapshot-age-ms)",
    },
    SettingDef {
        name: "iceberg_expire_default_max_ref_age_ms",
        ty: SettingType::UInt,
        default: SettingValue::UInt(i64::MAX as u64),
        doc: "max age of a non-main ref when neither table nor ref says; default forever",
    },
    SettingDef {
        name: "iceberg_expire_incremental_cleanup",
        ty: SettingType::Bool,
        default: SettingValue::Bool(true),
        doc: "expire_snapshots on one line of main history reads only the candidate manifests \
              that delete files (the same files as the full keep set); 0: always the full keep set",
    },
    SettingDef {
        name: "iceberg_orphan_files_older_than_seconds",
        ty: SettingType::UInt,
        default: SettingValue::UInt(259_200),
        doc: "remove_orphan_files default older_than: now minus this many seconds",
    },
    SettingDef {
        name: "iceberg_maintain_enabled",
        ty: SettingType::Bool,
        default: SettingValue::Bool(true),
        doc: "SYSTEM MAINTAIN maintains a table at all (table property icetrim.maintain.enabled)",
    },
    SettingDef {
        name: "iceberg_maintain_compact_min_input_files",
        ty: SettingType::UInt,
        default: SettingValue::UInt(5),
        doc: "SYSTEM MAINTAIN: compaction is due when a file group has at least this many files",
    },
    SettingDef {
        name: "iceberg_maintain_manifests_min_count",
        ty: SettingType::UInt,
        default: SettingValue::UInt(100),
        doc: "SYSTEM MAINTAIN: manifest rewrite is due above this many manifests",
    },
    SettingDef {
        name: "iceberg_maintain_expire_clean_expired_metadata",
        ty: SettingType::Bool,
        default: SettingValue::Bool(false),
        doc: "SYSTEM MAINTAIN: expiry also removes the partition specs and schemas no retained \
              snapshot uses (expire_snapshots' clean_expired_metadata)",
    },
    SettingDef {
        name: "iceberg_maintain_orphans_enabled",
        ty: SettingType::Bool,
        default: SettingValue::Bool(false),
        doc: "SYSTEM MAINTAIN removes orphan files (off by default)",
    },
    SettingDef {
        name: "iceberg_maintain_orphans_older_than_ms",
        ty: SettingType::UInt,
        default: SettingValue::UInt(259_200_000),
        doc: "SYSTEM MAINTAIN: orphan files younger than this many ms are kept (at least 24 hours)",
    },
    SettingDef {
        name: "iceberg_maintain_force",
        ty: SettingType::Bool,
        default: SettingValue::Bool(false),
        doc: "SYSTEM MAINTAIN maintains tables a catalog maintains itself (S3 Tables, Glue optimizers)",
    },
    SettingDef {
        name: "iceberg_maintain_lease_seconds",
        ty: SettingType::UInt,
        default: SettingValue::UInt(600),
        doc: "SYSTEM MAINTAIN holds each table's maintenance lease this many seconds, renewed every \
              third while it works; another maintainer takes the table over only after it expires",
    },
    SettingDef {
        name: "iceberg_maintain_max_parallel_tables",
        ty: SettingType::UInt,
        default: SettingValue::UInt(4),
        doc: "SYSTEM MAINTAIN maintains up to this many tables at once; the session's compaction \
              memory and metadata read and delete concurrency are split among them, not multiplied",
    },
    SettingDef {
        name: "iceberg_metadata_read_concurrency",
        ty: SettingType::UInt,
        default: SettingValue::UInt(32),
        doc: "manifests and manifest lists read in parallel",
    },
    SettingDef {
        name: "iceberg_delete_concurrency",
        ty: SettingType::UInt,
        default: SettingValue::UInt(32),
        doc: "file deletions in flight",
    },
    SettingDef {
        name: "iceberg_commit_max_attempts",
        ty: SettingType::UInt,
        default: SettingValue::UInt(4),
        doc: "metadata commit attempts before LIMIT_EXCEEDED",
    },
    SettingDef {
        name: "max_query_size",
        ty: SettingType::UInt,
        default: SettingValue::UInt(262_144),
        doc: "the longest statement text in bytes (ClickHouse's setting); a longer one is a \
              SYNTAX_ERROR naming where it crosses the limit; 0: no limit",
    },
    SettingDef {
        name: "max_parser_depth",
        ty: SettingType::UInt,
        default: SettingValue::UInt(1000),
        doc: "how deeply brackets and NOT may nest in a statement (ClickHouse's setting); deeper \
              is TOO_DEEP_RECURSION; 1 to 2000",
    },
    SettingDef {
        name: "max_memory_usage",
        ty: SettingType::UInt,
        default: SettingValue::UInt(4 * 1024 * 1024 * 1024),
        doc: "bytes a SELECT's sorts, aggregates and joins may hold before it fails with \
              MEMORY_LIMIT_EXCEEDED (0: unbounded)",
    },
    SettingDef {
        name: "iceberg_metadata_tables_allow_full_scan",
        ty: SettingType::Bool,
        default: SettingValue::Bool(false),
        doc: "allow reading a metadata table built from manifests (system.iceberg_files, ...) \
              without a `table = '...'` predicate, which opens every registered table",
    },
    SettingDef {
        name: "iceberg_statement_cache_max_bytes",
        ty: SettingType::UInt,
        default: SettingValue::UInt(256 * 1024 * 1024),
        doc: "one memory bound for a run on an object-store table: the manifest lists and \
              manifests it keeps, so a re-plan after a commit conflict reads only new files, get \
              what the expiry's set of live files leaves of it (0: none kept); EXPLAIN, dry runs \
              and local tables keep none",
    },
    SettingDef {
        name: "iceberg_error_on_failed_deletions",
        ty: SettingType::Bool,
        default: SettingValue::Bool(true),
        doc: "the command-line program ends a procedure whose planned deletes partly failed with \
              CANNOT_UNLINK after its rows (exit status 202); 0: a warning only, exit status 0",
    },
    SettingDef {
        name: "output_format_pretty_fallback_to_vertical",
        ty: SettingType::Bool,
        default: SettingValue::Bool(true),
        doc: "Pretty formats print a narrow, wide result as Vertical (ClickHouse's setting; the \
              three below decide when)",
    },
    SettingDef {
        name: "output_format_pretty_fallback_to_vertical_max_rows_per_chunk",
        ty: SettingType::UInt,
        default: SettingValue::UInt(10),
        doc: "the Vertical fallback applies to results of at most this many rows",
    },
    SettingDef {
        name: "output_format_pretty_fallback_to_vertical_min_columns",
        ty: SettingType::UInt,
        default: SettingValue::UInt(5),
        doc: "the Vertical fallback applies to results of at least this many columns",
    },
    SettingDef {
        name: "output_format_pretty_fallback_to_vertical_min_table_width",
        ty: SettingType::UInt,
        default: SettingValue::UInt(250),
        doc: "the Vertical fallback applies when the columns' widths (widest value or name) add \
              up to at least this, or when a value holds a newline",
    },
];

/// Counts for which 0 makes no sense (nothing would be read, deleted or committed; a branch must
/// keep its head): refused wherever settings arrive (`SET`, engine defaults, table settings).
pub(super) const AT_LEAST_ONE: &[&str] = &[
    "iceberg_metadata_read_concurrency",
    "iceberg_delete_concurrency",
    "iceberg_commit_max_attempts",
    "iceberg_expire_default_min_snapshots_to_keep",
    "iceberg_compaction_max_memory_bytes",
    "iceberg_maintain_max_parallel_tables",
];

/// The largest `max_parser_depth` (the SQL front end's own ceiling, which an engine test ties to
/// this one: neither layer imports the other).
pub const MAX_PARSER_DEPTH_CEILING: u64 = 2_000;

/// Table settings (`CREATE TABLE … SETTINGS`), not accepted by `SET`.
pub const TABLE_SETTINGS: &[SettingDef] = &[
    SettingDef {
        name: "iceberg_metadata_file_path",
        ty: SettingType::String,
        default: SettingValue::EmptyString,
        doc: "pin the metadata file (relative to the table root); '' means the newest",
    },
    SettingDef {
        name: "iceberg_metadata_table_uuid",
        ty: SettingType::String,
        default: SettingValue::EmptyString,
        doc: "consider only metadata files whose table-uuid is this",
    },
    SettingDef {
        name: "iceberg_recent_metadata_file_by_last_updated_ms_field",
        ty: SettingType::Bool,
        default: SettingValue::Bool(false),
        doc: "pick the current metadata file by last-updated-ms instead of the version number",
    },
    SettingDef {
        name: "iceberg_use_version_hint",
        ty: SettingType::Bool,
        default: SettingValue::Bool(false),
        doc: "read and advance metadata/version-hint.text",
    },
    SettingDef {
        name: "iceberg_format_version",
        ty: SettingType::UInt,
        default: SettingValue::UInt(2),
        doc: "format version ClickHouse gives a table it creates (1, 2 or 3); icetrim never \
              creates tables, so it is accepted and shown but has no effect (a warning says so)",
    },
];
