//! The manifest-list hot path: a plan compiled once per file from its writer schema that reads only
//! the fields maintenance needs (`manifest_path`, `manifest_length`, `partition_spec_id`, `content`,
//! `added_snapshot_id`, and the added / existing / deleted file counts) and skips every other field by
//! schema, without allocating. Fields are matched by name exactly as the generic reader
//! ([`crate::iceberg::manifest_list::read_manifest_list`]) matches them, v1's
//! `added_data_files_count` / `existing_data_files_count` / `deleted_data_files_count` spellings included, and the same values
//! are refused (a null required field, a content other than 0 or 1, a spec id out of `int` range).

use super::cursor::{Cursor, Decoded, Malformed};
use super::schema::{Node, Record};
use crate::iceberg::spec::{ManifestContent, SnapshotId};

/// The projected fields of one manifest-list entry; the path borrows the decoded block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListEntryRef<'a> {
    pub manifest_path: &'a str,
    pub manifest_length: i64,
    pub content: ManifestContent,
    pub added_snapshot_id: SnapshotId,
    pub added_files_count: Option<i64>,
    pub existing_files_count: Option<i64>,
    pub deleted_files_count: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Length,
    SpecId,
    Content,
    AddedSnapshot,
    Added,
    Existing,
    Deleted,
}

/// Each slot with the field names that fill it, first match wins (as the generic reader).
const LONGS: [(Slot, &[&str]); 7] = [
    (Slot::Length, &["manifest_length"]),
    (Slot::SpecId, &["partition_spec_id"]),
    (Slot::Content, &["content"]),
    (Slot::AddedSnapshot, &["added_snapshot_id"]),
    (
        Slot::Added,
        &["added_files_count", "added_data_files_count"],
    ),
    (
        Slot::Existing,
        &["existing_files_count", "existing_data_files_count"],
    ),
    (
        Slot::Deleted,
        &["deleted_files_count", "deleted_data_files_count"],
    ),
];

#[derive(Debug, Clone)]
enum Step {
    Skip(Node),
    /// A long or int, plain or in a union with null at `null_index`.
    Long(Slot, Option<usize>),
    Path(Option<usize>),
}

/// A compiled projection of one manifest-list schema.
#[derive(Debug, Clone)]
pub struct ListPlan {
    steps: Vec<Step>,
}

/// `Some(None)` for a plain value of the wanted kind, `Some(Some(i))` for a two-branch union with
/// null at `i`, `None` for anything else.
fn shape(node: &Node, want_string: bool) -> Option<Option<usize>> {
    let fits = |n: &Node| match n {
        Node::String => want_string,
        Node::Int | Node::Long => !want_string,
        _ => false,
    };
    match node {
        Node::Union(b) if b.len() == 2 => match (&b[0], &b[1]) {
            (Node::Null, t) if fits(t) => Some(Some(0)),
            (t, Node::Null) if fits(t) => Some(Some(1)),
            _ => None,
        },
        n if fits(n) => Some(None),
        _ => None,
    }
}

fn position(record: &Record, names: &[&str]) -> Option<usize> {
    names
        .iter()
        .find_map(|n| record.fields.iter().position(|f| f.name == *n))
}

impl ListPlan {
    /// Compiles the plan; the error names a required field that is missing or of another type.
    pub fn new(schema: &Node) -> Result<ListPlan, String> {
        let record = schema
            .as_record()
            .ok_or("manifest list schema is not a record")?;
        for required in [
            "manifest_path",
            "manifest_length",
            "partition_spec_id",
            "added_snapshot_id",
        ] {
            if record.field(required).is_none() {
                return Err(format!("manifest list schema has no {required} field"));
            }
        }
        let mut steps: Vec<Step> = record
            .fields
            .iter()
            .map(|f| Step::Skip(f.node.clone()))
            .collect();
        let path = position(record, &["manifest_path"]).ok_or("no manifest_path field")?;
        steps[path] = Step::Path(
            shape(&record.fields[path].node, true).ok_or("manifest_path is not a string")?,
        );
        for (slot, names) in LONGS {
            let Some(i) = position(record, names) else {
                continue;
            };
            let s = shape(&record.fields[i].node, false)
                .ok_or_else(|| format!("{} is not an integer", names[0]))?;
            steps[i] = Step::Long(slot, s);
        }
        Ok(ListPlan { steps })
    }

    /// Decodes one entry.
    pub fn decode<'a>(&self, c: &mut Cursor<'a>) -> Decoded<ListEntryRef<'a>> {
        let mut longs = [None; 7];
        let mut path = None;
        for step in &self.steps {
            match step {
                Step::Skip(node) => c.skip(node)?,
                Step::Long(slot, null) => {
                    if !is_null(c, *null)? {
                        longs[*slot as usize] = Some(c.read_long()?);
                    }
                }
                Step::Path(null) => {
                    if !is_null(c, *null)? {
                        path = Some(c.read_str()?);
                    }
                }
            }
        }
        let required = |slot: Slot, what: &'static str| longs[slot as usize].ok_or(Malformed(what));
        let spec_id = required(Slot::SpecId, "partition_spec_id is missing or null")?;
        i32::try_from(spec_id).map_err(|_| Malformed("partition_spec_id out of range"))?;
        let content = match longs[Slot::Content as usize].unwrap_or(0) {
            0 => ManifestContent::Data,
            1 => ManifestContent::Deletes,
            _ => return Err(Malformed("content is not 0 or 1")),
        };
        let count = |slot: Slot| {
            longs[slot as usize]
                .map(|v| {
                    i32::try_from(v)
                        .map(i64::from)
                        .map_err(|_| Malformed("file count out of int range"))
                })
                .transpose()
        };
        Ok(ListEntryRef {
            manifest_path: path.ok_or(Malformed("manifest_path is missing or not a string"))?,
            manifest_length: required(Slot::Length, "manifest_length is missing or null")?,
            content,
            added_snapshot_id: required(
                Slot::AddedSnapshot,
                "added_snapshot_id is missing or null",
            )?,
            added_files_count: count(Slot::Added)?,
            existing_files_count: count(Slot::Existing)?,
            deleted_files_count: count(Slot::Deleted)?,
        })
    }
}

#[inline]
fn is_null(c: &mut Cursor<'_>, null: Option<usize>) -> Decoded<bool> {
    match null {
        None => Ok(false),
        Some(i) => Ok(c.read_branch(2)? == i),
    }
}

#[cfg(test)]
mod tests {
    use crate::iceberg::avro::Codec;
    use crate::iceberg::manifest_list::{
        ManifestFile, ManifestListMeta, for_each_list_entry, read_manifest_list,
        write_manifest_list,
    };
    use crate::iceberg::spec::{FormatVersion, ManifestContent};

    fn entry(i: i64, version: FormatVersion) -> ManifestFile {
        let deletes = version != FormatVersion::V1 && i % 3 == 1;
        ManifestFile {
            manifest_path: format!("s3://b/t/metadata/m{i}.avro"),
            manifest_length: 1000 + i,
            partition_spec_id: 0,
            content: if deletes {
                ManifestContent::Deletes
            } else {
                ManifestContent::Data
            },
            sequence_number: i,
            min_sequence_number: i,
            added_snapshot_id: 40 + i,
            added_files_count: Some(i32::try_from(i).unwrap()),
            existing_files_count: Some(if i % 2 == 0 { 7 } else { 0 }),
            deleted_files_count: Some(i32::from(i % 4 == 3)),
            added_rows_count: Some(10),
            existing_rows_count: Some(0),
            deleted_rows_count: Some(0),
            partitions: None,
            key_metadata: None,
            first_row_id: None,
        }
    }

    #[test]
    fn the_projection_agrees_with_the_generic_reader() {
        for version in [FormatVersion::V1, FormatVersion::V2, FormatVersion::V3] {
            let manifests: Vec<_> = (0..9).map(|i| entry(i, version)).collect();
            let meta = ManifestListMeta {
                format_version: version,
                snapshot_id: 48,
                parent_snapshot_id: Some(47),
                sequence_number: 9,
                first_row_id: Some(0),
            };
            for codec in [Codec::Null, Codec::Deflate] {
                let bytes = write_manifest_list(&meta, &manifests, codec).unwrap().bytes;
                let generic = read_manifest_list(&bytes, "snap.avro").unwrap();
                let mut projected = Vec::new();
                for_each_list_entry(&bytes, "snap.avro", |e| {
                    projected.push((
                        e.manifest_path.to_string(),
                        e.manifest_length,
                        e.content,
                        e.added_snapshot_id,
                        e.added_files_count,
                        e.existing_files_count,
                        e.deleted_files_count,
                    ));
                })
                .unwrap();
                let expected: Vec<_> = generic
                    .iter()
                    .map(|m| {
                        (
                            m.manifest_path.clone(),
                            m.manifest_length,
                            m.content,
                            m.added_snapshot_id,
                            m.added_files_count.map(i64::from),
                            m.existing_files_count.map(i64::from),
                            m.deleted_files_count.map(i64::from),
                        )
                    })
                    .collect();
                assert_eq!(projected, expected, "{version:?} {codec:?}");
            }
        }
    }

    #[test]
    fn a_corrupt_list_is_refused_naming_the_file() {
        let meta = ManifestListMeta {
            format_version: FormatVersion::V2,
            snapshot_id: 1,
            parent_snapshot_id: None,
            sequence_number: 1,
            first_row_id: None,
        };
        let manifests = [entry(0, FormatVersion::V2)];
        let bytes = write_manifest_list(&meta, &manifests, Codec::Null)
            .unwrap()
            .bytes;
        let cut = &bytes[..bytes.len() - 20];
        let err = for_each_list_entry(cut, "snap-1.avro", |_| {}).unwrap_err();
        assert!(err.to_string().contains("snap-1.avro"), "{err}");
        assert!(read_manifest_list(cut, "snap-1.avro").is_err());
    }
}
