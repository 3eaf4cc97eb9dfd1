//! Decoding one Avro datum into a generic `apache_avro::types::Value`, driven by our schema [`Node`].
//!
//! Used for the small manifest list and for the parts of a manifest entry we keep untyped (partition
//! tuples, unknown fields). Values come out as the plain Avro variants (`Int`, `Long`, `Bytes`, `Fixed`,
//! `Union`, ...), never as logical types, so writing them back with the same schema is lossless.
//! Containers are only pre-sized up to the bytes that remain.

use std::collections::HashMap;

use apache_avro::types::Value;

use super::cursor::{Cursor, Decoded, Malformed};
use super::schema::Node;

/// Reads one value of type `node`.
pub fn decode_value(c: &mut Cursor<'_>, node: &Node) -> Decoded<Value> {
    Ok(match node {
        Node::Null => Value::Null,
        Node::Boolean => Value::Boolean(c.read_bool()?),
        Node::Int => Value::Int(c.read_int()?),
        Node::Long => Value::Long(c.read_long()?),
        Node::Float => Value::Float(c.read_float()?),
        Node::Double => Value::Double(c.read_double()?),
        Node::Bytes => Value::Bytes(c.read_bytes()?.to_vec()),
        Node::String => Value::String(c.read_str()?.to_string()),
        Node::Fixed { size, .. } => Value::Fixed(*size, c.take(*size)?.to_vec()),
        Node::Enum { symbols, .. } => {
            let i = c
                .read_branch(symbols.len())
                .map_err(|_| Malformed("enum index out of range"))?;
            Value::Enum(i as u32, symbols[i].clone())
        }
        Node::Union(branches) => {
            let i = c.read_branch(branches.len())?;
            Value::Union(i as u32, Box::new(decode_value(c, &branches[i])?))
        }
        Node::Record(record) => {
            let mut fields = Vec::with_capacity(record.fields.len());
            for f in &record.fields {
                fields.push((f.name.clone(), decode_value(c, &f.node)?));
            }
            Value::Record(fields)
        }
        Node::Array(items) => {
            let mut out = Vec::new();
            read_blocks(c, items, false, |c| {
                out.push(decode_value(c, items)?);
                Ok(())
            })?;
            Value::Array(out)
        }
        Node::Map(values) => {
            let mut out = HashMap::new();
            read_blocks(c, values, true, |c| {
                let key = c.read_str()?.to_string();
                out.insert(key, decode_value(c, values)?);
                Ok(())
            })?;
            Value::Map(out)
        }
    })
}

/// Calls `item` once per element of an array or map value.
pub fn read_blocks(
    c: &mut Cursor<'_>,
    item_node: &Node,
    keyed: bool,
    mut item: impl FnMut(&mut Cursor<'_>) -> Decoded<()>,
) -> Decoded<()> {
    let may_be_empty = !keyed && item_node.encodes_empty();
    let mut total = 0usize;
    loop {
        let (count, _size) = c.read_block_header(may_be_empty)?;
        if count == 0 {
            return Ok(());
        }
        total = total.saturating_add(count);
        if may_be_empty && total > MAX_EMPTY_ITEMS {
            return Err(Malformed("too many zero-size items"));
        }
        for _ in 0..count {
            item(c)?;
        }
    }
}

/// Bound on items that take no bytes (`null`s): nothing else limits how many a file may claim.
const MAX_EMPTY_ITEMS: usize = 1 << 20;

/// Unwraps `Value::Union` wrappers.
pub fn strip_union(v: &Value) -> &Value {
    match v {
        Value::Union(_, inner) => strip_union(inner),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iceberg::avro::encode::write_long;
    use crate::iceberg::avro::schema::parse_schema;

    #[test]
    fn negative_count_blocks_decode() {
        let node = parse_schema(r#"{"type":"array","items":"long"}"#).unwrap();
        let mut buf = Vec::new();
        write_long(&mut buf, -2);
        write_long(&mut buf, 2);
        write_long(&mut buf, 3);
        write_long(&mut buf, 4);
        buf.push(0);
        let v = decode_value(&mut Cursor::new(&buf), &node).unwrap();
        assert_eq!(v, Value::Array(vec![Value::Long(3), Value::Long(4)]));
        let mut c = Cursor::new(&buf);
        c.skip(&node).unwrap();
        assert_eq!(c.remaining(), 0);
    }

    #[test]
    fn huge_null_array_is_refused() {
        let node = parse_schema(r#"{"type":"array","items":"null"}"#).unwrap();
        let mut buf = Vec::new();
        write_long(&mut buf, i64::MAX);
        assert!(decode_value(&mut Cursor::new(&buf), &node).is_err());
    }
}
