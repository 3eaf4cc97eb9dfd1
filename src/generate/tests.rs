//! Options, mix parsing and the schedule.

use rand::SeedableRng;
use rand::rngs::StdRng;

use super::schedule::{Event, plan};
use super::*;

#[test]
fn mix_parses_and_rejects() {
    let mix = Mix::parse("append=1, delete=3").unwrap();
    assert_eq!((mix.append, mix.delete, mix.merge), (1, 3, 0));
    assert!(Mix::parse("append=0").is_err());
    assert!(Mix::parse("grow=1").is_err());
    assert!(Mix::parse("append").is_err());
    assert!(Mix::parse("append=x").is_err());
}

#[test]
fn schedule_places_every_event_deterministically() {
    let mut o = GenerateOptions::new("memory://t", FormatVersion::V2, 40, 2, 3, 0);
    o.branches = 3;
    o.staged = 4;
    o.tags = 5;
    o.statistics = 2;
    let a = plan(&o, &mut StdRng::seed_from_u64(3));
    let b = plan(&o, &mut StdRng::seed_from_u64(3));
    assert_eq!(a.events, b.events);
    assert_eq!(a.events[0], Event::Main(MainOp::Append));
    let count = |f: &dyn Fn(&Event) -> bool| a.events.iter().filter(|e| f(e)).count();
    assert_eq!(
        count(&|e| matches!(e, Event::Branch(_))),
        3 * o.branch_commits
    );
    assert_eq!(count(&|e| matches!(e, Event::Staged)), 4);
    assert_eq!(a.tags.len(), 5);
    assert!(
        a.tags
            .iter()
            .all(|(i, _)| matches!(a.events[*i], Event::Main(_)))
    );
    assert_eq!(a.statistics.len(), 2);
}

#[test]
fn options_are_validated() {
    let mut o = GenerateOptions::new("memory://t", FormatVersion::V2, 4, 1, 0, 0);
    o.branches = 2;
    assert!(
        validate(&o).is_err(),
        "4 branch commits leave no main snapshot"
    );
    let mut o = GenerateOptions::new("memory://t", FormatVersion::V2, 4, 0, 0, 0);
    assert!(validate(&o).is_err());
    o.files_per_snapshot = 1;
    o.tags = 5;
    assert!(validate(&o).is_err());
}

/// `partitions`: identity(part) spec and schema, data files under `data/part=<v>/` spread in
/// turn, manifest tuples equal the folder and the rows, manifest-list summaries bound them.
#[tokio::test]
async fn partitioned_parquet_tables_lay_files_out_by_partition() {
    use std::collections::BTreeMap;

    use ::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use arrow_array::Int32Array;

    use crate::iceberg::locate::{MetadataSettings, locate};
    use crate::iceberg::manifest::{PartitionValue, inherit, read_manifest};
    use crate::iceberg::manifest_list::read_manifest_list;
    use crate::iceberg::spec::DataContent;

    let io = FileIO::memory();
    let mut o = GenerateOptions::new("memory://p", FormatVersion::V2, 6, 20, 5, 1_000_000_000);
    o.parquet_data = true;
    o.partitions = 4;
    o.mix = Mix::parse("append=3,delete=1").unwrap();
    o.script = vec![MainOp::Append, MainOp::Append, MainOp::Delete];
    generate(&io, &o).await.unwrap();
    let located = locate(&io, "memory://p", &MetadataSettings::default())
        .await
        .unwrap();
    let json = located.metadata.to_json_bytes();
    let meta: Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(
        meta["partition-specs"][0]["fields"][0]["transform"],
        "identity"
    );
    assert_eq!(meta["schemas"][0]["fields"][2]["name"], "part");
    let snap = located.metadata.current_snapshot().unwrap();
    let list_path = snap.manifest_list.clone().unwrap();
    let list = read_manifest_list(&io.read(&list_path).await.unwrap(), &list_path).unwrap();
    let mut per_part: BTreeMap<i32, usize> = BTreeMap::new();
    for m in &list {
        let mut manifest = read_manifest(&io.read(&m.manifest_path).await.unwrap(), "m").unwrap();
        inherit(&mut manifest.entries, m);
        let summary = &m.partitions.as_ref().expect("partition summaries")[0];
        let low = i32::from_le_bytes(summary.lower_bound.clone().unwrap().try_into().unwrap());
        let high = i32::from_le_bytes(summary.upper_bound.clone().unwrap().try_into().unwrap());
        for e in manifest.entries.iter().filter(|e| e.status.is_live()) {
            let f = &e.data_file;
            let p = match f.partition.fields.as_slice() {
                [(_, PartitionValue::Int(p))] => *p,
                other => panic!("one int: {other:?}"),
            };
            assert!((low..=high).contains(&p), "{low}..={high} holds {p}");
            assert!((0..4).contains(&p));
            assert!(
                f.file_path
                    .starts_with(&format!("memory://p/data/part={p}/")),
                "{}",
                f.file_path
            );
            if f.content != DataContent::Data {
                continue;
            }
            *per_part.entry(p).or_default() += 1;
            let bytes = io.read(&f.file_path).await.unwrap();
            let batch = ParquetRecordBatchReaderBuilder::try_new(bytes)
                .unwrap()
                .build()
                .unwrap()
                .next()
                .unwrap()
                .unwrap();
            assert_eq!(batch.num_rows() as i64, f.record_count);
            let col = batch
                .column(2)
                .as_any()
                .downcast_ref::<Int32Array>()
                .unwrap();
            assert!(col.iter().all(|v| v == Some(p)));
        }
    }
    assert_eq!(per_part.len(), 4, "every partition has files: {per_part:?}");
    let total: usize = per_part.values().sum();
    assert!(
        per_part.values().all(|&n| n * 4 >= total - 8),
        "{per_part:?}"
    );
}

/// Wide tables: the metadata's one schema (id 0) is the schema the manifests were written with
/// and the Parquet files hold, partitioned or not, in every format version.
#[tokio::test]
async fn wide_tables_name_one_schema_in_metadata_and_manifests() {
    use crate::iceberg::locate::{MetadataSettings, locate};
    use crate::iceberg::manifest::read_manifest;
    use crate::iceberg::manifest_list::read_manifest_list;

    for (version, partitions) in [
        (FormatVersion::V1, 0),
        (FormatVersion::V2, 0),
        (FormatVersion::V2, 3),
    ] {
        let io = FileIO::memory();
        let location = format!("memory://w{partitions}{version:?}");
        let mut o = GenerateOptions::new(&location, version, 3, 2, 5, 1_000_000_000);
        o.parquet_data = true;
        o.wide_columns = true;
        o.partitions = partitions;
        generate(&io, &o).await.unwrap();
        let located = locate(&io, &location, &MetadataSettings::default())
            .await
            .unwrap();
        let meta: Value = serde_json::from_slice(&located.metadata.to_json_bytes()).unwrap();
        let schemas = meta["schemas"].as_array().unwrap();
        assert_eq!(schemas.len(), 1, "{version:?}");
        let names: Vec<&str> = schemas[0]["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().unwrap())
            .collect();
        let expected: &[&str] = if partitions > 0 {
            &["id", "data", "part", "amount", "ts", "flag"]
        } else {
            &["id", "data", "amount", "ts", "flag"]
        };
        assert_eq!(names, expected, "{version:?}");
        assert_eq!(meta["last-column-id"], 6);
        let snap = located.metadata.current_snapshot().unwrap();
        let list_path = snap.manifest_list.clone().unwrap();
        let list = read_manifest_list(&io.read(&list_path).await.unwrap(), &list_path).unwrap();
        let manifest = read_manifest(&io.read(&list[0].manifest_path).await.unwrap(), "m").unwrap();
        let header: Value = serde_json::from_str(manifest.meta_str("schema").unwrap()).unwrap();
        assert_eq!(header["fields"], schemas[0]["fields"], "{version:?}");
    }
}
