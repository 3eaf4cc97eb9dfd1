//! One storage conformance suite, run on every backend: memory, local disk (bare paths and
//! `file://`), the S3 emulator (moto) and the Azure emulator (azurite). Plus request counting
//! (bulk deletes batch on S3) and fault injection through `FileIO::from_store`.

use crate::support as common;

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use futures::TryStreamExt;
use icetrim::ErrorKind;
use icetrim::internals::io::{
    Fault, FaultInjector, FaultyStore, FileIO, RequestCounter, StorageOptions, WriteOutcome,
    is_under, path_key,
};

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

async fn listed(io: &FileIO, prefix: &str) -> BTreeMap<String, (u64, Option<i64>, String)> {
    let files: Vec<_> = io.list(prefix).try_collect().await.expect("list");
    files
        .into_iter()
        .map(|f| (path_key(&f.uri), (f.size, f.last_modified_ms, f.uri)))
        .collect()
}

async fn listed_concurrently(io: &FileIO, prefix: &str) -> BTreeMap<String, u64> {
    let files: Vec<_> = io
        .list_concurrent(prefix, 2)
        .try_collect()
        .await
        .expect("list_concurrent");
    let count = files.len();
    let map: BTreeMap<String, u64> = files
        .into_iter()
        .map(|f| (path_key(&f.uri), f.size))
        .collect();
    assert_eq!(map.len(), count, "a file listed twice under {prefix}");
    map
}

/// The suite. `root` is a fresh folder URI on the backend `io` serves.
pub(crate) async fn conformance(io: &FileIO, root: &str) {
    let started = now_ms();
    let a = format!("{root}/dir/a.txt");

    // Create-if-absent, twice.
    let created = io.write_if_absent(&a, Bytes::from_static(b"hello")).await;
    assert_eq!(created.expect("create"), WriteOutcome::Created);
    let again = io.write_if_absent(&a, Bytes::from_static(b"other")).await;
    assert_eq!(again.expect("create again"), WriteOutcome::AlreadyExists);
    assert_eq!(io.read(&a).await.expect("read"), "hello");

    // Overwrite, read back, range read, head.
    io.overwrite(&a, Bytes::from_static(b"hello world"))
        .await
        .expect("overwrite");
    assert_eq!(io.read(&a).await.expect("read"), "hello world");
    assert_eq!(io.read_range(&a, 6..11).await.expect("range"), "world");
    let head = io.head(&a).await.expect("head");
    assert_eq!((head.uri.as_str(), head.size), (a.as_str(), 11));
    let modified = head.last_modified_ms.expect("head has a time");
    assert!(
        modified >= started - 2_000 && modified <= now_ms() + 2_000,
        "{modified}"
    );

    // More files: nested, unicode and space in names, a sibling sharing a name prefix.
    let files = [
        (a.clone(), 11),
        (format!("{root}/dir/sub/b.bin"), 3),
        (format!("{root}/dir/sp ace ü.txt"), 7),
        (format!("{root}/top.txt"), 1),
        (format!("{root}/dir2/c"), 2),
    ];
    for (uri, size) in files.iter().skip(1) {
        let data = Bytes::from(vec![b'x'; *size]);
        io.overwrite(uri, data).await.expect("write");
    }

    // Recursive listing with sizes and times; listed URIs read back and name what was written.
    let all = listed(io, root).await;
    let expected: BTreeMap<String, u64> = files
        .iter()
        .map(|(uri, size)| (path_key(uri), *size as u64))
        .collect();
    let sizes: BTreeMap<String, u64> = all.iter().map(|(k, v)| (k.clone(), v.0)).collect();
    assert_eq!(sizes, expected);
    for (size, modified, uri) in all.values() {
        let modified = modified.expect("listing has times");
        assert!(
            modified >= started - 2_000 && modified <= now_ms() + 2_000,
            "{uri}: {modified}"
        );
        assert!(is_under(root, uri), "{uri} not under {root}");
        assert_eq!(io.read(uri).await.expect("read listed").len() as u64, *size);
    }
    assert_eq!(listed_concurrently(io, root).await, expected);
    let trailing_slash = listed(io, &format!("{root}/")).await;
    assert_eq!(trailing_slash.len(), expected.len());

    // A directory lists only itself, not siblings sharing its name prefix.
    let dir = listed(io, &format!("{root}/dir")).await;
    assert_eq!(dir.len(), 3, "{dir:?}");
    assert_eq!(
        listed_concurrently(io, &format!("{root}/dir")).await.len(),
        3
    );

    // Missing things.
    let missing = format!("{root}/missing");
    assert!(listed(io, &missing).await.is_empty());
    assert!(listed_concurrently(io, &missing).await.is_empty());
    let err = io.read(&missing).await.expect_err("read missing");
    assert_eq!(err.kind(), ErrorKind::FileDoesntExist, "{err}");
    assert!(err.message().contains(&missing), "{err}");
    let err = io.head(&missing).await.expect_err("head missing");
    assert_eq!(err.kind(), ErrorKind::FileDoesntExist, "{err}");

    // Delete, delete again.
    io.delete(&a).await.expect("delete");
    let err = io.read(&a).await.expect_err("read deleted");
    assert_eq!(err.kind(), ErrorKind::FileDoesntExist);
    io.delete(&a).await.expect("delete missing is ok");

    // Bulk delete of present and missing files: per-path outcomes, in order.
    let batch: Vec<String> = vec![
        files[1].0.clone(),
        missing.clone(),
        files[2].0.clone(),
        a.clone(),
    ];
    let outcomes = io.delete_many(&batch).await;
    assert_eq!(outcomes.len(), batch.len());
    for (outcome, uri) in outcomes.iter().zip(&batch) {
        assert_eq!(&outcome.uri, uri);
        assert!(outcome.result.is_ok(), "{uri}: {:?}", outcome.result);
    }
    let left: Vec<String> = listed(io, root).await.into_keys().collect();
    assert_eq!(left, [path_key(&files[4].0), path_key(&files[3].0)]);

    let rest: Vec<String> = [&files[3].0, &files[4].0].map(Clone::clone).to_vec();
    assert!(io.delete_many(&rest).await.iter().all(|o| o.result.is_ok()));
    assert!(listed(io, root).await.is_empty());
}

#[tokio::test]
async fn memory() {
    let io = FileIO::memory();
    conformance(&io, "memory:///conformance").await;
}

#[tokio::test]
async fn local_disk() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_str().expect("utf-8 temp path").to_string();
    conformance(&FileIO::local(), &root).await;
}

#[tokio::test]
async fn local_disk_file_uris() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = format!("file://{}", dir.path().to_str().expect("utf-8 temp path"));
    conformance(&FileIO::local(), &root).await;
}

#[tokio::test]
async fn s3_emulator() {
    let (io, root) = common::s3_emulator("conformance");
    conformance(&io, &root).await;
}

#[tokio::test]
async fn s3_emulator_via_s3a_alias() {
    let (io, root) = common::s3_emulator("conformance-s3a");
    let root = root.replacen("s3://", "s3a://", 1);
    conformance(&io, &root).await;
}

#[tokio::test]
async fn azure_emulator() {
    let (io, root) = common::azure_emulator("conformance");
    conformance(&io, &root).await;
}

/// Writes `n` small files under `root` and bulk-deletes them through a counting `FileIO`.
async fn count_bulk_delete(
    io: &FileIO,
    root: &str,
    n: usize,
) -> icetrim::internals::io::RequestCounts {
    let counter = RequestCounter::new();
    let counting = io.with_request_counter(Arc::clone(&counter));
    let uris: Vec<String> = (0..n).map(|i| format!("{root}/f{i}")).collect();
    for uri in &uris {
        counting
            .overwrite(uri, Bytes::from_static(b"x"))
            .await
            .expect("write");
    }
    assert_eq!(listed(&counting, root).await.len(), n);
    let outcomes = counting.delete_many(&uris).await;
    assert!(outcomes.iter().all(|o| o.result.is_ok()), "{outcomes:?}");
    assert!(listed(&counting, root).await.is_empty());
    counting.request_counts().expect("counting")
}

#[tokio::test]
async fn s3_bulk_delete_batches_keys() {
    let (io, root) = common::s3_emulator("bulk");
    let counts = count_bulk_delete(&io, &root, 1001).await;
    assert_eq!(counts.put, 1001);
    assert_eq!((counts.delete, counts.deleted_keys), (2, 1001), "{counts}");
    // 1001 keys list in two pages of 1000, the empty folder in one.
    assert_eq!(counts.list, 3, "{counts}");
}

#[tokio::test]
async fn azure_bulk_delete_batches_keys() {
    let (io, root) = common::azure_emulator("bulk");
    let counts = count_bulk_delete(&io, &root, 300).await;
    assert_eq!((counts.delete, counts.deleted_keys), (2, 300), "{counts}");
}

#[tokio::test]
async fn memory_counts_every_kind() {
    let io = FileIO::memory();
    let counts = count_bulk_delete(&io, "memory://count", 3).await;
    assert_eq!((counts.put, counts.delete, counts.list), (3, 3, 2));
    let counter = RequestCounter::new();
    let counting = io.with_request_counter(Arc::clone(&counter));
    let uri = "memory://count/x";
    counting
        .overwrite(uri, Bytes::from_static(b"abc"))
        .await
        .expect("write");
    counting.read(uri).await.expect("read");
    counting.head(uri).await.expect("head");
    let counts = counter.snapshot();
    assert_eq!((counts.put, counts.get, counts.head), (1, 1, 1), "{counts}");
    assert_eq!(counts.total(), 3);
}

#[tokio::test]
async fn injected_faults_reach_callers_per_path() {
    let injector = FaultInjector::new();
    let store = Arc::new(FaultyStore::new(
        Arc::new(object_store::memory::InMemory::new()),
        Arc::clone(&injector),
    ));
    let io = FileIO::from_store("memory://", store).expect("memory store");
    let uris: Vec<String> = (0..4).map(|i| format!("memory://t/f{i}")).collect();
    for uri in &uris {
        io.overwrite(uri, Bytes::from_static(b"x"))
            .await
            .expect("write");
    }
    injector.fail_after(2, Fault::FailMutations);
    let outcomes = io.delete_many(&uris).await;
    let ok: Vec<bool> = outcomes.iter().map(|o| o.result.is_ok()).collect();
    assert_eq!(ok, [true, true, false, false]);
    let err = outcomes[2].result.clone().expect_err("injected");
    assert_eq!(err.kind(), ErrorKind::StorageError);
    assert!(err.message().contains(&uris[2]), "{err}");
    injector.fail_after(0, Fault::Crash);
    assert!(
        io.write_if_absent("memory://t/new", Bytes::new())
            .await
            .is_err()
    );
    assert!(io.read(&uris[3]).await.is_err(), "reads fail after a crash");
    let err = io.read("s3://b/x").await.expect_err("unserved");
    assert_eq!(err.kind(), ErrorKind::BadArguments, "{err}");
}

#[tokio::test]
async fn refuses_uris_it_does_not_serve() {
    let io = FileIO::local();
    let err = io.read("memory://x").await.expect_err("memory on local");
    assert!(err.message().contains("memory://x"), "{err}");
    let err = FileIO::memory()
        .read("/etc/hostname")
        .await
        .expect_err("local on memory");
    assert!(err.message().contains("/etc/hostname"), "{err}");
    let err = io.read("hdfs://nn/x").await.expect_err("hdfs");
    assert_eq!(err.kind(), ErrorKind::BadArguments);
}

#[tokio::test]
async fn local_disk_with_faults() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_str().expect("utf-8 temp path").to_string();
    let injector = FaultInjector::new();
    let io = FileIO::local().with_faults(Arc::clone(&injector));
    injector.fail_after(1, Fault::Crash);
    let first = format!("{root}/a");
    let second = format!("{root}/b");
    io.overwrite(&first, Bytes::from_static(b"1"))
        .await
        .expect("first write");
    let err = io.overwrite(&second, Bytes::from_static(b"2")).await;
    // A failed local write is ClickHouse's local-file error, not S3's.
    assert_eq!(
        err.expect_err("crashed").kind(),
        ErrorKind::CannotWriteToFileDescriptor
    );
    assert!(io.read(&first).await.is_err(), "reads fail after a crash");
    let plain = FileIO::local();
    assert_eq!(plain.read(&first).await.expect("on disk"), "1");
    let err = plain.read(&second).await.expect_err("never written");
    assert_eq!(err.kind(), ErrorKind::FileDoesntExist);
    assert_eq!((injector.mutations(), injector.failures()), (2, 2));
}

/// Options parsed from `IcebergS3(...)` arguments reach the emulator (path-style endpoint URL).
#[tokio::test]
async fn s3_engine_args_reach_the_emulator() {
    let endpoint = common::emulator_var("ICETRIM_S3_ENDPOINT");
    let bucket = common::emulator_var("ICETRIM_S3_BUCKET");
    let url = format!("{endpoint}/{bucket}/{}", common::unique("engine"));
    let args = [url, "testing".to_string(), "testing".to_string()];
    let (location, options) = StorageOptions::from_s3_engine_args(&args).expect("args");
    assert!(
        location.starts_with(&format!("s3://{bucket}/")),
        "{location}"
    );
    conformance(&FileIO::new(options), &location).await;
}

/// Options parsed from `IcebergAzure(connection_string, container, blobpath)` reach azurite.
#[tokio::test]
async fn azure_engine_args_reach_the_emulator() {
    let container = common::emulator_var("ICETRIM_AZURE_CONTAINER");
    let args = [
        common::azure_emulator_connection_string(),
        container.clone(),
        common::unique("engine"),
    ];
    let (location, options) = StorageOptions::from_azure_engine_args(&args).expect("args");
    assert!(
        location.starts_with(&format!("abfss://{container}@")),
        "{location}"
    );
    conformance(&FileIO::new(options), &location).await;
}

/// `IcebergAzure(storage_account_url, container, blobpath, account_name, account_key)`.
#[tokio::test]
async fn azure_account_url_args_reach_the_emulator() {
    let endpoint = common::emulator_var("ICETRIM_AZURE_ENDPOINT");
    let container = common::emulator_var("ICETRIM_AZURE_CONTAINER");
    let args = [
        endpoint,
        container,
        format!("/{}/t", common::unique("engine")),
        icetrim::internals::io::AZURE_EMULATOR_ACCOUNT.to_string(),
        icetrim::internals::io::AZURE_EMULATOR_KEY.to_string(),
    ];
    let (location, options) = StorageOptions::from_azure_engine_args(&args).expect("args");
    let io = FileIO::new(options);
    let uri = format!("{location}/metadata/v1.metadata.json");
    let created = io.write_if_absent(&uri, Bytes::from_static(b"{}")).await;
    assert_eq!(created.expect("write"), WriteOutcome::Created);
    // The az://container/path spelling reaches the same object through the configured account.
    let short = uri.replacen(
        &format!("abfss://{}@devstoreaccount1.dfs.core.windows.net", args[1]),
        &format!("az://{}", args[1]),
        1,
    );
    assert_ne!(short, uri);
    assert_eq!(io.read(&short).await.expect("read az://"), "{}");
    io.delete(&uri).await.expect("delete");
}
