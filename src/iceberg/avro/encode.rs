//! Avro binary encoding: primitives, and an `apache_avro::types::Value` written by a schema [`Node`].
//!
//! Records are matched by field name (a missing field is written as null when the field's type allows
//! null). Union branches come from `Value::Union` when given, else the first branch that accepts the
//! value; `int` values widen to `long`/`float`/`double` as Avro promotion allows, and logical-type
//! variants (`Date`, `TimestampMicros`, `Uuid`, ...) are written as their underlying type.

use apache_avro::types::Value;

use super::schema::Node;

/// Appends a zig-zag varint.
pub fn write_long(out: &mut Vec<u8>, v: i64) {
    let mut n = ((v << 1) ^ (v >> 63)) as u64;
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Appends `bytes`/`string` content with its length.
pub fn write_bytes(out: &mut Vec<u8>, b: &[u8]) {
    write_long(out, b.len() as i64);
    out.extend_from_slice(b);
}

/// Writes `value` as type `node`; the error names the path of the value that does not fit.
pub fn encode_value(out: &mut Vec<u8>, node: &Node, value: &Value) -> Result<(), String> {
    encode_at(out, node, value).map_err(|e| {
        let (path, msg) = e.split_once(": ").unwrap_or(("", &e));
        let path = path.strip_prefix('.').unwrap_or(path);
        let path = if path.is_empty() { "<root>" } else { path };
        format!("value at {path} {msg}")
    })
}

fn mismatch(node: &Node, value: &Value) -> String {
    let what = match node {
        Node::Record(r) => format!("record {}", r.name),
        other => format!("{other:?}").chars().take(40).collect(),
    };
    format!(": does not fit Avro type {what}: {value:?}")
}

fn as_i64(value: &Value) -> Option<i64> {
    match value {
        Value::Int(v) | Value::Date(v) | Value::TimeMillis(v) => Some(i64::from(*v)),
        Value::Long(v)
        | Value::TimeMicros(v)
        | Value::TimestampMillis(v)
        | Value::TimestampMicros(v)
        | Value::TimestampNanos(v)
        | Value::LocalTimestampMillis(v)
        | Value::LocalTimestampMicros(v)
        | Value::LocalTimestampNanos(v) => Some(*v),
        _ => None,
    }
}

fn fixed_bytes(value: &Value) -> Option<Vec<u8>> {
    match value {
        Value::Fixed(_, b) | Value::Bytes(b) => Some(b.clone()),
        Value::Uuid(u) => Some(u.as_bytes().to_vec()),
        _ => None,
    }
}

/// Whether `node` can hold `value` (used to choose a union branch).
fn accepts(node: &Node, value: &Value) -> bool {
    match (node, value) {
        (Node::Null, Value::Null) | (Node::Boolean, Value::Boolean(_)) => true,
        (Node::Int, Value::Int(_) | Value::Date(_) | Value::TimeMillis(_)) => true,
        (Node::Long, v) => as_i64(v).is_some(),
        (Node::Float, Value::Float(_)) => true,
        (Node::Double, Value::Double(_) | Value::Float(_)) => true,
        (Node::Bytes, Value::Bytes(_)) => true,
        (Node::String, Value::String(_)) => true,
        (Node::Fixed { size, .. }, v) => fixed_bytes(v).is_some_and(|b| b.len() == *size),
        (Node::Enum { .. }, Value::Enum(..) | Value::String(_)) => true,
        (Node::Array(_), Value::Array(_)) | (Node::Map(_), Value::Map(_)) => true,
        (Node::Record(_), Value::Record(_)) => true,
        _ => false,
    }
}

fn encode_at(out: &mut Vec<u8>, node: &Node, value: &Value) -> Result<(), String> {
    if let (Value::Union(_, inner), false) = (value, matches!(node, Node::Union(_))) {
        return encode_at(out, node, inner);
    }
    match (node, value) {
        (Node::Null, Value::Null) => {}
        (Node::Boolean, Value::Boolean(b)) => out.push(u8::from(*b)),
        (Node::Int, Value::Int(v) | Value::Date(v) | Value::TimeMillis(v)) => {
            write_long(out, i64::from(*v))
        }
        (Node::Long, v) if as_i64(v).is_some() => write_long(out, as_i64(v).unwrap_or_default()),
        (Node::Float, Value::Float(f)) => out.extend_from_slice(&f.to_le_bytes()),
        (Node::Double, Value::Double(f)) => out.extend_from_slice(&f.to_le_bytes()),
        (Node::Double, Value::Float(f)) => out.extend_from_slice(&f64::from(*f).to_le_bytes()),
        (Node::Bytes, Value::Bytes(b)) => write_bytes(out, b),
        (Node::String, Value::String(s)) => write_bytes(out, s.as_bytes()),
        (Node::Fixed { size, .. }, v) => match fixed_bytes(v) {
            Some(b) if b.len() == *size => out.extend_from_slice(&b),
            _ => return Err(mismatch(node, value)),
        },
        (Node::Enum { symbols, .. }, Value::Enum(_, s) | Value::String(s)) => {
            let i = symbols
                .iter()
                .position(|x| x == s)
                .ok_or_else(|| mismatch(node, value))?;
            write_long(out, i as i64);
        }
        (Node::Union(branches), value) => encode_union(out, branches, value)?,
        (Node::Array(items), Value::Array(values)) => {
            if !values.is_empty() {
                write_long(out, values.len() as i64);
                for (i, v) in values.iter().enumerate() {
                    encode_at(out, items, v).map_err(|e| format!("[{i}]{e}"))?;
                }
            }
            out.push(0);
        }
        (Node::Map(items), Value::Map(entries)) => {
            if !entries.is_empty() {
                write_long(out, entries.len() as i64);
                let mut sorted: Vec<_> = entries.iter().collect();
                sorted.sort_by(|a, b| a.0.cmp(b.0));
                for (k, v) in sorted {
                    write_bytes(out, k.as_bytes());
                    encode_at(out, items, v).map_err(|e| format!("[{k}]{e}"))?;
                }
            }
            out.push(0);
        }
        (Node::Record(record), Value::Record(fields)) => {
            for f in &record.fields {
                let v = fields
                    .iter()
                    .find(|(n, _)| *n == f.name)
                    .map_or(&Value::Null, |(_, v)| v);
                encode_at(out, &f.node, v).map_err(|e| format!(".{}{e}", f.name))?;
            }
        }
        _ => return Err(mismatch(node, value)),
    }
    Ok(())
}

fn encode_union(out: &mut Vec<u8>, branches: &[Node], value: &Value) -> Result<(), String> {
    if let Value::Union(i, inner) = value {
        if let Some(branch) = branches.get(*i as usize)
            && accepts(branch, inner)
        {
            write_long(out, i64::from(*i));
            return encode_at(out, branch, inner);
        }
        return encode_union(out, branches, inner);
    }
    let index = branches
        .iter()
        .position(|b| accepts(b, value))
        .ok_or_else(|| mismatch(&Node::Union(branches.to_vec()), value))?;
    write_long(out, index as i64);
    encode_at(out, &branches[index], value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iceberg::avro::schema::parse_schema;
    use crate::iceberg::avro::value::decode_value;

    #[test]
    fn record_round_trip_with_defaults_and_promotion() {
        let node = parse_schema(
            r#"{"type":"record","name":"r","fields":[
              {"name":"a","type":"long"},{"name":"b","type":["null","string"]},
              {"name":"c","type":["long","null"]},{"name":"d","type":{"type":"array","items":"long"}}]}"#,
        )
        .unwrap();
        let v = Value::Record(vec![
            ("a".into(), Value::Int(5)),
            ("c".into(), Value::Long(-3)),
            (
                "d".into(),
                Value::Array(vec![Value::Int(1), Value::Long(2)]),
            ),
        ]);
        let mut out = Vec::new();
        encode_value(&mut out, &node, &v).unwrap();
        let back =
            decode_value(&mut crate::iceberg::avro::cursor::Cursor::new(&out), &node).unwrap();
        assert_eq!(
            back,
            Value::Record(vec![
                ("a".into(), Value::Long(5)),
                ("b".into(), Value::Union(0, Box::new(Value::Null))),
                ("c".into(), Value::Union(0, Box::new(Value::Long(-3)))),
                (
                    "d".into(),
                    Value::Array(vec![Value::Long(1), Value::Long(2)])
                ),
            ])
        );
    }

    #[test]
    fn mismatch_names_the_path() {
        let node =
            parse_schema(r#"{"type":"record","name":"r","fields":[{"name":"a","type":"long"}]}"#)
                .unwrap();
        let err = encode_value(&mut Vec::new(), &node, &Value::Record(vec![])).unwrap_err();
        assert!(err.contains("value at a"), "{err}");
    }
}
