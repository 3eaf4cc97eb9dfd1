//! The REST catalog's HTTP: sending a request (with authentication and one retry after a 401),
//! how a request failed before an answer, and the errors of an answer (status, the REST
//! `ErrorModel`), none of which ever quotes a secret or a URL's query.

use super::throttle;
use super::*;

/// An HTTP answer: status and body.
pub(super) struct Answer {
    pub(super) status: u16,
    pub(super) body: bytes::Bytes,
}

/// How a request failed before an answer arrived.
pub(super) enum Failure {
    /// Nothing was sent (could not connect).
    NotSent(String),
    /// Sent, no answer (timeout, connection lost): the server may have acted.
    Lost(String),
    /// Not sent: authentication failed first (the token endpoint refused or was unreachable).
    Auth(Error),
}

impl RestCatalog {
    /// Send one request with auth; on a 401 refresh an OAuth token once and resend; on a 429
    /// (or a read's 503) wait as [`throttle`] says and resend.
    pub(super) async fn send(
        &self,
        method: reqwest::Method,
        url: &str,
        body: Option<&Value>,
        headers: &[(&str, &str)],
    ) -> std::result::Result<Answer, Failure> {
        let mut refreshed = false;
        let mut retries = 0;
        loop {
            let mut request = self.http.request(method.clone(), url);
            for (name, value) in headers {
                request = request.header(*name, *value);
            }
            if let Some(body) = body {
                request = request
                    .header("Content-Type", "application/json")
                    .body(serde_json::to_vec(body).unwrap_or_default());
            }
            request = self
                .auth
                .apply(&self.http, request, refreshed)
                .await
                .map_err(Failure::Auth)?;
            let response = match request.send().await {
                Ok(r) => r,
                Err(e) => return Err(classify(&e)),
            };
            let status = response.status().as_u16();
            if status == 401 && !refreshed && self.auth.can_refresh() {
                refreshed = true;
                continue;
            }
            let busy = throttle::Busy {
                status,
                read: method == reqwest::Method::GET,
                retry_after: response
                    .headers()
                    .get(reqwest::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok()),
            };
            let now = chrono::Utc::now();
            // The clock's sub-millisecond digits spread parallel requests' waits well enough.
            let jitter = f64::from(now.timestamp_subsec_nanos() % 1_000_000) / 1_000_000.0;
            if let Some(wait) = throttle::wait_before_retry(busy, retries, now, jitter) {
                retries += 1;
                drop(response);
                tokio::time::sleep(wait).await;
                continue;
            }
            let body = response.bytes().await.map_err(|e| classify(&e))?;
            return Ok(Answer { status, body });
        }
    }

    pub(super) fn unreachable(&self, failure: Failure, what: &str) -> Error {
        let why = match failure {
            Failure::NotSent(why) | Failure::Lost(why) => why,
            Failure::Auth(e) => return e,
        };
        Error::new(
            ErrorKind::NetworkError,
            format!(
                "Cannot reach the REST catalog at '{}' ({what}): {why}",
                self.endpoint_text()
            ),
        )
    }

    /// The JSON of a 200 answer; any other status is an error naming the endpoint and `table`.
    pub(super) fn expect_ok(
        &self,
        answer: &Answer,
        what: &str,
        table: Option<&TableIdent>,
    ) -> Result<Value> {
        if (200..300).contains(&answer.status) {
            return serde_json::from_slice(&answer.body).map_err(|e| {
                Error::incorrect_data(format!(
                    "The REST catalog at '{}' answered {what}{} with malformed JSON: {e}",
                    self.endpoint_text(),
                    table.map_or(String::new(), |t| format!(" for table {t}"))
                ))
            });
        }
        Err(self.http_error(answer, what, table))
    }

    pub(super) fn http_error(
        &self,
        answer: &Answer,
        what: &str,
        table: Option<&TableIdent>,
    ) -> Error {
        let (kind_name, message) = error_of(&answer.body);
        let on = table.map_or(String::new(), |t| format!(" for table {t}"));
        let detail = match (kind_name.as_deref(), message.as_deref()) {
            (Some(k), Some(m)) => format!("{k}: {m}"),
            (None, Some(m)) => m.to_string(),
            (Some(k), None) => k.to_string(),
            (None, None) => String::from_utf8_lossy(&answer.body)
                .chars()
                .take(200)
                .collect(),
        };
        let kind = match answer.status {
            404 if table.is_some() => ErrorKind::UnknownTable,
            _ => ErrorKind::ReceivedErrorFromRemoteIoServer,
        };
        let text = match answer.status {
            404 if table.is_some() => format!(
                "Table `{}` does not exist in the REST catalog at '{}' of database {} ({detail})",
                table.map(ToString::to_string).unwrap_or_default(),
                self.endpoint_text(),
                self.config.database
            ),
            401 | 403 => format!(
                "The REST catalog at '{}' refused {what}{on}: HTTP {} (check the database's \
                 credentials: catalog_credential, auth_header): {detail}",
                self.endpoint_text(),
                answer.status
            ),
            status => format!(
                "The REST catalog at '{}' answered {what}{on} with HTTP {status}: {detail}",
                self.endpoint_text()
            ),
        };
        Error::new(kind, text)
    }

    pub(super) fn malformed(&self, what: &str, why: &str) -> Error {
        Error::incorrect_data(format!(
            "The REST catalog at '{}' answered {what} with a malformed response: {why}",
            self.endpoint_text()
        ))
    }
}

/// `(type, message)` of a REST `ErrorModel` body (`{"error": {"type", "message", "code"}}`).
pub(super) fn error_of(body: &[u8]) -> (Option<String>, Option<String>) {
    let Ok(json) = serde_json::from_slice::<Value>(body) else {
        return (None, None);
    };
    let error = json.get("error").unwrap_or(&json);
    let text = |k: &str| error.get(k).and_then(Value::as_str).map(str::to_string);
    (text("type"), text("message"))
}

fn classify(e: &reqwest::Error) -> Failure {
    let text = describe(e);
    if e.is_connect() {
        Failure::NotSent(text)
    } else {
        Failure::Lost(text)
    }
}

/// The error and its sources, without the URL (it may carry a query with a secret), and with
/// any URL a source quotes masked.
fn describe(e: &reqwest::Error) -> String {
    let mut parts = Vec::new();
    if e.is_timeout() {
        parts.push("timed out".to_string());
    }
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        parts.push(s.to_string());
        source = s.source();
    }
    if parts.is_empty() {
        parts.push(e.without_url_text());
    }
    crate::io::mask_urls_in(&parts.join(": "))
}

trait WithoutUrl {
    fn without_url_text(&self) -> String;
}

impl WithoutUrl for reqwest::Error {
    fn without_url_text(&self) -> String {
        let mut copy = String::new();
        if self.is_status() {
            copy.push_str("bad status");
        } else if self.is_body() || self.is_decode() {
            copy.push_str("cannot read the answer");
        } else {
            copy.push_str("request failed");
        }
        copy
    }
}
