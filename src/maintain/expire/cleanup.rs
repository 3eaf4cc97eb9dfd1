//! `clean_expired_metadata` (Apache Iceberg 1.10 `RemoveSnapshots.cleanExpiredMetadata`): after an
//! expiry, also remove the partition specs and schemas that no retained snapshot uses.
//!
//! Rules: a spec is in use when a manifest of a retained snapshot names it, or it is the default
//! spec; a schema when a retained snapshot names it (`schema-id`) or it is the current schema.
//! A retained snapshot without `schema-id` could have been written with any schema: then every
//! schema is kept. A retained snapshot whose manifests are listed inline (v1, no manifest list)
//! keeps every spec. [`decide_cleanup`] is pure; [`specs_in_use`] reads the manifest lists.

use std::collections::BTreeSet;

use futures::{StreamExt, TryStreamExt};
use serde_json::Value;

use crate::error::Result;
use crate::iceberg::manifest_list::read_manifest_list;
use crate::iceberg::metadata::TableMetadata;
use crate::iceberg::spec::SnapshotId;
use crate::maintain::target::MaintenanceTarget;

/// The schemas and partition specs to remove.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetadataCleanup {
    pub schemas: Vec<i32>,
    pub partition_specs: Vec<i32>,
}

impl MetadataCleanup {
    pub fn is_empty(&self) -> bool {
        self.schemas.is_empty() && self.partition_specs.is_empty()
    }
}

/// What the retained snapshots use: `None` for specs means "cannot tell, keep them all".
pub fn decide_cleanup(
    metadata: &TableMetadata,
    retained: &BTreeSet<SnapshotId>,
    specs_in_use: Option<&BTreeSet<i32>>,
) -> MetadataCleanup {
    let retained_schemas: Option<BTreeSet<i32>> = retained
        .iter()
        .filter_map(|id| metadata.snapshot(*id))
        .map(|s| s.schema_id)
        .collect();
    let schemas = match retained_schemas {
        None => Vec::new(),
        Some(used) => schema_ids(metadata)
            .into_iter()
            .filter(|id| *id != metadata.current_schema_id() && !used.contains(id))
            .collect(),
    };
    let partition_specs = match specs_in_use {
        None => Vec::new(),
        Some(used) => metadata
            .partition_specs()
            .iter()
            .map(|s| s.spec_id)
            .filter(|id| *id != metadata.default_spec_id() && !used.contains(id))
            .collect(),
    };
    MetadataCleanup {
        schemas,
        partition_specs,
    }
}

fn schema_ids(metadata: &TableMetadata) -> Vec<i32> {
    metadata
        .schemas()
        .iter()
        .filter_map(|s| s.get("schema-id").and_then(Value::as_i64))
        .filter_map(|id| i32::try_from(id).ok())
        .collect()
}

/// The partition specs the manifests of the `retained` snapshots name; `None` when a retained
/// snapshot lists its manifests inline (v1 without a manifest list).
pub async fn specs_in_use(
    target: &MaintenanceTarget,
    metadata: &TableMetadata,
    retained: &BTreeSet<SnapshotId>,
) -> Result<Option<BTreeSet<i32>>> {
    let mut lists = BTreeSet::new();
    for id in retained {
        match metadata.snapshot(*id).map(|s| s.manifest_list.clone()) {
            Some(Some(list)) => {
                lists.insert(list);
            }
            Some(None) => return Ok(None),
            None => {}
        }
    }
    let io = &target.io;
    let specs: Vec<Vec<i32>> = futures::stream::iter(lists)
        .map(|path| async move {
            let bytes = io.read_immutable(&path, None).await?;
            let list = read_manifest_list(&bytes, &path)?;
            Ok::<_, crate::error::Error>(list.iter().map(|m| m.partition_spec_id).collect())
        })
        .buffer_unordered(target.settings.metadata_read_concurrency())
        .try_collect()
        .await?;
    Ok(Some(specs.into_iter().flatten().collect()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn md(snapshot_schema: Option<i64>) -> TableMetadata {
        let mut snap = json!({"snapshot-id": 5, "sequence-number": 1, "timestamp-ms": 1,
            "manifest-list": "s3://b/t/metadata/snap-5.avro", "summary": {"operation": "append"}});
        if let Some(id) = snapshot_schema {
            snap["schema-id"] = id.into();
        }
        let doc = json!({
            "format-version": 2, "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
            "location": "s3://b/t", "last-sequence-number": 1, "last-updated-ms": 1,
            "last-column-id": 2, "current-schema-id": 2,
            "schemas": [{"type": "struct", "schema-id": 0, "fields": []},
                        {"type": "struct", "schema-id": 1, "fields": []},
                        {"type": "struct", "schema-id": 2, "fields": []}],
            "default-spec-id": 2,
            "partition-specs": [{"spec-id": 0, "fields": []}, {"spec-id": 1, "fields": []},
                                {"spec-id": 2, "fields": []}],
            "last-partition-id": 999, "properties": {}, "current-snapshot-id": 5,
            "snapshots": [snap], "snapshot-log": [], "metadata-log": [],
        });
        TableMetadata::parse(doc.to_string().as_bytes(), "v1.metadata.json").unwrap()
    }

    #[test]
    fn unused_schemas_and_specs_go_but_never_the_current_or_default() {
        let retained = BTreeSet::from([5]);
        let used = BTreeSet::from([1]);
        let c = decide_cleanup(&md(Some(0)), &retained, Some(&used));
        assert_eq!(c.schemas, vec![1]);
        assert_eq!(c.partition_specs, vec![0]);
        // Nothing retained uses anything: still the current schema and the default spec stay.
        let c = decide_cleanup(&md(Some(0)), &BTreeSet::new(), Some(&BTreeSet::new()));
        assert_eq!(c.schemas, vec![0, 1]);
        assert_eq!(c.partition_specs, vec![0, 1]);
    }

    proptest::proptest! {
        /// Never the current schema or default spec, never one a retained snapshot uses; every
        /// other one goes.
        #[test]
        fn removes_exactly_the_unused(
            snapshot_schema in 0i64..3,
            used in proptest::collection::btree_set(0i32..3, 0..3),
            retain in proptest::bool::ANY,
        ) {
            let metadata = md(Some(snapshot_schema));
            let retained = if retain { BTreeSet::from([5]) } else { BTreeSet::new() };
            let c = decide_cleanup(&metadata, &retained, Some(&used));
            for id in 0..3 {
                let schema_used = id == 2 || (retain && i64::from(id) == snapshot_schema);
                proptest::prop_assert_eq!(c.schemas.contains(&id), !schema_used);
                let spec_used = id == 2 || used.contains(&id);
                proptest::prop_assert_eq!(c.partition_specs.contains(&id), !spec_used);
            }
        }
    }

    #[test]
    fn a_snapshot_without_schema_id_keeps_every_schema_and_inline_manifests_every_spec() {
        let c = decide_cleanup(&md(None), &BTreeSet::from([5]), None);
        assert!(c.is_empty(), "{c:?}");
    }
}
