//! ClickHouse type names of Arrow fields: `Nullable(…)` around a nullable scalar, `Map(K, V)`,
//! `Array(T)`, `Tuple(…)` (named elements as `name Type`, DataFusion's positional `c0, c1 …` without
//! names), `DateTime` for seconds and `DateTime64(p)` for finer instants, `Date`.

use datafusion::arrow::datatypes::{DataType, Field, TimeUnit};

/// The ClickHouse type name of an Arrow field.
pub fn clickhouse_type(field: &Field) -> String {
    let inner = type_name(field.data_type());
    let wraps = !matches!(
        field.data_type(),
        DataType::Map(..) | DataType::List(_) | DataType::LargeList(_) | DataType::Struct(_)
    );
    if field.is_nullable() && wraps {
        format!("Nullable({inner})")
    } else {
        inner
    }
}

fn type_name(data_type: &DataType) -> String {
    match data_type {
        DataType::Boolean => "Bool".into(),
        DataType::Int8 => "Int8".into(),
        DataType::Int16 => "Int16".into(),
        DataType::Int32 => "Int32".into(),
        DataType::Int64 => "Int64".into(),
        DataType::UInt8 => "UInt8".into(),
        DataType::UInt16 => "UInt16".into(),
        DataType::UInt32 => "UInt32".into(),
        DataType::UInt64 => "UInt64".into(),
        DataType::Float32 => "Float32".into(),
        DataType::Float64 => "Float64".into(),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "String".into(),
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => "String".into(),
        DataType::Timestamp(TimeUnit::Second, _) => "DateTime".into(),
        DataType::Timestamp(TimeUnit::Millisecond, _) => "DateTime64(3)".into(),
        DataType::Timestamp(TimeUnit::Microsecond, _) => "DateTime64(6)".into(),
        DataType::Timestamp(TimeUnit::Nanosecond, _) => "DateTime64(9)".into(),
        DataType::Date32 | DataType::Date64 => "Date".into(),
        DataType::Map(entries, _) => match entries.data_type() {
            DataType::Struct(kv) if kv.len() == 2 => format!(
                "Map({}, {})",
                type_name(kv[0].data_type()),
                clickhouse_type(&kv[1])
            ),
            other => type_name(other),
        },
        DataType::List(item) | DataType::LargeList(item) => {
            format!("Array({})", clickhouse_type(item))
        }
        DataType::Struct(fields) => {
            let positional = fields
                .iter()
                .enumerate()
                .all(|(i, f)| *f.name() == format!("c{i}"));
            let parts: Vec<String> = fields
                .iter()
                .map(|f| match positional {
                    true => clickhouse_type(f),
                    false => format!("{} {}", f.name(), clickhouse_type(f)),
                })
                .collect();
            format!("Tuple({})", parts.join(", "))
        }
        DataType::Null => "Nullable(Nothing)".into(),
        DataType::Decimal128(precision, scale) | DataType::Decimal256(precision, scale) => {
            format!("Decimal({precision}, {scale})")
        }
        other => other.to_string(),
    }
}
