//! Arrow result columns as [`Value`] cells, printed as ClickHouse prints each type: date-times
//! in the session time zone, maps as `{'k':'v'}`.

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, MapArray, RecordBatch, TimestampMillisecondArray,
};
use datafusion::arrow::datatypes::{
    DataType, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, TimeUnit,
    UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};

use crate::error::{Error, Result};
use crate::format::Value;
use crate::time_zone::SessionTimeZone;

/// Every row of `batches`.
pub(super) fn rows(batches: &[RecordBatch], zone: &SessionTimeZone) -> Result<Vec<Vec<Value>>> {
    let mut rows = Vec::new();
    for batch in batches {
        let start = rows.len();
        rows.extend((0..batch.num_rows()).map(|_| Vec::with_capacity(batch.num_columns())));
        for column in batch.columns() {
            for (i, row) in rows[start..].iter_mut().enumerate() {
                row.push(cell(column, i, zone)?);
            }
        }
    }
    Ok(rows)
}

fn cell(column: &ArrayRef, i: usize, zone: &SessionTimeZone) -> Result<Value> {
    if column.is_null(i) {
        return Ok(Value::Null);
    }
    Ok(match column.data_type() {
        DataType::Boolean => Value::Bool(column.as_boolean().value(i)),
        DataType::Int8 => Value::Int(column.as_primitive::<Int8Type>().value(i).into()),
        DataType::Int16 => Value::Int(column.as_primitive::<Int16Type>().value(i).into()),
        DataType::Int32 => Value::Int(column.as_primitive::<Int32Type>().value(i).into()),
        DataType::Int64 => Value::Int(column.as_primitive::<Int64Type>().value(i)),
        DataType::UInt8 => Value::UInt(column.as_primitive::<UInt8Type>().value(i).into()),
        DataType::UInt16 => Value::UInt(column.as_primitive::<UInt16Type>().value(i).into()),
        DataType::UInt32 => Value::UInt(column.as_primitive::<UInt32Type>().value(i).into()),
        DataType::UInt64 => Value::UInt(column.as_primitive::<UInt64Type>().value(i)),
        DataType::Float32 => Value::Float(column.as_primitive::<Float32Type>().value(i).into()),
        DataType::Float64 => Value::Float(column.as_primitive::<Float64Type>().value(i)),
        DataType::Utf8 => Value::Str(column.as_string::<i32>().value(i).to_string()),
        DataType::LargeUtf8 => Value::Str(column.as_string::<i64>().value(i).to_string()),
        DataType::Utf8View => Value::Str(column.as_string_view().value(i).to_string()),
        DataType::Timestamp(TimeUnit::Millisecond, _) => {
            let ms = column
                .as_any()
                .downcast_ref::<TimestampMillisecondArray>()
                .map(|a| a.value(i));
            match ms {
                Some(ms) => Value::Str(zone.format_ms(ms)),
                None => display(column, i)?,
            }
        }
        DataType::Map(..) => match column.as_any().downcast_ref::<MapArray>() {
            Some(map) => Value::Str(map_text(map, i, zone)?),
            None => display(column, i)?,
        },
        _ => display(column, i)?,
    })
}

/// A `Map` as ClickHouse prints it: `{'k':'v',...}`, strings quoted and escaped.
fn map_text(map: &MapArray, i: usize, zone: &SessionTimeZone) -> Result<String> {
    let entries = map.value(i);
    let (keys, values) = (entries.column(0), entries.column(1));
    let mut parts = Vec::with_capacity(entries.len());
    for j in 0..entries.len() {
        parts.push(format!(
            "{}:{}",
            quoted(&cell(keys, j, zone)?),
            quoted(&cell(values, j, zone)?)
        ));
    }
    Ok(format!("{{{}}}", parts.join(",")))
}

fn quoted(value: &Value) -> String {
    match value {
        Value::Str(s) => format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'")),
        other => other.plain(),
    }
}

fn display(column: &ArrayRef, i: usize) -> Result<Value> {
    let options = FormatOptions::default().with_null("NULL");
    let formatter = ArrayFormatter::try_new(column.as_ref(), &options)
        .map_err(|e| Error::logical(format!("printing a {} value: {e}", column.data_type())))?;
    Ok(Value::Str(formatter.value(i).to_string()))
}
