//! Reading the reachable set from an in-memory table written with icetrim's own writers.

use bytes::Bytes;
use serde_json::json;

use super::*;
use crate::error::ErrorKind;
use crate::iceberg::avro::Codec;
use crate::iceberg::manifest::{DataFile, ManifestEntry, ManifestWriter, NewManifest};
use crate::iceberg::manifest_list::{ManifestFile, ManifestListMeta, write_manifest_list};
use crate::iceberg::spec::{DataContent, EntryStatus, FormatVersion, ManifestContent};
use crate::io::RequestCounter;

const ROOT: &str = "memory:///wh/t";
const SCHEMA: &str = r#"{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":true,"type":"long"}]}"#;
const SPEC: &str = r#"{"spec-id":0,"fields":[]}"#;

fn at(rel: &str) -> String {
    format!("{ROOT}/{rel}")
}

fn entry(status: EntryStatus, content: DataContent, rel: &str) -> ManifestEntry {
    ManifestEntry {
        status,
        snapshot_id: Some(1),
        sequence_number: Some(1),
        file_sequence_number: Some(1),
        data_file: DataFile::new(content, at(rel), 1, 5),
        extra: Vec::new(),
    }
}

/// Writes a manifest at `rel`; returns its manifest-list entry.
async fn manifest(
    io: &FileIO,
    version: FormatVersion,
    content: ManifestContent,
    rel: &str,
    entries: &[ManifestEntry],
) -> ManifestFile {
    let opts = NewManifest {
        format_version: version,
        content,
        table_schema_json: SCHEMA,
        partition_spec_json: SPEC,
        partition_spec_id: 0,
        codec: Codec::Null,
    };
    let mut w = ManifestWriter::new(&opts).unwrap();
    for e in entries {
        w.add(e).unwrap();
    }
    let written = w.finish().unwrap();
    io.overwrite(&at(rel), Bytes::from(written.bytes.clone()))
        .await
        .unwrap();
    written.manifest_file(at(rel), 1, 1)
}

async fn list(io: &FileIO, rel: &str, snapshot_id: i64, files: &[ManifestFile]) {
    let meta = ManifestListMeta {
        format_version: FormatVersion::V2,
        snapshot_id,
        parent_snapshot_id: None,
        sequence_number: 1,
        first_row_id: None,
    };
    let bytes = write_manifest_list(&meta, files, Codec::Null)
        .unwrap()
        .bytes;
    io.overwrite(&at(rel), Bytes::from(bytes)).await.unwrap();
}

fn metadata(version: i64, snapshots: serde_json::Value) -> TableMetadata {
    let json = json!({
        "format-version": version,
        "table-uuid": "5f1c2b7e-0000-4000-8000-000000000001",
        "location": ROOT,
        "last-sequence-number": 2,
        "last-updated-ms": 1,
        "last-column-id": 1,
        "current-schema-id": 0,
        "schemas": [serde_json::from_str::<serde_json::Value>(SCHEMA).unwrap()],
        "default-spec-id": 0,
        "partition-specs": [serde_json::from_str::<serde_json::Value>(SPEC).unwrap()],
        "properties": {},
        "current-snapshot-id": 2,
        "snapshots": snapshots,
        "metadata-log": [{"metadata-file": at("metadata/v1.metadata.json"), "timestamp-ms": 1}],
        "statistics": [{"snapshot-id": 2, "statistics-path": at("metadata/s.puffin"),
            "file-size-in-bytes": 1, "file-footer-size-in-bytes": 1, "blob-metadata": []}],
        "partition-statistics": [{"snapshot-id": 2, "statistics-path": at("metadata/p.parquet"),
            "file-size-in-bytes": 1}]
    });
    TableMetadata::parse(
        json.to_string().as_bytes(),
        &at("metadata/v2.metadata.json"),
    )
    .unwrap()
}

/// Two snapshots whose lists share the data manifest; a delete manifest on the second.
async fn v2_table(io: &FileIO) -> TableMetadata {
    use DataContent::{Data, PositionDeletes};
    use EntryStatus::{Added, Deleted, Existing};
    let data = manifest(
        io,
        FormatVersion::V2,
        ManifestContent::Data,
        "metadata/m-data.avro",
        &[
            entry(Added, Data, "data/a.parquet"),
            entry(Existing, Data, "data/b.parquet"),
            entry(Deleted, Data, "data/d.parquet"),
        ],
    )
    .await;
    let deletes = manifest(
        io,
        FormatVersion::V2,
        ManifestContent::Deletes,
        "metadata/m-del.avro",
        &[entry(Added, PositionDeletes, "data/p-deletes.parquet")],
    )
    .await;
    list(io, "metadata/snap-1.avro", 1, std::slice::from_ref(&data)).await;
    list(io, "metadata/snap-2.avro", 2, &[data, deletes]).await;
    let snapshot = |id: i64, rel: &str| {
        json!({"snapshot-id": id, "sequence-number": id, "timestamp-ms": id,
               "manifest-list": at(rel), "summary": {"operation": "append"}})
    };
    metadata(
        2,
        json!([
            snapshot(1, "metadata/snap-1.avro"),
            snapshot(2, "metadata/snap-2.avro")
        ]),
    )
}

async fn collect(io: &FileIO, md: &TableMetadata) -> Result<ReachableFiles> {
    collect_reachable(io, md, &at("metadata/v2.metadata.json"), ROOT, 4).await
}

fn reachable(r: &ReachableFiles, rel: &str) -> bool {
    r.lookup(&path_key(&at(rel))) == Lookup::Reachable
}

#[tokio::test]
async fn everything_the_metadata_reaches_each_file_read_once() {
    let counter = RequestCounter::new();
    let io = FileIO::memory().with_request_counter(counter.clone());
    let md = v2_table(&io).await;
    let before = counter.snapshot().get;
    let r = collect(&io, &md).await.unwrap();
    assert_eq!(counter.snapshot().get - before, 4, "2 lists + 2 manifests");
    for rel in [
        "metadata/v2.metadata.json",
        "metadata/v1.metadata.json",
        "metadata/version-hint.text",
        "metadata/s.puffin",
        "metadata/p.parquet",
        "metadata/snap-1.avro",
        "metadata/snap-2.avro",
        "metadata/m-data.avro",
        "metadata/m-del.avro",
        "data/a.parquet",
        "data/b.parquet",
        "data/p-deletes.parquet",
    ] {
        assert!(reachable(&r, rel), "{rel}");
    }
    assert!(
        !reachable(&r, "data/d.parquet"),
        "a DELETED entry does not protect"
    );
    assert_eq!(r.len(), 12);
    assert_eq!(r.outside().0, 0);
}

#[tokio::test]
async fn an_unreadable_manifest_fails_the_collection() {
    let io = FileIO::memory();
    let md = v2_table(&io).await;
    io.delete(&at("metadata/m-del.avro")).await.unwrap();
    let e = collect(&io, &md).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::FileDoesntExist);
    assert!(e.message().contains("m-del.avro"), "{}", e.message());
    io.overwrite(&at("metadata/m-del.avro"), Bytes::from_static(b"not avro"))
        .await
        .unwrap();
    let e = collect(&io, &md).await.unwrap_err();
    assert!(e.message().contains("m-del.avro"), "{}", e.message());
    io.delete(&at("metadata/snap-1.avro")).await.unwrap();
    let e = collect(&io, &md).await.unwrap_err();
    assert!(e.message().contains("snap-1.avro"), "{}", e.message());
}

#[tokio::test]
async fn v1_inline_manifests() {
    let io = FileIO::memory();
    let file = manifest(
        &io,
        FormatVersion::V1,
        ManifestContent::Data,
        "metadata/m1.avro",
        &[entry(
            EntryStatus::Added,
            DataContent::Data,
            "data/a.parquet",
        )],
    )
    .await;
    let md = metadata(
        1,
        json!([{"snapshot-id": 2, "timestamp-ms": 1, "manifests": [file.manifest_path],
                "summary": {"operation": "append"}}]),
    );
    let r = collect(&io, &md).await.unwrap();
    assert!(reachable(&r, "metadata/m1.avro"));
    assert!(reachable(&r, "data/a.parquet"));
}

#[tokio::test]
async fn references_outside_the_location_are_reported() {
    let io = FileIO::memory();
    let md = v2_table(&io).await;
    let r = collect_reachable(
        &io,
        &md,
        &at("metadata/v2.metadata.json"),
        "memory:///wh/other",
        2,
    )
    .await
    .unwrap();
    let (count, examples) = r.outside();
    assert_eq!(count, 11, "all but the version hint");
    assert_eq!(examples.len(), OUTSIDE_EXAMPLES);
    assert!(
        r.len() == 1,
        "only the version hint of the other location is inside"
    );
}

#[tokio::test]
async fn a_manifest_spelled_two_ways_is_read_once() {
    let counter = RequestCounter::new();
    let io = FileIO::memory().with_request_counter(counter.clone());
    let data = manifest(
        &io,
        FormatVersion::V2,
        ManifestContent::Data,
        "metadata/m.avro",
        &[entry(
            EntryStatus::Added,
            DataContent::Data,
            "data/a.parquet",
        )],
    )
    .await;
    let mut respelled = data.clone();
    respelled.manifest_path = "memory:///wh//t/metadata/m.avro".into();
    list(&io, "metadata/snap-1.avro", 1, &[data]).await;
    list(&io, "metadata/snap-2.avro", 2, &[respelled]).await;
    let snapshot = |id: i64, rel: &str| {
        json!({"snapshot-id": id, "sequence-number": id, "timestamp-ms": id,
               "manifest-list": at(rel), "summary": {"operation": "append"}})
    };
    let md = metadata(
        2,
        json!([
            snapshot(1, "metadata/snap-1.avro"),
            snapshot(2, "metadata/snap-2.avro")
        ]),
    );
    let before = counter.snapshot().get;
    let r = collect(&io, &md).await.unwrap();
    assert_eq!(counter.snapshot().get - before, 3, "2 lists + 1 manifest");
    assert!(reachable(&r, "metadata/m.avro"));
    assert!(reachable(&r, "data/a.parquet"));
    assert!(!reachable(&r, "data/b.parquet"));
}

#[tokio::test]
async fn entries_outside_the_location_are_counted_with_examples() {
    let io = FileIO::memory();
    let mut entries = vec![entry(
        EntryStatus::Added,
        DataContent::Data,
        "data/in.parquet",
    )];
    for i in 0..12 {
        let mut e = entry(EntryStatus::Existing, DataContent::Data, "x");
        e.data_file = DataFile::new(
            DataContent::Data,
            format!("memory:///elsewhere/{i}.parquet"),
            1,
            5,
        );
        entries.push(e);
    }
    let mut gone = entry(EntryStatus::Deleted, DataContent::Data, "x");
    gone.data_file = DataFile::new(DataContent::Data, "memory:///elsewhere/d.parquet", 1, 5);
    entries.push(gone);
    let file = manifest(
        &io,
        FormatVersion::V2,
        ManifestContent::Data,
        "metadata/m.avro",
        &entries,
    )
    .await;
    list(&io, "metadata/snap-1.avro", 1, &[file]).await;
    let md = metadata(
        2,
        json!([{"snapshot-id": 1, "sequence-number": 1, "timestamp-ms": 1,
                "manifest-list": at("metadata/snap-1.avro"), "summary": {"operation": "append"}}]),
    );
    let r = collect(&io, &md).await.unwrap();
    let (count, examples) = r.outside();
    assert_eq!(count, 12, "live entries only");
    assert_eq!(examples.len(), OUTSIDE_EXAMPLES);
    assert_eq!(examples[0], "memory:///elsewhere/0.parquet");
    assert!(
        examples
            .iter()
            .all(|e| e.starts_with("memory:///elsewhere/"))
    );
    assert!(reachable(&r, "data/in.parquet"));
    assert!(reachable(&r, "metadata/m.avro"));
}

/// A relative path of 1–4 segments from a small alphabet (so draws overlap).
fn rel_path() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    proptest::collection::vec("[ab=_.]{1,3}", 1..5).prop_map(|segments| segments.join("/"))
}

proptest::proptest! {
    /// Against a plain set of relative paths: every referenced file is found under any spelling
    /// of the location's store, nothing else is, and another bucket's same path is a mismatch.
    #[test]
    fn lookups_agree_with_a_set_of_relative_paths(
        inserted in proptest::collection::vec(rel_path(), 0..12),
        probed in proptest::collection::vec(rel_path(), 0..12),
    ) {
        let mut r = ReachableFiles::new("s3://b/wh/t");
        let spellings = ["s3://b/wh/t/", "s3a://b/wh/t/", "s3n://b//wh/t//"];
        for (i, rel) in inserted.iter().enumerate() {
            r.insert(&format!("{}{rel}", spellings[i % spellings.len()]));
        }
        let model: std::collections::HashSet<String> = inserted
            .iter()
            .map(|rel| path_key(&format!("s3://b/wh/t/{rel}")))
            .collect();
        assert_eq!(r.outside().0, inserted.iter().filter(|rel| rel.split('/').any(|s| s == "..")).count());
        for rel in inserted.iter().chain(&probed) {
            let key = path_key(&format!("s3://b/wh/t/{rel}"));
            let expected = if model.contains(&key) && !rel.split('/').any(|s| s == "..") {
                Lookup::Reachable
            } else {
                Lookup::Unreachable
            };
            assert_eq!(r.lookup(&key), expected, "{rel}");
            let other = path_key(&format!("s3://c/wh/t/{rel}"));
            let mismatch = match expected {
                Lookup::Reachable => Lookup::PrefixMismatch,
                other => other,
            };
            assert_eq!(r.lookup(&other), mismatch, "{rel}");
        }
    }
}
