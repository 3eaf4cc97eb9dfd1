//! `remove_orphan_files` on the S3 (moto) and Azure (azurite) emulators: a table written in place
//! in the bucket with icetrim's own writers (metadata, manifest list, data and delete manifests,
//! content files), strays of every category, hidden strays and a young stray. Object stores set
//! last-modified times themselves, so "old" and "young" are told apart by `older_than`: the old
//! files are written, then `older_than` is taken after a pause, then the young stray is written.
//! The emulators must be running (`scripts/emulators.sh start`, then `source target/emulators.env`);
//! without them these tests fail.

use crate::support as common;
use crate::support::orphans as orphans_support;
use crate::support::relocate;

use std::time::Duration;

use bytes::Bytes;
use icetrim::OrphanMetrics;
use icetrim::internals::iceberg::avro::Codec;
use icetrim::internals::iceberg::manifest::{DataFile, ManifestEntry, ManifestWriter, NewManifest};
use icetrim::internals::iceberg::manifest_list::{ManifestListMeta, write_manifest_list};
use icetrim::internals::iceberg::spec::{DataContent, EntryStatus, FormatVersion, ManifestContent};
use icetrim::internals::io::FileIO;
use orphans_support::*;
use serde_json::json;

const SCHEMA: &str = r#"{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":true,"type":"long"}]}"#;
const SPEC: &str = r#"{"spec-id":0,"fields":[]}"#;
const SNAPSHOT: i64 = 1;

/// Live files of the table (relative to the root).
const LIVE: [&str; 6] = [
    "metadata/v1.metadata.json",
    "metadata/snap-1-1-live.avro",
    "metadata/live-data-m0.avro",
    "metadata/live-deletes-m0.avro",
    "data/live-1.parquet",
    "data/live-0001-deletes.parquet",
];
/// Old strays and what they count as.
const OLD_STRAYS: [(&str, &str); 8] = [
    ("data/orphan-data-1.parquet", "data"),
    // Named only by a DELETED entry: not reachable.
    ("data/deleted-entry.parquet", "data"),
    ("data/orphan-0001-deletes.parquet", "position_delete"),
    ("data/orphan-eq-del-0001.parquet", "equality_delete"),
    ("metadata/orphan-m0.avro", "manifest"),
    ("metadata/snap-9-1-orphan.avro", "manifest_list"),
    ("metadata/v0.metadata.json", "metadata"),
    ("metadata/orphan-1.stats", "statistics"),
];
const HIDDEN_STRAYS: [&str; 3] = [
    "_temporary/0/part-0.parquet",
    ".hidden/x.parquet",
    "data/.live-1.parquet.crc",
];
const YOUNG_STRAY: &str = "data/orphan-young.parquet";

fn entry(status: EntryStatus, content: DataContent, path: String) -> ManifestEntry {
    ManifestEntry {
        status,
        snapshot_id: Some(SNAPSHOT),
        sequence_number: Some(1),
        file_sequence_number: Some(1),
        data_file: DataFile::new(content, path, 1, 5),
        extra: Vec::new(),
    }
}

fn manifest(
    content: ManifestContent,
    entries: &[ManifestEntry],
) -> icetrim::internals::iceberg::manifest::WrittenManifest {
    let opts = NewManifest {
        format_version: FormatVersion::V2,
        content,
        table_schema_json: SCHEMA,
        partition_spec_json: SPEC,
        partition_spec_id: 0,
        codec: Codec::Null,
    };
    let mut w = ManifestWriter::new(&opts).expect("manifest writer");
    for e in entries {
        w.add(e).expect("add entry");
    }
    w.finish().expect("finish manifest")
}

async fn put(io: &FileIO, uri: &str, bytes: Vec<u8>) {
    io.overwrite(uri, Bytes::from(bytes))
        .await
        .unwrap_or_else(|e| panic!("write {uri}: {e}"));
}

/// Writes a one-snapshot v2 table (a data and a delete manifest) at `root`.
async fn write_table(io: &FileIO, root: &str) {
    let at = |rel: &str| format!("{root}/{rel}");
    put(io, &at("data/live-1.parquet"), b"data".to_vec()).await;
    put(
        io,
        &at("data/live-0001-deletes.parquet"),
        b"deletes".to_vec(),
    )
    .await;
    put(
        io,
        &at("data/deleted-entry.parquet"),
        b"gone from the table".to_vec(),
    )
    .await;
    let data = manifest(
        ManifestContent::Data,
        &[
            entry(
                EntryStatus::Added,
                DataContent::Data,
                at("data/live-1.parquet"),
            ),
            entry(
                EntryStatus::Deleted,
                DataContent::Data,
                at("data/deleted-entry.parquet"),
            ),
        ],
    );
    let deletes = manifest(
        ManifestContent::Deletes,
        &[entry(
            EntryStatus::Added,
            DataContent::PositionDeletes,
            at("data/live-0001-deletes.parquet"),
        )],
    );
    let files = [
        data.manifest_file(at("metadata/live-data-m0.avro"), SNAPSHOT, 1),
        deletes.manifest_file(at("metadata/live-deletes-m0.avro"), SNAPSHOT, 1),
    ];
    put(io, &at("metadata/live-data-m0.avro"), data.bytes).await;
    put(io, &at("metadata/live-deletes-m0.avro"), deletes.bytes).await;
    let meta = ManifestListMeta {
        format_version: FormatVersion::V2,
        snapshot_id: SNAPSHOT,
        parent_snapshot_id: None,
        sequence_number: 1,
        first_row_id: None,
    };
    let list = write_manifest_list(&meta, &files, Codec::Null).expect("manifest list");
    put(io, &at("metadata/snap-1-1-live.avro"), list.bytes).await;
    let schema: serde_json::Value = serde_json::from_str(SCHEMA).expect("schema");
    let spec: serde_json::Value = serde_json::from_str(SPEC).expect("spec");
    let metadata = json!({
        "format-version": 2,
        "table-uuid": "5f1c2b7e-0000-4000-8000-000000000001",
        "location": root,
        "last-sequence-number": 1,
        "last-updated-ms": 1_700_000_000_000i64,
        "last-column-id": 1,
        "current-schema-id": 0,
        "schemas": [schema],
        "default-spec-id": 0,
        "partition-specs": [spec],
        "last-partition-id": 999,
        "default-sort-order-id": 0,
        "sort-orders": [{"order-id": 0, "fields": []}],
        "properties": {},
        "current-snapshot-id": SNAPSHOT,
        "refs": {"main": {"snapshot-id": SNAPSHOT, "type": "branch"}},
        "snapshots": [{
            "snapshot-id": SNAPSHOT,
            "sequence-number": 1,
            "timestamp-ms": 1_700_000_000_000i64,
            "manifest-list": at("metadata/snap-1-1-live.avro"),
            "summary": {"operation": "append"},
            "schema-id": 0
        }],
        "snapshot-log": [{"snapshot-id": SNAPSHOT, "timestamp-ms": 1_700_000_000_000i64}],
        "metadata-log": []
    });
    let bytes = serde_json::to_vec(&metadata).expect("metadata json");
    put(io, &at("metadata/v1.metadata.json"), bytes).await;
    // The stray older version is older: a metadata file at least as new as the planned one
    // (version or last-updated-ms) is never deleted.
    let mut older = metadata;
    older["last-updated-ms"] = json!(1_699_999_999_000i64);
    let bytes = serde_json::to_vec(&older).expect("metadata json");
    put(io, &at("metadata/v0.metadata.json"), bytes).await;
}

async fn exists(io: &FileIO, uri: &str) -> bool {
    io.head(uri).await.is_ok()
}

async fn core_scenario(io: FileIO, root: String) {
    write_table(&io, &root).await;
    for (rel, _) in OLD_STRAYS.iter().filter(|(rel, _)| {
        *rel != "data/deleted-entry.parquet" && *rel != "metadata/v0.metadata.json"
    }) {
        put(&io, &format!("{root}/{rel}"), b"stray".to_vec()).await;
    }
    for rel in HIDDEN_STRAYS {
        put(&io, &format!("{root}/{rel}"), b"hidden".to_vec()).await;
    }
    // Listed times have whole-second precision: keep a clear second on each side.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let older_than = chrono::Utc::now().timestamp_millis();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    put(&io, &format!("{root}/{YOUNG_STRAY}"), b"young".to_vec()).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let now = chrono::Utc::now().timestamp_millis();

    let table = local_table(std::path::Path::new(&root), &[]);
    let rt = runtime(now, Some(io.clone()));
    let expected = OrphanMetrics {
        deleted_data_files_count: 2,
        deleted_position_delete_files_count: 1,
        deleted_equality_delete_files_count: 1,
        deleted_manifest_files_count: 1,
        deleted_manifest_lists_count: 1,
        deleted_metadata_files_count: 1,
        deleted_statistics_files_count: 1,
        ..Default::default()
    };
    let dry = run_on(&rt, &table, options(Some(older_than), true), false)
        .await
        .unwrap();
    assert_eq!(metrics(&dry), expected);
    let real = run_on(&rt, &table, options(Some(older_than), false), false)
        .await
        .unwrap();
    assert_eq!(metrics(&real), expected, "{:?}", real.warnings);
    for (rel, _) in OLD_STRAYS {
        assert!(
            !exists(&io, &format!("{root}/{rel}")).await,
            "{rel} survived"
        );
    }
    for rel in LIVE
        .iter()
        .chain(HIDDEN_STRAYS.iter())
        .chain([&YOUNG_STRAY])
    {
        assert!(exists(&io, &format!("{root}/{rel}")).await, "{rel} deleted");
    }
    let again = run_on(&rt, &table, options(Some(older_than), false), false)
        .await
        .unwrap();
    assert_eq!(metrics(&again), OrphanMetrics::default());
    let scoped = icetrim::internals::plan::OrphanOptions {
        location: Some("data".into()),
        ..options(Some(now), true)
    };
    let young = run_on(&rt, &table, scoped, false).await.unwrap();
    assert_eq!(
        metrics(&young).deleted_data_files_count,
        1,
        "the young stray, now old enough"
    );
    let missing = icetrim::internals::plan::OrphanOptions {
        location: Some("nope".into()),
        ..options(Some(now), true)
    };
    let e = run_on(&rt, &table, missing, false).await.unwrap_err();
    assert_eq!(
        e.message(),
        format!("Scan path '{root}/nope/' does not exist")
    );
}

#[tokio::test]
async fn s3_emulator_core_scenario() {
    let (io, root) = common::s3_emulator("orphans");
    core_scenario(io, root).await;
}

#[tokio::test]
async fn azure_emulator_core_scenario() {
    let (io, root) = common::azure_emulator("orphans");
    core_scenario(io, root).await;
}

/// Tables inside one another's locations, built by pyiceberg and copied to the S3
/// emulator: the refusal names them, protect mode deletes only the table's own strays.
#[tokio::test]
async fn s3_emulator_other_tables_under_the_location() {
    use orphans_support::nested::Nested;
    use relocate::{Rewrite, Root, copy_table};
    let nested = Nested::build();
    let local_root = nested.root();
    let local_root = local_root.to_str().expect("UTF-8 path");
    let (io, root) = common::s3_emulator("nested");
    let src = Root::new(FileIO::local(), local_root);
    let dst = Root::new(io.clone(), &root);
    copy_table(&src, &dst, &Rewrite::from_local(local_root, &root), false).await;
    let before: Vec<String> = dst.files().await.into_iter().map(|f| f.0).collect();
    assert!(before.len() > 40, "{before:?}");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let older_than = chrono::Utc::now().timestamp_millis();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let now = chrono::Utc::now().timestamp_millis();
    let rt = runtime(now, Some(io.clone()));
    let a = local_table(std::path::Path::new(&format!("{root}/a")), &[]);
    let files = |list: Vec<(String, u64, Option<i64>)>| -> Vec<String> {
        list.into_iter().map(|f| f.0).collect()
    };
    for location in [None, Some("data".to_string())] {
        let refused = icetrim::internals::plan::OrphanOptions {
            location,
            ..options(Some(older_than), false)
        };
        let e = run_on(&rt, &a, refused, false).await.unwrap_err();
        assert_eq!(e.kind(), icetrim::ErrorKind::BadArguments, "{e}");
        for other in ["a/nested_b", "a/data/b", "a/tables/c"] {
            assert!(
                e.message().contains(&format!("'{root}/{other}'")),
                "{other} not named: {e}"
            );
        }
    }
    assert_eq!(
        files(dst.files().await),
        before,
        "a refused run deleted files"
    );
    let protect = icetrim::internals::plan::OrphanOptions {
        protect_other_tables: true,
        ..options(Some(older_than), false)
    };
    let r = run_on(&rt, &a, protect.clone(), false).await.unwrap();
    assert_eq!(
        metrics(&r),
        OrphanMetrics {
            deleted_data_files_count: 1,
            deleted_manifest_lists_count: 1,
            ..Default::default()
        },
        "{:?}",
        r.warnings
    );
    let expected: Vec<String> = before
        .iter()
        .filter(|f| *f != "a/data/stray-a.parquet" && *f != "a/metadata/snap-999-1-stray.avro")
        .cloned()
        .collect();
    assert_eq!(files(dst.files().await), expected);
    // D, whose location is A's parent: only D's own stray would go.
    let d = local_table(std::path::Path::new(&root), &[]);
    let dry = icetrim::internals::plan::OrphanOptions {
        dry_run: true,
        ..protect
    };
    let r = run_on(&rt, &d, dry, false).await.unwrap();
    assert_eq!(
        metrics(&r),
        OrphanMetrics {
            deleted_data_files_count: 1,
            ..Default::default()
        }
    );
}
