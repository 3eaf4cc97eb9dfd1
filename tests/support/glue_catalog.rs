//! Moto's Glue (the S3 emulator's server answers Glue too): registering a table copy as an
//! Iceberg table in a fresh Glue database, and the `CREATE DATABASE` text that reaches it.
#![allow(dead_code)]

use serde_json::{Value, json};

use crate::support::emulator_var;

/// One Glue call on moto (moto does not check signatures; the scope names the region).
async fn call(operation: &str, payload: Value) -> Value {
    let endpoint = emulator_var("ICETRIM_S3_ENDPOINT");
    let response = reqwest::Client::new()
        .post(format!("{endpoint}/"))
        .header("Content-Type", "application/x-amz-json-1.1")
        .header("X-Amz-Target", format!("AWSGlue.{operation}"))
        .header(
            "Authorization",
            "AWS4-HMAC-SHA256 Credential=testing/20260101/us-east-1/glue/aws4_request, \
             SignedHeaders=host, Signature=0",
        )
        .body(payload.to_string())
        .send()
        .await
        .unwrap_or_else(|e| panic!("moto Glue {operation}: {e}"));
    let status = response.status();
    let text = response.text().await.expect("a Glue answer");
    assert!(
        status.is_success(),
        "moto Glue {operation}: {status} {text}"
    );
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// Create Glue database `database` and in it the Iceberg table `table` whose current metadata is
/// `metadata_location` (what Java's and pyiceberg's `register_table` write).
pub async fn register(database: &str, table: &str, location: &str, metadata_location: &str) {
    call(
        "CreateDatabase",
        json!({"DatabaseInput": {"Name": database}}),
    )
    .await;
    call(
        "CreateTable",
        json!({
            "DatabaseName": database,
            "TableInput": {
                "Name": table,
                "TableType": "EXTERNAL_TABLE",
                "Parameters": {"table_type": "ICEBERG", "metadata_location": metadata_location},
                "StorageDescriptor": {"Location": location},
            }
        }),
    )
    .await;
}

/// `CREATE DATABASE <db> ENGINE = DataLakeCatalog('<moto>') SETTINGS catalog_type = 'glue', …`
/// showing only Glue database `namespace`, with moto's keys for Glue and S3.
pub fn create_database(db: &str, namespace: &str) -> String {
    let endpoint = emulator_var("ICETRIM_S3_ENDPOINT");
    format!(
        "CREATE DATABASE {db} ENGINE = DataLakeCatalog('{endpoint}') SETTINGS catalog_type = \
         'glue', region = 'us-east-1', aws_access_key_id = 'testing', aws_secret_access_key = \
         'testing', storage_endpoint = '{endpoint}', namespaces = '{namespace}'"
    )
}
