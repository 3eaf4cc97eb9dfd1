//! Avro binary decoding primitives over a byte slice, and skipping a value by its schema.
//!
//! Rules (Avro 1.11 spec, "Binary Encoding"): `int`/`long` are zig-zag varints (at most 10 bytes);
//! `bytes`/`string` are a long length then the bytes; arrays and maps are blocks of `count` items
//! ended by a zero count, where a negative count `-n` is followed by the block's size in bytes.
//! Every length or count read here is checked against the bytes that remain before it is used, so
//! a corrupt file fails with [`Malformed`] instead of allocating or looping without bound.

use super::schema::Node;

/// Why a datum could not be decoded; turned into an `INCORRECT_DATA` error naming the file by the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

/// Result of a decoding step.
pub type Decoded<T> = std::result::Result<T, Malformed>;

const TRUNCATED: Malformed = Malformed("unexpected end of data");

/// A read position in an Avro-encoded byte slice.
#[derive(Debug, Clone)]
pub struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Cursor { buf, pos: 0 }
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes not yet consumed.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// A zig-zag varint `long`.
    #[inline]
    pub fn read_long(&mut self) -> Decoded<i64> {
        let mut value: u64 = 0;
        let mut shift = 0u32;
        loop {
            let byte = *self.buf.get(self.pos).ok_or(TRUNCATED)?;
            self.pos += 1;
            if shift == 63 && byte > 1 {
                return Err(Malformed("varint overflows 64 bits"));
            }
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                break;
            }
            shift += 7;
            if shift > 63 {
                return Err(Malformed("varint longer than 10 bytes"));
            }
        }
        Ok(((value >> 1) as i64) ^ -((value & 1) as i64))
    }

    /// A zig-zag varint `int` (a `long` that must fit 32 bits).
    #[inline]
    pub fn read_int(&mut self) -> Decoded<i32> {
        i32::try_from(self.read_long()?).map_err(|_| Malformed("int value out of 32-bit range"))
    }

    /// A non-negative length that fits in the remaining bytes.
    #[inline]
    fn read_len(&mut self) -> Decoded<usize> {
        let len = self.read_long()?;
        let len = usize::try_from(len).map_err(|_| Malformed("negative length"))?;
        if len > self.remaining() {
            return Err(Malformed("length exceeds the remaining bytes"));
        }
        Ok(len)
    }

    /// `n` raw bytes.
    #[inline]
    pub fn take(&mut self, n: usize) -> Decoded<&'a [u8]> {
        if n > self.remaining() {
            return Err(TRUNCATED);
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// A `bytes` value, borrowed.
    #[inline]
    pub fn read_bytes(&mut self) -> Decoded<&'a [u8]> {
        let len = self.read_len()?;
        self.take(len)
    }

    /// A `string` value, borrowed; must be UTF-8.
    #[inline]
    pub fn read_str(&mut self) -> Decoded<&'a str> {
        std::str::from_utf8(self.read_bytes()?).map_err(|_| Malformed("string is not valid UTF-8"))
    }

    /// A `boolean` (one byte, 0 or 1).
    pub fn read_bool(&mut self) -> Decoded<bool> {
        match self.take(1)? {
            [0] => Ok(false),
            [1] => Ok(true),
            _ => Err(Malformed("boolean byte is neither 0 nor 1")),
        }
    }

    /// A `float` (4 bytes little-endian).
    pub fn read_float(&mut self) -> Decoded<f32> {
        let b = self.take(4)?;
        Ok(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A `double` (8 bytes little-endian).
    pub fn read_double(&mut self) -> Decoded<f64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(f64::from_le_bytes(a))
    }

    /// A union branch index, checked against the number of branches.
    #[inline]
    pub fn read_branch(&mut self, branches: usize) -> Decoded<usize> {
        let index = self.read_long()?;
        usize::try_from(index)
            .ok()
            .filter(|i| *i < branches)
            .ok_or(Malformed("union branch index out of range"))
    }

    /// The header of an array or map block: item count (0 ends the value) and, for the negative-count
    /// form, the block's byte size. The count is bounded by the remaining bytes unless `items_may_be_empty`.
    #[inline]
    pub fn read_block_header(
        &mut self,
        items_may_be_empty: bool,
    ) -> Decoded<(usize, Option<usize>)> {
        let count = self.read_long()?;
        let (count, size) = if count < 0 {
            let count = count
                .checked_neg()
                .ok_or(Malformed("block count overflows"))?;
            (count, Some(self.read_len()?))
        } else {
            (count, None)
        };
        let count = usize::try_from(count).map_err(|_| Malformed("block count too large"))?;
        if !items_may_be_empty && count > self.remaining() {
            return Err(Malformed("block count exceeds the remaining bytes"));
        }
        Ok((count, size))
    }

    /// Skips one value of type `node` without allocating.
    pub fn skip(&mut self, node: &Node) -> Decoded<()> {
        match node {
            Node::Null => Ok(()),
            Node::Boolean => self.take(1).map(drop),
            Node::Int | Node::Long | Node::Enum { .. } => self.read_long().map(drop),
            Node::Float => self.take(4).map(drop),
            Node::Double => self.take(8).map(drop),
            Node::Bytes | Node::String => self.read_bytes().map(drop),
            Node::Fixed { size, .. } => self.take(*size).map(drop),
            Node::Union(branches) => {
                let i = self.read_branch(branches.len())?;
                self.skip(&branches[i])
            }
            Node::Record(record) => record.fields.iter().try_for_each(|f| self.skip(&f.node)),
            Node::Array(items) => self.skip_blocks(items, false),
            Node::Map(values) => self.skip_blocks(values, true),
        }
    }

    fn skip_blocks(&mut self, item: &Node, keyed: bool) -> Decoded<()> {
        let empty_items = !keyed && item.encodes_empty();
        loop {
            let (count, size) = self.read_block_header(empty_items)?;
            if count == 0 {
                return Ok(());
            }
            if let Some(size) = size {
                self.take(size)?;
                continue;
            }
            if empty_items {
                continue;
            }
            for _ in 0..count {
                if keyed {
                    self.read_bytes()?;
                }
                self.skip(item)?;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iceberg::avro::encode::write_long;

    #[test]
    fn longs_round_trip() {
        for v in [
            0i64,
            1,
            -1,
            63,
            -64,
            64,
            300,
            i32::MAX as i64,
            i64::MAX,
            i64::MIN,
        ] {
            let mut buf = Vec::new();
            write_long(&mut buf, v);
            let mut c = Cursor::new(&buf);
            assert_eq!(c.read_long(), Ok(v));
            assert_eq!(c.remaining(), 0);
        }
    }

    #[test]
    fn overlong_varint_is_malformed() {
        let buf = [0xffu8; 11];
        assert!(Cursor::new(&buf).read_long().is_err());
        let buf = [0x80u8; 3];
        assert_eq!(Cursor::new(&buf).read_long(), Err(TRUNCATED));
    }

    #[test]
    fn huge_length_is_rejected_before_use() {
        let mut buf = Vec::new();
        write_long(&mut buf, i64::MAX);
        assert!(Cursor::new(&buf).read_bytes().is_err());
        let mut buf = Vec::new();
        write_long(&mut buf, -5);
        assert!(Cursor::new(&buf).read_bytes().is_err());
    }

    #[test]
    fn int_out_of_range() {
        let mut buf = Vec::new();
        write_long(&mut buf, i64::from(i32::MAX) + 1);
        assert!(Cursor::new(&buf).read_int().is_err());
    }
}
