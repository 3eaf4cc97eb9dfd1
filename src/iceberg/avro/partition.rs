//! The partition tuple of a manifest: its Avro type derived from the partition spec and the table
//! schema, and the manifest-list field summaries computed from the tuples written.
//!
//! Result types per transform (Iceberg spec, "Partition Transforms"): identity, truncate and void keep
//! the source type; bucket, year, month and hour give `int`; day gives `date`. Partition fields are
//! optional, named by the spec field's name, with the spec field's `field-id`, in a record `r102`.
//! Bounds in summaries use the single-value binary serialization (spec Appendix D); decimal bounds are
//! left out (the field is optional).

use serde_json::{Value as Json, json};

use crate::error::{Error, Result};
use crate::iceberg::manifest_list::FieldSummary;
use crate::iceberg::partition_tuple::{PartitionTuple, PartitionValue};

/// One field of the partition tuple.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionField {
    pub name: String,
    pub field_id: i32,
    /// The Iceberg type of the transform result (`int`, `date`, `string`, `decimal(9,2)`, ...).
    pub result_type: String,
}

/// The partition fields of `spec_json` (a spec object with `fields`, or the bare array) resolved
/// against `table_schema_json` (an Iceberg schema object).
pub fn partition_fields(spec_json: &str, table_schema_json: &str) -> Result<Vec<PartitionField>> {
    let bad = |m: String| Error::bad_arguments(format!("partition spec: {m}"));
    let spec: Json = serde_json::from_str(spec_json).map_err(|e| bad(e.to_string()))?;
    let schema: Json = serde_json::from_str(table_schema_json)
        .map_err(|e| Error::bad_arguments(format!("table schema: {e}")))?;
    let fields = spec
        .get("fields")
        .unwrap_or(&spec)
        .as_array()
        .ok_or_else(|| bad("no fields".into()))?;
    let mut out = Vec::with_capacity(fields.len());
    for f in fields {
        let name = f
            .get("name")
            .and_then(Json::as_str)
            .ok_or_else(|| bad("field without name".into()))?;
        let source_id = f
            .get("source-id")
            .and_then(Json::as_i64)
            .ok_or_else(|| bad(format!("{name}: no source-id")))?;
        let field_id = f
            .get("field-id")
            .and_then(Json::as_i64)
            .and_then(|v| i32::try_from(v).ok());
        let field_id = field_id.ok_or_else(|| bad(format!("{name}: no field-id")))?;
        let transform = f
            .get("transform")
            .and_then(Json::as_str)
            .unwrap_or("identity");
        let source = find_type(&schema, source_id).ok_or_else(|| {
            bad(format!(
                "{name}: source column {source_id} is not a primitive of the schema"
            ))
        })?;
        let result_type = transform_result(transform, &source).map_err(bad)?;
        out.push(PartitionField {
            name: name.to_string(),
            field_id,
            result_type,
        });
    }
    Ok(out)
}

fn find_type(node: &Json, id: i64) -> Option<String> {
    for f in node.get("fields")?.as_array()? {
        let ty = f.get("type")?;
        if f.get("id").and_then(Json::as_i64) == Some(id) {
            return ty.as_str().map(str::to_string);
        }
        if ty.is_object()
            && let Some(found) = find_type(ty, id)
        {
            return Some(found);
        }
    }
    None
}

fn transform_result(transform: &str, source: &str) -> Result<String, String> {
    let base = transform.split('[').next().unwrap_or(transform);
    match base {
        "identity" | "truncate" | "void" => Ok(source.to_string()),
        "bucket" | "year" | "month" | "hour" => Ok("int".into()),
        "day" => Ok("date".into()),
        other => Err(format!("unknown transform '{other}'")),
    }
}

/// The Avro type of one Iceberg primitive type.
pub fn avro_type(iceberg: &str) -> Result<Json> {
    let ts =
        |unit: &str, utc: bool| json!({"type": "long", "logicalType": unit, "adjust-to-utc": utc});
    Ok(match iceberg {
        "boolean" | "int" | "long" | "float" | "double" | "string" => json!(iceberg),
        "binary" => json!("bytes"),
        "date" => json!({"type": "int", "logicalType": "date"}),
        "time" => json!({"type": "long", "logicalType": "time-micros"}),
        "timestamp" => ts("timestamp-micros", false),
        "timestamptz" => ts("timestamp-micros", true),
        "timestamp_ns" => ts("timestamp-nanos", false),
        "timestamptz_ns" => ts("timestamp-nanos", true),
        "uuid" => json!({"type": "fixed", "name": "uuid_fixed", "size": 16, "logicalType": "uuid"}),
        other => return compound_type(other),
    })
}

fn compound_type(iceberg: &str) -> Result<Json> {
    let unsupported =
        || Error::not_implemented(format!("partition type '{iceberg}' is not supported"));
    if let Some(len) = iceberg
        .strip_prefix("fixed[")
        .and_then(|s| s.strip_suffix(']'))
    {
        let len: usize = len.trim().parse().map_err(|_| unsupported())?;
        return Ok(json!({"type": "fixed", "name": format!("fixed_{len}"), "size": len}));
    }
    let inner = iceberg
        .strip_prefix("decimal(")
        .and_then(|s| s.strip_suffix(')'))
        .ok_or_else(unsupported)?;
    let (p, s) = inner.split_once(',').ok_or_else(unsupported)?;
    let precision: u32 = p.trim().parse().map_err(|_| unsupported())?;
    let scale: u32 = s.trim().parse().map_err(|_| unsupported())?;
    let size = (1..=16u32)
        .find(|n| f64::from(8 * n - 1) * std::f64::consts::LOG10_2 >= f64::from(precision))
        .ok_or_else(unsupported)?;
    Ok(json!({
        "type": "fixed", "name": format!("decimal_{precision}_{scale}"), "size": size,
        "logicalType": "decimal", "precision": precision, "scale": scale
    }))
}

/// The `partition` record type (`r102`) for these fields.
pub fn partition_record(fields: &[PartitionField]) -> Result<Json> {
    let fields = fields
        .iter()
        .map(|f| {
            let ty = avro_type(&f.result_type)?;
            Ok(json!({"name": f.name, "type": ["null", ty], "default": null, "field-id": f.field_id}))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(json!({"type": "record", "name": "r102", "fields": fields}))
}

/// Accumulates [`FieldSummary`]s over partition tuples.
#[derive(Debug, Clone)]
pub struct SummaryBuilder {
    fields: Vec<FieldStats>,
}

#[derive(Debug, Clone)]
struct FieldStats {
    name: String,
    result_type: String,
    contains_null: bool,
    contains_nan: bool,
    lower: Option<Bound>,
    upper: Option<Bound>,
}

#[derive(Debug, Clone, PartialEq, PartialOrd)]
enum Bound {
    Number(f64, Vec<u8>),
    Integer(i64, Vec<u8>),
    Bytes(Vec<u8>),
}

impl Bound {
    fn into_bytes(self) -> Vec<u8> {
        match self {
            Bound::Number(_, b) | Bound::Integer(_, b) | Bound::Bytes(b) => b,
        }
    }
}

impl SummaryBuilder {
    /// A builder for tuples of `fields`.
    pub fn new(fields: &[PartitionField]) -> Self {
        let fields = fields
            .iter()
            .map(|f| FieldStats {
                name: f.name.clone(),
                result_type: f.result_type.clone(),
                contains_null: false,
                contains_nan: false,
                lower: None,
                upper: None,
            })
            .collect();
        SummaryBuilder { fields }
    }

    /// Adds one partition tuple (fields matched by name; a missing field counts as null).
    pub fn update(&mut self, tuple: &PartitionTuple) {
        for f in &mut self.fields {
            match tuple.get(&f.name).map(|v| bound(&f.result_type, v)) {
                None | Some(Err(true)) => f.contains_null = true,
                Some(Err(false)) => f.contains_nan = true,
                Some(Ok(None)) => {}
                Some(Ok(Some(b))) => {
                    if f.lower.as_ref().is_none_or(|l| b < *l) {
                        f.lower = Some(b.clone());
                    }
                    if f.upper.as_ref().is_none_or(|u| b > *u) {
                        f.upper = Some(b);
                    }
                }
            }
        }
    }

    /// The summaries, one per partition field.
    pub fn finish(self) -> Vec<FieldSummary> {
        self.fields
            .into_iter()
            .map(|f| FieldSummary {
                contains_null: f.contains_null,
                contains_nan: Some(f.contains_nan),
                lower_bound: f.lower.map(Bound::into_bytes),
                upper_bound: f.upper.map(Bound::into_bytes),
            })
            .collect()
    }
}

/// The comparable bound of a value; `Err(true)` for null, `Err(false)` for NaN, `Ok(None)` when the
/// type has no bound we compute.
fn bound(result_type: &str, v: &PartitionValue) -> Result<Option<Bound>, bool> {
    let int = |i: i64, bytes: Vec<u8>| Ok(Some(Bound::Integer(i, bytes)));
    match v {
        PartitionValue::Null => Err(true),
        PartitionValue::Boolean(b) => int(i64::from(*b), vec![u8::from(*b)]),
        PartitionValue::Int(i) if result_type != "long" => {
            int(i64::from(*i), i.to_le_bytes().to_vec())
        }
        PartitionValue::Int(i) => int(i64::from(*i), i64::from(*i).to_le_bytes().to_vec()),
        PartitionValue::Long(i) => int(*i, i.to_le_bytes().to_vec()),
        PartitionValue::Float(f) if f.is_nan() => Err(false),
        PartitionValue::Double(f) if f.is_nan() => Err(false),
        PartitionValue::Float(f) => {
            Ok(Some(Bound::Number(f64::from(*f), f.to_le_bytes().to_vec())))
        }
        PartitionValue::Double(f) => Ok(Some(Bound::Number(*f, f.to_le_bytes().to_vec()))),
        PartitionValue::String(s) => Ok(Some(Bound::Bytes(s.as_bytes().to_vec()))),
        PartitionValue::Bytes(b) | PartitionValue::Fixed(b)
            if !result_type.starts_with("decimal") =>
        {
            Ok(Some(Bound::Bytes(b.clone())))
        }
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHEMA: &str = r#"{"type":"struct","schema-id":0,"fields":[
        {"id":1,"name":"id","required":true,"type":"long"},
        {"id":2,"name":"ts","required":false,"type":"timestamptz"},
        {"id":3,"name":"s","required":false,"type":{"type":"struct","fields":[
            {"id":4,"name":"name","required":false,"type":"string"}]}},
        {"id":5,"name":"amount","required":false,"type":"decimal(9, 2)"}]}"#;

    #[test]
    fn transforms_give_spec_result_types() {
        let spec = r#"{"spec-id":1,"fields":[
            {"source-id":1,"field-id":1000,"name":"id_bucket","transform":"bucket[16]"},
            {"source-id":2,"field-id":1001,"name":"ts_day","transform":"day"},
            {"source-id":4,"field-id":1002,"name":"name","transform":"identity"},
            {"source-id":5,"field-id":1003,"name":"amount","transform":"truncate[10]"},
            {"source-id":2,"field-id":1004,"name":"ts_hour","transform":"hour"}]}"#;
        let fields = partition_fields(spec, SCHEMA).unwrap();
        let types: Vec<_> = fields.iter().map(|f| f.result_type.as_str()).collect();
        assert_eq!(types, ["int", "date", "string", "decimal(9, 2)", "int"]);
        let rec = partition_record(&fields).unwrap();
        assert_eq!(rec["name"], "r102");
        assert_eq!(rec["fields"][3]["type"][1]["size"], 4);
        assert_eq!(rec["fields"][1]["field-id"], 1001);
    }

    #[test]
    fn unknown_source_or_transform_is_an_error() {
        let spec = r#"[{"source-id":9,"field-id":1000,"name":"x","transform":"identity"}]"#;
        assert!(partition_fields(spec, SCHEMA).is_err());
        let spec = r#"[{"source-id":1,"field-id":1000,"name":"x","transform":"zorder"}]"#;
        assert!(partition_fields(spec, SCHEMA).is_err());
    }

    #[test]
    fn summaries_track_null_nan_and_bounds() {
        let fields = vec![
            PartitionField {
                name: "a".into(),
                field_id: 1000,
                result_type: "int".into(),
            },
            PartitionField {
                name: "d".into(),
                field_id: 1001,
                result_type: "double".into(),
            },
        ];
        let mut b = SummaryBuilder::new(&fields);
        for (a, d) in [
            (PartitionValue::Int(5), PartitionValue::Double(1.5)),
            (PartitionValue::Int(-2), PartitionValue::Double(f64::NAN)),
        ] {
            b.update(&PartitionTuple::new(vec![("a".into(), a), ("d".into(), d)]));
        }
        b.update(&PartitionTuple::new(vec![
            ("a".into(), PartitionValue::Null),
            ("d".into(), PartitionValue::Double(-1.0)),
        ]));
        let s = b.finish();
        assert!(s[0].contains_null && !s[1].contains_null);
        assert_eq!(s[0].lower_bound, Some((-2i32).to_le_bytes().to_vec()));
        assert_eq!(s[0].upper_bound, Some(5i32.to_le_bytes().to_vec()));
        assert_eq!(s[1].contains_nan, Some(true));
        assert_eq!(s[1].lower_bound, Some((-1.0f64).to_le_bytes().to_vec()));
    }
}
