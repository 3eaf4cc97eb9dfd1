//! Each metadata table as a DataFusion table provider. The equality filters on `database`,
//! `table`, `snapshot_id` and `ref` are pushed down, so a query about one table opens only that
//! table, and a per-snapshot table reads the snapshot named. `database` or `table` equal to a
//! text is applied by the scan itself, exactly (no filter over every row after it, nor the
//! repartitioning DataFusion adds to run that filter on both cores); the others DataFusion still
//! applies. Rows are produced by one spawned task per scan, aborted when the reader goes.

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
    /// Two equalities on `database` or on `table` name different texts: no row matches.
    pub contradictory: bool,
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

/// `database` or `table` equal to a (non-null) text: a filter the scan applies exactly.
fn name_equality(expr: &Expr) -> Option<(&str, String)> {
    let (column, value) = equality(expr)?;
    matches!(column, "database" | "table").then_some((column, text(value)?))
}

/// How the scan takes `filter`.
fn pushdown(filter: &Expr) -> TableProviderFilterPushDown {
    if name_equality(filter).is_some() {
        TableProviderFilterPushDown::Exact
    } else if equality(filter).is_some() {
        TableProviderFilterPushDown::Inexact
    } else {
        TableProviderFilterPushDown::Unsupported
    }
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
    /// Whether rows of `database`.`name` pass the `database` and `table` equalities (which the
    /// scan applies exactly: DataFusion does not filter them again).
    fn names(&self, database: &str, name: &str) -> bool {
        self.database.as_deref().is_none_or(|d| d == database)
            && self.table.as_deref().is_none_or(|t| t == name)
    }

    /// The constraints among `filters` (`AND`ed by DataFusion: each one narrows the scan).
    pub(crate) fn from_filters(table: MetadataTable, filters: &[Expr]) -> Pushed {
        let mut pushed = Pushed::default();
        for (column, name) in filters.iter().filter_map(name_equality) {
            let slot = match column {
                "database" => &mut pushed.database,
                _ => &mut pushed.table,
            };
            if slot.as_ref().is_some_and(|held| *held != name) {
                pushed.contradictory = true;
            }
            *slot = Some(name);
        }
        for (column, value) in filters.iter().filter_map(equality) {
            match column {
                "database" | "table" => {}
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
        Ok(filters.iter().copied().map(pushdown).collect())
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
    if pushed.contradictory {
        return Ok(());
    }
    let names = source
        .names(pushed.database.as_deref(), pushed.table.as_deref())
        .await?;
    for (database, name) in names {
        if !pushed.names(&database, &name) {
            continue;
        }
        // A name taken from a `table = '...'` predicate that no table has: no rows, as for a
        // path table of another name.
        let opened = match source.open(&database, &name).await {
            Err(e) if e.kind() == crate::error::ErrorKind::UnknownTable => continue,
            other => other?,
        };
        if !pushed.names(&opened.database, &opened.name) {
            continue;
        }
        if !table.produce(&opened, &pushed.scope, sink).await? {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use datafusion::logical_expr::{col, lit};

    use super::*;

    fn kinds(filters: &[Expr]) -> Vec<TableProviderFilterPushDown> {
        filters.iter().map(pushdown).collect()
    }

    #[test]
    fn names_equal_to_a_text_are_applied_exactly_and_the_rest_by_datafusion() {
        use TableProviderFilterPushDown::{Exact, Inexact, Unsupported};
        let filters = [
            col("table").eq(lit("t")),
            lit("db").eq(col("database")),
            col("table").eq(lit(ScalarValue::Utf8(None))),
            col("snapshot_id").eq(lit(5i64)),
            col("ref").eq(lit("main")),
            col("table").not_eq(lit("t")),
            col("file_path").eq(lit("x")),
        ];
        assert_eq!(
            kinds(&filters),
            [
                Exact,
                Exact,
                Inexact,
                Inexact,
                Inexact,
                Unsupported,
                Unsupported
            ]
        );
        let pushed = Pushed::from_filters(MetadataTable::Files, &filters);
        assert_eq!(pushed.table.as_deref(), Some("t"), "a NULL text leaves it");
        assert_eq!(pushed.database.as_deref(), Some("db"));
        assert_eq!(pushed.scope.snapshot_id, Some(5));
        assert_eq!(pushed.scope.ref_name.as_deref(), Some("main"));
        assert!(!pushed.contradictory);
        assert!(pushed.names("db", "t"));
        assert!(!pushed.names("db", "T") && !pushed.names("other", "t"));
    }

    #[test]
    fn two_different_names_match_nothing() {
        let same = [col("table").eq(lit("t")), lit("t").eq(col("table"))];
        assert!(!Pushed::from_filters(MetadataTable::AllFiles, &same).contradictory);
        let different = [col("table").eq(lit("t")), col("table").eq(lit("u"))];
        assert!(Pushed::from_filters(MetadataTable::AllFiles, &different).contradictory);
        let databases = [col("database").eq(lit("a")), col("database").eq(lit("b"))];
        assert!(Pushed::from_filters(MetadataTable::Snapshots, &databases).contradictory);
    }
}
