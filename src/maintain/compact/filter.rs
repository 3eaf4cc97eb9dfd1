//! The `where` filter of `rewrite_data_files` on partition values (pure): a file is selected when
//! its partition *may* match.
//!
//! Binding, before any file is looked at (else `BAD_ARGUMENTS`, nothing read or written): each
//! column the predicate names must be a column of the current schema; each literal must convert
//! to that column's Iceberg type (`where_value.rs`; Iceberg Java's wording, "Invalid value for
//! conversion to type int: abc (String)") and, in every spec that partitions by the column through
//! an order-preserving transform, through that transform; each column must be a partition source
//! column of some spec. So no file "may match" because of a literal that did not convert. For a
//! file, a comparison on a column its spec partitions by:
//! - `identity`: decided exactly from the partition value (null compares false);
//! - `year`, `month`, `day`, `hour`, `truncate[W]` (order-preserving): the literal is transformed
//!   too and the file may match when `=` finds equal values, `<`/`<=` finds the partition value
//!   `<=` the transformed literal, `>`/`>=` finds it `>=`;
//! - anything else (`bucket`, `void`, `!=` through a transform, a column the file's spec does not
//!   partition by, a partition value of another kind than the column's): may match.
//!
//! `AND`, `OR`, `NOT` combine yes / no / maybe (Kleene logic); only "no" leaves a file out.

use std::collections::HashMap;

use apache_avro::types::Value;
use serde_json::Value as Json;

use super::model::LiveFile;
use super::where_value::{
    IcebergType, Val, apply_transform, convert, literal_text, order_preserving, partition_val,
};
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

/// The predicate bound to the table's columns and specs.
#[derive(Debug, Clone)]
pub struct PartitionFilter {
    predicate: Predicate,
    /// Column name → (field id, Iceberg type; `None` for a type no literal converts to).
    columns: HashMap<String, (i32, Option<IcebergType>)>,
    /// spec id → the spec's fields.
    specs: HashMap<i32, PartitionSpec>,
}

impl PartitionFilter {
    /// Binds `predicate` to `schema` (the current schema JSON) and `specs`.
    pub fn new(predicate: &Predicate, schema: &Json, specs: &[PartitionSpec]) -> Result<Self> {
        let mut columns = HashMap::new();
        let mut type_names = HashMap::new();
        for name in predicate.columns() {
            let (id, ty) = find_column(schema, name).ok_or_else(|| {
                Error::bad_arguments(format!(
                    "rewrite_data_files 'where': unknown column '{name}'"
                ))
            })?;
            columns.insert(name.to_string(), (id, IcebergType::parse(&ty)));
            type_names.insert(name.to_string(), ty);
        }
        for (column, literal) in literals(predicate) {
            let (id, ty) = columns[column];
            let val = ty.and_then(|t| convert(literal, t)).ok_or_else(|| {
                refused(
                    column,
                    literal,
                    ty.map_or(type_names[column].clone(), |t| t.to_string()),
                )
            })?;
            if let Some(ty) = ty {
                check_transforms(column, id, ty, literal, &val, specs)?;
            }
        }
        for name in predicate.columns() {
            let id = columns[name].0;
            if !specs
                .iter()
                .any(|s| s.fields.iter().any(|f| f.source_id == id))
            {
                return Err(Error::bad_arguments(format!(
                    "rewrite_data_files 'where': column '{name}' is not a partition source column"
                )));
            }
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
        let (id, ty) = self.columns.get(column)?;
        let spec = self.specs.get(&file.spec_id)?;
        let field = spec.fields.iter().find(|f| f.source_id == *id)?;
        let Value::Record(values) = strip_union(&file.file.partition) else {
            return None;
        };
        let value = values.iter().find(|(n, _)| n == &field.name)?;
        // A decimal's bytes need the type; the other transforms' results carry their own kind.
        let ty = ty
            .filter(|_| field.transform == "identity" || field.transform.starts_with("truncate["));
        Some((field.transform.clone(), partition_val(&value.1, ty)))
    }

    fn cmp(&self, file: &LiveFile, column: &str, op: CmpOp, literal: &Literal) -> Tri {
        let Some((transform, part)) = self.partition_value(file, column) else {
            return Tri::Maybe;
        };
        let Some((_, Some(ty))) = self.columns.get(column) else {
            return Tri::Maybe;
        };
        // `new` refused every literal that does not convert, so this always converts.
        let Some(lit) = convert(literal, *ty) else {
            return Tri::Maybe;
        };
        let Some(part) = part else {
            return if transform == "void" {
                Tri::Maybe
            } else {
                Tri::No
            };
        };
        if !order_preserving(&transform, *ty) {
            return Tri::Maybe;
        }
        // Checked by `new` for every spec partitioning by the column.
        let Some(t) = apply_transform(&transform, *ty, &lit) else {
            return Tri::Maybe;
        };
        if std::mem::discriminant(&part) != std::mem::discriminant(&t) {
            return Tri::Maybe;
        }
        if transform == "identity" {
            let Some(ord) = part.partial_cmp(&t) else {
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
        let may = match op {
            CmpOp::Eq => part == t,
            CmpOp::NotEq => true,
            CmpOp::Lt | CmpOp::LtEq => part <= t,
            CmpOp::Gt | CmpOp::GtEq => part >= t,
        };
        if may { Tri::Maybe } else { Tri::No }
    }
}

/// Every literal of `predicate` with its column, left to right (a loop, not a recursion: long
/// flat chains are walked in constant stack).
fn literals(predicate: &Predicate) -> Vec<(&str, &Literal)> {
    let mut out = Vec::new();
    let mut stack = vec![predicate];
    while let Some(p) = stack.pop() {
        match p {
            Predicate::Cmp { column, value, .. } => out.push((column.as_str(), value)),
            Predicate::In { column, values, .. } => {
                out.extend(values.iter().map(|v| (column.as_str(), v)));
            }
            Predicate::IsNull { .. } => {}
            Predicate::And(parts) | Predicate::Or(parts) => {
                stack.extend(parts.iter().rev());
            }
            Predicate::Not(a) => stack.push(a),
        }
    }
    out
}

/// The error for a literal that does not convert to `ty` (Iceberg Java's binder wording).
fn refused(column: &str, literal: &Literal, ty: String) -> Error {
    if *literal == Literal::Null {
        return Error::bad_arguments(format!(
            "rewrite_data_files 'where': Cannot create expression literal from null (column \
             '{column}'; IS NULL and IS NOT NULL test for null)"
        ));
    }
    Error::bad_arguments(format!(
        "rewrite_data_files 'where': Invalid value for conversion to type {ty}: {} ({}) for \
         column '{column}'",
        literal_text(literal),
        literal.type_name()
    ))
}

/// A converted literal must also go through every order-preserving transform that partitions by
/// its column, in every spec (a date far out of range has no month).
fn check_transforms(
    column: &str,
    id: i32,
    ty: IcebergType,
    literal: &Literal,
    val: &Val,
    specs: &[PartitionSpec],
) -> Result<()> {
    for spec in specs {
        for f in spec.fields.iter().filter(|f| f.source_id == id) {
            if order_preserving(&f.transform, ty)
                && apply_transform(&f.transform, ty, val).is_none()
            {
                return Err(Error::bad_arguments(format!(
                    "rewrite_data_files 'where': Invalid value for conversion to type {ty}: {} \
                     ({}) for column '{column}': out of the range of its partition transform \
                     {} (spec {})",
                    literal_text(literal),
                    literal.type_name(),
                    f.transform,
                    spec.spec_id
                )));
            }
        }
    }
    Ok(())
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

    fn refusal(pred: &str) -> String {
        let p = parse_where(pred).unwrap();
        let e = PartitionFilter::new(&p, &schema(), &specs()).unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::BadArguments, "{pred}");
        e.message().to_string()
    }

    #[test]
    fn literals_that_do_not_convert_are_refused_at_bind_time() {
        // The literal is refused whatever the rest of the predicate says, and whatever the
        // files are: nothing "may match" through a literal that does not convert.
        for (pred, want) in [
            (
                "k = 'abc'",
                "Invalid value for conversion to type long: abc (String)",
            ),
            (
                "k = 1.5",
                "Invalid value for conversion to type long: 1.5 (Float64)",
            ),
            (
                "k = 99999999999999999999",
                "Invalid value for conversion to type long: 99999999999999999999 (Float64)",
            ),
            ("k IN (1, 'x')", "type long: x (String)"),
            ("k = 1 OR k > 'x'", "type long: x (String)"),
            ("NOT k BETWEEN 1 AND 2.5", "type long: 2.5 (Float64)"),
            ("d = '2024-02-30'", "type date: 2024-02-30 (String)"),
            ("d >= 1.5", "type date: 1.5 (Float64)"),
            ("s = 5", "type string: 5 (UInt64)"),
            ("s = true", "type string: true (Bool)"),
            // Not a partition column: still checked against the schema type, first.
            ("v = 5", "type string: 5 (UInt64)"),
            ("k = NULL", "Cannot create expression literal from null"),
            (
                "k IN (1, NULL)",
                "Cannot create expression literal from null",
            ),
            (
                "k NOT IN (NULL)",
                "Cannot create expression literal from null",
            ),
            ("k != NULL", "Cannot create expression literal from null"),
            // Days whose microseconds overflow: no month (the spec partitions d by month).
            (
                "d < 2147483647",
                "out of the range of its partition transform month (spec 0)",
            ),
        ] {
            let m = refusal(pred);
            assert!(m.contains(want), "{pred}: {m}");
            assert!(m.starts_with("rewrite_data_files 'where': "), "{m}");
        }
        assert!(refusal("k = 'abc'").contains("for column 'k'"));
    }

    #[test]
    fn strings_holding_the_columns_type_are_accepted() {
        let f = file(Some(5), 648, "ab");
        assert!(matches("k = '5'", &f));
        assert!(!matches("k = '6'", &f));
        assert!(matches("k IN ('5', 7)", &f));
        assert!(matches("k = 5.0", &f), "an integral number");
        assert!(matches("d >= 19723", &f), "days since 1970 (2024-01-01)");
        assert!(!matches("d < 19700", &f), "2023-12-08: month 647");
        assert!(matches(
            "k IS NOT NULL AND d BETWEEN '2024-01-01' AND '2024-01-31'",
            &f
        ));
    }

    #[test]
    fn partition_values_of_every_identity_kind_compare() {
        let schema = serde_json::json!({"type": "struct", "fields": [
            {"id": 1, "name": "dec", "required": false, "type": "decimal(9,2)"},
            {"id": 2, "name": "u", "required": false, "type": "uuid"},
            {"id": 3, "name": "b", "required": false, "type": "boolean"},
            {"id": 4, "name": "f", "required": false, "type": "float"}
        ]});
        let field = |name: &str, source_id, field_id| PartitionField {
            name: name.into(),
            transform: "identity".into(),
            source_id,
            field_id,
        };
        let specs = vec![PartitionSpec {
            spec_id: 0,
            fields: vec![
                field("dec", 1, 1000),
                field("u", 2, 1001),
                field("b", 3, 1002),
                field("f", 4, 1003),
            ],
        }];
        let uuid = uuid::Uuid::parse_str("00000000-0000-0000-0000-000000000005").unwrap();
        let mut data = DataFile::new(DataContent::Data, "f", 1, 1);
        data.partition = Value::Record(vec![
            (
                "dec".into(),
                Value::Fixed(4, 1234i32.to_be_bytes().to_vec()),
            ),
            ("u".into(), Value::Fixed(16, uuid.as_bytes().to_vec())),
            ("b".into(), Value::Boolean(true)),
            ("f".into(), Value::Float(0.1)),
        ]);
        let f = LiveFile {
            file: data,
            spec_id: 0,
            spec_unpartitioned: false,
            partition: String::new(),
            data_sequence_number: 1,
        };
        let m = |pred: &str| {
            PartitionFilter::new(&parse_where(pred).unwrap(), &schema, &specs)
                .unwrap()
                .may_match(&f)
        };
        assert!(m("dec = 12.34") && m("dec = '12.340'") && !m("dec > 12.34"));
        assert!(m("u = '00000000-0000-0000-0000-000000000005'"));
        assert!(!m("u = '00000000-0000-0000-0000-000000000006'"));
        assert!(m("b = true") && m("b = 1") && !m("b = false"));
        assert!(
            m("f = 0.1"),
            "the literal is rounded to 32 bits as the column is"
        );
    }
}
