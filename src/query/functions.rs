//! ClickHouse's scalar functions that DataFusion lacks or computes differently, as DataFusion
//! UDFs: `formatReadableSize` (powers of 1024, `KiB` … `YiB`), `formatReadableQuantity` (powers
//! of 1000, `thousand` … `septillion`), `round` (half to even, as ClickHouse rounds floats), and
//! the date-time functions read and answered in the session time zone: `toDateTime`
//! (`DateTime`, whole seconds), `toDate`, `toStartOfDay`, `now()`.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use chrono::{NaiveDate, NaiveDateTime};
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Date32Array, Float64Array, StringArray, TimestampSecondArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Float64Type, Int64Type, TimeUnit};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};

use crate::error::{Error, ErrorKind};
use crate::time_zone::SessionTimeZone;

/// Every function of this module, answering in `zone`.
pub(super) fn all(zone: SessionTimeZone) -> Vec<ScalarUDF> {
    use Kind::*;
    [
        FormatReadableSize,
        FormatReadableQuantity,
        Round,
        ToDateTime,
        ToDate,
        ToStartOfDay,
        Now,
    ]
    .into_iter()
    .map(|kind| {
        let volatility = if kind == Now {
            Volatility::Volatile
        } else {
            Volatility::Immutable
        };
        let signature = if kind == Now {
            Signature::nullary(volatility)
        } else {
            Signature::variadic_any(volatility)
        };
        let mut function = ClickHouseFunction {
            kind,
            zone,
            signature,
            aliases: Vec::new(),
        };
        // DataFusion looks unquoted function names up in lower case.
        let lower = function.name().to_lowercase();
        if lower != function.name() {
            function.aliases.push(lower);
        }
        ScalarUDF::from(function)
    })
    .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    FormatReadableSize,
    FormatReadableQuantity,
    Round,
    ToDateTime,
    ToDate,
    ToStartOfDay,
    Now,
}

#[derive(Debug)]
struct ClickHouseFunction {
    kind: Kind,
    zone: SessionTimeZone,
    signature: Signature,
    aliases: Vec<String>,
}

impl PartialEq for ClickHouseFunction {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && self.zone == other.zone
    }
}

impl Eq for ClickHouseFunction {}

impl Hash for ClickHouseFunction {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.kind.hash(state);
        self.zone.to_string().hash(state);
    }
}

/// The instants of `DateTime` results: seconds, printed in the session zone.
fn date_time_type() -> DataType {
    DataType::Timestamp(TimeUnit::Second, Some("UTC".into()))
}

impl ScalarUDFImpl for ClickHouseFunction {
    fn name(&self) -> &str {
        match self.kind {
            Kind::FormatReadableSize => "formatReadableSize",
            Kind::FormatReadableQuantity => "formatReadableQuantity",
            Kind::Round => "round",
            Kind::ToDateTime => "toDateTime",
            Kind::ToDate => "toDate",
            Kind::ToStartOfDay => "toStartOfDay",
            Kind::Now => "now",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn aliases(&self) -> &[String] {
        &self.aliases
    }

    /// Nullable only when an argument is (ClickHouse's `Nullable` propagation).
    fn return_field_from_args(&self, args: ReturnFieldArgs) -> DfResult<FieldRef> {
        let types: Vec<DataType> = args
            .arg_fields
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        let nullable = args.arg_fields.iter().any(|f| f.is_nullable());
        Ok(Arc::new(Field::new(
            self.name(),
            self.return_type(&types)?,
            nullable,
        )))
    }

    fn return_type(&self, arg_types: &[DataType]) -> DfResult<DataType> {
        let (min, max) = match self.kind {
            Kind::Now => (0, 0),
            Kind::Round => (1, 2),
            _ => (1, 1),
        };
        if arg_types.len() < min || arg_types.len() > max {
            return Err(external(Error::new(
                ErrorKind::NumberOfArgumentsDoesntMatch,
                format!(
                    "Number of arguments for function {} doesn't match: passed {}, should be {}",
                    self.name(),
                    arg_types.len(),
                    if min == max {
                        min.to_string()
                    } else {
                        format!("{min} or {max}")
                    }
                ),
            )));
        }
        Ok(match self.kind {
            Kind::FormatReadableSize | Kind::FormatReadableQuantity => DataType::Utf8,
            Kind::Round => DataType::Float64,
            Kind::ToDate => DataType::Date32,
            Kind::ToDateTime | Kind::ToStartOfDay | Kind::Now => date_time_type(),
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let rows = args.number_rows;
        let arrays: Vec<ArrayRef> = args
            .args
            .iter()
            .map(|a| a.to_array(rows))
            .collect::<DfResult<_>>()?;
        let result: ArrayRef = match self.kind {
            Kind::FormatReadableSize => readable(&arrays[0], 1024.0, SIZE_UNITS)?,
            Kind::FormatReadableQuantity => readable(&arrays[0], 1000.0, QUANTITY_UNITS)?,
            Kind::Round => round(&arrays)?,
            Kind::ToDateTime => Arc::new(seconds_array(seconds(&arrays[0], &self.zone)?)),
            Kind::ToDate => Arc::new(Date32Array::from(dates(&arrays[0], &self.zone)?)),
            Kind::ToStartOfDay => {
                let days = dates(&arrays[0], &self.zone)?;
                let starts = days
                    .into_iter()
                    .map(|d| d.and_then(|d| midnight(d, &self.zone)));
                Arc::new(seconds_array(starts.collect()))
            }
            Kind::Now => {
                let now = chrono::Utc::now().timestamp();
                Arc::new(seconds_array(vec![Some(now); rows.max(1)]))
            }
        };
        Ok(ColumnarValue::Array(result))
    }
}

fn external(error: Error) -> DataFusionError {
    DataFusionError::External(Box::new(error))
}

fn seconds_array(values: Vec<Option<i64>>) -> TimestampSecondArray {
    TimestampSecondArray::from(values).with_timezone("UTC")
}

fn floats(array: &ArrayRef) -> DfResult<Float64Array> {
    Ok(cast(array, &DataType::Float64)?
        .as_primitive::<Float64Type>()
        .clone())
}

const SIZE_UNITS: &[&str] = &["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"];
const QUANTITY_UNITS: &[&str] = &[
    "",
    "thousand",
    "million",
    "billion",
    "trillion",
    "quadrillion",
    "quintillion",
    "sextillion",
    "septillion",
];

/// `value` in the largest unit (powers of `base`) it reaches, with two decimals.
pub(super) fn readable_text(value: f64, base: f64, units: &[&str]) -> String {
    let mut scaled = value;
    let mut unit = 0;
    while scaled.abs() >= base && unit + 1 < units.len() {
        scaled /= base;
        unit += 1;
    }
    match units[unit] {
        "" => format!("{scaled:.2}"),
        name => format!("{scaled:.2} {name}"),
    }
}

fn readable(array: &ArrayRef, base: f64, units: &[&str]) -> DfResult<ArrayRef> {
    let values = floats(array)?;
    let texts: StringArray = values
        .iter()
        .map(|v| v.map(|v| readable_text(v, base, units)))
        .collect();
    Ok(Arc::new(texts))
}

/// `value` rounded to `digits` decimals (negative: to tens, hundreds …), halves to even.
pub(super) fn round_half_even(value: f64, digits: i64) -> f64 {
    let digits = digits.clamp(-308, 308) as i32;
    if digits >= 0 {
        let scale = 10f64.powi(digits);
        (value * scale).round_ties_even() / scale
    } else {
        let scale = 10f64.powi(-digits);
        (value / scale).round_ties_even() * scale
    }
}

fn round(arrays: &[ArrayRef]) -> DfResult<ArrayRef> {
    let values = floats(&arrays[0])?;
    let digits = match arrays.get(1) {
        Some(d) => cast(d, &DataType::Int64)?
            .as_primitive::<Int64Type>()
            .clone(),
        None => vec![Some(0i64); values.len()].into(),
    };
    let rounded: Float64Array = values
        .iter()
        .zip(digits.iter())
        .map(|(v, d)| Some(round_half_even(v?, d?)))
        .collect();
    Ok(Arc::new(rounded))
}

/// Seconds since the epoch of each value: numbers are seconds, strings are local date-times
/// of the session zone, date-times drop their fraction, dates are their local midnight.
fn seconds(array: &ArrayRef, zone: &SessionTimeZone) -> DfResult<Vec<Option<i64>>> {
    Ok(match array.data_type() {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            let strings = cast(array, &DataType::Utf8)?;
            strings
                .as_string::<i32>()
                .iter()
                .map(|s| s.map(|s| parse_date_time(s, zone)).transpose())
                .collect::<std::result::Result<_, _>>()
                .map_err(external)?
        }
        DataType::Timestamp(..) => {
            let ms = cast(array, &DataType::Timestamp(TimeUnit::Millisecond, None))?;
            ms.as_primitive::<datafusion::arrow::datatypes::TimestampMillisecondType>()
                .iter()
                .map(|v| v.map(|ms| ms.div_euclid(1000)))
                .collect()
        }
        DataType::Date32 | DataType::Date64 => dates(array, zone)?
            .into_iter()
            .map(|d| d.and_then(|d| midnight(d, zone)))
            .collect(),
        _ => {
            let numbers = cast(array, &DataType::Int64)?;
            numbers.as_primitive::<Int64Type>().iter().collect()
        }
    })
}

/// Days since the epoch of each value's local date in the session zone.
fn dates(array: &ArrayRef, zone: &SessionTimeZone) -> DfResult<Vec<Option<i32>>> {
    Ok(match array.data_type() {
        DataType::Date32 => array
            .as_primitive::<datafusion::arrow::datatypes::Date32Type>()
            .iter()
            .collect(),
        DataType::Date64 => {
            let days = cast(array, &DataType::Date32)?;
            days.as_primitive::<datafusion::arrow::datatypes::Date32Type>()
                .iter()
                .collect()
        }
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Timestamp(..) => {
            seconds(array, zone)?
                .into_iter()
                .map(|s| s.and_then(|s| local_day(s, zone)))
                .collect()
        }
        _ => {
            // ClickHouse reads a number below 65536 as days, a larger one as seconds.
            let numbers = cast(array, &DataType::Int64)?;
            numbers
                .as_primitive::<Int64Type>()
                .iter()
                .map(|n| {
                    let n = n?;
                    if (0..65536).contains(&n) {
                        i32::try_from(n).ok()
                    } else {
                        local_day(n, zone)
                    }
                })
                .collect()
        }
    })
}

const EPOCH_DAY: i32 = 719_163; // days from 0001-01-01 (day 1) to 1970-01-01

fn local_day(seconds: i64, zone: &SessionTimeZone) -> Option<i32> {
    let utc = chrono::DateTime::<chrono::Utc>::from_timestamp(seconds, 0)?;
    let local = match zone {
        SessionTimeZone::Named(tz) => utc.with_timezone(tz).date_naive(),
        SessionTimeZone::System => utc.with_timezone(&chrono::Local).date_naive(),
    };
    Some(chrono::Datelike::num_days_from_ce(&local) - EPOCH_DAY)
}

fn midnight(day: i32, zone: &SessionTimeZone) -> Option<i64> {
    let date = NaiveDate::from_num_days_from_ce_opt(day.checked_add(EPOCH_DAY)?)?;
    zone.local_to_utc_ms(date.and_hms_opt(0, 0, 0)?)
        .map(|ms| ms.div_euclid(1000))
}

/// A date-time string as ClickHouse's `toDateTime` reads it, in the session zone.
fn parse_date_time(text: &str, zone: &SessionTimeZone) -> Result<i64, Error> {
    let trimmed = text.trim();
    if let Ok(seconds) = trimmed.parse::<i64>() {
        return Ok(seconds);
    }
    let local = ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(trimmed, f).ok())
        .or_else(|| {
            NaiveDate::parse_from_str(trimmed, "%Y-%m-%d")
                .ok()
                .and_then(|d| d.and_hms_opt(0, 0, 0))
        });
    local
        .and_then(|l| zone.local_to_utc_ms(l))
        .map(|ms| ms.div_euclid(1000))
        .ok_or_else(|| {
            Error::new(
                ErrorKind::CannotParseDatetime,
                format!("Cannot parse DateTime from String '{text}'"),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected texts are chdb's answers to the same calls.
    #[test]
    fn readable_size_and_quantity_match_clickhouse() {
        let size = |v: f64| readable_text(v, 1024.0, SIZE_UNITS);
        assert_eq!(size(0.0), "0.00 B");
        assert_eq!(size(1000.0), "1000.00 B");
        assert_eq!(size(1024.0), "1.00 KiB");
        assert_eq!(size(1_536_000.0), "1.46 MiB");
        assert_eq!(size(1e18), "888.18 PiB");
        assert_eq!(size(1e30), "827180.61 YiB");
        assert_eq!(size(-2048.0), "-2.00 KiB");
        let quantity = |v: f64| readable_text(v, 1000.0, QUANTITY_UNITS);
        assert_eq!(quantity(0.0), "0.00");
        assert_eq!(quantity(999.0), "999.00");
        assert_eq!(quantity(1000.0), "1.00 thousand");
        assert_eq!(quantity(1_234_567.0), "1.23 million");
        assert_eq!(quantity(1e20), "100.00 quintillion");
        assert_eq!(quantity(1e25), "10.00 septillion");
        assert_eq!(quantity(-1500.0), "-1.50 thousand");
    }

    #[test]
    fn round_takes_halves_to_even_as_clickhouse() {
        assert_eq!(round_half_even(2.5, 0), 2.0);
        assert_eq!(round_half_even(3.5, 0), 4.0);
        assert_eq!(round_half_even(-2.5, 0), -2.0);
        assert_eq!(round_half_even(2.675, 2), 2.68);
        assert_eq!(round_half_even(1.0, 2), 1.0);
        assert_eq!(round_half_even(1250.0, -2), 1200.0);
    }

    #[test]
    fn date_times_are_read_in_the_session_zone() {
        let utc = SessionTimeZone::Named(chrono_tz::UTC);
        let tokyo = SessionTimeZone::Named(chrono_tz::Asia::Tokyo);
        assert_eq!(
            parse_date_time("2024-03-10 12:34:56", &utc).unwrap(),
            1_710_074_096
        );
        assert_eq!(
            parse_date_time("2024-03-10 12:34:56", &tokyo).unwrap(),
            1_710_074_096 - 9 * 3600
        );
        assert_eq!(parse_date_time("2024-03-10", &utc).unwrap(), 1_710_028_800);
        let error = parse_date_time("yesterday", &utc).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::CannotParseDatetime);
        assert_eq!(local_day(1_710_074_096, &utc), Some(19792));
        assert_eq!(midnight(19792, &utc), Some(1_710_028_800));
    }
}
