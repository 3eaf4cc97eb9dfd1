//! A content file's partition tuple, as the domain model holds it: one value per partition field,
//! by name, in the order the manifest's partition type lists them.
//!
//! Partition fields are Iceberg primitives, so a value is one of the physical kinds a manifest
//! stores them as (Avro's primitives): the Iceberg type a value has (`date`, `timestamp`,
//! `decimal(9,2)`, `uuid`, ...) comes from the partition spec, never from the value. `date` is an
//! [`PartitionValue::Int`] of days, `time` and the timestamps a [`PartitionValue::Long`] in their
//! unit, `decimal` the big-endian two's-complement unscaled bytes of its `fixed` (or `bytes`), and
//! `uuid` its 16 `fixed` bytes.
//!
//! Reading and writing manifests converts at the format edge (`iceberg::avro::partition`): a
//! decoded optional field's union becomes the bare value (or [`PartitionValue::Null`]), and
//! writing picks the union branch the writer schema gives that kind, so a manifest rewritten with
//! its own schema keeps every value and branch.

/// One partition field's value, in its physical kind (see the module comment).
#[derive(Debug, Clone, PartialEq)]
pub enum PartitionValue {
    Null,
    Boolean(bool),
    /// `int`, `date` (days), and the results of `bucket`, `year`, `month`, `hour`.
    Int(i32),
    /// `long`, `time` (microseconds) and the timestamps (micro- or nanoseconds).
    Long(i64),
    Float(f32),
    Double(f64),
    String(String),
    /// `binary`, or a `decimal` stored as bytes.
    Bytes(Vec<u8>),
    /// `fixed[n]`, `uuid`, or a `decimal` stored as fixed.
    Fixed(Vec<u8>),
}

impl PartitionValue {
    /// Whether this is the null value.
    pub fn is_null(&self) -> bool {
        matches!(self, PartitionValue::Null)
    }

    /// An integral value (`Int` or `Long`) as `i64`.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            PartitionValue::Int(i) => Some(i64::from(*i)),
            PartitionValue::Long(l) => Some(*l),
            _ => None,
        }
    }

    /// The bytes of a `Bytes` or `Fixed` value.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            PartitionValue::Bytes(b) | PartitionValue::Fixed(b) => Some(b),
            _ => None,
        }
    }
}

/// A partition tuple: named values, in the partition type's field order (empty when unpartitioned).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PartitionTuple {
    pub fields: Vec<(String, PartitionValue)>,
}

impl PartitionTuple {
    /// The tuple of `fields`.
    pub fn new(fields: Vec<(String, PartitionValue)>) -> PartitionTuple {
        PartitionTuple { fields }
    }

    /// The value of field `name`, when the tuple has it.
    pub fn get(&self, name: &str) -> Option<&PartitionValue> {
        self.fields.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// The values, in field order.
    pub fn values(&self) -> impl Iterator<Item = &PartitionValue> {
        self.fields.iter().map(|(_, v)| v)
    }

    /// Whether the tuple has no field (an unpartitioned file).
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_found_by_name_and_read_as_integers_or_bytes() {
        let t = PartitionTuple::new(vec![
            ("day".into(), PartitionValue::Int(19_875)),
            ("ts".into(), PartitionValue::Long(-7)),
            ("d".into(), PartitionValue::Fixed(vec![0x05, 0x78])),
            ("gone".into(), PartitionValue::Null),
        ]);
        assert_eq!(t.get("ts").and_then(PartitionValue::as_i64), Some(-7));
        assert_eq!(t.get("day").and_then(PartitionValue::as_i64), Some(19_875));
        assert_eq!(
            t.get("d").and_then(PartitionValue::as_bytes),
            Some(&[0x05, 0x78][..])
        );
        assert!(t.get("gone").is_some_and(PartitionValue::is_null));
        assert_eq!(t.get("missing"), None);
        assert_eq!(t.values().count(), 4);
        assert!(PartitionTuple::default().is_empty());
        assert_eq!(PartitionValue::String("x".into()).as_i64(), None);
    }
}
