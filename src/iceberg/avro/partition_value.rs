//! The partition tuple at the format edge: decoded from a manifest entry's `partition` datum into
//! the domain [`PartitionTuple`], and turned back into an Avro value for the encoder.
//!
//! Decoding reads the datum by its writer schema: an optional field's union gives its branch's
//! value (or null), an `enum` its symbol as a string; a nested record, array or map is not a
//! partition value and makes the entry malformed. Writing gives bare values: the encoder picks, in
//! each field's union, the first branch that holds the value's kind (the null branch for null), so
//! a tuple written with the schema it was read with keeps every value and branch.

use apache_avro::types::Value;

use super::cursor::{Cursor, Decoded, Malformed};
use super::schema::Node;
use crate::iceberg::partition_tuple::{PartitionTuple, PartitionValue};

/// Reads the `partition` datum of type `node` (a record, possibly inside a union; null is the
/// empty tuple).
pub fn decode_partition(c: &mut Cursor<'_>, node: &Node) -> Decoded<PartitionTuple> {
    match node {
        Node::Null => Ok(PartitionTuple::default()),
        Node::Union(branches) => {
            let i = c.read_branch(branches.len())?;
            decode_partition(c, &branches[i])
        }
        Node::Record(record) => {
            let mut fields = Vec::with_capacity(record.fields.len());
            for f in &record.fields {
                fields.push((f.name.clone(), decode_partition_value(c, &f.node)?));
            }
            Ok(PartitionTuple::new(fields))
        }
        _ => Err(Malformed("data_file.partition is not a record")),
    }
}

fn decode_partition_value(c: &mut Cursor<'_>, node: &Node) -> Decoded<PartitionValue> {
    Ok(match node {
        Node::Null => PartitionValue::Null,
        Node::Boolean => PartitionValue::Boolean(c.read_bool()?),
        Node::Int => PartitionValue::Int(c.read_int()?),
        Node::Long => PartitionValue::Long(c.read_long()?),
        Node::Float => PartitionValue::Float(c.read_float()?),
        Node::Double => PartitionValue::Double(c.read_double()?),
        Node::Bytes => PartitionValue::Bytes(c.read_bytes()?.to_vec()),
        Node::String => PartitionValue::String(c.read_str()?.to_string()),
        Node::Fixed { size, .. } => PartitionValue::Fixed(c.take(*size)?.to_vec()),
        Node::Enum { symbols, .. } => {
            let i = c
                .read_branch(symbols.len())
                .map_err(|_| Malformed("enum index out of range"))?;
            PartitionValue::String(symbols[i].clone())
        }
        Node::Union(branches) => {
            let i = c.read_branch(branches.len())?;
            decode_partition_value(c, &branches[i])?
        }
        Node::Record(_) | Node::Array(_) | Node::Map(_) => {
            return Err(Malformed("a partition field is not a primitive"));
        }
    })
}

/// `tuple` as the Avro record the encoder writes (bare values: see the module comment).
pub fn partition_to_avro(tuple: &PartitionTuple) -> Value {
    Value::Record(
        tuple
            .fields
            .iter()
            .map(|(name, v)| (name.clone(), value_to_avro(v)))
            .collect(),
    )
}

fn value_to_avro(v: &PartitionValue) -> Value {
    match v {
        PartitionValue::Null => Value::Null,
        PartitionValue::Boolean(b) => Value::Boolean(*b),
        PartitionValue::Int(i) => Value::Int(*i),
        PartitionValue::Long(l) => Value::Long(*l),
        PartitionValue::Float(f) => Value::Float(*f),
        PartitionValue::Double(d) => Value::Double(*d),
        PartitionValue::String(s) => Value::String(s.clone()),
        PartitionValue::Bytes(b) => Value::Bytes(b.clone()),
        PartitionValue::Fixed(b) => Value::Fixed(b.len(), b.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iceberg::avro::encode::encode_value;
    use crate::iceberg::avro::schema::parse_schema;

    fn round_trip(schema: &str, tuple: &PartitionTuple) -> (Vec<u8>, PartitionTuple) {
        let node = parse_schema(schema).unwrap();
        let mut out = Vec::new();
        encode_value(&mut out, &node, &partition_to_avro(tuple)).unwrap();
        let mut c = Cursor::new(&out);
        let back = decode_partition(&mut c, &node).unwrap();
        (out, back)
    }

    #[test]
    fn every_kind_round_trips_with_null_first_or_last_unions() {
        let tuple = PartitionTuple::new(vec![
            ("b".into(), PartitionValue::Boolean(true)),
            ("i".into(), PartitionValue::Int(-3)),
            ("l".into(), PartitionValue::Long(1 << 40)),
            ("f".into(), PartitionValue::Float(1.5)),
            ("d".into(), PartitionValue::Double(f64::NAN)),
            ("s".into(), PartitionValue::String("a/b=é".into())),
            ("y".into(), PartitionValue::Bytes(vec![0, 255])),
            ("x".into(), PartitionValue::Fixed(vec![0, 0, 5, 0x78])),
            ("n".into(), PartitionValue::Null),
        ]);
        let types = [
            ("b", "\"boolean\""),
            ("i", r#"{"type":"int","logicalType":"date"}"#),
            ("l", r#"{"type":"long","logicalType":"timestamp-micros"}"#),
            ("f", "\"float\""),
            ("d", "\"double\""),
            ("s", "\"string\""),
            ("y", "\"bytes\""),
            ("x", r#"{"type":"fixed","name":"dec","size":4}"#),
            ("n", "\"int\""),
        ];
        for null_first in [true, false] {
            let fields: Vec<String> = types
                .iter()
                .map(|(n, t)| {
                    let union = if null_first {
                        format!(r#"["null",{t}]"#)
                    } else {
                        format!(r#"[{t},"null"]"#)
                    };
                    format!(r#"{{"name":"{n}","type":{union}}}"#)
                })
                .collect();
            let schema = format!(
                r#"{{"type":"record","name":"r102","fields":[{}]}}"#,
                fields.join(",")
            );
            let (bytes, back) = round_trip(&schema, &tuple);
            // NaN != NaN: compare the rest, and the NaN by its bits.
            for ((n, a), (m, b)) in tuple.fields.iter().zip(&back.fields) {
                assert_eq!(n, m);
                match (a, b) {
                    (PartitionValue::Double(x), PartitionValue::Double(y)) => {
                        assert_eq!(x.to_bits(), y.to_bits())
                    }
                    _ => assert_eq!(a, b, "{n}"),
                }
            }
            // The branch written: the null branch for null, the other one otherwise.
            let (value_branch, null_branch) = if null_first { (2, 0) } else { (0, 2) };
            assert_eq!(bytes[0], value_branch, "zig-zag branch of the first field");
            assert_eq!(*bytes.last().unwrap(), null_branch);
            // Writing it again with the same schema gives the same bytes.
            let (again, _) = round_trip(&schema, &back);
            assert_eq!(again, bytes);
        }
    }

    #[test]
    fn enums_read_as_strings_and_nested_values_are_malformed() {
        let schema = r#"{"type":"record","name":"r","fields":[
            {"name":"e","type":{"type":"enum","name":"E","symbols":["a","b"]}}]}"#;
        let tuple = PartitionTuple::new(vec![("e".into(), PartitionValue::String("b".into()))]);
        let (bytes, back) = round_trip(schema, &tuple);
        assert_eq!(bytes, [2]);
        assert_eq!(back, tuple);

        let nested = parse_schema(
            r#"{"type":"record","name":"r","fields":[{"name":"a","type":{"type":"array","items":"int"}}]}"#,
        )
        .unwrap();
        let mut c = Cursor::new(&[0u8]);
        assert!(decode_partition(&mut c, &nested).is_err());
        let mut c = Cursor::new(&[]);
        assert_eq!(
            decode_partition(&mut c, &Node::Null).unwrap(),
            PartitionTuple::default()
        );
    }
}
