//! Timestamp arguments (`expire_before`, `older_than`) as Unix milliseconds.
//!
//! Forms (ClickHouse's, plus the suffixes below): `YYYY-MM-DD hh:mm:ss`, `YYYY-MM-DDThh:mm:ss` (an
//! optional `.fraction` is dropped: second precision), `YYYY-MM-DD` (midnight), or Unix seconds
//! (`1717200000`, an optional fraction dropped). Trailing whitespace is ignored, leading whitespace
//! is not (as ClickHouse). Impossible dates and times are refused (ClickHouse accepts `2026-13-01`;
//! icetrim does not). Local forms are read in the session time zone; icetrim honours an explicit
//! `Z` or `±hh:mm` (also `±hhmm`, `±hh`) suffix, which ClickHouse ignores.
//!
//! Wall times a DST change makes non-existent or ambiguous resolve as ClickHouse 26.9 resolves them
//! (observed through chdb, `toDateTime(text, zone)`): a time in a **gap** takes the UTC offset in
//! force *after* the change (New York, 2026-03-08: `02:00:00` → 06:00:00 UTC, `02:30:00` → 06:30:00
//! UTC, `02:59:59` → 06:59:59 UTC, the same instants as `01:00:00`..`01:59:59` EST); a time in a
//! **fold** takes the offset in force *before* the change, i.e. the earlier instant (2026-11-01
//! `01:30:00` → 05:30:00 UTC, EDT). No rule keeps the order of wall times across a gap, so
//! [`parse_timestamp_noted`] also returns a warning naming the instant used.

use chrono::{DateTime, FixedOffset, NaiveDate, NaiveDateTime, NaiveTime, TimeZone};

use crate::error::{Error, ErrorKind, Result};
pub use crate::time_zone::{SessionTimeZone, WallTime};

fn cannot_parse(text: &str, reason: &str) -> Error {
    Error::new(
        ErrorKind::CannotParseDatetime,
        format!("Cannot parse datetime '{text}': {reason}"),
    )
}

/// Parses a timestamp argument into Unix milliseconds (whole seconds).
pub fn parse_timestamp_ms(text: &str, zone: &SessionTimeZone) -> Result<i64> {
    parse_timestamp_noted(text, zone).map(|(ms, _)| ms)
}

/// [`parse_timestamp_ms`], with a warning naming the instant used when the text is a wall time
/// that a DST change skipped (gap) or repeated (fold) in `zone`.
pub fn parse_timestamp_noted(text: &str, zone: &SessionTimeZone) -> Result<(i64, Option<String>)> {
    let body = text.trim_end();
    if body.is_empty() {
        return Err(cannot_parse(text, "empty string"));
    }
    if let Some(seconds) = parse_unix_seconds(body) {
        let ms = seconds
            .checked_mul(1000)
            .ok_or_else(|| cannot_parse(text, "Unix time out of range"))?;
        return Ok((ms, None));
    }
    let expected = "expected 'YYYY-MM-DD', 'YYYY-MM-DD hh:mm:ss' or Unix seconds";
    let (date, rest) = split_date(body).ok_or_else(|| cannot_parse(text, expected))?;
    let date = date.ok_or_else(|| cannot_parse(text, "no such date"))?;
    if rest.is_empty() {
        return local_instant(text, date.and_time(NaiveTime::MIN), zone);
    }
    let rest = rest
        .strip_prefix([' ', 'T'])
        .ok_or_else(|| cannot_parse(text, expected))?;
    let (time, suffix) = split_time(rest).ok_or_else(|| cannot_parse(text, expected))?;
    let time = time.ok_or_else(|| cannot_parse(text, "no such time of day"))?;
    let local = date.and_time(time);
    if suffix.is_empty() {
        return local_instant(text, local, zone);
    }
    let offset = parse_offset(suffix).ok_or_else(|| {
        cannot_parse(
            text,
            "a time zone suffix must be 'Z' or '+hh:mm' / '-hh:mm'",
        )
    })?;
    let utc: DateTime<FixedOffset> = offset
        .from_local_datetime(&local)
        .single()
        .ok_or_else(|| cannot_parse(text, "out of range"))?;
    Ok((utc.timestamp() * 1000, None))
}

fn local_instant(
    text: &str,
    local: NaiveDateTime,
    zone: &SessionTimeZone,
) -> Result<(i64, Option<String>)> {
    let wall = zone
        .resolve(local)
        .ok_or_else(|| cannot_parse(text, &format!("no such time in zone {zone}")))?;
    let ms = wall.ms().div_euclid(1000) * 1000;
    let utc = || SessionTimeZone::Named(chrono_tz::UTC).format_seconds(ms);
    let note = match wall {
        WallTime::Single(_) => None,
        WallTime::Gap(_) => Some(format!(
            "'{}' does not exist in {zone} (a daylight saving time gap): it is read as {} UTC, \
             with the offset after the change, as ClickHouse does",
            text.trim_end(),
            utc()
        )),
        WallTime::Fold(_) => Some(format!(
            "'{}' happens twice in {zone} (a daylight saving time fold): it is read as the \
             earlier instant, {} UTC, as ClickHouse does",
            text.trim_end(),
            utc()
        )),
    };
    Ok((ms, note))
}

/// All digits, optionally with a `.fraction` (dropped).
fn parse_unix_seconds(body: &str) -> Option<i64> {
    let (whole, fraction) = body.split_once('.').unwrap_or((body, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !all_digits(whole) || !all_digits(fraction) {
        return None;
    }
    if body.contains('.') && fraction.is_empty() {
        return None;
    }
    whole.parse().ok()
}

/// `YYYY-MM-DD` at the start: the date (`None` when impossible) and the rest of the text.
fn split_date(body: &str) -> Option<(Option<NaiveDate>, &str)> {
    let bytes = body.as_bytes();
    if bytes.len() < 10 || bytes[4] != b'-' || bytes[7] != b'-' {
        return None;
    }
    let year = digits(body.get(0..4)?)?;
    let month = digits(body.get(5..7)?)?;
    let day = digits(body.get(8..10)?)?;
    let date = NaiveDate::from_ymd_opt(i32::try_from(year).ok()?, month, day);
    Some((date, body.get(10..)?))
}

/// `hh:mm:ss[.fraction]` at the start: the time (`None` when impossible) and the suffix.
fn split_time(text: &str) -> Option<(Option<NaiveTime>, &str)> {
    let bytes = text.as_bytes();
    if bytes.len() < 8 || bytes[2] != b':' || bytes[5] != b':' {
        return None;
    }
    let hour = digits(text.get(0..2)?)?;
    let minute = digits(text.get(3..5)?)?;
    let second = digits(text.get(6..8)?)?;
    let mut rest = text.get(8..)?;
    if let Some(fraction) = rest.strip_prefix('.') {
        let len = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if len == 0 {
            return None;
        }
        rest = &fraction[len..];
    }
    Some((NaiveTime::from_hms_opt(hour, minute, second), rest))
}

/// `Z`, `±hh:mm`, `±hhmm` or `±hh`.
fn parse_offset(suffix: &str) -> Option<FixedOffset> {
    if suffix == "Z" || suffix == "z" {
        return FixedOffset::east_opt(0);
    }
    let (sign, rest) = match suffix.as_bytes().first()? {
        b'+' => (1, &suffix[1..]),
        b'-' => (-1, &suffix[1..]),
        _ => return None,
    };
    let (hours, minutes) = match rest.len() {
        2 => (rest, "00"),
        4 => (rest.get(0..2)?, rest.get(2..4)?),
        5 if rest.as_bytes()[2] == b':' => (rest.get(0..2)?, rest.get(3..5)?),
        _ => return None,
    };
    let (hours, minutes) = (digits(hours)?, digits(minutes)?);
    if hours > 23 || minutes > 59 {
        return None;
    }
    FixedOffset::east_opt(sign * (hours as i32 * 3600 + minutes as i32 * 60))
}

fn digits(text: &str) -> Option<u32> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ny() -> SessionTimeZone {
        SessionTimeZone::Named(chrono_tz::America::New_York)
    }

    fn utc() -> SessionTimeZone {
        SessionTimeZone::Named(chrono_tz::UTC)
    }

    fn ms(text: &str, zone: &SessionTimeZone) -> i64 {
        match parse_timestamp_ms(text, zone) {
            Ok(ms) => ms,
            Err(e) => panic!("{text}: {e}"),
        }
    }

    #[test]
    fn accepts_the_spec_forms() {
        assert_eq!(ms("2024-06-01 00:00:00", &utc()), 1_717_200_000_000);
        assert_eq!(ms("2024-06-01T00:00:00", &utc()), 1_717_200_000_000);
        assert_eq!(ms("2024-06-01", &utc()), 1_717_200_000_000);
        assert_eq!(ms("1717200000", &utc()), 1_717_200_000_000);
        assert_eq!(ms("1717200000.5", &utc()), 1_717_200_000_000);
        assert_eq!(ms("2024-06-01 00:00:00.75", &utc()), 1_717_200_000_000);
        assert_eq!(ms("2024-06-01 00:00:00 ", &utc()), 1_717_200_000_000);
    }

    #[test]
    fn reads_local_forms_in_the_session_zone() {
        // 2024-06-01 00:00 EDT = 04:00 UTC.
        assert_eq!(ms("2024-06-01 00:00:00", &ny()), 1_717_214_400_000);
        // Unix seconds do not depend on the zone.
        assert_eq!(ms("1717200000", &ny()), 1_717_200_000_000);
    }

    #[test]
    fn honours_explicit_offsets() {
        assert_eq!(ms("2024-06-01 00:00:00Z", &ny()), 1_717_200_000_000);
        assert_eq!(ms("2024-06-01T02:00:00+02:00", &ny()), 1_717_200_000_000);
        assert_eq!(ms("2024-05-31 20:00:00-0400", &utc()), 1_717_200_000_000);
        assert_eq!(ms("2024-06-01 05:00:00+05", &utc()), 1_717_200_000_000);
    }

    /// ClickHouse's instants (Unix seconds) for wall times around DST changes, observed with chdb
    /// (`SELECT toUnixTimestamp(toDateTime('<text>', '<zone>'))`, ClickHouse 26.9). Gaps take the
    /// offset after the change, folds the earlier instant.
    const CLICKHOUSE_DST: &[(&str, &str, i64)] = &[
        // New York spring forward, 2026-03-08 02:00 EST -> 03:00 EDT.
        ("2026-03-08 01:59:59", "America/New_York", 1_772_953_199),
        ("2026-03-08 02:00:00", "America/New_York", 1_772_949_600),
        ("2026-03-08 02:30:00", "America/New_York", 1_772_951_400),
        ("2026-03-08 02:59:59", "America/New_York", 1_772_953_199),
        ("2026-03-08 03:00:00", "America/New_York", 1_772_953_200),
        // New York fall back, 2026-11-01 02:00 EDT -> 01:00 EST.
        ("2026-11-01 00:59:59", "America/New_York", 1_793_509_199),
        ("2026-11-01 01:00:00", "America/New_York", 1_793_509_200),
        ("2026-11-01 01:30:00", "America/New_York", 1_793_511_000),
        ("2026-11-01 01:59:59", "America/New_York", 1_793_512_799),
        ("2026-11-01 02:00:00", "America/New_York", 1_793_516_400),
        // Berlin: gap and fold.
        ("2026-03-29 02:30:00", "Europe/Berlin", 1_774_744_200),
        ("2026-10-25 02:30:00", "Europe/Berlin", 1_792_888_200),
        // Lord Howe: a half-hour change.
        ("2026-10-04 02:15:00", "Australia/Lord_Howe", 1_791_040_500),
        ("2026-04-05 01:45:00", "Australia/Lord_Howe", 1_775_313_900),
        // Santiago: the gap is at midnight (so the date alone falls in it).
        ("2026-09-06 00:00:00", "America/Santiago", 1_788_663_600),
        ("2026-09-06 00:30:00", "America/Santiago", 1_788_665_400),
        // Apia skipped 2011-12-30 entirely.
        ("2011-12-30 12:00:00", "Pacific/Apia", 1_325_196_000),
        // Havana: midnight gap and fold.
        ("2026-03-08 00:30:00", "America/Havana", 1_772_944_200),
        ("2026-11-01 00:30:00", "America/Havana", 1_793_507_400),
    ];

    #[test]
    fn dst_gaps_and_folds_resolve_as_clickhouse() {
        for (text, zone, seconds) in CLICKHOUSE_DST {
            let zone = SessionTimeZone::from_setting(zone).unwrap();
            assert_eq!(ms(text, &zone), seconds * 1000, "{text} in {zone}");
        }
        // The date alone in a midnight gap: midnight is read with the offset after the change.
        let santiago = SessionTimeZone::from_setting("America/Santiago").unwrap();
        assert_eq!(ms("2026-09-06", &santiago), 1_788_663_600_000);
    }

    #[test]
    fn gap_and_fold_times_carry_a_warning_naming_the_instant() {
        let (gap, note) = parse_timestamp_noted("2026-03-08 02:30:00", &ny()).unwrap();
        assert_eq!(gap, 1_772_951_400_000);
        let note = note.expect("a gap is noted");
        assert_eq!(
            note,
            "'2026-03-08 02:30:00' does not exist in America/New_York (a daylight saving time \
             gap): it is read as 2026-03-08 06:30:00 UTC, with the offset after the change, as \
             ClickHouse does"
        );
        let (fold, note) = parse_timestamp_noted("2026-11-01 01:30:00", &ny()).unwrap();
        assert_eq!(fold, 1_793_511_000_000);
        assert_eq!(
            note.expect("a fold is noted"),
            "'2026-11-01 01:30:00' happens twice in America/New_York (a daylight saving time \
             fold): it is read as the earlier instant, 2026-11-01 05:30:00 UTC, as ClickHouse does"
        );
        for plain in [
            "2026-03-08 03:00:00",
            "2026-11-01 02:00:00",
            "1772951400",
            "2026-03-08 02:30:00Z",
        ] {
            let (_, note) = parse_timestamp_noted(plain, &ny()).unwrap();
            assert_eq!(note, None, "{plain}");
        }
    }

    #[test]
    fn refuses_impossible_and_malformed_text() {
        for bad in [
            "2026-13-01",
            "2026-02-30",
            "2026-01-01 25:00:00",
            "2026-01-01 00:60:00",
            "2026-01-01 00:00",
            "2026-1-1",
            " 2026-01-01",
            "",
            "-1",
            "garbage",
            "2026-01-01 00:00:00+25:00",
            "2026-01-01 00:00:00 Z",
            "2026-01-01X00:00:00",
            "1717200000.",
        ] {
            let err = parse_timestamp_ms(bad, &utc()).expect_err(bad);
            assert_eq!(err.kind(), ErrorKind::CannotParseDatetime, "{bad}");
            assert!(
                err.message()
                    .starts_with(&format!("Cannot parse datetime '{bad}'"))
            );
        }
    }

    #[test]
    fn session_zone_setting() {
        assert_eq!(SessionTimeZone::from_setting("America/New_York"), Ok(ny()));
        let err = SessionTimeZone::from_setting("Nowhere/Zone").expect_err("bad zone");
        assert_eq!(err.message(), "Invalid time zone: Nowhere/Zone");
    }
}

#[cfg(test)]
mod format_tests {
    use super::*;

    #[test]
    fn formats_in_the_zone() {
        let utc = SessionTimeZone::Named(chrono_tz::UTC);
        assert_eq!(utc.format_ms(1_717_200_000_123), "2024-06-01 00:00:00.123");
        let ny = SessionTimeZone::Named(chrono_tz::America::New_York);
        assert_eq!(ny.format_ms(1_717_200_000_000), "2024-05-31 20:00:00.000");
        assert_eq!(utc.format_ms(i64::MAX), i64::MAX.to_string());
    }
}
