//! The shape of a `DESCRIBE` result, as ClickHouse prints it: seven String columns, of which
//! icetrim fills `name` and `type`.

use super::{Column, Value};

/// ClickHouse's `DESCRIBE` columns.
pub fn describe_columns() -> Vec<Column> {
    [
        "name",
        "type",
        "default_type",
        "default_expression",
        "comment",
        "codec_expression",
        "ttl_expression",
    ]
    .into_iter()
    .map(|n| Column::new(n, "String"))
    .collect()
}

/// One `DESCRIBE` row: a column's name and type, the rest empty.
pub fn describe_row(name: &str, type_name: String) -> Vec<Value> {
    let mut row = vec![Value::from(name), Value::Str(type_name)];
    row.extend(std::iter::repeat_n(Value::from(""), 5));
    row
}
