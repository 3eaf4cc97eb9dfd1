//! Corrupt input: every reader fails with INCORRECT_DATA naming the file, and never panics.

use icetrim::ErrorKind;
use icetrim::internals::iceberg::avro::Codec;
use icetrim::internals::iceberg::avro::encode::{write_bytes, write_long};
use icetrim::internals::iceberg::manifest::{
    DataFile, ManifestEntry, ManifestWriter, NewManifest, for_each_projected, read_manifest,
    read_manifest_projected,
};
use icetrim::internals::iceberg::manifest::{PartitionTuple, PartitionValue};
use icetrim::internals::iceberg::manifest_list::{
    ManifestFile, ManifestListMeta, read_manifest_list, write_manifest_list,
};
use icetrim::internals::iceberg::spec::{DataContent, EntryStatus, FormatVersion, ManifestContent};
use proptest::prelude::*;

const SCHEMA: &str = r#"{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":true,"type":"long"}]}"#;
const SPEC: &str = r#"{"spec-id":0,"fields":[{"source-id":1,"field-id":1000,"name":"id","transform":"identity"}]}"#;

fn manifest(codec: Codec, n: i64) -> Vec<u8> {
    let opts = NewManifest {
        format_version: FormatVersion::V2,
        content: ManifestContent::Data,
        table_schema_json: SCHEMA,
        partition_spec_json: SPEC,
        partition_spec_id: 0,
        codec,
    };
    let mut w = ManifestWriter::new(&opts).unwrap();
    for i in 0..n {
        let mut df = DataFile::new(DataContent::Data, format!("/t/data/{i}.parquet"), i, 10 * i);
        df.partition = PartitionTuple::new(vec![("id".into(), PartitionValue::Long(i))]);
        df.column_sizes = Some([(1, 5)].into());
        let e = ManifestEntry {
            status: EntryStatus::Added,
            snapshot_id: Some(1),
            sequence_number: None,
            file_sequence_number: None,
            data_file: df,
            extra: Vec::new(),
        };
        w.add(&e).unwrap();
    }
    w.finish().unwrap().bytes
}

fn list() -> Vec<u8> {
    let m = ManifestFile {
        manifest_path: "/t/metadata/m.avro".into(),
        manifest_length: 1,
        partition_spec_id: 0,
        content: ManifestContent::Data,
        sequence_number: 1,
        min_sequence_number: 1,
        added_snapshot_id: 1,
        added_files_count: Some(1),
        existing_files_count: Some(0),
        deleted_files_count: Some(0),
        added_rows_count: Some(1),
        existing_rows_count: Some(0),
        deleted_rows_count: Some(0),
        partitions: None,
        key_metadata: None,
        first_row_id: None,
    };
    let meta = ManifestListMeta {
        format_version: FormatVersion::V2,
        snapshot_id: 1,
        parent_snapshot_id: None,
        sequence_number: 1,
        first_row_id: None,
    };
    write_manifest_list(&meta, &[m.clone(), m], Codec::Null)
        .unwrap()
        .bytes
}

/// Runs every reader; each must fail with INCORRECT_DATA naming the file, or succeed.
fn all_readers(bytes: &[u8]) -> Vec<Result<(), icetrim::Error>> {
    vec![
        read_manifest(bytes, "bad.avro").map(drop),
        read_manifest_projected(bytes, "bad.avro").map(drop),
        for_each_projected(bytes, "bad.avro", |_| {}),
        read_manifest_list(bytes, "bad.avro").map(drop),
    ]
}

fn assert_incorrect(r: &Result<(), icetrim::Error>) {
    if let Err(e) = r {
        assert_eq!(e.kind(), ErrorKind::IncorrectData, "{e}");
        assert!(e.message().contains("bad.avro"), "{e}");
    }
}

#[test]
fn truncation_at_every_offset_fails_cleanly() {
    for bytes in [
        manifest(Codec::Null, 3),
        manifest(Codec::Deflate, 3),
        manifest(Codec::Snappy, 2),
        list(),
    ] {
        // A cut right after a sync marker leaves a shorter valid file (the header, or whole blocks).
        let sync = &bytes[bytes.len() - 16..];
        let boundaries: Vec<usize> = (16..bytes.len())
            .filter(|&end| &bytes[end - 16..end] == sync)
            .collect();
        for cut in 0..bytes.len() {
            for r in all_readers(&bytes[..cut]) {
                assert!(
                    r.is_err() || boundaries.contains(&cut),
                    "truncated at {cut} of {} still read",
                    bytes.len()
                );
                assert_incorrect(&r);
            }
        }
    }
}

#[test]
fn bad_sync_marker_is_reported() {
    let mut bytes = manifest(Codec::Null, 2);
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    let err = read_manifest(&bytes, "bad.avro").unwrap_err();
    assert!(err.message().contains("sync marker"), "{err}");
}

fn header(schema: &str, codec: &str) -> Vec<u8> {
    let mut out = b"Obj\x01".to_vec();
    write_long(&mut out, 2);
    write_bytes(&mut out, b"avro.schema");
    write_bytes(&mut out, schema.as_bytes());
    write_bytes(&mut out, b"avro.codec");
    write_bytes(&mut out, codec.as_bytes());
    out.push(0);
    out.extend_from_slice(&[7u8; 16]);
    out
}

#[test]
fn bad_codec_schema_and_huge_lengths() {
    let valid = manifest(Codec::Null, 1);
    let m = read_manifest(&valid, "x").unwrap();
    let err = read_manifest(&header(&m.schema_json, "lzma"), "bad.avro").unwrap_err();
    assert!(err.message().contains("codec"), "{err}");

    let no_path = r#"{"type":"record","name":"manifest_entry","fields":[{"name":"status","type":"int"},
        {"name":"data_file","type":{"type":"record","name":"r2","fields":[{"name":"record_count","type":"long"}]}}]}"#;
    let err = read_manifest_projected(&header(no_path, "null"), "bad.avro").unwrap_err();
    assert!(err.message().contains("file_path"), "{err}");
    assert_eq!(err.kind(), ErrorKind::IncorrectData);
    let err = read_manifest_list(&header(no_path, "null"), "bad.avro").unwrap_err();
    assert!(err.message().contains("manifest_path"), "{err}");

    // A block claiming i64::MAX objects and a huge size; a string claiming a huge length.
    let mut bytes = header(&m.schema_json, "null");
    write_long(&mut bytes, i64::MAX);
    write_long(&mut bytes, i64::MAX);
    all_readers(&bytes).iter().for_each(|r| {
        assert!(r.is_err());
        assert_incorrect(r);
    });
    let mut bytes = header(&m.schema_json, "null");
    let mut block = Vec::new();
    write_long(&mut block, 1); // status
    write_long(&mut block, i64::MAX / 2); // a union index far out of range
    write_long(&mut bytes, 1);
    write_long(&mut bytes, block.len() as i64);
    bytes.extend_from_slice(&block);
    bytes.extend_from_slice(&[7u8; 16]);
    all_readers(&bytes).iter().for_each(|r| {
        assert!(r.is_err());
        assert_incorrect(r);
    });
    // Header metadata map claiming a huge count.
    let mut bytes = b"Obj\x01".to_vec();
    write_long(&mut bytes, i64::MAX);
    all_readers(&bytes).iter().for_each(assert_incorrect);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        all_readers(&bytes).iter().for_each(assert_incorrect);
        let mut with_magic = b"Obj\x01".to_vec();
        with_magic.extend_from_slice(&bytes);
        all_readers(&with_magic).iter().for_each(assert_incorrect);
    }

    #[test]
    fn mutated_files_never_panic(flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
                                 codec in 0usize..4) {
        let codec = [Codec::Null, Codec::Deflate, Codec::Snappy, Codec::Zstandard][codec];
        let mut bytes = manifest(codec, 4);
        for (at, v) in flips {
            let i = at % bytes.len();
            bytes[i] = v;
        }
        all_readers(&bytes).iter().for_each(assert_incorrect);
    }
}
