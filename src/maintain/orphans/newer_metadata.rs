//! The metadata-file rule of `remove_orphan_files` (see docs/safety.md, "Plan only on the newest
//! metadata"), applied to the orphans a scan found: a metadata file is never deleted when its
//! version number, or its `last-updated-ms`, is at least that of the metadata file the scan planned
//! on ([`metadata_file_check`]).
//!
//! - Only orphan candidates whose name is a metadata file are looked at; the version comes from
//!   the name, and `last-updated-ms` is read (the first bytes of the file, see
//!   [`crate::iceberg::metadata_peek`]) only for those the name does not settle.
//! - A file whose **version** is at least the planned one is a fork of the table's history (two
//!   writers of one version, a commit built on a pinned older file, a plan chosen by
//!   `last-updated-ms` below a higher version): readers that choose by version take it, and the
//!   files only it reaches would be deleted with the plan's other orphans. The statement refuses
//!   (`INCORRECT_DATA`, naming both files); nothing is deleted, in a dry run and EXPLAIN as in the
//!   real run.
//! - A file of a lower version (or none: `<uuid>.metadata.json`, a writer's temporary file) whose
//!   `last-updated-ms` is at least the planned one's is kept (a copy, a skewed clock), and the
//!   statement goes on.
//! - A file whose `last-updated-ms` cannot be read is kept.
//! - Catalog tables: a file of a version at least the planned one is kept, never refused (the
//!   catalog, not the folder, says which file is current: it is a commit in flight or a failed
//!   writer's attempt; the pointer re-check before deleting catches a commit that landed).

use crate::error::{Error, ErrorKind, Result};
use crate::iceberg::locate::{LocatedMetadata, file_name, parse_file_name};

use crate::iceberg::metadata_peek::read_heads;
use crate::io::FileIO;
use crate::maintain::orphans::classify::{
    MetadataFileCheck, PlannedMetadata, metadata_file_at_least_as_new, metadata_file_check,
};

use super::scan::Orphan;

/// Apply the rule to `orphans` (planned on `located`): drop the metadata files it keeps, or
/// refuse (see the module comment). `table` names the table in the error.
pub async fn keep_newer_metadata(
    io: &FileIO,
    located: &LocatedMetadata,
    orphans: &mut Vec<Orphan>,
    in_flight: usize,
    table: &str,
) -> Result<()> {
    let planned = PlannedMetadata {
        version: located.version,
        last_updated_ms: located.metadata.last_updated_ms(),
    };
    let mut newer: Vec<(String, String)> = Vec::new();
    let mut to_read: Vec<String> = Vec::new();
    for orphan in orphans.iter() {
        match metadata_file_check(&orphan.uri, &planned) {
            MetadataFileCheck::NotMetadata => {}
            MetadataFileCheck::NewerVersion => newer.push((
                orphan.uri.clone(),
                format!("version {}", version_of(&orphan.uri)),
            )),
            MetadataFileCheck::NeedsLastUpdated => to_read.push(orphan.uri.clone()),
        }
    }
    let mut keep: Vec<String> = newer.iter().map(|(uri, _)| uri.clone()).collect();
    for (uri, head) in read_heads(io, &to_read, in_flight).await {
        let last_updated = head.ok().and_then(|h| h.last_updated_ms);
        if metadata_file_at_least_as_new(last_updated, &planned) {
            keep.push(uri);
        }
    }
    // A catalog names the current file: a newer one under `metadata/` is a commit in flight
    // (or a writer's failed attempt), not a fork. Keep it; the pointer re-check before deleting
    // refuses when the catalog moved meanwhile.
    if located.from_catalog {
        newer.clear();
    }
    if let Some((uri, why)) = newer.first() {
        return Err(Error::new(
            ErrorKind::IncorrectData,
            format!(
                "remove_orphan_files on {table} cannot run: metadata file '{uri}' ({why}) is not \
                 reachable from the metadata file it planned on ('{}', version {}, \
                 last-updated-ms {}) but is at least as new{}. The table's history forks (two \
                 writers of one version, a commit built on an older file, or a choice by \
                 last-updated-ms) and the files only that file reaches would be deleted; nothing \
                 was deleted. Decide which file readers must take and remove the other",
                file_name(&located.path),
                located
                    .version
                    .map_or_else(|| "unknown".to_string(), |v| v.to_string()),
                planned.last_updated_ms,
                if newer.len() > 1 {
                    format!(" ({} such files)", newer.len())
                } else {
                    String::new()
                }
            ),
        ));
    }
    orphans.retain(|o| !keep.contains(&o.uri));
    Ok(())
}

fn version_of(uri: &str) -> String {
    parse_file_name(uri)
        .and_then(|n| n.version)
        .map_or_else(|| "unknown".to_string(), |v| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const UUID: &str = "0f2a0c38-5d0e-4b4b-9a4c-3c4e5b6a7d8e";

    fn planned(version: Option<u64>) -> PlannedMetadata {
        PlannedMetadata {
            version,
            last_updated_ms: 1000,
        }
    }

    #[test]
    fn the_name_settles_versions_at_least_the_planned_one() {
        let p = planned(Some(5));
        for name in [
            format!("/t/metadata/00005-{UUID}.metadata.json"),
            format!("/t/metadata/00006-{UUID}.metadata.json"),
            "/t/metadata/v5.metadata.json".to_string(),
            "/t/metadata/v9.gz.metadata.json".to_string(),
            format!("/t/metadata/v7-{UUID}.metadata.json.gz"),
        ] {
            assert_eq!(
                metadata_file_check(&name, &p),
                MetadataFileCheck::NewerVersion,
                "{name}"
            );
        }
        for name in [
            format!("/t/metadata/00004-{UUID}.metadata.json"),
            "/t/metadata/v1.metadata.json".to_string(),
            format!("/t/metadata/{UUID}.metadata.json"),
        ] {
            assert_eq!(
                metadata_file_check(&name, &p),
                MetadataFileCheck::NeedsLastUpdated,
                "{name}"
            );
        }
        // Planned on an unversioned (pinned) file: every metadata file needs its time.
        assert_eq!(
            metadata_file_check("/t/metadata/v9.metadata.json", &planned(None)),
            MetadataFileCheck::NeedsLastUpdated
        );
        for name in ["/t/data/x.parquet", "/t/metadata/snap-1.avro", "/t/x.json"] {
            assert_eq!(
                metadata_file_check(name, &p),
                MetadataFileCheck::NotMetadata
            );
        }
    }

    fn orphan(uri: &str) -> Orphan {
        Orphan {
            uri: uri.to_string(),
            category: crate::maintain::orphans::classify::OrphanCategory::Metadata,
            size: 1,
            last_modified_ms: 0,
            reason: Default::default(),
        }
    }

    #[tokio::test]
    async fn lower_versions_as_new_are_kept_and_higher_versions_refuse() {
        use bytes::Bytes;
        let io = FileIO::memory();
        let doc = |lu: i64| {
            Bytes::from(format!(
                r#"{{"format-version":2,"table-uuid":"{UUID}","location":"memory:///t",
                "last-sequence-number":0,"last-updated-ms":{lu},"last-column-id":0,
                "current-schema-id":0,"schemas":[{{"type":"struct","schema-id":0,"fields":[]}}],
                "default-spec-id":0,"partition-specs":[{{"spec-id":0,"fields":[]}}],
                "snapshots":[],"snapshot-log":[],"metadata-log":[]}}"#
            ))
        };
        let dir = "memory:///t/metadata";
        for (name, lu) in [
            ("v2.metadata.json", 1000),
            ("v1.metadata.json", 1000),
            ("v0.metadata.json", 999),
        ] {
            io.overwrite(&format!("{dir}/{name}"), doc(lu))
                .await
                .unwrap();
        }
        let tmp = format!("{dir}/{UUID}.metadata.json");
        io.overwrite(&tmp, doc(1)).await.unwrap();
        let located = crate::iceberg::locate::locate(&io, "memory:///t", &Default::default())
            .await
            .unwrap();
        let mut orphans = vec![
            orphan(&format!("{dir}/v1.metadata.json")),
            orphan(&format!("{dir}/v0.metadata.json")),
            orphan(&tmp),
            orphan("memory:///t/data/x.parquet"),
        ];
        keep_newer_metadata(&io, &located, &mut orphans, 4, "t")
            .await
            .unwrap();
        let left: Vec<&str> = orphans.iter().map(|o| o.uri.as_str()).collect();
        assert_eq!(
            left,
            [
                format!("{dir}/v0.metadata.json").as_str(),
                tmp.as_str(),
                "memory:///t/data/x.parquet"
            ]
        );
        let mut rival = vec![orphan(&format!("{dir}/00002-{UUID}.metadata.json"))];
        let e = keep_newer_metadata(&io, &located, &mut rival, 4, "t")
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::IncorrectData);
        assert!(e.message().contains("00002-"), "{}", e.message());
    }

    #[test]
    fn last_updated_at_least_the_planned_one_keeps() {
        let p = planned(Some(5));
        assert!(metadata_file_at_least_as_new(Some(1000), &p));
        assert!(metadata_file_at_least_as_new(Some(2000), &p));
        assert!(!metadata_file_at_least_as_new(Some(999), &p));
        assert!(metadata_file_at_least_as_new(None, &p), "unreadable: kept");
    }
}
