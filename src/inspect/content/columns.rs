//! The columns of `iceberg_files` and `iceberg_entries` built from the entries of one manifest.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BinaryBuilder, Int8Array, Int32Array, Int32Builder, Int64Array, Int64Builder,
    ListBuilder, MapBuilder, StringArray, StringBuilder, StructArray, StructBuilder,
};
use datafusion::arrow::datatypes::{DataType, Field, Fields};

use super::values::{decode_bound, render};
use super::{EntryTable, TableShape};
use crate::error::Result;
use crate::iceberg::manifest::{DataFile, ManifestEntry};

/// A file format as Java's and pyiceberg's metadata tables name it: the spec's formats in capitals
/// whatever case the writer used (ClickHouse writes `Parquet`), anything else as written.
fn format_name(written: &str) -> std::borrow::Cow<'_, str> {
    const KNOWN: [&str; 4] = ["AVRO", "ORC", "PARQUET", "PUFFIN"];
    match KNOWN.iter().find(|k| k.eq_ignore_ascii_case(written)) {
        Some(known) => std::borrow::Cow::Borrowed(known),
        None => std::borrow::Cow::Borrowed(written),
    }
}

/// What the scope chose, repeated on every row.
pub(crate) struct ReadContext {
    pub snapshot_id: i64,
    pub ref_name: Option<String>,
}

fn map_type(key: DataType, value: DataType) -> DataType {
    let entries = Field::new(
        "entries",
        DataType::Struct(
            vec![
                Field::new("keys", key, false),
                Field::new("values", value, true),
            ]
            .into(),
        ),
        false,
    );
    DataType::Map(Arc::new(entries), false)
}

/// `Map(String, Nullable(String))`: partition field name to value text.
pub(crate) fn text_map_type() -> DataType {
    map_type(DataType::Utf8, DataType::Utf8)
}

fn list_type(item: DataType) -> DataType {
    DataType::List(Arc::new(Field::new_list_field(item, true)))
}

fn metric_fields() -> Fields {
    Fields::from(vec![
        Field::new("column_size", DataType::Int64, true),
        Field::new("value_count", DataType::Int64, true),
        Field::new("null_value_count", DataType::Int64, true),
        Field::new("nan_value_count", DataType::Int64, true),
        Field::new("lower_bound", DataType::Utf8, true),
        Field::new("upper_bound", DataType::Utf8, true),
    ])
}

fn readable_metrics_field() -> Field {
    Field::new(
        "readable_metrics",
        map_type(DataType::Utf8, DataType::Struct(metric_fields())),
        false,
    )
}

/// The fields of a content file, in pyiceberg's order; `spec_id` only in `iceberg_files`.
fn data_file_fields(with_spec_id: bool) -> Vec<Field> {
    let counts = || map_type(DataType::Int32, DataType::Int64);
    let bounds = || map_type(DataType::Int32, DataType::Binary);
    let mut fields = vec![
        Field::new("content", DataType::Int8, false),
        Field::new("file_path", DataType::Utf8, false),
        Field::new("file_format", DataType::Utf8, false),
    ];
    if with_spec_id {
        fields.push(Field::new("spec_id", DataType::Int32, false));
    }
    fields.extend([
        Field::new("partition", text_map_type(), false),
        Field::new("record_count", DataType::Int64, false),
        Field::new("file_size_in_bytes", DataType::Int64, false),
        Field::new("column_sizes", counts(), true),
        Field::new("value_counts", counts(), true),
        Field::new("null_value_counts", counts(), true),
        Field::new("nan_value_counts", counts(), true),
        Field::new("lower_bounds", bounds(), true),
        Field::new("upper_bounds", bounds(), true),
        Field::new("key_metadata", DataType::Binary, true),
        Field::new("split_offsets", list_type(DataType::Int64), true),
        Field::new("equality_ids", list_type(DataType::Int32), true),
        Field::new("sort_order_id", DataType::Int32, true),
        // v3 (null before): row lineage and deletion vectors, Java's names and order.
        Field::new("first_row_id", DataType::Int64, true),
        Field::new("referenced_data_file", DataType::Utf8, true),
        Field::new("content_offset", DataType::Int64, true),
        Field::new("content_size_in_bytes", DataType::Int64, true),
    ]);
    fields
}

/// `iceberg_all_files`' own columns.
pub(crate) fn all_files_fields() -> Vec<Field> {
    let mut fields = data_file_fields(true);
    fields.push(readable_metrics_field());
    fields
}

/// `iceberg_files`' own columns.
pub(crate) fn files_fields() -> Vec<Field> {
    let mut fields = all_files_fields();
    fields.push(Field::new("snapshot_id", DataType::Int64, false));
    fields.push(Field::new("ref", DataType::Utf8, true));
    fields
}

/// `iceberg_all_entries`' own columns.
pub(crate) fn all_entries_fields() -> Vec<Field> {
    vec![
        Field::new("status", DataType::Int8, false),
        Field::new("snapshot_id", DataType::Int64, true),
        Field::new("sequence_number", DataType::Int64, true),
        Field::new("file_sequence_number", DataType::Int64, true),
        Field::new(
            "data_file",
            DataType::Struct(Fields::from(data_file_fields(false))),
            false,
        ),
        readable_metrics_field(),
    ]
}

/// `iceberg_entries`' own columns.
pub(crate) fn entries_fields() -> Vec<Field> {
    let mut fields = all_entries_fields();
    fields.push(Field::new("read_snapshot_id", DataType::Int64, false));
    fields.push(Field::new("ref", DataType::Utf8, true));
    fields
}

fn count_map(
    files: &[&DataFile],
    get: impl Fn(&DataFile) -> Option<&BTreeMap<i32, i64>>,
) -> ArrayRef {
    let mut b = MapBuilder::new(None, Int32Builder::new(), Int64Builder::new());
    for f in files {
        if let Some(map) = get(f) {
            for (k, v) in map {
                b.keys().append_value(*k);
                b.values().append_value(*v);
            }
        }
        // Infallible: keys and values were appended in pairs.
        let _ = b.append(get(f).is_some());
    }
    Arc::new(b.finish())
}

fn bound_map(
    files: &[&DataFile],
    get: impl Fn(&DataFile) -> Option<&BTreeMap<i32, Vec<u8>>>,
) -> ArrayRef {
    let mut b = MapBuilder::new(None, Int32Builder::new(), BinaryBuilder::new());
    for f in files {
        if let Some(map) = get(f) {
            for (k, v) in map {
                b.keys().append_value(*k);
                b.values().append_value(v);
            }
        }
        let _ = b.append(get(f).is_some());
    }
    Arc::new(b.finish())
}

fn partition_map(files: &[&DataFile], types: &[String]) -> ArrayRef {
    let mut b = MapBuilder::new(None, StringBuilder::new(), StringBuilder::new());
    for f in files {
        for (i, (name, value)) in f.partition.fields.iter().enumerate() {
            b.keys().append_value(name);
            let ty = types.get(i).map_or("", String::as_str);
            b.values().append_option(render(ty, value));
        }
        let _ = b.append(true);
    }
    Arc::new(b.finish())
}

fn readable_metrics(files: &[&DataFile], shape: &TableShape) -> ArrayRef {
    let values = StructBuilder::from_fields(metric_fields(), 0);
    let mut b = MapBuilder::new(None, StringBuilder::new(), values);
    for f in files {
        for (name, ty, id) in &shape.columns {
            b.keys().append_value(name);
            let m = b.values();
            let count =
                |map: &Option<BTreeMap<i32, i64>>| map.as_ref().and_then(|m| m.get(id).copied());
            let bound = |map: &Option<BTreeMap<i32, Vec<u8>>>| {
                let ty = ty.as_deref()?;
                let bytes = map.as_ref()?.get(id)?;
                render(ty, &decode_bound(ty, bytes)?)
            };
            for (i, v) in [
                count(&f.column_sizes),
                count(&f.value_counts),
                count(&f.null_value_counts),
                count(&f.nan_value_counts),
            ]
            .into_iter()
            .enumerate()
            {
                if let Some(c) = m.field_builder::<Int64Builder>(i) {
                    c.append_option(v);
                }
            }
            for (i, v) in [bound(&f.lower_bounds), bound(&f.upper_bounds)]
                .into_iter()
                .enumerate()
            {
                if let Some(c) = m.field_builder::<StringBuilder>(4 + i) {
                    c.append_option(v);
                }
            }
            m.append(true);
        }
        let _ = b.append(true);
    }
    Arc::new(b.finish())
}

fn list_column<T: Copy>(
    files: &[&DataFile],
    get: impl Fn(&DataFile) -> Option<&Vec<T>>,
    mut builder: ListBuilder<impl datafusion::arrow::array::ArrayBuilder + Extend<Option<T>>>,
) -> ArrayRef {
    for f in files {
        match get(f) {
            Some(items) => {
                builder.values().extend(items.iter().map(|x| Some(*x)));
                builder.append(true);
            }
            None => builder.append(false),
        }
    }
    Arc::new(builder.finish())
}

/// The content-file columns of `files` ([`data_file_fields`]).
fn data_file_columns(
    files: &[&DataFile],
    spec_id: Option<i32>,
    shape: &TableShape,
    manifest_spec: i32,
) -> Vec<ArrayRef> {
    let mut cols: Vec<ArrayRef> = vec![
        Arc::new(Int8Array::from_iter_values(
            files.iter().map(|f| f.content as i8),
        )),
        Arc::new(StringArray::from_iter_values(
            files.iter().map(|f| &f.file_path),
        )),
        Arc::new(StringArray::from_iter_values(
            files.iter().map(|f| format_name(&f.file_format)),
        )),
    ];
    if let Some(spec) = spec_id {
        cols.push(Arc::new(Int32Array::from_iter_values(
            files.iter().map(|_| spec),
        )));
    }
    let mut key_metadata = BinaryBuilder::new();
    for f in files {
        key_metadata.append_option(f.key_metadata.as_deref());
    }
    cols.extend([
        partition_map(files, shape.spec_types(manifest_spec)),
        Arc::new(Int64Array::from_iter_values(
            files.iter().map(|f| f.record_count),
        )) as ArrayRef,
        Arc::new(Int64Array::from_iter_values(
            files.iter().map(|f| f.file_size_in_bytes),
        )),
        count_map(files, |f| f.column_sizes.as_ref()),
        count_map(files, |f| f.value_counts.as_ref()),
        count_map(files, |f| f.null_value_counts.as_ref()),
        count_map(files, |f| f.nan_value_counts.as_ref()),
        bound_map(files, |f| f.lower_bounds.as_ref()),
        bound_map(files, |f| f.upper_bounds.as_ref()),
        Arc::new(key_metadata.finish()),
        list_column(
            files,
            |f| f.split_offsets.as_ref(),
            ListBuilder::new(Int64Builder::new()),
        ),
        list_column(
            files,
            |f| f.equality_ids.as_ref(),
            ListBuilder::new(Int32Builder::new()),
        ),
        Arc::new(Int32Array::from_iter(files.iter().map(|f| f.sort_order_id))),
        Arc::new(Int64Array::from_iter(files.iter().map(|f| f.first_row_id))),
        Arc::new(StringArray::from_iter(
            files.iter().map(|f| f.referenced_data_file.as_deref()),
        )),
        Arc::new(Int64Array::from_iter(
            files.iter().map(|f| f.content_offset),
        )),
        Arc::new(Int64Array::from_iter(
            files.iter().map(|f| f.content_size_in_bytes),
        )),
    ]);
    cols
}

/// The `snapshot_id` and `ref` columns of a per-snapshot table.
pub(crate) fn repeated(read: &ReadContext, rows: usize) -> [ArrayRef; 2] {
    [
        Arc::new(Int64Array::from_iter_values(std::iter::repeat_n(
            read.snapshot_id,
            rows,
        ))),
        Arc::new(StringArray::from_iter(std::iter::repeat_n(
            read.ref_name.as_deref(),
            rows,
        ))),
    ]
}

/// The own columns of `kind` for `entries`, all of one manifest of spec `spec_id`; `read` (the
/// per-snapshot tables) appends `snapshot_id` and `ref`.
pub(crate) fn build(
    kind: EntryTable,
    shape: &TableShape,
    spec_id: i32,
    entries: &[ManifestEntry],
    read: Option<&ReadContext>,
) -> Result<Vec<ArrayRef>> {
    let files: Vec<&DataFile> = entries.iter().map(|e| &e.data_file).collect();
    let rows = files.len();
    Ok(match kind {
        EntryTable::Files => {
            let mut cols = data_file_columns(&files, Some(spec_id), shape, spec_id);
            cols.push(readable_metrics(&files, shape));
            cols.extend(read.map(|r| repeated(r, rows)).into_iter().flatten());
            cols
        }
        EntryTable::Entries => {
            let fields = Fields::from(data_file_fields(false));
            let data_file = StructArray::try_new(
                fields,
                data_file_columns(&files, None, shape, spec_id),
                None,
            )
            .map_err(|e| crate::error::Error::logical(format!("data_file column: {e}")))?;
            let mut cols: Vec<ArrayRef> = vec![
                Arc::new(Int8Array::from_iter_values(
                    entries.iter().map(|e| e.status as i8),
                )),
                Arc::new(Int64Array::from_iter(entries.iter().map(|e| e.snapshot_id))),
                Arc::new(Int64Array::from_iter(
                    entries.iter().map(|e| e.sequence_number),
                )),
                Arc::new(Int64Array::from_iter(
                    entries.iter().map(|e| e.file_sequence_number),
                )),
                Arc::new(data_file),
                readable_metrics(&files, shape),
            ];
            cols.extend(read.map(|r| repeated(r, rows)).into_iter().flatten());
            cols
        }
    })
}
