//! Building one object_store client for a [`StoreKey`] from [`StorageOptions`].
//!
//! S3: explicit keys or `NOSIGN` win; otherwise the `AWS_*` environment. Conditional create uses
//! `If-None-Match: *` (object_store's default), which AWS, moto and MinIO honour.
//! Azure: an explicit endpoint is used path-style (emulators) or as given; the emulator defaults
//! to azurite's development account; an account key wins over a SAS token, which
//! `sas_store::SasStore` also uses for deletes. GCS: service account options or the environment.

use std::sync::Arc;

use object_store::ObjectStore;

use super::location::{Family, StoreKey};
use super::options::{AzureOptions, GcsOptions, S3Options, StorageOptions};
use super::vended::VendedSource;
use crate::error::{Error, Result};

/// A new client for the store `key` names.
pub(crate) fn build_store(
    key: &StoreKey,
    options: &StorageOptions,
) -> Result<Arc<dyn ObjectStore>> {
    match key.family {
        Family::File => Ok(Arc::new(object_store::local::LocalFileSystem::new())),
        Family::Memory => Ok(Arc::new(object_store::memory::InMemory::new())),
        Family::S3 => build_s3(&key.bucket, &options.s3, vended_for(key, options)),
        Family::Azure => build_azure(
            &key.bucket,
            key.account.as_deref(),
            &options.azure,
            vended_for(key, options),
        ),
        Family::Gcs => build_gcs(&key.bucket, &options.gcs),
    }
}

/// The vended credentials that sign requests to the store `key` names, if any cover it.
pub(crate) fn vended_for(key: &StoreKey, options: &StorageOptions) -> Option<Arc<VendedSource>> {
    let source = options.vended.as_ref()?;
    let (current, _) = source.current();
    let covered = match key.family {
        Family::S3 => current.s3.is_some(),
        Family::Azure => key
            .account
            .as_deref()
            .or(options.azure.account.as_deref())
            .is_some_and(|account| current.sas_for(account).is_some()),
        Family::File | Family::Memory | Family::Gcs => false,
    };
    covered.then(|| Arc::clone(source))
}

/// Azure signed with a SAS token given with the table (not vended): the blob deleter and the
/// token, for `sas_store::SasStore`.
pub(crate) fn static_sas(
    key: &StoreKey,
    options: &StorageOptions,
) -> Option<(super::vended_store::AzureBlobs, String)> {
    if key.family != Family::Azure || vended_for(key, options).is_some() {
        return None;
    }
    let account = key.account.as_deref().or(options.azure.account.as_deref());
    let token = sas_of(account, &options.azure)?.to_string();
    Some((azure_blobs(key, options)?, token))
}

/// The SAS token `build_azure` signs requests to `account` with: the options' token when they
/// describe that account and hold no account key (a key wins) and no emulator.
fn sas_of<'a>(account: Option<&str>, options: &'a AzureOptions) -> Option<&'a str> {
    let applies = match (account, &options.account) {
        (Some(named), Some(configured)) => named.eq_ignore_ascii_case(configured),
        _ => true,
    };
    let keyed = options.access_key.is_some() || options.use_emulator;
    (applies && !keyed)
        .then_some(options.sas_token.as_deref())
        .flatten()
        .filter(|sas| !sas.trim_start_matches('?').is_empty())
}

/// Azure with vended SAS tokens: the container's blob URL for blob-by-blob deletes.
pub(crate) fn azure_blobs(
    key: &StoreKey,
    options: &StorageOptions,
) -> Option<super::vended_store::AzureBlobs> {
    if key.family != Family::Azure {
        return None;
    }
    let account = key
        .account
        .as_deref()
        .or(options.azure.account.as_deref())?;
    let own = options
        .azure
        .account
        .as_deref()
        .is_none_or(|a| a.eq_ignore_ascii_case(account));
    let endpoint = match &options.azure.endpoint {
        Some(endpoint) if own => endpoint.clone(),
        _ => format!("https://{account}.blob.core.windows.net"),
    };
    super::vended_store::AzureBlobs::new(&endpoint, &key.bucket, account)
}

#[cfg(any(feature = "s3", feature = "azure", feature = "gcs"))]
fn build_failed(family: Family, key: impl std::fmt::Display, e: object_store::Error) -> Error {
    let kind = match family {
        Family::Azure => crate::error::ErrorKind::AzureBlobStorageError,
        _ => crate::error::ErrorKind::StorageError,
    };
    let why = super::mask::mask_urls_in(&e.to_string());
    Error::new(kind, format!("Cannot configure storage for {key}: {why}"))
}

#[cfg(feature = "s3")]
fn build_s3(
    bucket: &str,
    options: &S3Options,
    vended: Option<Arc<VendedSource>>,
) -> Result<Arc<dyn ObjectStore>> {
    use object_store::aws::AmazonS3Builder;
    let explicit = options.access_key_id.is_some() || options.no_sign || vended.is_some();
    let mut builder = if explicit {
        AmazonS3Builder::new()
    } else {
        AmazonS3Builder::from_env()
    };
    builder = builder.with_bucket_name(bucket);
    if let (Some(key), Some(secret)) = (&options.access_key_id, &options.secret_access_key) {
        builder = builder
            .with_access_key_id(key)
            .with_secret_access_key(secret);
        if let Some(token) = &options.session_token {
            builder = builder.with_token(token);
        }
    }
    if let Some(source) = vended {
        builder = builder.with_credentials(Arc::new(super::vended_store::S3Provider(source)));
    } else if options.no_sign {
        builder = builder.with_skip_signature(true);
    }
    // object_store's default region is us-east-1 (what moto and MinIO expect).
    if let Some(region) = &options.region {
        builder = builder.with_region(region);
    }
    if let Some(endpoint) = &options.endpoint {
        builder = builder
            .with_endpoint(endpoint)
            .with_virtual_hosted_style_request(options.virtual_hosted_style);
    } else if !explicit
        && let Some(endpoint) = environment_endpoint(|name| std::env::var(name).ok())
    {
        // The AWS SDKs' variables: the S3-specific one wins. A plain-HTTP endpoint is allowed
        // HTTP (object_store refuses it otherwise, with "builder error").
        if endpoint.starts_with("http://") {
            builder = builder.with_allow_http(true);
        }
        builder = builder.with_endpoint(endpoint);
    }
    if options.allow_http {
        builder = builder.with_allow_http(true);
    }
    let store = builder
        .with_http_connector(super::http::FailFastConnector)
        .build()
        .map_err(|e| build_failed(Family::S3, format!("s3://{bucket}"), e))?;
    Ok(Arc::new(store))
}

/// The S3 endpoint the environment names: `AWS_ENDPOINT_URL_S3`, else `AWS_ENDPOINT_URL`, else
/// object_store's own `AWS_ENDPOINT` (empty values ignored).
#[cfg_attr(not(feature = "s3"), allow(dead_code))]
fn environment_endpoint(var: impl Fn(&str) -> Option<String>) -> Option<String> {
    ["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT"]
        .iter()
        .find_map(|name| var(name).filter(|v| !v.trim().is_empty()))
}

#[cfg(not(feature = "s3"))]
fn build_s3(
    bucket: &str,
    _: &S3Options,
    _: Option<Arc<VendedSource>>,
) -> Result<Arc<dyn ObjectStore>> {
    Err(Error::not_implemented(format!(
        "s3://{bucket}: icetrim was built without the s3 feature"
    )))
}

#[cfg(feature = "azure")]
fn build_azure(
    container: &str,
    account: Option<&str>,
    options: &AzureOptions,
    vended: Option<Arc<VendedSource>>,
) -> Result<Arc<dyn ObjectStore>> {
    use super::options::{AZURE_EMULATOR_ACCOUNT, AZURE_EMULATOR_ENDPOINT, AZURE_EMULATOR_KEY};
    use object_store::azure::MicrosoftAzureBuilder;
    let describe = || format!("azure://{container}@{}", account.unwrap_or("<default>"));
    // Options describe one account; a URI naming another account gets only the environment.
    let options_apply = match (account, &options.account) {
        (Some(named), Some(configured)) => named.eq_ignore_ascii_case(configured),
        _ => true,
    };
    let empty = AzureOptions::default();
    let options = if options_apply { options } else { &empty };
    let Some(account) = account
        .map(str::to_string)
        .or_else(|| options.account.clone())
        .or_else(|| {
            options
                .use_emulator
                .then(|| AZURE_EMULATOR_ACCOUNT.to_string())
        })
        .or_else(|| std::env::var("AZURE_STORAGE_ACCOUNT_NAME").ok())
    else {
        return Err(Error::bad_arguments(format!(
            "Cannot serve {}: no Azure storage account configured",
            describe()
        )));
    };
    let mut builder = MicrosoftAzureBuilder::from_env()
        .with_account(&account)
        .with_container_name(container);
    let mut key = options.access_key.clone();
    let mut endpoint = options.endpoint.clone();
    if options.use_emulator {
        key = key.or_else(|| Some(AZURE_EMULATOR_KEY.to_string()));
        endpoint = endpoint.or_else(|| Some(AZURE_EMULATOR_ENDPOINT.to_string()));
    }
    if let Some(source) = vended {
        builder = builder.with_credentials(Arc::new(super::vended_store::AzureProvider {
            source,
            account: account.clone(),
        }));
    } else if let Some(key) = key {
        builder = builder.with_access_key(key);
    } else if let Some(sas) = sas_of(Some(&account), options) {
        builder = builder.with_config(
            object_store::azure::AzureConfigKey::SasKey,
            sas.trim_start_matches('?'),
        );
    }
    if let Some(endpoint) = endpoint {
        builder = builder
            .with_allow_http(options.allow_http || endpoint.starts_with("http://"))
            .with_endpoint(endpoint);
    } else if options.allow_http {
        builder = builder.with_allow_http(true);
    }
    let store = builder
        .with_http_connector(super::http::FailFastConnector)
        .build()
        .map_err(|e| {
        // object_store's message for a malformed key names the offending byte and its offset:
        // never repeat it.
        if e.to_string().contains("Invalid Access Key") {
            Error::bad_arguments(format!(
                "Cannot configure storage for {}: the account key is not valid base64 (its value \
                 is not shown)",
                describe()
            ))
        } else {
            build_failed(Family::Azure, describe(), e)
        }
    })?;
    Ok(Arc::new(store))
}

#[cfg(not(feature = "azure"))]
fn build_azure(
    container: &str,
    _: Option<&str>,
    _: &AzureOptions,
    _: Option<Arc<VendedSource>>,
) -> Result<Arc<dyn ObjectStore>> {
    Err(Error::not_implemented(format!(
        "azure container {container}: icetrim was built without the azure feature"
    )))
}

#[cfg(feature = "gcs")]
fn build_gcs(bucket: &str, options: &GcsOptions) -> Result<Arc<dyn ObjectStore>> {
    use object_store::gcp::GoogleCloudStorageBuilder;
    let mut builder = GoogleCloudStorageBuilder::from_env().with_bucket_name(bucket);
    if let Some(path) = &options.service_account_path {
        builder = builder.with_service_account_path(path);
    }
    if let Some(key) = &options.service_account_key {
        builder = builder.with_service_account_key(key);
    }
    if options.skip_signature {
        builder = builder.with_skip_signature(true);
    }
    let store = builder
        .with_http_connector(super::http::FailFastConnector)
        .build()
        .map_err(|e| build_failed(Family::Gcs, format!("gs://{bucket}"), e))?;
    Ok(Arc::new(store))
}

#[cfg(not(feature = "gcs"))]
fn build_gcs(bucket: &str, _: &GcsOptions) -> Result<Arc<dyn ObjectStore>> {
    Err(Error::not_implemented(format!(
        "gs://{bucket}: icetrim was built without the gcs feature"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(family: Family, bucket: &str, account: Option<&str>) -> StoreKey {
        StoreKey {
            family,
            bucket: bucket.into(),
            account: account.map(str::to_string),
        }
    }

    #[test]
    fn the_s3_specific_endpoint_variable_wins() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(environment_endpoint(env(&[])), None);
        assert_eq!(
            environment_endpoint(env(&[
                ("AWS_ENDPOINT_URL", "http://a:1"),
                ("AWS_ENDPOINT_URL_S3", "http://s3:2")
            ]))
            .as_deref(),
            Some("http://s3:2")
        );
        assert_eq!(
            environment_endpoint(env(&[
                ("AWS_ENDPOINT_URL_S3", " "),
                ("AWS_ENDPOINT_URL", "http://a:1")
            ]))
            .as_deref(),
            Some("http://a:1")
        );
    }

    #[test]
    fn builds_local_and_memory() {
        let options = StorageOptions::default();
        assert!(build_store(&key(Family::File, "", None), &options).is_ok());
        assert!(build_store(&key(Family::Memory, "", None), &options).is_ok());
    }

    #[cfg(feature = "s3")]
    #[test]
    fn builds_s3_with_explicit_endpoint() {
        let options = StorageOptions {
            s3: S3Options {
                access_key_id: Some("k".into()),
                secret_access_key: Some("s".into()),
                endpoint: Some("http://127.0.0.1:9".into()),
                allow_http: true,
                ..Default::default()
            },
            ..Default::default()
        };
        let store = build_store(&key(Family::S3, "b", None), &options);
        assert!(store.is_ok());
    }

    #[cfg(feature = "azure")]
    #[test]
    fn builds_azure_emulator() {
        let options = StorageOptions {
            azure: AzureOptions {
                use_emulator: true,
                ..Default::default()
            },
            ..Default::default()
        };
        let store = build_store(&key(Family::Azure, "c", None), &options);
        assert!(store.is_ok());
    }

    /// A malformed account key (set in options or the environment) is named, never quoted:
    /// object_store's message gives the offending byte and its offset.
    #[cfg(feature = "azure")]
    #[test]
    fn azure_key_error_does_not_quote_the_key() {
        let options = StorageOptions {
            azure: AzureOptions {
                account: Some("acct".into()),
                access_key: Some("ab-dEF==".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let Err(e) = build_store(&key(Family::Azure, "c", Some("acct")), &options) else {
            panic!("a malformed key must not build");
        };
        let message = e.message();
        assert!(message.contains("not valid base64"), "{message}");
        for leak in ["45", "symbol", "offset", "ab-d"] {
            assert!(!message.contains(leak), "{message}");
        }
    }
}
