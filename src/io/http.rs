//! The HTTP client object stores use: object_store's reqwest client, except that a connection
//! the endpoint refuses (nothing listens there) or a host name that does not resolve fails the
//! request at once. object_store retries every connect failure up to ten times with backoff
//! (seconds before the error shows); a refused connection or an unknown host is a wrong endpoint
//! or a stopped server far more often than a blip, and a user waits for nothing. Other failures
//! (timeouts, resets, 5xx answers) keep object_store's retries.

use std::error::Error as StdError;
use std::fmt;

use super::errors::unreachable_reason;

use object_store::client::{
    ClientOptions, HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpResponse,
    HttpService, ReqwestConnector,
};

/// Builds object_store's reqwest client wrapped in [`FailFast`].
#[derive(Debug, Default)]
pub(crate) struct FailFastConnector;

impl HttpConnector for FailFastConnector {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        let inner = ReqwestConnector::default().connect(options)?;
        Ok(HttpClient::new(FailFast(inner)))
    }
}

#[derive(Debug)]
struct FailFast(HttpClient);

#[async_trait::async_trait]
impl HttpService for FailFast {
    async fn call(&self, request: HttpRequest) -> Result<HttpResponse, HttpError> {
        self.0.execute(request).await.map_err(|e| {
            if e.kind() == HttpErrorKind::Connect && is_unreachable(&e) {
                HttpError::new(HttpErrorKind::Unknown, Unreachable(e))
            } else {
                e
            }
        })
    }
}

/// A connect failure not worth retrying, shown as the failure it wraps.
#[derive(Debug)]
struct Unreachable(HttpError);

impl fmt::Display for Unreachable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.source() {
            Some(source) => write!(f, "{source}"),
            None => write!(f, "{}", self.0),
        }
    }
}

impl StdError for Unreachable {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.0.source()
    }
}

fn is_unreachable(e: &HttpError) -> bool {
    unreachable_reason(e).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_and_unknown_hosts_are_told_apart_from_other_failures() {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert_eq!(unreachable_reason(&refused), Some("refused the connection"));
        let wrapped = HttpError::new(HttpErrorKind::Connect, refused);
        assert_eq!(unreachable_reason(&wrapped), Some("refused the connection"));
        let dns = std::io::Error::other("dns error: failed to lookup address information");
        assert_eq!(
            unreachable_reason(&dns),
            Some("has a host name that does not resolve")
        );
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        assert_eq!(unreachable_reason(&reset), None);
    }

    /// Against a port nothing listens on: one attempt, well under object_store's retry budget.
    #[tokio::test]
    async fn a_refused_connection_is_not_retried() {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let store = object_store::aws::AmazonS3Builder::new()
            .with_bucket_name("b")
            .with_endpoint(format!("http://127.0.0.1:{port}"))
            .with_allow_http(true)
            .with_access_key_id("k")
            .with_secret_access_key("s")
            .with_http_connector(FailFastConnector)
            .build()
            .unwrap();
        let started = std::time::Instant::now();
        let path = object_store::path::Path::from("t/x");
        let e = object_store::ObjectStoreExt::get(&store, &path)
            .await
            .unwrap_err();
        let elapsed = started.elapsed();
        assert!(
            elapsed < std::time::Duration::from_millis(500),
            "{elapsed:?}"
        );
        let text = e.to_string();
        assert!(!text.contains("retries"), "{text}");
        assert_eq!(unreachable_reason(&e), Some("refused the connection"));
    }
}
