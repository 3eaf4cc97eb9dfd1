//! The metadata tables (`system.iceberg_*`): their names, their Arrow schemas, and their rows,
//! built from each table's Iceberg metadata and manifests and streamed as Arrow record batches.
//!
//! Every table starts with the columns `database` and `table`. A table is found through a
//! [`TableSource`] (the engine's registry and catalogs): this layer never opens a table by
//! itself, so a query about one table opens only that one. Rows are produced by one task per
//! scan into a [`BatchSink`] with back-pressure, so a large table (every file of every snapshot)
//! is never held whole in memory.
//!
//! `provider` makes each table a DataFusion table provider, with the filters on `database`,
//! `table`, `snapshot_id` and `ref` pushed down into a [`Scope`].

mod content;
mod history;
pub mod provider;
mod retention;
mod sink;
mod table_level;

use std::sync::Arc;

use async_trait::async_trait;

pub use sink::BatchSink;

use crate::error::Result;
use crate::iceberg::metadata::TableMetadata;
use crate::io::FileIO;

/// One table, opened for reading its metadata.
#[derive(Clone)]
pub struct InspectedTable {
    pub database: String,
    pub name: String,
    /// The table's newest metadata.
    pub metadata: Arc<TableMetadata>,
    /// Where that metadata was read from (full path), when known.
    pub metadata_location: Option<String>,
    /// Storage for reading its manifest lists and manifests.
    pub io: FileIO,
    /// The reading session's settings (the retention defaults).
    pub settings: crate::settings::Settings,
}

/// The registered tables a query may read: names first (cheap: no storage request for path
/// tables), then each table opened on demand.
#[async_trait]
pub trait TableSource: Send + Sync {
    /// `(database, table)` of every table matching the pushed-down names (`None`: any).
    async fn names(
        &self,
        database: Option<&str>,
        table: Option<&str>,
    ) -> Result<Vec<(String, String)>>;

    /// Opens `database`.`table` (its newest metadata).
    async fn open(&self, database: &str, table: &str) -> Result<InspectedTable>;
}

/// Which snapshot a per-snapshot table reads, from the pushed-down predicates `snapshot_id = X`
/// and `ref = 'b'` (both unset: the current snapshot of `main`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    pub snapshot_id: Option<i64>,
    pub ref_name: Option<String>,
}

/// The metadata tables, by their name in the `system` database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MetadataTable {
    /// `iceberg_history`
    History,
    /// `iceberg_snapshots`
    Snapshots,
    /// `iceberg_refs`
    Refs,
    /// `iceberg_files`: the live data and delete files of one snapshot.
    Files,
    /// `iceberg_entries`: every manifest entry of one snapshot.
    Entries,
    /// `iceberg_manifests`: the manifest list of one snapshot.
    Manifests,
    /// `iceberg_partitions`: file counts and sizes per partition of one snapshot.
    Partitions,
    /// `iceberg_all_files`: the live files of every manifest of every snapshot.
    AllFiles,
    /// `iceberg_all_entries`: every entry of every manifest of every snapshot.
    AllEntries,
    /// `iceberg_all_manifests`: the manifest list of every snapshot.
    AllManifests,
    /// `iceberg_metadata_log_entries`: the metadata files, with the snapshot current at each.
    MetadataLogEntries,
    /// `iceberg_properties`: the table properties.
    Properties,
    /// `iceberg_retention`: the retention in force per branch and tag, with its sources.
    Retention,
}

impl MetadataTable {
    /// Every metadata table, in the order `SHOW TABLES FROM system` lists them (by name).
    pub const ALL: &'static [MetadataTable] = &[
        MetadataTable::AllEntries,
        MetadataTable::AllFiles,
        MetadataTable::AllManifests,
        MetadataTable::Entries,
        MetadataTable::Files,
        MetadataTable::History,
        MetadataTable::Manifests,
        MetadataTable::MetadataLogEntries,
        MetadataTable::Partitions,
        MetadataTable::Properties,
        MetadataTable::Refs,
        MetadataTable::Retention,
        MetadataTable::Snapshots,
    ];

    /// The name inside the `system` database.
    pub fn name(self) -> &'static str {
        match self {
            MetadataTable::History => "iceberg_history",
            MetadataTable::Snapshots => "iceberg_snapshots",
            MetadataTable::Refs => "iceberg_refs",
            MetadataTable::Files => "iceberg_files",
            MetadataTable::Entries => "iceberg_entries",
            MetadataTable::Manifests => "iceberg_manifests",
            MetadataTable::Partitions => "iceberg_partitions",
            MetadataTable::AllFiles => "iceberg_all_files",
            MetadataTable::AllEntries => "iceberg_all_entries",
            MetadataTable::AllManifests => "iceberg_all_manifests",
            MetadataTable::MetadataLogEntries => "iceberg_metadata_log_entries",
            MetadataTable::Properties => "iceberg_properties",
            MetadataTable::Retention => "iceberg_retention",
        }
    }

    /// The table named `name` inside `system`, exactly (ClickHouse's names are case-sensitive).
    pub fn from_name(name: &str) -> Option<MetadataTable> {
        Self::ALL.iter().copied().find(|t| t.name() == name)
    }

    /// Whether the rows come from one snapshot (chosen by `snapshot_id = X` or `ref = 'b'`).
    pub fn is_per_snapshot(self) -> bool {
        use MetadataTable::*;
        matches!(self, Files | Entries | Manifests | Partitions)
    }

    /// The column whose `= X` predicate selects the snapshot read: `snapshot_id`, except in
    /// `iceberg_entries`, whose `snapshot_id` is each entry's own (the snapshot that wrote it).
    pub fn snapshot_selector(self) -> &'static str {
        match self {
            MetadataTable::Entries => "read_snapshot_id",
            _ => "snapshot_id",
        }
    }

    /// Whether the rows come from manifest lists or manifests (reading them costs a request per
    /// file), not from the metadata file alone.
    pub fn reads_manifests(self) -> bool {
        use MetadataTable::*;
        matches!(
            self,
            Files | Entries | Manifests | Partitions | AllFiles | AllEntries | AllManifests
        )
    }

    /// The table's own columns, after `database` and `table`.
    fn own_fields(self) -> Vec<datafusion::arrow::datatypes::Field> {
        match self {
            MetadataTable::History => history::history_fields(),
            MetadataTable::Snapshots => history::snapshot_fields(),
            MetadataTable::Refs => history::ref_fields(),
            MetadataTable::Files => content::files_fields(),
            MetadataTable::Entries => content::entries_fields(),
            MetadataTable::Manifests => content::manifests_fields(),
            MetadataTable::Partitions => content::partitions_fields(),
            MetadataTable::AllFiles => content::all_files_fields(),
            MetadataTable::AllEntries => content::all_entries_fields(),
            MetadataTable::AllManifests => content::all_manifests_fields(),
            MetadataTable::MetadataLogEntries => table_level::metadata_log_fields(),
            MetadataTable::Properties => table_level::properties_fields(),
            MetadataTable::Retention => retention::fields(),
        }
    }

    /// The Arrow schema: `database`, `table`, then the table's own columns.
    pub fn schema(self) -> datafusion::arrow::datatypes::SchemaRef {
        use datafusion::arrow::datatypes::{DataType, Field, Schema};
        let mut fields = vec![
            Field::new("database", DataType::Utf8, false),
            Field::new("table", DataType::Utf8, false),
        ];
        fields.extend(self.own_fields());
        Arc::new(Schema::new(fields))
    }

    /// Sends the rows of `table` within `scope` to `sink`; `Ok(false)` when the reader has gone.
    pub(crate) async fn produce(
        self,
        table: &InspectedTable,
        scope: &Scope,
        sink: &BatchSink,
    ) -> Result<bool> {
        let m = &table.metadata;
        let columns = match self {
            MetadataTable::History => history::history_columns(m),
            MetadataTable::Snapshots => history::snapshot_columns(m),
            MetadataTable::Refs => history::ref_columns(m),
            MetadataTable::Properties => table_level::properties_columns(m),
            MetadataTable::Retention => retention::columns(m, &table.settings)?,
            MetadataTable::MetadataLogEntries => {
                let file = table.metadata_location.as_deref().unwrap_or(m.file());
                table_level::metadata_log_columns(m, file)
            }
            MetadataTable::Files => {
                return content::produce(content::EntryTable::Files, table, scope, sink).await;
            }
            MetadataTable::Entries => {
                return content::produce(content::EntryTable::Entries, table, scope, sink).await;
            }
            MetadataTable::Manifests => {
                return content::produce_manifests(table, scope, sink).await;
            }
            MetadataTable::Partitions => {
                return content::produce_partitions(table, scope, sink).await;
            }
            MetadataTable::AllFiles => {
                return content::produce_all(content::EntryTable::Files, table, sink).await;
            }
            MetadataTable::AllEntries => {
                return content::produce_all(content::EntryTable::Entries, table, sink).await;
            }
            MetadataTable::AllManifests => {
                return content::produce_all_manifests(table, sink).await;
            }
        };
        sink.send(table, columns).await
    }
}

/// Every row of `kind` for `table` within `scope`, as the batches a scan would stream (for tests
/// and tools that read one table without a query).
pub async fn collect(
    kind: MetadataTable,
    table: &InspectedTable,
    scope: &Scope,
) -> Result<Vec<datafusion::arrow::array::RecordBatch>> {
    let (tx, mut rx) = tokio::sync::mpsc::channel(2);
    let sink = BatchSink::new(kind.schema(), tx);
    let produce = async move { kind.produce(table, scope, &sink).await };
    let drain = async {
        let mut out = Vec::new();
        while let Some(batch) = rx.recv().await {
            out.push(batch.map_err(|e| crate::error::Error::logical(e.to_string()))?);
        }
        Ok::<_, crate::error::Error>(out)
    };
    let (produced, drained) = tokio::join!(produce, drain);
    produced?;
    drained
}
