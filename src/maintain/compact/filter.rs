//! The `where` filter of `rewrite_data_files` on partition values (pure): a file is selected when
//! its partition *may* match.
//!
//! Each column the predicate names must be a partition source column of some spec of the table
//! (else `BAD_ARGUMENTS`). For a file, a comparison on a column its spec partitions by:
//! - `identity`: decided exactly from the partition value (null compares false);
//! - `year`, `month`, `day`, `hour`, `truncate[W]` (order-preserving): the literal is transformed
//!   too and the file may match when `=` finds equal values, `<`/`<=` finds the partition value
//!   `<=` the transformed literal, `>`/`>=` finds it `>=`;
//! - anything else (`bucket`, `void`, `!=` through a transform, a column the file's spec does not
//!   partition by): may match.
//!
//! `AND`, `OR`, `NOT` combine yes / no / maybe (Kleene logic); only "no" leaves a file out.

use std::collections::HashMap;

use apache_avro::types::Value;
use chrono::{Datelike, NaiveDate, NaiveDateTime};
use serde_json::Value as Json;

use super::model::LiveFile;
use crate::error::{Error, Result};
use crate::iceberg::avro::value::strip_union;
use crate::iceberg::metadata::PartitionSpec;
use crate::literal::Literal;
use crate::plan::{CmpOp, Predicate};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tri {
    Yes,
    No,
    Maybe,
}

impl Tri {
    fn not(self) -> Tri {
        match self {
            Tri::Yes => Tri::No,
            Tri::No => Tri::Yes,
            Tri::Maybe => Tri::Maybe,
        }
    }
    fn and(self, o: Tri) -> Tri {
        match (self, o) {
            (Tri::No, _) | (_, Tri::No) => Tri::No,
            (Tri::Yes, Tri::Yes) => Tri::Yes,
            _ => Tri::Maybe,
        }
    }
    fn or(self, o: Tri) -> Tri {
        match (self, o) {
            (Tri::Yes, _) | (_, Tri::Yes) => Tri::Yes,
            (Tri::No, Tri::No) => Tri::No,
            _ => Tri::Maybe,
        }
    }
    fn from(b: bool) -> Tri {
        if b { Tri::Yes } else { Tri::No }
    }
}

/// A comparable value.
#[derive(Debug, Clone, PartialEq, PartialOrd)]
enum Val {
    I(i64),
    F(f64),
    S(String),
    B(bool),
}

/// The predicate bound to the table's columns and specs.
#[derive(Debug, Clone)]
pub struct PartitionFilter {
    predicate: Predicate,
    /// Column name → (field id, Iceberg type).
    columns: HashMap<String, (i32, String)>,
    /// spec id → the spec's fields.
    specs: HashMap<i32, PartitionSpec>,
}

impl PartitionFilter {
    /// Binds `predicate` to `schema` (the current schema JSON) and `specs`.
    pub fn new(predicate: &Predicate, schema: &Json, specs: &[PartitionSpec]) -> Result<Self> {
        let mut columns = HashMap::new();
        for name in predicate.columns() {
            let (id, ty) = find_column(schema, name).ok_or_else(|| {
                Error::bad_arguments(format!(
                    "rewrite_data_files 'where': unknown column '{name}'"
                ))
            })?;
            if !specs
                .iter()
                .any(|s| s.fields.iter().any(|f| f.source_id == id))
            {
                return Err(Error::bad_arguments(format!(
                    "rewrite_data_files 'where': column '{name}' is not a partition source column"
                )));
            }
            columns.insert(name.to_string(), (id, ty));
        }
        Ok(PartitionFilter {
            predicate: predicate.clone(),
            columns,
            specs: specs.iter().map(|s| (s.spec_id, s.clone())).collect(),
        })
    }

    /// Whether `file`'s partition may match.
    pub fn may_match(&self, file: &LiveFile) -> bool {
        self.eval(&self.predicate, file) != Tri::No
    }

    fn eval(&self, p: &Predicate, file: &LiveFile) -> Tri {
        match p {
            Predicate::And(items) => items
                .iter()
                .fold(Tri::Yes, |acc, p| acc.and(self.eval(p, file))),
            Predicate::Or(items) => items
                .iter()
                .fold(Tri::No, |acc, p| acc.or(self.eval(p, file))),
            Predicate::Not(a) => self.eval(a, file).not(),
            Predicate::Cmp { column, op, value } => self.cmp(file, column, *op, value),
            Predicate::In {
                column,
                values,
                negated,
            } => {
                let any = values.iter().fold(Tri::No, |acc, v| {
                    acc.or(self.cmp(file, column, CmpOp::Eq, v))
                });
                if *negated { any.not() } else { any }
            }
            Predicate::IsNull { column, negated } => {
                let Some((transform, part)) = self.partition_value(file, column) else {
                    return Tri::Maybe;
                };
                if transform == "void" {
                    return Tri::Maybe;
                }
                let is_null = Tri::from(part.is_none());
                if *negated { is_null.not() } else { is_null }
            }
        }
    }

    /// The transform and the partition value of the field `column` is partitioned by in
    /// `file`'s spec.
    fn partition_value(&self, file: &LiveFile, column: &str) -> Option<(String, Option<Val>)> {
        let (id, _) = self.columns.get(column)?;
        let spec = self.specs.get(&file.spec_id)?;
        let field = spec.fields.iter().find(|f| f.source_id == *id)?;
        let Value::Record(values) = strip_union(&file.file.partition) else {
            return None;
        };
        let value = values.iter().find(|(n, _)| n == &field.name)?;
        Some((field.transform.clone(), avro_val(&value.1)))
    }

    fn cmp(&self, file: &LiveFile, column: &str, op: CmpOp, literal: &Literal) -> Tri {
        let Some((transform, part)) = self.partition_value(file, column) else {
            return Tri::Maybe;
        };
        let Some((_, ty)) = self.columns.get(column) else {
            return Tri::Maybe;
        };
        let Some(lit) = literal_val(literal, ty) else {
            return Tri::Maybe;
        };
        let Some(part) = part else {
            return if transform == "void" {
                Tri::Maybe
            } else {
                Tri::No
            };
        };
        if transform == "identity" {
            let Some(ord) = part.partial_cmp(&lit) else {
                return Tri::Maybe;
            };
            use std::cmp::Ordering::*;
            return Tri::from(match op {
                CmpOp::Eq => ord == Equal,
                CmpOp::NotEq => ord != Equal,
                CmpOp::Lt => ord == Less,
                CmpOp::LtEq => ord != Greater,
                CmpOp::Gt => ord == Greater,
                CmpOp::GtEq => ord != Less,
            });
        }
        let Some(t) = apply_transform(&transform, ty, &lit) else {
            return Tri::Maybe;
        };
        let may = match op {
            CmpOp::Eq => part == t,
            CmpOp::NotEq => true,
            CmpOp::Lt | CmpOp::LtEq => part <= t,
            CmpOp::Gt | CmpOp::GtEq => part >= t,
        };
        if may { Tri::Maybe } else { Tri::No }
    }
}

fn find_column(schema: &Json, name: &str) -> Option<(i32, String)> {
    let mut node = schema;
    let parts: Vec<&str> = name.split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        let field = node
            .get("fields")?
            .as_array()?
            .iter()
            .find(|f| f.get("name").and_then(Json::as_str) == Some(part))?;
        let ty = field.get("type")?;
        if i + 1 == parts.len() {
            let id = i32::try_from(field.get("id")?.as_i64()?).ok()?;
            return Some((id, ty.as_str()?.to_string()));
        }
        node = ty;
    }
    None
}

fn avro_val(v: &Value) -> Option<Val> {
    Some(match strip_union(v) {
        Value::Null => return None,
        Value::Boolean(b) => Val::B(*b),
        Value::Int(i) | Value::Date(i) => Val::I(i64::from(*i)),
        Value::Long(l) => Val::I(*l),
        Value::Float(f) => Val::F(f64::from(*f)),
        Value::Double(d) => Val::F(*d),
        Value::String(s) => Val::S(s.clone()),
        _ => return None,
    })
}

const MICROS_PER_DAY: i64 = 86_400_000_000;

fn literal_val(literal: &Literal, ty: &str) -> Option<Val> {
    match (ty, literal) {
        ("int" | "long", l) => l
            .as_integer()
            .and_then(|v| i64::try_from(v).ok())
            .map(Val::I),
        ("float" | "double", Literal::Number(t)) => t.parse().ok().map(Val::F),
        ("string", Literal::String(s)) => Some(Val::S(s.clone())),
        ("boolean", Literal::Bool(b)) => Some(Val::B(*b)),
        ("date", Literal::String(s)) => {
            let d = NaiveDate::parse_from_str(s, "%Y-%m-%d").ok()?;
            Some(Val::I(i64::from(d.num_days_from_ce() - 719_163)))
        }
        ("timestamp" | "timestamptz", Literal::String(s)) => {
            let t = parse_datetime(s)?;
            Some(Val::I(t.and_utc().timestamp_micros()))
        }
        ("timestamp_ns" | "timestamptz_ns", Literal::String(s)) => {
            let t = parse_datetime(s)?;
            t.and_utc().timestamp_nanos_opt().map(Val::I)
        }
        _ => None,
    }
}

fn parse_datetime(s: &str) -> Option<NaiveDateTime> {
    for f in ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(s, f) {
            return Some(t);
        }
    }
    NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
}

/// The transform of a literal (order-preserving transforms only).
fn apply_transform(transform: &str, ty: &str, lit: &Val) -> Option<Val> {
    if let Some(width) = transform
        .strip_prefix("truncate[")
        .and_then(|s| s.strip_suffix(']'))
        .and_then(|w| w.parse::<i64>().ok())
        .filter(|w| *w > 0)
    {
        return match lit {
            Val::I(v) => Some(Val::I(v - v.rem_euclid(width))),
            Val::S(s) => Some(Val::S(s.chars().take(width as usize).collect())),
            _ => None,
        };
    }
    let Val::I(v) = lit else {
        return None;
    };
    let micros = match ty {
        "date" => v.checked_mul(MICROS_PER_DAY)?,
        "timestamp" | "timestamptz" => *v,
        "timestamp_ns" | "timestamptz_ns" => v.div_euclid(1000),
        _ => return None,
    };
    let at = chrono::DateTime::from_timestamp_micros(micros)?.naive_utc();
    let months = i64::from(at.year() - 1970) * 12 + i64::from(at.month0());
    Some(Val::I(match transform {
        "year" => i64::from(at.year() - 1970),
        "month" => months,
        "day" => micros.div_euclid(MICROS_PER_DAY),
        "hour" => micros.div_euclid(3_600_000_000),
        _ => return None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iceberg::manifest::DataFile;
    use crate::iceberg::metadata::PartitionField;
    use crate::iceberg::spec::DataContent;
    use crate::sql::parse_where;

    fn schema() -> Json {
        serde_json::json!({"type": "struct", "fields": [
            {"id": 1, "name": "k", "required": false, "type": "long"},
            {"id": 2, "name": "d", "required": false, "type": "date"},
            {"id": 3, "name": "s", "required": false, "type": "string"},
            {"id": 4, "name": "v", "required": false, "type": "string"}
        ]})
    }

    fn specs() -> Vec<PartitionSpec> {
        let f = |name: &str, transform: &str, source_id, field_id| PartitionField {
            name: name.into(),
            transform: transform.into(),
            source_id,
            field_id,
        };
        vec![PartitionSpec {
            spec_id: 0,
            fields: vec![
                f("k", "identity", 1, 1000),
                f("d_month", "month", 2, 1001),
                f("s_trunc", "truncate[2]", 3, 1002),
            ],
        }]
    }

    fn file(k: Option<i64>, month: i32, s: &str) -> LiveFile {
        let mut data = DataFile::new(DataContent::Data, "f", 1, 1);
        let opt = |v: Value| Value::Union(1, Box::new(v));
        data.partition = Value::Record(vec![
            (
                "k".into(),
                k.map_or(Value::Union(0, Box::new(Value::Null)), |k| {
                    opt(Value::Long(k))
                }),
            ),
            ("d_month".into(), opt(Value::Int(month))),
            ("s_trunc".into(), opt(Value::String(s.into()))),
        ]);
        LiveFile {
            file: data,
            spec_id: 0,
            spec_unpartitioned: false,
            partition: String::new(),
            data_sequence_number: 1,
        }
    }

    fn matches(pred: &str, f: &LiveFile) -> bool {
        let p = parse_where(pred).unwrap();
        PartitionFilter::new(&p, &schema(), &specs())
            .unwrap()
            .may_match(f)
    }

    #[test]
    fn identity_is_exact_and_transforms_may_match() {
        let f = file(Some(5), 648, "ab"); // 648 = 2024-01
        assert!(matches("k = 5", &f));
        assert!(!matches("k = 6", &f));
        assert!(matches("k IN (1, 5)", &f));
        assert!(!matches("k NOT IN (5)", &f));
        assert!(!matches("NOT k = 5", &f));
        assert!(matches("k >= 5 AND k < 6", &f));
        assert!(matches("d = '2024-01-31'", &f));
        assert!(!matches("d = '2024-02-01'", &f));
        assert!(!matches("d < '2023-12-31'", &f));
        assert!(matches("d > '2023-12-31'", &f));
        assert!(matches("s = 'abc'", &f));
        assert!(!matches("s = 'xyz'", &f));
        assert!(matches("k = 6 OR s >= 'aa'", &f));
        assert!(matches("NOT d = '2024-01-02'", &f), "maybe stays maybe");
        assert!(!matches("k IS NULL", &f));
        assert!(matches("k IS NULL", &file(None, 1, "x")));
        assert!(!matches("k = 5", &file(None, 1, "x")));
    }

    #[test]
    fn columns_must_be_partition_sources() {
        let p = parse_where("v = 'x'").unwrap();
        let e = PartitionFilter::new(&p, &schema(), &specs()).unwrap_err();
        assert!(e.message().contains("not a partition source"));
        let p = parse_where("nope = 1").unwrap();
        let e = PartitionFilter::new(&p, &schema(), &specs()).unwrap_err();
        assert!(e.message().contains("unknown column"));
    }
}
