//! Credentials and endpoints for remote stores, and the ClickHouse engine arguments that carry
//! them: `IcebergS3(url [, NOSIGN | access_key_id, secret_access_key [, session_token]])` and
//! `IcebergAzure(connection_string|storage_account_url, container, blobpath [, account_name,
//! account_key])`. Each engine constructor returns the table location as a URI this module's
//! `Location` parses, plus the options that reach it. A storage account URL may carry a SAS token
//! as its query (`https://acct.blob.core.windows.net/?sv=…&sig=…`, as ClickHouse takes it): the
//! token signs the requests, the URL without it is the endpoint.
//!
//! Secrets never appear in `Debug` output, nor in error messages: a URL with credentials in it
//! (`http://key:secret@host/...`) or an S3 url with a query is refused (see `mask`); a malformed
//! account key is named, never quoted; a URL or connection string quoted in a message is masked
//! by [`mask_target`], the one rule `SHOW CREATE TABLE` and the shell's history use too.

use std::fmt;

use url::Url;

use super::mask::{
    looks_like_connection_string, mask_target, mask_url, refuse_url_credentials, refuse_url_query,
};
use crate::error::{Error, Result};

/// The Azurite / Azure Storage Emulator development account.
pub const AZURE_EMULATOR_ACCOUNT: &str = "devstoreaccount1";
/// The development account's published, well-known key (not a secret).
pub const AZURE_EMULATOR_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
/// Where azurite listens unless told otherwise.
pub const AZURE_EMULATOR_ENDPOINT: &str = "http://127.0.0.1:10000/devstoreaccount1";

/// Options for every store family a `FileIO` may serve. `Default` = credentials from the
/// environment for every family.
#[derive(Clone, Default)]
pub struct StorageOptions {
    pub s3: S3Options,
    pub azure: AzureOptions,
    pub gcs: GcsOptions,
    /// Credentials a catalog vended, renewed while in use (see `vended`): they sign the
    /// requests of the stores they cover (S3 keys: every bucket; a SAS token: its account)
    /// in place of the keys above.
    pub vended: Option<std::sync::Arc<super::vended::VendedSource>>,
}

/// S3 and S3-compatible servers. With no explicit key and no `no_sign`, credentials come from
/// the `AWS_*` environment (and the usual instance/profile providers).
#[derive(Clone, Default)]
pub struct S3Options {
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    pub session_token: Option<String>,
    /// Anonymous requests (ClickHouse's `NOSIGN`).
    pub no_sign: bool,
    pub region: Option<String>,
    /// `http(s)://host[:port]` of an S3-compatible server.
    pub endpoint: Option<String>,
    pub allow_http: bool,
    /// Bucket in the host name (`bucket.endpoint`) instead of the path.
    pub virtual_hosted_style: bool,
}

/// Azure Blob Storage. With no account key, SAS token or emulator, credentials come from the
/// `AZURE_*` environment.
#[derive(Clone, Default)]
pub struct AzureOptions {
    /// The account for URIs that do not name one (`az://container/path`).
    pub account: Option<String>,
    pub access_key: Option<String>,
    /// A SAS token (`sv=...&sig=...`), with or without the leading `?`.
    pub sas_token: Option<String>,
    /// Blob service URL; path-style (`http://127.0.0.1:10000/devstoreaccount1`) for emulators.
    pub endpoint: Option<String>,
    /// The development account on azurite (`endpoint` defaults to [`AZURE_EMULATOR_ENDPOINT`]).
    pub use_emulator: bool,
    pub allow_http: bool,
}

/// Google Cloud Storage. With nothing set, credentials come from the `GOOGLE_*` environment.
#[derive(Clone, Default)]
pub struct GcsOptions {
    /// Path to a service account JSON file.
    pub service_account_path: Option<String>,
    /// The service account JSON itself.
    pub service_account_key: Option<String>,
    /// Anonymous requests (public buckets).
    pub skip_signature: bool,
}

fn mask(secret: &Option<String>) -> &'static str {
    if secret.is_some() {
        "<hidden>"
    } else {
        "<none>"
    }
}

impl fmt::Debug for StorageOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StorageOptions")
            .field("s3", &self.s3)
            .field("azure", &self.azure)
            .field("gcs", &self.gcs)
            .field("vended", &self.vended)
            .finish()
    }
}

impl fmt::Debug for S3Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3Options")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &mask(&self.secret_access_key))
            .field("session_token", &mask(&self.session_token))
            .field("no_sign", &self.no_sign)
            .field("region", &self.region)
            .field("endpoint", &self.endpoint.as_deref().map(mask_url))
            .field("allow_http", &self.allow_http)
            .field("virtual_hosted_style", &self.virtual_hosted_style)
            .finish()
    }
}

impl fmt::Debug for AzureOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AzureOptions")
            .field("account", &self.account)
            .field("access_key", &mask(&self.access_key))
            .field("sas_token", &mask(&self.sas_token))
            .field("endpoint", &self.endpoint.as_deref().map(mask_url))
            .field("use_emulator", &self.use_emulator)
            .field("allow_http", &self.allow_http)
            .finish()
    }
}

impl fmt::Debug for GcsOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GcsOptions")
            .field("service_account_path", &self.service_account_path)
            .field("service_account_key", &mask(&self.service_account_key))
            .field("skip_signature", &self.skip_signature)
            .finish()
    }
}

impl StorageOptions {
    /// `IcebergS3(url [, NOSIGN | access_key_id, secret_access_key [, session_token]])`, arguments
    /// already unquoted. Returns the table location (`s3://bucket/path`) and the options.
    pub fn from_s3_engine_args(args: &[String]) -> Result<(String, StorageOptions)> {
        let Some((url, credentials)) = args.split_first() else {
            return Err(Error::bad_arguments(
                "IcebergS3 requires the table url as its first argument",
            ));
        };
        let (location, mut s3) = parse_s3_url(url)?;
        match credentials {
            [] => {}
            [nosign] if nosign.eq_ignore_ascii_case("NOSIGN") => s3.no_sign = true,
            [key, secret] | [key, secret, _] => {
                s3.access_key_id = Some(key.clone());
                s3.secret_access_key = Some(secret.clone());
                s3.session_token = credentials.get(2).cloned();
            }
            _ => {
                return Err(Error::bad_arguments(format!(
                    "IcebergS3 expects (url [, NOSIGN | access_key_id, secret_access_key [, \
                     session_token]]), got {} arguments",
                    args.len()
                )));
            }
        }
        let options = StorageOptions {
            s3,
            ..Default::default()
        };
        Ok((location, options))
    }

    /// `IcebergAzure(connection_string|storage_account_url, container, blobpath [, account_name,
    /// account_key])`, arguments already unquoted. Returns the table location
    /// (`abfss://container@account.dfs.core.windows.net/blobpath`) and the options.
    pub fn from_azure_engine_args(args: &[String]) -> Result<(String, StorageOptions)> {
        let (target, container, blob_path, account, key) = match args {
            [t, c, b] => (t, c, b, None, None),
            [t, c, b, a, k] => (t, c, b, Some(a), Some(k)),
            _ => {
                return Err(Error::bad_arguments(format!(
                    "IcebergAzure expects (connection_string|storage_account_url, container, \
                     blobpath [, account_name, account_key]), got {} arguments",
                    args.len()
                )));
            }
        };
        let mut azure = if looks_like_connection_string(target) {
            parse_connection_string(target)?
        } else {
            parse_account_url(target)?
        };
        if let Some(account) = account {
            azure.account = Some(account.clone());
        }
        if let Some(key) = key {
            check_account_key(key)?;
            azure.access_key = Some(key.clone());
        }
        let Some(account) = azure.account.clone() else {
            return Err(Error::bad_arguments(format!(
                "IcebergAzure: cannot tell the storage account from '{}'; pass account_name",
                mask_target(target)
            )));
        };
        if container.is_empty() || container.contains('/') {
            return Err(Error::bad_arguments(format!(
                "IcebergAzure: invalid container name '{container}'"
            )));
        }
        let location = format!(
            "abfss://{container}@{account}.dfs.core.windows.net/{}",
            blob_path.trim_start_matches('/')
        );
        let options = StorageOptions {
            azure,
            ..Default::default()
        };
        Ok((location, options))
    }
}

/// `s3://bucket/key` (also `s3a`, `s3n`), virtual-hosted and path-style AWS URLs, and
/// path-style URLs of other servers (`http://127.0.0.1:9000/bucket/key`: endpoint). A URL with
/// credentials or a query (a presigned `X-Amz-*` query signs one object, not a table) is refused.
fn parse_s3_url(url: &str) -> Result<(String, S3Options)> {
    refuse_url_credentials("IcebergS3", url)?;
    refuse_url_query(
        "IcebergS3",
        url,
        "give credentials as engine arguments (access_key_id, secret_access_key)",
    )?;
    let lower = url.to_ascii_lowercase();
    if ["s3://", "s3a://", "s3n://"]
        .iter()
        .any(|scheme| lower.starts_with(scheme))
    {
        return Ok((url.to_string(), S3Options::default()));
    }
    let shown = mask_url(url);
    let parsed = Url::parse(url)
        .map_err(|e| Error::bad_arguments(format!("IcebergS3: cannot parse url '{shown}': {e}")))?;
    let host = parsed.host_str().unwrap_or_default().to_ascii_lowercase();
    if !matches!(parsed.scheme(), "http" | "https") || host.is_empty() {
        return Err(Error::bad_arguments(format!(
            "IcebergS3: url '{shown}' is neither s3:// nor http(s)://host/..."
        )));
    }
    let path = parsed.path().trim_start_matches('/');
    let mut s3 = S3Options::default();
    let (bucket, key) = if let Some(aws) = host.strip_suffix(".amazonaws.com") {
        match aws.split_once(".s3") {
            // bucket.s3.region / bucket.s3-region / bucket.s3
            Some((bucket, region)) if !bucket.is_empty() => {
                s3.region = aws_region(region);
                (bucket.to_string(), path.to_string())
            }
            _ => {
                s3.region = aws_region(aws.strip_prefix("s3").unwrap_or(aws));
                split_bucket(&shown, path)?
            }
        }
    } else {
        let port = parsed.port().map(|p| format!(":{p}")).unwrap_or_default();
        s3.endpoint = Some(format!("{}://{host}{port}", parsed.scheme()));
        s3.allow_http = parsed.scheme() == "http";
        split_bucket(&shown, path)?
    };
    Ok((format!("s3://{bucket}/{key}"), s3))
}

/// `.us-east-2` / `-us-east-2` / `` → region.
fn aws_region(rest: &str) -> Option<String> {
    let region = rest.trim_start_matches(['.', '-']);
    let region = region.strip_prefix("dualstack.").unwrap_or(region);
    (!region.is_empty()).then(|| region.to_string())
}

fn split_bucket(url: &str, path: &str) -> Result<(String, String)> {
    let (bucket, key) = path.split_once('/').unwrap_or((path, ""));
    if bucket.is_empty() {
        return Err(Error::bad_arguments(format!(
            "IcebergS3: url '{url}' names no bucket"
        )));
    }
    Ok((bucket.to_string(), key.to_string()))
}

/// Refuses an account key that is not standard base64 (padded), without quoting it: the
/// decoder's own message names the offending character and its offset.
fn check_account_key(key: &str) -> Result<()> {
    if is_standard_base64(key) {
        return Ok(());
    }
    Err(Error::bad_arguments(
        "IcebergAzure: the account key is not valid base64 (its value is not shown)",
    ))
}

/// Whether `text` is canonical padded base64 (RFC 4648 standard alphabet), as Azure account keys
/// are and as object_store's decoder demands.
pub(crate) fn is_standard_base64(text: &str) -> bool {
    fn value(b: u8) -> Option<u8> {
        match b {
            b'A'..=b'Z' => Some(b - b'A'),
            b'a'..=b'z' => Some(b - b'a' + 26),
            b'0'..=b'9' => Some(b - b'0' + 52),
            b'+' => Some(62),
            b'/' => Some(63),
            _ => None,
        }
    }
    let bytes = text.as_bytes();
    if bytes.is_empty() || !bytes.len().is_multiple_of(4) {
        return false;
    }
    let padding = bytes.iter().rev().take_while(|b| **b == b'=').count();
    if padding > 2 {
        return false;
    }
    let data = &bytes[..bytes.len() - padding];
    let Some(values) = data.iter().map(|b| value(*b)).collect::<Option<Vec<u8>>>() else {
        return false;
    };
    // The bits after the last whole byte must be zero (a canonical encoding).
    let last = values.last().copied().unwrap_or(0);
    match padding {
        1 => last & 0b11 == 0,
        2 => last & 0b1111 == 0,
        _ => true,
    }
}

/// An Azure storage connection string: `DefaultEndpointsProtocol`, `AccountName`, `AccountKey`,
/// `BlobEndpoint`, `EndpointSuffix`, `SharedAccessSignature`, `UseDevelopmentStorage=true`.
pub fn parse_connection_string(text: &str) -> Result<AzureOptions> {
    let mut azure = AzureOptions::default();
    let mut protocol = "https".to_string();
    let mut suffix = "core.windows.net".to_string();
    for (index, pair) in text
        .split(';')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .enumerate()
    {
        let Some((key, value)) = pair.split_once('=') else {
            // Not quoted: it may be a piece of a key that held a `;`.
            return Err(Error::bad_arguments(format!(
                "Azure connection string: part {} is not Key=Value (parts are separated by ';'; \
                 the part is not shown, it may hold a secret)",
                index + 1
            )));
        };
        match key.to_ascii_lowercase().as_str() {
            "defaultendpointsprotocol" => protocol = value.to_ascii_lowercase(),
            "accountname" => azure.account = Some(value.to_string()),
            "accountkey" => {
                check_account_key(value)?;
                azure.access_key = Some(value.to_string());
            }
            "blobendpoint" => {
                refuse_url_credentials("IcebergAzure", value)?;
                azure.endpoint = Some(value.trim_end_matches('/').to_string());
            }
            "endpointsuffix" => suffix = value.to_string(),
            "sharedaccesssignature" => azure.sas_token = Some(value.to_string()),
            "usedevelopmentstorage" if value.eq_ignore_ascii_case("true") => {
                azure.use_emulator = true;
                azure.account = Some(AZURE_EMULATOR_ACCOUNT.into());
                azure.access_key = Some(AZURE_EMULATOR_KEY.into());
                azure.endpoint = Some(AZURE_EMULATOR_ENDPOINT.into());
                azure.allow_http = true;
            }
            // Queue/Table/File endpoints and unknown keys do not concern blob access.
            _ => {}
        }
    }
    if azure.endpoint.is_none()
        && let Some(account) = &azure.account
    {
        azure.endpoint = Some(format!("{protocol}://{account}.blob.{suffix}"));
    }
    if let Some(endpoint) = &azure.endpoint {
        azure.allow_http |= endpoint.starts_with("http://");
        if azure.account.is_none() {
            azure.account = account_of_endpoint(endpoint);
        }
    }
    Ok(azure)
}

/// `https://account.blob.core.windows.net[/]` or a path-style emulator URL
/// (`http://127.0.0.1:10000/devstoreaccount1`), optionally with a SAS token as its query (as
/// ClickHouse splits it: the URL before `?` is the endpoint, the rest the token).
fn parse_account_url(target: &str) -> Result<AzureOptions> {
    refuse_url_credentials("IcebergAzure", target)?;
    let (url, sas) = match target.split_once('?') {
        Some((url, sas)) => (url, Some(sas).filter(|s| !s.is_empty())),
        None => (target, None),
    };
    if url.contains('#') || sas.is_some_and(|s| s.contains('#')) {
        refuse_url_query(
            "IcebergAzure",
            target,
            "give a SAS token as the url's query, without a fragment",
        )?;
    }
    let parsed = Url::parse(url).map_err(|e| {
        Error::bad_arguments(format!(
            "IcebergAzure: cannot parse storage account url '{}': {e}",
            mask_target(target)
        ))
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(Error::bad_arguments(format!(
            "IcebergAzure: storage account url '{}' must be http(s)",
            mask_target(target)
        )));
    }
    let endpoint = url.trim_end_matches('/').to_string();
    Ok(AzureOptions {
        account: account_of_endpoint(&endpoint),
        allow_http: parsed.scheme() == "http",
        endpoint: Some(endpoint),
        sas_token: sas.map(str::to_string),
        ..Default::default()
    })
}

/// The account a blob endpoint serves: the first host label of `*.blob.*` hosts, else the first
/// path segment (path-style emulator URLs).
fn account_of_endpoint(endpoint: &str) -> Option<String> {
    let parsed = Url::parse(endpoint).ok()?;
    let host = parsed.host_str()?;
    if let Some((account, suffix)) = host.split_once('.')
        && (suffix.starts_with("blob.") || suffix.starts_with("dfs."))
    {
        return Some(account.to_string());
    }
    parsed
        .path_segments()?
        .find(|segment| !segment.is_empty())
        .map(str::to_string)
}

#[cfg(test)]
#[path = "options_tests.rs"]
mod tests;
