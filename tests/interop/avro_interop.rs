//! Interop with pyiceberg and fastavro: we read every manifest list and manifest pyiceberg writes and
//! agree with fastavro; fastavro and pyiceberg read what we write, and our header schema keeps
//! `"logicalType": "map"` and field ids. Needs the venv python: `ICETRIM_PYTHON`, else
//! `<repo>/.venv/bin/python`; the test fails (never skips) when it is missing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use icetrim::internals::iceberg::avro::Codec;
use icetrim::internals::iceberg::manifest::{
    DataFile, ManifestEntry, ManifestWriter, NewManifest, PartitionTuple, PartitionValue,
    read_manifest, read_manifest_projected,
};
use icetrim::internals::iceberg::manifest_list::{
    ManifestListMeta, read_manifest_list, write_manifest_list,
};
use icetrim::internals::iceberg::spec::{DataContent, EntryStatus, FormatVersion, ManifestContent};
use serde_json::{Value as Json, json};

use crate::support::fixtures::python;

fn run_py(script: &str, args: &[&Path]) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/py")
        .join(script);
    let out = Command::new(python())
        .arg(&script)
        .args(args)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "{} failed: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

fn fastavro(paths: &[&Path]) -> Json {
    serde_json::from_str(&run_py("avro_dump.py", paths)).expect("dump is JSON")
}

fn hex(b: &Option<Vec<u8>>) -> Json {
    b.as_ref().map_or(Json::Null, |b| {
        Json::String(b.iter().map(|x| format!("{x:02x}")).collect())
    })
}

fn avro_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            avro_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "avro") {
            out.push(p);
        }
    }
}

fn long_map(m: &Option<BTreeMap<i32, i64>>) -> Json {
    m.as_ref().map_or(Json::Null, |m| {
        m.iter()
            .map(|(k, v)| json!({"key": k, "value": v}))
            .collect()
    })
}

fn bytes_map(m: &Option<BTreeMap<i32, Vec<u8>>>) -> Json {
    m.as_ref().map_or(Json::Null, |m| {
        m.iter()
            .map(|(k, v)| json!({"key": k, "value": hex(&Some(v.clone()))}))
            .collect()
    })
}

/// A partition tuple as pyiceberg's dump prints it (a JSON object of plain values).
fn partition_json(t: &PartitionTuple) -> Json {
    let plain = |v: &PartitionValue| match v {
        PartitionValue::Null => Json::Null,
        PartitionValue::String(s) => json!(s),
        PartitionValue::Int(i) => json!(i),
        PartitionValue::Long(i) => json!(i),
        other => json!(format!("{other:?}")),
    };
    t.fields
        .iter()
        .map(|(k, v)| (k.clone(), plain(v)))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

fn check_list(path: &Path, bytes: &[u8], dumped: &Json) {
    let ours =
        read_manifest_list(bytes, &path.display().to_string()).expect("we read pyiceberg's list");
    let theirs = dumped["records"].as_array().expect("records");
    assert_eq!(ours.len(), theirs.len());
    for (m, r) in ours.iter().zip(theirs) {
        let summaries: Json = m.partitions.as_ref().map_or(Json::Null, |p| {
            p.iter()
                .map(|s| json!({"contains_null": s.contains_null, "contains_nan": s.contains_nan,
                                "lower_bound": hex(&s.lower_bound), "upper_bound": hex(&s.upper_bound)}))
                .collect()
        });
        let mine = json!({
            "manifest_path": m.manifest_path, "manifest_length": m.manifest_length,
            "partition_spec_id": m.partition_spec_id, "content": m.content as i32,
            "sequence_number": m.sequence_number, "min_sequence_number": m.min_sequence_number,
            "added_snapshot_id": m.added_snapshot_id, "added_files_count": m.added_files_count,
            "existing_files_count": m.existing_files_count, "deleted_files_count": m.deleted_files_count,
            "added_rows_count": m.added_rows_count, "existing_rows_count": m.existing_rows_count,
            "deleted_rows_count": m.deleted_rows_count, "partitions": summaries, "key_metadata": hex(&m.key_metadata),
        });
        let keys = mine.as_object().expect("object").keys();
        // v1 lists lack content and sequence numbers: the spec defaults are 0.
        let v1_default = |k: &str| match k {
            "content" | "sequence_number" | "min_sequence_number" => json!(0),
            _ => Json::Null,
        };
        let theirs: serde_json::Map<_, _> = keys
            .map(|k| {
                (
                    k.clone(),
                    r.get(k).cloned().unwrap_or_else(|| v1_default(k)),
                )
            })
            .collect();
        assert_eq!(mine, Json::Object(theirs), "{}", path.display());
    }
}

fn check_manifest(path: &Path, bytes: &[u8], dumped: &Json) {
    let name = path.display().to_string();
    let full = read_manifest(bytes, &name).expect("we read pyiceberg's manifest");
    let projected = read_manifest_projected(bytes, &name).expect("projection");
    let theirs = dumped["records"].as_array().expect("records");
    assert_eq!(full.entries.len(), theirs.len());
    assert_eq!(
        full.meta_str("format-version"),
        dumped["metadata"]["format-version"].as_str()
    );
    for ((e, p), r) in full.entries.iter().zip(&projected).zip(theirs) {
        let d = &e.data_file;
        let mine = json!({
            "status": e.status as i32, "snapshot_id": e.snapshot_id, "sequence_number": e.sequence_number,
            "file_sequence_number": e.file_sequence_number,
            "data_file": {
                "content": d.content as i32, "file_path": d.file_path, "file_format": d.file_format,
                "partition": partition_json(&d.partition), "record_count": d.record_count,
                "file_size_in_bytes": d.file_size_in_bytes, "column_sizes": long_map(&d.column_sizes),
                "value_counts": long_map(&d.value_counts), "null_value_counts": long_map(&d.null_value_counts),
                "nan_value_counts": long_map(&d.nan_value_counts), "lower_bounds": bytes_map(&d.lower_bounds),
                "upper_bounds": bytes_map(&d.upper_bounds), "key_metadata": hex(&d.key_metadata),
                "split_offsets": d.split_offsets, "equality_ids": d.equality_ids, "sort_order_id": d.sort_order_id,
            }
        });
        let mut r = r.clone();
        let df = r["data_file"].as_object_mut().expect("data_file");
        df.retain(|k, _| mine["data_file"].get(k).is_some());
        // v1 manifests lack these fields: content defaults to data, the rest to null.
        df.entry("content").or_insert(json!(0));
        df.entry("equality_ids").or_insert(Json::Null);
        let top = r.as_object_mut().expect("entry");
        top.entry("sequence_number").or_insert(Json::Null);
        top.entry("file_sequence_number").or_insert(Json::Null);
        assert_eq!(mine, r, "{name}");
        assert_eq!(
            (p.file_path.as_str(), p.status, p.snapshot_id),
            (d.file_path.as_str(), e.status, e.snapshot_id)
        );
        assert_eq!(
            (p.record_count, p.sequence_number),
            (d.record_count, e.sequence_number)
        );
    }
}

#[test]
fn we_read_what_pyiceberg_writes() {
    let dir = tempfile::tempdir().expect("tempdir");
    assert_eq!(
        run_py("make_pyiceberg_tables.py", &[dir.path()]).trim(),
        "ok"
    );
    let mut files = Vec::new();
    avro_files(dir.path(), &mut files);
    let refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let dumped = fastavro(&refs);
    let (mut lists, mut manifests) = (0, 0);
    for path in &files {
        let bytes = std::fs::read(path).expect("read");
        let d = &dumped[path.display().to_string()];
        if path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("snap-"))
        {
            check_list(path, &bytes, d);
            lists += 1;
        } else {
            check_manifest(path, &bytes, d);
            manifests += 1;
        }
    }
    // plain: 3 snapshots; parted: 2; v1: 2.
    assert_eq!(lists, 7);
    assert!(manifests >= 7, "{manifests} manifests");
}

const SCHEMA: &str = r#"{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":false,"type":"long"},{"id":2,"name":"city","required":false,"type":"string"}]}"#;
const SPEC: &str = r#"{"spec-id":0,"fields":[{"source-id":2,"field-id":1000,"name":"city","transform":"identity"}]}"#;

#[test]
fn fastavro_and_pyiceberg_read_what_we_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = NewManifest {
        format_version: FormatVersion::V2,
        content: ManifestContent::Data,
        table_schema_json: SCHEMA,
        partition_spec_json: SPEC,
        partition_spec_id: 0,
        codec: Codec::Deflate,
    };
    let mut w = ManifestWriter::new(&opts).expect("writer");
    for i in 0..3i64 {
        let mut df = DataFile::new(
            DataContent::Data,
            format!("file:///t/data/{i}.parquet"),
            10 + i,
            100 + i,
        );
        df.partition = PartitionTuple::new(vec![(
            "city".into(),
            PartitionValue::String(format!("c{i}")),
        )]);
        df.column_sizes = Some(BTreeMap::from([(1, 7 + i), (2, 9)]));
        df.lower_bounds = Some(BTreeMap::from([(1, i.to_le_bytes().to_vec())]));
        let e = ManifestEntry {
            status: EntryStatus::Added,
            snapshot_id: Some(55),
            sequence_number: None,
            file_sequence_number: None,
            data_file: df,
            extra: Vec::new(),
        };
        w.add(&e).expect("add");
    }
    let written = w.finish().expect("finish");
    let manifest_path = dir.path().join("m0.avro");
    std::fs::write(&manifest_path, &written.bytes).expect("write manifest");
    let mf = written.manifest_file(format!("file://{}", manifest_path.display()), 55, 4);
    let meta = ManifestListMeta {
        format_version: FormatVersion::V2,
        snapshot_id: 55,
        parent_snapshot_id: None,
        sequence_number: 4,
        first_row_id: None,
    };
    let list_path = dir.path().join("snap-55-0-x.avro");
    std::fs::write(
        &list_path,
        write_manifest_list(&meta, &[mf], Codec::Deflate)
            .expect("list")
            .bytes,
    )
    .expect("write list");

    let dumped = fastavro(&[&manifest_path, &list_path]);
    let m = &dumped[manifest_path.display().to_string()];
    check_manifest(&manifest_path, &written.bytes, m);
    let schema: Json =
        serde_json::from_str(m["metadata"]["avro.schema"].as_str().expect("schema")).expect("json");
    let data_file = &schema["fields"][4]["type"];
    let column_sizes = data_file["fields"]
        .as_array()
        .expect("fields")
        .iter()
        .find(|f| f["name"] == "column_sizes");
    let column_sizes = column_sizes.expect("column_sizes field");
    assert_eq!(column_sizes["field-id"], 108);
    assert_eq!(column_sizes["type"][1]["logicalType"], "map");
    assert_eq!(column_sizes["type"][1]["items"]["name"], "k117_v118");
    assert_eq!(
        column_sizes["type"][1]["items"]["fields"][0]["field-id"],
        117
    );
    assert_eq!(
        m["metadata"]["partition-spec"],
        r#"[{"source-id":2,"field-id":1000,"name":"city","transform":"identity"}]"#
    );
    assert_eq!(m["metadata"]["content"], "data");
    let l = &dumped[list_path.display().to_string()];
    assert_eq!(l["metadata"]["sequence-number"], "4");
    assert_eq!(
        l["records"][0]["partitions"][0]["lower_bound"],
        hex(&Some(b"c0".to_vec()))
    );

    let py: Json = serde_json::from_str(&run_py("pyiceberg_read.py", &[&list_path])).expect("json");
    assert_eq!(py[0]["sequence_number"], 4);
    let entries = py[0]["entries"].as_array().expect("entries");
    assert_eq!(entries.len(), 3);
    assert_eq!(entries[2]["file_path"], "file:///t/data/2.parquet");
    assert_eq!(
        entries[2]["sequence_number"], 4,
        "pyiceberg inherits the list's sequence number"
    );
    assert_eq!(entries[2]["column_sizes"], json!({"1": 9, "2": 9}));
}
