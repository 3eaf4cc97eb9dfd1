//! Storage failures as ClickHouse names them: a missing file is `FILE_DOESNT_EXIST`, a file that
//! must be new and exists `FILE_ALREADY_EXISTS`; otherwise S3 (and GCS, memory) answer
//! `S3_ERROR`, Azure `AZURE_BLOB_STORAGE_ERROR`, and local disk the code of the step that failed:
//! `CANNOT_OPEN_FILE` (a file that cannot be opened or created, a folder that cannot be walked),
//! `CANNOT_CREATE_DIRECTORY`, `CANNOT_READ_FROM_FILE_DESCRIPTOR`,
//! `CANNOT_WRITE_TO_FILE_DESCRIPTOR` (a write, or moving the written file into place) and
//! `CANNOT_UNLINK`.
//!
//! object_store keeps its local error type private; its variants are told apart by the text
//! each starts with (`Unable to create dir …`), a mapping the unit tests below pin by producing
//! each failure through object_store itself. Messages name the file (a path under the table
//! location) and keep the store's reason with every URL in it masked ([`mask_urls_in`]): a
//! client may quote a request URL, and a SAS token or a presigned query with it.

use super::location::{Family, Location};
use super::mask::mask_urls_in;
use crate::error::{Error, ErrorKind};

/// The error of `op` (`read`, `inspect`, `write`, `delete`, `list`) on `uri`.
pub(crate) fn storage_error(op: &str, uri: &str, e: object_store::Error) -> Error {
    let family = family_of(uri);
    let kind = match &e {
        object_store::Error::NotFound { .. } => ErrorKind::FileDoesntExist,
        object_store::Error::AlreadyExists { .. } => ErrorKind::FileAlreadyExists,
        _ if family == Some(Family::File) => local_kind(op, &e),
        _ => failure_kind(family),
    };
    let why = match (&e, family) {
        (object_store::Error::Generic { source, .. }, Some(Family::File)) => source.to_string(),
        _ => e.to_string(),
    };
    let message = format!(
        "Cannot {op} '{uri}': {}",
        reason(&e, uri, &mask_urls_in(&why))
    );
    if prints_a_url_part_masking_hides(&e) {
        Error::new(kind, message)
    } else {
        Error::with_source(kind, message, e)
    }
}

/// Why `e` (or an error below it) says the endpoint cannot be reached at all: the connection was
/// refused, or the host name did not resolve. `None` for anything else.
pub(crate) fn unreachable_reason(e: &(dyn std::error::Error + 'static)) -> Option<&'static str> {
    std::iter::successors(Some(e), |e| e.source()).find_map(|e| {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return Some("refused the connection");
        }
        let text = e.to_string();
        if text.contains("Connection refused") {
            Some("refused the connection")
        } else if text.starts_with("dns error") || text.contains("failed to lookup address") {
            Some("has a host name that does not resolve")
        } else {
            None
        }
    })
}

/// The store's reason for a failed request, said plainly where it is a known mistake: an
/// endpoint that cannot be reached, or a bucket that does not exist (the S3 error document is not
/// pasted into the message). Anything else is the store's text.
fn reason(e: &object_store::Error, uri: &str, why: &str) -> String {
    if let Some(reason) = unreachable_reason(e) {
        let endpoint = first_url_origin(why).unwrap_or_else(|| "endpoint".to_string());
        return format!(
            "the storage endpoint {endpoint} {reason}; check the endpoint (the table's URL, \
             storage_endpoint, AWS_ENDPOINT_URL) and that the server is running"
        );
    }
    if let Some(answer) = no_credentials(why) {
        return answer;
    }
    if let Some(answer) = error_document(why) {
        return answer.sentence(uri);
    }
    why.to_string()
}

/// The addresses the AWS default credential chain asks last: EC2 instance metadata and the
/// container credentials endpoint. A failed request there means no earlier source had keys.
const CREDENTIAL_SERVICES: [&str; 2] = ["169.254.169.254", "169.254.170.2"];

/// When `why` is the failure of the last source of the default credential chain: what to set.
/// Credentials that source does give are used as before (no error, no message).
fn no_credentials(why: &str) -> Option<String> {
    let service = CREDENTIAL_SERVICES
        .iter()
        .find(|address| why.contains(&format!("//{address}/")))?;
    let answer = why
        .split_once("status code: ")
        .map(|(_, rest)| rest.split(':').next().unwrap_or(rest).trim().to_string())
        .unwrap_or_else(|| "no answer".to_string());
    Some(format!(
        "no S3 credentials: none were given with the table or vended by its catalog, the AWS_* \
         environment has none, and the instance credential service at {service} gave none \
         ({answer}); set storage_endpoint, aws_access_key_id and aws_secret_access_key in the \
         catalog database's SETTINGS (or give the keys to IcebergS3), or export \
         AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
    ))
}

/// `scheme://host[:port]` of the first URL in `text`.
fn first_url_origin(text: &str) -> Option<String> {
    let start = text.find("http://").or_else(|| text.find("https://"))?;
    let url = text[start..].split_whitespace().next()?;
    let parsed = url::Url::parse(url).ok()?;
    Some(parsed.origin().ascii_serialization())
}

/// The `Code` and `Message` of an S3-style XML error document quoted in `text`.
struct ErrorDocument {
    code: String,
    message: String,
    bucket: Option<String>,
}

impl ErrorDocument {
    fn sentence(&self, uri: &str) -> String {
        let bucket = self
            .bucket
            .clone()
            .or_else(|| Location::parse(uri).ok().map(|l| l.store.bucket.clone()));
        match (self.code.as_str(), bucket) {
            (code @ ("NoSuchBucket" | "ContainerNotFound"), Some(bucket)) => {
                let what = if code == "NoSuchBucket" {
                    "bucket"
                } else {
                    "container"
                };
                format!(
                    "the {what} '{bucket}' does not exist at this endpoint; check the {what} \
                     name in the table's URL and the endpoint it is served from"
                )
            }
            _ => format!("the store answered {}: {}", self.code, self.message),
        }
    }
}

fn error_document(text: &str) -> Option<ErrorDocument> {
    let element = |name: &str| {
        let open = format!("<{name}>");
        let start = text.find(&open)? + open.len();
        let end = text[start..].find(&format!("</{name}>"))?;
        Some(text[start..start + end].to_string())
    };
    Some(ErrorDocument {
        code: element("Code")?,
        message: element("Message").unwrap_or_default(),
        bucket: element("BucketName"),
    })
}

/// Whether `e`, or an error below it, prints a URL with a part [`mask_urls_in`] hides (a query,
/// credentials). Such an error is not kept as the [`Error`]'s source: a caller may print the
/// source chain in full, and a presigned query or a SAS token must not show there.
fn prints_a_url_part_masking_hides(e: &(dyn std::error::Error + 'static)) -> bool {
    std::iter::successors(Some(e), |e| e.source()).any(|e| {
        let text = e.to_string();
        mask_urls_in(&text) != text
    })
}

/// The store family of `uri`, when it parses.
pub(crate) fn family_of(uri: &str) -> Option<Family> {
    Location::parse(uri).ok().map(|l| l.store.family)
}

/// The kind of a failed request to a remote store of `family` (local disk: see [`local_kind`]).
pub(crate) fn failure_kind(family: Option<Family>) -> ErrorKind {
    match family {
        Some(Family::Azure) => ErrorKind::AzureBlobStorageError,
        _ => ErrorKind::StorageError,
    }
}

/// The kind of a failed deletion of `uri` that got no answer of its own.
pub fn delete_failure_kind(uri: &str) -> ErrorKind {
    match family_of(uri) {
        Some(Family::File) => ErrorKind::CannotUnlink,
        family => failure_kind(family),
    }
}

/// The kind of a write to `uri` whose outcome could not be settled (a commit's metadata file
/// that another writer's file may have displaced): the store's error, on local disk
/// `CANNOT_WRITE_TO_FILE_DESCRIPTOR`.
pub fn unsettled_write_kind(uri: &str) -> ErrorKind {
    match family_of(uri) {
        Some(Family::File) => ErrorKind::CannotWriteToFileDescriptor,
        family => failure_kind(family),
    }
}

/// The ClickHouse kind of a failed local-disk operation `op` that object_store reported as `e`.
fn local_kind(op: &str, e: &object_store::Error) -> ErrorKind {
    let text = match e {
        object_store::Error::Generic { source, .. } => source.to_string(),
        other => other.to_string(),
    };
    const BY_STEP: [(&str, ErrorKind); 12] = [
        ("Unable to create dir", ErrorKind::CannotCreateDirectory),
        ("Unable to create file", ErrorKind::CannotOpenFile),
        ("Unable to open file", ErrorKind::CannotOpenFile),
        ("Unable to walk dir", ErrorKind::CannotOpenFile),
        ("Unable to access metadata", ErrorKind::CannotOpenFile),
        ("Unable to delete file", ErrorKind::CannotUnlink),
        (
            "Unable to read data",
            ErrorKind::CannotReadFromFileDescriptor,
        ),
        (
            "Error seeking file",
            ErrorKind::CannotReadFromFileDescriptor,
        ),
        (
            "Out of range of file",
            ErrorKind::CannotReadFromFileDescriptor,
        ),
        (
            "Unable to copy data to file",
            ErrorKind::CannotWriteToFileDescriptor,
        ),
        (
            "Unable to rename file",
            ErrorKind::CannotWriteToFileDescriptor,
        ),
        (
            "Unable to sync data",
            ErrorKind::CannotWriteToFileDescriptor,
        ),
    ];
    if let Some((_, kind)) = BY_STEP.iter().find(|(start, _)| text.starts_with(start)) {
        return *kind;
    }
    match op {
        "delete" => ErrorKind::CannotUnlink,
        "write" => ErrorKind::CannotWriteToFileDescriptor,
        _ => ErrorKind::CannotOpenFile,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

    use super::*;

    fn store() -> Arc<dyn ObjectStore> {
        Arc::new(object_store::local::LocalFileSystem::new())
    }

    fn path(p: &std::path::Path) -> object_store::path::Path {
        let text = p.to_str().expect("UTF-8 paths");
        object_store::path::Path::parse(text.trim_start_matches('/')).expect("a plain path")
    }

    /// Each local failure, produced through object_store's own local store (so a change of its
    /// messages fails here), gets ClickHouse's code for the step that failed; the message names
    /// the file. Made with files and links where folders are needed: root ignores permissions.
    #[tokio::test]
    async fn local_failures_get_clickhouses_codes() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        let store = store();
        let uri = |p: &std::path::Path| p.to_str().expect("UTF-8").to_string();
        let put = |p: std::path::PathBuf| {
            let store = Arc::clone(&store);
            async move {
                let e = store
                    .put(&path(&p), PutPayload::from_static(b"{}"))
                    .await
                    .expect_err("the write fails");
                storage_error("write", &uri(&p), e)
            }
        };
        // A file where a folder is needed: the file below it cannot be created.
        std::fs::write(root.join("plain"), b"x").expect("write");
        let target = root.join("plain/child.json");
        let err = put(target.clone()).await;
        assert_eq!(err.kind(), ErrorKind::CannotOpenFile, "{err}");
        assert!(
            err.message().starts_with(&format!(
                "Cannot write '{}': Unable to open file",
                uri(&target)
            )),
            "{err}"
        );
        // A folder that cannot be created: a dangling link stands where it must go.
        std::os::unix::fs::symlink(root.join("nowhere"), root.join("dangling")).expect("link");
        let err = put(root.join("dangling/sub/file.json")).await;
        assert_eq!(err.kind(), ErrorKind::CannotCreateDirectory, "{err}");
        assert!(err.message().contains("Unable to create dir"), "{err}");
        // A create-if-absent write where a folder of that name stands: taken.
        std::fs::create_dir(root.join("taken")).expect("mkdir");
        let opts = PutOptions {
            mode: PutMode::Create,
            ..Default::default()
        };
        let e = store
            .put_opts(
                &path(&root.join("taken")),
                PutPayload::from_static(b"x"),
                opts,
            )
            .await
            .expect_err("a folder stands there");
        let err = storage_error("write", &uri(&root.join("taken")), e);
        assert_eq!(err.kind(), ErrorKind::FileAlreadyExists, "{err}");
        // Deleting a folder as a file.
        let e = store
            .delete(&path(&root.join("taken")))
            .await
            .expect_err("a folder is no file");
        let err = storage_error("delete", &uri(&root.join("taken")), e);
        assert_eq!(err.kind(), ErrorKind::CannotUnlink, "{err}");
        // Reading below a file.
        let e = store
            .get(&path(&root.join("plain/x")))
            .await
            .expect_err("below a file");
        let err = storage_error("read", &uri(&root.join("plain/x")), e);
        assert_eq!(err.kind(), ErrorKind::CannotOpenFile, "{err}");
    }

    #[test]
    fn remote_failures_by_family() {
        let e = || object_store::Error::Generic {
            store: "MicrosoftAzure",
            source: "Error performing GET http://h/acct/c/x?sv=1&sig=S3CR3T in 1ms".into(),
        };
        let err = storage_error("read", "abfss://c@acct.dfs.core.windows.net/t/x", e());
        assert_eq!(err.kind(), ErrorKind::AzureBlobStorageError);
        assert!(!err.message().contains("S3CR3T"), "{err}");
        assert!(err.message().contains("?[HIDDEN]"), "{err}");
        let err = storage_error("read", "s3://b/t/x", e());
        assert_eq!(err.kind(), ErrorKind::StorageError);
        let missing = object_store::Error::NotFound {
            path: "x".into(),
            source: "gone".into(),
        };
        let err = storage_error("read", "abfss://c@acct.dfs.core.windows.net/x", missing);
        assert_eq!(err.kind(), ErrorKind::FileDoesntExist);
        assert_eq!(delete_failure_kind("/t/x"), ErrorKind::CannotUnlink);
        assert_eq!(
            delete_failure_kind("az://c/x"),
            ErrorKind::AzureBlobStorageError
        );
        assert_eq!(delete_failure_kind("s3://b/x"), ErrorKind::StorageError);
    }

    /// The store's error is the source a caller can inspect, unless its text (or its cause's)
    /// carries a URL query or credentials: then no source, and no secret in any printing.
    #[test]
    fn the_store_error_is_the_source_unless_it_prints_a_secret() {
        use std::error::Error as _;
        let missing = object_store::Error::NotFound {
            path: "t/x".into(),
            source: "gone".into(),
        };
        let err = storage_error("read", "s3://b/t/x", missing);
        let source = err.cause().expect("the store's error is kept");
        assert!(err.source().is_some());
        let store_error = source.downcast_ref::<object_store::Error>();
        assert!(
            matches!(store_error, Some(object_store::Error::NotFound { .. })),
            "{source:?}"
        );
        assert_eq!(
            source.source().map(|e| e.to_string()).as_deref(),
            Some("gone")
        );

        let presigned = object_store::Error::Generic {
            store: "S3",
            source: "Error performing GET http://h/b/t/x?X-Amz-Signature=S3CR3T in 1ms".into(),
        };
        let err = storage_error("read", "s3://b/t/x", presigned);
        assert!(err.source().is_none(), "{err:?}");
        for text in [err.to_string(), format!("{err:?}")] {
            assert!(!text.contains("S3CR3T"), "{text}");
        }
        let below = object_store::Error::Generic {
            store: "S3",
            source: Box::new(std::io::Error::other(
                "https://u:pa55@h/b?sig=S3CR3T unreachable",
            )),
        };
        assert!(
            storage_error("read", "s3://b/t/x", below)
                .source()
                .is_none()
        );
    }

    #[test]
    fn an_error_document_becomes_a_sentence() {
        let why = "Generic S3 error: Error performing list request: Error performing GET \
                   http://127.0.0.1:9/nosuch?[HIDDEN] in 5ms - Server returned non-2xx status \
                   code: 404 Not Found: <?xml version=\"1.0\" encoding=\"utf-8\"?>\n<Error><Code>\
                   NoSuchBucket</Code><Message>The specified bucket does not exist</Message>\
                   <BucketName>nosuch</BucketName><RequestId>x</RequestId></Error>";
        let document = error_document(why).unwrap();
        assert_eq!(
            document.sentence("s3://nosuch/t/metadata"),
            "the bucket 'nosuch' does not exist at this endpoint; check the bucket name in the \
             table's URL and the endpoint it is served from"
        );
        let other = error_document("<Error><Code>AccessDenied</Code><Message>no</Message></Error>");
        assert_eq!(
            other.unwrap().sentence("s3://b/t"),
            "the store answered AccessDenied: no"
        );
        assert!(error_document("plain failure").is_none());
        let imds = "Generic S3 error: Error performing PUT http://169.254.169.254/latest/api/token \
                    in 3ms - Server returned non-2xx status code: 403 Forbidden: resolve_deny";
        let told = no_credentials(imds).unwrap();
        assert!(
            told.starts_with(
                "no S3 credentials: none were given with the table or vended by its catalog"
            ),
            "{told}"
        );
        assert!(
            told.contains("at 169.254.169.254 gave none (403 Forbidden); set storage_endpoint")
        );
        assert!(no_credentials("Error performing GET http://127.0.0.1:9/b").is_none());
        assert_eq!(
            first_url_origin("GET http://127.0.0.1:1/b?[HIDDEN] in 1ms").as_deref(),
            Some("http://127.0.0.1:1")
        );
    }
}
