//! Vended storage credentials: short-lived keys a catalog hands out with a table (the Iceberg
//! REST spec's `storage-credentials`), kept fresh while a statement runs.
//!
//! A [`VendedSource`] holds the current [`VendedCredentials`] and a [`CredentialRefresh`] (the
//! catalog's `GET …/tables/{t}/credentials`, behind a trait object: this layer knows no
//! catalog). object_store asks it for a credential before every request
//! (`vended_store::S3Provider`, `vended_store::AzureProvider`), and it fetches new ones first
//! when [`refresh_due`]: the earliest expiry (`s3.session-token-expires-at-ms`,
//! `adls.sas-token-expires-at-ms.<account>`, else a SAS token's own `se`) is nearer than
//! [`REFRESH_MARGIN_MS`], or than half the lifetime the credentials had when they arrived
//! (short-lived credentials are renewed halfway).
//!
//! When storage nevertheless answers that the credentials expired ([`expired_answer`]: S3's
//! `ExpiredToken`, `InvalidToken`, `TokenRefreshRequired`, or a HEAD's bodiless 400/403; Azure's
//! 403 once the SAS token's expiry has passed), the store wrapper (`vended_store::VendedStore`)
//! fetches new credentials once ([`VendedSource::renew_after_expired`], shared by the requests
//! that failed together) and sends the request once more. A retry that is refused as expired
//! again ends it: the source gives up renewing on such answers for the rest of its life (no
//! loop), and the request fails with a message naming the answer's code, never its body (AWS
//! repeats the token in it).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::location::Family;
use crate::error::Result;

/// Credentials are renewed when they expire within this margin (or within half their lifetime,
/// when that is shorter).
pub const REFRESH_MARGIN_MS: i64 = 5 * 60 * 1000;

/// After a failed proactive renewal, while the current credentials still work: wait this long
/// before trying again.
const RETRY_RENEWAL_AFTER_MS: i64 = 5_000;

/// S3 keys vended for a table.
#[derive(Clone, PartialEq, Eq)]
pub struct S3Credential {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
    /// `s3.session-token-expires-at-ms`.
    pub expires_at_ms: Option<i64>,
}

/// An Azure SAS token vended for one storage account.
#[derive(Clone, PartialEq, Eq)]
pub struct AzureSas {
    /// The query string (`sv=…&se=…&sig=…`), without a leading `?`.
    pub token: String,
    /// `adls.sas-token-expires-at-ms.<account>`, else the token's `se`.
    pub expires_at_ms: Option<i64>,
}

/// What a catalog vended: S3 keys and SAS tokens by storage account (lower case).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct VendedCredentials {
    pub s3: Option<S3Credential>,
    pub azure: BTreeMap<String, AzureSas>,
}

impl fmt::Debug for VendedCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let accounts: Vec<&String> = self.azure.keys().collect();
        f.debug_struct("VendedCredentials")
            .field(
                "s3_access_key_id",
                &self.s3.as_ref().map(|c| &c.access_key_id),
            )
            .field("azure_accounts", &accounts)
            .field("expires_at_ms", &self.expires_at_ms())
            .finish()
    }
}

impl VendedCredentials {
    pub fn is_empty(&self) -> bool {
        self.s3.is_none() && self.azure.is_empty()
    }

    /// The earliest expiry of any credential held (`None`: none is known to expire).
    pub fn expires_at_ms(&self) -> Option<i64> {
        let s3 = self.s3.as_ref().and_then(|c| c.expires_at_ms);
        let azure = self.azure.values().filter_map(|s| s.expires_at_ms);
        s3.into_iter().chain(azure).min()
    }

    /// The SAS token for `account` (case-insensitive).
    pub fn sas_for(&self, account: &str) -> Option<&AzureSas> {
        self.azure.get(&account.to_ascii_lowercase())
    }
}

/// The expiry of a SAS token: its `se` field (`2026-12-01T10:00:00Z`, or a date), in ms.
pub fn sas_expiry_ms(token: &str) -> Option<i64> {
    let value = token
        .trim_start_matches('?')
        .split('&')
        .find_map(|pair| pair.strip_prefix("se="))?;
    let text = percent_encoding::percent_decode_str(value)
        .decode_utf8()
        .ok()?;
    if let Ok(at) = chrono::DateTime::parse_from_rfc3339(&text) {
        return Some(at.timestamp_millis());
    }
    let date = chrono::NaiveDate::parse_from_str(&text, "%Y-%m-%d").ok()?;
    Some(date.and_hms_opt(0, 0, 0)?.and_utc().timestamp_millis())
}

/// Whether credentials fetched at `fetched_at_ms` that expire at `expires_at_ms` should be
/// renewed at `now_ms`: within [`REFRESH_MARGIN_MS`] of expiry, or within half their lifetime
/// when that is shorter. Credentials that had already expired when they arrived are not renewed
/// ahead (storage's answer decides, see the module comment): renewing them before every request
/// would be a loop.
pub fn refresh_due(now_ms: i64, fetched_at_ms: i64, expires_at_ms: Option<i64>) -> bool {
    let Some(expires) = expires_at_ms else {
        return false;
    };
    let lifetime = expires.saturating_sub(fetched_at_ms);
    if lifetime <= 0 {
        return false;
    }
    let margin = REFRESH_MARGIN_MS.min(lifetime / 2);
    expires.saturating_sub(now_ms) <= margin
}

/// S3 error codes that mean "these credentials are no longer valid: get new ones".
const S3_EXPIRED_CODES: [&str; 4] = [
    "ExpiredToken",
    "InvalidToken",
    "TokenRefreshRequired",
    "ExpiredTokenException",
];

/// Whether a storage answer says the credentials expired, and the code to name: `status` and
/// `body` of the answer (a HEAD has no body), `credentials_expired`: whether the expiry of the
/// credentials in use has passed (Azure's 403 does not say why a SAS was refused).
pub fn expired_answer(
    family: Family,
    status: Option<u16>,
    body: &str,
    credentials_expired: bool,
) -> Option<&'static str> {
    let code = xml_code(body);
    match family {
        Family::S3 => {
            if let Some(code) = code {
                return S3_EXPIRED_CODES.into_iter().find(|c| *c == code);
            }
            matches!(status, Some(400 | 403))
                .then_some("HTTP 400/403 without an error code")
                .filter(|_| body.trim().is_empty())
        }
        Family::Azure => {
            if status != Some(403) || !credentials_expired {
                return None;
            }
            match code {
                Some("AuthenticationFailed") => Some("AuthenticationFailed"),
                Some("AuthorizationFailure") => Some("AuthorizationFailure"),
                Some(_) => None,
                None => body
                    .trim()
                    .is_empty()
                    .then_some("HTTP 403 without an error code"),
            }
        }
        Family::File | Family::Memory | Family::Gcs => None,
    }
}

/// `<Code>X</Code>` of an XML error body.
fn xml_code(body: &str) -> Option<&str> {
    let start = body.find("<Code>")? + "<Code>".len();
    let len = body[start..].find("</Code>")?;
    Some(body[start..start + len].trim())
}

/// The HTTP status and body of a failed object_store request, read from the error's text
/// (object_store keeps its request error type private): `… status code: 403 Forbidden: <body>`.
pub(crate) fn answer_of(e: &object_store::Error) -> (Option<u16>, String) {
    let mut texts = vec![e.to_string()];
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        texts.push(s.to_string());
        source = s.source();
    }
    for text in &texts {
        const MARK: &str = "status code: ";
        let Some(at) = text.find(MARK) else {
            continue;
        };
        let rest = &text[at + MARK.len()..];
        let status = rest.get(..3).and_then(|s| s.parse::<u16>().ok());
        // `403 Forbidden: <body>`: the body follows the reason's colon.
        let body = rest.split_once(": ").map_or("", |(_, b)| b).to_string();
        return (status, body);
    }
    (None, String::new())
}

/// Fetches the table's credentials anew (the catalog's `GET …/credentials`).
#[async_trait]
pub trait CredentialRefresh: Send + Sync + fmt::Debug {
    /// What messages name: the catalog endpoint and the table (never a secret).
    fn describe(&self) -> String;
    async fn refresh(&self) -> Result<VendedCredentials>;
}

struct State {
    current: Arc<VendedCredentials>,
    /// Bumped by every renewal.
    generation: u64,
    fetched_at_ms: i64,
    /// No proactive renewal before this time (after one failed).
    quiet_until_ms: i64,
    /// A retry after a renewal was refused as expired again: no more renewals on such answers.
    gave_up: bool,
    renewals: u64,
}

/// The current vended credentials of one table and the way to renew them (see the module
/// comment). Shared by every store of the table's `FileIO`.
pub struct VendedSource {
    state: Mutex<State>,
    /// One renewal at a time.
    renewing: tokio::sync::Mutex<()>,
    refresher: Arc<dyn CredentialRefresh>,
    now_ms: fn() -> i64,
}

impl fmt::Debug for VendedSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VendedSource")
            .field("refresher", &self.refresher.describe())
            .finish()
    }
}

fn wall_clock_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// How a renewal went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Renewal {
    /// New credentials are in place (fetched now, or by a request that failed alongside).
    Renewed,
    /// Not renewed: why (the catalog's error, or an earlier retry that was refused again).
    Refused(String),
}

impl VendedSource {
    /// `current`, fetched just now; renewed through `refresher`.
    pub fn new(current: VendedCredentials, refresher: Arc<dyn CredentialRefresh>) -> Arc<Self> {
        Self::with_clock(current, refresher, wall_clock_ms)
    }

    /// [`VendedSource::new`] with a clock (tests).
    pub fn with_clock(
        current: VendedCredentials,
        refresher: Arc<dyn CredentialRefresh>,
        now_ms: fn() -> i64,
    ) -> Arc<Self> {
        Arc::new(VendedSource {
            state: Mutex::new(State {
                current: Arc::new(current),
                generation: 0,
                fetched_at_ms: now_ms(),
                quiet_until_ms: i64::MIN,
                gave_up: false,
                renewals: 0,
            }),
            renewing: tokio::sync::Mutex::new(()),
            refresher,
            now_ms,
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// The current credentials and their generation.
    pub fn current(&self) -> (Arc<VendedCredentials>, u64) {
        let state = self.state();
        (Arc::clone(&state.current), state.generation)
    }

    /// How many times credentials were fetched anew.
    pub fn renewals(&self) -> u64 {
        self.state().renewals
    }

    /// Whether the current credentials' expiry has passed.
    pub fn expired_now(&self) -> bool {
        let now = (self.now_ms)();
        self.state()
            .current
            .expires_at_ms()
            .is_some_and(|at| at <= now)
    }

    fn due(&self) -> bool {
        let now = (self.now_ms)();
        let state = self.state();
        let expires = state.current.expires_at_ms();
        let expired = expires.is_some_and(|at| at <= now);
        (now >= state.quiet_until_ms || expired) && refresh_due(now, state.fetched_at_ms, expires)
    }

    fn install(&self, fresh: VendedCredentials) {
        let now = (self.now_ms)();
        let mut state = self.state();
        state.current = Arc::new(fresh);
        state.generation += 1;
        state.fetched_at_ms = now;
        state.renewals += 1;
    }

    /// Credentials to sign a request with: the current ones, renewed first when due. A failed
    /// renewal keeps credentials that have not expired yet (and waits a little before trying
    /// again); with expired ones it is the request's error.
    pub async fn fresh(&self) -> std::result::Result<Arc<VendedCredentials>, String> {
        if !self.due() {
            return Ok(self.current().0);
        }
        let _one = self.renewing.lock().await;
        if !self.due() {
            return Ok(self.current().0);
        }
        match self.refresher.refresh().await {
            Ok(fresh) => {
                self.install(fresh);
                Ok(self.current().0)
            }
            Err(e) => {
                let now = (self.now_ms)();
                let mut state = self.state();
                let still_valid = state.current.expires_at_ms().is_none_or(|at| at > now);
                if still_valid {
                    state.quiet_until_ms = now.saturating_add(RETRY_RENEWAL_AFTER_MS);
                    Ok(Arc::clone(&state.current))
                } else {
                    Err(format!(
                        "the vended storage credentials of {} expired and fetching new ones \
                         failed: {}",
                        self.refresher.describe(),
                        e.message()
                    ))
                }
            }
        }
    }

    /// Storage refused a request signed with generation `seen` as expired: fetch new
    /// credentials, unless a request that failed alongside already did, or a retry after an
    /// earlier renewal was refused as expired too.
    pub async fn renew_after_expired(&self, seen: u64) -> Renewal {
        if self.state().gave_up {
            return Renewal::Refused(
                "a request retried with renewed credentials was refused as expired before"
                    .to_string(),
            );
        }
        let _one = self.renewing.lock().await;
        if self.state().generation != seen {
            return Renewal::Renewed;
        }
        match self.refresher.refresh().await {
            Ok(fresh) => {
                self.install(fresh);
                Renewal::Renewed
            }
            Err(e) => Renewal::Refused(format!(
                "fetching new ones from {} failed: {}",
                self.refresher.describe(),
                e.message()
            )),
        }
    }

    /// A retry with renewed credentials was refused as expired again: stop renewing on such
    /// answers.
    pub fn give_up(&self) {
        self.state().gave_up = true;
    }

    /// What messages name.
    pub fn describe(&self) -> String {
        self.refresher.describe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

    #[test]
    fn renewal_is_due_near_expiry_or_halfway_through_a_short_life() {
        let hour = 3_600_000;
        // An hour-long credential: renewed in its last five minutes.
        assert!(!refresh_due(0, 0, Some(hour)));
        assert!(!refresh_due(hour - REFRESH_MARGIN_MS - 1, 0, Some(hour)));
        assert!(refresh_due(hour - REFRESH_MARGIN_MS, 0, Some(hour)));
        assert!(refresh_due(hour + 1, 0, Some(hour)));
        // Two seconds long: renewed after one.
        assert!(!refresh_due(999, 0, Some(2000)));
        assert!(refresh_due(1000, 0, Some(2000)));
        // No known expiry, or expired on arrival: never ahead of time.
        assert!(!refresh_due(i64::MAX, 0, None));
        assert!(!refresh_due(10, 5, Some(5)));
        assert!(!refresh_due(10, 5, Some(1)));
        assert!(!refresh_due(0, i64::MIN, Some(i64::MAX)));
    }

    #[test]
    fn sas_expiry_comes_from_se() {
        assert_eq!(
            sas_expiry_ms("sv=2026-10-06&se=2026-12-01T08%3A56%3A30Z&sp=r&sig=x"),
            Some(1_796_115_390_000)
        );
        assert_eq!(
            sas_expiry_ms("?se=2026-12-01&sig=x"),
            Some(1_796_083_200_000)
        );
        assert_eq!(sas_expiry_ms("sv=1&sig=x"), None);
        assert_eq!(sas_expiry_ms("se=garbage"), None);
    }

    #[test]
    fn earliest_expiry_of_all_credentials() {
        let mut v = VendedCredentials {
            s3: Some(S3Credential {
                access_key_id: "A".into(),
                secret_access_key: "TOPSECRET".into(),
                session_token: None,
                expires_at_ms: Some(50),
            }),
            ..Default::default()
        };
        v.azure.insert(
            "acct".into(),
            AzureSas {
                token: "sig=x".into(),
                expires_at_ms: Some(20),
            },
        );
        assert_eq!(v.expires_at_ms(), Some(20));
        assert!(v.sas_for("ACCT").is_some());
        let shown = format!("{v:?}");
        assert!(
            !shown.contains("sig=x") && !shown.contains("TOPSECRET"),
            "{shown}"
        );
    }

    #[test]
    fn which_answers_mean_expired() {
        let expired = "<?xml version=\"1.0\"?><Error><Code>ExpiredToken</Code>\
                       <Message>The provided token has expired.</Message><Token-0>SECRET</Token-0></Error>";
        assert_eq!(
            expired_answer(Family::S3, Some(400), expired, false),
            Some("ExpiredToken")
        );
        let invalid = "<Error><Code>InvalidToken</Code></Error>";
        assert_eq!(
            expired_answer(Family::S3, Some(403), invalid, false),
            Some("InvalidToken")
        );
        let denied = "<Error><Code>AccessDenied</Code></Error>";
        assert_eq!(expired_answer(Family::S3, Some(403), denied, true), None);
        assert!(expired_answer(Family::S3, Some(403), "", false).is_some());
        assert_eq!(expired_answer(Family::S3, Some(404), "", false), None);
        assert_eq!(expired_answer(Family::S3, Some(500), "", true), None);
        let azure = "<Error><Code>AuthenticationFailed</Code><Message>Signature not valid in the \
                     specified time frame</Message></Error>";
        assert_eq!(
            expired_answer(Family::Azure, Some(403), azure, true),
            Some("AuthenticationFailed")
        );
        // A SAS that has not expired was refused for another reason: no renewal.
        assert_eq!(expired_answer(Family::Azure, Some(403), azure, false), None);
        let azurite = "<Error><Code>AuthorizationFailure</Code></Error>";
        assert!(expired_answer(Family::Azure, Some(403), azurite, true).is_some());
        let permission = "<Error><Code>AuthorizationPermissionMismatch</Code></Error>";
        assert_eq!(
            expired_answer(Family::Azure, Some(403), permission, true),
            None
        );
        assert_eq!(expired_answer(Family::Azure, Some(404), "", true), None);
        assert_eq!(expired_answer(Family::File, Some(403), expired, true), None);
    }

    #[derive(Debug, Default)]
    struct Counting {
        calls: AtomicU64,
        fail: bool,
    }

    #[async_trait]
    impl CredentialRefresh for Counting {
        fn describe(&self) -> String {
            "the test catalog".into()
        }
        async fn refresh(&self) -> Result<VendedCredentials> {
            let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
            if self.fail {
                return Err(crate::error::Error::logical("catalog down"));
            }
            Ok(s3(
                &format!("K{n}"),
                Some(NOW.load(Ordering::SeqCst) + 10_000),
            ))
        }
    }

    static NOW: AtomicI64 = AtomicI64::new(0);

    fn clock() -> i64 {
        NOW.load(Ordering::SeqCst)
    }

    fn s3(key: &str, expires: Option<i64>) -> VendedCredentials {
        VendedCredentials {
            s3: Some(S3Credential {
                access_key_id: key.into(),
                secret_access_key: "s".into(),
                session_token: Some("t".into()),
                expires_at_ms: expires,
            }),
            ..Default::default()
        }
    }

    fn key(v: &VendedCredentials) -> String {
        v.s3.as_ref()
            .map(|c| c.access_key_id.clone())
            .unwrap_or_default()
    }

    /// One test owns the static clock (tests run in parallel).
    #[tokio::test]
    async fn renews_ahead_once_per_life_and_once_after_an_expired_answer() {
        NOW.store(1_000, Ordering::SeqCst);
        let refresher = Arc::new(Counting::default());
        let source = VendedSource::with_clock(s3("K0", Some(11_000)), refresher.clone(), clock);
        assert_eq!(key(&source.fresh().await.unwrap()), "K0");
        NOW.store(6_000, Ordering::SeqCst);
        assert_eq!(key(&source.fresh().await.unwrap()), "K1");
        assert_eq!(key(&source.fresh().await.unwrap()), "K1");
        assert_eq!(refresher.calls.load(Ordering::SeqCst), 1);
        // Two requests refused together with generation 1: one renewal.
        let (_, seen) = source.current();
        assert_eq!(source.renew_after_expired(seen).await, Renewal::Renewed);
        assert_eq!(source.renew_after_expired(seen).await, Renewal::Renewed);
        assert_eq!(refresher.calls.load(Ordering::SeqCst), 2);
        // Refused again after renewing: no more renewals on expired answers.
        source.give_up();
        let (_, seen) = source.current();
        assert!(matches!(
            source.renew_after_expired(seen).await,
            Renewal::Refused(_)
        ));
        assert_eq!(refresher.calls.load(Ordering::SeqCst), 2);

        // A catalog that fails: valid credentials are kept (and the catalog left alone a
        // while); expired ones are an error naming the catalog.
        let down = Arc::new(Counting {
            fail: true,
            ..Default::default()
        });
        let source = VendedSource::with_clock(s3("D0", Some(16_000)), down.clone(), clock);
        NOW.store(12_000, Ordering::SeqCst);
        assert_eq!(key(&source.fresh().await.unwrap()), "D0");
        assert_eq!(key(&source.fresh().await.unwrap()), "D0");
        assert_eq!(down.calls.load(Ordering::SeqCst), 1);
        NOW.store(16_000, Ordering::SeqCst);
        assert!(source.expired_now());
        let e = source.fresh().await.unwrap_err();
        assert!(
            e.contains("the test catalog") && e.contains("catalog down"),
            "{e}"
        );
        let (_, seen) = source.current();
        assert!(matches!(
            source.renew_after_expired(seen).await,
            Renewal::Refused(why) if why.contains("catalog down")
        ));
    }
}
