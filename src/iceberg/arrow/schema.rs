//! The table schema as an Arrow schema with Iceberg field ids (`PARQUET:field_id` on every field,
//! so the Parquet writer puts them in the file schema), and the adaptation of a batch read from an
//! input file (any older schema: columns matched by field id, missing ones null, promoted types
//! cast) to it.
//!
//! Type mapping (Iceberg spec, "Parquet" appendix): boolean, int (Int32), long (Int64), float,
//! double, decimal(P,S) (Decimal128), date (Date32), time (Time64 µs), timestamp / timestamptz
//! (Timestamp µs, without / with UTC), timestamp_ns / timestamptz_ns (Timestamp ns), string
//! (Utf8), uuid (FixedSizeBinary(16)), fixed[L] (FixedSizeBinary(L)), binary, struct, list
//! (element `element`), map (entries `key_value` with `key`, `value`). `variant`, `geometry`,
//! `geography` and `unknown` are refused with `NOT_IMPLEMENTED`.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, ListArray, MapArray, RecordBatch, StructArray, make_array, new_null_array,
};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Field, FieldRef, Fields, Schema, SchemaRef, TimeUnit};
use parquet::arrow::PARQUET_FIELD_ID_META_KEY;
use serde_json::Value as Json;

use crate::error::{Error, Result};

/// `_row_id` (v3 row lineage).
pub const ROW_ID_FIELD: i32 = 2_147_483_540;
/// `_last_updated_sequence_number` (v3 row lineage).
pub const LAST_UPDATED_FIELD: i32 = 2_147_483_539;

/// The field id an Arrow field carries, if any.
pub fn field_id(field: &Field) -> Option<i32> {
    field
        .metadata()
        .get(PARQUET_FIELD_ID_META_KEY)
        .and_then(|v| v.parse().ok())
}

fn with_id(name: &str, ty: DataType, nullable: bool, id: i32) -> Field {
    Field::new(name, ty, nullable).with_metadata(HashMap::from([(
        PARQUET_FIELD_ID_META_KEY.to_string(),
        id.to_string(),
    )]))
}

/// The Arrow schema of the Iceberg schema JSON `schema`; with `row_lineage`, the two v3 lineage
/// columns are appended.
pub fn arrow_schema(schema: &Json, row_lineage: bool) -> Result<SchemaRef> {
    let mut fields = struct_fields(schema)?;
    if row_lineage {
        fields.push(Arc::new(with_id(
            "_row_id",
            DataType::Int64,
            true,
            ROW_ID_FIELD,
        )));
        fields.push(Arc::new(with_id(
            "_last_updated_sequence_number",
            DataType::Int64,
            true,
            LAST_UPDATED_FIELD,
        )));
    }
    Ok(Arc::new(Schema::new(fields)))
}

fn bad(m: String) -> Error {
    Error::incorrect_data(format!("table schema: {m}"))
}

fn struct_fields(node: &Json) -> Result<Vec<FieldRef>> {
    let fields = node
        .get("fields")
        .and_then(Json::as_array)
        .ok_or_else(|| bad("a struct without fields".into()))?;
    fields
        .iter()
        .map(|f| {
            let name = f
                .get("name")
                .and_then(Json::as_str)
                .ok_or_else(|| bad("a field without a name".into()))?;
            let id = f
                .get("id")
                .and_then(Json::as_i64)
                .and_then(|v| i32::try_from(v).ok())
                .ok_or_else(|| bad(format!("field '{name}' has no id")))?;
            let required = f.get("required").and_then(Json::as_bool).unwrap_or(false);
            // v3 default values: a file without the column reads as the default, which this
            // rewrite (filling missing columns with nulls) would not write.
            if f.get("initial-default").is_some_and(|d| !d.is_null()) {
                return Err(Error::not_implemented(format!(
                    "compaction cannot rewrite tables whose column '{name}' has an initial-default (v3 default \
                     values) yet"
                )));
            }
            let ty = f
                .get("type")
                .ok_or_else(|| bad(format!("field '{name}' has no type")))?;
            Ok(Arc::new(with_id(name, data_type(ty)?, !required, id)))
        })
        .collect()
}

fn id_of(node: &Json, key: &str) -> Result<i32> {
    node.get(key)
        .and_then(Json::as_i64)
        .and_then(|v| i32::try_from(v).ok())
        .ok_or_else(|| bad(format!("'{key}' missing")))
}

/// The Arrow type of an Iceberg type.
pub fn data_type(ty: &Json) -> Result<DataType> {
    if let Some(text) = ty.as_str() {
        return primitive(text);
    }
    match ty.get("type").and_then(Json::as_str) {
        Some("struct") => Ok(DataType::Struct(Fields::from(struct_fields(ty)?))),
        Some("list") => {
            let element = ty
                .get("element")
                .ok_or_else(|| bad("list element".into()))?;
            let required = ty
                .get("element-required")
                .and_then(Json::as_bool)
                .unwrap_or(false);
            let field = with_id(
                "element",
                data_type(element)?,
                !required,
                id_of(ty, "element-id")?,
            );
            Ok(DataType::List(Arc::new(field)))
        }
        Some("map") => {
            let key = ty.get("key").ok_or_else(|| bad("map key".into()))?;
            let value = ty.get("value").ok_or_else(|| bad("map value".into()))?;
            let required = ty
                .get("value-required")
                .and_then(Json::as_bool)
                .unwrap_or(false);
            let key = with_id("key", data_type(key)?, false, id_of(ty, "key-id")?);
            let value = with_id(
                "value",
                data_type(value)?,
                !required,
                id_of(ty, "value-id")?,
            );
            let entries = Field::new(
                "key_value",
                DataType::Struct(Fields::from(vec![key, value])),
                false,
            );
            Ok(DataType::Map(Arc::new(entries), false))
        }
        _ => Err(bad(format!("unknown type {ty}"))),
    }
}

fn primitive(text: &str) -> Result<DataType> {
    Ok(match text {
        "boolean" => DataType::Boolean,
        "int" => DataType::Int32,
        "long" => DataType::Int64,
        "float" => DataType::Float32,
        "double" => DataType::Float64,
        "date" => DataType::Date32,
        "time" => DataType::Time64(TimeUnit::Microsecond),
        "timestamp" => DataType::Timestamp(TimeUnit::Microsecond, None),
        "timestamptz" => DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into())),
        "timestamp_ns" => DataType::Timestamp(TimeUnit::Nanosecond, None),
        "timestamptz_ns" => DataType::Timestamp(TimeUnit::Nanosecond, Some("+00:00".into())),
        "string" => DataType::Utf8,
        "uuid" => DataType::FixedSizeBinary(16),
        "binary" => DataType::Binary,
        other => {
            if let Some(len) = other
                .strip_prefix("fixed[")
                .and_then(|s| s.strip_suffix(']'))
                .and_then(|s| s.trim().parse::<i32>().ok())
            {
                return Ok(DataType::FixedSizeBinary(len));
            }
            if let Some((p, s)) = other
                .strip_prefix("decimal(")
                .and_then(|s| s.strip_suffix(')'))
                .and_then(|s| s.split_once(','))
            {
                let p: u8 = p.trim().parse().map_err(|_| bad(format!("'{other}'")))?;
                let s: i8 = s.trim().parse().map_err(|_| bad(format!("'{other}'")))?;
                return Ok(DataType::Decimal128(p, s));
            }
            return Err(Error::not_implemented(format!(
                "compaction cannot rewrite columns of type '{other}' yet (variant, geometry, \
                 geography and unknown are not supported)"
            )));
        }
    })
}

/// The column of field `id` in `columns` (described by `fields`): a top-level column or a field
/// nested in structs (never inside a list or a map). A field whose parent struct is null is null.
pub fn leaf_by_id(fields: &Fields, columns: &[ArrayRef], id: i32) -> Option<ArrayRef> {
    for (f, c) in fields.iter().zip(columns) {
        if field_id(f) == Some(id) {
            return Some(c.clone());
        }
        if let (DataType::Struct(children), Some(s)) =
            (f.data_type(), c.as_any().downcast_ref::<StructArray>())
            && let Some(found) = leaf_by_id(children, s.columns(), id)
        {
            return Some(with_parent_nulls(&found, s.nulls()));
        }
    }
    None
}

/// `child` with the nulls of its parent struct added.
fn with_parent_nulls(child: &ArrayRef, parent: Option<&NullBuffer>) -> ArrayRef {
    let Some(parent) = parent else {
        return child.clone();
    };
    let nulls = NullBuffer::union(Some(parent), child.nulls());
    child
        .to_data()
        .into_builder()
        .nulls(nulls)
        .build()
        .map(make_array)
        .unwrap_or_else(|_| child.clone())
}

/// The field of id `id` in `fields`, searched through structs (not lists or maps).
pub fn field_by_id(fields: &Fields, id: i32) -> Option<FieldRef> {
    for f in fields {
        if field_id(f) == Some(id) {
            return Some(f.clone());
        }
        if let DataType::Struct(children) = f.data_type()
            && let Some(found) = field_by_id(children, id)
        {
            return Some(found);
        }
    }
    None
}

/// `schema` projected to the fields `ids` (each a column or a field nested in structs): the
/// columns holding them, structs keeping only the children on the way; every field nullable.
pub fn project(schema: &Schema, ids: &[i32]) -> Schema {
    fn keep(f: &FieldRef, ids: &[i32]) -> Option<FieldRef> {
        if field_id(f).is_some_and(|id| ids.contains(&id)) {
            return Some(Arc::new(f.as_ref().clone().with_nullable(true)));
        }
        let DataType::Struct(children) = f.data_type() else {
            return None;
        };
        let kept: Vec<FieldRef> = children.iter().filter_map(|c| keep(c, ids)).collect();
        (!kept.is_empty()).then(|| {
            Arc::new(
                f.as_ref()
                    .clone()
                    .with_data_type(DataType::Struct(Fields::from(kept)))
                    .with_nullable(true),
            )
        })
    }
    Schema::new(
        schema
            .fields()
            .iter()
            .filter_map(|f| keep(f, ids))
            .collect::<Vec<_>>(),
    )
}

/// `batch` (read from an input file) in `target`'s shape: fields matched by id.
pub fn adapt_batch(batch: &RecordBatch, target: &SchemaRef) -> Result<RecordBatch> {
    let source = batch.schema();
    let columns = target
        .fields()
        .iter()
        .map(|t| {
            let found = field_id(t)
                .and_then(|id| source.fields().iter().position(|s| field_id(s) == Some(id)));
            adapt(
                found.map(|i| (batch.column(i), source.field(i))),
                t,
                batch.num_rows(),
            )
        })
        .collect::<Result<Vec<_>>>()?;
    RecordBatch::try_new(target.clone(), columns)
        .map_err(|e| Error::incorrect_data(format!("adapting a batch to the table schema: {e}")))
}

fn adapt(source: Option<(&ArrayRef, &Field)>, target: &Field, len: usize) -> Result<ArrayRef> {
    let Some((array, _)) = source else {
        return Ok(new_null_array(target.data_type(), len));
    };
    let err = |e: String| {
        Error::incorrect_data(format!(
            "column '{}' (field id {:?}): {e}",
            target.name(),
            field_id(target)
        ))
    };
    match (target.data_type(), array.data_type()) {
        (DataType::Struct(t_fields), DataType::Struct(s_fields)) => {
            let s = array
                .as_any()
                .downcast_ref::<StructArray>()
                .ok_or_else(|| err("not a struct".into()))?;
            let children = t_fields
                .iter()
                .map(|t| {
                    let found = field_id(t)
                        .and_then(|id| s_fields.iter().position(|f| field_id(f) == Some(id)));
                    adapt(found.map(|i| (s.column(i), &*s_fields[i])), t, len)
                })
                .collect::<Result<Vec<_>>>()?;
            let out = StructArray::try_new(t_fields.clone(), children, s.nulls().cloned())
                .map_err(|e| err(e.to_string()))?;
            Ok(Arc::new(out))
        }
        (DataType::List(t_elem), DataType::List(_) | DataType::LargeList(_)) => {
            let list = if let DataType::LargeList(_) = array.data_type() {
                arrow_cast::cast(array, &DataType::List(s_elem_of(array)))
                    .map_err(|e| err(e.to_string()))?
            } else {
                array.clone()
            };
            let l = list
                .as_any()
                .downcast_ref::<ListArray>()
                .ok_or_else(|| err("not a list".into()))?;
            let DataType::List(s_elem) = l.data_type() else {
                return Err(err("not a list".into()));
            };
            let values = adapt(Some((l.values(), s_elem)), t_elem, l.values().len())?;
            let out = ListArray::try_new(
                t_elem.clone(),
                l.offsets().clone(),
                values,
                l.nulls().cloned(),
            )
            .map_err(|e| err(e.to_string()))?;
            Ok(Arc::new(out))
        }
        (DataType::Map(t_entries, sorted), DataType::Map(_, _)) => {
            let m = array
                .as_any()
                .downcast_ref::<MapArray>()
                .ok_or_else(|| err("not a map".into()))?;
            let DataType::Struct(t_kv) = t_entries.data_type() else {
                return Err(err("map entries".into()));
            };
            let entries = m.entries();
            let keys = adapt(
                Some((entries.column(0), &*entries.fields()[0])),
                &t_kv[0],
                entries.len(),
            )?;
            let values = adapt(
                Some((entries.column(1), &*entries.fields()[1])),
                &t_kv[1],
                entries.len(),
            )?;
            let kv = StructArray::try_new(t_kv.clone(), vec![keys, values], None)
                .map_err(|e| err(e.to_string()))?;
            let out = MapArray::try_new(
                t_entries.clone(),
                m.offsets().clone(),
                kv,
                m.nulls().cloned(),
                *sorted,
            )
            .map_err(|e| err(e.to_string()))?;
            Ok(Arc::new(out))
        }
        (t, s) if t == s => Ok(array.clone()),
        (t, _) => arrow_cast::cast(array, t).map_err(|e| err(e.to_string())),
    }
}

fn s_elem_of(array: &ArrayRef) -> FieldRef {
    match array.data_type() {
        DataType::LargeList(f) | DataType::List(f) => f.clone(),
        _ => Arc::new(Field::new("element", DataType::Null, true)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int32Array, Int64Array, StringArray};

    #[test]
    fn every_iceberg_type_maps_and_variant_is_refused() {
        let schema = serde_json::json!({"type": "struct", "fields": [
            {"id": 1, "name": "b", "required": true, "type": "boolean"},
            {"id": 2, "name": "d", "required": false, "type": "decimal(10, 2)"},
            {"id": 3, "name": "u", "required": false, "type": "uuid"},
            {"id": 4, "name": "f", "required": false, "type": "fixed[3]"},
            {"id": 5, "name": "l", "required": false, "type":
                {"type": "list", "element-id": 6, "element": "int", "element-required": false}},
            {"id": 7, "name": "m", "required": false, "type":
                {"type": "map", "key-id": 8, "key": "string", "value-id": 9, "value": "long",
                 "value-required": false}},
            {"id": 10, "name": "s", "required": false, "type":
                {"type": "struct", "fields": [{"id": 11, "name": "x", "required": false, "type": "timestamptz"}]}}
        ]});
        let s = arrow_schema(&schema, true).unwrap();
        assert_eq!(s.fields().len(), 9);
        assert_eq!(field_id(s.field(0)), Some(1));
        assert!(!s.field(0).is_nullable());
        assert_eq!(s.field(1).data_type(), &DataType::Decimal128(10, 2));
        assert_eq!(field_id(s.field(8)), Some(LAST_UPDATED_FIELD));
        let v = serde_json::json!({"type": "struct", "fields": [
            {"id": 1, "name": "v", "required": false, "type": "variant"}]});
        let e = arrow_schema(&v, false).unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::NotImplemented);
        for t in ["geometry(srid:4326)", "geography", "unknown"] {
            let g = serde_json::json!({"type": "struct", "fields": [
                {"id": 1, "name": "g", "required": false, "type": t}]});
            assert!(arrow_schema(&g, false).is_err(), "{t}");
        }
        let d = serde_json::json!({"type": "struct", "fields": [
            {"id": 1, "name": "x", "required": false, "type": "int", "initial-default": 5}]});
        let e = arrow_schema(&d, true).unwrap_err();
        assert!(e.message().contains("initial-default"), "{}", e.message());
    }

    #[test]
    fn struct_fields_are_found_by_id_and_a_null_parent_nulls_them() {
        let x = with_id("x", DataType::Int64, true, 3);
        let y = with_id("y", DataType::Utf8, true, 4);
        let s_type = DataType::Struct(Fields::from(vec![x.clone(), y.clone()]));
        let schema = Schema::new(vec![
            with_id("id", DataType::Int64, false, 1),
            with_id("s", s_type.clone(), true, 2),
        ]);
        let s = StructArray::try_new(
            Fields::from(vec![x, y]),
            vec![
                Arc::new(Int64Array::from(vec![Some(1), Some(2), None])),
                Arc::new(StringArray::from(vec!["a", "b", "c"])),
            ],
            Some(vec![true, false, true].into()),
        )
        .unwrap();
        let columns: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(vec![7, 8, 9])), Arc::new(s)];
        let x = leaf_by_id(schema.fields(), &columns, 3).unwrap();
        let x = x.as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!(
            (x.value(0), x.is_null(1), x.is_null(2)),
            (1, true, true),
            "row 1: null parent; row 2: null field"
        );
        assert!(leaf_by_id(schema.fields(), &columns, 9).is_none());
        assert_eq!(
            field_by_id(schema.fields(), 4).map(|f| f.name().clone()),
            Some("y".into())
        );
        // Projected to s.y: `s` keeps only `y`, every field nullable; `id` is gone.
        let p = project(&schema, &[4]);
        assert_eq!(p.fields().len(), 1);
        let DataType::Struct(kept) = p.field(0).data_type() else {
            panic!("not a struct")
        };
        assert_eq!(kept.len(), 1);
        assert_eq!(field_id(&kept[0]), Some(4));
        assert!(project(&schema, &[1]).field(0).is_nullable());
    }

    #[test]
    fn batches_adapt_by_field_id() {
        // Input: an old schema (id 2 named "old", int) without id 3.
        let source = Arc::new(Schema::new(vec![
            with_id("old", DataType::Int32, true, 2),
            with_id("a", DataType::Utf8, true, 1),
        ]));
        let batch = RecordBatch::try_new(
            source,
            vec![
                Arc::new(Int32Array::from(vec![Some(1), None])),
                Arc::new(StringArray::from(vec!["x", "y"])),
            ],
        )
        .unwrap();
        let target = Arc::new(Schema::new(vec![
            with_id("a", DataType::Utf8, true, 1),
            with_id("renamed", DataType::Int64, true, 2),
            with_id("added", DataType::Int64, true, 3),
        ]));
        let out = adapt_batch(&batch, &target).unwrap();
        let promoted = out.column(1).as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!(promoted.value(0), 1);
        assert!(promoted.is_null(1));
        assert_eq!(out.column(2).null_count(), 2);
    }
}
