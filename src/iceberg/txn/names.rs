//! Names and table facts a writer needs: file names as Java and pyiceberg choose them
//! (`snap-<snapshot id>-<attempt>-<uuid>.avro` for manifest lists, `<uuid>-m<N>.avro` for manifests,
//! both under `<location>/metadata/`), snapshot ids (positive, as Java derives them from a uuid),
//! and the JSON of the current schema and default partition spec (for new manifests' headers).

use serde_json::Value;

use crate::error::{Error, Result};
use crate::iceberg::metadata::TableMetadata;
use crate::iceberg::spec::SnapshotId;

/// `<location>/metadata/` for the metadata's own location.
pub fn metadata_dir(metadata: &TableMetadata) -> String {
    format!("{}/metadata/", metadata.location().trim_end_matches('/'))
}

/// A manifest list's path.
pub fn manifest_list_path(dir: &str, snapshot_id: SnapshotId, uuid: &uuid::Uuid) -> String {
    format!("{dir}snap-{snapshot_id}-0-{uuid}.avro")
}

/// The `n`-th manifest written by a commit.
pub fn manifest_path(dir: &str, uuid: &uuid::Uuid, n: usize) -> String {
    format!("{dir}{uuid}-m{n}.avro")
}

/// A snapshot id from 16 random bytes: the two halves xor-ed, made non-negative (Java's rule), and
/// never 0.
pub fn snapshot_id_from(bytes: [u8; 16]) -> SnapshotId {
    let uuid = uuid::Uuid::from_bytes(bytes);
    let (hi, lo) = uuid.as_u64_pair();
    let id = ((hi ^ lo) & (i64::MAX as u64)) as i64;
    if id == 0 { 1 } else { id }
}

/// A random snapshot id not used by `metadata`.
pub fn fresh_snapshot_id(metadata: &TableMetadata) -> SnapshotId {
    loop {
        let id = snapshot_id_from(*uuid::Uuid::new_v4().as_bytes());
        if metadata.snapshot(id).is_none() {
            return id;
        }
    }
}

/// The current schema as JSON text.
pub fn current_schema_json(metadata: &TableMetadata) -> Result<String> {
    let wanted = i64::from(metadata.current_schema_id());
    let schemas = metadata.schemas();
    let schema = schemas
        .iter()
        .find(|s| s.get("schema-id").and_then(Value::as_i64) == Some(wanted))
        .or_else(|| (schemas.len() == 1).then(|| &schemas[0]))
        .ok_or_else(|| {
            Error::incorrect_data(format!(
                "'{}' has no schema with id {wanted}",
                metadata.file()
            ))
        })?;
    Ok(schema.to_string())
}

/// The default partition spec as JSON text (`{"spec-id": .., "fields": [..]}`; the v1 legacy
/// `partition-spec` array when `partition-specs` is absent).
pub fn default_spec_json(metadata: &TableMetadata) -> Result<String> {
    spec_json(metadata, metadata.default_spec_id())
}

/// The partition spec `spec_id` as JSON text (the v1 legacy `partition-spec` array when
/// `partition-specs` is absent).
pub fn spec_json(metadata: &TableMetadata, spec_id: i32) -> Result<String> {
    let json = metadata.members();
    let wanted = i64::from(spec_id);
    if let Some(Value::Array(specs)) = json.get("partition-specs")
        && let Some(spec) = specs
            .iter()
            .find(|s| s.get("spec-id").and_then(Value::as_i64) == Some(wanted))
    {
        return Ok(spec.to_string());
    }
    if let Some(legacy @ Value::Array(_)) = json.get("partition-spec") {
        return Ok(legacy.to_string());
    }
    Err(Error::incorrect_data(format!(
        "'{}' has no partition spec with id {wanted}",
        metadata.file()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_ids_are_positive_and_stable() {
        let id = snapshot_id_from([0xff; 16]);
        assert_eq!(id, 1, "all-ones halves xor to zero, which is never an id");
        let id = snapshot_id_from([7, 1, 2, 3, 4, 5, 6, 0x87, 9, 9, 9, 9, 9, 9, 9, 9]);
        assert!(id > 0);
        assert_eq!(
            id,
            snapshot_id_from([7, 1, 2, 3, 4, 5, 6, 0x87, 9, 9, 9, 9, 9, 9, 9, 9])
        );
    }

    #[test]
    fn file_names_follow_java() {
        let u = uuid::Uuid::nil();
        assert_eq!(
            manifest_list_path("s3://b/t/metadata/", 42, &u),
            format!("s3://b/t/metadata/snap-42-0-{u}.avro")
        );
        assert_eq!(
            manifest_path("/t/metadata/", &u, 3),
            format!("/t/metadata/{u}-m3.avro")
        );
    }
}
