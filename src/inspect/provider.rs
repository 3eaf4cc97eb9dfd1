//! Each metadata table as a DataFusion table provider. The equality filters on `database`,
//! `table`, `snapshot_id` and `ref` are pushed down (inexactly: DataFusion still applies them),
//! so a query about one table opens only that table, and a per-snapshot table reads the snapshot
//! named. Rows are produced by one spawned task per scan, aborted when the reader goes.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{Column, ScalarValue};
use datafusion::datasource::TableType;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{BinaryExpr, Expr, Operator, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchReceiverStreamBuilder;
use datafusion::physical_plan::streaming::{PartitionStream, StreamingTableExec};

use super::sink::{BatchSink, to_datafusion};
use super::{MetadataTable, Scope, TableSource};
use crate::error::Error;

/// One metadata table over the tables a [`TableSource`] knows.
pub struct MetadataTableProvider {
    table: MetadataTable,
    source: Arc<dyn TableSource>,
    /// Whether a table read from manifests may be scanned without a `table` predicate.
    allow_unfiltered: bool,
}

impl MetadataTableProvider {
    pub fn new(table: MetadataTable, source: Arc<dyn TableSource>, allow_unfiltered: bool) -> Self {
        MetadataTableProvider {
            table,
            source,
            allow_unfiltered,
        }
    }
}

impl fmt::Debug for MetadataTableProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "system.{}", self.table.name())
    }
}

/// The pushed-down predicates of one scan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Pushed {
    pub database: Option<String>,
    pub table: Option<String>,
    pub scope: Scope,
}

/// `column = literal` (either side), for the columns pushed down.
fn equality(expr: &Expr) -> Option<(&str, &ScalarValue)> {
    let Expr::BinaryExpr(BinaryExpr {
        left,
        op: Operator::Eq,
        right,
    }) = expr
    else {
        return None;
    };
    let (column, value) = match (left.as_ref(), right.as_ref()) {
        (Expr::Column(c), Expr::Literal(v, _)) | (Expr::Literal(v, _), Expr::Column(c)) => (c, v),
        _ => return None,
    };
    let Column { name, .. } = column;
    matches!(
        name.as_str(),
        "database" | "table" | "snapshot_id" | "read_snapshot_id" | "ref"
    )
    .then_some((name, value))
}

fn text(value: &ScalarValue) -> Option<String> {
    match value {
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => Some(s.clone()),
        _ => None,
    }
}

fn integer(value: &ScalarValue) -> Option<i64> {
    match value {
        ScalarValue::Int64(Some(v)) => Some(*v),
        ScalarValue::Int32(Some(v)) => Some(i64::from(*v)),
        ScalarValue::UInt64(Some(v)) => i64::try_from(*v).ok(),
        ScalarValue::UInt32(Some(v)) => Some(i64::from(*v)),
        _ => None,
    }
}

impl Pushed {
    /// The constraints among `filters` (`AND`ed by DataFusion: each one narrows the scan).
    pub(crate) fn from_filters(table: MetadataTable, filters: &[Expr]) -> Pushed {
        let mut pushed = Pushed::default();
        for (column, value) in filters.iter().filter_map(equality) {
            match column {
                "database" => pushed.database = text(value),
                "table" => pushed.table = text(value),
                c if table.is_per_snapshot() && c == table.snapshot_selector() => {
                    pushed.scope.snapshot_id = integer(value)
                }
                "ref" if table.is_per_snapshot() => pushed.scope.ref_name = text(value),
                _ => {}
            }
        }
        pushed
    }
}

#[async_trait]
impl TableProvider for MetadataTableProvider {
    fn schema(&self) -> SchemaRef {
        self.table.schema()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> datafusion::error::Result<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            .map(|f| match equality(f) {
                Some(_) => TableProviderFilterPushDown::Inexact,
                None => TableProviderFilterPushDown::Unsupported,
            })
            .collect())
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> datafusion::error::Result<Arc<dyn ExecutionPlan>> {
        let pushed = Pushed::from_filters(self.table, filters);
        if self.table.reads_manifests() && pushed.table.is_none() && !self.allow_unfiltered {
            return Err(to_datafusion(Error::new(
                crate::error::ErrorKind::QueryIsProhibited,
                format!(
                    "Reading system.{} needs a predicate `table = '<name>'`: without it every \
                     registered table (catalog tables included) would be opened and its manifests \
                     read. Set iceberg_metadata_tables_allow_full_scan = 1 to allow it",
                    self.table.name()
                ),
            )));
        }
        let partition = Arc::new(ScanPartition {
            table: self.table,
            source: Arc::clone(&self.source),
            pushed,
            schema: self.table.schema(),
        });
        let exec = StreamingTableExec::try_new(
            self.table.schema(),
            vec![partition],
            projection,
            Vec::new(),
            false,
            limit,
        )?;
        Ok(Arc::new(exec))
    }
}

/// The one partition of a scan: every matching table, one after another.
struct ScanPartition {
    table: MetadataTable,
    source: Arc<dyn TableSource>,
    pushed: Pushed,
    schema: SchemaRef,
}

impl fmt::Debug for ScanPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "system.{} {:?}", self.table.name(), self.pushed)
    }
}

impl PartitionStream for ScanPartition {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let mut builder = RecordBatchReceiverStreamBuilder::new(Arc::clone(&self.schema), 2);
        let sink = BatchSink::new(Arc::clone(&self.schema), builder.tx());
        let (table, source, pushed) = (self.table, Arc::clone(&self.source), self.pushed.clone());
        builder.spawn(async move {
            produce(table, source.as_ref(), &pushed, &sink)
                .await
                .map_err(to_datafusion)
        });
        builder.build()
    }
}

async fn produce(
    table: MetadataTable,
    source: &dyn TableSource,
    pushed: &Pushed,
    sink: &BatchSink,
) -> crate::error::Result<()> {
    let names = source
        .names(pushed.database.as_deref(), pushed.table.as_deref())
        .await?;
    for (database, name) in names {
        // A name taken from a `table = '...'` predicate that no table has: no rows, as for a
        // path table of another name.
        let opened = match source.open(&database, &name).await {
            Err(e) if e.kind() == crate::error::ErrorKind::UnknownTable => continue,
            other => other?,
        };
        if !table.produce(&opened, &pushed.scope, sink).await? {
            break;
        }
    }
    Ok(())
}
