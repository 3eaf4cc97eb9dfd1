//! Tables written by a sequence of our commits, read by pyiceberg (every ref planned to exactly the
//! expected files, entries and manifests inspected) and by ClickHouse (`system.iceberg_history`);
//! and a pyiceberg table with real Parquet continued by our commits, scanned to the right rows.

use crate::support::fixtures;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use icetrim::internals::iceberg::commit::{CommitOptions, Committed};
use icetrim::internals::iceberg::locate::MetadataSettings;
use icetrim::internals::iceberg::manifest::{DataFile, inherit, read_manifest};
use icetrim::internals::iceberg::manifest_list::read_manifest_list;
use icetrim::internals::iceberg::metadata::TableMetadata;
use icetrim::internals::iceberg::spec::{DataContent, FormatVersion, StatisticsFile};
use icetrim::internals::iceberg::txn::create::new_table;
use icetrim::internals::iceberg::txn::refs::{self, Retention};
use icetrim::internals::iceberg::txn::{
    CommitRequest, FileChanges, Operation, PrepareOptions, Target,
};
use icetrim::internals::io::FileIO;

const DAY: i64 = 86_400_000;

struct Table {
    io: FileIO,
    location: String,
    last: Option<Committed>,
}

impl Table {
    async fn create(dir: &Path, version: FormatVersion) -> Table {
        let location = dir.to_str().unwrap().to_string();
        let io = FileIO::local();
        let file = format!("{location}/metadata/v1.metadata.json");
        let md = new_table(
            &location,
            version,
            &uuid::Uuid::new_v4(),
            fixtures::now_ms() - 10 * DAY,
            &file,
        )
        .unwrap();
        io.overwrite(&file, Bytes::from(md.to_json_bytes()))
            .await
            .unwrap();
        Table {
            io,
            location,
            last: None,
        }
    }

    fn data_path(&self, name: &str) -> String {
        format!("{}/data/{name}.parquet", self.location)
    }

    /// A placeholder data file on disk and its description (with the column sizes pyiceberg needs).
    async fn file(&self, name: &str, content: DataContent, rows: i64) -> DataFile {
        let path = self.data_path(name);
        self.io
            .overwrite(&path, Bytes::from_static(b"PAR1PAR1"))
            .await
            .unwrap();
        let mut f = DataFile::new(content, path, rows, 8);
        f.column_sizes = Some(BTreeMap::from([(1, 4), (2, 4)]));
        f
    }

    async fn commit(&mut self, op: Operation, changes: FileChanges, target: Target) -> i64 {
        let mut request = CommitRequest::new(op, changes);
        request.options = PrepareOptions {
            target,
            ..PrepareOptions::default()
        };
        let done = crate::support::commit::commit_request(
            &self.io,
            &self.location,
            &MetadataSettings::default(),
            3,
            &request,
        )
        .await
        .unwrap();
        let id = done.metadata.snapshots().last().unwrap().snapshot_id;
        self.last = Some(done);
        id
    }

    async fn edit(&mut self, edit: impl Fn(&TableMetadata) -> icetrim::Result<TableMetadata>) {
        let done = crate::support::commit::edit_path_table(
            &self.io,
            &self.location,
            &MetadataSettings::default(),
            3,
            &CommitOptions::default(),
            |m| edit(m).map(Some),
        )
        .await
        .unwrap()
        .expect("the edit wrote metadata");
        self.last = Some(done);
    }

    fn metadata_path(&self) -> PathBuf {
        PathBuf::from(&self.last.as_ref().unwrap().path)
    }
}

fn added(files: Vec<DataFile>) -> FileChanges {
    FileChanges {
        added_data: files,
        ..FileChanges::default()
    }
}

fn removed(paths: &[&String]) -> FileChanges {
    FileChanges {
        removed: paths.iter().map(|p| p.to_string()).collect(),
        ..FileChanges::default()
    }
}

fn names(t: &Table, names: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = names.iter().map(|n| t.data_path(n)).collect();
    v.sort();
    v
}

async fn history_read_by_both(version: FormatVersion) {
    let dir = tempfile::tempdir().unwrap();
    let mut t = Table::create(dir.path(), version).await;
    let (a, b) = (
        t.file("a", DataContent::Data, 10).await,
        t.file("b", DataContent::Data, 20).await,
    );
    let s1 = t
        .commit(Operation::Append, added(vec![a, b]), Target::Main)
        .await;
    let c = t.file("c", DataContent::Data, 5).await;
    let s2 = t
        .commit(Operation::Append, added(vec![c]), Target::Main)
        .await;
    let retention = Retention {
        min_snapshots_to_keep: Some(2),
        max_snapshot_age_ms: Some(3 * DAY),
        max_ref_age_ms: Some(30 * DAY),
    };
    t.edit(|md| refs::create_branch(md, "audit", s2, retention))
        .await;
    let d = t.file("d", DataContent::Data, 1).await;
    let b1 = t
        .commit(
            Operation::Append,
            added(vec![d]),
            Target::Branch("audit".into()),
        )
        .await;
    let s3 = t
        .commit(
            Operation::Delete,
            removed(&[&t.data_path("a")]),
            Target::Main,
        )
        .await;
    let e = t.file("e", DataContent::Data, 7).await;
    let mut ovw = removed(&[&t.data_path("c")]);
    ovw.added_data.push(e);
    if version >= FormatVersion::V2 {
        ovw.added_deletes
            .push(t.file("pd", DataContent::PositionDeletes, 2).await);
    }
    let s4 = t.commit(Operation::Overwrite, ovw, Target::Main).await;
    t.edit(|md| refs::create_tag(md, "before_compaction", s4, Some(7 * DAY)))
        .await;
    let f = t.file("f", DataContent::Data, 27).await;
    let mut compact = removed(&[&t.data_path("b"), &t.data_path("e")]);
    compact.added_data.push(f);
    let s5 = t.commit(Operation::Replace, compact, Target::Main).await;
    let g = t.file("g", DataContent::Data, 3).await;
    let staged = t
        .commit(Operation::Append, added(vec![g]), Target::Staged)
        .await;
    t.edit(|md| refs::set_properties(md, &[("history.expire.min-snapshots-to-keep", "2")]))
        .await;
    let stats_path = format!("{}/metadata/s5.stats", t.location);
    t.io.overwrite(&stats_path, Bytes::from_static(b"PFA1PFA1"))
        .await
        .unwrap();
    let stats = StatisticsFile {
        snapshot_id: s5,
        path: stats_path,
        file_size_in_bytes: Some(8),
        partition_statistics: false,
    };
    t.edit(|md| refs::set_puffin_statistics(md, &stats, 4))
        .await;

    let report = fixtures::oracle_inspect(&t.metadata_path());
    assert!(
        report
            .get("errors")
            .and_then(|e| e.get("ref_files"))
            .is_none(),
        "{report}"
    );
    assert!(
        report
            .get("errors")
            .and_then(|e| e.get("entries_count"))
            .is_none(),
        "{report}"
    );
    assert!(
        report
            .get("errors")
            .and_then(|e| e.get("manifests_count"))
            .is_none(),
        "{report}"
    );
    assert_eq!(report["current_snapshot_id"].as_i64(), Some(s5));
    let planned = |r: &str, k: &str| fixtures::sorted_strings(&report["ref_files"][r][k]);
    assert_eq!(planned("main", "data"), names(&t, &["f"]));
    assert!(
        planned("main", "deletes").is_empty(),
        "pd predates f: it applies to nothing"
    );
    assert_eq!(planned("audit", "data"), names(&t, &["a", "b", "c", "d"]));
    assert_eq!(planned("before_compaction", "data"), names(&t, &["b", "e"]));
    let tag_deletes = if version >= FormatVersion::V2 {
        names(&t, &["pd"])
    } else {
        vec![]
    };
    assert_eq!(planned("before_compaction", "deletes"), tag_deletes);
    assert_eq!(report["refs"]["audit"]["snapshot"].as_i64(), Some(b1));
    assert_eq!(report["refs"]["audit"]["min_snapshots_to_keep"], 2);
    assert_eq!(report["refs"]["before_compaction"]["type"], "tag");
    let ops: Vec<&str> = report["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["operation"].as_str().unwrap())
        .collect();
    assert_eq!(
        ops,
        [
            "append",
            "append",
            "append",
            "delete",
            "overwrite",
            "replace",
            "append"
        ]
    );
    assert!(
        report["snapshots"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["id"].as_i64() == Some(staged))
    );
    assert_eq!(report["statistics"][0]["snapshot"].as_i64(), Some(s5));
    assert_eq!(report["missing"], serde_json::json!([]));

    let rows = fixtures::clickhouse(
        Path::new(&t.location),
        "SELECT toString(snapshot_id), toString(is_current_ancestor) FROM system.iceberg_history WHERE table = 't'",
    )
    .unwrap();
    let history: BTreeMap<i64, String> = rows
        .iter()
        .map(|r| (r[0].parse().unwrap(), r[1].clone()))
        .collect();
    for id in [s1, s2, s3, s4, s5] {
        assert_eq!(
            history.get(&id).map(String::as_str),
            Some("1"),
            "main snapshot {id} in {rows:?}"
        );
    }
    for id in [b1, staged] {
        assert_ne!(
            history.get(&id).map(String::as_str),
            Some("1"),
            "{id} is not a main ancestor: {rows:?}"
        );
    }
}

#[tokio::test]
async fn v2_history_of_our_commits_reads_in_pyiceberg_and_clickhouse() {
    history_read_by_both(FormatVersion::V2).await;
}

#[tokio::test]
async fn v1_history_of_our_commits_reads_in_pyiceberg_and_clickhouse() {
    history_read_by_both(FormatVersion::V1).await;
}

#[tokio::test]
async fn v3_history_of_our_commits_reads_in_pyiceberg_and_clickhouse() {
    history_read_by_both(FormatVersion::V3).await;
}

/// The exact path string and record count of the live entry whose path ends with `local`.
async fn live_entry(io: &FileIO, md: &TableMetadata, local: &Path) -> (String, i64, i64) {
    let list_path = md
        .current_snapshot()
        .unwrap()
        .manifest_list
        .clone()
        .unwrap();
    let list = read_manifest_list(&io.read(&list_path).await.unwrap(), &list_path).unwrap();
    for m in list {
        let mut manifest =
            read_manifest(&io.read(&m.manifest_path).await.unwrap(), &m.manifest_path).unwrap();
        inherit(&mut manifest.entries, &m);
        for e in manifest.entries.into_iter().filter(|e| e.status.is_live()) {
            if e.data_file.file_path.ends_with(local.to_str().unwrap()) {
                return (
                    e.data_file.file_path,
                    e.data_file.record_count,
                    e.data_file.file_size_in_bytes,
                );
            }
        }
    }
    panic!("{} is not live", local.display());
}

async fn count_entries(io: &FileIO, md: &TableMetadata) -> i64 {
    let list_path = md
        .current_snapshot()
        .unwrap()
        .manifest_list
        .clone()
        .unwrap();
    let list = read_manifest_list(&io.read(&list_path).await.unwrap(), &list_path).unwrap();
    let mut n = 0;
    for m in list {
        n += read_manifest(&io.read(&m.manifest_path).await.unwrap(), &m.manifest_path)
            .unwrap()
            .entries
            .len() as i64;
    }
    n
}

#[tokio::test]
async fn pyiceberg_table_continued_by_our_commits() {
    let fixture = fixtures::make_fixture("py_v2_linear", fixtures::now_ms(), false);
    let before = fixtures::oracle_inspect(&fixture.metadata_path());
    let rows_before = before["rows_main"].as_i64().unwrap();
    let io = FileIO::local();
    let location = fixture.table_dir().to_str().unwrap().to_string();
    let settings = MetadataSettings::default();
    let md = icetrim::internals::iceberg::locate::locate(&io, &location, &settings)
        .await
        .unwrap()
        .metadata;
    let (a2, a2_rows, _) = live_entry(&io, &md, &fixture.data_file("a2")).await;
    let (_, a3_rows, a3_size) = live_entry(&io, &md, &fixture.data_file("a3")).await;
    let request = CommitRequest::new(
        Operation::Delete,
        FileChanges {
            removed: vec![a2.clone()],
            ..FileChanges::default()
        },
    );
    crate::support::commit::commit_request(&io, &location, &settings, 3, &request)
        .await
        .unwrap();
    let copy = fixture.table_dir().join("data/copy-of-a3.parquet");
    std::fs::copy(fixture.data_file("a3"), &copy).unwrap();
    let mut file = DataFile::new(
        DataContent::Data,
        format!("file://{}", copy.display()),
        a3_rows,
        a3_size,
    );
    file.column_sizes = Some(BTreeMap::new());
    let request = CommitRequest::new(
        Operation::Append,
        FileChanges {
            added_data: vec![file],
            ..FileChanges::default()
        },
    );
    let done = crate::support::commit::commit_request(&io, &location, &settings, 3, &request)
        .await
        .unwrap();

    let after = fixtures::oracle_inspect(Path::new(&done.path));
    assert!(after.get("errors").is_none(), "{after}");
    assert_eq!(
        after["rows_main"].as_i64(),
        Some(rows_before - a2_rows + a3_rows)
    );
    let data = fixtures::sorted_strings(&after["ref_files"]["main"]["data"]);
    let mut expected = fixtures::sorted_strings(&before["ref_files"]["main"]["data"]);
    expected.retain(|p| !a2.ends_with(p.as_str()));
    expected.push(copy.to_str().unwrap().to_string());
    expected.sort();
    assert_eq!(data, expected);
    let snaps = after["snapshots"].as_array().unwrap();
    assert_eq!(
        snaps.len(),
        before["snapshots"].as_array().unwrap().len() + 2
    );
    let entries = count_entries(&io, &done.metadata).await;
    assert_eq!(after["entries_count"].as_i64(), Some(entries));
    assert!(entries >= data.len() as i64);
}
