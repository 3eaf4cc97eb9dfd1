//! Unit tests of locating a table's metadata.

use super::*;

const UUID: &str = "0f2a0c38-5d0e-4b4b-9a4c-3c4e5b6a7d8e";

fn metadata_with_log(log: &[&str]) -> TableMetadata {
    let entries: Vec<serde_json::Value> = log
        .iter()
        .map(|f| serde_json::json!({"metadata-file": f, "timestamp-ms": 1}))
        .collect();
    let doc = serde_json::json!({
        "format-version": 2, "table-uuid": UUID, "location": "/t",
        "last-sequence-number": 0, "last-updated-ms": 0, "last-column-id": 1,
        "current-schema-id": 0,
        "schemas": [{"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "id", "required": false, "type": "long"}]}],
        "default-spec-id": 0, "partition-specs": [{"spec-id": 0, "fields": []}],
        "last-partition-id": 999, "default-sort-order-id": 0,
        "sort-orders": [{"order-id": 0, "fields": []}],
        "metadata-log": entries
    });
    TableMetadata::parse(doc.to_string().as_bytes(), "/t/metadata/x.metadata.json").unwrap()
}

#[test]
fn a_fork_is_a_second_file_of_the_current_version() {
    let file = |v: u64, id: &str| format!("/t/metadata/{v:05}-{id}.metadata.json");
    let a = "0f2a0c38-5d0e-4b4b-9a4c-3c4e5b6a7d8a";
    let b = "0f2a0c38-5d0e-4b4b-9a4c-3c4e5b6a7d8b";
    let versions = |list: &[(u64, &str)]| {
        list.iter()
            .map(|(v, id)| (*v, file(*v, id)))
            .collect::<Vec<_>>()
    };
    // icetrim committed 4 by path; the catalog's writer committed its own 4 on 3.
    let forked = versions(&[(3, a), (4, a), (4, b)]);
    let log = [file(3, a)];
    let log: Vec<&str> = log.iter().map(String::as_str).collect();
    let fork = find_fork(&forked, &file(4, a), &metadata_with_log(&log)).expect("a fork");
    assert_eq!(
        fork,
        Fork {
            version: 4,
            ours: file(4, a),
            theirs: file(4, b)
        }
    );
    // A straight history has none; nor has a second file of an older version (a writer that
    // lost a commit race leaves one).
    let straight = versions(&[(3, a), (4, a)]);
    let lost_race = versions(&[(3, a), (3, b), (4, a)]);
    for all in [straight, lost_race] {
        assert_eq!(find_fork(&all, &file(4, a), &metadata_with_log(&log)), None);
    }
}

#[test]
fn a_copied_table_is_named_as_such() {
    let outside = [
        "file:///w/db/t/metadata/snap-1.avro",
        "file:///w/db/t/data/a.parquet",
        "file:///w/db/t/data/p=1/metadata/b.parquet",
    ];
    let hint = copied_or_moved_hint("/copy/t", &outside);
    assert!(
        hint.starts_with(
            ". Its manifests point at 'file:///w/db/t': was the table copied or moved?"
        ),
        "{hint}"
    );
    assert_eq!(copied_or_moved_hint("/copy/t", &["s3://b/x.parquet"]), "");
    let mixed = ["s3://b/t1/data/a.parquet", "s3://b/t2/data/a.parquet"];
    assert_eq!(copied_or_moved_hint("s3://b/t", &mixed), "");
    assert_eq!(copied_or_moved_hint::<&str>("s3://b/t", &[]), "");
}

#[test]
fn a_warehouse_hint_names_the_tables_below() {
    assert_eq!(warehouse_hint("/w", &[]), "");
    let hint = warehouse_hint("/w", &["/w/db/a".to_string(), "/w/db/b".to_string()]);
    assert_eq!(
        hint,
        ". There is no metadata/ folder in '/w'; tables below it: '/w/db/a', '/w/db/b'. Give \
         the table's own folder, e.g. '/w/db/a'"
    );
}

#[tokio::test]
async fn tables_are_found_two_levels_down_and_no_further() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap().to_string();
    for table in ["db/a", "db/b", "c", "x/y/z"] {
        std::fs::create_dir_all(dir.path().join(table).join("metadata")).unwrap();
    }
    std::fs::create_dir_all(dir.path().join("empty")).unwrap();
    let io = FileIO::local();
    let found = tables_below(&io, &root).await;
    assert_eq!(
        found,
        [
            format!("{root}/c"),
            format!("{root}/db/a"),
            format!("{root}/db/b")
        ]
    );
    let error = locate(&io, &root, &MetadataSettings::default())
        .await
        .unwrap_err();
    assert!(
        error
            .message()
            .contains(&format!("tables below it: '{root}/c', '{root}/db/a'")),
        "{error}"
    );
}

#[test]
fn file_names() {
    let v = parse_file_name("/t/metadata/v12.metadata.json").unwrap();
    assert_eq!((v.version, v.naming), (Some(12), NamingScheme::Versioned));
    let v = parse_file_name(&format!("v3-{UUID}.gz.metadata.json")).unwrap();
    assert_eq!(v.naming, NamingScheme::VersionedUuid);
    assert_eq!(v.compression, MetadataCompression::GzipInfix);
    let v = parse_file_name(&format!("00042-{UUID}.metadata.json.gz")).unwrap();
    assert_eq!(
        (v.version, v.naming),
        (Some(42), NamingScheme::Sequenced { width: 5 })
    );
    for bad in [
        format!("{UUID}.metadata.json"),
        "v.metadata.json".into(),
        "vx.metadata.json".into(),
        "v1.json".into(),
        "1-notauuid.metadata.json".into(),
        "v99999999999999999999999.metadata.json".into(),
    ] {
        assert_eq!(parse_file_name(&bad), None, "{bad}");
    }
}

#[test]
fn hint_names() {
    assert_eq!(hinted_file_name("7\n"), "v7.metadata.json");
    assert_eq!(
        hinted_file_name("t/metadata/v7.gz.metadata.json"),
        "v7.gz.metadata.json"
    );
    assert_eq!(
        hinted_file_name(&format!("00003-{UUID}")),
        format!("00003-{UUID}.metadata.json")
    );
}

/// Every kind of hint warning reads as one sentence: no run of spaces (a line continuation
/// that kept its indentation once put ten spaces into each of them).
#[test]
fn hint_warnings_have_no_runs_of_spaces() {
    let listing: Vec<String> = ["v1.metadata.json", "v2.metadata.json"]
        .map(String::from)
        .to_vec();
    let newest = "/t/metadata/v2.metadata.json";
    let warn = |hint: &str| hint_warning(hint, "/t", newest, 2, &listing);
    let cases = [
        ("garbage text", "names no metadata file"),
        ("/elsewhere/metadata/v2.metadata.json", "points outside"),
        ("7", "does not exist"),
        ("1", "older than the newest metadata file"),
    ];
    for (hint, says) in cases {
        let w = warn(hint).unwrap_or_else(|| panic!("no warning for {hint:?}"));
        assert!(w.contains(says), "{hint:?}: {w}");
        assert!(w.contains("readers that follow the hint may see"), "{w}");
        assert!(!w.contains("  "), "a run of spaces in {w:?}");
    }
    assert_eq!(warn("2"), None);
}

#[test]
fn explicit_paths() {
    assert_eq!(
        resolve_explicit("/t", "metadata/v2.metadata.json").unwrap(),
        "/t/metadata/v2.metadata.json"
    );
    assert!(resolve_explicit("/t", "../x/v2.metadata.json").is_err());
    assert!(resolve_explicit("/t", "/other/v2.metadata.json").is_err());
    assert!(resolve_explicit("file:///t", "/t/metadata/v2.metadata.json").is_ok());
}

#[test]
fn uuid_normalisation() {
    assert_eq!(normalize_uuid("AB-cd"), normalize_uuid("abcd"));
}
