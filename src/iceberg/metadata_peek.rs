//! Reading a few top-level members of a metadata file without reading or parsing all of it
//! (`table-uuid`, `last-updated-ms`), so checks over a long history stay cheap.
//!
//! pyiceberg, Java and ClickHouse all write `format-version`, `table-uuid`, `location` and
//! `last-updated-ms` before the large members (`schemas`, `snapshots`, logs), so the first
//! [`PREFIX_BYTES`] of a file almost always hold them. [`top_level_members`] scans that prefix as
//! JSON, depth-aware, and returns the raw value of each wanted member of the *top-level* object
//! (a `table-uuid` inside a nested object never counts). When the prefix ends before every wanted
//! member was seen and before the object closed, the whole file is read and scanned instead.
//! Gzip-marked files are always read whole (their prefix would need a partial inflate).

use futures::StreamExt;

use crate::error::{Error, ErrorKind, Result};
use crate::iceberg::metadata::{MetadataCompression, TableMetadata};
use crate::io::FileIO;

/// Bytes read first from each metadata file.
pub const PREFIX_BYTES: u64 = 4096;

/// What a scan of (a prefix of) a JSON document found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scanned<'a> {
    /// The raw value text of each wanted member, `None` when the object has no such member.
    Complete(Vec<Option<&'a [u8]>>),
    /// The bytes ended before every wanted member was found.
    Truncated,
    /// Not a JSON object.
    Invalid,
}

/// Find the top-level members `wanted` of the JSON object starting `bytes` (see the module
/// comment).
pub fn top_level_members<'a>(bytes: &'a [u8], wanted: &[&str]) -> Scanned<'a> {
    let mut found: Vec<Option<&[u8]>> = vec![None; wanted.len()];
    let mut pos = skip_ws(bytes, 0);
    if pos >= bytes.len() {
        return Scanned::Truncated;
    }
    if bytes[pos] != b'{' {
        return Scanned::Invalid;
    }
    pos += 1;
    loop {
        if found.iter().all(Option::is_some) {
            return Scanned::Complete(found);
        }
        pos = skip_ws(bytes, pos);
        match bytes.get(pos) {
            None => return Scanned::Truncated,
            Some(b'}') => return Scanned::Complete(found),
            Some(b',') => {
                pos += 1;
                continue;
            }
            Some(b'"') => {}
            Some(_) => return Scanned::Invalid,
        }
        let Some(key_end) = string_end(bytes, pos) else {
            return Scanned::Truncated;
        };
        let key: Option<String> = serde_json::from_slice(&bytes[pos..key_end]).ok();
        pos = skip_ws(bytes, key_end);
        match bytes.get(pos) {
            None => return Scanned::Truncated,
            Some(b':') => pos += 1,
            Some(_) => return Scanned::Invalid,
        }
        pos = skip_ws(bytes, pos);
        let Some(value_end) = value_end(bytes, pos) else {
            return Scanned::Truncated;
        };
        if let Some(slot) = key
            .as_deref()
            .and_then(|k| wanted.iter().position(|w| *w == k))
        {
            found[slot].get_or_insert(&bytes[pos..value_end]);
        }
        pos = value_end;
    }
}

fn skip_ws(bytes: &[u8], mut pos: usize) -> usize {
    while bytes.get(pos).is_some_and(|b| b.is_ascii_whitespace()) {
        pos += 1;
    }
    pos
}

/// End (exclusive) of the string starting at `pos` (a `"`), or `None` when it is cut off.
fn string_end(bytes: &[u8], pos: usize) -> Option<usize> {
    let mut i = pos + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// End (exclusive) of the value starting at `pos`, or `None` when it is cut off (a scalar running
/// into the end counts as cut off: more digits may follow).
fn value_end(bytes: &[u8], pos: usize) -> Option<usize> {
    match bytes.get(pos)? {
        b'"' => string_end(bytes, pos),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = pos;
            while i < bytes.len() {
                match bytes[i] {
                    b'"' => {
                        i = string_end(bytes, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            let end = bytes[pos..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace())?;
            Some(pos + end)
        }
    }
}

/// The top-level `table-uuid` and `last-updated-ms` of one metadata file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MetadataHead {
    pub table_uuid: Option<String>,
    pub last_updated_ms: Option<i64>,
}

const HEAD_MEMBERS: [&str; 2] = ["table-uuid", "last-updated-ms"];

fn head_of(scanned: &[Option<&[u8]>], path: &str) -> Result<MetadataHead> {
    let bad = |what: &str| {
        Error::new(
            ErrorKind::IncorrectData,
            format!("Cannot read {what} of metadata file '{path}'"),
        )
    };
    let table_uuid = match scanned[0] {
        None => None,
        Some(raw) => match serde_json::from_slice::<serde_json::Value>(raw) {
            Ok(serde_json::Value::String(s)) => Some(s),
            Ok(serde_json::Value::Null) => None,
            _ => return Err(bad("table-uuid")),
        },
    };
    let last_updated_ms = match scanned[1] {
        None => None,
        Some(raw) => Some(serde_json::from_slice::<i64>(raw).map_err(|_| bad("last-updated-ms"))?),
    };
    Ok(MetadataHead {
        table_uuid,
        last_updated_ms,
    })
}

/// Read the `table-uuid` and `last-updated-ms` of the metadata file `path`, from its first bytes
/// when they suffice.
pub async fn read_head(io: &FileIO, path: &str) -> Result<MetadataHead> {
    let compressed = !matches!(
        MetadataCompression::from_file_name(path),
        Some(MetadataCompression::None) | None
    );
    if !compressed
        && let Ok(prefix) = io.read_range(path, 0..PREFIX_BYTES).await
        && let Scanned::Complete(found) = top_level_members(&prefix, &HEAD_MEMBERS)
    {
        return head_of(&found, path);
    }
    let bytes = io.read(path).await?;
    if !compressed && let Scanned::Complete(found) = top_level_members(&bytes, &HEAD_MEMBERS) {
        return head_of(&found, path);
    }
    let metadata = TableMetadata::parse_bytes(bytes, path)?;
    Ok(MetadataHead {
        table_uuid: metadata.table_uuid().map(str::to_string),
        last_updated_ms: Some(metadata.last_updated_ms()),
    })
}

/// [`read_head`] of each of `paths`, up to `in_flight` at once, in the order given.
pub async fn read_heads(
    io: &FileIO,
    paths: &[String],
    in_flight: usize,
) -> Vec<(String, Result<MetadataHead>)> {
    futures::stream::iter(paths.iter().cloned())
        .map(|path| async move {
            let head = read_head(io, &path).await;
            (path, head)
        })
        .buffered(in_flight.max(1))
        .collect()
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(text: &str) -> Scanned<'_> {
        top_level_members(text.as_bytes(), &HEAD_MEMBERS)
    }

    fn text(found: &Scanned<'_>) -> Vec<Option<String>> {
        match found {
            Scanned::Complete(v) => v
                .iter()
                .map(|r| r.map(|b| String::from_utf8_lossy(b).into_owned()))
                .collect(),
            other => panic!("not complete: {other:?}"),
        }
    }

    #[test]
    fn finds_top_level_members_only() {
        let doc = r#"{"format-version": 2, "x": {"table-uuid": "nested", "a": [1, {"b": "}"}]},
            "s": "a \"table-uuid\": x", "table-uuid" : "u-1", "last-updated-ms": 17 , "z": 1}"#;
        assert_eq!(
            text(&scan(doc)),
            [Some(r#""u-1""#.to_string()), Some("17".to_string())]
        );
        // Stops as soon as both are found: what follows may be cut off.
        let cut = r#"{"table-uuid":"u","last-updated-ms":5,"snapshots":[{"#;
        assert_eq!(text(&scan(cut)), [Some(r#""u""#.into()), Some("5".into())]);
        // A missing member is known missing only when the object closes.
        assert_eq!(
            text(&scan(r#"{"table-uuid":"u"}"#)),
            [Some(r#""u""#.into()), None]
        );
        assert_eq!(
            scan(r#"{"table-uuid":"u","schemas":[{"#),
            Scanned::Truncated
        );
        assert_eq!(scan(r#"{"last-updated-ms":12"#), Scanned::Truncated);
        assert_eq!(scan(r#"{"table-uu"#), Scanned::Truncated);
        assert_eq!(scan(""), Scanned::Truncated);
        assert_eq!(scan("[1]"), Scanned::Invalid);
        assert_eq!(scan(r#"{"a" 1}"#), Scanned::Invalid);
    }

    #[test]
    fn heads_parse_values() {
        let found = [Some(&br#""abc""#[..]), Some(&b"42"[..])];
        let head = head_of(&found, "p").unwrap();
        assert_eq!(head.table_uuid.as_deref(), Some("abc"));
        assert_eq!(head.last_updated_ms, Some(42));
        assert!(head_of(&[Some(&b"7"[..]), None], "p").is_err());
        assert!(head_of(&[None, Some(&br#""x""#[..])], "p").is_err());
    }

    #[tokio::test]
    async fn reads_a_prefix_or_the_whole_file() {
        use bytes::Bytes;
        let io = FileIO::memory();
        let short = "memory:///t/metadata/v1.metadata.json";
        io.overwrite(
            short,
            Bytes::from_static(br#"{"table-uuid":"a","last-updated-ms":3}"#),
        )
        .await
        .unwrap();
        let head = read_head(&io, short).await.unwrap();
        assert_eq!(head.table_uuid.as_deref(), Some("a"));
        assert_eq!(head.last_updated_ms, Some(3));
        // The members after a large one: the prefix is not enough, the whole file is read.
        let long = "memory:///t/metadata/v2.metadata.json";
        let big = format!(
            r#"{{"snapshots":["{}"],"table-uuid":"b","last-updated-ms":4}}"#,
            "x".repeat(10_000)
        );
        io.overwrite(long, Bytes::from(big)).await.unwrap();
        let head = read_head(&io, long).await.unwrap();
        assert_eq!(head.table_uuid.as_deref(), Some("b"));
        assert_eq!(head.last_updated_ms, Some(4));
    }
}
