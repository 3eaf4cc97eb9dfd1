//! Storage credentials for a loaded REST table, in the order the REST spec gives them: the load
//! answer's `storage-credentials` (the entry whose `prefix` is the longest that starts the
//! metadata location), then its `config`; keys `s3.access-key-id`, `s3.secret-access-key`,
//! `s3.session-token`, `s3.endpoint`, `client.region`, `s3.path-style-access`,
//! `adls.sas-token.<account>`. Without vended keys, the database's storage settings
//! (`storage_endpoint`, `aws_access_key_id`, `aws_secret_access_key`, `region`) apply; a vended
//! answer without an endpoint keeps the database's `storage_endpoint`.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::catalog::{CatalogConfig, endpoint_origin};
use crate::io::StorageOptions;

/// The vended key-value config that applies to `location` (`None`: nothing vended).
pub fn vended_config(load: &Value, location: &str) -> Option<BTreeMap<String, String>> {
    let as_map = |v: &Value| -> BTreeMap<String, String> {
        v.as_object()
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default()
    };
    let best = load
        .get("storage-credentials")
        .and_then(Value::as_array)
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
        .map(|(_, config)| config);
    let config = best.unwrap_or_else(|| load.get("config").map(as_map).unwrap_or_default());
    let vended = config
        .keys()
        .any(|k| k.starts_with("s3.") || k.starts_with("adls.") || k == "client.region");
    vended.then_some(config)
}

/// When the vended credentials for `location` expire (`s3.session-token-expires-at-ms`).
pub fn expires_at_ms(load: &Value, location: &str) -> Option<i64> {
    vended_config(load, location)?
        .get("s3.session-token-expires-at-ms")?
        .trim()
        .parse()
        .ok()
}

/// How long before their expiry vended credentials are fetched anew
/// (`GET …/tables/{t}/credentials`): a statement must not outlive them.
pub const REFRESH_MARGIN_MS: i64 = 5 * 60 * 1000;

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
    if let Some((key, sas)) = vended
        .iter()
        .find(|(k, _)| k.starts_with("adls.sas-token."))
    {
        let account = key
            .trim_start_matches("adls.sas-token.")
            .split('.')
            .next()
            .unwrap_or("")
            .to_string();
        options.azure.sas_token = Some(sas.clone());
        if !account.is_empty() {
            options.azure.account = Some(account);
        }
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
}
