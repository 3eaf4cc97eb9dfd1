//! The metadata tables from the typed API: [`Table::metadata_table`] streams the rows of one
//! `system.iceberg_*` table for this table as Arrow record batches, through the same table
//! provider SQL reads (so the same columns, the same snapshot selection, the same streaming), and
//! the shorthands [`Table::snapshots`], [`Table::history`] and [`Table::refs`].

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::prelude::{SessionContext, col, lit};

use super::api::Table;
use crate::error::Result;
use crate::inspect::provider::MetadataTableProvider;
use crate::inspect::{InspectedTable, MetadataTable, TableSource};
use crate::query::to_error;

/// One table as the only source of a metadata table.
struct OneTable(Table);

#[async_trait]
impl TableSource for OneTable {
    async fn names(
        &self,
        _database: Option<&str>,
        _table: Option<&str>,
    ) -> Result<Vec<(String, String)>> {
        Ok(vec![(String::new(), self.0.table_name().to_string())])
    }

    async fn open(&self, _database: &str, _table: &str) -> Result<InspectedTable> {
        let target = self.0.read_target()?;
        target.check_single_table("SELECT", false).await?;
        let located = target.locate_newest("SELECT").await?;
        Ok(InspectedTable {
            database: String::new(),
            name: self.0.table_name().to_string(),
            metadata: Arc::new(located.metadata),
            metadata_location: Some(located.path),
            io: target.io.clone(),
            settings: target.settings.clone(),
        })
    }
}

/// A read of one metadata table of one [`Table`]: [`MetadataScan::stream`] or
/// [`MetadataScan::collect`]; a per-snapshot table (files, entries, manifests, partitions) reads
/// the current snapshot of `main` unless [`MetadataScan::snapshot_id`] or
/// [`MetadataScan::branch_or_tag`] names another.
#[must_use]
pub struct MetadataScan<'t> {
    table: &'t Table,
    kind: MetadataTable,
    snapshot_id: Option<i64>,
    ref_name: Option<String>,
}

impl MetadataScan<'_> {
    /// Reads snapshot `id` (the SQL predicate `snapshot_id = id`).
    pub fn snapshot_id(mut self, id: i64) -> Self {
        self.snapshot_id = Some(id);
        self
    }

    /// Reads the snapshot a branch or tag points at (the SQL predicate `ref = 'name'`).
    pub fn branch_or_tag(mut self, name: impl Into<String>) -> Self {
        self.ref_name = Some(name.into());
        self
    }

    /// The rows as a stream of record batches (the columns of `DESCRIBE TABLE system.<table>`;
    /// `database` is empty and `table` is the table's name).
    pub async fn stream(self) -> Result<SendableRecordBatchStream> {
        let source: Arc<dyn TableSource> = Arc::new(OneTable(self.table.clone()));
        let provider = MetadataTableProvider::new(self.kind, source, true);
        let ctx = SessionContext::new();
        let mut frame = ctx.read_table(Arc::new(provider)).map_err(to_error)?;
        if let Some(id) = self.snapshot_id {
            let selector = col(self.kind.snapshot_selector());
            frame = frame.filter(selector.eq(lit(id))).map_err(to_error)?;
        }
        if let Some(name) = self.ref_name {
            frame = frame.filter(col("ref").eq(lit(name))).map_err(to_error)?;
        }
        frame.execute_stream().await.map_err(to_error)
    }

    /// Every row, in memory.
    pub async fn collect(self) -> Result<Vec<RecordBatch>> {
        use futures::TryStreamExt;
        let stream = self.stream().await?;
        stream.try_collect().await.map_err(to_error)
    }
}

impl Table {
    /// The rows of the metadata table `kind` for this table (see [`MetadataScan`]).
    ///
    /// ```
    /// use futures::TryStreamExt;
    /// use icetrim::{MetadataTable, StorageOptions, Table};
    ///
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// let dir = tempfile::tempdir()?;
    /// let location = dir.path().join("t").to_string_lossy().into_owned();
    /// Table::write_demo(&location).await?;
    /// let table = Table::open(&location, StorageOptions::default())?;
    ///
    /// let batches: Vec<_> = table.snapshots().try_collect().await.map_err(|e| e.to_string())?;
    /// let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    /// assert_eq!(rows, 20);
    /// let refs = table.metadata_table(MetadataTable::Refs).collect().await?;
    /// let names = refs[0].column_by_name("name").expect("a name column");
    /// let names = icetrim::datafusion::arrow::array::AsArray::as_string::<i32>(names.as_ref());
    /// assert!(names.iter().any(|n| n == Some("main")));
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// ```
    pub fn metadata_table(&self, kind: MetadataTable) -> MetadataScan<'_> {
        MetadataScan {
            table: self,
            kind,
            snapshot_id: None,
            ref_name: None,
        }
    }

    /// `system.iceberg_snapshots` for this table.
    pub fn snapshots(&self) -> futures::stream::BoxStream<'_, Result<RecordBatch>> {
        self.rows_of(MetadataTable::Snapshots)
    }

    /// `system.iceberg_history` for this table.
    pub fn history(&self) -> futures::stream::BoxStream<'_, Result<RecordBatch>> {
        self.rows_of(MetadataTable::History)
    }

    /// `system.iceberg_refs` for this table.
    pub fn refs(&self) -> futures::stream::BoxStream<'_, Result<RecordBatch>> {
        self.rows_of(MetadataTable::Refs)
    }

    /// The rows of `kind` as one stream of icetrim results (opening errors included).
    fn rows_of(&self, kind: MetadataTable) -> futures::stream::BoxStream<'_, Result<RecordBatch>> {
        use futures::{StreamExt, TryStreamExt};
        let opened = self.metadata_table(kind).stream();
        futures::stream::once(opened)
            .map_ok(|stream| stream.map_err(to_error))
            .try_flatten()
            .boxed()
    }
}
