//! Parsing a file URI into the store that holds it and the object path inside that store.
//!
//! Accepted forms: absolute local paths (`/x`), `file:///x`, `file:/x`, `file://localhost/x`;
//! `s3://bucket/key` (also `s3a`, `s3n`); `gs://bucket/key`;
//! `abfss://container@account.dfs.core.windows.net/path` (also `abfs`, `wasb`, `wasbs`, with
//! `.blob.` hosts), `abfs://container/path` and `az://container/path` (account from options);
//! `memory://path` (one shared in-memory store). Duplicate slashes in the path are folded; the
//! object path is kept raw (never percent-decoded): an object named `a%20b` is that object.

use std::fmt;

use object_store::path::Path as ObjectPath;

use crate::error::{Error, Result};

/// A family of stores that share credentials and URI syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// Local disk.
    File,
    /// The in-memory store of one `FileIO`.
    Memory,
    /// Amazon S3 and S3-compatible servers.
    S3,
    /// Azure Blob Storage / ADLS Gen2.
    Azure,
    /// Google Cloud Storage.
    Gcs,
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Family::File => "file",
            Family::Memory => "memory",
            Family::S3 => "s3",
            Family::Azure => "azure",
            Family::Gcs => "gs",
        })
    }
}

/// Which store serves a URI: one store per family and bucket (S3, GCS) or account and container
/// (Azure). Local disk and memory have a single store each (empty `bucket`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StoreKey {
    pub family: Family,
    /// Bucket (S3, GCS), container (Azure), or empty.
    pub bucket: String,
    /// Azure storage account when the URI names it; `None` means "the configured account".
    pub account: Option<String>,
}

impl fmt::Display for StoreKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.family, &self.account) {
            (Family::File, _) => f.write_str("local disk"),
            (Family::Memory, _) => f.write_str("memory://"),
            (Family::Azure, Some(account)) => write!(f, "azure://{}@{account}", self.bucket),
            (family, _) => write!(f, "{family}://{}", self.bucket),
        }
    }
}

/// A parsed URI: the store that holds it, the text before the object path (`base`, kept as
/// written so listings answer in the caller's spelling), and the object path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub store: StoreKey,
    /// `scheme://authority/` (or `/` for bare local paths), as written.
    pub base: String,
    /// The object path: no leading or trailing slash, duplicate slashes folded, not decoded.
    pub path: String,
}

impl Location {
    /// Parse `uri`; errors (`BAD_ARGUMENTS`) name the URI.
    pub fn parse(uri: &str) -> Result<Location> {
        if uri.starts_with('/') {
            return Ok(local("/", uri));
        }
        let Some((scheme, rest)) = uri.split_once(':') else {
            return Err(Error::bad_arguments(format!(
                "Path '{uri}' is neither an absolute path nor a URI with a scheme"
            )));
        };
        match scheme.to_ascii_lowercase().as_str() {
            "file" => parse_file(uri, scheme, rest),
            "memory" => Ok(parse_memory(scheme, rest)),
            "s3" | "s3a" | "s3n" => parse_bucket(uri, scheme, rest, Family::S3),
            "gs" | "gcs" => parse_bucket(uri, scheme, rest, Family::Gcs),
            "abfs" | "abfss" | "wasb" | "wasbs" | "az" | "azure" => parse_azure(uri, scheme, rest),
            _ => Err(Error::bad_arguments(format!(
                "Unsupported storage scheme '{scheme}' in '{uri}'"
            ))),
        }
    }

    /// The full URI in the caller's spelling (folded slashes).
    pub fn uri(&self) -> String {
        format!("{}{}", self.base, self.path)
    }

    /// The URI of `object` (a path in this location's store) in this location's spelling.
    pub fn uri_of(&self, object: &ObjectPath) -> String {
        format!("{}{object}", self.base)
    }

    /// The object_store path.
    pub fn object_path(&self) -> Result<ObjectPath> {
        ObjectPath::parse(&self.path).map_err(|e| {
            Error::bad_arguments(format!("Invalid object path in '{}': {e}", self.uri()))
        })
    }
}

/// Fold runs of `/` into one and drop leading and trailing slashes.
pub(crate) fn fold_slashes(path: &str) -> String {
    path.split('/')
        .filter(|segment| !segment.is_empty())
        .collect::<Vec<_>>()
        .join("/")
}

fn local(base: &str, path: &str) -> Location {
    Location {
        store: StoreKey {
            family: Family::File,
            bucket: String::new(),
            account: None,
        },
        base: base.to_string(),
        path: fold_slashes(path),
    }
}

fn parse_file(uri: &str, scheme: &str, rest: &str) -> Result<Location> {
    if let Some(after) = rest.strip_prefix("//") {
        let (host, path) = after.split_at(after.find('/').unwrap_or(after.len()));
        if !host.is_empty() && !host.eq_ignore_ascii_case("localhost") {
            return Err(Error::bad_arguments(format!(
                "Cannot serve '{uri}': file URIs on host '{host}' are not local"
            )));
        }
        return Ok(local(&format!("{scheme}://{host}/"), path));
    }
    if rest.starts_with('/') {
        return Ok(local(&format!("{scheme}:/"), rest));
    }
    Err(Error::bad_arguments(format!(
        "File URI '{uri}' must name an absolute path"
    )))
}

fn parse_memory(scheme: &str, rest: &str) -> Location {
    let slashes = rest.len() - rest.trim_start_matches('/').len();
    let base = format!("{scheme}:{}", &rest[..slashes]);
    Location {
        store: StoreKey {
            family: Family::Memory,
            bucket: String::new(),
            account: None,
        },
        base,
        path: fold_slashes(rest),
    }
}

/// Split `//authority/path` into authority and path; errors when the authority is missing.
fn split_authority<'a>(uri: &str, rest: &'a str) -> Result<(&'a str, &'a str)> {
    let after = rest
        .strip_prefix("//")
        .ok_or_else(|| Error::bad_arguments(format!("URI '{uri}' lacks '//' after its scheme")))?;
    let (authority, path) = after.split_at(after.find('/').unwrap_or(after.len()));
    if authority.is_empty() {
        return Err(Error::bad_arguments(format!(
            "URI '{uri}' names no bucket or container"
        )));
    }
    Ok((authority, path))
}

fn parse_bucket(uri: &str, scheme: &str, rest: &str, family: Family) -> Result<Location> {
    let (bucket, path) = split_authority(uri, rest)?;
    Ok(Location {
        store: StoreKey {
            family,
            bucket: bucket.to_string(),
            account: None,
        },
        base: format!("{scheme}://{bucket}/"),
        path: fold_slashes(path),
    })
}

fn parse_azure(uri: &str, scheme: &str, rest: &str) -> Result<Location> {
    let (authority, path) = split_authority(uri, rest)?;
    let (container, account) = match authority.split_once('@') {
        Some((container, host)) => (container, Some(azure_account_of_host(uri, host)?)),
        None => (authority, None),
    };
    if container.is_empty() {
        return Err(Error::bad_arguments(format!(
            "Azure URI '{uri}' names no container"
        )));
    }
    Ok(Location {
        store: StoreKey {
            family: Family::Azure,
            bucket: container.to_string(),
            account,
        },
        base: format!("{scheme}://{authority}/"),
        path: fold_slashes(path),
    })
}

/// `account.dfs.core.windows.net` / `account.blob.core.windows.net` (any cloud suffix) → account.
pub(crate) fn azure_account_of_host(uri: &str, host: &str) -> Result<String> {
    let host = host.split(':').next().unwrap_or(host);
    match host.split_once('.') {
        Some((account, suffix))
            if !account.is_empty()
                && (suffix.starts_with("dfs.") || suffix.starts_with("blob.")) =>
        {
            Ok(account.to_ascii_lowercase())
        }
        None if !host.is_empty() => Ok(host.to_ascii_lowercase()),
        _ => Err(Error::bad_arguments(format!(
            "Azure URI '{uri}': cannot tell the storage account from host '{host}'"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(uri: &str) -> Location {
        match Location::parse(uri) {
            Ok(location) => location,
            Err(e) => panic!("{uri}: {e}"),
        }
    }

    #[test]
    fn local_forms() {
        for (uri, base) in [
            ("/tmp/t/a.json", "/"),
            ("file:///tmp/t/a.json", "file:///"),
            ("file:/tmp/t/a.json", "file:/"),
            ("file://localhost/tmp/t/a.json", "file://localhost/"),
            ("//tmp//t///a.json", "/"),
        ] {
            let location = parsed(uri);
            assert_eq!(location.store.family, Family::File, "{uri}");
            assert_eq!(location.path, "tmp/t/a.json", "{uri}");
            assert_eq!(location.base, base, "{uri}");
        }
    }

    #[test]
    fn s3_aliases_share_a_store() {
        let a = parsed("s3://bucket/t/x");
        let b = parsed("s3a://bucket//t/x");
        let c = parsed("s3n://bucket/t/x/");
        assert_eq!(a.store, b.store);
        assert_eq!(a.store, c.store);
        assert_eq!((a.path.as_str(), b.path.as_str()), ("t/x", "t/x"));
        assert_eq!(c.path, "t/x");
        assert_eq!(b.uri(), "s3a://bucket/t/x");
    }

    #[test]
    fn azure_forms() {
        let a = parsed("abfss://cont@acct.dfs.core.windows.net/t/x");
        let b = parsed("wasbs://cont@acct.blob.core.windows.net/t/x");
        assert_eq!(a.store, b.store);
        assert_eq!(a.store.account.as_deref(), Some("acct"));
        assert_eq!(a.store.bucket, "cont");
        let c = parsed("az://cont/t/x");
        assert_eq!(c.store.account, None);
        assert_eq!(c.path, "t/x");
    }

    #[test]
    fn memory_keeps_spelling() {
        let a = parsed("memory:///w/t");
        assert_eq!(a.base, "memory:///");
        assert_eq!(a.path, "w/t");
        let b = parsed("memory://w/t");
        assert_eq!(b.base, "memory://");
        assert_eq!(a.store, b.store);
    }

    #[test]
    fn rejects_what_it_cannot_serve() {
        for uri in [
            "relative/path",
            "hdfs://nn/x",
            "s3:///key",
            "s3:bucket",
            "file://otherhost/x",
            "abfss://@acct.dfs.core.windows.net/x",
        ] {
            let err = Location::parse(uri).expect_err(uri);
            assert!(err.message().contains(uri), "{err}");
        }
    }

    #[test]
    fn dot_segments_are_not_object_paths() {
        let location = parsed("s3://b/t/../x");
        assert!(location.object_path().is_err());
    }
}
