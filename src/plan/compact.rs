//! The typed options of `rewrite_data_files` and `OPTIMIZE TABLE`, after binding.
//!
//! Defaults are Iceberg Java's `RewriteDataFiles` bin-pack ones; those that depend on table
//! properties (`target_file_size_bytes` = `write.target-file-size-bytes`, 512 MiB) are left as
//! `None` here and resolved by the procedure (`maintain::compact::plan::Resolved`).

use crate::error::{Error, Result};
use crate::literal::Literal;

/// `rewrite_data_files(...)` / `OPTIMIZE TABLE`, validated.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CompactOptions {
    /// Output file size; `None`: the table property `write.target-file-size-bytes` (512 MiB).
    pub target_file_size_bytes: Option<u64>,
    /// Files smaller are rewritten; `None`: 0.75 × target.
    pub min_file_size_bytes: Option<u64>,
    /// Files larger are rewritten (split); `None`: 1.8 × target.
    pub max_file_size_bytes: Option<u64>,
    /// A group of fewer files is left alone unless another rule selects it; `None`: 5.
    pub min_input_files: Option<u64>,
    /// A data file with at least this many delete files is rewritten; `None`: unlimited.
    pub delete_file_threshold: Option<u64>,
    /// Rewrite every selected file whatever its size.
    pub rewrite_all: bool,
    /// The largest group (bytes of input) bin-packing forms; `None`: 100 GiB.
    pub max_file_group_size_bytes: Option<u64>,
    /// Groups rewritten at once; `None`: 5.
    pub max_concurrent_file_group_rewrites: Option<u64>,
    /// `where`: only files whose partition may match.
    pub filter: Option<Predicate>,
    pub dry_run: bool,
}

impl CompactOptions {
    /// `OPTIMIZE TABLE t`: every data file with a delete file, plus the small files.
    pub fn optimize() -> Self {
        CompactOptions {
            delete_file_threshold: Some(1),
            ..Default::default()
        }
    }

    /// The checks on the whole call, shared by the SQL binder and the typed API.
    pub fn validate(&self) -> Result<()> {
        let positive = |name: &str, v: Option<u64>| match v {
            Some(0) => Err(Error::bad_arguments(format!(
                "rewrite_data_files expects '{name}' to be positive"
            ))),
            _ => Ok(()),
        };
        positive("target_file_size_bytes", self.target_file_size_bytes)?;
        positive("max_file_size_bytes", self.max_file_size_bytes)?;
        positive("min_input_files", self.min_input_files)?;
        positive("delete_file_threshold", self.delete_file_threshold)?;
        positive("max_file_group_size_bytes", self.max_file_group_size_bytes)?;
        positive(
            "max_concurrent_file_group_rewrites",
            self.max_concurrent_file_group_rewrites,
        )?;
        if let (Some(min), Some(target)) = (self.min_file_size_bytes, self.target_file_size_bytes)
            && min >= target
        {
            return Err(Error::bad_arguments(format!(
                "rewrite_data_files: 'min_file_size_bytes' ({min}) must be less than \
                 'target_file_size_bytes' ({target})"
            )));
        }
        if let (Some(max), Some(target)) = (self.max_file_size_bytes, self.target_file_size_bytes)
            && max <= target
        {
            return Err(Error::bad_arguments(format!(
                "rewrite_data_files: 'max_file_size_bytes' ({max}) must be greater than \
                 'target_file_size_bytes' ({target})"
            )));
        }
        Ok(())
    }
}

/// A comparison operator of a `where` predicate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CmpOp {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
}

impl CmpOp {
    /// The operator with its sides swapped (`5 < x` is `x > 5`).
    pub fn flipped(self) -> Self {
        match self {
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::LtEq => CmpOp::GtEq,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::GtEq => CmpOp::LtEq,
            other => other,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            CmpOp::Eq => "=",
            CmpOp::NotEq => "!=",
            CmpOp::Lt => "<",
            CmpOp::LtEq => "<=",
            CmpOp::Gt => ">",
            CmpOp::GtEq => ">=",
        }
    }
}

/// A `where` predicate on columns of the table (partition source columns), literals only.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Predicate {
    Cmp {
        column: String,
        op: CmpOp,
        value: Literal,
    },
    In {
        column: String,
        values: Vec<Literal>,
        negated: bool,
    },
    IsNull {
        column: String,
        negated: bool,
    },
    /// All of them (two or more; nested `AND`s are one list, so a long chain is no deep tree).
    And(Vec<Predicate>),
    /// Any of them (two or more, flat as `And`).
    Or(Vec<Predicate>),
    Not(Box<Predicate>),
}

impl Predicate {
    /// `a AND b`, flattening either side that is itself an `AND`.
    pub fn and(a: Predicate, b: Predicate) -> Predicate {
        let mut items = match a {
            Predicate::And(items) => items,
            other => vec![other],
        };
        match b {
            Predicate::And(more) => items.extend(more),
            other => items.push(other),
        }
        Predicate::And(items)
    }

    /// `a OR b`, flattening either side that is itself an `OR`.
    pub fn or(a: Predicate, b: Predicate) -> Predicate {
        let mut items = match a {
            Predicate::Or(items) => items,
            other => vec![other],
        };
        match b {
            Predicate::Or(more) => items.extend(more),
            other => items.push(other),
        }
        Predicate::Or(items)
    }

    /// Every column the predicate names.
    pub fn columns(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.collect_columns(&mut out);
        out
    }

    fn collect_columns<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Predicate::Cmp { column, .. }
            | Predicate::In { column, .. }
            | Predicate::IsNull { column, .. } => out.push(column),
            Predicate::And(items) | Predicate::Or(items) => {
                for item in items {
                    item.collect_columns(out);
                }
            }
            Predicate::Not(a) => a.collect_columns(out),
        }
    }
}
