//! Iceberg's partition and sort transforms over Arrow arrays (pure), as the spec's "Partition
//! Transforms" section defines them:
//!
//! - `identity`: the value; `void`: always null (the source type).
//! - `bucket[N]`: `(murmur3_x86_32(v) & i32::MAX) % N`, seed 0, the value hashed as Appendix B
//!   says: int, long, date, time, timestamp(tz) as the 8 little-endian bytes of a long (dates in
//!   days, times and timestamps in microseconds; nanosecond timestamps floored to microseconds
//!   first), decimal as the minimal big-endian two's-complement bytes of the unscaled value,
//!   string as its UTF-8 bytes, uuid / fixed / binary as their bytes.
//! - `truncate[W]`: int and long `v - (v mod W)` with a non-negative remainder, decimal the same on
//!   the unscaled value (scale kept), string the first `W` code points, binary the first `W`
//!   bytes.
//! - `year`, `month`, `day`, `hour`: calendar years / months since 1970, days / hours since the
//!   epoch (floored: 1969-12-31 is day -1); `day` gives a date, the others an int.
//!
//! Every transform maps null to null. A transform on a type the spec does not allow it on is a
//! `NOT_IMPLEMENTED` error naming the transform and the type.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Int32Type, Int64Type, Time64MicrosecondType,
    TimestampMicrosecondType, TimestampNanosecondType,
};
use arrow_array::{
    Array, ArrayRef, BinaryArray, Date32Array, Int32Array, PrimitiveArray, StringArray,
    new_null_array,
};
use arrow_schema::{DataType, TimeUnit};
use chrono::Datelike;

use crate::error::{Error, Result};

const MICROS_PER_HOUR: i64 = 3_600_000_000;
const MICROS_PER_DAY: i64 = 86_400_000_000;

/// One transform, parsed from its spec text (`identity`, `bucket[16]`, `truncate[4]`, `day`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transform {
    Identity,
    Bucket(u32),
    Truncate(u32),
    Year,
    Month,
    Day,
    Hour,
    Void,
}

fn parameter(text: &str, name: &str) -> Option<u32> {
    text.strip_prefix(name)?
        .strip_prefix('[')?
        .strip_suffix(']')?
        .trim()
        .parse::<u32>()
        .ok()
        .filter(|n| *n > 0)
}

impl Transform {
    /// Parses a transform as the spec writes it; `NOT_IMPLEMENTED` for anything else.
    pub fn parse(text: &str) -> Result<Transform> {
        let t = text.trim();
        Ok(match t {
            "identity" => Transform::Identity,
            "year" => Transform::Year,
            "month" => Transform::Month,
            "day" => Transform::Day,
            "hour" => Transform::Hour,
            "void" => Transform::Void,
            _ => {
                if let Some(n) = parameter(t, "bucket") {
                    Transform::Bucket(n)
                } else if let Some(w) = parameter(t, "truncate") {
                    Transform::Truncate(w)
                } else {
                    return Err(Error::not_implemented(format!(
                        "transform '{text}' is not supported"
                    )));
                }
            }
        })
    }

    /// The Arrow type of the transform's result on `source`.
    pub fn result_type(&self, source: &DataType) -> DataType {
        match self {
            Transform::Identity | Transform::Truncate(_) | Transform::Void => source.clone(),
            Transform::Bucket(_) | Transform::Year | Transform::Month | Transform::Hour => {
                DataType::Int32
            }
            Transform::Day => DataType::Date32,
        }
    }

    /// The transform of every value of `array`.
    pub fn apply(&self, array: &ArrayRef) -> Result<ArrayRef> {
        let unsupported = || {
            Error::not_implemented(format!(
                "transform {self:?} cannot be applied to values of type {}",
                array.data_type()
            ))
        };
        match self {
            Transform::Identity => Ok(array.clone()),
            Transform::Void => Ok(new_null_array(array.data_type(), array.len())),
            Transform::Bucket(n) => {
                let n = *n as i32;
                let hashes = hashes(array).ok_or_else(unsupported)?;
                Ok(Arc::new(
                    hashes
                        .into_iter()
                        .map(|h| h.map(|h| bucket(h, n)))
                        .collect::<Int32Array>(),
                ))
            }
            Transform::Truncate(w) => truncate(array, *w).ok_or_else(unsupported),
            Transform::Year | Transform::Month | Transform::Day | Transform::Hour => {
                time(*self, array).ok_or_else(unsupported)
            }
        }
    }
}

/// 32-bit Murmur3, x86 variant, seed 0, as a signed int (Java's `int`).
pub fn murmur3_32(bytes: &[u8]) -> i32 {
    let mut cursor = std::io::Cursor::new(bytes);
    // Reading from memory cannot fail.
    murmur3::murmur3_32(&mut cursor, 0).unwrap_or(0) as i32
}

/// `hashLong`: the 8 little-endian bytes of `v`.
pub fn hash_long(v: i64) -> i32 {
    murmur3_32(&v.to_le_bytes())
}

/// The minimal big-endian two's-complement bytes of `v` (Java's `BigInteger.toByteArray`).
pub fn min_big_endian(v: i128) -> Vec<u8> {
    let bytes = v.to_be_bytes();
    let mut start = 0;
    while start < 15 {
        let (b, next) = (bytes[start], bytes[start + 1]);
        let redundant = (b == 0x00 && next & 0x80 == 0) || (b == 0xff && next & 0x80 != 0);
        if !redundant {
            break;
        }
        start += 1;
    }
    bytes[start..].to_vec()
}

/// `(hash & Integer.MAX_VALUE) % n`.
pub fn bucket(hash: i32, n: i32) -> i32 {
    (hash & i32::MAX) % n
}

/// The Appendix B hash of every value of `array`; `None` when the type cannot be bucketed.
fn hashes(array: &ArrayRef) -> Option<Vec<Option<i32>>> {
    let longs = |it: &mut dyn Iterator<Item = Option<i64>>| -> Vec<Option<i32>> {
        it.map(|v| v.map(hash_long)).collect()
    };
    Some(match array.data_type() {
        DataType::Int32 => longs(
            &mut array
                .as_primitive::<Int32Type>()
                .iter()
                .map(|v| v.map(i64::from)),
        ),
        DataType::Int64 => longs(&mut array.as_primitive::<Int64Type>().iter()),
        DataType::Date32 => longs(
            &mut array
                .as_primitive::<Date32Type>()
                .iter()
                .map(|v| v.map(i64::from)),
        ),
        DataType::Time64(TimeUnit::Microsecond) => {
            longs(&mut array.as_primitive::<Time64MicrosecondType>().iter())
        }
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            longs(&mut array.as_primitive::<TimestampMicrosecondType>().iter())
        }
        DataType::Timestamp(TimeUnit::Nanosecond, _) => longs(
            &mut array
                .as_primitive::<TimestampNanosecondType>()
                .iter()
                .map(|v| v.map(|ns| ns.div_euclid(1000))),
        ),
        DataType::Decimal128(_, _) => array
            .as_primitive::<Decimal128Type>()
            .iter()
            .map(|v| v.map(|u| murmur3_32(&min_big_endian(u))))
            .collect(),
        DataType::Utf8 => array
            .as_string::<i32>()
            .iter()
            .map(|v| v.map(|s| murmur3_32(s.as_bytes())))
            .collect(),
        DataType::LargeUtf8 => array
            .as_string::<i64>()
            .iter()
            .map(|v| v.map(|s| murmur3_32(s.as_bytes())))
            .collect(),
        DataType::Binary => array
            .as_binary::<i32>()
            .iter()
            .map(|v| v.map(murmur3_32))
            .collect(),
        DataType::LargeBinary => array
            .as_binary::<i64>()
            .iter()
            .map(|v| v.map(murmur3_32))
            .collect(),
        DataType::FixedSizeBinary(_) => array
            .as_fixed_size_binary()
            .iter()
            .map(|v| v.map(murmur3_32))
            .collect(),
        _ => return None,
    })
}

/// The first `w` code points of `s`.
pub fn truncate_str(s: &str, w: usize) -> &str {
    match s.char_indices().nth(w) {
        Some((at, _)) => &s[..at],
        None => s,
    }
}

fn truncate(array: &ArrayRef, w: u32) -> Option<ArrayRef> {
    let out: ArrayRef = match array.data_type() {
        DataType::Int32 => {
            let w = i32::try_from(w).ok()?;
            Arc::new(
                array
                    .as_primitive::<Int32Type>()
                    .unary::<_, Int32Type>(|v| v.wrapping_sub(v.rem_euclid(w))),
            )
        }
        DataType::Int64 => {
            let w = i64::from(w);
            Arc::new(
                array
                    .as_primitive::<Int64Type>()
                    .unary::<_, Int64Type>(|v| v.wrapping_sub(v.rem_euclid(w))),
            )
        }
        DataType::Decimal128(p, s) => {
            let w = i128::from(w);
            let out: PrimitiveArray<Decimal128Type> = array
                .as_primitive::<Decimal128Type>()
                .unary(|v| v.wrapping_sub(v.rem_euclid(w)));
            Arc::new(out.with_precision_and_scale(*p, *s).ok()?)
        }
        DataType::Utf8 => Arc::new(
            array
                .as_string::<i32>()
                .iter()
                .map(|v| v.map(|s| truncate_str(s, w as usize)))
                .collect::<StringArray>(),
        ),
        DataType::Binary => Arc::new(
            array
                .as_binary::<i32>()
                .iter()
                .map(|v| v.map(|b| &b[..b.len().min(w as usize)]))
                .collect::<BinaryArray>(),
        ),
        _ => return None,
    };
    Some(out)
}

/// Microseconds since the epoch of every value (dates at midnight), for the time transforms.
fn micros(array: &ArrayRef, allow_date: bool) -> Option<Vec<Option<i64>>> {
    Some(match array.data_type() {
        DataType::Date32 if allow_date => array
            .as_primitive::<Date32Type>()
            .iter()
            .map(|v| v.map(|d| i64::from(d) * MICROS_PER_DAY))
            .collect(),
        DataType::Timestamp(TimeUnit::Microsecond, _) => array
            .as_primitive::<TimestampMicrosecondType>()
            .iter()
            .collect(),
        DataType::Timestamp(TimeUnit::Nanosecond, _) => array
            .as_primitive::<TimestampNanosecondType>()
            .iter()
            .map(|v| v.map(|ns| ns.div_euclid(1000)))
            .collect(),
        _ => return None,
    })
}

/// Calendar years and months since 1970 of a time in microseconds.
fn years_months(us: i64) -> Option<(i32, i32)> {
    let days = us.div_euclid(MICROS_PER_DAY);
    let date = chrono::NaiveDate::from_ymd_opt(1970, 1, 1)?
        .checked_add_signed(chrono::Duration::try_days(days)?)?;
    let years = date.year() - 1970;
    Some((years, years * 12 + date.month0() as i32))
}

fn time(t: Transform, array: &ArrayRef) -> Option<ArrayRef> {
    let values = micros(array, t != Transform::Hour)?;
    Some(match t {
        Transform::Day => Arc::new(
            values
                .into_iter()
                .map(|v| v.and_then(|us| i32::try_from(us.div_euclid(MICROS_PER_DAY)).ok()))
                .collect::<Date32Array>(),
        ),
        Transform::Hour => Arc::new(
            values
                .into_iter()
                .map(|v| v.and_then(|us| i32::try_from(us.div_euclid(MICROS_PER_HOUR)).ok()))
                .collect::<Int32Array>(),
        ),
        Transform::Year => Arc::new(
            values
                .into_iter()
                .map(|v| v.and_then(years_months).map(|(y, _)| y))
                .collect::<Int32Array>(),
        ),
        Transform::Month => Arc::new(
            values
                .into_iter()
                .map(|v| v.and_then(years_months).map(|(_, m)| m))
                .collect::<Int32Array>(),
        ),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{
        Decimal128Array, FixedSizeBinaryArray, Int64Array, Time64MicrosecondArray,
        TimestampMicrosecondArray, TimestampNanosecondArray,
    };

    fn one(t: Transform, a: ArrayRef) -> ArrayRef {
        t.apply(&a).unwrap()
    }

    fn hash_of(a: ArrayRef) -> i32 {
        hashes(&a).unwrap()[0].unwrap()
    }

    /// The spec's Appendix B test values ("32-bit Hash Requirements").
    #[test]
    fn appendix_b_hash_vectors() {
        assert_eq!(hash_of(Arc::new(Int32Array::from(vec![34]))), 2017239379);
        assert_eq!(hash_of(Arc::new(Int64Array::from(vec![34i64]))), 2017239379);
        // decimal(9,2) 14.20: unscaled 1420.
        let d = Decimal128Array::from(vec![1420i128])
            .with_precision_and_scale(9, 2)
            .unwrap();
        assert_eq!(hash_of(Arc::new(d)), -500754589);
        // 2017-11-16 = day 17486.
        assert_eq!(
            hash_of(Arc::new(Date32Array::from(vec![17486]))),
            -653330422
        );
        // 22:31:08.
        let t = Time64MicrosecondArray::from(vec![81_068_000_000i64]);
        assert_eq!(hash_of(Arc::new(t)), -662762989);
        // 2017-11-16T22:31:08 and .000001, with and without zone, micros and nanos.
        let ts = 1_510_871_468_000_000i64;
        let plain = TimestampMicrosecondArray::from(vec![ts, ts + 1]);
        let h = hashes(&(Arc::new(plain) as ArrayRef)).unwrap();
        assert_eq!(h, [Some(-2047944441), Some(-1207196810)]);
        let tz = TimestampMicrosecondArray::from(vec![ts, ts + 1]).with_timezone("+00:00");
        let h = hashes(&(Arc::new(tz) as ArrayRef)).unwrap();
        assert_eq!(h, [Some(-2047944441), Some(-1207196810)]);
        let ns = TimestampNanosecondArray::from(vec![ts * 1000, (ts + 1) * 1000 + 1]);
        let h = hashes(&(Arc::new(ns) as ArrayRef)).unwrap();
        assert_eq!(h, [Some(-2047944441), Some(-1207196810)]);
        assert_eq!(
            hash_of(Arc::new(StringArray::from(vec!["iceberg"]))),
            1210000089
        );
        let uuid = [
            0xF7, 0x9C, 0x3E, 0x09, 0x67, 0x7C, 0x4B, 0xBD, 0xA4, 0x79, 0x3F, 0x34, 0x9C, 0xB7,
            0x85, 0xE7,
        ];
        let u = FixedSizeBinaryArray::try_from_iter(std::iter::once(uuid)).unwrap();
        assert_eq!(hash_of(Arc::new(u)), 1488055340);
        let f = FixedSizeBinaryArray::try_from_iter(std::iter::once([0u8, 1, 2, 3])).unwrap();
        assert_eq!(hash_of(Arc::new(f)), -188683207);
        let b = BinaryArray::from(vec![&[0u8, 1, 2, 3][..]]);
        assert_eq!(hash_of(Arc::new(b)), -188683207);
        // Bucket: (2017239379 & MAX) % 16 = 3; "iceberg" in 16 buckets = 9 (1210000089 % 16).
        let b = one(
            Transform::Bucket(16),
            Arc::new(Int64Array::from(vec![Some(34), None])),
        );
        let b = b.as_primitive::<Int32Type>();
        assert_eq!((b.value(0), b.is_null(1)), (3, true));
        let s = one(
            Transform::Bucket(16),
            Arc::new(StringArray::from(vec!["iceberg"])),
        );
        assert_eq!(s.as_primitive::<Int32Type>().value(0), 9);
        // A negative hash loses its sign bit first: -653330422 & MAX = 1494153226.
        let d = one(
            Transform::Bucket(100),
            Arc::new(Date32Array::from(vec![17486])),
        );
        assert_eq!(d.as_primitive::<Int32Type>().value(0), 1494153226 % 100);
    }

    #[test]
    fn minimal_big_endian_bytes() {
        assert_eq!(min_big_endian(0), [0]);
        assert_eq!(min_big_endian(1420), [0x05, 0x8c]);
        assert_eq!(min_big_endian(127), [0x7f]);
        assert_eq!(min_big_endian(128), [0x00, 0x80]);
        assert_eq!(min_big_endian(-1), [0xff]);
        assert_eq!(min_big_endian(-128), [0x80]);
        assert_eq!(min_big_endian(-129), [0xff, 0x7f]);
    }

    /// The spec's truncate examples.
    #[test]
    fn truncate_examples() {
        let i = one(
            Transform::Truncate(10),
            Arc::new(Int32Array::from(vec![1, -1, 10, 19])),
        );
        assert_eq!(i.as_primitive::<Int32Type>().values(), &[0, -10, 10, 10]);
        let l = one(
            Transform::Truncate(10),
            Arc::new(Int64Array::from(vec![1i64, -1])),
        );
        assert_eq!(l.as_primitive::<Int64Type>().values(), &[0, -10]);
        // W=50, scale 2: 10.65 -> 10.50.
        let d = Decimal128Array::from(vec![1065i128])
            .with_precision_and_scale(9, 2)
            .unwrap();
        let d = one(Transform::Truncate(50), Arc::new(d));
        assert_eq!(d.data_type(), &DataType::Decimal128(9, 2));
        assert_eq!(d.as_primitive::<Decimal128Type>().value(0), 1050);
        let s = one(
            Transform::Truncate(3),
            Arc::new(StringArray::from(vec![
                Some("iceberg"),
                Some("éçà€x"),
                Some("ab"),
                None,
            ])),
        );
        let s = s.as_string::<i32>();
        assert_eq!((s.value(0), s.value(1), s.value(2)), ("ice", "éçà", "ab"));
        assert!(s.is_null(3));
        let b = one(
            Transform::Truncate(3),
            Arc::new(BinaryArray::from(vec![&[1u8, 2, 3, 4, 5][..]])),
        );
        assert_eq!(b.as_binary::<i32>().value(0), &[1, 2, 3]);
        assert!(
            Transform::Truncate(3)
                .apply(&(Arc::new(Date32Array::from(vec![1])) as ArrayRef))
                .is_err()
        );
    }

    #[test]
    fn time_transforms_floor_before_the_epoch() {
        // 2017-11-16 (day 17486), 1969-12-31 (day -1), 1970-01-01.
        let dates: ArrayRef = Arc::new(Date32Array::from(vec![
            Some(17486),
            Some(-1),
            Some(0),
            None,
        ]));
        let y = one(Transform::Year, dates.clone());
        let y = y.as_primitive::<Int32Type>();
        assert_eq!(
            (y.value(0), y.value(1), y.value(2), y.is_null(3)),
            (47, -1, 0, true)
        );
        let m = one(Transform::Month, dates.clone());
        assert_eq!(
            &m.as_primitive::<Int32Type>().values()[..3],
            &[47 * 12 + 10, -1, 0]
        );
        let d = one(Transform::Day, dates.clone());
        assert_eq!(d.data_type(), &DataType::Date32);
        assert_eq!(
            &d.as_primitive::<Date32Type>().values()[..3],
            &[17486, -1, 0]
        );
        assert!(Transform::Hour.apply(&dates).is_err(), "hour of a date");
        // 2017-11-16T22:31:08 and one microsecond before the epoch.
        let ts: ArrayRef = Arc::new(TimestampMicrosecondArray::from(vec![
            1_510_871_468_000_000i64,
            -1,
        ]));
        let h = one(Transform::Hour, ts.clone());
        assert_eq!(
            h.as_primitive::<Int32Type>().values(),
            &[17486 * 24 + 22, -1]
        );
        let d = one(Transform::Day, ts.clone());
        assert_eq!(d.as_primitive::<Date32Type>().values(), &[17486, -1]);
        let y = one(Transform::Year, ts);
        assert_eq!(y.as_primitive::<Int32Type>().values(), &[47, -1]);
        let ns: ArrayRef = Arc::new(TimestampNanosecondArray::from(vec![-1i64]));
        let h = one(Transform::Hour, ns);
        assert_eq!(h.as_primitive::<Int32Type>().values(), &[-1]);
    }

    #[test]
    fn parse_and_void() {
        assert_eq!(
            Transform::parse("bucket[16]").unwrap(),
            Transform::Bucket(16)
        );
        assert_eq!(
            Transform::parse("truncate[4]").unwrap(),
            Transform::Truncate(4)
        );
        assert_eq!(Transform::parse("day").unwrap(), Transform::Day);
        assert!(Transform::parse("bucket[0]").is_err());
        assert!(Transform::parse("zorder").is_err());
        let v = one(Transform::Void, Arc::new(Int64Array::from(vec![1i64, 2])));
        assert_eq!(v.null_count(), 2);
        assert_eq!(
            Transform::Day.result_type(&DataType::Date32),
            DataType::Date32
        );
        assert_eq!(
            Transform::Bucket(2).result_type(&DataType::Utf8),
            DataType::Int32
        );
    }
}
