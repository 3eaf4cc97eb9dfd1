//! Iceberg values as the metadata tables show them: a column's lower/upper bound (the spec's
//! single-value binary serialization) and a partition value, rendered as text per Iceberg type.
//!
//! A metadata table has one Arrow schema for every Iceberg table it lists, so values whose type
//! depends on the table (partition values, readable bounds) are text: `int`/`long` in decimal,
//! `float`/`double` as Rust's shortest round-trip form (`1.0`, `NaN`), `date` as `YYYY-MM-DD`,
//! `time` as `HH:MM:SS.ffffff`, timestamps as `YYYY-MM-DD HH:MM:SS.ffffff` (nine digits for the
//! nanosecond types; `+00:00` appended for the `tz` ones), `decimal(P,S)` with `S` digits after
//! the point, `uuid` hyphenated, `fixed`/`binary` as lower-case hex. A bound whose bytes do not fit
//! its type (a malformed manifest) is shown as NULL, never an error.

use serde_json::Value as Json;

use crate::iceberg::partition_tuple::PartitionValue;

/// The type of field `id` in the Iceberg schema (or struct type) `node`, searched recursively.
pub(crate) fn field_type(node: &Json, id: i64) -> Option<&Json> {
    let fields = node.get("fields").and_then(Json::as_array);
    for f in fields.into_iter().flatten() {
        let ty = f.get("type")?;
        if f.get("id").and_then(Json::as_i64) == Some(id) {
            return Some(ty);
        }
        if let Some(found) = nested_type(ty, id) {
            return Some(found);
        }
    }
    None
}

fn nested_type(ty: &Json, id: i64) -> Option<&Json> {
    match ty.get("type").and_then(Json::as_str)? {
        "struct" => field_type(ty, id),
        "list" => {
            let element = ty.get("element")?;
            if ty.get("element-id").and_then(Json::as_i64) == Some(id) {
                return Some(element);
            }
            nested_type(element, id)
        }
        "map" => {
            for (id_key, key) in [("key-id", "key"), ("value-id", "value")] {
                let t = ty.get(key)?;
                if ty.get(id_key).and_then(Json::as_i64) == Some(id) {
                    return Some(t);
                }
                if let Some(found) = nested_type(t, id) {
                    return Some(found);
                }
            }
            None
        }
        _ => None,
    }
}

/// The Iceberg result type of `transform` on a source of type `source` (spec "Partition
/// Transforms"): bucket, year, month and hour give `int`, day gives `date`, the others keep the
/// source type.
pub(crate) fn transform_result(transform: &str, source: &str) -> String {
    let t = transform.trim();
    if t.starts_with("bucket") || matches!(t, "year" | "month" | "hour") {
        "int".into()
    } else if t == "day" {
        "date".into()
    } else {
        source.into()
    }
}

fn le<const N: usize>(bytes: &[u8]) -> Option<[u8; N]> {
    bytes.try_into().ok()
}

/// The bound `bytes` of a column of primitive type `ty`, as a physical value (`None`: the bytes
/// do not fit the type). Promoted columns (`int`→`long`, `float`→`double`) may keep the narrower
/// bounds of files written before the promotion.
pub(crate) fn decode_bound(ty: &str, bytes: &[u8]) -> Option<PartitionValue> {
    use PartitionValue as V;
    Some(match ty {
        "boolean" => V::Boolean(*bytes.first()? != 0),
        "int" | "date" => V::Int(i32::from_le_bytes(le(bytes)?)),
        "long" | "time" | "timestamp" | "timestamptz" | "timestamp_ns" | "timestamptz_ns" => {
            match bytes.len() {
                4 => V::Long(i64::from(i32::from_le_bytes(le(bytes)?))),
                _ => V::Long(i64::from_le_bytes(le(bytes)?)),
            }
        }
        "float" => V::Float(f32::from_le_bytes(le(bytes)?)),
        "double" => match bytes.len() {
            4 => V::Double(f64::from(f32::from_le_bytes(le(bytes)?))),
            _ => V::Double(f64::from_le_bytes(le(bytes)?)),
        },
        "string" => V::String(String::from_utf8(bytes.to_vec()).ok()?),
        "binary" => V::Bytes(bytes.to_vec()),
        t if t.starts_with("decimal") => V::Bytes(bytes.to_vec()),
        "uuid" if bytes.len() == 16 => V::Fixed(bytes.to_vec()),
        t if t.starts_with("fixed") => V::Fixed(bytes.to_vec()),
        _ => return None,
    })
}

/// A value of Iceberg type `ty` as text (see the module comment); `None` for null.
pub(crate) fn render(ty: &str, value: &PartitionValue) -> Option<String> {
    use PartitionValue as V;
    Some(match value {
        V::Null => return None,
        V::Boolean(b) => b.to_string(),
        V::Int(days) if ty == "date" => date(i64::from(*days))?,
        V::Int(i) => i.to_string(),
        V::Long(v) => match ty {
            "time" => time(*v)?,
            "timestamp" => timestamp(*v, 1_000_000)?,
            "timestamptz" => format!("{}+00:00", timestamp(*v, 1_000_000)?),
            "timestamp_ns" => timestamp(*v, 1_000_000_000)?,
            "timestamptz_ns" => format!("{}+00:00", timestamp(*v, 1_000_000_000)?),
            "date" => date(*v)?,
            _ => v.to_string(),
        },
        V::Float(f) => format!("{f:?}"),
        V::Double(d) => format!("{d:?}"),
        V::String(s) => s.clone(),
        V::Bytes(b) | V::Fixed(b) => {
            if let Some(scale) = decimal_scale(ty) {
                decimal(b, scale)?
            } else if ty == "uuid" {
                uuid::Uuid::from_slice(b).ok()?.hyphenated().to_string()
            } else {
                b.iter().map(|x| format!("{x:02x}")).collect()
            }
        }
    })
}

/// A partition summary bound as pyiceberg's human strings show it: `year`, `month` and `hour`
/// results as the period they number (`2024`, `2024-01`, `2024-01-01-10`), else [`render`].
pub(crate) fn render_human(transform: &str, ty: &str, value: &PartitionValue) -> Option<String> {
    let n = match (transform.trim(), value) {
        ("year" | "month" | "hour", PartitionValue::Int(n)) => i64::from(*n),
        _ => return render(ty, value),
    };
    Some(match transform.trim() {
        "year" => format!("{:04}", 1970 + n),
        "month" => format!("{:04}-{:02}", 1970 + n.div_euclid(12), n.rem_euclid(12) + 1),
        _ => {
            let day = date(n.div_euclid(24))?;
            format!("{day}-{:02}", n.rem_euclid(24))
        }
    })
}

fn date(days: i64) -> Option<String> {
    let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1)?;
    let d = epoch.checked_add_signed(chrono::TimeDelta::try_days(days)?)?;
    Some(d.format("%Y-%m-%d").to_string())
}

fn time(micros: i64) -> Option<String> {
    let secs = u32::try_from(micros.div_euclid(1_000_000)).ok()?;
    let nanos = u32::try_from(micros.rem_euclid(1_000_000) * 1000).ok()?;
    let t = chrono::NaiveTime::from_num_seconds_from_midnight_opt(secs, nanos)?;
    Some(t.format("%H:%M:%S%.6f").to_string())
}

fn timestamp(value: i64, per_second: i64) -> Option<String> {
    let secs = value.div_euclid(per_second);
    let frac = value.rem_euclid(per_second);
    let nanos = u32::try_from(frac * (1_000_000_000 / per_second)).ok()?;
    let t = chrono::DateTime::from_timestamp(secs, nanos)?.naive_utc();
    let pattern = if per_second == 1_000_000 {
        "%Y-%m-%d %H:%M:%S%.6f"
    } else {
        "%Y-%m-%d %H:%M:%S%.9f"
    };
    Some(t.format(pattern).to_string())
}

fn decimal_scale(ty: &str) -> Option<u32> {
    let inner = ty.strip_prefix("decimal(")?.strip_suffix(')')?;
    inner.split_once(',')?.1.trim().parse().ok()
}

/// A big-endian two's-complement unscaled value with `scale` digits after the point.
fn decimal(bytes: &[u8], scale: u32) -> Option<String> {
    if bytes.is_empty() || bytes.len() > 16 {
        return None;
    }
    let fill = if bytes[0] & 0x80 != 0 { 0xff } else { 0 };
    let mut full = [fill; 16];
    full[16 - bytes.len()..].copy_from_slice(bytes);
    let unscaled = i128::from_be_bytes(full);
    let digits = unscaled.unsigned_abs().to_string();
    let sign = if unscaled < 0 { "-" } else { "" };
    let scale = scale as usize;
    if scale == 0 {
        return Some(format!("{sign}{digits}"));
    }
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (whole, frac) = padded.split_at(padded.len() - scale);
    Some(format!("{sign}{whole}.{frac}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use PartitionValue as V;

    fn bound(ty: &str, bytes: &[u8]) -> Option<String> {
        render(ty, &decode_bound(ty, bytes)?)
    }

    #[test]
    fn bounds_render_per_type() {
        assert_eq!(bound("int", &7i32.to_le_bytes()).as_deref(), Some("7"));
        assert_eq!(bound("long", &(-3i64).to_le_bytes()).as_deref(), Some("-3"));
        assert_eq!(
            bound("long", &5i32.to_le_bytes()).as_deref(),
            Some("5"),
            "promoted int"
        );
        assert_eq!(
            bound("double", &1.5f32.to_le_bytes()).as_deref(),
            Some("1.5")
        );
        assert_eq!(bound("double", &2f64.to_le_bytes()).as_deref(), Some("2.0"));
        assert_eq!(bound("boolean", &[1]).as_deref(), Some("true"));
        assert_eq!(
            bound("date", &19723i32.to_le_bytes()).as_deref(),
            Some("2024-01-01")
        );
        let micros = 1_704_067_200_000_000i64 + 1_500_000;
        assert_eq!(
            bound("timestamp", &micros.to_le_bytes()).as_deref(),
            Some("2024-01-01 00:00:01.500000")
        );
        assert_eq!(
            bound("timestamptz", &micros.to_le_bytes()).as_deref(),
            Some("2024-01-01 00:00:01.500000+00:00")
        );
        assert_eq!(
            bound("time", &3_661_000_001i64.to_le_bytes()).as_deref(),
            Some("01:01:01.000001")
        );
        assert_eq!(bound("string", b"abc").as_deref(), Some("abc"));
        assert_eq!(bound("binary", &[0, 255]).as_deref(), Some("00ff"));
        assert_eq!(
            bound("decimal(9,2)", &[0x04, 0xd2]).as_deref(),
            Some("12.34")
        );
        assert_eq!(
            bound("decimal(9,3)", &[0xff, 0xfe]).as_deref(),
            Some("-0.002")
        );
        assert_eq!(bound("decimal(5,0)", &[0x7f]).as_deref(), Some("127"));
        let u = uuid::Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef);
        assert_eq!(
            bound("uuid", u.as_bytes()),
            Some(u.hyphenated().to_string())
        );
    }

    #[test]
    fn summary_bounds_name_their_period() {
        assert_eq!(
            render_human("year", "int", &V::Int(54)).as_deref(),
            Some("2024")
        );
        assert_eq!(
            render_human("month", "int", &V::Int(649)).as_deref(),
            Some("2024-02")
        );
        assert_eq!(
            render_human("hour", "int", &V::Int(24 * 19723 + 10)).as_deref(),
            Some("2024-01-01-10")
        );
        assert_eq!(
            render_human("bucket[4]", "int", &V::Int(3)).as_deref(),
            Some("3")
        );
        assert_eq!(
            render_human("day", "date", &V::Int(1)).as_deref(),
            Some("1970-01-02")
        );
    }

    #[test]
    fn malformed_bounds_are_null() {
        assert_eq!(bound("int", &[1, 2]), None);
        assert_eq!(bound("long", &[1, 2, 3]), None);
        assert_eq!(bound("string", &[0xff, 0xfe]), None);
        assert_eq!(bound("uuid", &[1; 3]), None);
        assert_eq!(bound("boolean", &[]), None);
        assert_eq!(bound("decimal(38,2)", &[1; 17]), None);
        assert_eq!(bound("struct", &[1]), None);
    }

    #[test]
    fn partition_values_render_by_result_type() {
        assert_eq!(render("date", &V::Int(0)).as_deref(), Some("1970-01-01"));
        assert_eq!(render("int", &V::Int(54)).as_deref(), Some("54"));
        assert_eq!(render("string", &V::Null), None);
        assert_eq!(transform_result("day", "timestamp"), "date");
        assert_eq!(transform_result("bucket[16]", "string"), "int");
        assert_eq!(transform_result("truncate[4]", "string"), "string");
        assert_eq!(transform_result("identity", "long"), "long");
    }

    #[test]
    fn field_types_are_found_nested() {
        let schema: Json = serde_json::from_str(
            r#"{"type":"struct","fields":[{"id":1,"name":"a","required":true,"type":"long"},
            {"id":2,"name":"s","required":false,"type":{"type":"struct","fields":[{"id":3,"name":"d","required":false,"type":"date"}]}},
            {"id":4,"name":"l","required":false,"type":{"type":"list","element-id":5,"element":"string","element-required":false}}]}"#,
        )
        .unwrap();
        assert_eq!(field_type(&schema, 1), Some(&Json::from("long")));
        assert_eq!(field_type(&schema, 3), Some(&Json::from("date")));
        assert_eq!(field_type(&schema, 5), Some(&Json::from("string")));
        assert_eq!(field_type(&schema, 9), None);
    }
}
