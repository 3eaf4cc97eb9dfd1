//! The pure parts of the Glue convention (no I/O): which tables are Iceberg, the name of the next
//! metadata file, the parameters an `UpdateTable` sends, and whether a `GetTable` confirms a
//! commit.

use std::collections::{BTreeMap, HashMap};

use super::{METADATA_LOCATION, PREVIOUS_METADATA_LOCATION, TABLE_TYPE};
use crate::iceberg::locate::{file_name, parse_file_name};
use crate::iceberg::metadata::{MetadataCompression, TableMetadata};

/// The table property naming a metadata folder other than `<location>/metadata`.
pub const WRITE_METADATA_PATH: &str = "write.metadata.path";

/// A parameter by key (Glue keys are case-sensitive; Java and pyiceberg write them lower case).
pub fn parameter<'a>(parameters: &'a HashMap<String, String>, key: &str) -> Option<&'a str> {
    parameters.get(key).map(String::as_str)
}

/// Whether a Glue table's parameters mark it Iceberg (`table_type` = `ICEBERG`, any case).
pub fn is_iceberg(parameters: Option<&HashMap<String, String>>) -> bool {
    parameters
        .and_then(|p| parameter(p, TABLE_TYPE))
        .is_some_and(|t| t.eq_ignore_ascii_case("iceberg"))
}

/// Where the metadata file that follows `current_location` goes, as Java's and pyiceberg's Glue
/// catalogs name it: `<metadata folder>/<NNNNN>-<uuid>.metadata.json`, `NNNNN` the current file's
/// version + 1 zero-padded to 5 digits (0 when the current name carries no version), in the
/// folder `write.metadata.path` names, else `<table location>/metadata`; the current file's
/// compression (`.gz.metadata.json`) is kept. `uuid` is the random part.
pub fn next_metadata_location(
    current_location: &str,
    metadata: &TableMetadata,
    uuid: uuid::Uuid,
) -> String {
    let current_name = file_name(current_location);
    let version = parse_file_name(current_name)
        .and_then(|n| n.version)
        .map_or(0, |v| v.saturating_add(1));
    let compression =
        MetadataCompression::from_file_name(current_name).unwrap_or(MetadataCompression::None);
    let folder = match metadata.property(WRITE_METADATA_PATH) {
        Some(path) if !path.trim().is_empty() => path.trim().trim_end_matches('/').to_string(),
        _ => format!("{}/metadata", metadata.location().trim_end_matches('/')),
    };
    format!("{folder}/{version:05}-{uuid}{}", compression.file_suffix())
}

/// The parameters of the `UpdateTable` that points the table at `new_location`: the table's own
/// parameters, the table's Iceberg `properties` mirrored in (as Java and pyiceberg do),
/// `metadata_location` = `new_location`, `previous_metadata_location` = `read_location` (the
/// location the commit was planned on) and `table_type` kept.
pub fn updated_parameters(
    current: Option<&HashMap<String, String>>,
    new_location: &str,
    read_location: &str,
    properties: &BTreeMap<String, String>,
) -> HashMap<String, String> {
    let mut parameters = current.cloned().unwrap_or_default();
    for (key, value) in properties {
        parameters.insert(key.clone(), value.clone());
    }
    if !is_iceberg(Some(&parameters)) {
        parameters.insert(TABLE_TYPE.to_string(), "ICEBERG".to_string());
    }
    parameters.insert(METADATA_LOCATION.to_string(), new_location.to_string());
    parameters.insert(
        PREVIOUS_METADATA_LOCATION.to_string(),
        read_location.to_string(),
    );
    parameters
}

/// Whether the metadata location a `GetTable` shows is the file we committed (the same object:
/// `s3a://` and `s3://` spellings, doubled slashes and a `file:` scheme are the same place).
pub fn same_location(shown: &str, ours: &str) -> bool {
    crate::io::path_key(shown) == crate::io::path_key(ours)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata(location: &str, properties: &[(&str, &str)]) -> TableMetadata {
        let props: serde_json::Map<String, serde_json::Value> = properties
            .iter()
            .map(|(k, v)| (k.to_string(), serde_json::Value::String(v.to_string())))
            .collect();
        let json = serde_json::json!({
            "format-version": 2,
            "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
            "location": location,
            "last-sequence-number": 0,
            "last-updated-ms": 1,
            "last-column-id": 1,
            "current-schema-id": 0,
            "schemas": [{"type": "struct", "schema-id": 0, "fields": [
                {"id": 1, "name": "x", "required": false, "type": "long"}]}],
            "default-spec-id": 0,
            "partition-specs": [{"spec-id": 0, "fields": []}],
            "last-partition-id": 999,
            "default-sort-order-id": 0,
            "sort-orders": [{"order-id": 0, "fields": []}],
            "properties": props,
        });
        let serde_json::Value::Object(map) = json else {
            unreachable!("an object literal")
        };
        TableMetadata::from_json(map, "test").expect("valid metadata")
    }

    const UUID: uuid::Uuid = uuid::Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef);

    #[test]
    fn next_name_follows_pyiceberg() {
        let m = metadata("s3://b/wh/db.db/t", &[]);
        let next = next_metadata_location(
            "s3://b/wh/db.db/t/metadata/00002-6c97e413-d51b-4538-ac70-12fe2a85cb83.metadata.json",
            &m,
            UUID,
        );
        assert_eq!(
            next,
            "s3://b/wh/db.db/t/metadata/00003-01234567-89ab-cdef-0123-456789abcdef.metadata.json"
        );
    }

    #[test]
    fn next_name_keeps_compression_and_versions_of_other_schemes() {
        let m = metadata("s3://b/t/", &[]);
        assert_eq!(
            next_metadata_location("s3://b/t/metadata/v7.gz.metadata.json", &m, UUID),
            "s3://b/t/metadata/00008-01234567-89ab-cdef-0123-456789abcdef.gz.metadata.json"
        );
        // A name without a version: the next is version 0, as in Java and pyiceberg.
        assert_eq!(
            next_metadata_location("s3://b/t/metadata/current.metadata.json", &m, UUID),
            "s3://b/t/metadata/00000-01234567-89ab-cdef-0123-456789abcdef.metadata.json"
        );
    }

    #[test]
    fn next_name_honours_write_metadata_path() {
        let m = metadata("s3://b/t", &[(WRITE_METADATA_PATH, "s3://other/meta/")]);
        assert_eq!(
            next_metadata_location(
                "s3://b/t/metadata/00001-6c97e413-d51b-4538-ac70-12fe2a85cb83.metadata.json",
                &m,
                UUID
            ),
            "s3://other/meta/00002-01234567-89ab-cdef-0123-456789abcdef.metadata.json"
        );
    }

    #[test]
    fn iceberg_tables_by_table_type_any_case() {
        let p = |v: &str| HashMap::from([(TABLE_TYPE.to_string(), v.to_string())]);
        assert!(is_iceberg(Some(&p("ICEBERG"))));
        assert!(is_iceberg(Some(&p("iceberg"))));
        assert!(!is_iceberg(Some(&p("HIVE"))));
        assert!(!is_iceberg(Some(&HashMap::new())));
        assert!(!is_iceberg(None));
    }

    #[test]
    fn update_parameters_swap_the_pointer_and_keep_the_rest() {
        let current = HashMap::from([
            (TABLE_TYPE.to_string(), "ICEBERG".to_string()),
            (
                METADATA_LOCATION.to_string(),
                "s3://b/t/metadata/1.json".to_string(),
            ),
            (
                PREVIOUS_METADATA_LOCATION.to_string(),
                "s3://b/t/metadata/0.json".to_string(),
            ),
            ("owner_team".to_string(), "data".to_string()),
        ]);
        let props = BTreeMap::from([("write.format.default".to_string(), "parquet".to_string())]);
        let p = updated_parameters(
            Some(&current),
            "s3://b/t/metadata/2.json",
            "s3://b/t/metadata/1.json",
            &props,
        );
        assert_eq!(p[METADATA_LOCATION], "s3://b/t/metadata/2.json");
        assert_eq!(p[PREVIOUS_METADATA_LOCATION], "s3://b/t/metadata/1.json");
        assert_eq!(p[TABLE_TYPE], "ICEBERG");
        assert_eq!(p["owner_team"], "data");
        assert_eq!(p["write.format.default"], "parquet");
        assert_eq!(p.len(), 5);
    }

    #[test]
    fn update_parameters_cannot_be_redirected_by_properties() {
        // A table property named like the pointer never wins over the pointer itself.
        let props = BTreeMap::from([
            (
                METADATA_LOCATION.to_string(),
                "s3://evil/x.json".to_string(),
            ),
            (TABLE_TYPE.to_string(), "HIVE".to_string()),
        ]);
        let p = updated_parameters(
            None,
            "s3://b/t/metadata/2.json",
            "s3://b/t/m/1.json",
            &props,
        );
        assert_eq!(p[METADATA_LOCATION], "s3://b/t/metadata/2.json");
        assert_eq!(p[TABLE_TYPE], "ICEBERG");
    }

    #[test]
    fn same_location_ignores_spelling() {
        assert!(same_location(
            "s3://b/t/metadata/a.json",
            "s3://b/t/metadata/a.json"
        ));
        assert!(same_location(
            "s3a://b/t//metadata/a.json",
            "s3://b/t/metadata/a.json"
        ));
        assert!(!same_location(
            "s3://b/t/metadata/a.json",
            "s3://b/t/metadata/b.json"
        ));
    }
}
