//! The other writer's Parquet files, in the generated tables' schema: data files (`id` long,
//! `data` string, field ids 1 and 2, plus `part` int, field id 3, in partitioned tables) and
//! position delete files (`file_path`, `pos` with their reserved field ids).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use bytes::Bytes;
use parquet::arrow::{ArrowWriter, PARQUET_FIELD_ID_META_KEY};

fn field(name: &str, ty: DataType, id: i32) -> Field {
    Field::new(name, ty, true).with_metadata(HashMap::from([(
        PARQUET_FIELD_ID_META_KEY.to_string(),
        id.to_string(),
    )]))
}

fn write(fields: Vec<Field>, columns: Vec<ArrayRef>) -> Result<Bytes, String> {
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(schema.clone(), columns).map_err(|e| e.to_string())?;
    let mut w = ArrowWriter::try_new(Vec::new(), schema, None).map_err(|e| e.to_string())?;
    w.write(&batch).map_err(|e| e.to_string())?;
    w.into_inner().map(Bytes::from).map_err(|e| e.to_string())
}

/// Rows `first..first + rows` (`data` = `row-<id>`), in partition `part` when given.
pub fn data_file(first: i64, rows: i64, part: Option<i32>) -> Result<Bytes, String> {
    let ids: Vec<i64> = (first..first + rows).collect();
    let data: Vec<String> = ids.iter().map(|i| format!("row-{i}")).collect();
    let mut fields = vec![
        field("id", DataType::Int64, 1),
        field("data", DataType::Utf8, 2),
    ];
    let mut columns = vec![
        Arc::new(Int64Array::from(ids)) as ArrayRef,
        Arc::new(StringArray::from(data)) as ArrayRef,
    ];
    if let Some(p) = part {
        fields.push(field("part", DataType::Int32, 3));
        columns.push(Arc::new(Int32Array::from(vec![p; rows.max(0) as usize])) as ArrayRef);
    }
    write(fields, columns)
}

/// A position delete file deleting `positions` (ascending) of `data_path`.
pub fn position_deletes(data_path: &str, positions: &[i64]) -> Result<Bytes, String> {
    write(
        vec![
            field("file_path", DataType::Utf8, 2_147_483_546),
            field("pos", DataType::Int64, 2_147_483_545),
        ],
        vec![
            Arc::new(StringArray::from(vec![data_path; positions.len()])) as ArrayRef,
            Arc::new(Int64Array::from(positions.to_vec())) as ArrayRef,
        ],
    )
}
