//! Real Parquet content for generated tables ([`super::GenerateOptions::parquet_data`]): data files
//! of the default schema (`id` long, `data` string, field ids 1 and 2) holding consecutive ids,
//! plus the partition column `part` (int, field id 3) in partitioned tables, the columns of
//! [`WIDE_COLUMNS`] in wide tables (several physical types, as real tables have),
//! and position delete files (`file_path`, `pos` with their reserved field ids). Deterministic:
//! the same rows give the same bytes.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{
    ArrayRef, BooleanArray, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray,
    TimestampMicrosecondArray,
};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use bytes::Bytes;
use parquet::arrow::{ArrowWriter, PARQUET_FIELD_ID_META_KEY};
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use crate::error::{Error, Result};

fn field(name: &str, ty: DataType, id: i32) -> Field {
    Field::new(name, ty, true).with_metadata(HashMap::from([(
        PARQUET_FIELD_ID_META_KEY.to_string(),
        id.to_string(),
    )]))
}

fn write(schema: Schema, columns: Vec<ArrayRef>) -> Result<Bytes> {
    let err = |e: String| Error::logical(format!("generating Parquet: {e}"));
    let schema = Arc::new(schema);
    let batch = RecordBatch::try_new(schema.clone(), columns).map_err(|e| err(e.to_string()))?;
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .set_created_by("icetrim-generate".into())
        .build();
    let mut w =
        ArrowWriter::try_new(Vec::new(), schema, Some(props)).map_err(|e| err(e.to_string()))?;
    w.write(&batch).map_err(|e| err(e.to_string()))?;
    w.into_inner()
        .map(Bytes::from)
        .map_err(|e| err(e.to_string()))
}

/// The `data` value of row `id`: `row-<id>`, padded to `row_bytes` bytes (when longer) with
/// characters drawn from the id (64 letters, so about 6 bits of entropy each: the files do not
/// compress away, as real payloads do not).
pub fn data_value(id: i64, row_bytes: usize) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut text = format!("row-{id}");
    if row_bytes <= text.len() {
        return text;
    }
    let mut bytes = std::mem::take(&mut text).into_bytes();
    bytes.push(b'-');
    let mut state = (id as u64) ^ 0x9E37_79B9_7F4A_7C15;
    while bytes.len() < row_bytes {
        // splitmix64
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        for k in 0..8 {
            if bytes.len() == row_bytes {
                break;
            }
            bytes.push(ALPHABET[((z >> (k * 8)) & 63) as usize]);
        }
    }
    String::from_utf8(bytes).unwrap_or_default()
}

/// The extra columns of a wide table: name, Iceberg type and field id (after `part`'s 3).
pub const WIDE_COLUMNS: [(&str, &str, i32); 3] = [
    ("amount", "double", 4),
    ("ts", "timestamptz", 5),
    ("flag", "boolean", 6),
];

/// A data file with ids `first..first + records`, `data` = [`data_value`] (`row-<id>` when
/// `row_bytes` is 0), given a partition value the column `part` holding it in every row, and when
/// `wide` the [`WIDE_COLUMNS`], derived from each row's id.
pub fn data_file(
    first: i64,
    records: i64,
    part: Option<i32>,
    row_bytes: usize,
    wide: bool,
) -> Result<Bytes> {
    let ids: Vec<i64> = (first..first + records).collect();
    let data: Vec<String> = ids.iter().map(|i| data_value(*i, row_bytes)).collect();
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
        columns.push(Arc::new(Int32Array::from(vec![p; records.max(0) as usize])) as ArrayRef);
    }
    if wide {
        let ids = first..first + records;
        let micros = |i: i64| 1_700_000_000_000_000 + i.wrapping_mul(1_000_003);
        fields.push(field("amount", DataType::Float64, 4));
        fields.push(field(
            "ts",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            5,
        ));
        fields.push(field("flag", DataType::Boolean, 6));
        columns.push(Arc::new(Float64Array::from_iter_values(
            ids.clone().map(|i| i as f64 * 0.25),
        )));
        columns.push(Arc::new(
            TimestampMicrosecondArray::from_iter_values(ids.clone().map(micros))
                .with_timezone("UTC"),
        ));
        columns.push(Arc::new(BooleanArray::from_iter(
            ids.map(|i| Some(i % 3 == 0)),
        )));
    }
    write(Schema::new(fields), columns)
}

/// A position delete file deleting `positions` of `data_path`.
pub fn position_deletes(data_path: &str, positions: &[i64]) -> Result<Bytes> {
    write(
        Schema::new(vec![
            field("file_path", DataType::Utf8, 2_147_483_546),
            field("pos", DataType::Int64, 2_147_483_545),
        ]),
        vec![
            Arc::new(StringArray::from(vec![data_path; positions.len()])) as ArrayRef,
            Arc::new(Int64Array::from(positions.to_vec())) as ArrayRef,
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_parquet_and_deterministic() {
        let a = data_file(10, 5, None, 0, false).unwrap();
        assert_eq!(&a[..4], b"PAR1");
        assert_eq!(a, data_file(10, 5, None, 0, false).unwrap());
        let p = data_file(10, 5, Some(7), 0, false).unwrap();
        let reader =
            ::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(p).unwrap();
        let fields = reader.schema().fields().clone();
        assert_eq!(fields.len(), 3);
        assert_eq!(fields[2].name(), "part");
        let batch = reader.build().unwrap().next().unwrap().unwrap();
        let part = batch
            .column(2)
            .as_any()
            .downcast_ref::<Int32Array>()
            .unwrap();
        assert!(part.iter().all(|v| v == Some(7)));
        assert_eq!(batch.num_rows(), 5);
        let wide = data_file(10, 5, None, 0, true).unwrap();
        let reader =
            ::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(wide).unwrap();
        let names: Vec<String> = reader
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        assert_eq!(names, ["id", "data", "amount", "ts", "flag"]);
        let batch = reader.build().unwrap().next().unwrap().unwrap();
        let flags = batch
            .column(4)
            .as_any()
            .downcast_ref::<BooleanArray>()
            .unwrap();
        assert_eq!(
            flags.true_count(),
            1,
            "of ids 10 to 14, only 12 is a multiple of 3"
        );
        assert_eq!(data_value(12, 0), "row-12");
        let padded = data_value(12, 100);
        assert_eq!(padded.len(), 100);
        assert!(padded.starts_with("row-12-"));
        assert_ne!(
            padded[7..],
            data_value(13, 100)[7..],
            "padding differs by row"
        );
        assert_eq!(padded, data_value(12, 100), "and is deterministic");
        let big = data_file(0, 2000, None, 200, false).unwrap();
        assert!(
            big.len() > 2000 * 100,
            "padding does not compress away: {}",
            big.len()
        );
        let d = position_deletes("s3://b/t/data/x.parquet", &[0, 2]).unwrap();
        assert_eq!(&d[d.len() - 4..], b"PAR1");
    }
}
