//! `system.iceberg_partitions`: per partition of one snapshot's live files, pyiceberg's counts —
//! data records, files and bytes, position and equality delete records and files, and the newest
//! snapshot that added one of them. Partitions are keyed by their field names and values (as
//! pyiceberg keys them), in the order first seen; the counts of one table's partitions are held
//! in memory (one small row per partition), never its files.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int32Array, Int64Array, MapBuilder, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field};

use super::values::render;
use crate::iceberg::manifest::ManifestEntry;
use crate::iceberg::metadata::TableMetadata;
use crate::iceberg::spec::DataContent;

type PartitionKey = Vec<(String, Option<String>)>;

/// One partition's counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PartitionRow {
    pub partition: PartitionKey,
    pub spec_id: i32,
    pub record_count: i64,
    pub file_count: i32,
    pub total_data_file_size_in_bytes: i64,
    pub position_delete_record_count: i64,
    pub position_delete_file_count: i32,
    pub equality_delete_record_count: i64,
    pub equality_delete_file_count: i32,
    pub last_updated_at: Option<i64>,
    pub last_updated_snapshot_id: Option<i64>,
}

/// The partitions seen so far.
#[derive(Debug, Default)]
pub(crate) struct PartitionStats {
    index: HashMap<PartitionKey, usize>,
    pub rows: Vec<PartitionRow>,
}

impl PartitionStats {
    /// Counts the live entry `e` of a manifest of spec `spec_id` (result types `types`).
    pub(crate) fn add(
        &mut self,
        m: &TableMetadata,
        spec_id: i32,
        types: &[String],
        e: &ManifestEntry,
    ) {
        let f = &e.data_file;
        let key: PartitionKey = f
            .partition
            .fields
            .iter()
            .enumerate()
            .map(|(i, (name, v))| {
                (
                    name.clone(),
                    render(types.get(i).map_or("", String::as_str), v),
                )
            })
            .collect();
        let at = match self.index.get(&key) {
            Some(at) => *at,
            None => {
                self.index.insert(key.clone(), self.rows.len());
                self.rows.push(PartitionRow {
                    partition: key,
                    spec_id,
                    ..PartitionRow::default()
                });
                self.rows.len() - 1
            }
        };
        let row = &mut self.rows[at];
        if let Some(s) = e.snapshot_id.and_then(|id| m.snapshot(id))
            && row.last_updated_at.is_none_or(|t| t < s.timestamp_ms)
        {
            row.last_updated_at = Some(s.timestamp_ms);
            row.last_updated_snapshot_id = Some(s.snapshot_id);
        }
        match f.content {
            DataContent::Data => {
                row.record_count += f.record_count;
                row.file_count += 1;
                row.total_data_file_size_in_bytes += f.file_size_in_bytes;
            }
            DataContent::PositionDeletes => {
                row.position_delete_record_count += f.record_count;
                row.position_delete_file_count += 1;
            }
            DataContent::EqualityDeletes => {
                row.equality_delete_record_count += f.record_count;
                row.equality_delete_file_count += 1;
            }
        }
    }
}

/// `iceberg_partitions`' own columns.
pub(crate) fn partitions_fields() -> Vec<Field> {
    vec![
        Field::new("partition", super::columns::text_map_type(), false),
        Field::new("spec_id", DataType::Int32, false),
        Field::new("record_count", DataType::Int64, false),
        Field::new("file_count", DataType::Int32, false),
        Field::new("total_data_file_size_in_bytes", DataType::Int64, false),
        Field::new("position_delete_record_count", DataType::Int64, false),
        Field::new("position_delete_file_count", DataType::Int32, false),
        Field::new("equality_delete_record_count", DataType::Int64, false),
        Field::new("equality_delete_file_count", DataType::Int32, false),
        Field::new(
            "last_updated_at",
            crate::inspect::history::timestamp_type(),
            true,
        ),
        Field::new("last_updated_snapshot_id", DataType::Int64, true),
        Field::new("snapshot_id", DataType::Int64, false),
        Field::new("ref", DataType::Utf8, true),
    ]
}

/// The columns of `rows` (without the trailing `snapshot_id` and `ref`).
pub(crate) fn partitions_columns(rows: &[PartitionRow]) -> Vec<ArrayRef> {
    let mut partition = MapBuilder::new(None, StringBuilder::new(), StringBuilder::new());
    for r in rows {
        for (name, value) in &r.partition {
            partition.keys().append_value(name);
            partition.values().append_option(value.as_deref());
        }
        // Infallible: keys and values were appended in pairs.
        let _ = partition.append(true);
    }
    let i64s = |get: fn(&PartitionRow) -> i64| -> ArrayRef {
        Arc::new(Int64Array::from_iter_values(rows.iter().map(get)))
    };
    let i32s = |get: fn(&PartitionRow) -> i32| -> ArrayRef {
        Arc::new(Int32Array::from_iter_values(rows.iter().map(get)))
    };
    vec![
        Arc::new(partition.finish()),
        i32s(|r| r.spec_id),
        i64s(|r| r.record_count),
        i32s(|r| r.file_count),
        i64s(|r| r.total_data_file_size_in_bytes),
        i64s(|r| r.position_delete_record_count),
        i32s(|r| r.position_delete_file_count),
        i64s(|r| r.equality_delete_record_count),
        i32s(|r| r.equality_delete_file_count),
        Arc::new(
            datafusion::arrow::array::TimestampMillisecondArray::from_iter(
                rows.iter().map(|r| r.last_updated_at),
            )
            .with_timezone("UTC"),
        ),
        Arc::new(Int64Array::from_iter(
            rows.iter().map(|r| r.last_updated_snapshot_id),
        )),
    ]
}
