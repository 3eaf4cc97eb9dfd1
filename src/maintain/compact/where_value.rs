//! The values a `rewrite_data_files(where = ...)` predicate compares (pure): a literal converted to
//! the Iceberg type of its column at bind time, a partition value read from a manifest, and the
//! order-preserving partition transforms applied to a converted literal.
//!
//! A literal converts to a column's type, or the statement is refused (Iceberg Java's binder
//! refuses a literal it cannot convert; a literal that does not convert must never make a file
//! "maybe" match, which would widen the rewrite to every partition):
//! - `boolean`: `true`/`false`, the strings `'true'`/`'false'`/`'1'`/`'0'`, the numbers 0 and 1;
//! - `int`, `long`: a number or string holding an integer in the type's range (`1.0` and `1e3`
//!   are integers; `1.5` is not);
//! - `float`, `double`: a number or string holding a finite value in the type's range (a `float`
//!   literal is rounded to 32 bits, as the column's values are);
//! - `decimal(P, S)`: a number or string with at most `S` significant fractional digits and at
//!   most `P` digits in all;
//! - `date`: `'YYYY-MM-DD'`, or an integer count of days since 1970-01-01 (Java's rule);
//! - `time`: `'HH:MM[:SS[.ffffff]]'`;
//! - `timestamp`, `timestamp_ns`: `'YYYY-MM-DD[( |T)HH:MM:SS[.f]]'`; `timestamptz`,
//!   `timestamptz_ns` also with a `Z` or `±HH:MM` suffix (else the time is UTC); in the
//!   nanosecond range for the `_ns` types. A number is refused: a count of seconds (ClickHouse)
//!   and of microseconds (Java) would both be plausible readings;
//! - `string`: a string; `uuid`: a string holding a UUID; `binary`: a string (its bytes);
//!   `fixed[L]`: a string of exactly `L` bytes;
//! - `NULL`, arrays and tuples: refused in every comparison and `IN` list (`IS NULL` tests null).

use std::fmt;

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, NaiveTime, Timelike};

use crate::iceberg::manifest::PartitionValue;
use crate::literal::Literal;

/// A comparable value: of a converted literal or of a partition tuple.
#[derive(Debug, Clone, PartialEq, PartialOrd)]
pub enum Val {
    /// int, long, date (days), time (µs), timestamps (µs or ns), bucket / year / month / day /
    /// hour results.
    I(i64),
    F(f64),
    S(String),
    B(bool),
    /// A decimal's unscaled value (the column's scale).
    D(i128),
    /// uuid, fixed and binary: compared as unsigned bytes.
    Bytes(Vec<u8>),
}

/// An Iceberg primitive type a `where` literal can be converted to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IcebergType {
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Decimal { precision: u32, scale: u32 },
    Date,
    Time,
    Timestamp,
    TimestampTz,
    TimestampNs,
    TimestampTzNs,
    String,
    Uuid,
    Fixed(usize),
    Binary,
}

impl IcebergType {
    /// The type of a schema's `type` text; `None` for nested and unknown types.
    pub fn parse(text: &str) -> Option<IcebergType> {
        use IcebergType::*;
        let text = text.trim();
        Some(match text {
            "boolean" => Boolean,
            "int" => Int,
            "long" => Long,
            "float" => Float,
            "double" => Double,
            "date" => Date,
            "time" => Time,
            "timestamp" => Timestamp,
            "timestamptz" => TimestampTz,
            "timestamp_ns" => TimestampNs,
            "timestamptz_ns" => TimestampTzNs,
            "string" => String,
            "uuid" => Uuid,
            "binary" => Binary,
            _ => {
                if let Some(inner) = text
                    .strip_prefix("decimal(")
                    .and_then(|s| s.strip_suffix(')'))
                {
                    let (p, s) = inner.split_once(',')?;
                    let precision: u32 = p.trim().parse().ok()?;
                    let scale: u32 = s.trim().parse().ok()?;
                    if precision == 0 || precision > 38 || scale > precision {
                        return None;
                    }
                    Decimal { precision, scale }
                } else {
                    let len = text.strip_prefix("fixed[")?.strip_suffix(']')?;
                    Fixed(len.trim().parse().ok()?)
                }
            }
        })
    }

    fn is_temporal(self) -> bool {
        use IcebergType::*;
        matches!(
            self,
            Date | Timestamp | TimestampTz | TimestampNs | TimestampTzNs
        )
    }
}

impl fmt::Display for IcebergType {
    /// Iceberg Java's type names (`decimal(10, 2)`, `fixed[4]`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use IcebergType::*;
        match self {
            Boolean => f.write_str("boolean"),
            Int => f.write_str("int"),
            Long => f.write_str("long"),
            Float => f.write_str("float"),
            Double => f.write_str("double"),
            Decimal { precision, scale } => write!(f, "decimal({precision}, {scale})"),
            Date => f.write_str("date"),
            Time => f.write_str("time"),
            Timestamp => f.write_str("timestamp"),
            TimestampTz => f.write_str("timestamptz"),
            TimestampNs => f.write_str("timestamp_ns"),
            TimestampTzNs => f.write_str("timestamptz_ns"),
            String => f.write_str("string"),
            Uuid => f.write_str("uuid"),
            Fixed(len) => write!(f, "fixed[{len}]"),
            Binary => f.write_str("binary"),
        }
    }
}

/// A literal's value as Java's binder prints it: the value itself, unquoted.
pub fn literal_text(literal: &Literal) -> String {
    let list = |items: &[Literal]| {
        items
            .iter()
            .map(literal_text)
            .collect::<Vec<_>>()
            .join(", ")
    };
    match literal {
        Literal::Number(t) | Literal::String(t) => t.clone(),
        Literal::Bool(b) => b.to_string(),
        Literal::Null => "null".into(),
        Literal::Array(items) => {
            let texts: Vec<String> = items.iter().map(|l| literal_text(&l)).collect();
            format!("[{}]", texts.join(", "))
        }
        Literal::Tuple(items) => format!("({})", list(items)),
    }
}

/// `literal` converted to `ty` (see the module comment); `None`: it does not convert.
pub fn convert(literal: &Literal, ty: IcebergType) -> Option<Val> {
    use IcebergType::*;
    let text = match literal {
        Literal::Number(t) | Literal::String(t) => t.as_str(),
        Literal::Bool(b) => return (ty == Boolean).then_some(Val::B(*b)),
        Literal::Null | Literal::Array(_) | Literal::Tuple(_) => return None,
    };
    let number = matches!(literal, Literal::Number(_));
    match ty {
        Boolean => match text.trim().to_ascii_lowercase().as_str() {
            "1" => Some(Val::B(true)),
            "0" => Some(Val::B(false)),
            "true" if !number => Some(Val::B(true)),
            "false" if !number => Some(Val::B(false)),
            _ => None,
        },
        Int => integer(text, i128::from(i32::MIN), i128::from(i32::MAX)),
        Long => integer(text, i128::from(i64::MIN), i128::from(i64::MAX)),
        Float => float(text)
            .filter(|v| v.abs() <= f64::from(f32::MAX))
            .map(|v| Val::F(f64::from(v as f32))),
        Double => float(text).map(Val::F),
        Decimal { precision, scale } => decimal(text, precision, scale).map(Val::D),
        Date if number => integer(text, i128::from(i32::MIN), i128::from(i32::MAX)),
        Date => NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d")
            .ok()
            .map(|d| Val::I(i64::from(d.num_days_from_ce() - UNIX_EPOCH_DAY))),
        _ if number => None,
        Time => time_micros(text).map(Val::I),
        Timestamp => naive_datetime(text).map(|t| Val::I(t.and_utc().timestamp_micros())),
        TimestampTz => instant(text).map(|t| Val::I(t.and_utc().timestamp_micros())),
        TimestampNs => naive_datetime(text)
            .and_then(|t| t.and_utc().timestamp_nanos_opt())
            .map(Val::I),
        TimestampTzNs => instant(text)
            .and_then(|t| t.and_utc().timestamp_nanos_opt())
            .map(Val::I),
        String => Some(Val::S(text.to_string())),
        Uuid => uuid::Uuid::parse_str(text.trim())
            .ok()
            .map(|u| Val::Bytes(u.as_bytes().to_vec())),
        Fixed(len) => (text.len() == len).then(|| Val::Bytes(text.as_bytes().to_vec())),
        Binary => Some(Val::Bytes(text.as_bytes().to_vec())),
    }
}

/// Days from 0001-01-01 (chrono's day 1) to 1970-01-01.
const UNIX_EPOCH_DAY: i32 = 719_163;
const MICROS_PER_DAY: i64 = 86_400_000_000;

/// A number written in decimal: `digits × 10^exponent`, sign apart.
struct Exact {
    negative: bool,
    /// Without leading zeros; empty for zero.
    digits: Vec<u8>,
    exponent: i64,
}

impl Exact {
    /// `[+-]digits[.digits][(e|E)[+-]digits]`, `_` between digits allowed.
    fn parse(text: &str) -> Option<Exact> {
        let text: std::string::String = text.trim().chars().filter(|c| *c != '_').collect();
        let (negative, rest) = match text.as_bytes().first()? {
            b'-' => (true, &text[1..]),
            b'+' => (false, &text[1..]),
            _ => (false, text.as_str()),
        };
        let (mantissa, exponent) = match rest.find(['e', 'E']) {
            Some(i) => (&rest[..i], rest[i + 1..].parse::<i64>().ok()?),
            None => (rest, 0),
        };
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        if int.is_empty() && frac.is_empty()
            || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
            || exponent.unsigned_abs() > 10_000
        {
            return None;
        }
        let all: Vec<u8> = int.bytes().chain(frac.bytes()).map(|b| b - b'0').collect();
        let start = all.iter().position(|d| *d != 0).unwrap_or(all.len());
        Some(Exact {
            negative,
            digits: all[start..].to_vec(),
            exponent: exponent - frac.len() as i64,
        })
    }

    /// The value times `10^scale` when that is an integer of at most 38 digits.
    fn scaled(&self, scale: i64) -> Option<i128> {
        let mut digits = self.digits.clone();
        let shift = self.exponent + scale;
        if shift < 0 {
            let keep = digits.len().saturating_sub(shift.unsigned_abs() as usize);
            if digits[keep..].iter().any(|d| *d != 0) {
                return None;
            }
            digits.truncate(keep);
        } else {
            if digits.is_empty() {
                return Some(0);
            }
            digits.extend(std::iter::repeat_n(0, usize::try_from(shift).ok()?));
        }
        if digits.len() > 38 {
            return None;
        }
        let magnitude = digits
            .iter()
            .fold(0i128, |acc, d| acc * 10 + i128::from(*d));
        Some(if self.negative { -magnitude } else { magnitude })
    }
}

fn integer(text: &str, min: i128, max: i128) -> Option<Val> {
    let v = Exact::parse(text)?.scaled(0)?;
    (min..=max).contains(&v).then_some(Val::I(v as i64))
}

fn float(text: &str) -> Option<f64> {
    Exact::parse(text)?;
    let cleaned: std::string::String = text.trim().chars().filter(|c| *c != '_').collect();
    cleaned.parse::<f64>().ok().filter(|v| v.is_finite())
}

fn decimal(text: &str, precision: u32, scale: u32) -> Option<i128> {
    let unscaled = Exact::parse(text)?.scaled(i64::from(scale))?;
    let digits = unscaled
        .unsigned_abs()
        .checked_ilog10()
        .map_or(1, |d| d + 1);
    (digits <= precision).then_some(unscaled)
}

fn time_micros(text: &str) -> Option<i64> {
    let text = text.trim();
    let t = ["%H:%M:%S%.f", "%H:%M"]
        .iter()
        .find_map(|f| NaiveTime::parse_from_str(text, f).ok())?;
    // chrono reads a leap second as second 60: not a time of day Iceberg stores.
    (t.nanosecond() < 1_000_000_000).then(|| {
        i64::from(t.num_seconds_from_midnight()) * 1_000_000 + i64::from(t.nanosecond() / 1000)
    })
}

fn naive_datetime(text: &str) -> Option<NaiveDateTime> {
    let text = text.trim();
    for f in ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(text, f) {
            return Some(t);
        }
    }
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
}

/// A timestamp with an optional `Z` / `±HH:MM` suffix, as a UTC wall time.
fn instant(text: &str) -> Option<NaiveDateTime> {
    if let Some(t) = naive_datetime(text) {
        return Some(t);
    }
    let text = text.trim();
    for f in [
        "%Y-%m-%d %H:%M:%S%.f%:z",
        "%Y-%m-%dT%H:%M:%S%.f%:z",
        "%Y-%m-%d %H:%M:%S%.f%z",
        "%Y-%m-%dT%H:%M:%S%.f%z",
    ] {
        if let Ok(t) = DateTime::parse_from_str(text, f) {
            return Some(t.naive_utc());
        }
    }
    let zulu = text.strip_suffix('Z').or_else(|| text.strip_suffix('z'))?;
    naive_datetime(zulu)
}

/// A partition value of a manifest (`ty`: the partition field's source type, which a decimal's
/// bytes need); `None` for null.
pub fn partition_val(v: &PartitionValue, ty: Option<IcebergType>) -> Option<Val> {
    Some(match v {
        PartitionValue::Null => return None,
        PartitionValue::Boolean(b) => Val::B(*b),
        PartitionValue::Int(i) => Val::I(i64::from(*i)),
        PartitionValue::Long(l) => Val::I(*l),
        PartitionValue::Float(f) => Val::F(f64::from(*f)),
        PartitionValue::Double(d) => Val::F(*d),
        PartitionValue::String(s) => Val::S(s.clone()),
        PartitionValue::Bytes(b) | PartitionValue::Fixed(b) => match ty {
            Some(IcebergType::Decimal { .. }) => Val::D(unscaled(b)?),
            _ => Val::Bytes(b.clone()),
        },
    })
}

/// A big-endian two's-complement unscaled decimal.
fn unscaled(b: &[u8]) -> Option<i128> {
    if b.is_empty() || b.len() > 16 {
        return None;
    }
    let mut buf = [if b[0] & 0x80 != 0 { 0xff } else { 0 }; 16];
    buf[16 - b.len()..].copy_from_slice(b);
    Some(i128::from_be_bytes(buf))
}

/// Whether `transform` is one the filter decides through (the order-preserving ones) and applies
/// to `ty`: a literal of `ty` must then transform without error.
pub fn order_preserving(transform: &str, ty: IcebergType) -> bool {
    use IcebergType::*;
    match transform {
        "identity" => true,
        "year" | "month" | "day" => ty.is_temporal(),
        "hour" => ty.is_temporal() && ty != Date,
        t if t.starts_with("truncate[") => {
            matches!(ty, Int | Long | Decimal { .. } | String | Binary)
        }
        _ => false,
    }
}

/// The transform of a converted literal (order-preserving transforms only); `None` when it does
/// not apply or the value is out of the transform's range.
pub fn apply_transform(transform: &str, ty: IcebergType, lit: &Val) -> Option<Val> {
    if transform == "identity" {
        return Some(lit.clone());
    }
    if let Some(width) = transform
        .strip_prefix("truncate[")
        .and_then(|s| s.strip_suffix(']'))
        .and_then(|w| w.parse::<i64>().ok())
        .filter(|w| *w > 0)
    {
        return match lit {
            Val::I(v) => v.checked_sub(v.rem_euclid(width)).map(Val::I),
            Val::D(v) => v.checked_sub(v.rem_euclid(i128::from(width))).map(Val::D),
            Val::S(s) => Some(Val::S(s.chars().take(width as usize).collect())),
            Val::Bytes(b) => Some(Val::Bytes(b.iter().take(width as usize).copied().collect())),
            _ => None,
        };
    }
    let Val::I(v) = lit else {
        return None;
    };
    let micros = match ty {
        IcebergType::Date => v.checked_mul(MICROS_PER_DAY)?,
        IcebergType::Timestamp | IcebergType::TimestampTz => *v,
        IcebergType::TimestampNs | IcebergType::TimestampTzNs => v.div_euclid(1000),
        _ => return None,
    };
    let at = DateTime::from_timestamp_micros(micros)?.naive_utc();
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
#[path = "where_value_tests.rs"]
mod tests;
