//! Arrow result columns as [`Value`] cells, printed as ClickHouse prints each type: `DateTime`
//! and `DateTime64(3)` in the session time zone, `Date` as `YYYY-MM-DD`, and the composite types
//! as in its TSV output — maps `{'k':'v'}`, arrays `[1,2]`, tuples `(1,'a')`, strings and
//! date-times inside them single-quoted with `\` escapes, `NULL` bare.

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type,
    Int64Type, TimeUnit, TimestampMillisecondType, TimestampSecondType, UInt8Type, UInt16Type,
    UInt32Type, UInt64Type,
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
            let ms = column.as_primitive::<TimestampMillisecondType>().value(i);
            Value::Str(zone.format_ms(ms))
        }
        DataType::Timestamp(TimeUnit::Second, _) => {
            let seconds = column.as_primitive::<TimestampSecondType>().value(i);
            match seconds.checked_mul(1000) {
                Some(ms) => Value::Str(zone.format_seconds(ms)),
                None => Value::Str(seconds.to_string()),
            }
        }
        DataType::Date32 => {
            let days = column.as_primitive::<Date32Type>().value(i);
            match chrono::NaiveDate::from_num_days_from_ce_opt(days.saturating_add(719_163)) {
                Some(date) => Value::Str(date.format("%Y-%m-%d").to_string()),
                None => Value::Str(days.to_string()),
            }
        }
        DataType::Map(..) | DataType::List(_) | DataType::LargeList(_) | DataType::Struct(_) => {
            Value::Str(composite(column, i, zone)?)
        }
        DataType::Decimal128(_, scale) => {
            let raw = column.as_primitive::<Decimal128Type>().value(i);
            match (scale, i64::try_from(raw)) {
                (0, Ok(whole)) => Value::Int(whole),
                _ => display(column, i)?,
            }
        }
        _ => display(column, i)?,
    })
}

/// A map, array or tuple as ClickHouse prints it in TSV.
fn composite(column: &ArrayRef, i: usize, zone: &SessionTimeZone) -> Result<String> {
    Ok(match column.data_type() {
        DataType::Map(..) => {
            let entries = column.as_map().value(i);
            let (keys, values) = (entries.column(0), entries.column(1));
            let parts: Vec<String> = (0..entries.len())
                .map(|j| {
                    Ok(format!(
                        "{}:{}",
                        nested(keys, j, zone)?,
                        nested(values, j, zone)?
                    ))
                })
                .collect::<Result<_>>()?;
            format!("{{{}}}", parts.join(","))
        }
        DataType::List(_) => items(&column.as_list::<i32>().value(i), zone, '[', ']')?,
        DataType::LargeList(_) => items(&column.as_list::<i64>().value(i), zone, '[', ']')?,
        DataType::Struct(_) => {
            let row = column.as_struct();
            let parts: Vec<String> = row
                .columns()
                .iter()
                .map(|field| nested(field, i, zone))
                .collect::<Result<_>>()?;
            format!("({})", parts.join(","))
        }
        _ => display(column, i)?.plain(),
    })
}

fn items(values: &ArrayRef, zone: &SessionTimeZone, open: char, close: char) -> Result<String> {
    let parts: Vec<String> = (0..values.len())
        .map(|j| nested(values, j, zone))
        .collect::<Result<_>>()?;
    Ok(format!("{open}{}{close}", parts.join(",")))
}

/// A value inside a map, array or tuple: composites nested, text quoted.
fn nested(column: &ArrayRef, i: usize, zone: &SessionTimeZone) -> Result<String> {
    if column.is_null(i) {
        return Ok("NULL".to_string());
    }
    Ok(match cell(column, i, zone)? {
        Value::Str(text) if is_composite(column.data_type()) => text,
        Value::Str(text) => format!("'{}'", text.replace('\\', "\\\\").replace('\'', "\\'")),
        other => other.plain(),
    })
}

fn is_composite(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Map(..) | DataType::List(_) | DataType::LargeList(_) | DataType::Struct(_)
    )
}

fn display(column: &ArrayRef, i: usize) -> Result<Value> {
    let options = FormatOptions::default().with_null("NULL");
    let formatter = ArrayFormatter::try_new(column.as_ref(), &options)
        .map_err(|e| Error::logical(format!("printing a {} value: {e}", column.data_type())))?;
    Ok(Value::Str(formatter.value(i).to_string()))
}
