//! [`SessionTimeZone`]: the zone local timestamps are read and printed in (setting
//! `session_timezone`), and how a wall time maps to instants across DST changes (see
//! `sql::timestamp` for the rules). A leaf: the settings, the SQL binder and the EXPLAIN plans all
//! use it.

use std::fmt;

use chrono::{Duration, FixedOffset, LocalResult, NaiveDateTime, Offset, TimeZone};
use chrono_tz::Tz;

use crate::error::{Error, Result};

/// The zone local timestamps are read in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionTimeZone {
    /// A named IANA zone (setting `session_timezone`, or `TZ` naming one).
    Named(Tz),
    /// The system's zone as the C library resolves it (`/etc/localtime`).
    System,
}

impl SessionTimeZone {
    /// The zone for a `session_timezone` value: a named zone, or the process zone when empty.
    pub fn from_setting(value: &str) -> Result<SessionTimeZone> {
        if value.is_empty() {
            return Ok(SessionTimeZone::process());
        }
        value
            .parse::<Tz>()
            .map(SessionTimeZone::Named)
            .map_err(|_| Error::bad_arguments(format!("Invalid time zone: {value}")))
    }

    /// The process zone: `TZ` when it names an IANA zone (a leading `:` allowed), else the system's.
    pub fn process() -> SessionTimeZone {
        std::env::var("TZ")
            .ok()
            .and_then(|tz| tz.trim_start_matches(':').parse::<Tz>().ok())
            .map_or(SessionTimeZone::System, SessionTimeZone::Named)
    }

    /// `ms` since the epoch as ClickHouse prints a `DateTime64(3)` in this zone:
    /// `YYYY-MM-DD hh:mm:ss.mmm`. Out-of-range instants print as the raw number.
    pub fn format_ms(&self, ms: i64) -> String {
        self.format(ms, "%Y-%m-%d %H:%M:%S%.3f")
    }

    /// `ms` since the epoch as ClickHouse prints a `DateTime` in this zone: `YYYY-MM-DD hh:mm:ss`
    /// (milliseconds dropped). Out-of-range instants print as the raw number.
    pub fn format_seconds(&self, ms: i64) -> String {
        self.format(ms, "%Y-%m-%d %H:%M:%S")
    }

    fn format(&self, ms: i64, format: &str) -> String {
        let Some(utc) = chrono::DateTime::<chrono::Utc>::from_timestamp_millis(ms) else {
            return ms.to_string();
        };
        match self {
            SessionTimeZone::Named(tz) => utc.with_timezone(tz).format(format).to_string(),
            SessionTimeZone::System => utc.with_timezone(&chrono::Local).format(format).to_string(),
        }
    }

    /// The instant (Unix ms) of a wall-clock time in this zone, DST gap and fold resolved as the
    /// module comment says.
    pub fn local_to_utc_ms(&self, local: NaiveDateTime) -> Option<i64> {
        self.resolve(local).map(WallTime::ms)
    }

    /// The instant of a wall-clock time in this zone, and whether a DST change made it a gap or
    /// a fold.
    pub fn resolve(&self, local: NaiveDateTime) -> Option<WallTime> {
        match self {
            SessionTimeZone::Named(tz) => resolve_local(tz, local),
            SessionTimeZone::System => resolve_local(&chrono::Local, local),
        }
    }
}

impl fmt::Display for SessionTimeZone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionTimeZone::Named(tz) => f.write_str(tz.name()),
            SessionTimeZone::System => f.write_str("system"),
        }
    }
}

/// How a wall time maps to instants in a zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WallTime {
    /// Exactly one instant.
    Single(i64),
    /// Skipped by a DST change: read with the offset after the change.
    Gap(i64),
    /// Repeated by a DST change: read as the earlier instant.
    Fold(i64),
}

impl WallTime {
    /// The instant (Unix ms) ClickHouse reads the wall time as.
    pub fn ms(self) -> i64 {
        match self {
            WallTime::Single(ms) | WallTime::Gap(ms) | WallTime::Fold(ms) => ms,
        }
    }
}

fn resolve_local<Z: TimeZone>(zone: &Z, local: NaiveDateTime) -> Option<WallTime> {
    match zone.from_local_datetime(&local) {
        LocalResult::Single(instant) => Some(WallTime::Single(instant.timestamp_millis())),
        LocalResult::Ambiguous(first, second) => Some(WallTime::Fold(
            first.timestamp_millis().min(second.timestamp_millis()),
        )),
        LocalResult::None => {
            let after_gap = offset_after_gap(zone, local)?;
            Some(WallTime::Gap(
                (local - after_gap).and_utc().timestamp_millis(),
            ))
        }
    }
}

/// The UTC offset in force just after the gap that swallows `local`: the offset of the nearest
/// later wall time (hour steps, up to two days on: Apia skipped a whole day) that exists.
fn offset_after_gap<Z: TimeZone>(zone: &Z, local: NaiveDateTime) -> Option<Duration> {
    (1..=48).find_map(|hours| {
        let later = local.checked_add_signed(Duration::hours(hours))?;
        let resolved = match zone.from_local_datetime(&later) {
            LocalResult::Single(dt) => dt,
            LocalResult::Ambiguous(earlier, _) => earlier,
            LocalResult::None => return None,
        };
        let offset: FixedOffset = resolved.offset().fix();
        Some(Duration::seconds(i64::from(offset.local_minus_utc())))
    })
}
