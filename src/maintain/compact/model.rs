//! What compaction reads of a table, as plain data for the decisions: the live content files of
//! the starting snapshot with their partition, spec and sequence numbers.

use crate::iceberg::manifest::{DataFile, PartitionTuple, PartitionValue};
use crate::iceberg::spec::DataContent;

/// One live (ADDED or EXISTING) content file of the snapshot being compacted.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveFile {
    /// The manifest's `data_file`, every field kept.
    pub file: DataFile,
    /// The partition spec the file was written with.
    pub spec_id: i32,
    /// Whether that spec has no partition fields (its equality delete files apply table-wide).
    pub spec_unpartitioned: bool,
    /// The partition tuple as text (`name=value/...`): files group and deletes scope by
    /// `(spec_id, partition)`.
    pub partition: String,
    /// The data sequence number (inherited when the entry leaves it null).
    pub data_sequence_number: i64,
}

impl LiveFile {
    pub fn path(&self) -> &str {
        &self.file.file_path
    }

    pub fn content(&self) -> DataContent {
        self.file.content
    }

    pub fn is_data(&self) -> bool {
        self.file.content == DataContent::Data
    }

    /// A v3 deletion vector (a Puffin blob naming one data file).
    pub fn is_deletion_vector(&self) -> bool {
        self.file.content == DataContent::PositionDeletes
            && self.file.file_format.eq_ignore_ascii_case("puffin")
    }

    /// Same spec and same partition tuple.
    pub fn same_partition(&self, other: &LiveFile) -> bool {
        self.spec_id == other.spec_id && self.partition == other.partition
    }
}

/// Names the fields of a manifest's partition tuple as its spec does, by position. A partition
/// tuple is positional (Iceberg Java reads it as a `StructLike`), but writers name the Avro
/// record's fields freely: ClickHouse names a `bucket[2](id)` field `id` where the spec says
/// `id_bucket`. Compaction compares tuples, looks fields up and writes tuples by the spec's
/// names, so it renames them once, when reading. A tuple whose field count is not the spec's is
/// left as it is.
pub fn name_partition_fields(partition: &mut PartitionTuple, names: &[String]) {
    if partition.fields.len() != names.len() {
        return;
    }
    for ((name, _), spec_name) in partition.fields.iter_mut().zip(names) {
        if name != spec_name {
            name.clone_from(spec_name);
        }
    }
}

/// The text of a partition tuple: `name=value` pairs joined by `/` (empty when unpartitioned);
/// null is `null`, bytes are hex.
pub fn partition_text(partition: &PartitionTuple) -> String {
    partition
        .fields
        .iter()
        .map(|(name, v)| format!("{name}={}", value_text(v)))
        .collect::<Vec<_>>()
        .join("/")
}

fn value_text(v: &PartitionValue) -> String {
    match v {
        PartitionValue::Null => "null".into(),
        PartitionValue::Boolean(b) => b.to_string(),
        PartitionValue::Int(i) => i.to_string(),
        PartitionValue::Long(l) => l.to_string(),
        PartitionValue::Float(f) => f.to_string(),
        PartitionValue::Double(d) => d.to_string(),
        PartitionValue::String(s) => s.clone(),
        PartitionValue::Bytes(b) | PartitionValue::Fixed(b) => {
            b.iter().map(|x| format!("{x:02x}")).collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_fields_take_the_specs_names() {
        let mut v = PartitionTuple::new(vec![
            ("part".into(), PartitionValue::Int(1)),
            ("id".into(), PartitionValue::Int(0)),
        ]);
        name_partition_fields(&mut v, &["part".into(), "id_bucket".into()]);
        assert_eq!(partition_text(&v), "part=1/id_bucket=0");
        name_partition_fields(&mut v, &["only".into()]);
        assert_eq!(
            partition_text(&v),
            "part=1/id_bucket=0",
            "another count: left"
        );
    }

    #[test]
    fn partition_texts() {
        let v = PartitionTuple::new(vec![
            ("p".into(), PartitionValue::Int(3)),
            ("s".into(), PartitionValue::Null),
            ("b".into(), PartitionValue::Bytes(vec![1, 255])),
        ]);
        assert_eq!(partition_text(&v), "p=3/s=null/b=01ff");
        assert_eq!(partition_text(&PartitionTuple::default()), "");
    }
}
