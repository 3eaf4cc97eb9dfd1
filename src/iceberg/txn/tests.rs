//! Unit tests of commits: carried manifests, rewrites, totals, row lineage, validation before writes.

use std::collections::BTreeMap;

use futures::TryStreamExt;

use super::create::new_table;
use super::*;
use crate::error::ErrorKind;
use crate::iceberg::manifest::{DataFile, ManifestEntry, inherit, read_manifest};
use crate::iceberg::manifest_list::{ManifestFile, read_manifest_list};
use crate::iceberg::spec::{DataContent, EntryStatus, FormatVersion, ManifestContent};
use crate::io::FileIO;

const LOC: &str = "memory://w/t";

/// An operation, the files it adds (name, rows) and the names it removes.
type Step = (Operation, Vec<(&'static str, i64)>, Vec<&'static str>);

fn table(version: FormatVersion) -> TableMetadata {
    let file = format!("{LOC}/metadata/v1.metadata.json");
    new_table(LOC, version, &uuid::Uuid::nil(), 1_000, &file).unwrap()
}

fn data(name: &str, rows: i64) -> DataFile {
    DataFile::new(
        DataContent::Data,
        format!("{LOC}/data/{name}.parquet"),
        rows,
        rows * 10,
    )
}

fn path(name: &str) -> String {
    format!("{LOC}/data/{name}.parquet")
}

async fn run(
    io: &FileIO,
    md: &TableMetadata,
    op: Operation,
    added: &[(&str, i64)],
    removed: &[&str],
) -> crate::Result<TableMetadata> {
    let changes = FileChanges {
        added_data: added.iter().map(|(n, r)| data(n, *r)).collect(),
        added_deletes: Vec::new(),
        removed: removed.iter().map(|n| path(n)).collect(),
    };
    let prepared = prepare_commit(io, md, op, changes, BTreeMap::new()).await?;
    Ok(prepared.metadata)
}

async fn list_of(io: &FileIO, md: &TableMetadata, id: i64) -> Vec<ManifestFile> {
    let p = md.snapshot(id).unwrap().manifest_list.clone().unwrap();
    read_manifest_list(&io.read(&p).await.unwrap(), &p).unwrap()
}

async fn current_list(io: &FileIO, md: &TableMetadata) -> Vec<ManifestFile> {
    list_of(io, md, md.current_snapshot_id().unwrap()).await
}

/// Raw entries (no inheritance) of a manifest.
async fn raw_entries(io: &FileIO, m: &ManifestFile) -> Vec<ManifestEntry> {
    read_manifest(&io.read(&m.manifest_path).await.unwrap(), &m.manifest_path)
        .unwrap()
        .entries
}

/// Live entries of the current snapshot, inherited.
async fn live(io: &FileIO, md: &TableMetadata) -> Vec<ManifestEntry> {
    let mut out = Vec::new();
    for m in current_list(io, md).await {
        let mut entries = raw_entries(io, &m).await;
        inherit(&mut entries, &m);
        out.extend(entries.into_iter().filter(|e| e.status.is_live()));
    }
    out
}

async fn listing(io: &FileIO) -> Vec<String> {
    let mut all: Vec<String> = io.list(LOC).map_ok(|f| f.uri).try_collect().await.unwrap();
    all.sort();
    all
}

#[tokio::test]
async fn untouched_manifests_are_carried_and_touched_ones_rewritten() {
    let io = FileIO::memory();
    let md = table(FormatVersion::V2);
    let md = run(&io, &md, Operation::Append, &[("a", 5), ("b", 7)], &[])
        .await
        .unwrap();
    let s1 = md.current_snapshot_id().unwrap();
    let md = run(&io, &md, Operation::Append, &[("c", 3)], &[])
        .await
        .unwrap();
    let s2 = md.current_snapshot_id().unwrap();
    let before = current_list(&io, &md).await;
    assert_eq!(before.len(), 2, "fast append: new manifest + parent's");
    let md = run(&io, &md, Operation::Delete, &[], &["a"]).await.unwrap();
    let s3 = md.current_snapshot_id().unwrap();
    let after = current_list(&io, &md).await;
    assert_eq!(after.len(), 2);
    assert_eq!(after[0], before[0], "c's manifest is carried byte for byte");
    let rewritten = &after[1];
    assert_ne!(rewritten.manifest_path, before[1].manifest_path);
    assert_eq!(rewritten.added_snapshot_id, s3);
    assert_eq!(rewritten.sequence_number, 3);
    assert_eq!(
        rewritten.min_sequence_number, 1,
        "its oldest survivor is from seq 1"
    );
    assert_eq!(
        (
            rewritten.existing_files_count,
            rewritten.deleted_files_count,
            rewritten.added_files_count
        ),
        (Some(1), Some(1), Some(0))
    );
    let entries = raw_entries(&io, rewritten).await;
    let by_path: BTreeMap<_, _> = entries
        .iter()
        .map(|e| (e.data_file.file_path.clone(), e))
        .collect();
    let b = by_path[&path("b")];
    assert_eq!(b.status, EntryStatus::Existing);
    assert_eq!(
        (b.snapshot_id, b.sequence_number, b.file_sequence_number),
        (Some(s1), Some(1), Some(1))
    );
    let a = by_path[&path("a")];
    assert_eq!(a.status, EntryStatus::Deleted);
    assert_eq!(
        (a.snapshot_id, a.sequence_number, a.file_sequence_number),
        (Some(s3), Some(1), Some(1))
    );
    let _ = s2;
    let s = md.current_snapshot().unwrap().summary.to_map();
    assert_eq!(s["operation"], "delete");
    assert_eq!(s["total-data-files"], "2");
    assert_eq!(s["total-records"], "10");
    assert_eq!(s["total-files-size"], "100");
    assert_eq!(s["deleted-data-files"], "1");
    assert_eq!(s["deleted-records"], "5");
}

#[tokio::test]
async fn old_deleted_entries_are_dropped_and_emptied_manifests_outlive_one_commit() {
    let io = FileIO::memory();
    let md = table(FormatVersion::V2);
    let md = run(
        &io,
        &md,
        Operation::Append,
        &[("a", 1), ("b", 1), ("c", 1)],
        &[],
    )
    .await
    .unwrap();
    let md = run(&io, &md, Operation::Delete, &[], &["a"]).await.unwrap();
    let md = run(&io, &md, Operation::Delete, &[], &["b"]).await.unwrap();
    let list = current_list(&io, &md).await;
    let entries = raw_entries(&io, &list[0]).await;
    let paths: Vec<_> = entries
        .iter()
        .map(|e| (e.data_file.file_path.clone(), e.status))
        .collect();
    assert_eq!(
        paths,
        vec![
            (path("b"), EntryStatus::Deleted),
            (path("c"), EntryStatus::Existing)
        ],
        "a's DELETED entry belonged to the previous snapshot"
    );
    let written_before = listing(&io).await.len();
    let md = run(&io, &md, Operation::Delete, &[], &["c"]).await.unwrap();
    // As Java: the snapshot that removed c keeps the manifest saying so, nothing live in it.
    let list = current_list(&io, &md).await;
    assert_eq!(
        list.len(),
        1,
        "the emptied manifest stays in its deleting snapshot"
    );
    assert_eq!(
        (
            list[0].added_files_count,
            list[0].existing_files_count,
            list[0].deleted_files_count
        ),
        (Some(0), Some(0), Some(1))
    );
    let entries = raw_entries(&io, &list[0]).await;
    assert_eq!(entries.len(), 1);
    assert_eq!(
        (entries[0].data_file.file_path.clone(), entries[0].status),
        (path("c"), EntryStatus::Deleted)
    );
    assert_eq!(
        listing(&io).await.len(),
        written_before + 2,
        "manifest and list"
    );
    assert_eq!(
        md.current_snapshot()
            .unwrap()
            .summary
            .get("total-data-files"),
        Some("0")
    );
    // The next commit carries no manifest without live files.
    let md = run(&io, &md, Operation::Append, &[("d", 1)], &[])
        .await
        .unwrap();
    let list = current_list(&io, &md).await;
    assert_eq!(
        list.len(),
        1,
        "only d's new manifest: the emptied one is gone"
    );
    assert_eq!(
        raw_entries(&io, &list[0]).await[0].data_file.file_path,
        path("d")
    );
}

#[tokio::test]
async fn errors_come_before_any_write() {
    let io = FileIO::memory();
    let md = table(FormatVersion::V2);
    let md = run(&io, &md, Operation::Append, &[("a", 1)], &[])
        .await
        .unwrap();
    let files = listing(&io).await;
    let err = run(&io, &md, Operation::Overwrite, &[("z", 1)], &["nope"])
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadArguments);
    assert!(err.to_string().contains(&path("nope")), "{err}");
    let err = run(&io, &md, Operation::Delete, &[], &[])
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadArguments);
    let err = run(&io, &md, Operation::Append, &[("y", 1)], &["a"])
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadArguments);
    let md2 = run(&io, &md, Operation::Delete, &[], &["a"]).await.unwrap();
    let files2 = listing(&io).await;
    let err = run(&io, &md2, Operation::Delete, &[], &["a"])
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not a live file"), "{err}");
    assert_eq!(listing(&io).await, files2);
    assert!(files2.len() > files.len());
}

#[tokio::test]
async fn v3_row_ids_never_overlap() {
    let io = FileIO::memory();
    let mut md = table(FormatVersion::V3);
    let steps: Vec<Step> = vec![
        (Operation::Append, vec![("a", 10), ("b", 20)], vec![]),
        (Operation::Append, vec![("c", 5)], vec![]),
        (Operation::Overwrite, vec![("d", 7)], vec!["a"]),
        (Operation::Replace, vec![("e", 25)], vec!["b", "c"]),
        (Operation::Append, vec![("f", 1)], vec![]),
        (Operation::Delete, vec![], vec!["d"]),
    ];
    let mut seen: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    for (op, added, removed) in steps {
        let next_before = md.next_row_id().unwrap();
        let added_rows: i64 = added.iter().map(|(_, r)| r).sum();
        md = run(&io, &md, op, &added, &removed).await.unwrap();
        let snap = md.current_snapshot().unwrap();
        assert_eq!(snap.first_row_id, Some(next_before));
        assert_eq!(snap.added_rows, Some(added_rows));
        assert_eq!(md.next_row_id(), Some(next_before + added_rows));
        let mut ranges: Vec<(i64, i64, String)> = live(&io, &md)
            .await
            .into_iter()
            .map(|e| {
                let start = e
                    .data_file
                    .first_row_id
                    .expect("every live data file has a row id");
                (
                    start,
                    start + e.data_file.record_count,
                    e.data_file.file_path,
                )
            })
            .collect();
        ranges.sort();
        for w in ranges.windows(2) {
            assert!(w[0].1 <= w[1].0, "overlap: {w:?}");
        }
        for (s, e, p) in ranges {
            let prior = *seen.entry(p.clone()).or_insert((s, e));
            assert_eq!(prior, (s, e), "{p} kept its row ids across rewrites");
            assert!(e <= md.next_row_id().unwrap());
        }
    }
}

#[tokio::test]
async fn v1_tables_commit_without_sequence_numbers() {
    let io = FileIO::memory();
    let md = table(FormatVersion::V1);
    let md = run(&io, &md, Operation::Append, &[("a", 1), ("b", 2)], &[])
        .await
        .unwrap();
    let md = run(&io, &md, Operation::Append, &[("c", 3)], &[])
        .await
        .unwrap();
    let md = run(&io, &md, Operation::Delete, &[], &["b"]).await.unwrap();
    let snap = md.current_snapshot().unwrap();
    assert_eq!(snap.sequence_number, 0);
    assert!(snap.manifest_list.is_some());
    let mut paths: Vec<_> = live(&io, &md)
        .await
        .into_iter()
        .map(|e| e.data_file.file_path)
        .collect();
    paths.sort();
    assert_eq!(paths, vec![path("a"), path("c")]);
    assert!(
        current_list(&io, &md)
            .await
            .iter()
            .all(|m| m.sequence_number == 0)
    );
    let err = prepare_commit(
        &io,
        &md,
        Operation::Delete,
        FileChanges {
            added_deletes: vec![DataFile::new(
                DataContent::PositionDeletes,
                path("pd"),
                1,
                1,
            )],
            ..FileChanges::default()
        },
        BTreeMap::new(),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadArguments);
}

#[tokio::test]
async fn delete_files_go_to_a_delete_manifest_and_count_in_totals() {
    let io = FileIO::memory();
    let md = table(FormatVersion::V2);
    let md = run(&io, &md, Operation::Append, &[("a", 4)], &[])
        .await
        .unwrap();
    let mut pd = DataFile::new(DataContent::PositionDeletes, path("a-del"), 2, 30);
    pd.referenced_data_file = Some(path("a"));
    let changes = FileChanges {
        added_deletes: vec![pd],
        ..FileChanges::default()
    };
    let md = prepare_commit(&io, &md, Operation::Delete, changes, BTreeMap::new())
        .await
        .unwrap()
        .metadata;
    let list = current_list(&io, &md).await;
    assert_eq!(list[0].content, ManifestContent::Deletes);
    let s = md.current_snapshot().unwrap().summary.to_map();
    assert_eq!(s["total-delete-files"], "1");
    assert_eq!(s["total-position-deletes"], "2");
    assert_eq!(s["total-files-size"], "70");
    let md = run(&io, &md, Operation::Overwrite, &[], &["a-del"])
        .await
        .unwrap();
    let s = md.current_snapshot().unwrap().summary.to_map();
    assert_eq!(s["total-delete-files"], "0");
    assert_eq!(s["removed-position-deletes"], "2");
    let list = current_list(&io, &md).await;
    assert_eq!(
        list.len(),
        2,
        "the emptied delete manifest stays in its deleting snapshot"
    );
    let deletes = list
        .iter()
        .find(|m| m.content == ManifestContent::Deletes)
        .expect("the delete manifest");
    assert_eq!(
        (
            deletes.added_files_count,
            deletes.existing_files_count,
            deletes.deleted_files_count
        ),
        (Some(0), Some(0), Some(1))
    );
}

#[tokio::test]
async fn branch_and_staged_commits_leave_main_alone() {
    let io = FileIO::memory();
    let md = table(FormatVersion::V2);
    let md = run(&io, &md, Operation::Append, &[("a", 1)], &[])
        .await
        .unwrap();
    let main = md.current_snapshot_id().unwrap();
    let opts = PrepareOptions {
        target: Target::Branch("dev".into()),
        ..PrepareOptions::default()
    };
    let changes = FileChanges {
        added_data: vec![data("b", 1)],
        ..FileChanges::default()
    };
    let p = prepare_commit_with(
        &io,
        &md,
        Operation::Append,
        changes.clone(),
        BTreeMap::new(),
        &opts,
    )
    .await
    .unwrap();
    let md = p.metadata;
    assert_eq!(md.current_snapshot_id(), Some(main));
    assert_eq!(
        md.ref_named("dev").unwrap().snapshot_id,
        p.snapshot.snapshot_id
    );
    assert_eq!(p.snapshot.parent_snapshot_id, Some(main));
    let opts = PrepareOptions {
        target: Target::Staged,
        ..PrepareOptions::default()
    };
    let changes = FileChanges {
        added_data: vec![data("w", 1)],
        ..FileChanges::default()
    };
    let p = prepare_commit_with(&io, &md, Operation::Append, changes, BTreeMap::new(), &opts)
        .await
        .unwrap();
    assert_eq!(p.metadata.current_snapshot_id(), Some(main));
    assert!(
        p.metadata
            .refs()
            .iter()
            .all(|r| r.snapshot_id != p.snapshot.snapshot_id)
    );
    assert!(p.metadata.snapshot(p.snapshot.snapshot_id).is_some());
    assert_eq!(p.metadata.last_sequence_number(), 3);
}

#[test]
fn ref_operations_validate_and_edit() {
    use super::refs::*;
    let md = table(FormatVersion::V2);
    assert!(
        create_branch(&md, "b", 1, Retention::default()).is_err(),
        "no such snapshot"
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    let io = FileIO::memory();
    let md = rt
        .block_on(run(&io, &md, Operation::Append, &[("a", 1)], &[]))
        .unwrap();
    let s1 = md.current_snapshot_id().unwrap();
    let md = rt
        .block_on(run(&io, &md, Operation::Append, &[("b", 1)], &[]))
        .unwrap();
    let s2 = md.current_snapshot_id().unwrap();
    let retention = Retention {
        min_snapshots_to_keep: Some(2),
        max_snapshot_age_ms: Some(5),
        max_ref_age_ms: Some(9),
    };
    let md = create_branch(&md, "audit", s1, retention).unwrap();
    let r = md.ref_named("audit").unwrap();
    assert_eq!(
        (
            r.min_snapshots_to_keep,
            r.max_snapshot_age_ms,
            r.max_ref_age_ms
        ),
        (Some(2), Some(5), Some(9))
    );
    assert_eq!(
        create_branch(&md, "audit", s1, retention)
            .unwrap_err()
            .kind(),
        ErrorKind::BadArguments
    );
    let md = create_tag(&md, "v1", s1, Some(100)).unwrap();
    assert!(
        replace_branch(&md, "v1", s2, Retention::default()).is_err(),
        "a tag is not a branch"
    );
    let md = replace_tag(&md, "v1", s2, None).unwrap();
    assert_eq!(md.ref_named("v1").unwrap().max_ref_age_ms, None);
    let md = remove_ref(&md, "audit").unwrap();
    assert!(md.ref_named("audit").is_none());
    assert!(remove_ref(&md, "main").is_err());
    assert!(remove_ref(&md, "audit").is_err());
    let md = set_current_snapshot(&md, s1, 5_000).unwrap();
    assert_eq!(md.ref_named("main").unwrap().snapshot_id, s1);
    assert_eq!(md.snapshot_log().last().unwrap().snapshot_id, s1);
    let md = set_properties(&md, &[("k", "v"), ("x", "y")]).unwrap();
    let md = remove_properties(&md, &["x"]).unwrap();
    assert_eq!(md.properties().len(), 1);
    let stats = crate::iceberg::spec::StatisticsFile {
        snapshot_id: s2,
        path: format!("{LOC}/metadata/s.stats"),
        file_size_in_bytes: Some(10),
        partition_statistics: true,
    };
    let md = set_statistics(&md, &stats).unwrap();
    assert_eq!(md.statistics(), &[stats]);
}
