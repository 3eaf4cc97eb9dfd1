//! Where an input Parquet file is read from: whole (small files: one request), or by ranges on
//! demand (large files: the footer, then each row group's column chunks as the reader reaches
//! them, in blocks of [`BLOCK`] bytes), so a large input never sits in memory whole.
//!
//! The ranged source runs on a blocking thread (`spawn_blocking`) and waits for each range on the
//! statement's runtime (`Handle::block_on`), as the Parquet reader is synchronous.

use std::io::Read;

use bytes::{Buf, Bytes};
use parquet::errors::ParquetError;
use parquet::file::reader::{ChunkReader, Length};

use crate::io::FileIO;

/// Bytes fetched per request when the reader reads sequentially (page headers; the pages
/// themselves are fetched whole, one at a time).
pub const BLOCK: u64 = 64 << 10;

/// A file read by ranges.
#[derive(Clone)]
pub struct RangeSource {
    io: FileIO,
    path: String,
    len: u64,
    handle: tokio::runtime::Handle,
}

impl RangeSource {
    pub fn new(io: FileIO, path: String, len: u64, handle: tokio::runtime::Handle) -> Self {
        RangeSource {
            io,
            path,
            len,
            handle,
        }
    }

    fn fetch(&self, start: u64, length: u64) -> Result<Bytes, ParquetError> {
        let end = (start + length).min(self.len);
        if start >= end {
            return Ok(Bytes::new());
        }
        self.handle
            .block_on(self.io.read_range(&self.path, start..end))
            .map_err(|e| ParquetError::External(Box::new(e)))
    }
}

impl Length for RangeSource {
    fn len(&self) -> u64 {
        self.len
    }
}

/// A sequential reader over a [`RangeSource`], fetching [`BLOCK`] bytes at a time.
pub struct RangeRead {
    source: RangeSource,
    pos: u64,
    buf: Bytes,
}

impl Read for RangeRead {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.buf.is_empty() {
            self.buf = self
                .source
                .fetch(self.pos, BLOCK)
                .map_err(std::io::Error::other)?;
            self.pos += self.buf.len() as u64;
            if self.buf.is_empty() {
                return Ok(0);
            }
        }
        let n = out.len().min(self.buf.len());
        out[..n].copy_from_slice(&self.buf[..n]);
        self.buf.advance(n);
        Ok(n)
    }
}

impl ChunkReader for RangeSource {
    type T = RangeRead;

    fn get_read(&self, start: u64) -> Result<RangeRead, ParquetError> {
        Ok(RangeRead {
            source: self.clone(),
            pos: start,
            buf: Bytes::new(),
        })
    }

    fn get_bytes(&self, start: u64, length: usize) -> Result<Bytes, ParquetError> {
        let bytes = self.fetch(start, length as u64)?;
        if bytes.len() != length {
            return Err(ParquetError::EOF(format!(
                "'{}': wanted {length} bytes at {start}, the file has {}",
                self.path, self.len
            )));
        }
        Ok(bytes)
    }
}
