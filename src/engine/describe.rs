//! `DESCRIBE TABLE` of an Iceberg table: its current schema's columns with the ClickHouse types
//! ClickHouse itself gives Iceberg types (checked against ClickHouse's own `DESCRIBE` of the same
//! tables), in ClickHouse's seven `DESCRIBE` columns.

use serde_json::Value as Json;

use crate::error::{Error, Result};
use crate::format::{Value, describe_row};
use crate::iceberg::metadata::TableMetadata;

/// The rows of the current schema of `metadata`.
pub fn table_rows(metadata: &TableMetadata) -> Result<Vec<Vec<Value>>> {
    let current = metadata.current_schema_id();
    let schema = metadata
        .schemas()
        .iter()
        .find(|s| s.get("schema-id").and_then(Json::as_i64) == Some(i64::from(current)))
        .ok_or_else(|| {
            Error::incorrect_data(format!("the metadata has no schema with id {current}"))
        })?;
    fields(schema)?
        .iter()
        .map(|field| {
            let name = field
                .get("name")
                .and_then(Json::as_str)
                .ok_or_else(|| Error::incorrect_data("a schema field has no name".to_string()))?;
            Ok(describe_row(name, field_type(field, 0)?))
        })
        .collect()
}

fn fields(schema: &Json) -> Result<&Vec<Json>> {
    schema
        .get("fields")
        .and_then(Json::as_array)
        .ok_or_else(|| Error::incorrect_data("a struct type has no fields".to_string()))
}

/// A field's type: `Nullable(...)` around an optional primitive (ClickHouse has no nullable
/// arrays, maps or tuples). `indent` is the tuple nesting depth (ClickHouse's pretty type names
/// put each tuple element on its own line, four spaces deeper).
fn field_type(field: &Json, indent: usize) -> Result<String> {
    let required = field
        .get("required")
        .and_then(Json::as_bool)
        .unwrap_or(false);
    let ty = field
        .get("type")
        .ok_or_else(|| Error::incorrect_data("a schema field has no type".to_string()))?;
    nullable(ty, !required, indent)
}

fn nullable(ty: &Json, optional: bool, indent: usize) -> Result<String> {
    let name = pretty_type(ty, indent)?;
    Ok(if optional && ty.is_string() {
        format!("Nullable({name})")
    } else {
        name
    })
}

/// The ClickHouse type of an Iceberg type (JSON form), as `DESCRIBE` prints it; `indent` is the
/// tuple nesting depth.
fn pretty_type(ty: &Json, indent: usize) -> Result<String> {
    if let Some(primitive) = ty.as_str() {
        return primitive_type(primitive);
    }
    let kind = ty.get("type").and_then(Json::as_str).unwrap_or_default();
    match kind {
        "struct" => {
            let pad = "    ".repeat(indent + 1);
            let parts: Result<Vec<String>> = fields(ty)?
                .iter()
                .map(|f| {
                    let name = f.get("name").and_then(Json::as_str).unwrap_or_default();
                    Ok(format!("{pad}{name} {}", field_type(f, indent + 1)?))
                })
                .collect();
            Ok(format!("Tuple(\n{})", parts?.join(",\n")))
        }
        "list" => {
            let required = ty
                .get("element-required")
                .and_then(Json::as_bool)
                .unwrap_or(false);
            let element = ty.get("element").unwrap_or(&Json::Null);
            Ok(format!("Array({})", nullable(element, !required, indent)?))
        }
        "map" => {
            let required = ty
                .get("value-required")
                .and_then(Json::as_bool)
                .unwrap_or(false);
            let key = pretty_type(ty.get("key").unwrap_or(&Json::Null), indent)?;
            let value = nullable(ty.get("value").unwrap_or(&Json::Null), !required, indent)?;
            Ok(format!("Map({key}, {value})"))
        }
        _ => Err(Error::incorrect_data(format!("unknown Iceberg type {ty}"))),
    }
}

fn primitive_type(name: &str) -> Result<String> {
    let simple = match name {
        "boolean" => "Bool",
        "int" => "Int32",
        "long" => "Int64",
        "float" => "Float32",
        "double" => "Float64",
        "date" => "Date32",
        "time" => "Int64",
        "timestamp" => "DateTime64(6)",
        "timestamptz" => "DateTime64(6, 'UTC')",
        "timestamp_ns" => "DateTime64(9)",
        "timestamptz_ns" => "DateTime64(9, 'UTC')",
        "string" | "binary" => "String",
        "uuid" => "UUID",
        _ => "",
    };
    if !simple.is_empty() {
        return Ok(simple.to_string());
    }
    if let Some(len) = name
        .strip_prefix("fixed[")
        .and_then(|r| r.strip_suffix(']'))
    {
        return Ok(format!("FixedString({})", len.trim()));
    }
    if let Some(args) = name
        .strip_prefix("decimal(")
        .and_then(|r| r.strip_suffix(')'))
    {
        let parts: Vec<&str> = args.split(',').map(str::trim).collect();
        if let [p, s] = parts.as_slice() {
            return Ok(format!("Decimal({p}, {s})"));
        }
    }
    Err(Error::incorrect_data(format!(
        "unknown Iceberg type {name}"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn primitives_and_nesting_map_as_clickhouse_maps_them() {
        let cases = [
            (json!("long"), "Int64"),
            (json!("decimal(10, 2)"), "Decimal(10, 2)"),
            (json!("fixed[16]"), "FixedString(16)"),
            (json!("timestamptz"), "DateTime64(6, 'UTC')"),
            (
                json!({"type":"list","element-id":3,"element":"int","element-required":false}),
                "Array(Nullable(Int32))",
            ),
            (
                json!({"type":"map","key-id":4,"key":"string","value-id":5,"value":"double","value-required":true}),
                "Map(String, Float64)",
            ),
            (
                json!({"type":"struct","fields":[{"id":6,"name":"a","required":true,"type":"int"},
                    {"id":7,"name":"b","required":false,"type":"string"}]}),
                "Tuple(\n    a Int32,\n    b Nullable(String))",
            ),
        ];
        for (ty, expected) in cases {
            assert_eq!(pretty_type(&ty, 0).unwrap(), expected, "{ty}");
        }
        assert!(pretty_type(&json!("variant2"), 0).is_err());
    }
}
