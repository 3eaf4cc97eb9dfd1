//! The sorter in memory and spilled: the same rows in the same order, runs merged in several
//! passes, nested columns with field ids surviving the spill files, the spill folder removed.

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, Float64Array, Int64Array, StringArray, StructArray};
use arrow_schema::{DataType, Field, Fields, Schema};
use parquet::arrow::PARQUET_FIELD_ID_META_KEY;

use super::*;
use crate::iceberg::arrow::transform::Transform;

fn with_id(name: &str, ty: DataType, id: i32) -> Field {
    Field::new(name, ty, true).with_metadata(HashMap::from([(
        PARQUET_FIELD_ID_META_KEY.to_string(),
        id.to_string(),
    )]))
}

/// (k long, x double, s struct<t string>), field ids 1, 2, 3 (4 inside).
fn schema() -> SchemaRef {
    let inner = Fields::from(vec![with_id("t", DataType::Utf8, 4)]);
    Arc::new(Schema::new(vec![
        with_id("k", DataType::Int64, 1),
        with_id("x", DataType::Float64, 2),
        with_id("s", DataType::Struct(inner), 3),
    ]))
}

/// Row `i` of a deterministic scramble: k in 0..50 with nulls, x with NaN, -0 and infinities.
fn batch(schema: &SchemaRef, from: usize, n: usize) -> RecordBatch {
    let idx: Vec<usize> = (from..from + n).collect();
    let k: Int64Array = idx
        .iter()
        .map(|i| (i % 13 != 0).then_some(((i * 7919) % 50) as i64))
        .collect();
    let special = [
        f64::NAN,
        -f64::NAN,
        -0.0,
        0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ];
    let x: Float64Array = idx
        .iter()
        .map(|i| {
            if i % 5 == 0 {
                Some(special[i % special.len()])
            } else {
                (i % 17 != 0).then_some(((i * 31) % 97) as f64 - 40.5)
            }
        })
        .collect();
    let t: StringArray = idx.iter().map(|i| Some(format!("row-{i}"))).collect();
    let DataType::Struct(inner) = schema.field(2).data_type().clone() else {
        unreachable!()
    };
    let s = StructArray::try_new(inner, vec![Arc::new(t) as ArrayRef], None).unwrap();
    RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(k), Arc::new(x), Arc::new(s) as ArrayRef],
    )
    .unwrap()
}

/// k ascending nulls last, then x descending nulls first.
fn order() -> RowOrder {
    let key = |source_id, descending, nulls_first| SortKey {
        source_id,
        transform: Transform::parse("identity").unwrap(),
        descending,
        nulls_first,
    };
    RowOrder {
        sort: vec![key(1, false, false), key(2, true, true)],
        split: None,
    }
}

/// A row as (k, x's bits, t).
type Row = (Option<i64>, Option<u64>, String);

/// Pushes `batches` batches of 100 rows through a sorter of `buffer` bytes; the rows as
/// (k, x bits, t), in output order, and the batches emitted.
fn run(buffer: usize, batches: usize) -> (Vec<Row>, usize) {
    let schema = schema();
    let mut sorter = Sorter::new(order(), schema.clone(), buffer);
    for b in 0..batches {
        sorter.push(&batch(&schema, b * 100, 100)).unwrap();
    }
    let mut out = Vec::new();
    let mut emitted = 0;
    sorter
        .finish(&mut |b| {
            assert_eq!(b.schema(), schema, "the table's schema, field ids included");
            emitted += 1;
            let k = b.column(0).as_primitive::<Int64Type>();
            let x = b.column(1).as_primitive::<Float64Type>();
            let t = b.column(2).as_struct().column(0).as_string::<i32>().clone();
            for i in 0..b.num_rows() {
                out.push((
                    k.is_valid(i).then(|| k.value(i)),
                    x.is_valid(i).then(|| x.value(i).to_bits()),
                    t.value(i).to_string(),
                ));
            }
            Ok(())
        })
        .unwrap();
    (out, emitted)
}

/// The order the spec wants, computed without the sorter.
fn expected(rows: &[Row]) -> Vec<(Option<i64>, Option<u64>)> {
    let mut keys: Vec<(Option<i64>, Option<u64>)> = rows.iter().map(|r| (r.0, r.1)).collect();
    keys.sort_by(|a, b| {
        let k = match (a.0, b.0) {
            (None, None) => std::cmp::Ordering::Equal,
            (None, _) => std::cmp::Ordering::Greater,
            (_, None) => std::cmp::Ordering::Less,
            (Some(x), Some(y)) => x.cmp(&y),
        };
        k.then_with(|| match (a.1, b.1) {
            (None, None) => std::cmp::Ordering::Equal,
            (None, _) => std::cmp::Ordering::Less,
            (_, None) => std::cmp::Ordering::Greater,
            (Some(x), Some(y)) => f64::from_bits(y).total_cmp(&f64::from_bits(x)),
        })
    });
    keys
}

fn spill_folders() -> usize {
    std::fs::read_dir(std::env::temp_dir())
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with("icetrim-sort-"))
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn in_memory_and_spilled_sorts_agree() {
    let (memory, emitted) = run(usize::MAX, 30);
    assert_eq!(emitted, 1, "fits the buffer: one sorted batch");
    assert_eq!(memory.len(), 3000);
    let keys: Vec<_> = memory.iter().map(|r| (r.0, r.1)).collect();
    assert_eq!(
        keys,
        expected(&memory),
        "-NaN < -inf < -0 < 0 < inf < NaN, reversed"
    );
    // A buffer of about one batch: 30 runs, more than FAN_IN, so two passes.
    let before = spill_folders();
    let (spilled, emitted) = run(1, 30);
    assert!(emitted > 30, "merged in small batches: {emitted}");
    let spilled_keys: Vec<_> = spilled.iter().map(|r| (r.0, r.1)).collect();
    assert_eq!(spilled_keys, keys, "the same order");
    let mut a: Vec<_> = memory.iter().map(|r| r.2.clone()).collect();
    let mut b: Vec<_> = spilled.iter().map(|r| r.2.clone()).collect();
    a.sort();
    b.sort();
    assert_eq!(a, b, "the same rows");
    assert!(spill_folders() <= before, "the spill folder is removed");
}

#[test]
fn a_few_runs_merge_in_one_pass() {
    let (all, _) = run(usize::MAX, 5);
    // Each push of ~100 rows fills a small buffer: 5 runs, one pass.
    let (spilled, _) = run(1, 5);
    let keys = |v: &[Row]| -> Vec<_> { v.iter().map(|r| (r.0, r.1)).collect() };
    assert_eq!(keys(&spilled), keys(&all));
    assert_eq!(spilled.len(), 500);
}

#[test]
fn nothing_pushed_emits_nothing() {
    let mut sorter = Sorter::new(order(), schema(), 1);
    let mut n = 0;
    sorter
        .finish(&mut |_| {
            n += 1;
            Ok(())
        })
        .unwrap();
    assert_eq!(n, 0);
}
