//! The producer's end of a metadata-table scan: batches of one table's own columns go in, full
//! rows (`database`, `table`, then those columns) come out to DataFusion, one bounded channel
//! between them so a producer never runs far ahead of the reader.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::DataFusionError;
use tokio::sync::mpsc::Sender;

use super::InspectedTable;
use crate::error::{Error, Result};

/// Where a producer sends its batches.
pub struct BatchSink {
    schema: SchemaRef,
    tx: Sender<datafusion::error::Result<RecordBatch>>,
}

impl BatchSink {
    pub(crate) fn new(
        schema: SchemaRef,
        tx: Sender<datafusion::error::Result<RecordBatch>>,
    ) -> Self {
        BatchSink { schema, tx }
    }

    /// Sends rows of `table`: `columns` are the metadata table's own columns, all of one length.
    /// `Ok(false)` when the reader has gone (a `LIMIT` was reached, the query was cancelled):
    /// the producer stops.
    pub async fn send(&self, table: &InspectedTable, columns: Vec<ArrayRef>) -> Result<bool> {
        let rows = columns.first().map_or(0, |c| c.len());
        if rows == 0 {
            return Ok(!self.tx.is_closed());
        }
        let database: ArrayRef = Arc::new(StringArray::from_iter_values(std::iter::repeat_n(
            table.database.as_str(),
            rows,
        )));
        let name: ArrayRef = Arc::new(StringArray::from_iter_values(std::iter::repeat_n(
            table.name.as_str(),
            rows,
        )));
        let mut all = Vec::with_capacity(columns.len() + 2);
        all.push(database);
        all.push(name);
        all.extend(columns);
        let batch = RecordBatch::try_new(Arc::clone(&self.schema), all).map_err(|e| {
            Error::logical(format!(
                "metadata table rows of {}.{} do not match its schema: {e}",
                table.database, table.name
            ))
        })?;
        Ok(self.tx.send(Ok(batch)).await.is_ok())
    }
}

/// icetrim's error carried through DataFusion, so that the query fails with its own code.
pub(crate) fn to_datafusion(error: Error) -> DataFusionError {
    DataFusionError::External(Box::new(error))
}
