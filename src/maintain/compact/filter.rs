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

use serde_json::Value as Json;

use super::model::LiveFile;
use super::where_value::{
    IcebergType, Val, apply_transform, convert, literal_text, order_preserving, partition_val,
};
use crate::error::{Error, Result};
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
        let value = file.file.partition.get(&field.name)?;
        // A decimal's bytes need the type; the other transforms' results carry their own kind.
        let ty = ty
            .filter(|_| field.transform == "identity" || field.transform.starts_with("truncate["));
        Some((field.transform.clone(), partition_val(value, ty)))
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
