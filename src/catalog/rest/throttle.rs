//! Backing off when the REST catalog says it is busy. A 429 (Too Many Requests) was not acted
//! on, so any request is sent again; a 503 (Service Unavailable) is sent again only for a read,
//! because a commit's 503 may have been applied (the commit's own reload decides that).
//!
//! The wait is what `Retry-After` asks (delay-seconds or an HTTP date), else exponential from
//! [`FIRST_WAIT`] with jitter. A request is sent again at most [`MAX_RETRIES`] times, and one wait
//! is never longer than [`MAX_WAIT`]: a server that asks for longer gets its answer passed on as
//! the error, so a maintenance run moves on to its next table instead of stalling.

use std::time::Duration;

use chrono::{DateTime, Utc};

/// How many times one request is sent again after 429 / 503.
pub const MAX_RETRIES: u32 = 5;
/// The longest single wait; a `Retry-After` asking for more ends the retries.
pub const MAX_WAIT: Duration = Duration::from_secs(60);
/// The first wait when the answer has no `Retry-After` (then 2×, 4×, … up to [`MAX_WAIT`]).
pub const FIRST_WAIT: Duration = Duration::from_millis(250);

/// The answer to back off from.
#[derive(Debug, Clone, Copy)]
pub struct Busy<'a> {
    pub status: u16,
    /// Whether sending the request again cannot act twice (a GET).
    pub read: bool,
    pub retry_after: Option<&'a str>,
}

/// How long to wait before sending the request again, after `retries` earlier retries; `None`:
/// pass the answer on. `jitter` in `[0, 1)` spreads the waits of parallel requests.
pub fn wait_before_retry(
    busy: Busy<'_>,
    retries: u32,
    now: DateTime<Utc>,
    jitter: f64,
) -> Option<Duration> {
    let retryable = busy.status == 429 || (busy.status == 503 && busy.read);
    if !retryable || retries >= MAX_RETRIES {
        return None;
    }
    if let Some(asked) = busy.retry_after.and_then(|v| retry_after(v, now)) {
        return (asked <= MAX_WAIT).then_some(asked);
    }
    let doubled = FIRST_WAIT.saturating_mul(1u32 << retries.min(16));
    let base = doubled.min(MAX_WAIT);
    let jitter = jitter.clamp(0.0, 1.0);
    // Between half and all of the base wait.
    Some(base.mul_f64(0.5 + jitter / 2.0))
}

/// What a `Retry-After` value asks: delay-seconds, or an HTTP date (a date in the past: no wait).
/// `None` for a value that is neither.
pub fn retry_after(value: &str, now: DateTime<Utc>) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = DateTime::parse_from_rfc2822(value)
        .ok()?
        .with_timezone(&Utc);
    Some((at - now).to_std().unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-12-02T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    fn busy(status: u16, read: bool, retry_after: Option<&str>) -> Busy<'_> {
        Busy {
            status,
            read,
            retry_after,
        }
    }

    #[test]
    fn retry_after_seconds_and_dates() {
        assert_eq!(retry_after("3", now()), Some(Duration::from_secs(3)));
        assert_eq!(retry_after(" 0 ", now()), Some(Duration::ZERO));
        let date = "Wed, 02 Dec 2026 12:00:07 GMT";
        assert_eq!(retry_after(date, now()), Some(Duration::from_secs(7)));
        let past = "Wed, 02 Dec 2026 11:00:00 GMT";
        assert_eq!(retry_after(past, now()), Some(Duration::ZERO));
        assert_eq!(retry_after("soon", now()), None);
        assert_eq!(retry_after("-1", now()), None);
    }

    #[test]
    fn only_throttling_answers_are_retried_and_503_only_for_reads() {
        for status in [200, 400, 401, 404, 409, 500, 502, 504] {
            assert_eq!(
                wait_before_retry(busy(status, true, Some("1")), 0, now(), 0.0),
                None
            );
        }
        let one = Some(Duration::from_secs(1));
        assert_eq!(
            wait_before_retry(busy(429, false, Some("1")), 0, now(), 0.0),
            one
        );
        assert_eq!(
            wait_before_retry(busy(429, true, Some("1")), 0, now(), 0.0),
            one
        );
        assert_eq!(
            wait_before_retry(busy(503, true, Some("1")), 0, now(), 0.0),
            one
        );
        // A commit's 503 may have been applied: not sent again.
        assert_eq!(
            wait_before_retry(busy(503, false, Some("1")), 0, now(), 0.0),
            None
        );
    }

    #[test]
    fn retries_are_bounded_and_long_waits_are_not_waited() {
        let b = busy(429, true, Some("2"));
        for retries in 0..MAX_RETRIES {
            assert!(wait_before_retry(b, retries, now(), 0.5).is_some());
        }
        assert_eq!(wait_before_retry(b, MAX_RETRIES, now(), 0.5), None);
        let long = busy(429, true, Some("61"));
        assert_eq!(wait_before_retry(long, 0, now(), 0.5), None);
        let at_limit = busy(429, true, Some("60"));
        assert_eq!(wait_before_retry(at_limit, 0, now(), 0.5), Some(MAX_WAIT));
    }

    #[test]
    fn without_retry_after_the_wait_doubles_with_jitter_up_to_the_limit() {
        for header in [None, Some("not a number")] {
            let b = busy(429, true, header);
            let mut previous = Duration::ZERO;
            for retries in 0..MAX_RETRIES {
                let low = wait_before_retry(b, retries, now(), 0.0).unwrap();
                let high = wait_before_retry(b, retries, now(), 0.999).unwrap();
                let base = FIRST_WAIT.saturating_mul(1 << retries).min(MAX_WAIT);
                assert_eq!(low, base / 2);
                assert!(high <= base && high > low, "{high:?} {low:?} {base:?}");
                assert!(low >= previous);
                previous = low;
            }
        }
    }
}
