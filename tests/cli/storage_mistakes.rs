//! Storage mistakes from a first try, through the `icetrim` binary (its environment is the
//! user's): each error says what is wrong in a sentence, soon. Needs the S3 emulator and the test
//! REST catalog (`scripts/emulators.sh`).

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::support::{emulator_var, rest_catalog, unique};

const BIN: &str = env!("CARGO_BIN_EXE_icetrim");

/// icetrim `-q sql` with no AWS variables but `env`.
fn icetrim(sql: &str, env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(BIN);
    command.args(["-q", sql]).stdin(Stdio::null());
    for (name, _) in std::env::vars() {
        if name.starts_with("AWS_") {
            command.env_remove(name);
        }
    }
    command.envs(env.iter().copied());
    command.output().expect("icetrim runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_missing_bucket_is_named_not_pasted() {
    let endpoint = emulator_var("ICETRIM_S3_ENDPOINT");
    let bucket = unique("nosuch");
    let output = icetrim(
        &format!(
            "CREATE TABLE t ENGINE = IcebergS3('{endpoint}/{bucket}/t', 'k', 's'); \
             ALTER TABLE t EXECUTE expire_snapshots(dry_run = 1)"
        ),
        &[],
    );
    let text = stderr(&output);
    assert!(
        text.contains(&format!(
            "the bucket '{bucket}' does not exist at this endpoint; check the bucket name"
        )),
        "{text}"
    );
    assert!(
        !text.contains("<Error>") && !text.contains("<?xml"),
        "{text}"
    );
    assert_eq!(output.status.code(), Some(499 % 256), "{text}");
}

#[test]
fn an_unreachable_endpoint_is_reported_at_once() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        listener.local_addr().expect("its address").port()
    };
    let started = Instant::now();
    let output = icetrim(
        &format!(
            "CREATE TABLE t ENGINE = IcebergS3('http://127.0.0.1:{port}/b/t', 'k', 's'); \
             ALTER TABLE t EXECUTE expire_snapshots(dry_run = 1)"
        ),
        &[],
    );
    let elapsed = started.elapsed();
    let text = stderr(&output);
    assert!(
        text.contains(&format!(
            "the storage endpoint http://127.0.0.1:{port} refused the connection; check the endpoint"
        )),
        "{text}"
    );
    // object_store's ten retries with backoff took 1.5 to 3.7 s here.
    assert!(elapsed < Duration::from_millis(1000), "{elapsed:?}: {text}");
}

#[test]
fn an_http_endpoint_from_the_environment_is_served_over_http() {
    let endpoint = emulator_var("ICETRIM_S3_ENDPOINT");
    let bucket = emulator_var("ICETRIM_S3_BUCKET");
    let table = format!("s3://{bucket}/{}/t", unique("none"));
    for variable in ["AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"] {
        let output = icetrim(
            &format!(
                "CREATE TABLE t ENGINE = IcebergS3('{table}'); \
                 ALTER TABLE t EXECUTE expire_snapshots(dry_run = 1)"
            ),
            &[
                (variable, endpoint.as_str()),
                ("AWS_ACCESS_KEY_ID", "testing"),
                ("AWS_SECRET_ACCESS_KEY", "testing"),
                ("AWS_REGION", "us-east-1"),
            ],
        );
        let text = stderr(&output);
        // The store answered: the folder holds no table (before: "HTTP error: builder error").
        assert!(
            text.contains(&format!(
                "The metadata file for Iceberg table with path {table} doesn't exist"
            )),
            "{variable}: {text}"
        );
    }
}

/// A table of the REST catalog on S3, written by pyiceberg; its metadata location.
fn rest_table_on_s3(warehouse: &str) -> String {
    let script = r#"
import os, sys, pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
props = {"s3.endpoint": os.environ["ICETRIM_S3_ENDPOINT"], "s3.access-key-id": "testing",
         "s3.secret-access-key": "testing", "s3.region": "us-east-1"}
catalog = SqlCatalog("s", uri="sqlite:///" + sys.argv[1], warehouse=sys.argv[2], **props)
catalog.create_namespace("ns")
table = catalog.create_table("ns.t", schema=pa.schema([("id", pa.int64())]))
table.append(pa.table({"id": [1]}))
print(table.metadata_location)
"#;
    let dir = tempfile::tempdir().expect("a scratch folder");
    let db = dir.path().join("catalog.db");
    let bucket = emulator_var("ICETRIM_S3_BUCKET");
    let python = emulator_var("ICETRIM_PYTHON");
    let output = Command::new(python)
        .args(["-c", script, db.to_str().expect("utf-8")])
        .arg(format!("s3://{bucket}/{warehouse}"))
        .output()
        .expect("python runs");
    assert!(output.status.success(), "{}", stderr(&output));
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

#[tokio::test]
async fn a_catalog_table_without_storage_credentials_says_what_to_set() {
    let warehouse = unique("nocreds");
    let metadata = rest_table_on_s3(&warehouse);
    rest_catalog::warehouse(&warehouse, serde_json::json!({})).await;
    rest_catalog::register(&warehouse, &["ns"], "t", &metadata).await;
    let sql = format!(
        "CREATE DATABASE lake ENGINE = DataLakeCatalog('{}/v1') SETTINGS catalog_type = 'rest', \
         warehouse = '{warehouse}'; USE lake; ALTER TABLE `ns.t` EXECUTE expire_snapshots(dry_run = 1)",
        rest_catalog::uri()
    );
    let output = tokio::task::spawn_blocking(move || icetrim(&sql, &[]))
        .await
        .expect("icetrim ran");
    let text = stderr(&output);
    assert!(
        text.contains(
            "no S3 credentials: none were given with the table or vended by its catalog, the \
             AWS_* environment has none"
        ) && text.contains("set storage_endpoint, aws_access_key_id and aws_secret_access_key"),
        "{text}"
    );
}
