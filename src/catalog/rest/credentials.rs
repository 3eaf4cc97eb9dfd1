//! Storage credentials for a loaded REST table, in the order the REST spec gives them: the load
//! answer's `storage-credentials` (the entry whose `prefix` is the longest that starts the
//! metadata location), then its `config`; keys `s3.access-key-id`, `s3.secret-access-key`,
//! `s3.session-token`, `s3.session-token-expires-at-ms`, `s3.endpoint`, `client.region`,
//! `s3.path-style-access`, and for ADLS (as Java's `AzureProperties` and pyiceberg name them)
//! `adls.sas-token.<account>`, `adls.sas-token-expires-at-ms.<account>` and
//! `adls.connection-string.<account>` (the blob endpoint, e.g. an emulator's), where
//! `<account>` is the account name or its host (`acct.dfs.core.windows.net`,
//! `acct.blob.core.windows.net`). Without vended keys, the database's storage settings
//! (`storage_endpoint`, `aws_access_key_id`, `aws_secret_access_key`, `region`) apply; a vended
//! answer without an endpoint keeps the database's `storage_endpoint`.
//!
//! Vended keys and tokens are renewed while a statement runs ([`Renewer`]: `GET
//! …/tables/{t}/credentials`, the same longest-prefix rule; `crate::io::VendedSource` decides
//! when). Endpoint and region stay those of the load.

use std::collections::BTreeMap;

use serde_json::Value;

use super::RestCatalog;
use crate::catalog::{CatalogConfig, TableIdent, endpoint_origin};
use crate::error::Result;
use crate::io::{AzureSas, S3Credential, StorageOptions, VendedCredentials, sas_expiry_ms};

fn as_map(v: &Value) -> BTreeMap<String, String> {
    v.as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// The `config` of the `storage-credentials` entry whose prefix is the longest that starts
/// `location`.
pub fn best_credentials(credentials: &Value, location: &str) -> Option<BTreeMap<String, String>> {
    credentials
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| {
            let prefix = c.get("prefix")?.as_str()?;
            let config = c.get("config")?;
            location
                .starts_with(prefix)
                .then(|| (prefix.len(), as_map(config)))
        })
        .max_by_key(|(len, _)| *len)
        .map(|(_, config)| config)
}

/// The vended key-value config that applies to `location` (`None`: nothing vended).
pub fn vended_config(load: &Value, location: &str) -> Option<BTreeMap<String, String>> {
    let best = load
        .get("storage-credentials")
        .and_then(|c| best_credentials(c, location));
    let config = best.unwrap_or_else(|| load.get("config").map(as_map).unwrap_or_default());
    let vended = config
        .keys()
        .any(|k| k.starts_with("s3.") || k.starts_with("adls.") || k == "client.region");
    vended.then_some(config)
}

/// The storage account a key suffix names: `acct` of `acct` or `acct.dfs.core.windows.net`.
fn account_of(suffix: &str) -> String {
    suffix.split('.').next().unwrap_or("").to_ascii_lowercase()
}

/// The keys and tokens of a vended `config` (what renewals replace).
pub fn vended_credentials(config: &BTreeMap<String, String>) -> VendedCredentials {
    let get = |k: &str| config.get(k).filter(|v| !v.trim().is_empty()).cloned();
    let s3 = get("s3.access-key-id").map(|access_key_id| S3Credential {
        access_key_id,
        secret_access_key: get("s3.secret-access-key").unwrap_or_default(),
        session_token: get("s3.session-token"),
        expires_at_ms: get("s3.session-token-expires-at-ms").and_then(|v| v.trim().parse().ok()),
    });
    let expiries: BTreeMap<String, i64> = config
        .iter()
        .filter_map(|(k, v)| {
            let suffix = k.strip_prefix("adls.sas-token-expires-at-ms.")?;
            Some((account_of(suffix), v.trim().parse().ok()?))
        })
        .collect();
    let azure = config
        .iter()
        .filter_map(|(k, token)| {
            let account = account_of(k.strip_prefix("adls.sas-token.")?);
            let token = token.trim().trim_start_matches('?').to_string();
            if account.is_empty() || token.is_empty() {
                return None;
            }
            let expires_at_ms = expiries
                .get(&account)
                .copied()
                .or_else(|| sas_expiry_ms(&token));
            Some((
                account,
                AzureSas {
                    token,
                    expires_at_ms,
                },
            ))
        })
        .collect();
    VendedCredentials { s3, azure }
}

/// When the vended credentials for `location` expire (the earliest of
/// `s3.session-token-expires-at-ms` and the SAS tokens' expiries).
pub fn expires_at_ms(load: &Value, location: &str) -> Option<i64> {
    vended_credentials(&vended_config(load, location)?).expires_at_ms()
}

/// The blob endpoint an `adls.connection-string.<account>` value names: a URL as is, or the
/// `BlobEndpoint` of a connection string.
fn connection_endpoint(value: &str) -> Option<String> {
    let value = value.trim();
    if value.starts_with("http://") || value.starts_with("https://") {
        return Some(value.trim_end_matches('/').to_string());
    }
    value.split(';').find_map(|part| {
        let (k, v) = part.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("BlobEndpoint")
            .then(|| v.trim().trim_end_matches('/').to_string())
    })
}

/// Renews a table's vended credentials through `GET …/tables/{t}/credentials`.
#[derive(Debug)]
pub struct Renewer {
    catalog: RestCatalog,
    ident: TableIdent,
    location: String,
}

impl Renewer {
    pub fn new(catalog: RestCatalog, ident: TableIdent, location: &str) -> Renewer {
        Renewer {
            catalog,
            ident,
            location: location.to_string(),
        }
    }
}

#[async_trait::async_trait]
impl crate::io::CredentialRefresh for Renewer {
    fn describe(&self) -> String {
        format!(
            "table {} (REST catalog '{}')",
            self.ident,
            self.catalog.endpoint_text()
        )
    }

    async fn refresh(&self) -> Result<VendedCredentials> {
        let fresh = self.catalog.fresh_credentials(&self.ident).await?;
        let config = best_credentials(&fresh, &self.location).unwrap_or_default();
        let held = vended_credentials(&config);
        if held.is_empty() {
            return Err(crate::error::Error::incorrect_data(format!(
                "The REST catalog at '{}' answered the credentials refresh of {} with no \
                 storage credentials for '{}'",
                self.catalog.endpoint_text(),
                self.ident,
                self.location
            )));
        }
        Ok(held)
    }
}

/// The storage options for a table loaded with answer `load` (see the module comment).
pub fn storage_options(
    config: &CatalogConfig,
    load: &Value,
    location: &str,
    vended_wanted: bool,
) -> StorageOptions {
    let mut options = config.storage_options();
    let Some(vended) = vended_wanted
        .then(|| vended_config(load, location))
        .flatten()
    else {
        return options;
    };
    let get = |k: &str| vended.get(k).filter(|v| !v.is_empty()).cloned();
    if let Some(key) = get("s3.access-key-id") {
        options.s3.access_key_id = Some(key);
        options.s3.secret_access_key = get("s3.secret-access-key");
        options.s3.session_token = get("s3.session-token");
    }
    if let Some(endpoint) = get("s3.endpoint") {
        let origin = endpoint_origin(&endpoint);
        options.s3.allow_http = origin.starts_with("http://");
        options.s3.endpoint = Some(origin);
    }
    if let Some(region) = get("client.region").or_else(|| get("s3.region")) {
        options.s3.region = Some(region);
    }
    if let Some(path_style) = get("s3.path-style-access") {
        options.s3.virtual_hosted_style = path_style.eq_ignore_ascii_case("false");
    }
    if let Some((account, sas)) = vended_credentials(&vended).azure.into_iter().next() {
        options.azure.sas_token = Some(sas.token);
        options.azure.account = Some(account);
    }
    // The blob endpoint of the (first) account with a connection string.
    let endpoint = vended.iter().find_map(|(k, v)| {
        let account = account_of(k.strip_prefix("adls.connection-string.")?);
        Some((account, connection_endpoint(v)?))
    });
    if let Some((account, endpoint)) = endpoint {
        options.azure.allow_http = endpoint.starts_with("http://");
        options.azure.endpoint = Some(endpoint);
        options.azure.account.get_or_insert(account);
    }
    options
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(settings: &[(&str, &str)]) -> CatalogConfig {
        let mut all: BTreeMap<String, String> = settings
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        all.insert("catalog_type".into(), "rest".into());
        all.insert("warehouse".into(), "w".into());
        CatalogConfig::from_definition("lake", &["http://127.0.0.1:1/v1".into()], &all).unwrap()
    }

    #[test]
    fn longest_prefix_wins_then_config() {
        let load = json!({
            "config": {"s3.access-key-id": "CFG"},
            "storage-credentials": [
                {"prefix": "s3://b/", "config": {"s3.access-key-id": "SHORT"}},
                {"prefix": "s3://b/wh/", "config": {"s3.access-key-id": "LONG",
                  "s3.secret-access-key": "sec", "s3.endpoint": "http://127.0.0.1:9/b", "client.region": "eu-west-1"}},
                {"prefix": "s3://other/", "config": {"s3.access-key-id": "OTHER"}}
            ]
        });
        let options = storage_options(&config(&[]), &load, "s3://b/wh/t/metadata/1.json", true);
        assert_eq!(options.s3.access_key_id.as_deref(), Some("LONG"));
        assert_eq!(options.s3.secret_access_key.as_deref(), Some("sec"));
        assert_eq!(options.s3.endpoint.as_deref(), Some("http://127.0.0.1:9"));
        assert_eq!(options.s3.region.as_deref(), Some("eu-west-1"));
        let options = storage_options(&config(&[]), &load, "s3://z/t/m.json", true);
        assert_eq!(options.s3.access_key_id.as_deref(), Some("CFG"));
    }

    #[test]
    fn expiry_of_vended_credentials() {
        let load =
            json!({"config": {"s3.access-key-id": "A", "s3.session-token-expires-at-ms": "1234"}});
        assert_eq!(expires_at_ms(&load, "s3://b/t"), Some(1234));
        assert_eq!(
            expires_at_ms(&json!({"config": {"s3.access-key-id": "A"}}), "s3://b/t"),
            None
        );
    }

    #[test]
    fn database_settings_without_vended_keys() {
        let c = config(&[
            ("aws_access_key_id", "AK"),
            ("aws_secret_access_key", "SK"),
            ("storage_endpoint", "http://127.0.0.1:9000/bucket"),
        ]);
        let load = json!({"config": {"s3.access-key-id": "VENDED"}});
        let own = storage_options(&c, &load, "s3://b/t", false);
        assert_eq!(own.s3.access_key_id.as_deref(), Some("AK"));
        assert_eq!(own.s3.endpoint.as_deref(), Some("http://127.0.0.1:9000"));
        let none = storage_options(&c, &json!({"config": {}}), "s3://b/t", true);
        assert_eq!(none.s3.access_key_id.as_deref(), Some("AK"));
        let vended = storage_options(&c, &load, "s3://b/t", true);
        assert_eq!(vended.s3.access_key_id.as_deref(), Some("VENDED"));
        assert_eq!(vended.s3.endpoint.as_deref(), Some("http://127.0.0.1:9000"));
    }

    #[test]
    fn adls_sas_tokens_by_account_with_expiry_and_endpoint() {
        let load = json!({"config": {
            "adls.sas-token.acct.dfs.core.windows.net": "?sv=1&se=2026-12-01T08%3A56%3A30Z&sig=S",
            "adls.sas-token-expires-at-ms.acct.dfs.core.windows.net": "1700",
            "adls.connection-string.acct.dfs.core.windows.net": "http://127.0.0.1:10000/acct/",
        }});
        let config = vended_config(&load, "abfss://c@acct.dfs.core.windows.net/t").unwrap();
        let held = vended_credentials(&config);
        let sas = held.sas_for("ACCT").expect("a token for acct");
        assert_eq!(sas.token, "sv=1&se=2026-12-01T08%3A56%3A30Z&sig=S");
        assert_eq!(sas.expires_at_ms, Some(1700));
        assert!(held.s3.is_none());
        let options = storage_options(
            &config_of(),
            &load,
            "abfss://c@acct.dfs.core.windows.net/t",
            true,
        );
        assert_eq!(options.azure.account.as_deref(), Some("acct"));
        assert_eq!(
            options.azure.endpoint.as_deref(),
            Some("http://127.0.0.1:10000/acct")
        );
        assert!(options.azure.allow_http);
        // Without an explicit expiry, the token's own `se`; a connection string's BlobEndpoint.
        let load = json!({"config": {
            "adls.sas-token.other": "se=2026-12-01&sig=S",
            "adls.connection-string.other": "DefaultEndpointsProtocol=https;BlobEndpoint=https://b.example/x;",
        }});
        let config = vended_config(&load, "abfss://c@other.blob.core.windows.net/t").unwrap();
        assert_eq!(
            vended_credentials(&config)
                .sas_for("other")
                .and_then(|s| s.expires_at_ms),
            Some(1_796_083_200_000)
        );
        let options = storage_options(
            &config_of(),
            &load,
            "abfss://c@other.blob.core.windows.net/t",
            true,
        );
        assert_eq!(
            options.azure.endpoint.as_deref(),
            Some("https://b.example/x")
        );
        assert!(!options.azure.allow_http);
    }

    #[test]
    fn s3_keys_and_their_expiry_are_what_renewals_replace() {
        let fresh = json!([
            {"prefix": "s3://b/", "config": {"s3.access-key-id": "SHORT"}},
            {"prefix": "s3://b/wh/", "config": {"s3.access-key-id": "K", "s3.secret-access-key": "S",
              "s3.session-token": "T", "s3.session-token-expires-at-ms": "99"}}
        ]);
        let config = best_credentials(&fresh, "s3://b/wh/t/metadata/x.json").unwrap();
        let held = vended_credentials(&config);
        let s3 = held.s3.as_ref().unwrap();
        assert_eq!(
            (s3.access_key_id.as_str(), s3.session_token.as_deref()),
            ("K", Some("T"))
        );
        assert_eq!(held.expires_at_ms(), Some(99));
        assert!(best_credentials(&fresh, "s3://z/t").is_none());
        assert!(vended_credentials(&BTreeMap::new()).is_empty());
    }

    fn config_of() -> CatalogConfig {
        config(&[])
    }
}
