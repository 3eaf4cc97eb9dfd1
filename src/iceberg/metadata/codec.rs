//! Compression of metadata files, which Iceberg writers signal in the file name:
//! `v3.gz.metadata.json` (Java, pyiceberg), `v3.gzip.metadata.json` (ClickHouse's codec name) and
//! `v3.metadata.json.gz`. Reading also recognises gzip by its magic bytes, whatever the name says;
//! writing uses the marker of the file being replaced.

use std::io::{Read, Write};

use crate::error::{Error, Result};

/// How a metadata file is compressed, and where its name says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetadataCompression {
    /// `….metadata.json`
    None,
    /// `….gz.metadata.json`
    GzipInfix,
    /// `….gzip.metadata.json`
    GzipLongInfix,
    /// `….metadata.json.gz`
    GzipSuffix,
}

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

impl MetadataCompression {
    /// The ending of a metadata file name with this compression, from `.` on.
    pub fn file_suffix(self) -> &'static str {
        match self {
            MetadataCompression::None => ".metadata.json",
            MetadataCompression::GzipInfix => ".gz.metadata.json",
            MetadataCompression::GzipLongInfix => ".gzip.metadata.json",
            MetadataCompression::GzipSuffix => ".metadata.json.gz",
        }
    }

    /// From a file name (or URI); `None` when the name is not a metadata file name.
    pub fn from_file_name(name: &str) -> Option<Self> {
        [
            MetadataCompression::GzipInfix,
            MetadataCompression::GzipLongInfix,
            MetadataCompression::GzipSuffix,
            MetadataCompression::None,
        ]
        .into_iter()
        .find(|c| name.ends_with(c.file_suffix()))
    }

    /// The name without its metadata suffix: `v3.gz.metadata.json` → `v3`.
    pub fn strip_suffix(name: &str) -> Option<&str> {
        Self::from_file_name(name).and_then(|c| name.strip_suffix(c.file_suffix()))
    }

    pub fn is_gzip(self) -> bool {
        self != MetadataCompression::None
    }

    /// Compress `json` for a file of this kind.
    pub fn encode(self, json: &[u8], file: &str) -> Result<Vec<u8>> {
        if !self.is_gzip() {
            return Ok(json.to_vec());
        }
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        encoder
            .write_all(json)
            .and_then(|()| encoder.finish())
            .map_err(|e| Error::logical(format!("Cannot gzip metadata file '{file}': {e}")))
    }
}

/// The JSON text of a metadata file's bytes: gunzipped when the name or the magic bytes say gzip.
pub fn decode<'a>(bytes: &'a [u8], file: &str) -> Result<std::borrow::Cow<'a, [u8]>> {
    let named_gzip = MetadataCompression::from_file_name(file).is_some_and(|c| c.is_gzip());
    if !named_gzip && !bytes.starts_with(&GZIP_MAGIC) {
        return Ok(std::borrow::Cow::Borrowed(bytes));
    }
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut out)
        .map_err(|e| {
            Error::incorrect_data(format!(
                "Cannot parse Iceberg metadata file '{file}': not valid gzip: {e}"
            ))
        })?;
    Ok(std::borrow::Cow::Owned(out))
}

/// [`decode`] of bytes that may be kept: plain JSON is returned as is, not copied.
pub fn decode_bytes(bytes: bytes::Bytes, file: &str) -> Result<bytes::Bytes> {
    match decode(&bytes, file)? {
        std::borrow::Cow::Borrowed(_) => Ok(bytes),
        std::borrow::Cow::Owned(text) => Ok(bytes::Bytes::from(text)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        use MetadataCompression::*;
        assert_eq!(
            MetadataCompression::from_file_name("v1.metadata.json"),
            Some(None)
        );
        assert_eq!(
            MetadataCompression::from_file_name("/a/v1.gz.metadata.json"),
            Some(GzipInfix)
        );
        assert_eq!(
            MetadataCompression::from_file_name("v1.gzip.metadata.json"),
            Some(GzipLongInfix)
        );
        assert_eq!(
            MetadataCompression::from_file_name("v1.metadata.json.gz"),
            Some(GzipSuffix)
        );
        assert_eq!(MetadataCompression::from_file_name("v1.json"), Option::None);
        assert_eq!(
            MetadataCompression::strip_suffix("00001-x.gz.metadata.json"),
            Some("00001-x")
        );
    }

    #[test]
    fn gzip_round_trip_and_magic_detection() {
        let json = br#"{"a":1}"#;
        let packed = MetadataCompression::GzipSuffix.encode(json, "t").unwrap();
        assert!(packed.starts_with(&GZIP_MAGIC));
        assert_eq!(*decode(&packed, "v1.metadata.json.gz").unwrap(), *json);
        // Gzip content under a plain name is still recognised.
        assert_eq!(*decode(&packed, "v1.metadata.json").unwrap(), *json);
        assert_eq!(*decode(json, "v1.metadata.json").unwrap(), *json);
    }

    #[test]
    fn bad_gzip_is_incorrect_data() {
        let err = decode(b"{not gzip", "v1.gz.metadata.json").unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::IncorrectData);
        assert!(err.message().contains("v1.gz.metadata.json"));
    }
}
