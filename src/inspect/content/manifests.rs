//! `system.iceberg_manifests` (the manifest list of one snapshot) and
//! `system.iceberg_all_manifests` (the manifest list of every snapshot, each row naming its
//! snapshot in `reference_snapshot_id`), with pyiceberg's columns: the entry counts split by
//! content (a data manifest's counts are data-file counts, a delete manifest's delete-file
//! counts; absent counts are 0) and `partition_summaries` with bounds as human text.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BinaryBuilder, BooleanBuilder, Int8Array, Int32Array, Int64Array, ListBuilder,
    StringArray, StringBuilder, StructBuilder,
};
use datafusion::arrow::datatypes::{DataType, Field, Fields};

use super::TableShape;
use super::values::{decode_bound, render_human};
use crate::iceberg::manifest_list::ManifestFile;
use crate::iceberg::spec::ManifestContent;

fn summary_fields() -> Fields {
    Fields::from(vec![
        Field::new("contains_null", DataType::Boolean, false),
        Field::new("contains_nan", DataType::Boolean, true),
        Field::new("lower_bound", DataType::Utf8, true),
        Field::new("upper_bound", DataType::Utf8, true),
    ])
}

fn common_fields() -> Vec<Field> {
    let count = |name: &str| Field::new(name, DataType::Int32, false);
    vec![
        Field::new("content", DataType::Int8, false),
        Field::new("path", DataType::Utf8, false),
        Field::new("length", DataType::Int64, false),
        Field::new("partition_spec_id", DataType::Int32, false),
        Field::new("added_snapshot_id", DataType::Int64, false),
        count("added_data_files_count"),
        count("existing_data_files_count"),
        count("deleted_data_files_count"),
        count("added_delete_files_count"),
        count("existing_delete_files_count"),
        count("deleted_delete_files_count"),
        Field::new(
            "partition_summaries",
            DataType::List(Arc::new(Field::new_list_field(
                DataType::Struct(summary_fields()),
                true,
            ))),
            false,
        ),
    ]
}

/// `iceberg_manifests`' own columns.
pub(crate) fn manifests_fields() -> Vec<Field> {
    let mut fields = common_fields();
    fields.push(Field::new("snapshot_id", DataType::Int64, false));
    fields.push(Field::new("ref", DataType::Utf8, true));
    fields
}

/// `iceberg_all_manifests`' own columns.
pub(crate) fn all_manifests_fields() -> Vec<Field> {
    let mut fields = common_fields();
    fields.push(Field::new("reference_snapshot_id", DataType::Int64, false));
    fields.push(Field::new("key_metadata", DataType::Binary, true));
    fields
}

fn summaries(list: &[ManifestFile], shape: &TableShape) -> ArrayRef {
    let mut b = ListBuilder::new(StructBuilder::from_fields(summary_fields(), 0));
    for m in list {
        let types = shape.spec_types(m.partition_spec_id);
        let transforms = shape.spec_transforms(m.partition_spec_id);
        for (i, s) in m.partitions.iter().flatten().enumerate() {
            let ty = types.get(i).map_or("", String::as_str);
            let tr = transforms.get(i).map_or("", String::as_str);
            let text = |bound: &Option<Vec<u8>>| {
                let value = decode_bound(ty, bound.as_deref()?)?;
                render_human(tr, ty, &value)
            };
            let item = b.values();
            if let Some(c) = item.field_builder::<BooleanBuilder>(0) {
                c.append_value(s.contains_null);
            }
            if let Some(c) = item.field_builder::<BooleanBuilder>(1) {
                c.append_option(s.contains_nan);
            }
            for (j, bound) in [&s.lower_bound, &s.upper_bound].into_iter().enumerate() {
                if let Some(c) = item.field_builder::<StringBuilder>(2 + j) {
                    c.append_option(text(bound));
                }
            }
            item.append(true);
        }
        b.append(true);
    }
    Arc::new(b.finish())
}

fn count(
    list: &[ManifestFile],
    content: ManifestContent,
    get: fn(&ManifestFile) -> Option<i32>,
) -> ArrayRef {
    Arc::new(Int32Array::from_iter_values(list.iter().map(|m| {
        if m.content == content {
            get(m).unwrap_or(0)
        } else {
            0
        }
    })))
}

/// The columns both tables share, for the manifest-list entries `list`.
pub(crate) fn common_columns(list: &[ManifestFile], shape: &TableShape) -> Vec<ArrayRef> {
    use ManifestContent::{Data, Deletes};
    vec![
        Arc::new(Int8Array::from_iter_values(
            list.iter().map(|m| m.content as i8),
        )),
        Arc::new(StringArray::from_iter_values(
            list.iter().map(|m| &m.manifest_path),
        )),
        Arc::new(Int64Array::from_iter_values(
            list.iter().map(|m| m.manifest_length),
        )),
        Arc::new(Int32Array::from_iter_values(
            list.iter().map(|m| m.partition_spec_id),
        )),
        Arc::new(Int64Array::from_iter_values(
            list.iter().map(|m| m.added_snapshot_id),
        )),
        count(list, Data, |m| m.added_files_count),
        count(list, Data, |m| m.existing_files_count),
        count(list, Data, |m| m.deleted_files_count),
        count(list, Deletes, |m| m.added_files_count),
        count(list, Deletes, |m| m.existing_files_count),
        count(list, Deletes, |m| m.deleted_files_count),
        summaries(list, shape),
    ]
}

/// `key_metadata` of each entry of `list`.
pub(crate) fn key_metadata(list: &[ManifestFile]) -> ArrayRef {
    let mut b = BinaryBuilder::new();
    for m in list {
        b.append_option(m.key_metadata.as_deref());
    }
    Arc::new(b.finish())
}
