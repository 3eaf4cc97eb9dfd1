//! Moto's Glue (the S3 emulator's server answers Glue too): registering a table copy as an
//! Iceberg table in a fresh Glue database, the `CREATE DATABASE` text that reaches it, and the
//! Glue proxy (`tests/py/glue_proxy.py`: enforces `VersionId`, which moto ignores, and injects
//! failures).
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

use crate::support::{emulator_var, fixtures};

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
    create_glue_database(database).await;
    add_table(database, table, location, metadata_location).await;
}

/// Create Glue database `database`.
pub async fn create_glue_database(database: &str) {
    call(
        "CreateDatabase",
        json!({"DatabaseInput": {"Name": database}}),
    )
    .await;
}

/// In the existing Glue database `database`, the Iceberg table `table` whose current metadata is
/// `metadata_location`.
pub async fn add_table(database: &str, table: &str, location: &str, metadata_location: &str) {
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

/// `tests/py/glue_proxy.py` in front of moto's Glue; stopped when dropped.
pub struct Proxy {
    child: Child,
    pub url: String,
}

impl Proxy {
    pub fn start() -> Proxy {
        let moto = emulator_var("ICETRIM_S3_ENDPOINT");
        let mut child = Command::new(fixtures::python())
            .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/py/glue_proxy.py"))
            .arg(&moto)
            .arg(&moto)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start glue_proxy.py");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("proxy stdout"))
            .read_line(&mut line)
            .expect("proxy port");
        let port: u16 = line.trim().parse().expect("the proxy prints its port");
        Proxy {
            child,
            url: format!("http://127.0.0.1:{port}"),
        }
    }

    pub async fn mode(&self, mode: Value) {
        let answer = reqwest::Client::new()
            .post(format!("{}/__proxy__/mode", self.url))
            .body(mode.to_string())
            .send()
            .await
            .expect("proxy mode");
        assert!(answer.status().is_success());
    }

    pub async fn stats(&self) -> Value {
        let text = reqwest::get(format!("{}/__proxy__/stats", self.url))
            .await
            .expect("proxy stats")
            .text()
            .await
            .expect("stats body");
        serde_json::from_str(&text).expect("stats JSON")
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
