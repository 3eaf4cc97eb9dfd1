//! The folder of an output file under `data/`: one `<field>=<value>` per partition field, joined
//! by `/`, the value in its transform's human form and both URL-encoded, as Iceberg Java's
//! `PartitionSpec.partitionToPath` (and pyiceberg) lay files out: `day=2024-06-01`,
//! `month=2024-06`, `hour=2024-06-01-10`, `year=2024`, `bucket=3`, `name=a+b%2Fc`, `null` for null,
//! base64 for binary. Pure: the folder only names files, readers go by the manifest.

use chrono::{DateTime, Datelike, NaiveDate};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use crate::iceberg::manifest::{PartitionTuple, PartitionValue};

/// One partition field: its name, transform (as written in the spec) and result type (Iceberg).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathField {
    pub name: String,
    pub transform: String,
    pub result_type: String,
}

/// What Java's `URLEncoder` leaves as is: letters, digits, `.`, `-`, `*`, `_` (space becomes `+`).
const URL: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'.')
    .remove(b'-')
    .remove(b'*')
    .remove(b'_')
    .remove(b' ');

fn url_encode(s: &str) -> String {
    utf8_percent_encode(s, URL).to_string().replace(' ', "+")
}

/// The partition path of `partition` (a record of the spec's fields, in order); empty when
/// unpartitioned.
pub fn partition_path(fields: &[PathField], partition: &PartitionTuple) -> String {
    let values: Vec<&PartitionValue> = partition.values().collect();
    fields
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let human = values
                .get(i)
                .map(|v| human(f, v))
                .unwrap_or_else(|| "null".into());
            format!("{}={}", url_encode(&f.name), url_encode(&human))
        })
        .collect::<Vec<_>>()
        .join("/")
}

fn bytes(v: &PartitionValue) -> Option<Vec<u8>> {
    v.as_bytes().map(<[u8]>::to_vec)
}

fn date(days: i64) -> Option<NaiveDate> {
    NaiveDate::from_ymd_opt(1970, 1, 1)?.checked_add_signed(chrono::Duration::days(days))
}

fn timestamp(v: i64, per_second: i64) -> Option<String> {
    let t = DateTime::from_timestamp(
        v.div_euclid(per_second),
        (v.rem_euclid(per_second) * (1_000_000_000 / per_second)) as u32,
    )?;
    Some(t.naive_utc().format("%Y-%m-%dT%H:%M:%S%.f").to_string())
}

/// The human form of one value (Java's `Transform.toHumanString`).
fn human(f: &PathField, v: &PartitionValue) -> String {
    if v.is_null() {
        return "null".into();
    }
    let n = v.as_i64();
    let transform = f.transform.as_str();
    let text = match (transform, n) {
        ("year", Some(y)) => Some(format!("{:04}", 1970 + y)),
        ("month", Some(m)) => Some(format!(
            "{:04}-{:02}",
            1970 + m.div_euclid(12),
            m.rem_euclid(12) + 1
        )),
        ("hour", Some(h)) => date(h.div_euclid(24)).map(|d| {
            format!(
                "{:04}-{:02}-{:02}-{:02}",
                d.year(),
                d.month(),
                d.day(),
                h.rem_euclid(24)
            )
        }),
        ("day", Some(d)) => date(d).map(|d| d.format("%Y-%m-%d").to_string()),
        _ if transform.starts_with("bucket") => n.map(|b| b.to_string()),
        _ => None,
    };
    if let Some(t) = text {
        return t;
    }
    let ty = f.result_type.as_str();
    let typed = match ty {
        "date" => n.and_then(date).map(|d| d.format("%Y-%m-%d").to_string()),
        "time" => n.and_then(|us| {
            chrono::NaiveTime::from_num_seconds_from_midnight_opt(
                us.div_euclid(1_000_000) as u32,
                (us.rem_euclid(1_000_000) * 1000) as u32,
            )
            .map(|t| t.format("%H:%M:%S%.f").to_string())
        }),
        "timestamp" => n.and_then(|us| timestamp(us, 1_000_000)),
        "timestamptz" => n.and_then(|us| timestamp(us, 1_000_000)).map(|t| t + "Z"),
        "timestamp_ns" => n.and_then(|ns| timestamp(ns, 1_000_000_000)),
        "timestamptz_ns" => n
            .and_then(|ns| timestamp(ns, 1_000_000_000))
            .map(|t| t + "Z"),
        "uuid" => bytes(v)
            .and_then(|b| uuid::Uuid::from_slice(&b).ok())
            .map(|u| u.to_string()),
        "binary" => bytes(v).map(|b| base64(&b)),
        _ if ty.starts_with("fixed") => bytes(v).map(|b| base64(&b)),
        _ if ty.starts_with("decimal") => bytes(v).and_then(|b| decimal(&b, ty)),
        _ => None,
    };
    if let Some(t) = typed {
        return t;
    }
    match v {
        PartitionValue::Null => "null".into(),
        PartitionValue::Boolean(b) => b.to_string(),
        PartitionValue::Float(x) => format!("{x:?}"),
        PartitionValue::Double(x) => format!("{x:?}"),
        PartitionValue::String(s) => s.clone(),
        PartitionValue::Int(i) => i.to_string(),
        PartitionValue::Long(l) => l.to_string(),
        PartitionValue::Bytes(b) | PartitionValue::Fixed(b) => base64(b),
    }
}

/// A big-endian two's-complement unscaled value as a decimal with the type's scale.
fn decimal(b: &[u8], ty: &str) -> Option<String> {
    if b.is_empty() || b.len() > 16 {
        return None;
    }
    let scale: usize = ty
        .strip_prefix("decimal(")?
        .strip_suffix(')')?
        .split(',')
        .nth(1)?
        .trim()
        .parse()
        .ok()?;
    let mut unscaled: i128 = if b[0] & 0x80 != 0 { -1 } else { 0 };
    for &x in b {
        unscaled = (unscaled << 8) | i128::from(x);
    }
    let digits = unscaled.unsigned_abs().to_string();
    let sign = if unscaled < 0 { "-" } else { "" };
    if scale == 0 {
        return Some(format!("{sign}{digits}"));
    }
    let digits = format!("{digits:0>width$}", width = scale + 1);
    let (int, frac) = digits.split_at(digits.len() - scale);
    Some(format!("{sign}{int}.{frac}"))
}

/// Standard base64 with padding (Java's `Base64.getEncoder()`).
fn base64(b: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(b.len().div_ceil(3) * 4);
    for chunk in b.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &x)| acc | (u32::from(x) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(name: &str, transform: &str, ty: &str) -> PathField {
        PathField {
            name: name.into(),
            transform: transform.into(),
            result_type: ty.into(),
        }
    }

    fn record(values: Vec<PartitionValue>) -> PartitionTuple {
        PartitionTuple::new(
            values
                .into_iter()
                .enumerate()
                .map(|(i, v)| (format!("f{i}"), v))
                .collect(),
        )
    }

    #[test]
    fn transforms_give_their_human_forms() {
        let fields = vec![
            field("day", "day", "date"),
            field("month", "month", "int"),
            field("year", "year", "int"),
            field("hour", "hour", "int"),
            field("b", "bucket[16]", "int"),
            field("name", "identity", "string"),
            field("n", "identity", "long"),
            field("missing", "identity", "int"),
        ];
        let p = record(vec![
            PartitionValue::Int(19_875), // 2024-06-01
            PartitionValue::Int(653),    // 2024-06
            PartitionValue::Int(54),
            PartitionValue::Int(477_010), // 2024-06-01 10:00
            PartitionValue::Int(3),
            PartitionValue::String("a b/c=d&é".into()),
            PartitionValue::Long(-7),
            PartitionValue::Null,
        ]);
        assert_eq!(
            partition_path(&fields, &p),
            "day=2024-06-01/month=2024-06/year=2024/hour=2024-06-01-10/b=3/\
             name=a+b%2Fc%3Dd%26%C3%A9/n=-7/missing=null"
        );
        assert_eq!(partition_path(&[], &PartitionTuple::default()), "");
    }

    #[test]
    fn typed_identity_values() {
        let fields = vec![
            field("d", "identity", "date"),
            field("ts", "identity", "timestamp"),
            field("tz", "identity", "timestamptz"),
            field("dec", "identity", "decimal(9,2)"),
            field("neg", "identity", "decimal(5,3)"),
            field("bin", "identity", "binary"),
            field("ok", "identity", "boolean"),
            field("x", "truncate[4]", "string"),
            field("f", "identity", "double"),
        ];
        let p = record(vec![
            PartitionValue::Int(-1),
            PartitionValue::Long(1_717_236_000_500_000),
            PartitionValue::Long(0),
            PartitionValue::Bytes(vec![0x30, 0x39]), // 12345 → 123.45
            PartitionValue::Fixed(vec![0xf9]),       // -7 → -0.007
            PartitionValue::Bytes(b"hi!?".to_vec()),
            PartitionValue::Boolean(true),
            PartitionValue::String("abcd".into()),
            PartitionValue::Double(1.0),
        ]);
        assert_eq!(
            partition_path(&fields, &p),
            "d=1969-12-31/ts=2024-06-01T10%3A00%3A00.500/tz=1970-01-01T00%3A00%3A00Z/\
             dec=123.45/neg=-0.007/bin=aGkhPw%3D%3D/ok=true/x=abcd/f=1.0"
        );
    }

    #[test]
    fn base64_pads() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
    }
}
