//! Duration strings (`retention_period`), ClickHouse 26.9's grammar, as i64 milliseconds.
//!
//! Rule (observed with ClickHouse 26.9 through chdb): surrounding whitespace is ignored; then either
//! a plain number of seconds (`90`, `1.5`, `.5`, `1_000`: digits with single `_` between them and an
//! optional fraction, truncated to whole milliseconds) or one or more `<digits><unit>` pairs with no
//! spaces, units `y` (365 days), `w`, `d`, `h`, `m` (minutes), `s`, `ms`, case-sensitive, each at
//! most once and in decreasing size. An optional leading `+`; a leading `-` makes a non-zero
//! duration negative (its own error). Overflow of i64 milliseconds is invalid. icetrim refuses a few
//! plain-number spellings ClickHouse lets through its float reader (`1e3`, `0x10`, `1.2.3`).

use std::fmt;

/// Why a duration string was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DurationError {
    /// The string is empty.
    Empty,
    /// It is a valid duration with a `-` sign and a non-zero value.
    Negative,
    /// Anything else.
    Invalid,
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DurationError::Empty => "empty duration",
            DurationError::Negative => "negative duration",
            DurationError::Invalid => "invalid duration",
        })
    }
}

/// Units from largest to smallest: suffix and milliseconds.
const UNITS: [(&str, i64); 7] = [
    ("y", 365 * 24 * 3_600_000),
    ("w", 7 * 24 * 3_600_000),
    ("d", 24 * 3_600_000),
    ("h", 3_600_000),
    ("m", 60_000),
    ("s", 1_000),
    ("ms", 1),
];

/// Parses a duration string into milliseconds.
pub fn parse_duration_ms(text: &str) -> Result<i64, DurationError> {
    if text.is_empty() {
        return Err(DurationError::Empty);
    }
    let trimmed = text.trim();
    let (negative, body) = match trimmed.as_bytes().first() {
        Some(b'-') => (true, &trimmed[1..]),
        Some(b'+') => (false, &trimmed[1..]),
        _ => (false, trimmed),
    };
    let value = parse_plain_seconds(body)
        .or_else(|| parse_unit_pairs(body))
        .ok_or(DurationError::Invalid)?;
    if negative && value != 0 {
        return Err(DurationError::Negative);
    }
    Ok(value)
}

/// `digits[_digits...][.fraction]` or `.fraction`, in seconds.
fn parse_plain_seconds(body: &str) -> Option<i64> {
    let (whole, fraction) = match body.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (body, None),
    };
    if whole.is_empty() && fraction.is_none_or(str::is_empty) {
        return None;
    }
    let whole_seconds: i64 = if whole.is_empty() {
        0
    } else {
        parse_underscored_digits(whole)?
    };
    let millis = match fraction {
        Some(fraction) => {
            if !fraction.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let padded: String = fraction.chars().chain("000".chars()).take(3).collect();
            padded.parse::<i64>().ok()?
        }
        None => 0,
    };
    whole_seconds.checked_mul(1000)?.checked_add(millis)
}

/// Digits with single underscores between digit groups (`1_000`), as a non-negative i64.
fn parse_underscored_digits(text: &str) -> Option<i64> {
    if text.is_empty() || text.starts_with('_') || text.ends_with('_') || text.contains("__") {
        return None;
    }
    if !text.bytes().all(|b| b.is_ascii_digit() || b == b'_') {
        return None;
    }
    text.replace('_', "").parse().ok()
}

/// One or more `<digits><unit>` pairs in strictly decreasing unit order.
fn parse_unit_pairs(body: &str) -> Option<i64> {
    if body.is_empty() {
        return None;
    }
    let mut rest = body;
    let mut next_unit = 0;
    let mut total: i64 = 0;
    while !rest.is_empty() {
        let digits_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits_len == 0 {
            return None;
        }
        let amount: i64 = rest[..digits_len].parse().ok()?;
        rest = &rest[digits_len..];
        let unit = UNITS
            .iter()
            .enumerate()
            .skip(next_unit)
            .filter(|(_, (suffix, _))| rest.starts_with(suffix))
            .max_by_key(|(_, (suffix, _))| suffix.len())?;
        let (index, (suffix, millis)) = unit;
        if rest[suffix.len()..].starts_with(|c: char| c.is_ascii_alphabetic()) {
            return None;
        }
        rest = &rest[suffix.len()..];
        total = total.checked_add(amount.checked_mul(*millis)?)?;
        next_unit = index + 1;
    }
    Some(total)
}

/// Canonical text for a non-negative duration: its non-zero components from `y` down to `ms`
/// (`"1d12h30m"`), `"0s"` for zero. Parses back to the same value. A negative value prints with a
/// leading `-` (which the parser refuses as negative).
pub fn format_duration_ms(ms: i64) -> String {
    if ms == 0 {
        return "0s".to_string();
    }
    let mut out = String::new();
    if ms < 0 {
        out.push('-');
    }
    let mut rest = ms.unsigned_abs();
    for (suffix, unit) in UNITS {
        let unit = unit.unsigned_abs();
        let count = rest / unit;
        if count > 0 {
            out.push_str(&format!("{count}{suffix}"));
            rest %= unit;
        }
    }
    out
}

/// What a refused duration should say: the accepted forms, and for a spelled-out duration such
/// as `3 days` or `1 hour 30 minutes`, the same written in this grammar (`3d`, `1h30m`).
pub fn accepted_forms_hint(text: &str) -> String {
    let mut hint = "Accepted forms: a number of seconds ('90', '1.5') or <number><unit> pairs \
                    without spaces, largest unit first, units y, w, d, h, m, s, ms ('3d', '1d12h', \
                    '90m')"
        .to_string();
    if let Some(spelled) = respell(text) {
        hint.push_str(&format!("; '{}' is written '{spelled}'", text.trim()));
    }
    hint
}

/// `3 days` → `3d`: number and unit-word pairs rewritten as this grammar's pairs, when that parses.
fn respell(text: &str) -> Option<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.len() < 2 || !words.len().is_multiple_of(2) {
        return None;
    }
    let mut out = String::new();
    for pair in words.chunks(2) {
        let number = pair[0];
        if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let unit = match pair[1].to_ascii_lowercase().trim_end_matches(',') {
            "y" | "year" | "years" | "yr" | "yrs" => "y",
            "w" | "week" | "weeks" | "wk" | "wks" => "w",
            "d" | "day" | "days" => "d",
            "h" | "hour" | "hours" | "hr" | "hrs" => "h",
            "m" | "minute" | "minutes" | "min" | "mins" => "m",
            "s" | "second" | "seconds" | "sec" | "secs" => "s",
            "millisecond" | "milliseconds" | "ms" => "ms",
            _ => return None,
        };
        out.push_str(number);
        out.push_str(unit);
    }
    parse_duration_ms(&out).ok().map(|_| out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_examples() {
        assert_eq!(parse_duration_ms("3d"), Ok(259_200_000));
        assert_eq!(parse_duration_ms("1d12h30m"), Ok(131_400_000));
        assert_eq!(parse_duration_ms("1y"), Ok(31_536_000_000));
        assert_eq!(parse_duration_ms("1h30m15s250ms"), Ok(5_415_250));
        assert_eq!(parse_duration_ms("1m1ms"), Ok(60_001));
        assert_eq!(parse_duration_ms("1w1d"), Ok(8 * 86_400_000));
    }

    #[test]
    fn plain_numbers_are_seconds() {
        assert_eq!(parse_duration_ms("90"), Ok(90_000));
        assert_eq!(parse_duration_ms("1.5"), Ok(1_500));
        assert_eq!(parse_duration_ms(".5"), Ok(500));
        assert_eq!(parse_duration_ms("5."), Ok(5_000));
        assert_eq!(parse_duration_ms("1_000"), Ok(1_000_000));
        assert_eq!(parse_duration_ms("0.0001"), Ok(0));
        assert_eq!(parse_duration_ms(" 3d "), Ok(259_200_000));
        assert_eq!(parse_duration_ms("+3d"), Ok(259_200_000));
        assert_eq!(parse_duration_ms("-0"), Ok(0));
    }

    #[test]
    fn refuses_what_clickhouse_refuses() {
        for bad in [
            "3x", "d", "3 d", "3D", "12h1d", "3d3d", "3d 12h", "1.5h", "1.5s", "1ms1s", "1_000s",
            "1__0", "_1", "1_", "1ms5", "1s5", "1dh", "1,5", "   ", "-", "+", "-x",
        ] {
            assert_eq!(parse_duration_ms(bad), Err(DurationError::Invalid), "{bad}");
        }
        assert_eq!(parse_duration_ms(""), Err(DurationError::Empty));
        assert_eq!(parse_duration_ms("-3d"), Err(DurationError::Negative));
        assert_eq!(parse_duration_ms("-3"), Err(DurationError::Negative));
    }

    #[test]
    fn overflow_is_invalid() {
        assert_eq!(parse_duration_ms("9223372036854775807ms"), Ok(i64::MAX));
        assert_eq!(
            parse_duration_ms("9223372036854775s"),
            Ok(9_223_372_036_854_775_000)
        );
        assert_eq!(
            parse_duration_ms("292471208y"),
            Ok(292_471_208 * 31_536_000_000)
        );
        for bad in [
            "9223372036854776s",
            "106751991168d",
            "292471209y",
            "292471208y36w",
        ] {
            assert_eq!(parse_duration_ms(bad), Err(DurationError::Invalid), "{bad}");
        }
    }

    #[test]
    fn printer_is_canonical() {
        assert_eq!(format_duration_ms(0), "0s");
        assert_eq!(format_duration_ms(131_400_000), "1d12h30m");
        assert_eq!(format_duration_ms(5_415_250), "1h30m15s250ms");
        assert_eq!(
            parse_duration_ms(&format_duration_ms(i64::MAX)),
            Ok(i64::MAX)
        );
    }

    #[test]
    fn a_spelled_out_duration_is_respelled() {
        assert_eq!(respell("3 days").as_deref(), Some("3d"));
        assert_eq!(respell(" 1 hour 30 minutes ").as_deref(), Some("1h30m"));
        assert_eq!(respell("30 minutes 1 hour"), None);
        assert_eq!(respell("3 fortnights"), None);
        assert_eq!(respell("3 d").as_deref(), Some("3d"));
        assert_eq!(respell("3 D").as_deref(), Some("3d"));
        assert_eq!(respell("3d"), None);
        assert!(accepted_forms_hint("3 days").ends_with("; '3 days' is written '3d'"));
        assert!(!accepted_forms_hint("soon").contains("written"));
    }
}
