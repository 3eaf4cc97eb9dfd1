//! [`prepare_commit`]: write the manifests and manifest list of a snapshot that adds and removes
//! files, and build the new table metadata without committing it.
//!
//! Rules (Iceberg spec "Manifests" / "Sequence Number Inheritance" / "Row Lineage"; Java
//! `ManifestFilterManager` where the spec is silent):
//! - The parent (head of the target branch; the current snapshot for staged commits) has its manifest
//!   list read once and every manifest scanned once (projected). A removed path must be live there,
//!   else `BAD_ARGUMENTS` naming it; all checks happen before anything is written.
//! - A manifest that mentions no removed path is carried by reference: its list entry is copied
//!   unchanged (path, counts, sequence numbers, `first_row_id`).
//! - A manifest that mentions one is rewritten with its own writer schema and header. Kept live
//!   entries become EXISTING and removed ones DELETED, both with `sequence_number`,
//!   `file_sequence_number` and (v3) `first_row_id` written explicitly (inheritance applies to ADDED
//!   entries only, so a null would re-date the file); kept entries keep their `snapshot_id`, DELETED
//!   ones get the new snapshot's (as Java and pyiceberg write them, so expiry knows who removed the
//!   file). Entries already DELETED in the parent are dropped. A rewrite with nothing live left
//!   stays in this snapshot's list (its DELETED entries tell incremental cleanup, Java's
//!   included, which files this snapshot removed); a carried manifest whose list entry counts no
//!   ADDED or EXISTING file is dropped, as Java drops it from the next commit. The rewritten list entry is credited to the new snapshot
//!   (`added_snapshot_id`, `sequence_number`) and keeps its `first_row_id`; its
//!   `min_sequence_number` is the smallest sequence number of its surviving files.
//! - Added data files go into one new data manifest, added delete files into one new delete
//!   manifest; ADDED entries inherit their sequence numbers, except that
//!   `PrepareOptions::data_sequence_number` writes an explicit data `sequence_number` on the added
//!   data entries (compaction; `file_sequence_number` still inherits the new snapshot's); new manifests come first in the list. In v3 the list writer gives the new data
//!   manifest the table's `next-row-id`, the snapshot records `first-row-id` / `added-rows`, and
//!   `next-row-id` advances by the added rows.

use std::collections::{BTreeMap, HashMap, HashSet};

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};

use super::names::{
    current_schema_json, default_spec_json, fresh_snapshot_id, manifest_list_path, manifest_path,
    metadata_dir,
};
use super::summary::{Counted, Tally, build_summary};
use super::{
    CommitRequest, FileChanges, Operation, PrepareOptions, PreparedCommit, Summary, Target,
};
use crate::error::{Error, Result};
use crate::iceberg::commit::protocol::{Attempt, Procedure, Step};
use crate::iceberg::commit::{CommitOptions, Committed};
use crate::iceberg::locate::LocatedMetadata;
use crate::iceberg::manifest::{
    DataFile, ManifestEntry, ManifestWriter, NewManifest, for_each_projected, inherit,
    read_manifest,
};
use crate::iceberg::manifest_list::{
    ManifestFile, ManifestListMeta, read_manifest_list, write_manifest_list,
};
use crate::iceberg::metadata::TableMetadata;
use crate::iceberg::spec::{
    DataContent, EntryStatus, FormatVersion, MAIN_BRANCH, ManifestContent, RefKind, Snapshot,
    SnapshotRef,
};
use crate::io::FileIO;

/// Concurrent reads and writes of one commit.
const CONCURRENCY: usize = 16;

/// [`prepare_commit_with`] onto `main` with a random snapshot id, the clock, deflate.
pub async fn prepare_commit(
    io: &FileIO,
    metadata: &TableMetadata,
    operation: Operation,
    changes: FileChanges,
    extra_summary: Summary,
) -> Result<PreparedCommit> {
    let options = PrepareOptions::default();
    prepare_commit_with(io, metadata, operation, changes, extra_summary, &options).await
}

/// Write the manifests and manifest list of a commit and build the new metadata; see the module
/// comment. Nothing is committed.
pub async fn prepare_commit_with(
    io: &FileIO,
    metadata: &TableMetadata,
    operation: Operation,
    changes: FileChanges,
    extra_summary: Summary,
    options: &PrepareOptions,
) -> Result<PreparedCommit> {
    validate_shape(metadata, operation, &changes)?;
    let parent = parent_snapshot(metadata, &options.target)?;
    let parent_list = match parent {
        Some(p) => read_parent_list(io, p).await?,
        None => Vec::new(),
    };
    let removed: HashSet<&str> = changes.removed.iter().map(String::as_str).collect();
    let scan = scan_parent(io, &parent_list, &removed).await?;
    if let Some(missing) = changes
        .removed
        .iter()
        .find(|p| !scan.found.contains_key(p.as_str()))
    {
        return Err(Error::bad_arguments(format!(
            "Cannot remove '{missing}': it is not a live file of snapshot {} of '{}'",
            parent.map_or("(none)".to_string(), |p| p.snapshot_id.to_string()),
            metadata.file()
        )));
    }
    let plan = Plan::new(metadata, parent, options)?;
    let removed_tally = Tally::of(scan.found.values().copied());
    let (list, mut written) = plan
        .write_manifests(io, &changes, &parent_list, &scan, &removed)
        .await?;
    let added_tally = Tally::of(
        changes
            .added_data
            .iter()
            .chain(&changes.added_deletes)
            .map(counted),
    );
    let mut summary = build_summary(
        operation.as_str(),
        &added_tally,
        &removed_tally,
        parent.map(|p| p.summary.to_map()).as_ref(),
    );
    summary.extend(extra_summary.into_iter().filter(|(k, _)| k != "operation"));
    let (snapshot, next_row_id) = plan.write_list(io, &list, summary, &mut written).await?;
    let metadata = plan.new_metadata(metadata, &snapshot, next_row_id)?;
    Ok(PreparedCommit {
        metadata,
        snapshot,
        written,
    })
}

fn counted(f: &DataFile) -> Counted {
    Counted {
        content: f.content,
        record_count: f.record_count,
        file_size_in_bytes: f.file_size_in_bytes,
    }
}

fn validate_shape(metadata: &TableMetadata, op: Operation, changes: &FileChanges) -> Result<()> {
    if changes.is_empty() {
        return Err(Error::bad_arguments(format!(
            "Cannot commit an empty {} to '{}': nothing is added or removed",
            op.as_str(),
            metadata.file()
        )));
    }
    if op == Operation::Append && (!changes.removed.is_empty() || !changes.added_deletes.is_empty())
    {
        return Err(Error::bad_arguments(
            "An append only adds data files; use delete, overwrite or replace",
        ));
    }
    if let Some(f) = changes
        .added_data
        .iter()
        .find(|f| f.content != DataContent::Data)
    {
        return Err(Error::bad_arguments(format!(
            "'{}' is listed as a data file but holds deletes",
            f.file_path
        )));
    }
    if let Some(f) = changes
        .added_deletes
        .iter()
        .find(|f| f.content == DataContent::Data)
    {
        return Err(Error::bad_arguments(format!(
            "'{}' is listed as a delete file but holds data",
            f.file_path
        )));
    }
    if metadata.format_version() == FormatVersion::V1 && !changes.added_deletes.is_empty() {
        return Err(Error::bad_arguments(format!(
            "'{}' is a format version 1 table: it cannot hold delete files",
            metadata.file()
        )));
    }
    let mut seen = HashSet::new();
    if let Some(dup) = changes.removed.iter().find(|p| !seen.insert(p.as_str())) {
        return Err(Error::bad_arguments(format!("'{dup}' is removed twice")));
    }
    Ok(())
}

fn parent_snapshot<'m>(
    metadata: &'m TableMetadata,
    target: &Target,
) -> Result<Option<&'m Snapshot>> {
    let head = match target {
        Target::Branch(name) if name != MAIN_BRANCH => match metadata.ref_named(name) {
            Some(r) if r.kind == RefKind::Tag => {
                return Err(Error::bad_arguments(format!(
                    "'{name}' is a tag: snapshots are committed to branches"
                )));
            }
            Some(r) => Some(r.snapshot_id),
            None => metadata.current_snapshot_id(),
        },
        _ => metadata.current_snapshot_id(),
    };
    head.map(|id| {
        metadata.snapshot(id).ok_or_else(|| {
            Error::incorrect_data(format!(
                "'{}' names snapshot {id} but does not list it",
                metadata.file()
            ))
        })
    })
    .transpose()
}

/// Whether a manifest list entry may hold ADDED or EXISTING files (unknown counts: it may).
fn has_live_files(m: &ManifestFile) -> bool {
    m.added_files_count.is_none_or(|n| n > 0) || m.existing_files_count.is_none_or(|n| n > 0)
}

async fn read_parent_list(io: &FileIO, parent: &Snapshot) -> Result<Vec<ManifestFile>> {
    let Some(path) = &parent.manifest_list else {
        return Err(Error::not_implemented(format!(
            "Snapshot {} lists its manifests inline (v1 without a manifest list); commits on top of \
             it are not supported",
            parent.snapshot_id
        )));
    };
    let bytes = io.read_immutable(path, None).await?;
    read_manifest_list(&bytes, path)
}

/// What the scan of the parent's manifests found.
struct Scan {
    /// Removed path → the file as counted.
    found: HashMap<String, Counted>,
    /// Bytes of the manifests (by index in the list) that mention a removed path.
    to_rewrite: HashMap<usize, Bytes>,
}

async fn scan_parent(io: &FileIO, list: &[ManifestFile], removed: &HashSet<&str>) -> Result<Scan> {
    let mut scan = Scan {
        found: HashMap::new(),
        to_rewrite: HashMap::new(),
    };
    if removed.is_empty() {
        return Ok(scan);
    }
    let mut reads = futures::stream::iter(list.iter().enumerate())
        .map(|(i, m)| async move {
            io.read_immutable(&m.manifest_path, m.length())
                .await
                .map(|b| (i, b))
        })
        .buffered(CONCURRENCY)
        .boxed();
    while let Some((i, bytes)) = reads.try_next().await? {
        let path = &list[i].manifest_path;
        let mut hit = false;
        for_each_projected(&bytes, path, |e| {
            if e.status.is_live() && removed.contains(e.file_path) {
                hit = true;
                scan.found.insert(
                    e.file_path.to_string(),
                    Counted {
                        content: e.content,
                        record_count: e.record_count,
                        file_size_in_bytes: e.file_size_in_bytes,
                    },
                );
            }
        })?;
        if hit {
            scan.to_rewrite.insert(i, bytes);
        }
    }
    Ok(scan)
}

/// The fixed facts of the snapshot being written.
struct Plan {
    version: FormatVersion,
    snapshot_id: i64,
    parent_id: Option<i64>,
    sequence_number: i64,
    timestamp_ms: i64,
    target: Target,
    dir: String,
    uuid: uuid::Uuid,
    codec: crate::iceberg::avro::Codec,
    data_sequence_number: Option<i64>,
    schema_json: String,
    spec_json: String,
    spec_id: i32,
    schema_id: i32,
    first_row_id: Option<i64>,
}

impl Plan {
    fn new(
        metadata: &TableMetadata,
        parent: Option<&Snapshot>,
        options: &PrepareOptions,
    ) -> Result<Plan> {
        let version = metadata.format_version();
        let snapshot_id = match options.snapshot_id {
            Some(id) if metadata.snapshot(id).is_some() => {
                return Err(Error::bad_arguments(format!(
                    "Snapshot id {id} is already used"
                )));
            }
            Some(id) => id,
            None => fresh_snapshot_id(metadata),
        };
        Ok(Plan {
            version,
            snapshot_id,
            parent_id: parent.map(|p| p.snapshot_id),
            sequence_number: if version >= FormatVersion::V2 {
                metadata.last_sequence_number() + 1
            } else {
                0
            },
            timestamp_ms: options
                .timestamp_ms
                .unwrap_or_else(|| chrono::Utc::now().timestamp_millis()),
            target: options.target.clone(),
            dir: metadata_dir(metadata),
            uuid: uuid::Uuid::new_v4(),
            codec: options.codec,
            data_sequence_number: options.data_sequence_number,
            schema_json: current_schema_json(metadata)?,
            spec_json: default_spec_json(metadata)?,
            spec_id: metadata.default_spec_id(),
            schema_id: metadata.current_schema_id(),
            first_row_id: (version >= FormatVersion::V3)
                .then(|| metadata.next_row_id().unwrap_or(0)),
        })
    }

    /// New manifests first, then the parent's, carried or rewritten; returns the list and the
    /// paths written.
    async fn write_manifests(
        &self,
        io: &FileIO,
        changes: &FileChanges,
        parent_list: &[ManifestFile],
        scan: &Scan,
        removed: &HashSet<&str>,
    ) -> Result<(Vec<ManifestFile>, Vec<String>)> {
        let mut files: Vec<(String, Vec<u8>)> = Vec::new();
        let mut list = Vec::new();
        for (content, added) in [
            (ManifestContent::Data, &changes.added_data),
            (ManifestContent::Deletes, &changes.added_deletes),
        ] {
            if added.is_empty() {
                continue;
            }
            let path = manifest_path(&self.dir, &self.uuid, files.len());
            let (entry, bytes) = self.new_manifest(content, added, &path)?;
            list.push(entry);
            files.push((path, bytes));
        }
        for (i, m) in parent_list.iter().enumerate() {
            let Some(bytes) = scan.to_rewrite.get(&i) else {
                if has_live_files(m) {
                    list.push(m.clone());
                }
                continue;
            };
            let path = manifest_path(&self.dir, &self.uuid, files.len());
            let (entry, bytes) = self.rewrite(m, bytes, removed, &path)?;
            list.push(entry);
            files.push((path, bytes));
        }
        let written = files.iter().map(|(p, _)| p.clone()).collect();
        futures::stream::iter(files)
            .map(|(path, bytes)| async move { io.overwrite(&path, Bytes::from(bytes)).await })
            .buffer_unordered(CONCURRENCY)
            .boxed()
            .try_collect::<Vec<()>>()
            .await?;
        Ok((list, written))
    }

    fn new_manifest(
        &self,
        content: ManifestContent,
        files: &[DataFile],
        path: &str,
    ) -> Result<(ManifestFile, Vec<u8>)> {
        let mut writer = ManifestWriter::new(&NewManifest {
            format_version: self.version,
            content,
            table_schema_json: &self.schema_json,
            partition_spec_json: &self.spec_json,
            partition_spec_id: self.spec_id,
            codec: self.codec,
        })?;
        for f in files {
            let mut data_file = f.clone();
            data_file.first_row_id = None;
            writer.add(&ManifestEntry {
                status: EntryStatus::Added,
                snapshot_id: Some(self.snapshot_id),
                sequence_number: match content {
                    ManifestContent::Data => self.data_sequence_number,
                    ManifestContent::Deletes => None,
                },
                file_sequence_number: None,
                data_file,
                extra: Vec::new(),
            })?;
        }
        let written = writer.finish()?;
        let entry = written.manifest_file(path, self.snapshot_id, self.sequence_number);
        Ok((entry, written.bytes))
    }

    /// The rewrite of one parent manifest: kept entries EXISTING, removed ones DELETED.
    fn rewrite(
        &self,
        old: &ManifestFile,
        bytes: &[u8],
        removed: &HashSet<&str>,
        path: &str,
    ) -> Result<(ManifestFile, Vec<u8>)> {
        let mut manifest = read_manifest(bytes, &old.manifest_path)?;
        inherit(&mut manifest.entries, old);
        let mut writer =
            ManifestWriter::rewrite_of(&manifest, self.codec)?.with_content(old.content);
        for mut entry in std::mem::take(&mut manifest.entries) {
            if entry.status == EntryStatus::Deleted {
                continue;
            }
            if removed.contains(entry.data_file.file_path.as_str()) {
                entry.status = EntryStatus::Deleted;
                entry.snapshot_id = Some(self.snapshot_id);
            } else {
                entry.status = EntryStatus::Existing;
            }
            writer.add(&entry)?;
        }
        let written = writer.finish()?;
        let mut entry = written.manifest_file(path, self.snapshot_id, self.sequence_number);
        entry.first_row_id = old.first_row_id;
        entry.key_metadata = old.key_metadata.clone();
        Ok((entry, written.bytes))
    }

    async fn write_list(
        &self,
        io: &FileIO,
        list: &[ManifestFile],
        summary: BTreeMap<String, String>,
        written: &mut Vec<String>,
    ) -> Result<(Snapshot, Option<i64>)> {
        let meta = ManifestListMeta {
            format_version: self.version,
            snapshot_id: self.snapshot_id,
            parent_snapshot_id: self.parent_id,
            sequence_number: self.sequence_number,
            first_row_id: self.first_row_id,
        };
        let out = write_manifest_list(&meta, list, self.codec)?;
        let path = manifest_list_path(&self.dir, self.snapshot_id, &self.uuid);
        io.overwrite(&path, Bytes::from(out.bytes)).await?;
        written.push(path.clone());
        let added_rows = match (self.first_row_id, out.next_row_id) {
            (Some(first), Some(next)) => Some(next - first),
            _ => None,
        };
        let snapshot = Snapshot {
            snapshot_id: self.snapshot_id,
            parent_snapshot_id: self.parent_id,
            sequence_number: self.sequence_number,
            timestamp_ms: self.timestamp_ms,
            manifest_list: Some(path),
            manifests: Vec::new(),
            summary: summary.into(),
            schema_id: Some(self.schema_id),
            first_row_id: self.first_row_id,
            added_rows,
        };
        Ok((snapshot, out.next_row_id))
    }

    fn new_metadata(
        &self,
        metadata: &TableMetadata,
        snapshot: &Snapshot,
        next_row_id: Option<i64>,
    ) -> Result<TableMetadata> {
        let mut md = metadata.clone();
        md.add_snapshot(snapshot)?;
        if self.version >= FormatVersion::V2 {
            md.set_last_sequence_number(self.sequence_number)?;
        }
        if let Some(next) = next_row_id {
            md.set_next_row_id(next)?;
        }
        match &self.target {
            Target::Staged => {}
            Target::Branch(name) if name != MAIN_BRANCH => {
                let existing = md.ref_named(name).cloned();
                md.set_ref(&SnapshotRef {
                    name: name.clone(),
                    kind: RefKind::Branch,
                    snapshot_id: snapshot.snapshot_id,
                    min_snapshots_to_keep: existing.as_ref().and_then(|r| r.min_snapshots_to_keep),
                    max_snapshot_age_ms: existing.as_ref().and_then(|r| r.max_snapshot_age_ms),
                    max_ref_age_ms: existing.as_ref().and_then(|r| r.max_ref_age_ms),
                })?;
            }
            _ => md.set_current_snapshot(Some(snapshot.snapshot_id), self.timestamp_ms)?,
        }
        Ok(md)
    }
}

/// A [`CommitRequest`] as a statement's side of the one commit loop ([`crate::iceberg::commit::protocol::run`]): every
/// attempt prepares the request anew on its base (the files it wrote are deleted after a conflict,
/// by the loop). Returns what was committed.
pub struct ChangesCommit<'a> {
    io: &'a FileIO,
    request: &'a CommitRequest,
}

impl<'a> ChangesCommit<'a> {
    /// `request`, written through `io`.
    pub fn new(io: &'a FileIO, request: &'a CommitRequest) -> ChangesCommit<'a> {
        ChangesCommit { io, request }
    }
}

impl Procedure for ChangesCommit<'_> {
    type Output = Committed;

    fn name(&self) -> &str {
        self.request.operation.as_str()
    }

    async fn step(&mut self, _attempt: u32, base: &LocatedMetadata) -> Result<Step<Committed>> {
        let request = self.request;
        let prepared = prepare_commit_with(
            self.io,
            &base.metadata,
            request.operation,
            request.changes.clone(),
            request.extra_summary.clone(),
            &request.options,
        )
        .await?;
        Ok(Step::Commit(Box::new(Attempt {
            metadata: prepared.metadata,
            written: prepared.written,
            options: CommitOptions::default(),
        })))
    }

    async fn committed(&mut self, _base: &LocatedMetadata, done: Committed) -> Result<Committed> {
        Ok(done)
    }
}
