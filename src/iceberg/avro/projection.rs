//! The hot path: a decode plan that reads only the manifest-entry fields maintenance needs and skips
//! everything else by schema, without allocating.
//!
//! The plan is built once per file from its writer schema. Fields are found by their spec name, else by
//! their spec field id: `status` (0), `snapshot_id` (1), `sequence_number` (3), `file_sequence_number`
//! (4), `data_file` (2) and in it `content` (134), `file_path` (100), `record_count` (103),
//! `file_size_in_bytes` (104), `first_row_id` (142), `referenced_data_file` (143). A field may be a
//! plain `int`/`long`/`string` or a `["null", T]` union in either order. Missing v1 fields take the
//! spec defaults (content = data, sequence numbers null, to be inherited).

use super::cursor::{Cursor, Decoded, Malformed};
use super::schema::{Node, Record};
use crate::iceberg::manifest::EntryRef;
use crate::iceberg::spec::{DataContent, EntryStatus};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Status,
    SnapshotId,
    SequenceNumber,
    FileSequenceNumber,
    Content,
    FilePath,
    RecordCount,
    FileSize,
    FirstRowId,
    ReferencedDataFile,
}

/// How a projected value is encoded: plain, or a two-branch union with null at `null_index`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Plain,
    Nullable { null_index: usize },
}

#[derive(Debug, Clone)]
enum Step {
    Skip(Node),
    Long(Slot, Shape),
    Str(Slot, Shape),
    Record(Vec<Step>),
}

/// A compiled projection for one manifest schema.
#[derive(Debug, Clone)]
pub struct EntryPlan {
    steps: Vec<Step>,
}

const ENTRY_FIELDS: [(&str, i32, Slot); 4] = [
    ("status", 0, Slot::Status),
    ("snapshot_id", 1, Slot::SnapshotId),
    ("sequence_number", 3, Slot::SequenceNumber),
    ("file_sequence_number", 4, Slot::FileSequenceNumber),
];

const DATA_FILE_FIELDS: [(&str, i32, Slot); 6] = [
    ("content", 134, Slot::Content),
    ("file_path", 100, Slot::FilePath),
    ("record_count", 103, Slot::RecordCount),
    ("file_size_in_bytes", 104, Slot::FileSize),
    ("first_row_id", 142, Slot::FirstRowId),
    ("referenced_data_file", 143, Slot::ReferencedDataFile),
];

/// Index of the field named `name`, else the field with `id`.
pub fn find_field(record: &Record, name: &str, id: i32) -> Option<usize> {
    record
        .fields
        .iter()
        .position(|f| f.name == name)
        .or_else(|| record.fields.iter().position(|f| f.field_id == Some(id)))
}

fn shape_of(node: &Node, want_string: bool) -> Option<Shape> {
    let fits = |n: &Node| {
        if want_string {
            matches!(n, Node::String)
        } else {
            matches!(n, Node::Int | Node::Long)
        }
    };
    match node {
        Node::Union(b) if b.len() == 2 => match (&b[0], &b[1]) {
            (Node::Null, t) if fits(t) => Some(Shape::Nullable { null_index: 0 }),
            (t, Node::Null) if fits(t) => Some(Shape::Nullable { null_index: 1 }),
            _ => None,
        },
        n if fits(n) => Some(Shape::Plain),
        _ => None,
    }
}

fn compile(
    record: &Record,
    wanted: &[(&str, i32, Slot)],
    data_file: Option<Vec<Step>>,
) -> Result<Vec<Step>, String> {
    let mut steps: Vec<Step> = record
        .fields
        .iter()
        .map(|f| Step::Skip(f.node.clone()))
        .collect();
    for (name, id, slot) in wanted {
        let Some(i) = find_field(record, name, *id) else {
            continue;
        };
        let want_string = matches!(slot, Slot::FilePath | Slot::ReferencedDataFile);
        let shape = shape_of(&record.fields[i].node, want_string)
            .ok_or_else(|| format!("field {name} has an unexpected Avro type"))?;
        steps[i] = if want_string {
            Step::Str(*slot, shape)
        } else {
            Step::Long(*slot, shape)
        };
    }
    if let Some(sub) = data_file {
        let i = find_field(record, "data_file", 2).ok_or("schema has no data_file field")?;
        steps[i] = Step::Record(sub);
    }
    Ok(steps)
}

impl EntryPlan {
    /// Compiles the plan for a manifest-entry writer schema; the error says which required field is
    /// missing or mistyped.
    pub fn new(schema: &Node) -> Result<EntryPlan, String> {
        let entry = schema
            .as_record()
            .ok_or("manifest schema is not a record")?;
        let df_index =
            find_field(entry, "data_file", 2).ok_or("manifest schema has no data_file field")?;
        let data_file = entry.fields[df_index]
            .node
            .as_record()
            .ok_or("data_file is not a record")?;
        for (name, id) in [
            ("file_path", 100),
            ("record_count", 103),
            ("file_size_in_bytes", 104),
        ] {
            if find_field(data_file, name, id).is_none() {
                return Err(format!("manifest schema has no data_file.{name} field"));
            }
        }
        if find_field(entry, "status", 0).is_none() {
            return Err("manifest schema has no status field".into());
        }
        let df_steps = compile(data_file, &DATA_FILE_FIELDS, None)?;
        let steps = compile(entry, &ENTRY_FIELDS, Some(df_steps))?;
        Ok(EntryPlan { steps })
    }

    /// Decodes one entry.
    pub fn decode<'a>(&self, c: &mut Cursor<'a>) -> Decoded<EntryRef<'a>> {
        let mut p = Partial::default();
        run(&self.steps, c, &mut p)?;
        let status = p.longs[Slot::Status as usize].ok_or(Malformed("status is null"))?;
        let status = i32::try_from(status)
            .ok()
            .and_then(EntryStatus::from_i32)
            .ok_or(Malformed("status is not 0, 1 or 2"))?;
        let content = match p.longs[Slot::Content as usize] {
            None => DataContent::Data,
            Some(v) => i32::try_from(v)
                .ok()
                .and_then(DataContent::from_i32)
                .ok_or(Malformed("data_file.content is not 0, 1 or 2"))?,
        };
        Ok(EntryRef {
            status,
            snapshot_id: p.longs[Slot::SnapshotId as usize],
            sequence_number: p.longs[Slot::SequenceNumber as usize],
            file_sequence_number: p.longs[Slot::FileSequenceNumber as usize],
            content,
            file_path: p
                .file_path
                .ok_or(Malformed("data_file.file_path is null"))?,
            record_count: p.longs[Slot::RecordCount as usize]
                .ok_or(Malformed("data_file.record_count is null"))?,
            file_size_in_bytes: p.longs[Slot::FileSize as usize]
                .ok_or(Malformed("data_file.file_size_in_bytes is null"))?,
            first_row_id: p.longs[Slot::FirstRowId as usize],
            referenced_data_file: p.referenced,
        })
    }
}

#[derive(Default)]
struct Partial<'a> {
    longs: [Option<i64>; 10],
    file_path: Option<&'a str>,
    referenced: Option<&'a str>,
}

#[inline]
fn is_null(c: &mut Cursor<'_>, shape: Shape) -> Decoded<bool> {
    match shape {
        Shape::Plain => Ok(false),
        Shape::Nullable { null_index } => Ok(c.read_branch(2)? == null_index),
    }
}

fn run<'a>(steps: &[Step], c: &mut Cursor<'a>, p: &mut Partial<'a>) -> Decoded<()> {
    for step in steps {
        match step {
            Step::Skip(node) => c.skip(node)?,
            Step::Long(slot, shape) => {
                if !is_null(c, *shape)? {
                    p.longs[*slot as usize] = Some(c.read_long()?);
                }
            }
            Step::Str(slot, shape) => {
                if !is_null(c, *shape)? {
                    let s = c.read_str()?;
                    if *slot == Slot::FilePath {
                        p.file_path = Some(s);
                    } else {
                        p.referenced = Some(s);
                    }
                }
            }
            Step::Record(sub) => run(sub, c, p)?,
        }
    }
    Ok(())
}
