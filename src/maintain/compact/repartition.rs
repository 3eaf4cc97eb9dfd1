//! Writing rows into the table's default partition spec (pure): the partition tuple of each row,
//! computed with the spec's transforms (`transform.rs`) from the row's source column values, and
//! the tuple a whole file of an older spec takes when its own tuple decides it.
//!
//! Java's `RewriteDataFiles` writes every output into the default spec; rows of files written
//! under an older spec are split by the partition each row takes under the default spec.
//!
//! A file of an older spec lands in a single partition of the default spec, without reading
//! its rows, when every field of the default spec is, for the same source column in the old
//! spec: the same transform (its value copied); any transform of an `identity` field (the
//! transform applied to the value); a coarser time transform (`hour` → `day`/`month`/`year`,
//! `day` → `month`/`year`, `month` → `year`); or `void` (null). Otherwise its rows are split.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int32Type, Int64Type,
    Time64MicrosecondType, TimestampMicrosecondType, TimestampNanosecondType,
};
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, FixedSizeBinaryArray,
    Float32Array, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray,
    Time64MicrosecondArray, TimestampMicrosecondArray, TimestampNanosecondArray, new_empty_array,
    new_null_array,
};
use arrow_schema::{DataType, Schema, TimeUnit};

use super::path::PathField;
use crate::error::{Error, Result};
use crate::iceberg::arrow::schema::{field_by_id, leaf_by_id};
use crate::iceberg::arrow::transform::Transform;
use crate::iceberg::avro::partition::avro_type;
use crate::iceberg::manifest::{PartitionTuple, PartitionValue};
use crate::iceberg::metadata::PartitionSpec;

/// One field of the default spec.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputField {
    pub name: String,
    pub source_id: i32,
    pub transform: Transform,
    /// The transform as the spec writes it.
    pub transform_text: String,
    /// The Iceberg type of the result (`int`, `date`, the source type, ...).
    pub result_type: String,
    /// The Arrow type of the source column.
    pub source_type: DataType,
}

/// The default spec, ready to place rows.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputSpec {
    pub spec_id: i32,
    pub fields: Vec<OutputField>,
}

impl OutputSpec {
    /// `spec` with the result types `result_types` (one per field), its sources found in
    /// `schema` (the output schema). `NOT_IMPLEMENTED` when a transform is unknown or does not
    /// apply to its source's type, or a source is not a column or struct field.
    pub fn new(spec: &PartitionSpec, result_types: &[String], schema: &Schema) -> Result<Self> {
        let mut fields = Vec::with_capacity(spec.fields.len());
        for (f, result_type) in spec.fields.iter().zip(result_types) {
            let transform = Transform::parse(&f.transform)?;
            let source = field_by_id(schema.fields(), f.source_id).ok_or_else(|| {
                Error::not_implemented(format!(
                    "partition field '{}': source column {} is not a column or struct field \
                     of the current schema",
                    f.name, f.source_id
                ))
            })?;
            let source_type = source.data_type().clone();
            transform.apply(&new_empty_array(&source_type))?;
            fields.push(OutputField {
                name: f.name.clone(),
                source_id: f.source_id,
                transform,
                transform_text: f.transform.clone(),
                result_type: result_type.clone(),
                source_type,
            });
        }
        Ok(OutputSpec {
            spec_id: spec.spec_id,
            fields,
        })
    }

    /// The fields as partition folders name them.
    pub fn path_fields(&self) -> Vec<PathField> {
        self.fields
            .iter()
            .map(|f| PathField {
                name: f.name.clone(),
                transform: f.transform_text.clone(),
                result_type: f.result_type.clone(),
            })
            .collect()
    }

    /// The partition values of every row of `batch` (in the output schema), one array per field.
    pub fn keys(&self, batch: &RecordBatch) -> Result<Vec<ArrayRef>> {
        let schema = batch.schema();
        self.fields
            .iter()
            .map(|f| {
                let source =
                    leaf_by_id(schema.fields(), batch.columns(), f.source_id).ok_or_else(|| {
                        Error::logical(format!(
                            "partition source column {} missing from a batch",
                            f.source_id
                        ))
                    })?;
                f.transform.apply(&source)
            })
            .collect()
    }

    /// The partition tuple of row `row` of `keys`, as a manifest entry holds it.
    pub fn tuple(&self, keys: &[ArrayRef], row: usize) -> Result<PartitionTuple> {
        let values = self
            .fields
            .iter()
            .zip(keys)
            .map(|(f, k)| Ok((f.name.clone(), partition_value(k, row, &f.result_type)?)))
            .collect::<Result<Vec<_>>>()?;
        Ok(PartitionTuple::new(values))
    }

    /// The tuple every row of a file of spec `old` with tuple `old_partition` takes, when that
    /// tuple decides it (see the module comment); `None` when rows must be split.
    pub fn derive(
        &self,
        old: &PartitionSpec,
        old_partition: &PartitionTuple,
    ) -> Option<PartitionTuple> {
        let mut out = Vec::with_capacity(self.fields.len());
        for f in &self.fields {
            let value = if f.transform == Transform::Void {
                Some(PartitionValue::Null)
            } else {
                old.fields
                    .iter()
                    .filter(|o| o.source_id == f.source_id)
                    .find_map(|o| {
                        let v = old_partition.get(&o.name)?;
                        value_from_old(f, Transform::parse(&o.transform).ok()?, v)
                    })
            };
            out.push((f.name.clone(), value?));
        }
        Some(PartitionTuple::new(out))
    }
}

/// The value of `f` from an old field of transform `old` holding `v`.
fn value_from_old(f: &OutputField, old: Transform, v: &PartitionValue) -> Option<PartitionValue> {
    use Transform::*;
    if v.is_null() && old != Void {
        return Some(PartitionValue::Null);
    }
    let apply = |array: ArrayRef| -> Option<PartitionValue> {
        let out = f.transform.apply(&array).ok()?;
        partition_value(&out, 0, &f.result_type).ok()
    };
    match (old, f.transform) {
        (Void, _) => None,
        (o, n) if o == n => Some(v.clone()),
        (Identity, _) => apply(scalar_array(v, &f.source_type)?),
        (Day, Month | Year) => apply(Arc::new(Date32Array::from(vec![int(v)? as i32]))),
        (Hour, Day | Month | Year) => apply(Arc::new(TimestampMicrosecondArray::from(vec![
            int(v)?.checked_mul(3_600_000_000)?,
        ]))),
        (Month, Year) => Some(PartitionValue::Int(
            i32::try_from(int(v)?.div_euclid(12)).ok()?,
        )),
        _ => None,
    }
}

fn int(v: &PartitionValue) -> Option<i64> {
    v.as_i64()
}

fn bytes(v: &PartitionValue) -> Option<&[u8]> {
    v.as_bytes()
}

/// A one-value array of type `ty` holding the partition value `v`.
pub fn scalar_array(v: &PartitionValue, ty: &DataType) -> Option<ArrayRef> {
    if v.is_null() {
        return Some(new_null_array(ty, 1));
    }
    let long = || int(v);
    Some(match ty {
        DataType::Boolean => match v {
            PartitionValue::Boolean(b) => Arc::new(BooleanArray::from(vec![*b])),
            _ => return None,
        },
        DataType::Int32 => Arc::new(Int32Array::from(vec![i32::try_from(long()?).ok()?])),
        DataType::Int64 => Arc::new(Int64Array::from(vec![long()?])),
        DataType::Date32 => Arc::new(Date32Array::from(vec![i32::try_from(long()?).ok()?])),
        DataType::Time64(TimeUnit::Microsecond) => {
            Arc::new(Time64MicrosecondArray::from(vec![long()?]))
        }
        DataType::Timestamp(TimeUnit::Microsecond, tz) => {
            Arc::new(TimestampMicrosecondArray::from(vec![long()?]).with_timezone_opt(tz.clone()))
        }
        DataType::Timestamp(TimeUnit::Nanosecond, tz) => {
            Arc::new(TimestampNanosecondArray::from(vec![long()?]).with_timezone_opt(tz.clone()))
        }
        DataType::Float32 => match v {
            PartitionValue::Float(x) => Arc::new(Float32Array::from(vec![*x])),
            _ => return None,
        },
        DataType::Float64 => match v {
            PartitionValue::Double(x) => Arc::new(Float64Array::from(vec![*x])),
            PartitionValue::Float(x) => Arc::new(Float64Array::from(vec![f64::from(*x)])),
            _ => return None,
        },
        DataType::Utf8 => match v {
            PartitionValue::String(s) => Arc::new(StringArray::from(vec![s.as_str()])),
            _ => return None,
        },
        DataType::Binary => Arc::new(BinaryArray::from(vec![bytes(v)?])),
        DataType::FixedSizeBinary(_) => {
            Arc::new(FixedSizeBinaryArray::try_from_iter(std::iter::once(bytes(v)?)).ok()?)
        }
        DataType::Decimal128(p, s) => {
            let b = bytes(v)?;
            if b.is_empty() || b.len() > 16 {
                return None;
            }
            let mut unscaled: i128 = if b[0] & 0x80 != 0 { -1 } else { 0 };
            for &x in b {
                unscaled = (unscaled << 8) | i128::from(x);
            }
            Arc::new(
                Decimal128Array::from(vec![unscaled])
                    .with_precision_and_scale(*p, *s)
                    .ok()?,
            )
        }
        _ => return None,
    })
}

/// Value `row` of `array` as the partition field of Iceberg type `result_type` holds it (a
/// decimal in its `fixed` size for the type).
pub fn partition_value(array: &ArrayRef, row: usize, result_type: &str) -> Result<PartitionValue> {
    if array.is_null(row) {
        return Ok(PartitionValue::Null);
    }
    let v = match array.data_type() {
        DataType::Boolean => PartitionValue::Boolean(array.as_boolean().value(row)),
        DataType::Int32 => PartitionValue::Int(array.as_primitive::<Int32Type>().value(row)),
        DataType::Date32 => PartitionValue::Int(array.as_primitive::<Date32Type>().value(row)),
        DataType::Int64 => PartitionValue::Long(array.as_primitive::<Int64Type>().value(row)),
        DataType::Float32 => PartitionValue::Float(array.as_primitive::<Float32Type>().value(row)),
        DataType::Float64 => PartitionValue::Double(array.as_primitive::<Float64Type>().value(row)),
        DataType::Time64(TimeUnit::Microsecond) => {
            PartitionValue::Long(array.as_primitive::<Time64MicrosecondType>().value(row))
        }
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            PartitionValue::Long(array.as_primitive::<TimestampMicrosecondType>().value(row))
        }
        DataType::Timestamp(TimeUnit::Nanosecond, _) => {
            PartitionValue::Long(array.as_primitive::<TimestampNanosecondType>().value(row))
        }
        DataType::Utf8 => PartitionValue::String(array.as_string::<i32>().value(row).to_string()),
        DataType::Binary => PartitionValue::Bytes(array.as_binary::<i32>().value(row).to_vec()),
        DataType::FixedSizeBinary(_) => {
            PartitionValue::Fixed(array.as_fixed_size_binary().value(row).to_vec())
        }
        DataType::Decimal128(_, _) => {
            let size = avro_type(result_type)?
                .get("size")
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(16) as usize;
            let unscaled = array.as_primitive::<Decimal128Type>().value(row);
            let be = unscaled.to_be_bytes();
            PartitionValue::Fixed(be[16 - size.min(16)..].to_vec())
        }
        other => {
            return Err(Error::not_implemented(format!(
                "partition values of type {other} are not supported"
            )));
        }
    };
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iceberg::arrow::schema::arrow_schema;
    use crate::iceberg::metadata::PartitionField;
    use crate::maintain::compact::model::partition_text;

    fn schema() -> Arc<Schema> {
        arrow_schema(
            &serde_json::json!({"type": "struct", "fields": [
                {"id": 1, "name": "id", "required": false, "type": "long"},
                {"id": 2, "name": "ts", "required": false, "type": "timestamp"},
                {"id": 3, "name": "s", "required": false, "type": "string"},
                {"id": 4, "name": "d", "required": false, "type": "decimal(9,2)"},
                {"id": 5, "name": "n", "required": false, "type":
                    {"type": "struct", "fields": [{"id": 6, "name": "x", "required": false, "type": "int"}]}}
            ]}),
            false,
        )
        .unwrap()
    }

    fn spec(id: i32, fields: &[(&str, &str, i32)]) -> PartitionSpec {
        PartitionSpec {
            spec_id: id,
            fields: fields
                .iter()
                .enumerate()
                .map(|(i, (name, transform, source))| PartitionField {
                    name: name.to_string(),
                    transform: transform.to_string(),
                    source_id: *source,
                    field_id: 1000 + i as i32,
                })
                .collect(),
        }
    }

    fn rec(values: Vec<(&str, PartitionValue)>) -> PartitionTuple {
        PartitionTuple::new(
            values
                .into_iter()
                .map(|(n, v)| (n.to_string(), v))
                .collect(),
        )
    }

    #[test]
    fn rows_take_the_default_specs_partition() {
        let s = schema();
        let out = OutputSpec::new(
            &spec(
                1,
                &[
                    ("id_bucket", "bucket[16]", 1),
                    ("ts_day", "day", 2),
                    ("s_trunc", "truncate[3]", 3),
                    ("x", "identity", 6),
                ],
            ),
            &["int".into(), "date".into(), "string".into(), "int".into()],
            &s,
        )
        .unwrap();
        let ts = 1_510_871_468_000_000i64; // 2017-11-16T22:31:08
        let n = arrow_array::StructArray::try_new(
            match s.field(4).data_type() {
                DataType::Struct(f) => f.clone(),
                _ => unreachable!(),
            },
            vec![Arc::new(Int32Array::from(vec![Some(5), Some(6)]))],
            Some(vec![true, false].into()),
        )
        .unwrap();
        let batch = RecordBatch::try_new(
            s.clone(),
            vec![
                Arc::new(Int64Array::from(vec![Some(34), None])),
                Arc::new(TimestampMicrosecondArray::from(vec![Some(ts), Some(-1)])),
                Arc::new(StringArray::from(vec!["iceberg", "ic"])),
                Arc::new(
                    Decimal128Array::from(vec![1420i128, 1])
                        .with_precision_and_scale(9, 2)
                        .unwrap(),
                ),
                Arc::new(n),
            ],
        )
        .unwrap();
        let keys = out.keys(&batch).unwrap();
        let first = out.tuple(&keys, 0).unwrap();
        assert_eq!(
            first,
            rec(vec![
                ("id_bucket", PartitionValue::Int(3)),
                ("ts_day", PartitionValue::Int(17486)),
                ("s_trunc", PartitionValue::String("ice".into())),
                ("x", PartitionValue::Int(5)),
            ])
        );
        // A null id, a time before the epoch, and a null parent struct (its field is null).
        let second = out.tuple(&keys, 1).unwrap();
        assert_eq!(
            partition_text(&second),
            "id_bucket=null/ts_day=-1/s_trunc=ic/x=null"
        );
        assert_eq!(out.path_fields()[1].transform, "day");
        // A transform that does not apply to its source's type is refused up front.
        let bad = OutputSpec::new(&spec(2, &[("h", "hour", 3)]), &["int".into()], &s);
        assert!(bad.is_err());
        let dec = OutputSpec::new(
            &spec(3, &[("d", "truncate[50]", 4)]),
            &["decimal(9,2)".into()],
            &s,
        )
        .unwrap();
        let k = dec.keys(&batch).unwrap();
        assert_eq!(
            dec.tuple(&k, 0).unwrap(),
            rec(vec![("d", PartitionValue::Fixed(vec![0, 0, 0x05, 0x78]))]),
            "14.20 truncated by 0.50 = 14.00, unscaled 1400, in decimal(9,2)'s 4 bytes"
        );
    }

    #[test]
    fn old_tuples_decide_the_new_one_when_they_can() {
        let s = schema();
        let out = OutputSpec::new(
            &spec(
                2,
                &[
                    ("id_bucket", "bucket[16]", 1),
                    ("ts_month", "month", 2),
                    ("gone", "void", 3),
                ],
            ),
            &["int".into(), "int".into(), "string".into()],
            &s,
        )
        .unwrap();
        // identity(id) and day(ts): bucket of the identity value, month of the day.
        let old = spec(0, &[("id", "identity", 1), ("ts_day", "day", 2)]);
        let p = rec(vec![
            ("id", PartitionValue::Long(34)),
            ("ts_day", PartitionValue::Int(17486)),
        ]);
        assert_eq!(
            out.derive(&old, &p),
            Some(rec(vec![
                ("id_bucket", PartitionValue::Int(3)),
                ("ts_month", PartitionValue::Int(47 * 12 + 10)),
                ("gone", PartitionValue::Null),
            ]))
        );
        // Same transforms are copied; hour gives month; nulls stay null.
        let old = spec(1, &[("b", "bucket[16]", 1), ("h", "hour", 2)]);
        let p = rec(vec![
            ("b", PartitionValue::Int(7)),
            ("h", PartitionValue::Null),
        ]);
        assert_eq!(
            partition_text(&out.derive(&old, &p).unwrap()),
            "id_bucket=7/ts_month=null/gone=null"
        );
        // A finer new transform, another bucket count, or an unpartitioned source: rows split.
        let finer = OutputSpec::new(&spec(3, &[("h", "hour", 2)]), &["int".into()], &s).unwrap();
        let old = spec(0, &[("ts_day", "day", 2)]);
        assert_eq!(
            finer.derive(&old, &rec(vec![("ts_day", PartitionValue::Int(1))])),
            None
        );
        let old = spec(1, &[("b", "bucket[8]", 1), ("h", "hour", 2)]);
        assert_eq!(
            out.derive(
                &old,
                &rec(vec![
                    ("b", PartitionValue::Int(1)),
                    ("h", PartitionValue::Int(1))
                ])
            ),
            None
        );
        assert_eq!(out.derive(&spec(4, &[]), &PartitionTuple::default()), None);
        // Identity of a decimal and of a timestamp go through their Avro forms.
        let t = OutputSpec::new(
            &spec(5, &[("d", "truncate[50]", 4), ("y", "year", 2)]),
            &["decimal(9,2)".into(), "int".into()],
            &s,
        )
        .unwrap();
        let old = spec(0, &[("d", "identity", 4), ("ts", "identity", 2)]);
        let p = rec(vec![
            ("d", PartitionValue::Fixed(vec![0, 0, 0x05, 0x8c])),
            ("ts", PartitionValue::Long(1_510_871_468_000_000)),
        ]);
        assert_eq!(
            t.derive(&old, &p),
            Some(rec(vec![
                ("d", PartitionValue::Fixed(vec![0, 0, 0x05, 0x78])),
                ("y", PartitionValue::Int(47))
            ]))
        );
    }
}
