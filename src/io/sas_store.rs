//! An Azure store signed with a SAS token given with the table (the query of an `IcebergAzure`
//! storage account URL, or a connection string's `SharedAccessSignature`): object_store signs
//! every request with it, except deletes, which go blob by blob ([`AzureBlobs`]) because
//! object_store's bulk delete (Blob Batch) is refused under a SAS token. Everything else is
//! passed through unchanged.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::{StreamExt, stream::BoxStream};
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result, path::Path,
};

use super::vended_store::AzureBlobs;

/// Blob deletes in flight at once, per bulk delete.
const DELETES_IN_FLIGHT: usize = 16;

/// The query pairs of a SAS token (`sv=…&sig=…`, a leading `?` allowed), as object_store's
/// `AzureCredential::SASToken` takes them: the token is percent-decoded whole, split at `&`
/// (blank pieces skipped), each piece trimmed and split at its first `=`. `None` when the decoded
/// token is not UTF-8 or a piece has no `=`.
#[cfg_attr(not(feature = "azure"), allow(dead_code))]
pub(crate) fn sas_query_pairs(token: &str) -> Option<Vec<(String, String)>> {
    let decoded = percent_encoding::percent_decode_str(token)
        .decode_utf8()
        .ok()?;
    decoded
        .trim_start_matches('?')
        .split('&')
        .map(str::trim)
        .filter(|piece| !piece.is_empty())
        .map(|piece| {
            let (key, value) = piece.split_once('=')?;
            Some((key.to_string(), value.to_string()))
        })
        .collect()
}

/// See the module comment.
pub(crate) struct SasStore {
    inner: Arc<dyn ObjectStore>,
    blobs: Arc<AzureBlobs>,
    /// The SAS query string, without a leading `?`.
    token: Arc<str>,
}

impl SasStore {
    pub(crate) fn new(inner: Arc<dyn ObjectStore>, blobs: AzureBlobs, token: &str) -> Self {
        SasStore {
            inner,
            blobs: Arc::new(blobs),
            token: Arc::from(token.trim_start_matches('?')),
        }
    }
}

impl fmt::Debug for SasStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The inner store's `Debug` may show its credentials: its `Display` names the container.
        f.debug_struct("SasStore")
            .field("inner", &self.inner.to_string())
            .field("token", &super::HIDDEN)
            .finish()
    }
}

impl fmt::Display for SasStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sas({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for SasStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        self.inner.get_ranges(location, ranges).await
    }

    /// One answer per path, in order: blob by blob, [`DELETES_IN_FLIGHT`] at once.
    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        let blobs = Arc::clone(&self.blobs);
        let token = Arc::clone(&self.token);
        locations
            .map(move |item| {
                let blobs = Arc::clone(&blobs);
                let token = Arc::clone(&token);
                async move {
                    match item {
                        Ok(path) => blobs.delete_signed(&token, path).await,
                        Err(e) => Err(e),
                    }
                }
            })
            .buffered(DELETES_IN_FLIGHT)
            .boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use super::sas_query_pairs;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_token_splits_into_decoded_pairs() {
        assert_eq!(
            sas_query_pairs("?sv=2024-08-04&sig=a%2Bb%3D&se=2030-01-01T00%3A00%3A00Z"),
            Some(pairs(&[
                ("sv", "2024-08-04"),
                ("sig", "a+b="),
                ("se", "2030-01-01T00:00:00Z"),
            ]))
        );
        assert_eq!(
            sas_query_pairs(" sv=1 && sig=x=y& "),
            Some(pairs(&[("sv", "1"), ("sig", "x=y")]))
        );
        assert_eq!(sas_query_pairs(""), Some(Vec::new()));
    }

    #[test]
    fn a_piece_without_a_value_or_bad_utf8_is_refused() {
        assert_eq!(sas_query_pairs("sv=1&sig"), None);
        assert_eq!(sas_query_pairs("sv=%FF"), None);
    }
}
