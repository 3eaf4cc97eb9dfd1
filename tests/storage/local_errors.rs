//! Local-disk failures carry ClickHouse's local-file codes and name the table: a file that
//! cannot be opened or created is `CANNOT_OPEN_FILE` (76), a folder that cannot be created
//! `CANNOT_CREATE_DIRECTORY` (172), a file that cannot be removed `CANNOT_UNLINK` (458), never
//! S3's `S3_ERROR`. The tests run as root in CI, which ignores permissions: they put a file where
//! a folder is needed, a dangling link where a folder must be created, a folder where a file is
//! to be removed. Nothing is committed when the statement fails.

use icetrim::ErrorKind;
use icetrim::engine::Engine;
use icetrim::internals::generate::{GenerateOptions, generate};
use icetrim::internals::iceberg::spec::FormatVersion;
use icetrim::internals::io::FileIO;

const EXPIRE: &str = "EXECUTE expire_snapshots(retention_period = '0s', retain_last = 1)";

/// A generated local table (6 snapshots) in a fresh folder: the folder guard and the table path.
async fn local_table() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let location = dir.path().join("t").to_str().expect("UTF-8").to_string();
    let now = chrono::Utc::now().timestamp_millis();
    let options = GenerateOptions::new(&location, FormatVersion::V2, 6, 2, 5, now);
    generate(&FileIO::local(), &options)
        .await
        .expect("generate");
    (dir, location)
}

/// The names in `<location>/metadata`, sorted.
fn metadata_names(location: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(format!("{location}/metadata"))
        .expect("metadata folder")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Expiry must first write its journal under `metadata/.icetrim/`: the error is ClickHouse's
/// code for the step that failed, names the table and its path, and nothing is committed.
/// Before, both were `Code: 499 … Cannot write '<t>/metadata/.icetrim/expiry-….json': Generic
/// LocalFileSystem error: Unable to create dir <t>/metadata/.icetrim: … (S3_ERROR)`.
#[tokio::test]
async fn an_expiry_journal_that_cannot_be_written_is_a_local_file_error() {
    for (blocker, kind, code) in [
        ("a file", ErrorKind::CannotOpenFile, "(CANNOT_OPEN_FILE)"),
        (
            "a dangling link",
            ErrorKind::CannotCreateDirectory,
            "(CANNOT_CREATE_DIRECTORY)",
        ),
    ] {
        let (_dir, location) = local_table().await;
        let journal = format!("{location}/metadata/.icetrim");
        match blocker {
            "a file" => std::fs::write(&journal, b"not a folder").expect("write"),
            _ => std::os::unix::fs::symlink(format!("{location}/nowhere"), &journal).expect("link"),
        }
        let before = metadata_names(&location);
        let mut s = Engine::builder().build().expect("engine").session();
        s.execute(&format!(
            "CREATE TABLE t ENGINE = IcebergLocal('{location}')"
        ))
        .await
        .expect("create");
        let e = s
            .execute(&format!("ALTER TABLE t {EXPIRE}"))
            .await
            .expect_err("the journal cannot be written");
        assert_eq!(e.kind(), kind, "{blocker}: {e}");
        let text = e.to_string();
        assert!(text.ends_with(code), "{text}");
        assert!(
            text.starts_with(&format!(
                "Code: {}. DB::Exception: Table default.t at '{location}': Cannot write \
                 '{location}/metadata/.icetrim/expiry-",
                kind.code()
            )),
            "{blocker}: {text}"
        );
        assert_eq!(metadata_names(&location), before, "nothing committed");
    }
}

/// Deleting and reading on local disk through `FileIO`: a folder where a file is to be removed is
/// `CANNOT_UNLINK`, a file below a file is `CANNOT_OPEN_FILE`; each names the path.
#[tokio::test]
async fn local_deletes_and_reads_get_local_codes() {
    let (_dir, location) = local_table().await;
    let io = FileIO::local();
    let folder = format!("{location}/data/a-folder.parquet");
    std::fs::create_dir(&folder).expect("mkdir");
    let e = io.delete(&folder).await.expect_err("a folder is no file");
    assert_eq!(e.kind(), ErrorKind::CannotUnlink, "{e}");
    assert!(e.message().contains(&folder), "{e}");
    let outcomes = io.delete_many(std::slice::from_ref(&folder)).await;
    let e = outcomes[0].result.clone().expect_err("a folder is no file");
    assert_eq!(e.kind(), ErrorKind::CannotUnlink, "{e}");
    let outcomes = io
        .delete_below(&location, std::slice::from_ref(&folder), 4)
        .await;
    let e = outcomes[0].result.clone().expect_err("a folder is no file");
    assert_eq!(e.kind(), ErrorKind::CannotUnlink, "{e}");
    assert!(std::path::Path::new(&folder).is_dir());

    let below_a_file = format!("{location}/metadata/v1.metadata.json/x.avro");
    let e = io.read(&below_a_file).await.expect_err("below a file");
    assert_eq!(e.kind(), ErrorKind::CannotOpenFile, "{e}");
    assert!(e.message().contains(&below_a_file), "{e}");
}
