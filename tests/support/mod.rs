//! Shared helpers of every integration-test binary, the one place they live.
//!
//! Each binary `tests/<area>/main.rs` includes this folder with
//! `#[path = "../support/mod.rs"] mod support;` and declares each file of its folder as a module
//! (`mod <file>;`); test files reach the helpers as `crate::support::…`. A helper only one binary
//! uses is a file of that binary's folder (`tests/sessions/session_text.rs`).
//!
//! This file itself: storage emulators (started by `scripts/emulators.sh`, which `scripts/test.sh`
//! runs), unique scratch locations and copies of local folders. A missing emulator fails the test (panic), never skips it.
#![allow(dead_code)]

pub mod backends;
pub mod catalog;
pub mod commit;
pub mod expire;
pub mod fixtures;
pub mod glue_catalog;
pub mod metadata;
pub mod orphans;
pub mod pyserver;
pub mod relocate;
pub mod rest_catalog;

use icetrim::internals::io::{
    AZURE_EMULATOR_ACCOUNT, AZURE_EMULATOR_KEY, AzureOptions, FileIO, S3Options, StorageOptions,
};

const NOT_RUNNING: &str = "emulators not running: run scripts/test.sh";

/// An emulator setting from `target/emulators.env`; panics when the emulators are not running.
pub fn emulator_var(name: &str) -> String {
    match std::env::var(name) {
        Ok(value) if !value.is_empty() => value,
        _ => panic!("{NOT_RUNNING} ({name} is not set)"),
    }
}

/// A short unique name for one test's scratch folder.
pub fn unique(label: &str) -> String {
    format!("{label}-{}", uuid::Uuid::new_v4().simple())
}

/// Copy the folder `from` with everything below it to `to` (created when missing): a table's
/// backup, to put it back after a failed or crashed run.
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Options reaching the moto S3 emulator.
pub fn s3_emulator_options() -> StorageOptions {
    StorageOptions {
        s3: S3Options {
            access_key_id: Some("testing".into()),
            secret_access_key: Some("testing".into()),
            region: Some("us-east-1".into()),
            endpoint: Some(emulator_var("ICETRIM_S3_ENDPOINT")),
            allow_http: true,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// A `FileIO` on the moto S3 emulator and a fresh, empty folder URI in its test bucket
/// (`s3://icetrim-test/<label>-<uuid>`).
pub fn s3_emulator(label: &str) -> (FileIO, String) {
    let bucket = emulator_var("ICETRIM_S3_BUCKET");
    let io = FileIO::new(s3_emulator_options());
    (io, format!("s3://{bucket}/{}", unique(label)))
}

/// Options reaching the azurite emulator's development account.
pub fn azure_emulator_options() -> StorageOptions {
    StorageOptions {
        azure: AzureOptions {
            account: Some(AZURE_EMULATOR_ACCOUNT.into()),
            access_key: Some(AZURE_EMULATOR_KEY.into()),
            endpoint: Some(emulator_var("ICETRIM_AZURE_ENDPOINT")),
            allow_http: true,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// A `FileIO` on the azurite emulator and a fresh, empty folder URI in its test container
/// (`abfss://icetrim-test@devstoreaccount1.dfs.core.windows.net/<label>-<uuid>`).
pub fn azure_emulator(label: &str) -> (FileIO, String) {
    let container = emulator_var("ICETRIM_AZURE_CONTAINER");
    let io = FileIO::new(azure_emulator_options());
    let root = format!(
        "abfss://{container}@{AZURE_EMULATOR_ACCOUNT}.dfs.core.windows.net/{}",
        unique(label)
    );
    (io, root)
}

/// An account SAS token for azurite's development account (read, write, delete, list, add,
/// create on services, containers and objects) valid for `hours`, signed with the account key
/// by `azure-storage-blob` (azurite checks the signature and the expiry): the query string,
/// `se=…&sp=…&sv=…&ss=b&srt=sco&sig=…`, without a leading `?`.
pub fn azurite_account_sas(hours: u32) -> String {
    const SIGN: &str = "import datetime, sys\n\
from azure.storage.blob import AccountSasPermissions, ResourceTypes, generate_account_sas\n\
expiry = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=int(sys.argv[3]))\n\
print(generate_account_sas(sys.argv[1], sys.argv[2], ResourceTypes(service=True, container=True, \
object=True), AccountSasPermissions(read=True, write=True, delete=True, list=True, add=True, \
create=True), expiry))\n";
    let output = std::process::Command::new(fixtures::python())
        .args(["-c", SIGN, AZURE_EMULATOR_ACCOUNT, AZURE_EMULATOR_KEY])
        .arg(hours.to_string())
        .output()
        .expect("python starts");
    assert!(
        output.status.success(),
        "signing a SAS token failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let sas = String::from_utf8(output.stdout)
        .expect("UTF-8")
        .trim()
        .to_string();
    assert!(sas.contains("sig="), "not a SAS token: {sas}");
    sas
}

/// The azurite connection string (for `IcebergAzure(...)` engine tests).
pub fn azure_emulator_connection_string() -> String {
    format!(
        "DefaultEndpointsProtocol=http;AccountName={AZURE_EMULATOR_ACCOUNT};\
         AccountKey={AZURE_EMULATOR_KEY};BlobEndpoint={};",
        emulator_var("ICETRIM_AZURE_ENDPOINT")
    )
}
