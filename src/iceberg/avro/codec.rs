//! Avro block codecs (`avro.codec`): null, deflate (raw RFC 1951), snappy (raw block followed by the
//! big-endian CRC32 of the uncompressed bytes), zstandard. Decompression output is capped at
//! [`MAX_BLOCK_BYTES`] so a small corrupt or hostile file cannot claim unbounded memory.

use std::io::{Read, Write};

use flate2::{Decompress, FlushDecompress, Status};
use libdeflater::{DecompressionError, Decompressor};

use crate::pool::Pool;

/// Largest decompressed block we accept (Iceberg writers use blocks well below 64 MiB).
pub const MAX_BLOCK_BYTES: usize = 512 << 20;

/// A block codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    Null,
    Deflate,
    Snappy,
    Zstandard,
}

impl Codec {
    /// From the `avro.codec` header value; absent means `null`.
    pub fn from_name(name: Option<&str>) -> Result<Codec, String> {
        match name {
            None | Some("null") => Ok(Codec::Null),
            Some("deflate") => Ok(Codec::Deflate),
            Some("snappy") => Ok(Codec::Snappy),
            Some("zstandard") => Ok(Codec::Zstandard),
            Some(other) => Err(format!("unsupported Avro codec '{other}'")),
        }
    }

    /// The `avro.codec` header value.
    pub fn name(self) -> &'static str {
        match self {
            Codec::Null => "null",
            Codec::Deflate => "deflate",
            Codec::Snappy => "snappy",
            Codec::Zstandard => "zstandard",
        }
    }

    /// Decompresses `data` into `out` (cleared first). Not called for `Null`.
    pub fn decompress(self, data: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        let n = self.decompress_into(data, out)?;
        out.truncate(n);
        Ok(())
    }

    /// Decompresses `data` into the start of `buffer` and says how many bytes it wrote; what
    /// follows is left over. A buffer reused from block to block keeps its length: deflate
    /// writes into the bytes already there instead of zero-filling its guess of the output size
    /// for every block (that zeroing was 4% of a 100,000-snapshot expiry).
    pub fn decompress_into(self, data: &[u8], buffer: &mut Vec<u8>) -> Result<usize, String> {
        let out = buffer;
        match self {
            Codec::Deflate => return inflate(data, out),
            Codec::Null => {
                out.clear();
                out.extend_from_slice(data);
            }
            Codec::Zstandard => {
                out.clear();
                let decoder = zstd::stream::read::Decoder::with_buffer(data)
                    .map_err(|e| format!("zstandard block: {e}"))?;
                read_capped(decoder, out, "zstandard")?;
            }
            Codec::Snappy => {
                out.clear();
                decompress_snappy(data, out)?;
            }
        }
        Ok(out.len())
    }

    /// Compresses one block.
    pub fn compress(self, data: &[u8]) -> Result<Vec<u8>, String> {
        match self {
            Codec::Null => Ok(data.to_vec()),
            Codec::Deflate => {
                let mut enc =
                    flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
                enc.write_all(data)
                    .and_then(|_| enc.finish())
                    .map_err(|e| e.to_string())
            }
            Codec::Snappy => {
                let mut out = snap::raw::Encoder::new()
                    .compress_vec(data)
                    .map_err(|e| e.to_string())?;
                out.extend_from_slice(&crc32fast::hash(data).to_be_bytes());
                Ok(out)
            }
            Codec::Zstandard => zstd::stream::encode_all(data, 0).map_err(|e| e.to_string()),
        }
    }
}

/// Decompressor states, reused rather than allocated per block.
static WHOLE_INFLATERS: Pool<Decompressor> = Pool::new(16);
static STREAM_INFLATERS: Pool<Decompress> = Pool::new(16);

/// Inflate one raw-deflate block into the start of `out`, capped at [`MAX_BLOCK_BYTES`]; the
/// number of bytes written.
/// An Avro block is one whole deflate stream, so libdeflate's whole-buffer inflate does it (about
/// twice zlib-rs's speed, and inflating is the largest part of reading 1,000 manifest lists);
/// the output size is not recorded, so it guesses and doubles. A stream libdeflate refuses (for
/// example one cut short) goes through the streaming inflater, which keeps what decodes and lets
/// the Avro layer judge the block.
fn inflate(data: &[u8], out: &mut Vec<u8>) -> Result<usize, String> {
    let mut whole = WHOLE_INFLATERS.take().unwrap_or_default();
    let result = inflate_whole(&mut whole, data, out);
    WHOLE_INFLATERS.give_back(whole);
    match result {
        Ok(Some(n)) => Ok(n),
        Err(e) => Err(e),
        Ok(None) => {
            out.clear();
            let mut stream = STREAM_INFLATERS
                .take()
                .unwrap_or_else(|| Decompress::new(false));
            stream.reset(false);
            let result = inflate_with(&mut stream, data, out);
            STREAM_INFLATERS.give_back(stream);
            result.map(|()| out.len())
        }
    }
}

/// The bytes written to the start of `out`; `Ok(None)` when libdeflate refuses the data (the
/// caller retries with the streaming inflater). `out` only grows (zero-filled), never shrinks.
fn inflate_whole(
    d: &mut Decompressor,
    data: &[u8],
    out: &mut Vec<u8>,
) -> Result<Option<usize>, String> {
    let mut size = data
        .len()
        .saturating_mul(8)
        .clamp(64 << 10, MAX_BLOCK_BYTES);
    loop {
        if out.len() < size {
            out.resize(size, 0);
        }
        let room = out.len().min(MAX_BLOCK_BYTES);
        match d.deflate_decompress(data, &mut out[..room]) {
            Ok(n) => return Ok(Some(n)),
            Err(DecompressionError::InsufficientSpace) if room < MAX_BLOCK_BYTES => {
                size = room.saturating_mul(2).min(MAX_BLOCK_BYTES);
            }
            Err(DecompressionError::InsufficientSpace) => {
                out.clear();
                return Err(format!(
                    "deflate block decompresses to more than {MAX_BLOCK_BYTES} bytes"
                ));
            }
            Err(DecompressionError::BadData) => return Ok(None),
        }
    }
}

fn inflate_with(state: &mut Decompress, data: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    out.reserve(data.len().saturating_mul(4).clamp(4096, MAX_BLOCK_BYTES));
    loop {
        let consumed = usize::try_from(state.total_in()).unwrap_or(usize::MAX);
        let input = data.get(consumed..).unwrap_or_default();
        let before = (state.total_in(), state.total_out());
        let status = state
            .decompress_vec(input, out, FlushDecompress::Finish)
            .map_err(|e| format!("deflate block does not decompress: {e}"))?;
        if out.len() > MAX_BLOCK_BYTES {
            return Err(format!(
                "deflate block decompresses to more than {MAX_BLOCK_BYTES} bytes"
            ));
        }
        match status {
            Status::StreamEnd => return Ok(()),
            _ if out.len() < out.capacity() => {
                // Room left but no end and no progress: the input ran out before the final
                // block. What came out is kept (as a streaming reader would); the Avro layer
                // refuses a block whose objects do not fit it.
                if (state.total_in(), state.total_out()) == before {
                    return Ok(());
                }
            }
            _ => out.reserve(out.len().max(4096)),
        }
    }
}

fn read_capped(reader: impl Read, out: &mut Vec<u8>, codec: &str) -> Result<(), String> {
    let mut limited = reader.take(MAX_BLOCK_BYTES as u64 + 1);
    limited
        .read_to_end(out)
        .map_err(|e| format!("{codec} block does not decompress: {e}"))?;
    if out.len() > MAX_BLOCK_BYTES {
        return Err(format!(
            "{codec} block decompresses to more than {MAX_BLOCK_BYTES} bytes"
        ));
    }
    Ok(())
}

fn decompress_snappy(data: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    let split = data
        .len()
        .checked_sub(4)
        .ok_or("snappy block shorter than its CRC32")?;
    let (compressed, crc) = data.split_at(split);
    let len = snap::raw::decompress_len(compressed).map_err(|e| format!("snappy block: {e}"))?;
    if len > MAX_BLOCK_BYTES {
        return Err(format!(
            "snappy block claims {len} bytes, more than {MAX_BLOCK_BYTES}"
        ));
    }
    out.resize(len, 0);
    snap::raw::Decoder::new()
        .decompress(compressed, out)
        .map_err(|e| format!("snappy block does not decompress: {e}"))?;
    let expected = u32::from_be_bytes([crc[0], crc[1], crc[2], crc[3]]);
    if crc32fast::hash(out) != expected {
        return Err("snappy block CRC32 mismatch".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_codec_round_trips() {
        let data: Vec<u8> = (0..10_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        for codec in [Codec::Null, Codec::Deflate, Codec::Snappy, Codec::Zstandard] {
            let packed = codec.compress(&data).unwrap();
            let mut out = Vec::new();
            codec.decompress(&packed, &mut out).unwrap();
            assert_eq!(out, data, "{codec:?}");
            assert_eq!(Codec::from_name(Some(codec.name())), Ok(codec));
        }
    }

    #[test]
    fn snappy_crc_is_checked() {
        let mut packed = Codec::Snappy.compress(b"hello hello hello").unwrap();
        let last = packed.len() - 1;
        packed[last] ^= 1;
        let err = Codec::Snappy
            .decompress(&packed, &mut Vec::new())
            .unwrap_err();
        assert!(err.contains("CRC32"), "{err}");
        assert!(Codec::Snappy.decompress(&[1, 2], &mut Vec::new()).is_err());
    }

    #[test]
    fn a_reused_buffer_returns_only_the_new_block() {
        let first: Vec<u8> = (0..200_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let second = b"short block".repeat(3);
        let mut buffer = Vec::new();
        let n = Codec::Deflate
            .decompress_into(&Codec::Deflate.compress(&first).unwrap(), &mut buffer)
            .unwrap();
        assert_eq!(&buffer[..n], &first[..]);
        for codec in [Codec::Deflate, Codec::Snappy, Codec::Zstandard, Codec::Null] {
            let packed = codec.compress(&second).unwrap();
            let n = codec.decompress_into(&packed, &mut buffer).unwrap();
            assert_eq!(&buffer[..n], &second[..], "{codec:?}");
        }
    }

    #[test]
    fn deflate_grows_past_its_first_guess() {
        // 16 MiB of one byte packs to a few KiB: far past the 8x first guess.
        let data = vec![7u8; 16 << 20];
        let packed = Codec::Deflate.compress(&data).unwrap();
        assert!(packed.len() * 8 < data.len());
        let mut out = Vec::new();
        Codec::Deflate.decompress(&packed, &mut out).unwrap();
        assert_eq!(out, data);
    }

    #[test]
    fn a_cut_deflate_stream_keeps_what_decodes() {
        let data: Vec<u8> = (0..50_000u32).flat_map(|i| i.to_le_bytes()).collect();
        let packed = Codec::Deflate.compress(&data).unwrap();
        let cut = &packed[..packed.len() / 2];
        let mut out = Vec::new();
        // libdeflate refuses a cut stream; the streaming inflater returns the decoded prefix,
        // and the Avro layer then refuses the block whose objects do not fit.
        Codec::Deflate.decompress(cut, &mut out).unwrap();
        assert!(!out.is_empty() && out.len() < data.len());
        assert_eq!(out[..], data[..out.len()]);
    }

    #[test]
    fn garbage_does_not_decompress() {
        for codec in [Codec::Deflate, Codec::Zstandard, Codec::Snappy] {
            assert!(
                codec.decompress(&[0xff; 40], &mut Vec::new()).is_err(),
                "{codec:?}"
            );
        }
        assert!(Codec::from_name(Some("bzip2")).is_err());
    }
}
