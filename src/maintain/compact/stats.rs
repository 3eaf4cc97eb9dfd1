//! Iceberg metrics of a written Parquet file (Iceberg Java's `ParquetMetrics` rules), from the
//! footer the writer returns plus the NaN counts counted while writing:
//! - `column_sizes`: compressed bytes of every leaf column (whatever the metrics mode);
//! - `value_counts`, `null_value_counts`: per leaf, unless the column's mode is `none`;
//! - `nan_value_counts`: per float/double leaf, unless `none`;
//! - `lower_bounds` / `upper_bounds`: for leaves whose ancestors are all structs (not in a list or
//!   map), in mode `truncate(N)` or `full`, in the spec's single-value binary serialization
//!   (Appendix D); strings and binary are truncated to N (code points / bytes) in `truncate(N)`:
//!   the lower bound is the prefix, the upper bound the prefix with its last code point / byte
//!   incremented (left out when none can be).
//!
//! Modes come from `write.metadata.metrics.default` (default `truncate(16)`) and
//! `write.metadata.metrics.column.<column path>`.

use std::collections::{BTreeMap, HashMap};

use parquet::basic::Type as PhysicalType;
use parquet::file::metadata::ParquetMetaData;
use serde_json::Value as Json;

use crate::error::{Error, Result};

/// A column's metrics mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricsMode {
    None,
    Counts,
    Truncate(usize),
    Full,
}

impl MetricsMode {
    /// Parses a property value (`none`, `counts`, `truncate(N)`, `full`).
    pub fn parse(text: &str) -> Result<MetricsMode> {
        let t = text.trim().to_ascii_lowercase();
        match t.as_str() {
            "none" => return Ok(MetricsMode::None),
            "counts" => return Ok(MetricsMode::Counts),
            "full" => return Ok(MetricsMode::Full),
            _ => {}
        }
        t.strip_prefix("truncate(")
            .and_then(|s| s.strip_suffix(')'))
            .and_then(|n| n.trim().parse::<usize>().ok())
            .filter(|n| *n > 0)
            .map(MetricsMode::Truncate)
            .ok_or_else(|| {
                Error::bad_arguments(format!(
                    "invalid metrics mode '{text}' (none, counts, truncate(N) or full)"
                ))
            })
    }
}

/// What the writer needs to know of one leaf field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeafInfo {
    /// The Iceberg primitive type.
    pub ty: String,
    /// Every ancestor is a struct.
    pub bounds_allowed: bool,
    pub mode: MetricsMode,
}

/// Leaf field id → what its metrics need, from the schema JSON and table properties.
pub fn leaf_infos(
    schema: &Json,
    properties: &BTreeMap<String, String>,
) -> Result<HashMap<i32, LeafInfo>> {
    let default = properties
        .get("write.metadata.metrics.default")
        .map(|t| MetricsMode::parse(t))
        .transpose()?
        .unwrap_or(MetricsMode::Truncate(16));
    let mut out = HashMap::new();
    walk(schema, "", true, properties, default, &mut out)?;
    Ok(out)
}

fn walk(
    node: &Json,
    prefix: &str,
    structs_only: bool,
    props: &BTreeMap<String, String>,
    default: MetricsMode,
    out: &mut HashMap<i32, LeafInfo>,
) -> Result<()> {
    let Some(fields) = node.get("fields").and_then(Json::as_array) else {
        return Ok(());
    };
    for f in fields {
        let (Some(name), Some(id)) = (
            f.get("name").and_then(Json::as_str),
            f.get("id").and_then(Json::as_i64),
        ) else {
            continue;
        };
        let path = if prefix.is_empty() {
            name.to_string()
        } else {
            format!("{prefix}.{name}")
        };
        let Some(ty) = f.get("type") else { continue };
        leaf_or_nested(ty, id, &path, structs_only, props, default, out)?;
    }
    Ok(())
}

fn leaf_or_nested(
    ty: &Json,
    id: i64,
    path: &str,
    structs_only: bool,
    props: &BTreeMap<String, String>,
    default: MetricsMode,
    out: &mut HashMap<i32, LeafInfo>,
) -> Result<()> {
    if let Some(text) = ty.as_str() {
        let mode = match props.get(&format!("write.metadata.metrics.column.{path}")) {
            Some(t) => MetricsMode::parse(t)?,
            None => default,
        };
        if let Ok(id) = i32::try_from(id) {
            out.insert(
                id,
                LeafInfo {
                    ty: text.to_string(),
                    bounds_allowed: structs_only,
                    mode,
                },
            );
        }
        return Ok(());
    }
    match ty.get("type").and_then(Json::as_str) {
        Some("struct") => walk(ty, path, structs_only, props, default, out),
        Some("list") => {
            let id = ty.get("element-id").and_then(Json::as_i64).unwrap_or(-1);
            let element = ty.get("element").cloned().unwrap_or(Json::Null);
            leaf_or_nested(
                &element,
                id,
                &format!("{path}.element"),
                false,
                props,
                default,
                out,
            )
        }
        Some("map") => {
            for (k, idk, name) in [("key", "key-id", "key"), ("value", "value-id", "value")] {
                let id = ty.get(idk).and_then(Json::as_i64).unwrap_or(-1);
                let t = ty.get(k).cloned().unwrap_or(Json::Null);
                leaf_or_nested(
                    &t,
                    id,
                    &format!("{path}.{name}"),
                    false,
                    props,
                    default,
                    out,
                )?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The metrics maps of one data file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FileMetrics {
    pub record_count: i64,
    pub column_sizes: BTreeMap<i32, i64>,
    pub value_counts: BTreeMap<i32, i64>,
    pub null_value_counts: BTreeMap<i32, i64>,
    pub nan_value_counts: BTreeMap<i32, i64>,
    pub lower_bounds: BTreeMap<i32, Vec<u8>>,
    pub upper_bounds: BTreeMap<i32, Vec<u8>>,
    pub split_offsets: Vec<i64>,
}

/// The metrics of the file whose footer is `meta`; `nan_counts` were counted while writing.
pub fn file_metrics(
    meta: &ParquetMetaData,
    leaves: &HashMap<i32, LeafInfo>,
    nan_counts: &HashMap<i32, i64>,
) -> FileMetrics {
    let mut m = FileMetrics::default();
    let mut lower: HashMap<i32, Vec<u8>> = HashMap::new();
    let mut upper: HashMap<i32, Vec<u8>> = HashMap::new();
    let mut no_stats: std::collections::HashSet<i32> = Default::default();
    for rg in meta.row_groups() {
        m.record_count += rg.num_rows();
        if let Some(first) = rg.columns().first() {
            let start = first
                .dictionary_page_offset()
                .unwrap_or_else(|| first.data_page_offset());
            m.split_offsets.push(start);
        }
        for col in rg.columns() {
            let t = col.column_descr().self_type();
            if !t.get_basic_info().has_id() {
                continue;
            }
            let id = t.get_basic_info().id();
            *m.column_sizes.entry(id).or_default() += col.compressed_size();
            let Some(info) = leaves.get(&id) else {
                continue;
            };
            if info.mode == MetricsMode::None {
                continue;
            }
            *m.value_counts.entry(id).or_default() += col.num_values();
            let Some(stats) = col.statistics() else {
                no_stats.insert(id);
                continue;
            };
            match stats.null_count_opt() {
                Some(n) => *m.null_value_counts.entry(id).or_default() += n as i64,
                None => {
                    no_stats.insert(id);
                }
            }
            if matches!(info.mode, MetricsMode::Counts) || !info.bounds_allowed {
                continue;
            }
            if let (Some(lo), Some(hi)) = (stats.min_bytes_opt(), stats.max_bytes_opt()) {
                let physical = col.column_descr().physical_type();
                let (Some(lo), Some(hi)) = (
                    iceberg_bytes(&info.ty, physical, lo),
                    iceberg_bytes(&info.ty, physical, hi),
                ) else {
                    continue;
                };
                let keep_lo = lower
                    .get(&id)
                    .is_none_or(|cur| compare(&info.ty, &lo, cur).is_lt());
                if keep_lo {
                    lower.insert(id, lo);
                }
                let keep_hi = upper
                    .get(&id)
                    .is_none_or(|cur| compare(&info.ty, &hi, cur).is_gt());
                if keep_hi {
                    upper.insert(id, hi);
                }
            }
        }
    }
    for id in no_stats {
        m.null_value_counts.remove(&id);
        lower.remove(&id);
        upper.remove(&id);
    }
    for (id, info) in leaves {
        if info.mode != MetricsMode::None
            && matches!(info.ty.as_str(), "float" | "double")
            && m.value_counts.contains_key(id)
        {
            m.nan_value_counts
                .insert(*id, nan_counts.get(id).copied().unwrap_or(0));
        }
    }
    for (id, lo) in lower {
        let info = &leaves[&id];
        if let Some(b) = truncate_lower(&info.ty, info.mode, lo) {
            m.lower_bounds.insert(id, b);
        }
    }
    for (id, hi) in upper {
        let info = &leaves[&id];
        if let Some(b) = truncate_upper(&info.ty, info.mode, hi) {
            m.upper_bounds.insert(id, b);
        }
    }
    m
}

/// Parquet's plain-encoded statistic as Iceberg's single-value serialization of `ty`.
fn iceberg_bytes(ty: &str, physical: PhysicalType, plain: &[u8]) -> Option<Vec<u8>> {
    if ty.starts_with("decimal(") {
        // INT32 / INT64 (little-endian) or FIXED / BINARY (big-endian two's complement).
        let v: i128 = match (physical, plain.len()) {
            (PhysicalType::INT32, 4) => i128::from(i32::from_le_bytes(plain.try_into().ok()?)),
            (PhysicalType::INT64, 8) => i128::from(i64::from_le_bytes(plain.try_into().ok()?)),
            (PhysicalType::FIXED_LEN_BYTE_ARRAY | PhysicalType::BYTE_ARRAY, n)
                if n <= 16 && n > 0 =>
            {
                let negative = plain[0] & 0x80 != 0;
                let mut buf = [if negative { 0xff } else { 0 }; 16];
                buf[16 - n..].copy_from_slice(plain);
                i128::from_be_bytes(buf)
            }
            _ => return None,
        };
        return Some(minimal_be(v));
    }
    match ty {
        "boolean" => plain.first().map(|b| vec![u8::from(*b != 0)]),
        "int" | "date" if plain.len() == 4 => Some(plain.to_vec()),
        "long" | "time" | "timestamp" | "timestamptz" | "timestamp_ns" | "timestamptz_ns"
            if plain.len() == 8 =>
        {
            Some(plain.to_vec())
        }
        "float" if plain.len() == 4 => {
            let v = f32::from_le_bytes(plain.try_into().ok()?);
            (!v.is_nan()).then(|| plain.to_vec())
        }
        "double" if plain.len() == 8 => {
            let v = f64::from_le_bytes(plain.try_into().ok()?);
            (!v.is_nan()).then(|| plain.to_vec())
        }
        "string" | "binary" | "uuid" => Some(plain.to_vec()),
        t if t.starts_with("fixed[") => Some(plain.to_vec()),
        _ => None,
    }
}

/// The unscaled value in the fewest big-endian two's-complement bytes.
pub fn minimal_be(v: i128) -> Vec<u8> {
    let bytes = v.to_be_bytes();
    let mut start = 0;
    while start < 15 {
        let (b, next) = (bytes[start], bytes[start + 1]);
        if (b == 0 && next & 0x80 == 0) || (b == 0xff && next & 0x80 != 0) {
            start += 1;
        } else {
            break;
        }
    }
    bytes[start..].to_vec()
}

fn compare(ty: &str, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let le_i = |x: &[u8]| -> i64 {
        match x.len() {
            4 => i64::from(i32::from_le_bytes(x.try_into().unwrap_or([0; 4]))),
            8 => i64::from_le_bytes(x.try_into().unwrap_or([0; 8])),
            _ => 0,
        }
    };
    let be_i = |x: &[u8]| -> i128 {
        if x.is_empty() || x.len() > 16 {
            return 0;
        }
        let negative = x[0] & 0x80 != 0;
        let mut buf = [if negative { 0xff } else { 0 }; 16];
        buf[16 - x.len()..].copy_from_slice(x);
        i128::from_be_bytes(buf)
    };
    match ty {
        "int" | "date" | "long" | "time" | "timestamp" | "timestamptz" | "timestamp_ns"
        | "timestamptz_ns" => le_i(a).cmp(&le_i(b)),
        "float" => {
            let f = |x: &[u8]| f32::from_le_bytes(x.try_into().unwrap_or([0; 4]));
            f(a).total_cmp(&f(b))
        }
        "double" => {
            let f = |x: &[u8]| f64::from_le_bytes(x.try_into().unwrap_or([0; 8]));
            f(a).total_cmp(&f(b))
        }
        t if t.starts_with("decimal(") => be_i(a).cmp(&be_i(b)),
        _ => a.cmp(b),
    }
}

fn truncatable(ty: &str) -> bool {
    ty == "string" || ty == "binary" || ty.starts_with("fixed[")
}

fn truncate_lower(ty: &str, mode: MetricsMode, v: Vec<u8>) -> Option<Vec<u8>> {
    let MetricsMode::Truncate(n) = mode else {
        return Some(v);
    };
    if !truncatable(ty) {
        return Some(v);
    }
    if ty == "string" {
        let s = std::str::from_utf8(&v).ok()?;
        return Some(s.chars().take(n).collect::<String>().into_bytes());
    }
    Some(v[..v.len().min(n)].to_vec())
}

fn truncate_upper(ty: &str, mode: MetricsMode, v: Vec<u8>) -> Option<Vec<u8>> {
    let MetricsMode::Truncate(n) = mode else {
        return Some(v);
    };
    if !truncatable(ty) {
        return Some(v);
    }
    if ty == "string" {
        let s = std::str::from_utf8(&v).ok()?;
        let chars: Vec<char> = s.chars().collect();
        if chars.len() <= n {
            return Some(v);
        }
        let mut prefix: Vec<char> = chars[..n].to_vec();
        while let Some(last) = prefix.pop() {
            let mut next = last as u32 + 1;
            if (0xD800..=0xDFFF).contains(&next) {
                next = 0xE000;
            }
            if let Some(c) = char::from_u32(next) {
                prefix.push(c);
                return Some(prefix.into_iter().collect::<String>().into_bytes());
            }
        }
        return None;
    }
    if v.len() <= n {
        return Some(v);
    }
    let mut prefix = v[..n].to_vec();
    while let Some(last) = prefix.pop() {
        if last < 0xff {
            prefix.push(last + 1);
            return Some(prefix);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse() {
        assert_eq!(
            MetricsMode::parse("truncate(16)").unwrap(),
            MetricsMode::Truncate(16)
        );
        assert_eq!(MetricsMode::parse("FULL").unwrap(), MetricsMode::Full);
        assert!(MetricsMode::parse("truncate(0)").is_err());
        assert!(MetricsMode::parse("bogus").is_err());
    }

    #[test]
    fn truncation_follows_java() {
        let t = MetricsMode::Truncate(3);
        assert_eq!(
            truncate_lower("string", t, b"abcdef".to_vec()).unwrap(),
            b"abc"
        );
        assert_eq!(
            truncate_upper("string", t, b"abcdef".to_vec()).unwrap(),
            b"abd"
        );
        assert_eq!(truncate_upper("string", t, b"ab".to_vec()).unwrap(), b"ab");
        assert_eq!(
            truncate_upper("binary", t, vec![1, 0xff, 0xff, 4]).unwrap(),
            vec![2]
        );
        assert_eq!(truncate_upper("binary", t, vec![0xff, 0xff, 0xff, 4]), None);
        let s = "aé😀x".to_string();
        let up = truncate_upper("string", t, s.into_bytes()).unwrap();
        assert_eq!(String::from_utf8(up).unwrap(), "aé😁");
        assert_eq!(truncate_upper("long", t, vec![1; 8]).unwrap(), vec![1; 8]);
    }

    #[test]
    fn decimals_are_minimal_big_endian() {
        assert_eq!(minimal_be(0), vec![0]);
        assert_eq!(minimal_be(127), vec![0x7f]);
        assert_eq!(minimal_be(128), vec![0x00, 0x80]);
        assert_eq!(minimal_be(-1), vec![0xff]);
        assert_eq!(minimal_be(-129), vec![0xff, 0x7f]);
        let fixed = PhysicalType::FIXED_LEN_BYTE_ARRAY;
        assert_eq!(
            iceberg_bytes("decimal(5,2)", PhysicalType::INT32, &1234i32.to_le_bytes()),
            Some(vec![0x04, 0xd2])
        );
        assert_eq!(
            iceberg_bytes("decimal(9,2)", fixed, &[0xff, 0xff, 0xff, 0xfe]),
            Some(vec![0xfe])
        );
        let nan = f64::NAN.to_le_bytes();
        assert_eq!(iceberg_bytes("double", PhysicalType::DOUBLE, &nan), None);
    }

    #[test]
    fn leaves_know_their_modes_and_bound_rules() {
        let schema = serde_json::json!({"type": "struct", "fields": [
            {"id": 1, "name": "a", "required": false, "type": "string"},
            {"id": 2, "name": "l", "required": false, "type":
                {"type": "list", "element-id": 3, "element": "int", "element-required": false}},
            {"id": 4, "name": "s", "required": false, "type":
                {"type": "struct", "fields": [{"id": 5, "name": "x", "required": false, "type": "double"}]}}
        ]});
        let mut props = BTreeMap::new();
        props.insert("write.metadata.metrics.column.s.x".into(), "counts".into());
        let leaves = leaf_infos(&schema, &props).unwrap();
        assert_eq!(leaves[&1].mode, MetricsMode::Truncate(16));
        assert!(leaves[&1].bounds_allowed);
        assert!(!leaves[&3].bounds_allowed);
        assert_eq!(leaves[&5].mode, MetricsMode::Counts);
    }
}
