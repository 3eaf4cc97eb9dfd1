//! Vended credentials plugged into object_store: credential providers that object_store asks
//! before every request ([`S3Provider`], [`AzureProvider`]), and a store wrapper
//! ([`VendedStore`]) that renews the credentials once and retries a request once when storage
//! refuses it as expired. See `vended` for the rules.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{StreamExt, stream::BoxStream};
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result, path::Path,
};

use super::location::Family;
use super::vended::{Renewal, VendedSource, answer_of, expired_answer};

fn credential_error(store: &'static str, message: String) -> object_store::Error {
    object_store::Error::Generic {
        store,
        source: message.into(),
    }
}

/// S3 keys from a [`VendedSource`].
#[cfg(feature = "s3")]
#[derive(Debug)]
pub(crate) struct S3Provider(pub Arc<VendedSource>);

#[cfg(feature = "s3")]
#[async_trait]
impl object_store::CredentialProvider for S3Provider {
    type Credential = object_store::aws::AwsCredential;

    async fn get_credential(&self) -> Result<Arc<Self::Credential>> {
        let current = self
            .0
            .fresh()
            .await
            .map_err(|m| credential_error("S3", m))?;
        let s3 = current.s3.as_ref().ok_or_else(|| {
            credential_error(
                "S3",
                format!("{} vended no S3 credentials", self.0.describe()),
            )
        })?;
        Ok(Arc::new(object_store::aws::AwsCredential {
            key_id: s3.access_key_id.clone(),
            secret_key: s3.secret_access_key.clone(),
            token: s3.session_token.clone(),
        }))
    }
}

/// The SAS token of one storage account from a [`VendedSource`].
#[cfg(feature = "azure")]
#[derive(Debug)]
pub(crate) struct AzureProvider {
    pub source: Arc<VendedSource>,
    pub account: String,
}

#[cfg(feature = "azure")]
#[async_trait]
impl object_store::CredentialProvider for AzureProvider {
    type Credential = object_store::azure::AzureCredential;

    async fn get_credential(&self) -> Result<Arc<Self::Credential>> {
        let current = self
            .source
            .fresh()
            .await
            .map_err(|m| credential_error("MicrosoftAzure", m))?;
        let sas = current.sas_for(&self.account).ok_or_else(|| {
            credential_error(
                "MicrosoftAzure",
                format!(
                    "{} vended no SAS token for the storage account {}",
                    self.source.describe(),
                    self.account
                ),
            )
        })?;
        let pairs = super::sas_store::sas_query_pairs(&sas.token).ok_or_else(|| {
            credential_error(
                "MicrosoftAzure",
                format!(
                    "the SAS token {} vended for the storage account {} is malformed (its value \
                     is not shown)",
                    self.source.describe(),
                    self.account
                ),
            )
        })?;
        Ok(Arc::new(object_store::azure::AzureCredential::SASToken(
            pairs,
        )))
    }
}

/// A store whose requests are signed with vended credentials: a request refused as expired is
/// sent once more after one renewal.
#[derive(Debug, Clone)]
pub(crate) struct VendedStore {
    inner: Arc<dyn ObjectStore>,
    source: Arc<VendedSource>,
    family: Family,
    /// Azure: deletes go blob by blob (see [`AzureBlobs`]).
    blobs: Option<Arc<AzureBlobs>>,
}

/// One `DELETE` per blob, signed with a SAS token (vended, or given with the table, see
/// `sas_store`): object_store deletes through the Blob Batch API, which azurite does not serve
/// with a SAS token (500) and Azure SDKs have refused SAS for; a plain delete works with a SAS
/// token everywhere.
#[derive(Debug)]
pub(crate) struct AzureBlobs {
    http: reqwest::Client,
    /// `{blob endpoint}/{container}`.
    container_url: String,
    account: String,
}

impl AzureBlobs {
    pub(crate) fn new(endpoint: &str, container: &str, account: &str) -> Option<AzureBlobs> {
        let http = reqwest::Client::builder()
            .connect_timeout(std::time::Duration::from_secs(10))
            .timeout(std::time::Duration::from_secs(60))
            .build()
            .ok()?;
        Some(AzureBlobs {
            http,
            container_url: format!("{}/{container}", endpoint.trim_end_matches('/')),
            account: account.to_string(),
        })
    }

    /// Delete one blob with the vended SAS token; a blob already gone is `NotFound`.
    async fn delete(&self, source: &VendedSource, path: Path) -> Result<Path> {
        let current = source.fresh().await.map_err(blob_error)?;
        let sas = current.sas_for(&self.account).ok_or_else(|| {
            blob_error(format!(
                "{} vended no SAS token for the storage account {}",
                source.describe(),
                self.account
            ))
        })?;
        self.delete_signed(&sas.token, path).await
    }

    /// Delete one blob with the SAS token `token` (a query string, no leading `?`); a blob
    /// already gone is `NotFound`. The token is never put in a message.
    pub(crate) async fn delete_signed(&self, token: &str, path: Path) -> Result<Path> {
        const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
            .remove(b'-')
            .remove(b'_')
            .remove(b'.')
            .remove(b'~');
        let encoded: Vec<String> = path
            .as_ref()
            .split('/')
            .map(|s| percent_encoding::utf8_percent_encode(s, SEGMENT).to_string())
            .collect();
        let url = format!(
            "{}/{}?{}",
            self.container_url,
            encoded.join("/"),
            token.trim_start_matches('?')
        );
        let answer = self
            .http
            .delete(&url)
            .header("x-ms-version", "2021-12-02")
            .header("Content-Length", "0")
            .send()
            .await
            .map_err(|e| {
                let kind = if e.is_timeout() {
                    "timed out"
                } else {
                    "failed"
                };
                blob_error(format!("DELETE of blob {path} {kind}"))
            })?;
        let status = answer.status().as_u16();
        if (200..300).contains(&status) {
            return Ok(path);
        }
        let body = answer.text().await.unwrap_or_default();
        let text = format!("Server returned non-2xx status code: {status} : {body}");
        if status == 404 {
            return Err(object_store::Error::NotFound {
                path: path.to_string(),
                source: text.into(),
            });
        }
        Err(blob_error(format!("DELETE of blob {path}: {text}")))
    }
}

fn blob_error(why: String) -> object_store::Error {
    object_store::Error::Generic {
        store: "MicrosoftAzure",
        source: why.into(),
    }
}

impl fmt::Display for VendedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Vended({})", self.inner)
    }
}

/// What to do after a failed request.
enum Next {
    /// Send it again (new credentials are in place).
    Retry,
    /// Fail with this error.
    Fail(object_store::Error),
}

impl VendedStore {
    pub(crate) fn new(
        inner: Arc<dyn ObjectStore>,
        source: Arc<VendedSource>,
        family: Family,
        blobs: Option<AzureBlobs>,
    ) -> Self {
        VendedStore {
            inner,
            source,
            family,
            blobs: blobs.map(Arc::new),
        }
    }

    fn store_name(&self) -> &'static str {
        match self.family {
            Family::Azure => "MicrosoftAzure",
            _ => "S3",
        }
    }

    /// The code of an "expired credentials" answer, if `e` is one.
    fn expired(&self, e: &object_store::Error) -> Option<&'static str> {
        let (status, body) = answer_of(e);
        expired_answer(self.family, status, &body, self.source.expired_now())
    }

    /// After the first attempt (signed with generation `seen`) failed with `e`.
    async fn after_first(&self, e: object_store::Error, seen: u64) -> Next {
        let Some(code) = self.expired(&e) else {
            return Next::Fail(e);
        };
        match self.source.renew_after_expired(seen).await {
            Renewal::Renewed => Next::Retry,
            Renewal::Refused(why) => Next::Fail(credential_error(
                self.store_name(),
                format!(
                    "storage refused the vended credentials of {} as expired ({code}), and {why}",
                    self.source.describe()
                ),
            )),
        }
    }

    /// After the retry failed with `e`: an expired answer again ends renewals.
    fn after_retry(&self, e: object_store::Error) -> object_store::Error {
        let Some(code) = self.expired(&e) else {
            return e;
        };
        self.source.give_up();
        credential_error(
            self.store_name(),
            format!(
                "storage refused the vended credentials of {} as expired ({code}), again after \
                 they were fetched anew once; giving up",
                self.source.describe()
            ),
        )
    }

    /// Run `op`; once more after a renewal when storage says the credentials expired.
    async fn again<'a, T>(&'a self, op: impl Fn() -> BoxFuture<'a, Result<T>>) -> Result<T> {
        let seen = self.source.current().1;
        match op().await {
            Ok(v) => Ok(v),
            Err(e) => match self.after_first(e, seen).await {
                Next::Fail(e) => Err(e),
                Next::Retry => op().await.map_err(|e| self.after_retry(e)),
            },
        }
    }

    /// A listing that, refused as expired, renews once and goes on after the last object it
    /// yielded (listings are in key order).
    fn list_again(
        &self,
        prefix: Option<&Path>,
        offset: Option<&Path>,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        let inner = Arc::clone(&self.inner);
        let prefix = prefix.cloned();
        let offset = offset.cloned();
        let seen = self.source.current().1;
        let first = match &offset {
            Some(o) => inner.list_with_offset(prefix.as_ref(), o),
            None => inner.list(prefix.as_ref()),
        };
        struct Walk {
            stream: BoxStream<'static, Result<ObjectMeta>>,
            last: Option<Path>,
            retried: bool,
            done: bool,
        }
        let walk = Walk {
            stream: first,
            last: offset,
            retried: false,
            done: false,
        };
        let this = Arc::new(self.clone());
        futures::stream::unfold(walk, move |mut walk| {
            let this = Arc::clone(&this);
            let prefix = prefix.clone();
            async move {
                if walk.done {
                    return None;
                }
                match walk.stream.next().await {
                    None => None,
                    Some(Ok(meta)) => {
                        walk.last = Some(meta.location.clone());
                        Some((Ok(meta), walk))
                    }
                    Some(Err(e)) if walk.retried => {
                        walk.done = true;
                        Some((Err(this.after_retry(e)), walk))
                    }
                    Some(Err(e)) => match this.after_first(e, seen).await {
                        Next::Fail(e) => {
                            walk.done = true;
                            Some((Err(e), walk))
                        }
                        Next::Retry => {
                            walk.retried = true;
                            walk.stream = match &walk.last {
                                Some(last) => this.inner.list_with_offset(prefix.as_ref(), last),
                                None => this.inner.list(prefix.as_ref()),
                            };
                            match walk.stream.next().await {
                                None => None,
                                Some(Ok(meta)) => {
                                    walk.last = Some(meta.location.clone());
                                    Some((Ok(meta), walk))
                                }
                                Some(Err(e)) => {
                                    walk.done = true;
                                    Some((Err(this.after_retry(e)), walk))
                                }
                            }
                        }
                    },
                }
            }
        })
        .boxed()
    }
}

/// Delete `paths`; keys refused as expired are sent once more after one renewal. One answer
/// per path, in order, when the store answered per key; else what it answered.
async fn delete_again(store: Arc<VendedStore>, paths: Vec<Path>) -> Vec<Result<Path>> {
    let seen = store.source.current().1;
    let send = |paths: Vec<Path>| {
        let store = Arc::clone(&store);
        async move {
            if let Some(blobs) = &store.blobs {
                let source = &store.source;
                return futures::stream::iter(paths)
                    .map(|path| blobs.delete(source, path))
                    .buffered(16)
                    .collect::<Vec<_>>()
                    .await;
            }
            let stream = futures::stream::iter(paths.into_iter().map(Ok)).boxed();
            store.inner.delete_stream(stream).collect::<Vec<_>>().await
        }
    };
    let answers = send(paths.clone()).await;
    let refused = answers
        .iter()
        .find_map(|a| a.as_ref().err().and_then(|e| store.expired(e)));
    if refused.is_none() {
        return answers;
    }
    // Which paths the store confirmed; the rest go again.
    let mut slots: Vec<Option<Result<Path>>> = Vec::new();
    slots.resize_with(paths.len(), || None);
    let per_key = answers.len() == paths.len();
    let mut first_error = None;
    for (i, answer) in answers.into_iter().enumerate() {
        match answer {
            Ok(path) => {
                let at = if per_key {
                    Some(i)
                } else {
                    paths.iter().position(|p| *p == path)
                };
                if let Some(slot) = at.and_then(|at| slots.get_mut(at)) {
                    *slot = Some(Ok(path));
                }
            }
            Err(e) if per_key && store.expired(&e).is_none() => {
                if let Some(slot) = slots.get_mut(i) {
                    *slot = Some(Err(e));
                }
            }
            Err(e) => first_error = first_error.or(Some(e)),
        }
    }
    let again: Vec<usize> = (0..paths.len()).filter(|&i| slots[i].is_none()).collect();
    let Some(first_error) = first_error else {
        return slots.into_iter().flatten().collect();
    };
    match store.after_first(first_error, seen).await {
        Next::Fail(e) => {
            let message = e.to_string();
            for &i in &again {
                slots[i] = Some(Err(credential_error(store.store_name(), message.clone())));
            }
        }
        Next::Retry => {
            let retry_paths: Vec<Path> = again.iter().map(|&i| paths[i].clone()).collect();
            let answers = send(retry_paths.clone()).await;
            let per_key = answers.len() == retry_paths.len();
            let mut failure = None;
            for (j, answer) in answers.into_iter().enumerate() {
                match answer {
                    Ok(path) => {
                        let at = if per_key {
                            again.get(j).copied()
                        } else {
                            again.iter().copied().find(|&i| paths[i] == path)
                        };
                        if let Some(at) = at {
                            slots[at] = Some(Ok(path));
                        }
                    }
                    Err(e) if per_key => {
                        if let Some(&at) = again.get(j) {
                            slots[at] = Some(Err(store.after_retry(e)));
                        }
                    }
                    Err(e) => failure = failure.or(Some(store.after_retry(e).to_string())),
                }
            }
            let why = failure.unwrap_or_else(|| "the store did not answer for this key".into());
            for &i in &again {
                if slots[i].is_none() {
                    slots[i] = Some(Err(credential_error(store.store_name(), why.clone())));
                }
            }
        }
    }
    slots.into_iter().flatten().collect()
}

#[async_trait]
impl ObjectStore for VendedStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.again(|| {
            let (payload, opts) = (payload.clone(), opts.clone());
            Box::pin(self.inner.put_opts(location, payload, opts))
        })
        .await
    }

    /// Parts are signed with fresh credentials (renewed ahead of expiry) but not sent again
    /// after an expired answer: a part's number is taken when it is sent.
    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.again(|| Box::pin(self.inner.put_multipart_opts(location, opts.clone())))
            .await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.again(|| Box::pin(self.inner.get_opts(location, options.clone())))
            .await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        self.again(|| Box::pin(self.inner.get_ranges(location, ranges)))
            .await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        let store = Arc::new(self.clone());
        // Batches as object_store's own (S3 sends 1000 keys per request, Azure 256).
        locations
            .chunks(1000)
            .then(move |chunk| {
                let store = Arc::clone(&store);
                async move {
                    let mut out = Vec::with_capacity(chunk.len());
                    let mut paths = Vec::with_capacity(chunk.len());
                    for item in chunk {
                        match item {
                            Ok(path) => paths.push(path),
                            Err(e) => out.push(Err(e)),
                        }
                    }
                    out.extend(delete_again(store, paths).await);
                    futures::stream::iter(out)
                }
            })
            .flatten()
            .boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.list_again(prefix, None)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        self.list_again(prefix, Some(offset))
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.again(|| Box::pin(self.inner.list_with_delimiter(prefix)))
            .await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.again(|| Box::pin(self.inner.copy_opts(from, to, options.clone())))
            .await
    }
}

#[cfg(test)]
#[path = "vended_store_tests.rs"]
mod tests;
