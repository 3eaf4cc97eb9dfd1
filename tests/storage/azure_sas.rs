//! Azure tables reached with only a SAS token given with the table (no account key anywhere in
//! icetrim's options or environment): as the query of the `IcebergAzure` storage account URL
//! (`http://…/devstoreaccount1?sv=…&sig=…`, as ClickHouse takes it) and as a connection string's
//! `SharedAccessSignature`. Azurite checks the token's signature and expiry. Expiry and orphan
//! removal read, commit and delete with the token alone; a wrong token or a missing container
//! is ClickHouse's `AZURE_BLOB_STORAGE_ERROR`, and the token appears in no message.

use std::time::Duration;

use icetrim::ErrorKind;
use icetrim::engine::{Engine, Metrics, QueryResult, Session};
use icetrim::internals::generate::{GenerateOptions, Generated, generate};
use icetrim::internals::iceberg::spec::FormatVersion;
use icetrim::internals::io::{FileIO, StorageOptions};

use crate::support as common;

/// A generated table on azurite (written with the account key): its key `FileIO`, location,
/// folder below the container, and what the generator wrote.
struct AzureTable {
    io: FileIO,
    folder: String,
    generated: Generated,
}

impl AzureTable {
    async fn new(label: &str) -> AzureTable {
        let (io, root) = common::azure_emulator(label);
        let mut options = GenerateOptions::new(&root, FormatVersion::V2, 8, 2, 11, now_ms());
        options.orphans = 2;
        options.collect_expected = true;
        let generated = generate(&io, &options).await.expect("generate on azurite");
        let folder = root.rsplit('/').next().expect("a folder").to_string();
        AzureTable {
            io,
            folder,
            generated,
        }
    }

    async fn exists(&self, uri: &str) -> bool {
        self.io.head(uri).await.is_ok()
    }

    /// The live data files of `main` (what its scan plans).
    fn live(&self) -> Vec<String> {
        self.generated.expected["main"].data.clone()
    }
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn session() -> Session {
    Engine::builder().build().expect("engine").session()
}

async fn run(s: &mut Session, sql: &str) -> QueryResult {
    let mut results = s
        .execute(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    results.pop().expect("a result")
}

const EXPIRE: &str = "EXECUTE expire_snapshots(retention_period = '0s', retain_last = 1)";

/// Expire, then remove the generator's orphans, on `table` registered by `engine` (with only a
/// SAS token); asserts the deleted files are gone, the live ones kept, and no warning.
async fn expire_and_remove_orphans(table: &AzureTable, engine: &str, secret: &str) {
    let mut s = session();
    run(&mut s, "SET session_timezone = 'UTC'").await;
    run(&mut s, &format!("CREATE TABLE az ENGINE = {engine}")).await;
    let shown = run(&mut s, "SHOW CREATE TABLE az").await;
    let shown = format!("{:?}", shown.rows);
    assert!(!shown.contains(secret), "{shown}");
    assert!(shown.contains("[HIDDEN]"), "{shown}");

    let expired = run(&mut s, &format!("ALTER TABLE az {EXPIRE}")).await;
    assert!(expired.warnings.is_empty(), "{:?}", expired.warnings);
    let Some(Metrics::Expire(m)) = expired.metrics else {
        panic!("no expire metrics");
    };
    assert!(m.deleted_manifest_lists_count >= 7, "{m:?}");
    assert!(
        m.deleted_data_files_count + m.deleted_manifest_files_count > 0,
        "{m:?}"
    );
    for file in table.live() {
        assert!(table.exists(&file).await, "a live file was deleted: {file}");
    }

    // Orphans written a moment ago: a cut-off after them (azurite dates to the second).
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let cutoff = chrono::Utc::now().format("%Y-%m-%d %H:%M:%S");
    let orphans = table.generated.orphans.clone();
    assert!(!orphans.is_empty());
    for orphan in &orphans {
        assert!(table.exists(orphan).await, "{orphan}");
    }
    let removed = run(
        &mut s,
        &format!("ALTER TABLE az EXECUTE remove_orphan_files(older_than = '{cutoff}')"),
    )
    .await;
    assert!(removed.warnings.is_empty(), "{:?}", removed.warnings);
    let Some(Metrics::Orphans(m)) = removed.metrics else {
        panic!("no orphan metrics");
    };
    assert_eq!(m.failed_deletions_count, 0, "{m:?}");
    for orphan in &orphans {
        assert!(!table.exists(orphan).await, "orphan left: {orphan}");
    }
    for file in table.live() {
        assert!(table.exists(&file).await, "a live file was deleted: {file}");
    }
    // The table still reads: its snapshots are listed through the token.
    let snapshots = run(&mut s, "SELECT snapshot_id FROM system.iceberg_snapshots").await;
    assert_eq!(snapshots.rows.len(), 1, "{:?}", snapshots.rows);
}

/// `IcebergAzure('<account url>?<SAS>', container, path)`: the token signs every request (before,
/// icetrim dropped it and fell back to managed identity: `Error performing GET
/// http://169.254.169.254/metadata/identity/oauth2/token…`, labelled `S3_ERROR`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sas_token_in_the_account_url_is_used() {
    let table = AzureTable::new("sas-url").await;
    let sas = common::azurite_account_sas(2);
    let endpoint = common::emulator_var("ICETRIM_AZURE_ENDPOINT");
    let container = common::emulator_var("ICETRIM_AZURE_CONTAINER");
    let engine = format!(
        "IcebergAzure('{endpoint}/?{sas}', '{container}', '{}')",
        table.folder
    );
    let signature = sas.split("sig=").nth(1).expect("a signature").to_string();
    expire_and_remove_orphans(&table, &engine, &signature).await;
}

/// `IcebergAzure('BlobEndpoint=…;SharedAccessSignature=<SAS>', container, path)`: deletes go blob
/// by blob (before, every delete failed: azurite answers the Blob Batch request of a SAS with
/// `500 Internal Server Error`, and expiry left the files with a warning).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sas_token_in_a_connection_string_deletes_blob_by_blob() {
    let table = AzureTable::new("sas-conn").await;
    let sas = common::azurite_account_sas(2);
    let endpoint = common::emulator_var("ICETRIM_AZURE_ENDPOINT");
    let container = common::emulator_var("ICETRIM_AZURE_CONTAINER");
    let engine = format!(
        "IcebergAzure('BlobEndpoint={endpoint};SharedAccessSignature={sas}', '{container}', '{}')",
        table.folder
    );
    let signature = sas.split("sig=").nth(1).expect("a signature").to_string();
    expire_and_remove_orphans(&table, &engine, &signature).await;
}

/// The store layer on its own: every operation (and a bulk delete) through options parsed from
/// a storage account URL with a SAS token.
#[tokio::test]
async fn account_url_sas_options_reach_the_emulator() {
    let endpoint = common::emulator_var("ICETRIM_AZURE_ENDPOINT");
    let container = common::emulator_var("ICETRIM_AZURE_CONTAINER");
    let args = [
        format!("{endpoint}?{}", common::azurite_account_sas(1)),
        container,
        common::unique("sas-store"),
    ];
    let (location, options) = StorageOptions::from_azure_engine_args(&args).expect("args");
    assert!(options.azure.access_key.is_none());
    crate::storage_conformance::conformance(&FileIO::new(options), &location).await;
}

/// A token azurite does not accept, and a container that does not exist: ClickHouse's
/// `AZURE_BLOB_STORAGE_ERROR` (500), naming the table, never the token; nothing changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azure_failures_are_azure_blob_storage_errors() {
    let table = AzureTable::new("sas-bad").await;
    let endpoint = common::emulator_var("ICETRIM_AZURE_ENDPOINT");
    let container = common::emulator_var("ICETRIM_AZURE_CONTAINER");
    let sas = common::azurite_account_sas(1);
    let forged = format!(
        "{}sig=F0RGED{}",
        sas.split("sig=").next().expect("the fields"),
        "%3D"
    );
    let mut s = session();
    for (name, engine) in [
        (
            "forged",
            format!(
                "IcebergAzure('{endpoint}?{forged}', '{container}', '{}')",
                table.folder
            ),
        ),
        (
            "missing",
            format!(
                "IcebergAzure('{}', 'no-such-container', '{}')",
                common::azure_emulator_connection_string(),
                table.folder
            ),
        ),
    ] {
        run(&mut s, &format!("CREATE TABLE {name} ENGINE = {engine}")).await;
        let e = s
            .execute(&format!("ALTER TABLE {name} {EXPIRE}"))
            .await
            .expect_err("azurite refuses");
        assert_eq!(e.kind(), ErrorKind::AzureBlobStorageError, "{e}");
        let text = e.to_string();
        assert!(text.starts_with("Code: 500. DB::Exception: "), "{text}");
        assert!(text.ends_with("(AZURE_BLOB_STORAGE_ERROR)"), "{text}");
        assert!(
            text.contains(&format!("Table default.{name} at 'abfss://")),
            "{text}"
        );
        assert!(!text.contains("F0RGED"), "{text}");
    }
    let metadata = table.generated.metadata_path.clone();
    assert!(table.exists(&metadata).await, "nothing changed");
}
