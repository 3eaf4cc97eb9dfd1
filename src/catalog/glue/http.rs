//! The AWS SDK's HTTP client, over reqwest: the client (hyper, rustls, ring) object_store
//! already builds, so the Glue client adds no second HTTP or TLS stack and no C build of its own.
//!
//! Glue's requests and answers are small JSON documents: the request body is sent as the bytes
//! the SDK serialised, the answer is read whole. Timeouts are bounded (connect and whole request),
//! so a catalog that is down never hangs a statement. A request that never reached the server
//! (no connection could be made) is marked `never_connected`, so a commit can tell "certainly not
//! applied" from "unknown" ([`never_connected`]).

use std::error::Error as StdError;
use std::time::Duration;

use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_runtime_api::http::StatusCode;
use aws_smithy_types::body::SdkBody;

/// Connect timeout of a catalog request.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Whole-request timeout of a catalog request (sending, waiting, reading the answer).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// An [`HttpClient`] for the SDK that sends every request through one reqwest client.
#[derive(Debug, Clone)]
pub struct ReqwestHttpClient {
    client: reqwest::Client,
}

impl ReqwestHttpClient {
    /// A client with the bounded timeouts above (the SDK's own connector settings, when it has
    /// any, shorten them per request).
    pub fn new() -> Result<Self, reqwest::Error> {
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .build()?;
        Ok(ReqwestHttpClient { client })
    }

    /// The client as the SDK's config takes it.
    pub fn shared(self) -> SharedHttpClient {
        SharedHttpClient::new(self)
    }
}

impl HttpClient for ReqwestHttpClient {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        _components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        SharedHttpConnector::new(ReqwestConnector {
            client: self.client.clone(),
            read_timeout: settings.read_timeout(),
        })
    }
}

#[derive(Debug)]
struct ReqwestConnector {
    client: reqwest::Client,
    read_timeout: Option<Duration>,
}

impl HttpConnector for ReqwestConnector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let client = self.client.clone();
        let read_timeout = self.read_timeout;
        HttpConnectorFuture::new(async move { send(&client, request, read_timeout).await })
    }
}

async fn send(
    client: &reqwest::Client,
    request: HttpRequest,
    read_timeout: Option<Duration>,
) -> Result<HttpResponse, ConnectorError> {
    let method = reqwest::Method::from_bytes(request.method().as_bytes())
        .map_err(|e| ConnectorError::user(Box::new(e)))?;
    let Some(body) = request.body().bytes() else {
        return Err(ConnectorError::user(
            "a streaming request body (Glue requests are whole JSON documents)".into(),
        ));
    };
    let mut builder = client.request(method, request.uri()).body(body.to_vec());
    for (name, value) in request.headers().iter() {
        builder = builder.header(name, value);
    }
    if let Some(timeout) = read_timeout {
        builder = builder.timeout(timeout.min(REQUEST_TIMEOUT));
    }
    let response = builder.send().await.map_err(connector_error)?;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let bytes = response.bytes().await.map_err(connector_error)?;
    let status =
        StatusCode::try_from(status).map_err(|e| ConnectorError::other(Box::new(e), None))?;
    let mut answer = HttpResponse::new(status, SdkBody::from(bytes));
    for (name, value) in &headers {
        if let Ok(value) = value.to_str() {
            answer
                .headers_mut()
                .append(name.as_str().to_string(), value.to_string());
        }
    }
    Ok(answer)
}

fn connector_error(e: reqwest::Error) -> ConnectorError {
    if e.is_connect() {
        ConnectorError::io(Box::new(e)).never_connected()
    } else if e.is_timeout() {
        ConnectorError::timeout(Box::new(e))
    } else {
        ConnectorError::io(Box::new(e))
    }
}

/// Whether `error` (anything the SDK returned) says the request never reached the server: no
/// connection could be made, so nothing it carried can have been applied.
pub fn never_connected(error: &(dyn StdError + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(e) = e.downcast_ref::<reqwest::Error>() {
            return e.is_connect();
        }
        next = e.source();
    }
    false
}

/// The innermost cause of `error`, for messages (the SDK's outer errors say "dispatch failure").
pub fn root_cause(error: &(dyn StdError + 'static)) -> String {
    let mut text = error.to_string();
    let mut next = error.source();
    while let Some(e) = next {
        let line = e.to_string();
        if !line.is_empty() && !text.contains(&line) {
            text = format!("{text}: {line}");
        }
        next = e.source();
    }
    // An HTTP client's message may quote the request URL.
    crate::io::mask_urls_in(&text)
}
