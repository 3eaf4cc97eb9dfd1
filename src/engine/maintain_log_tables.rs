//! `system.iceberg_maintenance_log` and `system.iceberg_maintenance_metrics` as DataFusion table
//! providers over a [`LogSource`] (the entries a session may see, read when a query scans them,
//! so a host's context sees runs made after it was built). The log is small (bounded by
//! `LOG_CAPACITY`) and lives in memory: a scan needs no `table` predicate, unlike the metadata
//! tables that read manifests.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{
    ArrayRef, Float64Array, Int64Array, Int64Builder, MapBuilder, MapFieldNames, RecordBatch,
    StringArray, StringBuilder, TimestampMillisecondArray, UInt8Array,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::catalog::{MemTable, Session, TableProvider};
use datafusion::datasource::TableType;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;

use super::maintain_log::LogEntry;
use super::maintain_metrics::{MetricRow, metric_rows};

/// The log entries a reader may see, oldest first.
#[async_trait]
pub(crate) trait LogSource: Send + Sync {
    async fn entries(&self) -> Vec<LogEntry>;
}

/// Which of the two tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LogTable {
    Log,
    Metrics,
}

impl LogTable {
    pub const ALL: [LogTable; 2] = [LogTable::Log, LogTable::Metrics];

    pub fn from_name(name: &str) -> Option<LogTable> {
        LogTable::ALL.into_iter().find(|t| t.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            LogTable::Log => "iceberg_maintenance_log",
            LogTable::Metrics => "iceberg_maintenance_metrics",
        }
    }

    pub fn schema(self) -> SchemaRef {
        let fields = match self {
            LogTable::Log => log_fields(),
            LogTable::Metrics => metric_fields(),
        };
        Arc::new(Schema::new(fields))
    }
}

/// Milliseconds since the epoch, UTC (printed in the session's time zone), as the metadata
/// tables' times.
fn timestamp_type() -> DataType {
    DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()))
}

fn text(name: &str) -> Field {
    Field::new(name, DataType::Utf8, false)
}

fn map_type(values: DataType) -> DataType {
    let entries = Field::new(
        "entries",
        DataType::Struct(
            vec![
                Field::new("keys", DataType::Utf8, false),
                Field::new("values", values, false),
            ]
            .into(),
        ),
        false,
    );
    DataType::Map(Arc::new(entries), false)
}

fn log_fields() -> Vec<Field> {
    vec![
        Field::new("event_time", timestamp_type(), false),
        text("run_id"),
        Field::new("dry_run", DataType::UInt8, false),
        text("database"),
        text("table"),
        text("procedure"),
        text("status"),
        text("reason"),
        Field::new("start_time", timestamp_type(), false),
        Field::new("end_time", timestamp_type(), false),
        Field::new("duration_ms", DataType::Int64, false),
        Field::new("metrics", map_type(DataType::Int64), false),
        Field::new("bytes_freed", DataType::Int64, true),
        Field::new("error_code", DataType::Utf8, true),
        text("error"),
    ]
}

fn metric_fields() -> Vec<Field> {
    vec![
        text("name"),
        text("type"),
        text("help"),
        Field::new("labels", map_type(DataType::Utf8), false),
        Field::new("value", DataType::Float64, false),
        Field::new("timestamp", DataType::Int64, true),
    ]
}

fn map_names() -> MapFieldNames {
    MapFieldNames {
        entry: "entries".into(),
        key: "keys".into(),
        value: "values".into(),
    }
}

fn strings<'a>(values: impl Iterator<Item = &'a str>) -> ArrayRef {
    Arc::new(StringArray::from_iter_values(values))
}

fn times(values: impl Iterator<Item = i64>) -> ArrayRef {
    Arc::new(TimestampMillisecondArray::from_iter_values(values).with_timezone("UTC"))
}

fn log_columns(entries: &[LogEntry]) -> Vec<ArrayRef> {
    let mut metrics = MapBuilder::new(Some(map_names()), StringBuilder::new(), Int64Builder::new())
        .with_values_field(Field::new("values", DataType::Int64, false));
    for e in entries {
        for (name, value) in &e.metrics {
            metrics.keys().append_value(name);
            metrics.values().append_value(*value);
        }
        // Infallible: keys and values were appended in pairs.
        let _ = metrics.append(true);
    }
    let e = entries;
    vec![
        times(e.iter().map(|e| e.event_time_ms)),
        strings(e.iter().map(|e| e.run_id.as_str())),
        Arc::new(UInt8Array::from_iter_values(
            e.iter().map(|e| u8::from(e.dry_run)),
        )),
        strings(e.iter().map(|e| e.database.as_str())),
        strings(e.iter().map(|e| e.table.as_str())),
        strings(e.iter().map(|e| e.procedure.as_str())),
        strings(e.iter().map(|e| e.status.as_str())),
        strings(e.iter().map(|e| e.reason.as_str())),
        times(e.iter().map(|e| e.start_time_ms)),
        times(e.iter().map(|e| e.end_time_ms)),
        Arc::new(Int64Array::from_iter_values(
            e.iter().map(LogEntry::duration_ms),
        )),
        Arc::new(metrics.finish()),
        Arc::new(Int64Array::from_iter(e.iter().map(|e| e.bytes_freed))),
        Arc::new(StringArray::from_iter(
            e.iter().map(|e| e.error_code.as_deref()),
        )),
        strings(e.iter().map(|e| e.error.as_str())),
    ]
}

fn metric_columns(rows: &[MetricRow]) -> Vec<ArrayRef> {
    let mut labels = MapBuilder::new(
        Some(map_names()),
        StringBuilder::new(),
        StringBuilder::new(),
    )
    .with_values_field(Field::new("values", DataType::Utf8, false));
    for r in rows {
        for (k, v) in &r.labels {
            labels.keys().append_value(k);
            labels.values().append_value(v);
        }
        // Infallible: keys and values were appended in pairs.
        let _ = labels.append(true);
    }
    vec![
        strings(rows.iter().map(|r| r.name)),
        strings(rows.iter().map(|r| r.kind)),
        strings(rows.iter().map(|r| r.help)),
        Arc::new(labels.finish()),
        Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| r.value))),
        Arc::new(Int64Array::from_iter(rows.iter().map(|_| None::<i64>))),
    ]
}

/// One of the two tables over a [`LogSource`].
pub(crate) struct LogTableProvider {
    table: LogTable,
    source: Arc<dyn LogSource>,
}

impl LogTableProvider {
    pub fn new(table: LogTable, source: Arc<dyn LogSource>) -> Self {
        LogTableProvider { table, source }
    }

    /// The table's rows now, as one batch.
    async fn batch(&self) -> datafusion::error::Result<RecordBatch> {
        let entries = self.source.entries().await;
        let columns = match self.table {
            LogTable::Log => log_columns(&entries),
            LogTable::Metrics => metric_columns(&metric_rows(&entries)),
        };
        Ok(RecordBatch::try_new(self.table.schema(), columns)?)
    }
}

impl fmt::Debug for LogTableProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "system.{}", self.table.name())
    }
}

#[async_trait]
impl TableProvider for LogTableProvider {
    fn schema(&self) -> SchemaRef {
        self.table.schema()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> datafusion::error::Result<Arc<dyn ExecutionPlan>> {
        let rows = MemTable::try_new(self.table.schema(), vec![vec![self.batch().await?]])?;
        rows.scan(state, projection, filters, limit).await
    }
}
