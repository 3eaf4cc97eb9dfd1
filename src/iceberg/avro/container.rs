//! The Avro object container file: reading its header and blocks, and writing one.
//!
//! Layout (Avro 1.11 spec, "Object Container Files"): magic `Obj\x01`; a `map<bytes>` of metadata
//! (`avro.schema`, `avro.codec`, plus whatever the writer adds: Iceberg puts `schema`, `partition-spec`,
//! `format-version`, ...); a 16-byte sync marker; then blocks of (object count, byte size, data, sync).
//! Errors name the file and, for blocks, the block number. The writer copies the schema JSON it is
//! given verbatim into the header (apache-avro would re-serialize it and drop attributes such as
//! `"logicalType": "map"` on arrays).

use super::codec::Codec;
use super::cursor::{Cursor, Decoded, Malformed};
use super::encode::{write_bytes, write_long};
use super::schema::{Node, parse_schema};
use crate::error::{Error, Result};
use crate::pool::Pool;

/// `Obj` followed by version 1.
pub const MAGIC: [u8; 4] = *b"Obj\x01";

/// Target uncompressed size of a written block.
const BLOCK_TARGET_BYTES: usize = 1 << 20;

/// Largest decompression buffer kept between files.
const KEPT_SCRATCH_BYTES: usize = 16 << 20;

/// Decompression buffers reused across files (a fresh buffer per file grew to the largest block
/// and went back to the OS after it).
static SCRATCH: Pool<Vec<u8>> = Pool::new(16);

/// A buffer goes back with its length (its bytes stay initialised, see
/// [`Codec::decompress_into`]).
fn give_back_scratch(scratch: Vec<u8>) {
    if scratch.capacity() <= KEPT_SCRATCH_BYTES {
        SCRATCH.give_back(scratch);
    }
}

/// Where a block starts: its offset after the header and its number (for messages).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BlockPosition {
    offset: usize,
    block_no: usize,
}

/// A parsed container header.
#[derive(Debug, Clone)]
pub struct Header {
    /// Every metadata pair, in file order.
    pub metadata: Vec<(String, Vec<u8>)>,
    /// `avro.schema`, verbatim.
    pub schema_json: String,
    /// `avro.schema`, parsed.
    pub schema: Node,
    pub codec: Codec,
    pub sync: [u8; 16],
}

impl Header {
    /// A metadata value as UTF-8, if present and valid.
    pub fn meta_str(&self, key: &str) -> Option<&str> {
        self.metadata
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| std::str::from_utf8(v).ok())
    }
}

/// An open container over its bytes.
#[derive(Debug)]
pub struct Container<'a> {
    pub header: Header,
    file_name: &'a str,
    body: &'a [u8],
}

fn bad(file_name: &str, msg: impl std::fmt::Display) -> Error {
    Error::incorrect_data(format!("Avro file {file_name}: {msg}"))
}

impl<'a> Container<'a> {
    /// Parses the header of `bytes`; `file_name` is used in error messages.
    pub fn open(bytes: &'a [u8], file_name: &'a str) -> Result<Self> {
        let mut c = Cursor::new(bytes);
        let magic = c
            .take(4)
            .map_err(|_| bad(file_name, "file shorter than the Avro magic"))?;
        if magic != MAGIC {
            return Err(bad(
                file_name,
                "not an Avro object container file (bad magic)",
            ));
        }
        let metadata =
            read_metadata(&mut c).map_err(|m| bad(file_name, format!("header: {}", m.0)))?;
        let sync_bytes = c
            .take(16)
            .map_err(|_| bad(file_name, "header: missing sync marker"))?;
        let mut sync = [0u8; 16];
        sync.copy_from_slice(sync_bytes);
        let text = |key: &str| {
            metadata
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| {
                    std::str::from_utf8(v)
                        .map_err(|_| bad(file_name, format!("{key} is not UTF-8")))
                })
                .transpose()
        };
        let schema_json = text("avro.schema")?
            .ok_or_else(|| bad(file_name, "header has no avro.schema"))?
            .to_string();
        let codec = Codec::from_name(text("avro.codec")?).map_err(|m| bad(file_name, m))?;
        let schema = parse_schema_cached(&schema_json)
            .map_err(|m| bad(file_name, format!("avro.schema: {m}")))?;
        let body = &bytes[c.position()..];
        let header = Header {
            metadata,
            schema_json,
            schema,
            codec,
            sync,
        };
        Ok(Container {
            header,
            file_name,
            body,
        })
    }

    /// Error for this file.
    pub fn error(&self, msg: impl std::fmt::Display) -> Error {
        bad(self.file_name, msg)
    }

    /// Calls `datum` once per object of every block, with a cursor at the object's start. A block must
    /// be consumed exactly by its objects.
    pub fn for_each_datum(
        &self,
        mut datum: impl FnMut(&mut Cursor<'_>) -> Decoded<()>,
    ) -> Result<()> {
        let mut scratch = SCRATCH.take().unwrap_or_default();
        let result = self.for_each_block(&mut scratch, &mut datum);
        give_back_scratch(scratch);
        result
    }

    /// [`Self::for_each_datum`] from the block at `from` on, stopping after the first whole block
    /// at which `enough` says yes to the number of objects read by this call: where the next block
    /// starts (`None` at the end of the file). Lets a caller decode a large file a few blocks at a
    /// time.
    pub fn for_each_datum_from(
        &self,
        from: BlockPosition,
        mut datum: impl FnMut(&mut Cursor<'_>) -> Decoded<()>,
        mut enough: impl FnMut(usize) -> bool,
    ) -> Result<Option<BlockPosition>> {
        let mut scratch = SCRATCH.take().unwrap_or_default();
        let result = self.blocks_from(from, &mut scratch, &mut datum, &mut enough);
        give_back_scratch(scratch);
        result
    }

    fn for_each_block(
        &self,
        scratch: &mut Vec<u8>,
        datum: &mut impl FnMut(&mut Cursor<'_>) -> Decoded<()>,
    ) -> Result<()> {
        self.blocks_from(BlockPosition::default(), scratch, datum, &mut |_| false)
            .map(|_| ())
    }

    fn blocks_from(
        &self,
        from: BlockPosition,
        scratch: &mut Vec<u8>,
        datum: &mut impl FnMut(&mut Cursor<'_>) -> Decoded<()>,
        enough: &mut impl FnMut(usize) -> bool,
    ) -> Result<Option<BlockPosition>> {
        let body = self
            .body
            .get(from.offset..)
            .ok_or_else(|| self.error(format!("block {} starts past the end", from.block_no)))?;
        let mut c = Cursor::new(body);
        let mut block_no = from.block_no;
        let mut objects = 0;
        while c.remaining() > 0 {
            let (count, data) = self.next_block(&mut c, block_no)?;
            let data: &[u8] = if self.header.codec == Codec::Null {
                data
            } else {
                let n = self
                    .header
                    .codec
                    .decompress_into(data, scratch)
                    .map_err(|m| self.error(format!("block {block_no}: {m}")))?;
                scratch.get(..n).unwrap_or_default()
            };
            if count > data.len() {
                return Err(self.error(format!(
                    "block {block_no} claims {count} objects in {} bytes",
                    data.len()
                )));
            }
            let mut d = Cursor::new(data);
            for i in 0..count {
                datum(&mut d)
                    .map_err(|m| self.error(format!("block {block_no}, object {i}: {}", m.0)))?;
            }
            if d.remaining() != 0 {
                return Err(self.error(format!(
                    "block {block_no} has {} bytes after its objects",
                    d.remaining()
                )));
            }
            block_no += 1;
            objects += count;
            if enough(objects) && c.remaining() > 0 {
                return Ok(Some(BlockPosition {
                    offset: from.offset + c.position(),
                    block_no,
                }));
            }
        }
        Ok(None)
    }

    fn next_block(&self, c: &mut Cursor<'a>, block_no: usize) -> Result<(usize, &'a [u8])> {
        let at = |m: Malformed| self.error(format!("block {block_no}: {}", m.0));
        let count = c.read_long().map_err(at)?;
        let size = c.read_long().map_err(at)?;
        let count = usize::try_from(count)
            .map_err(|_| self.error(format!("block {block_no}: negative count")))?;
        let size = usize::try_from(size)
            .map_err(|_| self.error(format!("block {block_no}: negative size")))?;
        if size > c.remaining() {
            return Err(self.error(format!(
                "block {block_no}: size {size} exceeds the file (truncated?)"
            )));
        }
        let data = c.take(size).map_err(at)?;
        let sync = c
            .take(16)
            .map_err(|_| self.error(format!("block {block_no}: missing sync marker")))?;
        if sync != self.header.sync {
            return Err(self.error(format!(
                "block {block_no}: sync marker does not match the header"
            )));
        }
        Ok((count, data))
    }
}

/// Schemas parsed recently on this thread, by their exact JSON text, most recent last.
const SCHEMA_CACHE: usize = 8;

thread_local! {
    static SCHEMAS: std::cell::RefCell<Vec<(String, Node)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// [`parse_schema`], remembering the last few schemas of this thread: a table's manifests and
/// lists share a handful of schemas, and parsing one is most of the cost of opening a small file.
fn parse_schema_cached(json: &str) -> std::result::Result<Node, String> {
    let hit = SCHEMAS.with(|cache| {
        let cache = cache.borrow();
        cache
            .iter()
            .find(|(text, _)| text == json)
            .map(|(_, node)| node.clone())
    });
    if let Some(node) = hit {
        return Ok(node);
    }
    let node = parse_schema(json)?;
    SCHEMAS.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.len() >= SCHEMA_CACHE {
            cache.remove(0);
        }
        cache.push((json.to_string(), node.clone()));
    });
    Ok(node)
}

fn read_metadata(c: &mut Cursor<'_>) -> Decoded<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::new();
    loop {
        let (count, _) = c.read_block_header(false)?;
        if count == 0 {
            return Ok(out);
        }
        for _ in 0..count {
            let key = c.read_str()?.to_string();
            let value = c.read_bytes()?.to_vec();
            out.push((key, value));
        }
    }
}

/// Builds a container in memory: header, then objects grouped into compressed blocks.
#[derive(Debug)]
pub struct ContainerWriter {
    out: Vec<u8>,
    sync: [u8; 16],
    codec: Codec,
    block: Vec<u8>,
    block_count: usize,
}

impl ContainerWriter {
    /// Starts a file with `schema_json` (written verbatim) and extra `metadata` pairs.
    pub fn new(schema_json: &str, metadata: &[(String, Vec<u8>)], codec: Codec) -> Self {
        let mut out = Vec::with_capacity(schema_json.len() + 1024);
        out.extend_from_slice(&MAGIC);
        let extra: Vec<_> = metadata
            .iter()
            .filter(|(k, _)| k != "avro.schema" && k != "avro.codec")
            .collect();
        write_long(&mut out, extra.len() as i64 + 2);
        write_bytes(&mut out, b"avro.schema");
        write_bytes(&mut out, schema_json.as_bytes());
        for (k, v) in extra {
            write_bytes(&mut out, k.as_bytes());
            write_bytes(&mut out, v);
        }
        write_bytes(&mut out, b"avro.codec");
        write_bytes(&mut out, codec.name().as_bytes());
        out.push(0);
        let sync = uuid::Uuid::new_v4().into_bytes();
        out.extend_from_slice(&sync);
        ContainerWriter {
            out,
            sync,
            codec,
            block: Vec::new(),
            block_count: 0,
        }
    }

    /// Appends one object encoded by `encode` into the current block.
    pub fn append<E>(
        &mut self,
        encode: impl FnOnce(&mut Vec<u8>) -> std::result::Result<(), E>,
    ) -> Result<(), E> {
        let mark = self.block.len();
        if let Err(e) = encode(&mut self.block) {
            self.block.truncate(mark);
            return Err(e);
        }
        self.block_count += 1;
        Ok(())
    }

    /// Whether the current block has reached its target size.
    pub fn block_full(&self) -> bool {
        self.block.len() >= BLOCK_TARGET_BYTES
    }

    /// Writes the current block, if it holds any object.
    pub fn flush_block(&mut self) -> Result<()> {
        if self.block_count == 0 {
            return Ok(());
        }
        let packed = self.codec.compress(&self.block).map_err(|m| {
            Error::logical(format!(
                "Avro {} compression failed: {m}",
                self.codec.name()
            ))
        })?;
        write_long(&mut self.out, self.block_count as i64);
        write_long(&mut self.out, packed.len() as i64);
        self.out.extend_from_slice(&packed);
        self.out.extend_from_slice(&self.sync);
        self.block.clear();
        self.block_count = 0;
        Ok(())
    }

    /// Flushes and returns the whole file.
    pub fn finish(mut self) -> Result<Vec<u8>> {
        self.flush_block()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of longs `0..n`, `per_block` to a block.
    fn longs(n: usize, per_block: usize, codec: Codec) -> Vec<u8> {
        let schema = r#"{"type":"long"}"#;
        let mut w = ContainerWriter::new(schema, &[], codec);
        for i in 0..n {
            w.append(|out| {
                write_long(out, i as i64);
                Ok::<(), ()>(())
            })
            .unwrap();
            if (i + 1) % per_block == 0 {
                w.flush_block().unwrap();
            }
        }
        w.finish().unwrap()
    }

    /// Reading a few blocks at a time and resuming where the last call stopped reads every object
    /// once, in order, whatever the block size, part size and codec.
    #[test]
    fn parts_resume_at_the_next_block() {
        for codec in [Codec::Null, Codec::Deflate] {
            for (n, per_block, at_least) in
                [(0, 3, 5), (10, 3, 5), (10, 1, 1), (12, 4, 4), (7, 10, 2)]
            {
                let bytes = longs(n, per_block, codec);
                let c = Container::open(&bytes, "longs.avro").unwrap();
                let mut seen = Vec::new();
                let mut from = BlockPosition::default();
                let mut calls = 0;
                loop {
                    calls += 1;
                    let before = seen.len();
                    let next = c
                        .for_each_datum_from(
                            from,
                            |d| {
                                seen.push(d.read_long()?);
                                Ok(())
                            },
                            |_| false,
                        )
                        .unwrap();
                    assert!(next.is_none(), "never enough reads to the end");
                    seen.truncate(before);
                    let next = c
                        .for_each_datum_from(
                            from,
                            |d| {
                                seen.push(d.read_long()?);
                                Ok(())
                            },
                            |read| read >= at_least,
                        )
                        .unwrap();
                    let part = seen.len() - before;
                    match next {
                        Some(at) => {
                            assert!(part >= at_least, "{part} < {at_least}");
                            assert!(part < at_least + per_block);
                            from = at;
                        }
                        None => break,
                    }
                }
                let all: Vec<i64> = (0..n as i64).collect();
                assert_eq!(seen, all, "{codec:?} {n} {per_block}");
                let blocks = n.div_ceil(per_block);
                let parts = blocks.div_ceil(at_least.div_ceil(per_block)).max(1);
                assert_eq!(calls, parts, "{codec:?} {n} {per_block} {at_least}");
            }
        }
    }

    #[test]
    fn cached_schemas_equal_freshly_parsed_ones() {
        let schemas: Vec<String> = (0..SCHEMA_CACHE + 3)
            .map(|i| {
                format!(
                    r#"{{"type":"record","name":"r{i}","fields":[{{"name":"f","type":"long"}}]}}"#
                )
            })
            .collect();
        for _ in 0..2 {
            for text in &schemas {
                assert_eq!(parse_schema_cached(text), parse_schema(text), "{text}");
            }
        }
        assert!(parse_schema_cached("not json").is_err());
        assert!(
            parse_schema_cached("not json").is_err(),
            "errors are not cached as schemas"
        );
    }
}
