//! Java's `deleteRemovedMetadataFiles` for path tables: after a confirmed commit, when the table
//! property `write.metadata.delete-after-commit.enabled` is true (default false), delete the
//! metadata files that left `metadata-log` with this commit (the base's log minus the new log,
//! which `write.metadata.previous-versions-max` trims).
//!
//! Never: by listing the folder (only files the base's log named); the new current file or the
//! base file; a file a pending expiry journal names (its base or unconfirmed metadata, which the
//! next expiry still needs); a file outside the table location; on an unknown or unconfirmed
//! outcome (the caller only calls this after [`CommitOutcome::Committed`]); on catalog tables
//! (the catalog owns their files: the catalog branch of `MaintenanceTarget::commit` does not
//! call this). Failures are ignored, as Java's `suppressFailureWhenFinished` does: a file left
//! behind is an orphan for `remove_orphan_files`.
//!
//! [`CommitOutcome::Committed`]: crate::iceberg::commit::CommitOutcome::Committed

use std::collections::HashSet;

use crate::iceberg::metadata::TableMetadata;
use crate::io::{is_under, path_key};
use crate::maintain::expire::journal;
use crate::maintain::target::MaintenanceTarget;

/// The table property that turns the deletion on (Java `METADATA_DELETE_AFTER_COMMIT_ENABLED`).
pub const PROP_DELETE_AFTER_COMMIT: &str = "write.metadata.delete-after-commit.enabled";

/// Whether the new metadata asks for it (Java `propertyAsBoolean`: only `true`, any case).
pub fn delete_after_commit(metadata: &TableMetadata) -> bool {
    metadata
        .property(PROP_DELETE_AFTER_COMMIT)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// The files to delete (pure): in `base`'s `metadata-log` but not in `new`'s, minus `keep`
/// (compared by identity) and anything outside `location`.
pub fn removed_metadata_files(
    base: &TableMetadata,
    new: &TableMetadata,
    location: &str,
    keep: &[&str],
) -> Vec<String> {
    let still: HashSet<String> = new
        .metadata_log()
        .iter()
        .map(|e| path_key(&e.metadata_file))
        .chain(keep.iter().map(|p| path_key(p)))
        .collect();
    base.metadata_log()
        .iter()
        .map(|e| e.metadata_file.clone())
        .filter(|p| !still.contains(&path_key(p)) && is_under(location, p))
        .collect()
}

/// After a confirmed commit of `new` (written at `new_path`) on `base` (at `base_path`): delete
/// what left the log when the table asks for it. Returns warnings (journals unreadable).
pub async fn delete_removed_metadata(
    target: &MaintenanceTarget,
    base: &TableMetadata,
    base_path: &str,
    new: &TableMetadata,
    new_path: &str,
) -> Vec<String> {
    if !delete_after_commit(new) {
        return Vec::new();
    }
    let candidates = removed_metadata_files(base, new, &target.location, &[base_path, new_path]);
    if candidates.is_empty() {
        return Vec::new();
    }
    // A pending expiry journal still needs its base (and unconfirmed) metadata: keep them. When
    // the journals cannot be read, delete nothing.
    let Ok((pending, _)) = journal::pending(&target.io, &target.location).await else {
        return vec![format!(
            "{}: old metadata files were not deleted (the expiry journals could not be read)",
            target.table_name
        )];
    };
    let protected: HashSet<String> = pending
        .iter()
        .flat_map(|p| {
            std::iter::once(p.journal.base_metadata.as_str())
                .chain(p.journal.unconfirmed_metadata.as_deref())
        })
        .map(path_key)
        .collect();
    let doomed: Vec<String> = candidates
        .into_iter()
        .filter(|p| !protected.contains(&path_key(p)))
        .collect();
    target.io.delete_many(&doomed).await;
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn md(log: &[&str], props: serde_json::Value) -> TableMetadata {
        let doc = json!({
            "format-version": 2, "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
            "location": "s3://b/t", "last-sequence-number": 0, "last-updated-ms": 1,
            "last-column-id": 0, "current-schema-id": 0,
            "schemas": [{"type": "struct", "schema-id": 0, "fields": []}],
            "default-spec-id": 0, "partition-specs": [{"spec-id": 0, "fields": []}],
            "last-partition-id": 999, "properties": props, "current-snapshot-id": -1,
            "snapshots": [], "snapshot-log": [],
            "metadata-log": log.iter().enumerate()
                .map(|(i, f)| json!({"metadata-file": f, "timestamp-ms": i})).collect::<Vec<_>>(),
        });
        TableMetadata::parse(doc.to_string().as_bytes(), "v9.metadata.json").unwrap()
    }

    #[test]
    fn exactly_what_left_the_log_inside_the_location() {
        let base = md(
            &[
                "s3://b/t/metadata/v1.metadata.json",
                "s3://b/t/metadata/v2.metadata.json",
                "s3://other/t/metadata/v0.metadata.json",
            ],
            json!({}),
        );
        let new = md(
            &[
                "s3://b/t/metadata/v2.metadata.json",
                "s3://b/t/metadata/v3.metadata.json",
            ],
            json!({PROP_DELETE_AFTER_COMMIT: "TRUE"}),
        );
        assert!(delete_after_commit(&new) && !delete_after_commit(&base));
        assert_eq!(
            removed_metadata_files(&base, &new, "s3://b/t", &[]),
            ["s3://b/t/metadata/v1.metadata.json"]
        );
        // Never a file the caller protects (the current or base file).
        assert!(
            removed_metadata_files(
                &base,
                &new,
                "s3://b/t",
                &["s3://b//t/metadata/v1.metadata.json"]
            )
            .is_empty()
        );
    }
}
