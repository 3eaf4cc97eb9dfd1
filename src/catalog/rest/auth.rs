//! REST catalog authentication: a raw `auth_header`, OAuth2 client credentials from
//! `catalog_credential` (`client_id:client_secret`, or a secret alone), or HTTP basic auth from the
//! engine's user and password. A token is kept for as long as the catalog is (one per database
//! and session) and fetched again once after a 401, or before it is used when less than
//! [`EXPIRY_MARGIN`] (at most half its life) of its `expires_in` is left.

use std::fmt;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::Mutex;

use crate::catalog::CatalogConfig;
use crate::error::{Error, ErrorKind, Result};

/// ClickHouse's default `auth_scope`.
pub const DEFAULT_SCOPE: &str = "PRINCIPAL_ROLE:ALL";

/// A token is fetched anew when less than this (at most half its life) is left of it.
pub const EXPIRY_MARGIN: Duration = Duration::from_secs(60);

/// An OAuth2 access token and when it is to be fetched anew (`None`: when refused).
#[derive(Clone)]
pub struct Token {
    pub bearer: String,
    pub renew_at: Option<Instant>,
}

impl Token {
    /// A token answered at `now` that lives `expires_in` seconds when the answer says so.
    pub fn new(bearer: String, expires_in: Option<u64>, now: Instant) -> Token {
        let renew_at = expires_in.map(|secs| {
            let life = Duration::from_secs(secs);
            now + life - EXPIRY_MARGIN.min(life / 2)
        });
        Token { bearer, renew_at }
    }

    /// Whether the token is still good to send at `now`.
    pub fn fresh(&self, now: Instant) -> bool {
        self.renew_at.is_none_or(|at| now < at)
    }
}

/// How requests authenticate.
pub enum Auth {
    None,
    Header {
        name: String,
        value: String,
    },
    Basic {
        user: String,
        password: String,
    },
    OAuth2 {
        token_url: String,
        client_id: Option<String>,
        client_secret: String,
        scope: String,
        token: Mutex<Option<Token>>,
    },
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Auth::None => f.write_str("Auth::None"),
            Auth::Header { name, .. } => write!(f, "Auth::Header({name}: [HIDDEN])"),
            Auth::Basic { user, .. } => write!(f, "Auth::Basic({user}:[HIDDEN])"),
            Auth::OAuth2 {
                token_url, scope, ..
            } => {
                let token_url = crate::io::mask_url(token_url);
                write!(f, "Auth::OAuth2({token_url}, scope {scope}, [HIDDEN])")
            }
        }
    }
}

impl Auth {
    /// From the database settings; `base` is `{uri}/v1`.
    pub fn from_config(config: &CatalogConfig, base: &str) -> Auth {
        if let Some(header) = config.get("auth_header") {
            let (name, value) = header.split_once(':').unwrap_or(("Authorization", header));
            return Auth::Header {
                name: name.trim().to_string(),
                value: value.trim().to_string(),
            };
        }
        if let Some(credential) = config.get("catalog_credential") {
            let (client_id, client_secret) = match credential.split_once(':') {
                Some((id, secret)) => (Some(id.to_string()), secret.to_string()),
                None => (None, credential.to_string()),
            };
            return Auth::OAuth2 {
                token_url: config
                    .get("oauth_server_uri")
                    .map_or_else(|| format!("{base}/oauth/tokens"), str::to_string),
                client_id,
                client_secret,
                scope: config
                    .get("auth_scope")
                    .unwrap_or(DEFAULT_SCOPE)
                    .to_string(),
                token: Mutex::new(None),
            };
        }
        match (&config.user, &config.password) {
            (Some(user), Some(password)) if !user.is_empty() => Auth::Basic {
                user: user.clone(),
                password: password.clone(),
            },
            _ => Auth::None,
        }
    }

    /// Whether a 401 is worth a new token.
    pub fn can_refresh(&self) -> bool {
        matches!(self, Auth::OAuth2 { .. })
    }

    /// Add the credentials to `request`; `refresh` (after a 401), no token yet, or a token near
    /// its expiry fetches a new OAuth token first.
    pub async fn apply(
        &self,
        http: &reqwest::Client,
        request: reqwest::RequestBuilder,
        refresh: bool,
    ) -> Result<reqwest::RequestBuilder> {
        Ok(match self {
            Auth::None => request,
            Auth::Header { name, value } => request.header(name.as_str(), value.as_str()),
            Auth::Basic { user, password } => request.basic_auth(user, Some(password)),
            Auth::OAuth2 { token, .. } => {
                let mut slot = token.lock().await;
                let now = Instant::now();
                let bearer = match slot.as_ref() {
                    Some(held) if !refresh && held.fresh(now) => held.bearer.clone(),
                    _ => {
                        let fetched = self.fetch_token(http).await?;
                        let bearer = fetched.bearer.clone();
                        *slot = Some(fetched);
                        bearer
                    }
                };
                request.bearer_auth(bearer)
            }
        })
    }

    async fn fetch_token(&self, http: &reqwest::Client) -> Result<Token> {
        let Auth::OAuth2 {
            token_url,
            client_id,
            client_secret,
            scope,
            ..
        } = self
        else {
            return Err(Error::logical("not an OAuth catalog"));
        };
        // Messages name the endpoint masked (`CatalogConfig` refuses a secret in it already).
        let shown = crate::io::mask_url(token_url);
        let body = {
            let mut form = url::form_urlencoded::Serializer::new(String::new());
            form.append_pair("grant_type", "client_credentials");
            if let Some(id) = client_id {
                form.append_pair("client_id", id);
            }
            form.append_pair("client_secret", client_secret);
            form.append_pair("scope", scope);
            form.finish()
        };
        let response = http
            .post(token_url)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .map_err(|e| {
                Error::new(
                    ErrorKind::NetworkError,
                    format!(
                        "Cannot reach the OAuth2 token endpoint '{shown}': {}",
                        if e.is_timeout() {
                            "timed out"
                        } else if e.is_connect() {
                            "connection failed"
                        } else {
                            "request failed"
                        }
                    ),
                )
            })?;
        let status = response.status().as_u16();
        let body = response.bytes().await.unwrap_or_default();
        if !(200..300).contains(&status) {
            let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let detail = json
                .get("error_description")
                .or_else(|| json.get("error"))
                .and_then(Value::as_str)
                .unwrap_or("");
            return Err(Error::new(
                ErrorKind::ReceivedErrorFromRemoteIoServer,
                format!(
                    "The OAuth2 token endpoint '{shown}' refused the client credentials \
                     (catalog_credential): HTTP {status} {detail}"
                ),
            ));
        }
        let json: Value = serde_json::from_slice(&body).map_err(|e| {
            Error::incorrect_data(format!(
                "The OAuth2 token endpoint '{shown}' answered with malformed JSON: {e}"
            ))
        })?;
        let expires_in = json.get("expires_in").and_then(|v| {
            v.as_u64()
                .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
        });
        json.get("access_token")
            .and_then(Value::as_str)
            .map(|bearer| Token::new(bearer.to_string(), expires_in, Instant::now()))
            .ok_or_else(|| {
                Error::incorrect_data(format!(
                    "The OAuth2 token endpoint '{shown}' answered without an access_token"
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_renewed_before_its_expiry() {
        let now = Instant::now();
        let hour = Token::new("t".into(), Some(3600), now);
        assert!(hour.fresh(now + Duration::from_secs(3539)));
        assert!(!hour.fresh(now + Duration::from_secs(3540)), "60 s before");
        // A short-lived token is renewed after half its life, not after it expired.
        let short = Token::new("t".into(), Some(10), now);
        assert!(short.fresh(now + Duration::from_secs(4)));
        assert!(!short.fresh(now + Duration::from_secs(5)));
        // No `expires_in`: kept until refused (a 401 fetches a new one).
        let open = Token::new("t".into(), None, now);
        assert!(open.fresh(now + Duration::from_secs(1_000_000)));
    }
}
