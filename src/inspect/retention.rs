//! `system.iceberg_retention`: the retention policy in force on each branch and tag, and where
//! each value comes from — the ref's own field, a table property (`history.expire.*`), or the
//! default of a session setting (`iceberg_expire_default_*`). The values are computed by the same
//! function an expiry's EXPLAIN shows its policy with (`maintain::expire::retention`), without a
//! call's `retain_last` / `retention_period`.
//!
//! Columns: `name`, `type`, `snapshot_id`, then for each of `min_snapshots_to_keep`,
//! `max_snapshot_age_ms` (branches only: a tag keeps its one snapshot) and `max_ref_age_ms` (never
//! `main`, which is not removed) the value and `<value>_source`. `max_*_age_ms` of
//! 9223372036854775807 means no limit.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int64Array, StringArray};
use datafusion::arrow::datatypes::{DataType, Field};

use crate::error::Result;
use crate::iceberg::metadata::TableMetadata;
use crate::iceberg::spec::RefKind;
use crate::maintain::expire::retention::table_retention;
use crate::settings::Settings;

pub(super) fn fields() -> Vec<Field> {
    let mut fields = vec![
        Field::new("name", DataType::Utf8, false),
        Field::new("type", DataType::Utf8, false),
        Field::new("snapshot_id", DataType::Int64, false),
    ];
    for value in [
        "min_snapshots_to_keep",
        "max_snapshot_age_ms",
        "max_ref_age_ms",
    ] {
        fields.push(Field::new(value, DataType::Int64, true));
        fields.push(Field::new(format!("{value}_source"), DataType::Utf8, true));
    }
    fields
}

pub(super) fn columns(m: &TableMetadata, settings: &Settings) -> Result<Vec<ArrayRef>> {
    let retention = table_retention(settings, m.properties(), m.refs())?;
    let refs = m.refs();
    let branch = |kind: &RefKind| matches!(kind, RefKind::Branch);
    let mut values: [Vec<Option<i64>>; 3] = Default::default();
    let mut sources: [Vec<Option<String>>; 3] = Default::default();
    for r in refs {
        let is_branch = branch(&r.kind);
        let keep = is_branch.then(|| retention.min_snapshots_to_keep(&r.name));
        let age = is_branch.then(|| retention.max_snapshot_age_ms(&r.name));
        let ref_age = (r.name != "main").then(|| retention.max_ref_age_ms(&r.name));
        values[0].push(keep.as_ref().map(|(v, _)| i64::from(*v)));
        sources[0].push(keep.map(|(_, s)| s.to_string()));
        values[1].push(age.as_ref().map(|(v, _)| *v));
        sources[1].push(age.map(|(_, s)| s.to_string()));
        values[2].push(ref_age.as_ref().map(|(v, _)| *v));
        sources[2].push(ref_age.map(|(_, s)| s.to_string()));
    }
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(refs.iter().map(|r| &r.name))),
        Arc::new(StringArray::from_iter_values(
            refs.iter().map(|r| r.kind.as_str()),
        )),
        Arc::new(Int64Array::from_iter_values(
            refs.iter().map(|r| r.snapshot_id),
        )),
    ];
    for (value, source) in values.into_iter().zip(sources) {
        columns.push(Arc::new(Int64Array::from(value)));
        columns.push(Arc::new(StringArray::from(source)));
    }
    Ok(columns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, AsArray, RecordBatch};
    use datafusion::arrow::datatypes::{Int64Type, Schema};

    #[test]
    fn each_value_names_where_it_comes_from() {
        let json = br#"{"format-version":2,"table-uuid":"9c12d441-03fe-4693-9a96-a0705ddf69c1","location":"/t",
            "last-sequence-number":1,"last-updated-ms":1000,"last-column-id":1,"current-schema-id":0,
            "schemas":[{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"x","required":false,"type":"long"}]}],
            "default-spec-id":0,"partition-specs":[{"spec-id":0,"fields":[]}],"last-partition-id":999,
            "default-sort-order-id":0,"sort-orders":[{"order-id":0,"fields":[]}],
            "properties":{"history.expire.max-snapshot-age-ms":"7200000"},
            "current-snapshot-id":1,
            "snapshots":[{"snapshot-id":1,"sequence-number":1,"timestamp-ms":1000,"manifest-list":"/t/metadata/a.avro","summary":{"operation":"append"}}],
            "refs":{"main":{"snapshot-id":1,"type":"branch"},
                    "audit":{"snapshot-id":1,"type":"branch","min-snapshots-to-keep":3},
                    "v1":{"snapshot-id":1,"type":"tag","max-ref-age-ms":5}},
            "snapshot-log":[],"metadata-log":[]}"#;
        let m = TableMetadata::parse(json, "v1.metadata.json").unwrap();
        let columns = columns(&m, &Settings::new()).unwrap();
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields())), columns).unwrap();
        let names = batch.column(0).as_string::<i32>();
        let row = |name: &str| {
            (0..batch.num_rows())
                .find(|i| names.value(*i) == name)
                .unwrap()
        };
        let text = |col: usize, i: usize| {
            let c = batch.column(col).as_string::<i32>();
            (!c.is_null(i)).then(|| c.value(i).to_string())
        };
        let int = |col: usize, i: usize| {
            let c = batch.column(col).as_primitive::<Int64Type>();
            (!c.is_null(i)).then(|| c.value(i))
        };
        let (main, audit, tag) = (row("main"), row("audit"), row("v1"));
        assert_eq!(int(3, audit), Some(3));
        assert_eq!(text(4, audit).as_deref(), Some("ref 'audit'"));
        assert_eq!(int(3, main), Some(1));
        assert_eq!(
            text(4, main).as_deref(),
            Some("default of setting iceberg_expire_default_min_snapshots_to_keep")
        );
        assert_eq!(int(5, main), Some(7_200_000));
        assert_eq!(
            text(6, main).as_deref(),
            Some("table property history.expire.max-snapshot-age-ms")
        );
        assert_eq!(int(7, main), None, "main is never removed");
        assert_eq!(int(3, tag), None, "a tag keeps its one snapshot");
        assert_eq!(
            (int(7, tag), text(8, tag).as_deref()),
            (Some(5), Some("ref 'v1'"))
        );
    }
}
