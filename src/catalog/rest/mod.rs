//! The Iceberg REST catalog (the REST OpenAPI spec, `open-api/rest-catalog-open-api.yaml`).
//!
//! - `GET {uri}/config?warehouse=…` once: `overrides` over the database's settings over
//!   `defaults`; `prefix` goes between `/v1` and `/namespaces`, `namespace-separator` (default
//!   `%1F`) joins nested namespace levels in paths. `{uri}` is the engine's URL, with `/v1`
//!   appended unless it ends with it (ClickHouse's examples include it, pyiceberg's do not).
//! - Auth ([`auth`]): `auth_header` (`Name: value`, sent as is); `catalog_credential`
//!   (`client_id:client_secret`) → OAuth2 client credentials at `oauth_server_uri` or
//!   `{uri}/oauth/tokens` with `auth_scope` (default `PRINCIPAL_ROLE:ALL`), sent as a bearer token
//!   and fetched again once on a 401; the engine's user/password as HTTP basic auth otherwise.
//! - Load: `GET …/namespaces/{ns}/tables/{t}` (with `X-Iceberg-Access-Delegation:
//!   vended-credentials` when `vended_credentials = 1`, the default as in ClickHouse); storage
//!   from the answer's credentials ([`credentials`]) or the database's storage settings. Vended
//!   credentials that expire within 5 minutes are fetched anew at once (`GET …/credentials`), and
//!   renewed while the table's `FileIO` is in use ([`credentials::Renewer`] behind
//!   `crate::io::VendedSource`: ahead of expiry, and once when storage says they expired). The
//!   metadata file must exist in storage (else `FILE_DOESNT_EXIST`, nothing done).
//! - Commit: `POST …/namespaces/{ns}/tables/{t}` with [`diff::rest_changes`]. 200 → committed
//!   (the answer's metadata); 409 → conflict; 400 with a multi-id `remove-snapshots` → once more
//!   with one id per update; 5xx, a timeout or a lost connection → reload: committed when the
//!   reloaded metadata shows our commit ([`super::landed`]), else unknown.
//! - A 429, or a read's 503, is sent again after the wait its `Retry-After` asks (or a growing
//!   one), a few times at most ([`throttle`]).
//! - Every request has a connect timeout and a request timeout; errors name the catalog endpoint
//!   and the table, never a secret.

pub mod auth;
pub mod credentials;
pub mod diff;
mod requests;
mod throttle;

use requests::{Failure, error_of};
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::Mutex;

use super::{CatalogCommit, CatalogConfig, LoadedTable, TableIdent};
use crate::error::{Error, ErrorKind, Result};
use crate::iceberg::metadata::TableMetadata;
use auth::Auth;

/// What `GET /config` settled.
#[derive(Debug, Clone)]
struct Resolved {
    /// `{uri}/v1[/{prefix}]`.
    root: String,
    separator: String,
    /// The catalog's client properties: `defaults`, then `overrides` over them (storage keys such
    /// as `s3.endpoint` a catalog may give for every table; a load answer's `config` wins).
    properties: serde_json::Map<String, Value>,
}

/// A REST catalog. Clones share the HTTP client, the token and the settled config (a table's
/// vended credentials renew through a clone, [`credentials::Renewer`]).
#[derive(Debug, Clone)]
pub struct RestCatalog {
    config: CatalogConfig,
    /// `{uri}/v1`.
    base: String,
    /// The catalog URL as messages name it ([`crate::io::mask_url`]).
    shown: String,
    http: reqwest::Client,
    auth: Arc<Auth>,
    resolved: Arc<Mutex<Option<Resolved>>>,
}

/// The table and metadata file a commit builds on.
struct Base<'a> {
    ident: &'a TableIdent,
    metadata_location: &'a str,
}

impl RestCatalog {
    pub fn new(config: &CatalogConfig) -> Result<RestCatalog> {
        let endpoint = config.endpoint.clone().ok_or_else(|| {
            Error::bad_arguments(format!(
                "Database {}: a REST catalog needs its URL as the first argument of DataLakeCatalog",
                config.database
            ))
        })?;
        let trimmed = endpoint.trim_end_matches('/');
        let base = if trimmed.ends_with("/v1") {
            trimmed.to_string()
        } else {
            format!("{trimmed}/v1")
        };
        let http = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .timeout(config.request_timeout)
            .build()
            .map_err(|e| Error::logical(format!("Cannot build the HTTP client: {e}")))?;
        let auth = Auth::from_config(config, &base);
        Ok(RestCatalog {
            config: config.clone(),
            shown: crate::io::mask_url(&endpoint),
            base,
            http,
            auth: Arc::new(auth),
            resolved: Arc::new(Mutex::new(None)),
        })
    }

    /// The catalog URL as messages name it: masked, though `CatalogConfig` refuses a URL with
    /// a secret in it already.
    fn endpoint_text(&self) -> &str {
        &self.shown
    }

    /// `GET /config`, once.
    async fn resolved(&self) -> Result<Resolved> {
        let mut slot = self.resolved.lock().await;
        if let Some(r) = slot.as_ref() {
            return Ok(r.clone());
        }
        let mut url = url::Url::parse(&format!("{}/config", self.base)).map_err(|e| {
            Error::bad_arguments(format!(
                "Database {}: the REST catalog URL '{}' is not a URL: {e}",
                self.config.database,
                self.endpoint_text()
            ))
        })?;
        if let Some(warehouse) = self.config.get("warehouse") {
            url.query_pairs_mut().append_pair("warehouse", warehouse);
        }
        let answer = self
            .send(reqwest::Method::GET, url.as_str(), None, &[])
            .await
            .map_err(|f| self.unreachable(f, "GET /v1/config"))?;
        let json = self.expect_ok(&answer, "GET /v1/config", None)?;
        let pick = |key: &str| {
            json.get("overrides")
                .and_then(|o| o.get(key))
                .or_else(|| json.get("defaults").and_then(|d| d.get(key)))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let root = match pick("prefix").filter(|p| !p.is_empty()) {
            Some(prefix) => format!("{}/{}", self.base, prefix.trim_matches('/')),
            None => self.base.clone(),
        };
        let separator = pick("namespace-separator").unwrap_or_else(|| "%1F".to_string());
        let mut properties = serde_json::Map::new();
        for layer in ["defaults", "overrides"] {
            if let Some(map) = json.get(layer).and_then(Value::as_object) {
                for (k, v) in map {
                    if k.starts_with("s3.") || k.starts_with("adls.") || k == "client.region" {
                        properties.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        let resolved = Resolved {
            root,
            separator,
            properties,
        };
        *slot = Some(resolved.clone());
        Ok(resolved)
    }

    fn namespace_path(&self, resolved: &Resolved, namespace: &[String]) -> String {
        let levels: Vec<String> = namespace.iter().map(|l| encode(l)).collect();
        format!(
            "{}/namespaces/{}",
            resolved.root,
            levels.join(&resolved.separator)
        )
    }

    fn table_url(&self, resolved: &Resolved, ident: &TableIdent) -> String {
        format!(
            "{}/tables/{}",
            self.namespace_path(resolved, &ident.namespace),
            encode(&ident.name)
        )
    }

    async fn list_namespaces(
        &self,
        resolved: &Resolved,
        parent: Option<&[String]>,
    ) -> Result<Vec<Vec<String>>> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut url = url::Url::parse(&format!("{}/namespaces", resolved.root))
                .map_err(|e| Error::logical(format!("namespace URL: {e}")))?;
            if let Some(parent) = parent {
                let joined = parent.join("\u{1f}");
                url.query_pairs_mut().append_pair("parent", &joined);
            }
            if let Some(t) = &token {
                url.query_pairs_mut().append_pair("pageToken", t);
            }
            let answer = self
                .send(reqwest::Method::GET, url.as_str(), None, &[])
                .await
                .map_err(|f| self.unreachable(f, "GET /namespaces"))?;
            let json = self.expect_ok(&answer, "GET /namespaces", None)?;
            let listed = json
                .get("namespaces")
                .and_then(Value::as_array)
                .ok_or_else(|| self.malformed("GET /namespaces", "no 'namespaces' array"))?;
            for ns in listed {
                let levels: Option<Vec<String>> = ns.as_array().map(|l| {
                    l.iter()
                        .filter_map(|x| x.as_str().map(str::to_string))
                        .collect()
                });
                let levels = levels.ok_or_else(|| {
                    self.malformed("GET /namespaces", "a namespace is not an array")
                })?;
                out.push(levels);
            }
            token = next_token(&json);
            if token.is_none() {
                return Ok(out);
            }
        }
    }

    async fn tables_in(
        &self,
        resolved: &Resolved,
        namespace: &[String],
    ) -> Result<Vec<TableIdent>> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut url = url::Url::parse(&format!(
                "{}/tables",
                self.namespace_path(resolved, namespace)
            ))
            .map_err(|e| Error::logical(format!("tables URL: {e}")))?;
            if let Some(t) = &token {
                url.query_pairs_mut().append_pair("pageToken", t);
            }
            let answer = self
                .send(reqwest::Method::GET, url.as_str(), None, &[])
                .await
                .map_err(|f| self.unreachable(f, "GET /tables"))?;
            let json = self.expect_ok(&answer, "GET /tables", None)?;
            let listed = json
                .get("identifiers")
                .and_then(Value::as_array)
                .ok_or_else(|| self.malformed("GET /tables", "no 'identifiers' array"))?;
            for id in listed {
                let name = id.get("name").and_then(Value::as_str);
                let ns = id.get("namespace").and_then(Value::as_array);
                let (Some(name), Some(ns)) = (name, ns) else {
                    return Err(
                        self.malformed("GET /tables", "an identifier lacks name or namespace")
                    );
                };
                out.push(TableIdent {
                    namespace: ns
                        .iter()
                        .filter_map(|x| x.as_str().map(str::to_string))
                        .collect(),
                    name: name.to_string(),
                });
            }
            token = next_token(&json);
            if token.is_none() {
                return Ok(out);
            }
        }
    }

    /// `GET` the table: its JSON answer.
    async fn load_json(&self, ident: &TableIdent) -> std::result::Result<Value, Error> {
        let resolved = self.resolved().await?;
        let url = self.table_url(&resolved, ident);
        let vended = self.config.flag("vended_credentials", true);
        let headers: &[(&str, &str)] = if vended {
            &[("X-Iceberg-Access-Delegation", "vended-credentials")]
        } else {
            &[]
        };
        let answer = self
            .send(reqwest::Method::GET, &url, None, headers)
            .await
            .map_err(|f| self.unreachable(f, &format!("loading table {ident}")))?;
        self.expect_ok(&answer, "the table load", Some(ident))
    }

    async fn load(&self, ident: &TableIdent) -> Result<LoadedTable> {
        let json = self.load_json(ident).await?;
        let location = json
            .get("metadata-location")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                self.malformed(
                    &format!("the load of table {ident}"),
                    "no 'metadata-location' (a staged table?)",
                )
            })?
            .to_string();
        let metadata = match json.get("metadata") {
            Some(Value::Object(m)) => {
                TableMetadata::from_json(m.clone(), &location).map_err(|e| {
                    e.context(format!(
                        "REST catalog '{}', table {ident}",
                        self.endpoint_text()
                    ))
                })?
            }
            _ => {
                return Err(self.malformed(
                    &format!("the load of table {ident}"),
                    "no 'metadata' object",
                ));
            }
        };
        let vended = self.config.flag("vended_credentials", true);
        let mut json = json;
        // The catalog's own storage properties under the table's (the load answer wins).
        let catalog_props = self.resolved().await?.properties;
        if !catalog_props.is_empty() && json.is_object() {
            let mut config = catalog_props;
            if let Some(own) = json.get("config").and_then(Value::as_object) {
                for (k, v) in own {
                    config.insert(k.clone(), v.clone());
                }
            }
            json["config"] = Value::Object(config);
        }
        if vended
            && let Some(expires) = credentials::expires_at_ms(&json, &location)
            && expires - chrono::Utc::now().timestamp_millis() < crate::io::REFRESH_MARGIN_MS
        {
            // About to expire: fetch fresh ones (and their endpoint) before any file is read.
            let fresh = self.fresh_credentials(ident).await?;
            if let Some(object) = json.as_object_mut() {
                object.insert("storage-credentials".into(), fresh);
            }
            if let Some(config) = json.get_mut("config").and_then(Value::as_object_mut) {
                config.retain(|k, _| !k.starts_with("s3.") && !k.starts_with("adls."));
            }
        }
        let mut options = credentials::storage_options(&self.config, &json, &location, vended);
        if vended {
            // Renewed while the statement runs (`GET …/credentials`), see `crate::io::vended`.
            let held = credentials::vended_config(&json, &location)
                .map(|c| credentials::vended_credentials(&c))
                .filter(|c| !c.is_empty());
            if let Some(held) = held {
                let renewer = credentials::Renewer::new(self.clone(), ident.clone(), &location);
                options.vended = Some(crate::io::VendedSource::new(held, Arc::new(renewer)));
            }
        }
        let locations = [metadata.location(), location.as_str()];
        super::local_root::check(
            &self.config.database,
            &ident.to_string(),
            self.config.get(super::local_root::SETTING),
            &locations,
        )?;
        let io = if locations.iter().any(|l| super::local_root::is_local(l)) {
            crate::io::FileIO::with_local_disk(options)
        } else {
            crate::io::FileIO::new(options)
        };
        match io.head(&location).await {
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::FileDoesntExist => {
                return Err(Error::new(
                    ErrorKind::FileDoesntExist,
                    format!(
                        "The REST catalog at '{}' names '{location}' as the current metadata of \
                         table {ident}, but storage has no such file; nothing was done",
                        self.endpoint_text()
                    ),
                ));
            }
            Err(e) => {
                return Err(e.context(format!(
                    "Reading the metadata of table {ident} (REST catalog '{}')",
                    self.endpoint_text()
                )));
            }
        }
        Ok(LoadedTable {
            ident: ident.clone(),
            metadata_location: location,
            metadata,
            io,
        })
    }

    /// `GET …/tables/{t}/credentials`: the table's `storage-credentials`, fetched anew.
    pub(crate) async fn fresh_credentials(&self, ident: &TableIdent) -> Result<Value> {
        let resolved = self.resolved().await?;
        let url = format!("{}/credentials", self.table_url(&resolved, ident));
        let headers = [("X-Iceberg-Access-Delegation", "vended-credentials")];
        let answer = self
            .send(reqwest::Method::GET, &url, None, &headers)
            .await
            .map_err(|f| self.unreachable(f, &format!("refreshing the credentials of {ident}")))?;
        let json = self.expect_ok(&answer, "the credentials refresh", Some(ident))?;
        json.get("storage-credentials")
            .filter(|c| c.is_array())
            .cloned()
            .ok_or_else(|| {
                self.malformed(
                    &format!("the credentials refresh of {ident}"),
                    "no 'storage-credentials' array",
                )
            })
    }

    /// After an answer was lost: reload and decide whether our commit landed.
    async fn settle(&self, base: &Base<'_>, new: &TableMetadata, why: String) -> CatalogCommit {
        match self.load_json(base.ident).await {
            Ok(json) => {
                let location = json.get("metadata-location").and_then(Value::as_str);
                let metadata = json
                    .get("metadata")
                    .and_then(Value::as_object)
                    .zip(location)
                    .and_then(|(m, l)| TableMetadata::from_json(m.clone(), l).ok());
                match (location, metadata) {
                    (Some(l), Some(m)) if super::landed(base.metadata_location, new, &m) => {
                        CatalogCommit::Committed {
                            metadata_location: l.to_string(),
                            metadata: Box::new(m),
                        }
                    }
                    (Some(l), Some(_))
                        if crate::io::path_key(l)
                            == crate::io::path_key(base.metadata_location) =>
                    {
                        CatalogCommit::Unknown {
                            reason: format!(
                                "{why}; the table still shows the metadata we planned on, but the \
                                 catalog may still apply the commit"
                            ),
                        }
                    }
                    _ => CatalogCommit::Unknown {
                        reason: format!(
                            "{why}; the reloaded table does not show whether our commit landed"
                        ),
                    },
                }
            }
            Err(e) => CatalogCommit::Unknown {
                reason: format!("{why}; reloading the table failed too: {}", e.message()),
            },
        }
    }
}

#[async_trait::async_trait]
impl super::Catalog for RestCatalog {
    fn endpoint(&self) -> &str {
        self.endpoint_text()
    }

    async fn check(&self) -> Result<()> {
        self.resolved().await.map(|_| ())
    }

    async fn list_tables(&self) -> Result<Vec<TableIdent>> {
        let resolved = self.resolved().await?;
        let mut pending: Vec<Vec<String>> = self.list_namespaces(&resolved, None).await?;
        let mut seen = std::collections::BTreeSet::new();
        let mut tables = Vec::new();
        while let Some(ns) = pending.pop() {
            if !seen.insert(ns.clone()) || seen.len() > 10_000 {
                continue;
            }
            tables.extend(self.tables_in(&resolved, &ns).await?);
            // Nested namespaces: servers that do not support `parent` answer with the top level
            // again, which `seen` filters out.
            if let Ok(children) = self.list_namespaces(&resolved, Some(&ns)).await {
                pending.extend(children.into_iter().filter(|c| c.len() > ns.len()));
            }
        }
        tables.sort();
        tables.dedup();
        Ok(tables)
    }

    async fn load_table(&self, ident: &TableIdent) -> Result<LoadedTable> {
        self.load(ident).await
    }

    async fn commit(
        &self,
        ident: &TableIdent,
        base_location: &str,
        base_metadata: &TableMetadata,
        new: &TableMetadata,
    ) -> Result<CatalogCommit> {
        let changes = diff::rest_changes(base_metadata, new)?;
        if changes.is_empty() {
            return Ok(CatalogCommit::Committed {
                metadata_location: base_location.to_string(),
                metadata: Box::new(base_metadata.clone()),
            });
        }
        let base = Base {
            ident,
            metadata_location: base_location,
        };
        let resolved = self.resolved().await?;
        let url = self.table_url(&resolved, base.ident);
        let mut body = changes.body(&base.ident.namespace, &base.ident.name);
        let mut split_tried = false;
        loop {
            let answer = match self
                .send(reqwest::Method::POST, &url, Some(&body), &[])
                .await
            {
                Ok(answer) => answer,
                Err(Failure::Auth(e)) => return Err(e),
                Err(Failure::NotSent(why)) => {
                    return Err(Error::new(
                        ErrorKind::NetworkError,
                        format!(
                            "Cannot reach the REST catalog at '{}' to commit table {}: {why}; \
                             nothing was committed",
                            self.endpoint_text(),
                            base.ident
                        ),
                    ));
                }
                Err(Failure::Lost(why)) => {
                    let why = format!("the commit request got no answer ({why})");
                    return Ok(self.settle(&base, new, why).await);
                }
            };
            match answer.status {
                200..=299 => {
                    let json: Value = match serde_json::from_slice(&answer.body) {
                        Ok(json) => json,
                        Err(e) => {
                            let why = format!("the commit answer is malformed ({e})");
                            return Ok(self.settle(&base, new, why).await);
                        }
                    };
                    let location = json.get("metadata-location").and_then(Value::as_str);
                    let metadata = json
                        .get("metadata")
                        .and_then(Value::as_object)
                        .zip(location)
                        .map(|(m, l)| TableMetadata::from_json(m.clone(), l));
                    return match (location, metadata) {
                        (Some(l), Some(Ok(m))) => Ok(CatalogCommit::Committed {
                            metadata_location: l.to_string(),
                            metadata: Box::new(m),
                        }),
                        _ => {
                            let why =
                                "the commit answer lacks metadata-location or metadata".to_string();
                            Ok(self.settle(&base, new, why).await)
                        }
                    };
                }
                409 => {
                    let (kind, message) = error_of(&answer.body);
                    return Ok(CatalogCommit::Conflict {
                        reason: format!(
                            "{}: {}",
                            kind.unwrap_or_else(|| "CommitFailedException".into()),
                            message.unwrap_or_default()
                        ),
                    });
                }
                400 if !split_tried => match diff::split_remove_snapshots(&changes) {
                    Some(split) => {
                        split_tried = true;
                        body = split.body(&base.ident.namespace, &base.ident.name);
                        continue;
                    }
                    None => return Err(self.http_error(&answer, "the commit", Some(base.ident))),
                },
                500..=599 => {
                    let (_, message) = error_of(&answer.body);
                    let why = format!(
                        "the catalog answered the commit with HTTP {}{}",
                        answer.status,
                        message.map(|m| format!(" ({m})")).unwrap_or_default()
                    );
                    return Ok(self.settle(&base, new, why).await);
                }
                _ => return Err(self.http_error(&answer, "the commit", Some(base.ident))),
            }
        }
    }
}

/// A path segment, percent-encoded.
fn encode(segment: &str) -> String {
    percent_encoding::utf8_percent_encode(segment, percent_encoding::NON_ALPHANUMERIC).to_string()
}

fn next_token(json: &Value) -> Option<String> {
    json.get("next-page-token")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
}
