//! The test REST catalog (`tests/rest_catalog/server.py`, started by `scripts/emulators.sh`):
//! its URL, its admin hooks (warehouses, registering a table, failure injection, the request log)
//! and the `CREATE DATABASE` text that reaches it.
#![allow(dead_code)]

use serde_json::{Value, json};

use crate::support::emulator_var;

/// The catalog's URL (`http://127.0.0.1:<port>`).
pub fn uri() -> String {
    emulator_var("ICETRIM_REST_URI")
}

async fn admin(path: &str, body: Value) -> Value {
    let client = reqwest::Client::new();
    let url = format!("{}/admin/{path}", uri());
    let response = if body.is_null() {
        client.get(&url).send().await
    } else {
        client
            .post(&url)
            .header("Content-Type", "application/json")
            .body(body.to_string())
            .send()
            .await
    }
    .unwrap_or_else(|e| panic!("REST catalog admin {path}: {e}"));
    let status = response.status();
    let text = response.text().await.expect("admin answer");
    assert!(
        status.is_success(),
        "REST catalog admin {path}: {status} {text}"
    );
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// Declare warehouse `name` with `behaviour` (`client_id`/`client_secret`, `token`, `vend`).
pub async fn warehouse(name: &str, behaviour: Value) {
    let mut body = behaviour;
    body["name"] = json!(name);
    admin("warehouse", body).await;
}

/// Register the table `namespace.name` of `warehouse` at `metadata_location`.
pub async fn register(warehouse: &str, namespace: &[&str], name: &str, metadata_location: &str) {
    admin(
        "register",
        json!({"warehouse": warehouse, "namespace": namespace, "name": name,
               "metadata_location": metadata_location}),
    )
    .await;
}

/// The table `namespace.name` of `warehouse` now has `metadata_location` as its current metadata
/// (another writer's commit the test catalog cannot make itself, such as a v3 upgrade).
pub async fn set_metadata(
    warehouse: &str,
    namespace: &[&str],
    name: &str,
    metadata_location: &str,
) {
    admin(
        "set-metadata",
        json!({"warehouse": warehouse, "namespace": namespace, "name": name,
               "metadata_location": metadata_location}),
    )
    .await;
}

/// The next commit of `namespace.name` in `warehouse` fails as `mode` says (see the server's
/// comment).
pub async fn fail_next(warehouse: &str, namespace: &[&str], name: &str, mode: &str) {
    admin(
        "fail",
        json!({"warehouse": warehouse, "namespace": namespace, "name": name, "mode": mode}),
    )
    .await;
}

/// Every token issued so far stops working.
pub async fn expire_tokens() {
    admin("expire-tokens", json!({})).await;
}

/// The requests the catalog saw.
pub async fn log() -> Vec<Value> {
    match admin("log", Value::Null).await {
        Value::Array(entries) => entries,
        other => panic!("log: {other}"),
    }
}

/// `CREATE DATABASE <db> ENGINE = DataLakeCatalog('<uri>/v1') SETTINGS …` for `warehouse`, with
/// the S3 emulator's keys as the database's storage settings, plus `extra` settings.
pub fn create_database(db: &str, warehouse: &str, extra: &str) -> String {
    let endpoint = emulator_var("ICETRIM_S3_ENDPOINT");
    let extra = if extra.is_empty() {
        String::new()
    } else {
        format!(", {extra}")
    };
    format!(
        "CREATE DATABASE {db} ENGINE = DataLakeCatalog('{}/v1') SETTINGS catalog_type = 'rest', \
         warehouse = '{warehouse}', storage_endpoint = '{endpoint}', \
         aws_access_key_id = 'testing', aws_secret_access_key = 'testing', region = 'us-east-1'{extra}",
        uri()
    )
}

/// The newest `*.metadata.json` (highest version) among `names` (file names or paths).
pub fn newest_metadata_name<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    names
        .into_iter()
        .filter(|n| n.ends_with(".metadata.json"))
        .filter_map(|n| {
            let file = n.rsplit('/').next().unwrap_or(n);
            let digits: String = file
                .trim_start_matches('v')
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            Some((digits.parse::<u64>().ok()?, n))
        })
        .max()
        .map(|(_, n)| n)
}
