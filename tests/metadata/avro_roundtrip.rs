//! Write → read round trips of manifests and manifest lists for format versions 1-3 and every codec,
//! the projection against the full decode, rewrite losslessness, and inheritance.

use std::collections::BTreeMap;

use apache_avro::types::Value;
use icetrim::internals::iceberg::avro::Codec;
use icetrim::internals::iceberg::avro::value::strip_union;
use icetrim::internals::iceberg::manifest::{
    DataFile, ManifestEntry, ManifestWriter, NewManifest, PartitionTuple, PartitionValue,
    ProjectedEntry, inherit, read_manifest, read_manifest_projected,
};
use icetrim::internals::iceberg::manifest_list::{
    FieldSummary, ManifestFile, ManifestListMeta, read_manifest_list, write_manifest_list,
};
use icetrim::internals::iceberg::spec::{DataContent, EntryStatus, FormatVersion, ManifestContent};

const SCHEMA: &str = r#"{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":true,"type":"long"},{"id":2,"name":"city","required":false,"type":"string"},{"id":3,"name":"ts","required":false,"type":"timestamptz"}]}"#;
const SPEC: &str = r#"{"spec-id":0,"fields":[{"source-id":2,"field-id":1000,"name":"city","transform":"identity"},{"source-id":3,"field-id":1001,"name":"ts_day","transform":"day"},{"source-id":1,"field-id":1002,"name":"id_bucket","transform":"bucket[4]"}]}"#;

const VERSIONS: [FormatVersion; 3] = [FormatVersion::V1, FormatVersion::V2, FormatVersion::V3];
const CODECS: [Codec; 4] = [Codec::Null, Codec::Deflate, Codec::Snappy, Codec::Zstandard];

fn entry(i: i64, version: FormatVersion) -> ManifestEntry {
    let mut df = DataFile::new(
        DataContent::Data,
        format!("s3://bucket/t/data/f-{i}.parquet"),
        100 + i,
        4096 + i,
    );
    df.partition = PartitionTuple::new(vec![
        (
            "city".into(),
            if i % 3 == 0 {
                PartitionValue::Null
            } else {
                PartitionValue::String(format!("c{}", i % 5))
            },
        ),
        ("ts_day".into(), PartitionValue::Int(19_000 + i as i32)),
        ("id_bucket".into(), PartitionValue::Int((i % 4) as i32)),
    ]);
    df.column_sizes = Some(BTreeMap::from([(1, 10 * i), (2, 20), (3, 30)]));
    df.value_counts = Some(BTreeMap::from([(1, 100), (2, 100)]));
    df.null_value_counts = Some(BTreeMap::from([(1, 0), (2, i)]));
    df.lower_bounds = Some(BTreeMap::from([
        (1, i.to_le_bytes().to_vec()),
        (2, b"a".to_vec()),
    ]));
    df.upper_bounds = Some(BTreeMap::from([(1, (i + 99).to_le_bytes().to_vec())]));
    df.split_offsets = Some(vec![4, 1000 + i]);
    df.sort_order_id = Some(0);
    df.key_metadata = (i % 2 == 0).then(|| vec![1, 2, 3]);
    if version == FormatVersion::V1 {
        df.block_size_in_bytes = Some(67_108_864);
    }
    if version == FormatVersion::V3 && i % 2 == 1 {
        df.first_row_id = Some(1000 * i);
    }
    let status = [
        EntryStatus::Added,
        EntryStatus::Existing,
        EntryStatus::Deleted,
    ][(i % 3) as usize];
    let explicit = status != EntryStatus::Added || version == FormatVersion::V1;
    ManifestEntry {
        status,
        snapshot_id: Some(7000 + i),
        sequence_number: (explicit && version != FormatVersion::V1).then_some(i),
        file_sequence_number: (explicit && version != FormatVersion::V1).then_some(i),
        data_file: df,
        extra: Vec::new(),
    }
}

fn write(version: FormatVersion, codec: Codec, entries: &[ManifestEntry]) -> Vec<u8> {
    let opts = NewManifest {
        format_version: version,
        content: ManifestContent::Data,
        table_schema_json: SCHEMA,
        partition_spec_json: SPEC,
        partition_spec_id: 0,
        codec,
    };
    let mut w = ManifestWriter::new(&opts).unwrap();
    for e in entries {
        w.add(e).unwrap();
    }
    w.finish().unwrap().bytes
}

#[test]
fn manifests_round_trip_every_version_and_codec() {
    for version in VERSIONS {
        let entries: Vec<_> = (0..50).map(|i| entry(i, version)).collect();
        for codec in CODECS {
            let bytes = write(version, codec, &entries);
            let m = read_manifest(&bytes, "m.avro").unwrap();
            assert_eq!(m.format_version(), version);
            assert_eq!(m.partition_spec_id(), Some(0));
            assert_eq!(m.meta_str("schema"), Some(SCHEMA));
            assert_eq!(m.meta_str("avro.codec"), Some(codec.name()));
            assert!(m.schema_json.contains(r#""logicalType":"map""#));
            let back = m.entries;
            assert_eq!(back, entries, "{version:?} {codec:?}");
        }
    }
}

#[test]
fn projection_matches_full_decode() {
    for version in VERSIONS {
        let entries: Vec<_> = (0..30).map(|i| entry(i, version)).collect();
        let bytes = write(version, Codec::Deflate, &entries);
        let projected = read_manifest_projected(&bytes, "m.avro").unwrap();
        let full = read_manifest(&bytes, "m.avro").unwrap().entries;
        assert_eq!(projected.len(), full.len());
        for (p, f) in projected.iter().zip(&full) {
            let expect = ProjectedEntry {
                status: f.status,
                snapshot_id: f.snapshot_id,
                sequence_number: f.sequence_number,
                file_sequence_number: f.file_sequence_number,
                content: f.data_file.content,
                file_path: f.data_file.file_path.clone(),
                record_count: f.data_file.record_count,
                file_size_in_bytes: f.data_file.file_size_in_bytes,
                first_row_id: f.data_file.first_row_id,
                referenced_data_file: f.data_file.referenced_data_file.clone(),
            };
            assert_eq!(*p, expect);
        }
    }
}

#[test]
fn rewrite_keeps_schema_header_and_unknown_fields() {
    // A schema with an extra entry field and an extra data_file field nobody in Iceberg defines.
    let base = write(
        FormatVersion::V2,
        Codec::Null,
        &[entry(1, FormatVersion::V2)],
    );
    let m = read_manifest(&base, "m.avro").unwrap();
    let schema = m.schema_json.replacen(
        r#"{"name":"status""#,
        r#"{"name":"x_note","type":["null","string"],"default":null,"field-id":9000},{"name":"status""#,
        1,
    );
    let schema = schema.replacen(
        r#"{"name":"file_path""#,
        r#"{"name":"x_tag","type":"long","field-id":9001},{"name":"file_path""#,
        1,
    );
    let mut e = m.entries[0].clone();
    e.extra
        .push(("x_note".into(), Value::String("keep me".into())));
    e.data_file.extra.push(("x_tag".into(), Value::Long(42)));
    let mut w = ManifestWriter::with_schema(&schema, &m.metadata, Codec::Deflate).unwrap();
    w.add(&e).unwrap();
    let custom = w.finish().unwrap().bytes;

    let first = read_manifest(&custom, "custom.avro").unwrap();
    assert_eq!(first.schema_json, schema);
    let mut w = ManifestWriter::rewrite_of(&first, Codec::Snappy).unwrap();
    for e in &first.entries {
        w.add(e).unwrap();
    }
    let written = w.finish().unwrap();
    let second = read_manifest(&written.bytes, "rewritten.avro").unwrap();
    assert_eq!(second.schema_json, first.schema_json);
    assert_eq!(second.entries, first.entries);
    assert_eq!(second.entries[0].extra[0].0, "x_note");
    assert_eq!(
        strip_union(&second.entries[0].extra[0].1),
        &Value::String("keep me".into())
    );
    assert_eq!(
        second.entries[0].data_file.extra,
        vec![("x_tag".to_string(), Value::Long(42))]
    );
    assert_eq!(second.meta_str("schema"), Some(SCHEMA));
    assert_eq!(second.meta_str("avro.codec"), Some("snappy"));
    assert_eq!(written.partitions.as_ref().map(Vec::len), Some(3));
}

fn list_entry(i: i64, version: FormatVersion) -> ManifestFile {
    ManifestFile {
        manifest_path: format!("s3://bucket/t/metadata/m{i}.avro"),
        manifest_length: 5000 + i,
        partition_spec_id: i as i32 % 2,
        content: if version != FormatVersion::V1 && i % 2 == 1 {
            ManifestContent::Deletes
        } else {
            ManifestContent::Data
        },
        sequence_number: if version == FormatVersion::V1 {
            0
        } else {
            10 + i
        },
        min_sequence_number: if version == FormatVersion::V1 {
            0
        } else {
            5 + i
        },
        added_snapshot_id: 900 + i,
        added_files_count: Some(1),
        existing_files_count: Some(2),
        deleted_files_count: Some(0),
        added_rows_count: Some(10),
        existing_rows_count: Some(20),
        deleted_rows_count: Some(0),
        partitions: Some(vec![FieldSummary {
            contains_null: i % 2 == 0,
            contains_nan: Some(false),
            lower_bound: Some(vec![1, 0, 0, 0]),
            upper_bound: None,
        }]),
        key_metadata: None,
        first_row_id: (version == FormatVersion::V3).then_some(100 * i),
    }
}

#[test]
fn manifest_lists_round_trip_every_version_and_codec() {
    for version in VERSIONS {
        let manifests: Vec<_> = (0..7).map(|i| list_entry(i, version)).collect();
        let meta = ManifestListMeta {
            format_version: version,
            snapshot_id: 42,
            parent_snapshot_id: Some(41),
            sequence_number: 3,
            first_row_id: Some(500),
        };
        for codec in CODECS {
            let bytes = write_manifest_list(&meta, &manifests, codec).unwrap().bytes;
            assert_eq!(
                read_manifest_list(&bytes, "snap-42.avro").unwrap(),
                manifests,
                "{version:?} {codec:?}"
            );
        }
    }
}

#[test]
fn v3_list_assigns_first_row_ids_to_data_manifests() {
    let mut manifests: Vec<_> = (0..4).map(|i| list_entry(i, FormatVersion::V3)).collect();
    manifests.iter_mut().for_each(|m| m.first_row_id = None);
    manifests[2].first_row_id = Some(77);
    let meta = ManifestListMeta {
        format_version: FormatVersion::V3,
        snapshot_id: 42,
        parent_snapshot_id: None,
        sequence_number: 3,
        first_row_id: Some(1000),
    };
    let written = write_manifest_list(&meta, &manifests, Codec::Deflate).unwrap();
    let back = read_manifest_list(&written.bytes, "snap.avro").unwrap();
    // 0: data, gets 1000 and uses 30 rows; 1: deletes, none; 2: keeps 77; 3: deletes, none.
    let ids: Vec<_> = back.iter().map(|m| m.first_row_id).collect();
    assert_eq!(ids, [Some(1000), None, Some(77), None]);
    assert_eq!(written.next_row_id, Some(1030));
}

#[test]
fn v1_list_refuses_delete_manifests() {
    let mut m = list_entry(0, FormatVersion::V2);
    m.content = ManifestContent::Deletes;
    let meta = ManifestListMeta {
        format_version: FormatVersion::V1,
        snapshot_id: 1,
        parent_snapshot_id: None,
        sequence_number: 0,
        first_row_id: None,
    };
    assert!(write_manifest_list(&meta, &[m], Codec::Null).is_err());
}

#[test]
fn writer_counts_and_summaries() {
    let entries: Vec<_> = (0..9).map(|i| entry(i, FormatVersion::V2)).collect();
    let opts = NewManifest {
        format_version: FormatVersion::V2,
        content: ManifestContent::Data,
        table_schema_json: SCHEMA,
        partition_spec_json: SPEC,
        partition_spec_id: 0,
        codec: Codec::Deflate,
    };
    let mut w = ManifestWriter::new(&opts).unwrap();
    entries.iter().try_for_each(|e| w.add(e)).unwrap();
    let written = w.finish().unwrap();
    let mf = written.manifest_file("m.avro", 77, 9);
    assert_eq!(
        (
            mf.added_files_count,
            mf.existing_files_count,
            mf.deleted_files_count
        ),
        (Some(3), Some(3), Some(3))
    );
    assert_eq!(mf.added_rows_count, Some(100 + 103 + 106));
    assert_eq!(mf.min_sequence_number, 1);
    assert_eq!(mf.manifest_length, written.bytes.len() as i64);
    let p = mf.partitions.unwrap();
    assert!(p[0].contains_null);
    assert_eq!(p[1].lower_bound, Some(19_000i32.to_le_bytes().to_vec()));
    assert_eq!(p[1].upper_bound, Some(19_008i32.to_le_bytes().to_vec()));
    // v1 has no delete manifests.
    let v1_deletes = NewManifest {
        format_version: FormatVersion::V1,
        content: ManifestContent::Deletes,
        ..opts.clone()
    };
    assert!(ManifestWriter::new(&v1_deletes).is_err());
    // A data manifest refuses a delete file.
    let mut w = ManifestWriter::new(&opts).unwrap();
    let mut bad = entry(1, FormatVersion::V2);
    bad.data_file.content = DataContent::PositionDeletes;
    assert!(w.add(&bad).is_err());
}

#[test]
fn inheritance_follows_the_spec() {
    let entries: Vec<_> = (0..6).map(|i| entry(i, FormatVersion::V3)).collect();
    let bytes = write(FormatVersion::V3, Codec::Null, &entries);
    let mut projected = read_manifest_projected(&bytes, "m.avro").unwrap();
    let mut full = read_manifest(&bytes, "m.avro").unwrap().entries;
    let mut mf = list_entry(0, FormatVersion::V3);
    mf.sequence_number = 12;
    mf.first_row_id = Some(5000);
    inherit(&mut projected, &mf);
    inherit(&mut full, &mf);
    for (p, f) in projected.iter().zip(&full) {
        assert_eq!(
            (p.sequence_number, p.first_row_id),
            (f.sequence_number, f.data_file.first_row_id)
        );
    }
    // Entry 0 (ADDED, no first_row_id) gets 5000; entry 3 (row id 3000 written) keeps it.
    assert_eq!(projected[0].sequence_number, Some(12));
    assert_eq!(projected[0].file_sequence_number, Some(12));
    assert_eq!(projected[0].first_row_id, Some(5000));
    assert_eq!(projected[3].first_row_id, Some(3000));
    // Entry 4 (EXISTING, null) follows entry 0's records; entry 2 (DELETED) gets none.
    assert_eq!(
        projected[4].first_row_id,
        Some(5000 + projected[0].record_count)
    );
    assert_eq!(projected[2].first_row_id, None);
    // EXISTING and DELETED entries keep their written sequence numbers.
    assert_eq!(projected[1].sequence_number, Some(1));
    assert_eq!(projected[2].sequence_number, Some(2));
    // Two null-row-id ADDED data entries in a row: the second starts after the first's records.
    let mut two = vec![projected[0].clone(), projected[0].clone()];
    two.iter_mut().for_each(|e| e.first_row_id = None);
    inherit(&mut two, &mf);
    assert_eq!(two[1].first_row_id, Some(5000 + two[0].record_count));
    // v1: sequence numbers become 0 for every status, snapshot ids stay.
    let v1 = write(FormatVersion::V1, Codec::Null, &entries);
    let mut v1 = read_manifest_projected(&v1, "m1.avro").unwrap();
    let v1_list = list_entry(0, FormatVersion::V1);
    inherit(&mut v1, &v1_list);
    assert!(
        v1.iter()
            .all(|e| e.sequence_number == Some(0) && e.file_sequence_number == Some(0))
    );
    assert!(
        v1.iter()
            .all(|e| e.first_row_id.is_none() && e.snapshot_id.is_some())
    );
}

#[test]
fn delete_manifests_round_trip_with_v3_fields() {
    let opts = NewManifest {
        format_version: FormatVersion::V3,
        content: ManifestContent::Deletes,
        table_schema_json: SCHEMA,
        partition_spec_json: SPEC,
        partition_spec_id: 0,
        codec: Codec::Zstandard,
    };
    let mut w = ManifestWriter::new(&opts).unwrap();
    let mut e = entry(1, FormatVersion::V3);
    e.data_file.content = DataContent::PositionDeletes;
    e.data_file.file_format = "PUFFIN".into();
    e.data_file.referenced_data_file = Some("s3://bucket/t/data/f-0.parquet".into());
    e.data_file.content_offset = Some(4);
    e.data_file.content_size_in_bytes = Some(40);
    let mut eq = entry(2, FormatVersion::V3);
    eq.data_file.content = DataContent::EqualityDeletes;
    eq.data_file.equality_ids = Some(vec![1, 2]);
    w.add(&e).unwrap();
    w.add(&eq).unwrap();
    let written = w.finish().unwrap();
    assert_eq!(written.content, ManifestContent::Deletes);
    let m = read_manifest(&written.bytes, "d.avro").unwrap();
    assert_eq!(m.content(), ManifestContent::Deletes);
    assert_eq!(m.meta_str("content"), Some("deletes"));
    let back = m.entries;
    assert_eq!(back, vec![e, eq]);
    let p = read_manifest_projected(&written.bytes, "d.avro").unwrap();
    assert_eq!(p[0].content, DataContent::PositionDeletes);
    assert_eq!(
        p[0].referenced_data_file.as_deref(),
        Some("s3://bucket/t/data/f-0.parquet")
    );
    assert_eq!(p[1].content, DataContent::EqualityDeletes);
}
